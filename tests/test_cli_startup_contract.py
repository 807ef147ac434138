"""agentshctl starts fast because it imports only what a command needs: the
lazy command table lists commands without importing them, help and completion
import no HTTP client, no pydantic models, no event loop, and the daemon
requests of the common commands go over the blocking stdlib client
(docs/operations.md "CLI start-up"; the timing itself is bench/cli.py).
Checked structurally with ``python -X importtime``, never by the clock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentsh.agent.ctl.main import COMMANDS, cli, load
from tests.conftest import AGENTSHCTL, DaemonProc

HEAVY = ("aiohttp", "pydantic", "pydantic_core", "asyncio", "yaml", "bcc", "mcp", "psutil", "pyroute2")


def imported_modules(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Top-level packages a real `agentshctl ARGS` run imports (from -X importtime)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "agentsh.agent.ctl.main", *args],
                       capture_output=True, text=True, env={**os.environ, **(env or {})})
    mods = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            mods.add(name.split(".")[0])
    assert mods, r.stderr[-2000:]
    return mods


def command_paths() -> list[list[str]]:
    out: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> None:
        ctx = click.Context(cmd, info_name=path[-1] if path else "agentshctl", parent=parent)
        out.append(path)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name], ctx)

    walk(cli, [], None)
    return out


def test_every_table_line_names_a_command_with_that_help() -> None:
    for name, (_target, help_text) in COMMANDS.items():
        cmd = load(name)
        assert isinstance(cmd, click.Command), name
        if " " not in name:  # top-level lines carry the help `agentshctl --help` shows
            assert cmd.get_short_help_str(10_000) == click.Command(name, help=help_text).get_short_help_str(10_000), name


def test_help_lists_every_command_of_the_table() -> None:
    r = CliRunner().invoke(cli, ["--help"])
    assert r.exit_code == 0, r.output
    listed = r.output.split("Commands:", 1)[1]
    for name in COMMANDS:
        if " " not in name:
            assert f"\n  {name} " in listed, name


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "agentshctl")
def test_help_imports_no_http_client_models_or_event_loop(path: list[str]) -> None:
    heavy = imported_modules(*path, "--help") & set(HEAVY)
    assert not heavy, f"`agentshctl {' '.join(path)} --help` imports {sorted(heavy)}"


def test_unknown_command_is_one_line_with_a_suggestion() -> None:
    r = subprocess.run([AGENTSHCTL, "stauts"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "No such command 'stauts'" in r.stderr and "status" in r.stderr
    assert "Traceback" not in r.stderr


def test_status_and_proxy_env_against_a_daemon_use_the_blocking_client(daemon: DaemonProc, tmp_path: Path) -> None:
    sock = str(daemon.socket)
    for args in (["--socket", sock, "status"], ["--socket", sock, "proxy", "env"],
                 ["--socket", sock, "events", "tail", "-n", "10"]):
        heavy = imported_modules(*args) & {"aiohttp", "pydantic", "asyncio", "yaml"}
        assert not heavy, f"agentshctl {' '.join(args)} imports {sorted(heavy)}"
    r = subprocess.run([AGENTSHCTL, "--socket", sock, "proxy", "env"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("export ANTHROPIC_BASE_URL=http://127.0.0.1:7390\n"), r.stdout  # the default port
    st = subprocess.run([AGENTSHCTL, "--socket", sock, "status", "--json"], capture_output=True, text=True)
    assert st.returncode in (0, 1) and '"healthy"' in st.stdout


def test_completion_scripts_and_lazy_completion_of_command_names() -> None:
    for shell in ("bash", "zsh", "fish"):
        r = subprocess.run([AGENTSHCTL, "completion", shell], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "_AGENTSHCTL_COMPLETE" in r.stdout
    env = {"_AGENTSHCTL_COMPLETE": "bash_complete", "COMP_WORDS": "agentshctl st", "COMP_CWORD": "1"}
    r = subprocess.run([AGENTSHCTL], capture_output=True, text=True, env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["plain,status"], r.stdout
    assert not imported_modules(env=env) & set(HEAVY)
    env = {"_AGENTSHCTL_COMPLETE": "bash_complete", "COMP_WORDS": "agentshctl mcp reg", "COMP_CWORD": "2"}
    r = subprocess.run([AGENTSHCTL], capture_output=True, text=True, env={**os.environ, **env})
    assert r.stdout.split() == ["plain,registry"], r.stdout
    env = {"_AGENTSHCTL_COMPLETE": "bash_complete", "COMP_WORDS": "agentshctl status --j", "COMP_CWORD": "2"}
    r = subprocess.run([AGENTSHCTL], capture_output=True, text=True, env={**os.environ, **env})
    assert r.stdout.split() == ["plain,--json"], r.stdout


def test_man_pages_cover_every_command_and_render(tmp_path: Path) -> None:
    r = subprocess.run([AGENTSHCTL, "man", "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pages = {p.name for p in tmp_path.rglob("*.[18]")}
    for path in command_paths():
        assert "-".join(["agentshctl", *path]) + ".1" in pages, path
    assert {"agentshd.8", "agentsh-shim.1"} <= pages
    status = (tmp_path / "man1" / "agentshctl-status.1").read_text()
    assert ".SH OPTIONS" in status and "\\-\\-json" in status and "Machine\\-readable output." in status
    if not Path("/usr/bin/man").exists():
        pytest.skip("man(1) missing: pages written, rendering not checked")
    for page in (tmp_path / "man1" / "agentshctl.1", tmp_path / "man1" / "agentshctl-status.1",
                 tmp_path / "man8" / "agentshd.8"):
        out = subprocess.run(["man", "--warnings", "-l", "-P", "cat", str(page)], capture_output=True,
                             text=True, env={**os.environ, "MANWIDTH": "100"})
        assert out.returncode == 0 and not out.stderr.strip(), (page, out.stderr)
        assert "NAME" in out.stdout and "SYNOPSIS" in out.stdout
