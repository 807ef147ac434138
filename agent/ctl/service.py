"""agentshctl install-service: install agentsh as a systemd service.

What it lays out (docs/operations.md "Install" and "Files and directories"):

* the ``agentsh`` and ``agentsh-admin`` system groups and the ``agentsh`` user;
* the console scripts (agentshctl, agentshd, agentsh-shim and any other this
  package declares) on PATH as symlinks in /usr/local/bin into the virtualenv:
  the venv *is* the installation (Debian's bcc comes from the system
  site-packages; a pip install into the system interpreter is refused by
  Debian's PEP 668 marker and would mix with apt's packages), and a symlink
  follows an upgrade of the venv without reinstalling;
* /etc/agentsh (root:agentsh 0750), agentsh.yaml from the embedded default
  (root:agentsh 0640, never overwritten), policy.d/;
* the unit, /etc/logrotate.d/agentsh (installing Debian's logrotate when
  missing) and, with it, a policy drop-in that turns the daemon's own
  rotation off, so there is one rotation, not two;
* README and docs under /usr/local/share/doc/agentsh (the unit's
  Documentation=), man pages under /usr/local/share/man, shell completion.

Every step prints what it did, and what it skipped and why.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

UNIT_NAME = "agentsh.service"
GROUPS = ("agentsh", "agentsh-admin")
USER = "agentsh"
BIN_DIR = Path("/usr/local/bin")
DOC_DIR = Path("/usr/local/share/doc/agentsh")
MAN_DIR = Path("/usr/local/share/man")
LOGROTATE_DROPIN = Path("/etc/agentsh/policy.d/00-logrotate.yaml")
LOGROTATE_DROPIN_TEXT = """\
# Written by `agentshctl install-service`: /etc/logrotate.d/agentsh rotates the
# event log, so the daemon's own size-based rotation is off (one rotation, not
# two). Remove this file and /etc/logrotate.d/agentsh to rotate in the daemon.
events:
  rotate_max_bytes: 0
"""


def _shipped(name: str) -> str:
    return (importlib.resources.files("agentsh.systemd") / name).read_text("utf-8")


def unit_text(agentshd: str) -> str:
    return _shipped("agentsh.service").replace("/usr/local/bin/agentshd", agentshd)


def logrotate_text(agentshctl: str) -> str:
    return _shipped("agentsh.logrotate").replace("/usr/local/bin/agentshctl", agentshctl)


def console_scripts() -> list[str]:
    """The commands this package installs (pyproject [project.scripts])."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution("agentsh").entry_points
    except PackageNotFoundError:  # pragma: no cover - running from an unpacked tree
        return ["agentshctl", "agentshd", "agentsh-shim"]
    return sorted(e.name for e in eps if e.group == "console_scripts")


def _project_root() -> Path | None:
    """The source tree of an editable install (README.md and docs/ beside agent/)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "README.md").is_file() and (root / "docs").is_dir() else None


@dataclass
class Installer:
    root: Path
    dry_run: bool
    lines: list[str] = field(default_factory=list)

    def at(self, path: Path) -> Path:
        return self.root / path.relative_to("/")

    def say(self, line: str) -> None:
        self.lines.append(("would: " if self.dry_run and not line.startswith("skipped") else "") + line)

    def gid(self, group: str) -> int | None:
        import grp

        try:
            return grp.getgrnam(group).gr_gid
        except KeyError:
            return None

    def own(self, path: Path, mode: int, group: str | None) -> None:
        """chmod, and chgrp to ``group`` when it exists (root:group)."""
        if self.dry_run:
            return
        dest = self.at(path)
        os.chmod(dest, mode)
        gid = self.gid(group) if group else 0
        if os.geteuid() == 0 and gid is not None:
            os.chown(dest, 0, gid)

    def write(self, path: Path, text: str, mode: int, *, overwrite: bool, group: str | None = None) -> None:
        dest = self.at(path)
        if dest.exists() and not overwrite:
            self.say(f"kept existing {path}")
            self.own(path, mode, group)
            return
        if dest.exists() and dest.read_text(errors="replace") == text:
            self.own(path, mode, group)
            return  # unchanged: nothing to say
        self.say(f"{'updated' if dest.exists() else 'installed'} {path}")
        if not self.dry_run:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.tmp")
            tmp.write_text(text)
            os.replace(tmp, dest)
            self.own(path, mode, group)

    def mkdir(self, path: Path, mode: int, group: str | None = None) -> None:
        dest = self.at(path)
        if not dest.is_dir():
            self.say(f"created {path}/")
            if not self.dry_run:
                dest.mkdir(parents=True, exist_ok=True)
        self.own(path, mode, group)

    def link(self, path: Path, target: Path) -> None:
        dest = self.at(path)
        if dest.is_symlink():
            if os.readlink(dest) == str(target):
                return  # already linked
            self.say(f"updated {path} -> {target}")
            if not self.dry_run:
                dest.unlink()
                dest.symlink_to(target)
            return
        if dest.exists():
            self.say(f"skipped {path}: exists and is not a symlink (left alone; run {target} directly)")
            return
        self.say(f"linked {path} -> {target}")
        if not self.dry_run:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(target)


def _ensure_accounts(inst: Installer) -> None:
    import grp
    import pwd

    for group in GROUPS:
        try:
            grp.getgrnam(group)
        except KeyError:
            inst.say(f"created system group {group}")
            if not inst.dry_run:
                subprocess.run(["groupadd", "--system", group], check=True)
    try:
        pwd.getpwnam(USER)
    except KeyError:
        inst.say(f"created system user {USER}")
        if not inst.dry_run:
            subprocess.run(
                ["useradd", "--system", "--gid", USER, "--no-create-home", "--home-dir", "/nonexistent",
                 "--shell", "/usr/sbin/nologin", USER],
                check=True,
            )


def _have_logrotate(inst: Installer, use_apt: bool) -> bool:
    """logrotate is installed (installing Debian's package when allowed)."""
    if shutil.which("logrotate", path=f"{inst.at(Path('/usr/sbin'))}:{inst.at(Path('/usr/bin'))}"):
        return True
    if inst.root != Path("/"):
        inst.say("skipped installing logrotate: --root given (a package built from this tree must depend on it)")
        return True
    if not use_apt:
        inst.say("skipped installing logrotate: --no-apt given")
        return False
    if not shutil.which("apt-get"):
        inst.say("skipped installing logrotate: no apt-get on this host")
        return False
    inst.say("installed logrotate (apt-get install logrotate)")
    if inst.dry_run:
        return True
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "logrotate"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:  # a stale package list: update once and retry
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, env=env)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        inst.lines[-1] = f"skipped installing logrotate: apt-get failed ({(r.stderr.strip().splitlines() or ['?'])[-1]})"
        return False
    return True


def _install_docs(inst: Installer) -> None:
    src = _project_root()
    if src is not None:
        inst.write(DOC_DIR / "README.md", (src / "README.md").read_text(), 0o644, overwrite=True)
        for doc in sorted((src / "docs").glob("*.md")):
            inst.write(DOC_DIR / "docs" / doc.name, doc.read_text(), 0o644, overwrite=True)
        return
    from importlib.metadata import distribution

    # the long description: metadata is an email.message.Message at run time, but
    # importlib.metadata types it as the PackageMetadata protocol, which omits get_payload
    readme = distribution("agentsh").metadata.get_payload()  # type: ignore[attr-defined]
    if readme:
        inst.write(DOC_DIR / "README.md", str(readme), 0o644, overwrite=True)
    inst.say(f"skipped {DOC_DIR}/docs/: this installation has no docs/ tree (see the project's repository)")


def _install_man_and_completion(inst: Installer) -> None:
    from agentsh.agent.ctl.completion import INSTALL_PATHS, SHELLS, script
    from agentsh.agent.ctl.manpages import all_pages

    n = len(inst.lines)
    for fname, text in all_pages():
        section = fname.rsplit(".", 1)[1]
        inst.write(MAN_DIR / f"man{section}" / fname, text, 0o644, overwrite=True)
    if len(inst.lines) - n > 3:  # one line, not one per page
        changed = len(inst.lines) - n
        del inst.lines[n:]
        inst.say(f"installed {changed} man pages under {MAN_DIR}")
    for shell in SHELLS:
        try:
            text = script(shell)
        except RuntimeError as e:  # click refuses bash < 4.4
            inst.say(f"skipped {shell} completion: {e}")
            continue
        inst.write(Path(INSTALL_PATHS[shell]), text, 0o644, overwrite=True)


@click.command("install-service")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default="/", show_default=True,
              help="Install below this root (for packaging and tests).")
@click.option("--dry-run", is_flag=True, help="Say what would be done.")
@click.option("--no-accounts", is_flag=True, help="Do not create the agentsh user and groups.")
@click.option("--no-apt", is_flag=True, help="Do not install Debian's logrotate when it is missing.")
def install_service(root: Path, dry_run: bool, no_accounts: bool, no_apt: bool) -> None:
    """Install agentsh as a systemd service: commands on PATH, unit, /etc/agentsh, logrotate, man pages, completion, accounts.

    Never overwrites an existing /etc/agentsh/agentsh.yaml. Prints every
    change, and every step it skipped with the reason.
    """
    if os.geteuid() != 0 and not dry_run and root == Path("/"):
        click.echo("agentshctl: install-service must run as root", err=True)
        sys.exit(1)
    from agentsh.agent.core.policy.loader import embedded_default_text

    inst = Installer(root, dry_run)
    venv_bin = Path(sys.executable).parent
    if no_accounts:
        inst.say("skipped accounts: --no-accounts given")
    elif root != Path("/"):
        inst.say("skipped accounts: only for an install into / (--root given)")
    else:
        _ensure_accounts(inst)
    for name in console_scripts():
        if (venv_bin / name).exists():
            inst.link(BIN_DIR / name, venv_bin / name)
        else:
            inst.say(f"skipped {BIN_DIR / name}: {venv_bin / name} does not exist")

    # World-readable: a shim of a user outside the agentsh group cannot reach
    # the daemon and decides on these files itself; it must see the real
    # policy, not the embedded default (a policy holds no secrets; docs/operations.md).
    inst.mkdir(Path("/etc/agentsh"), 0o755, "agentsh")
    inst.write(Path("/etc/agentsh/agentsh.yaml"), embedded_default_text(), 0o644, overwrite=False, group="agentsh")
    inst.mkdir(Path("/etc/agentsh/policy.d"), 0o755, "agentsh")
    if not dry_run and inst.gid("agentsh") is None:
        inst.say("skipped group ownership of /etc/agentsh: group agentsh does not exist (files stay root:root)")

    inst.write(Path("/etc/systemd/system") / UNIT_NAME, unit_text(str(venv_bin / "agentshd")), 0o644, overwrite=True)
    if _have_logrotate(inst, use_apt=not no_apt):
        inst.write(Path("/etc/logrotate.d/agentsh"), logrotate_text(str(venv_bin / "agentshctl")), 0o644,
                   overwrite=True)
        inst.write(LOGROTATE_DROPIN, LOGROTATE_DROPIN_TEXT, 0o644, overwrite=True, group="agentsh")
    else:
        inst.say("skipped /etc/logrotate.d/agentsh: no logrotate; agentshd rotates the event log itself "
                 "(events.rotate_max_bytes)")

    _install_docs(inst)
    _install_man_and_completion(inst)

    if root != Path("/"):
        inst.say("skipped systemctl daemon-reload: --root given")
    elif not Path("/run/systemd/system").is_dir():
        inst.say("skipped systemctl daemon-reload: systemd is not running on this host (not PID 1)")
    elif not dry_run:
        r = subprocess.run(["systemctl", "daemon-reload"], capture_output=True, text=True)
        inst.say("systemctl daemon-reload" + ("" if r.returncode == 0 else f" (failed: {r.stderr.strip()})"))
    for line in inst.lines:
        click.echo(line)
    if not any(not line.startswith(("skipped", "would: skipped")) for line in inst.lines):
        click.echo("everything already installed")
    click.echo("next: systemctl enable --now agentsh && agentshctl status")
