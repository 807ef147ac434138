"""agentshctl install-service: install agentsh as a systemd service.

Installs the unit (with ExecStart pointing at this installation's agentshd),
/etc/agentsh/agentsh.yaml from the embedded default (never overwriting an
existing one), the logrotate snippet, and the agentsh system group and user.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

from agentsh.agent.policy.loader import embedded_default_text

UNIT_NAME = "agentsh.service"


def _shipped(name: str) -> str:
    return (importlib.resources.files("agentsh.systemd") / name).read_text("utf-8")


def unit_text(agentshd: str) -> str:
    return _shipped("agentsh.service").replace("/usr/local/bin/agentshd", agentshd)


def logrotate_text(agentshctl: str) -> str:
    return _shipped("agentsh.logrotate").replace("/usr/local/bin/agentshctl", agentshctl)


def _ensure_account(name: str, dry_run: bool) -> list[str]:
    done: list[str] = []
    import grp
    import pwd

    try:
        grp.getgrnam(name)
    except KeyError:
        if not dry_run:
            subprocess.run(["groupadd", "--system", name], check=True)
        done.append(f"created system group {name}")
    try:
        pwd.getpwnam(name)
    except KeyError:
        if not dry_run:
            subprocess.run(
                [
                    "useradd", "--system", "--gid", name, "--no-create-home",
                    "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name,
                ],
                check=True,
            )
        done.append(f"created system user {name}")
    return done


@click.command("install-service")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default="/", show_default=True,
              help="Install below this root (for packaging and tests).")
@click.option("--dry-run", is_flag=True, help="Say what would be done.")
@click.option("--no-accounts", is_flag=True, help="Do not create the agentsh user/group.")
def install_service(root: Path, dry_run: bool, no_accounts: bool) -> None:
    """Install the systemd unit, default policy, logrotate snippet and accounts."""
    if os.geteuid() != 0 and not dry_run and root == Path("/"):
        click.echo("agentshctl: install-service must run as root", err=True)
        sys.exit(1)
    bindir = Path(sys.executable).parent
    agentshd = str(bindir / "agentshd")
    agentshctl = str(bindir / "agentshctl")
    actions: list[str] = []

    def write(path: Path, text: str, mode: int, overwrite: bool) -> None:
        dest = root / path.relative_to("/")
        if dest.exists() and not overwrite:
            actions.append(f"kept existing {path}")
            return
        actions.append(f"{'updated' if dest.exists() else 'installed'} {path}")
        if not dry_run:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            os.chmod(dest, mode)

    write(Path("/etc/systemd/system") / UNIT_NAME, unit_text(agentshd), 0o644, overwrite=True)
    write(Path("/etc/agentsh/agentsh.yaml"), embedded_default_text(), 0o640, overwrite=False)
    pd = root / "etc/agentsh/policy.d"
    if not pd.exists():
        actions.append("created /etc/agentsh/policy.d/")
        if not dry_run:
            pd.mkdir(parents=True, exist_ok=True)
    write(Path("/etc/logrotate.d/agentsh"), logrotate_text(agentshctl), 0o644, overwrite=True)
    if not no_accounts and root == Path("/"):
        actions.extend(_ensure_account("agentsh", dry_run))
    if root == Path("/") and not dry_run and shutil.which("systemctl"):
        r = subprocess.run(["systemctl", "daemon-reload"], capture_output=True, text=True)
        actions.append("systemctl daemon-reload" + ("" if r.returncode == 0 else f" (failed: {r.stderr.strip()})"))
    for a in actions:
        click.echo(("would: " if dry_run else "") + a)
    click.echo("next: systemctl enable --now agentsh && agentshctl status")

