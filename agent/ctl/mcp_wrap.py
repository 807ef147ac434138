"""``agentshctl mcp wrap`` / ``mcp unwrap``: put a client's stdio MCP servers under the shim.

A wrapped entry keeps every key it had (env, type, cwd, ...) and becomes::

    "command": "/abs/path/agentsh-shim",
    "args": ["--server-id", "<entry name>", "--socket", "<daemon socket>",
             "--config-dir", "<policy dir>", "--state-dir", "<state dir>",
             "--", "<orig command>", <orig args>...]

so the shim talks to the daemon that is running when you wrap (its socket,
and for offline decisions and spooling the same policy and state directories
— asked from the daemon itself), ``unwrap`` can restore the original from the
entry itself (no backup needed), and wrapping twice changes nothing (an entry
wrapped for other daemon paths is rewired). Which entries are wrapped
(docs/shim.md): every entry of an ``mcpServers`` map that has a ``command``
and is not a network server (``url`` or ``type`` http/sse/streamable-http) —
the client declares them MCP servers, so no guessing is needed; with
``--only-matching`` only those whose command line matches the policy's
``mcp.inspection.server_patterns`` + ``custom_servers`` are wrapped.

Config files (``--config`` overrides):
- claude-code: user → ``~/.claude.json`` (top-level ``mcpServers`` and every
  ``projects[<path>].mcpServers``, i.e. user and local scopes); project →
  ``./.mcp.json``
- cursor: user → ``~/.cursor/mcp.json``; project → ``./.cursor/mcp.json``
- claude-desktop: ``~/.config/Claude/claude_desktop_config.json`` (Linux;
  ``$XDG_CONFIG_HOME`` respected)
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

__all__ = ["config_path", "unwrap", "unwrap_entry", "wrap", "wrap_entry"]

SHIM_NAME = "agentsh-shim"
CLIENTS = ("claude-code", "cursor", "claude-desktop")
_NETWORK_TYPES = {"http", "sse", "streamable-http", "streamableHttp", "ws"}


def shim_path() -> str:
    """Absolute path of the installed ``agentsh-shim`` (the venv's, else PATH)."""
    sibling = Path(sys.executable).parent / SHIM_NAME
    if sibling.exists():
        return str(sibling)
    found = shutil.which(SHIM_NAME)
    return os.path.abspath(found) if found else SHIM_NAME


def config_path(client: str, scope: str, home: Path | None = None, cwd: Path | None = None) -> Path:
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    if client == "claude-code":
        return cwd / ".mcp.json" if scope == "project" else home / ".claude.json"
    if client == "cursor":
        return cwd / ".cursor" / "mcp.json" if scope == "project" else home / ".cursor" / "mcp.json"
    if client == "claude-desktop":
        if scope == "project":
            raise click.UsageError("claude-desktop has no project scope")
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg) if xdg else home / ".config"
        return base / "Claude" / "claude_desktop_config.json"
    raise click.UsageError(f"unknown client {client!r}")


def server_maps(doc: Any, client: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, mcpServers map) pairs of a client config document."""
    if not isinstance(doc, dict):
        return
    top = doc.get("mcpServers")
    if isinstance(top, dict):
        yield "", top
    if client == "claude-code":
        projects = doc.get("projects")
        if isinstance(projects, dict):
            for path, proj in projects.items():
                if isinstance(proj, dict) and isinstance(proj.get("mcpServers"), dict):
                    yield f"projects[{path}]", proj["mcpServers"]


def is_wrapped(entry: dict[str, Any]) -> bool:
    cmd = entry.get("command")
    return isinstance(cmd, str) and os.path.basename(cmd) == SHIM_NAME


def is_stdio(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    if entry.get("url") or entry.get("serverUrl"):
        return False
    return entry.get("type") not in _NETWORK_TYPES


def wrap_entry(name: str, entry: dict[str, Any], shim: str, wiring: list[str] | None = None) -> dict[str, Any]:
    args = entry.get("args") or []
    out = dict(entry)
    out["command"] = shim
    out["args"] = ["--server-id", name, *(wiring or []), "--", entry["command"], *[str(a) for a in args]]
    return out


def wiring_of(entry: dict[str, Any]) -> list[str]:
    """The daemon options recorded in a wrapped entry (between --server-id and --)."""
    args = entry.get("args")
    if not isinstance(args, list) or "--" not in args:
        return []
    head = [str(a) for a in args[: args.index("--")]]
    out: list[str] = []
    for i, a in enumerate(head):
        if a in ("--socket", "--config-dir", "--state-dir") and i + 1 < len(head):
            out += [a, head[i + 1]]
    return out


def daemon_wiring(socket_path: str | None, config_dir: str | None, state_dir: str | None) -> tuple[list[str], str | None]:
    """Shim options that tie it to the running daemon, and a warning if the
    daemon could not be asked where its policy and state live."""
    from agentsh.agent.core.client_sync import DaemonUnavailable, call, default_socket

    sock = os.path.abspath(socket_path or default_socket())
    warning = None
    if config_dir is None or state_dir is None:
        try:
            st = call(sock, "GET", "/v1/status")
            config_dir = config_dir or st.get("config_dir")
            state_dir = state_dir or st.get("state_dir")
        except DaemonUnavailable as e:
            warning = (
                f"{e}: recording --socket only; without --config-dir/--state-dir the shims "
                "decide offline on /etc/agentsh and spool under /var/lib/agentsh"
            )
        except Exception as e:  # the daemon answered with an error: say so, keep going
            warning = f"cannot ask agentshd for its paths ({e}); recording --socket only"
    out = ["--socket", sock]
    if config_dir:
        out += ["--config-dir", os.path.abspath(config_dir)]
    if state_dir:
        out += ["--state-dir", os.path.abspath(state_dir)]
    return out, warning


def unwrap_entry(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The original entry, from the wrapped args; None if they are not ours."""
    args = entry.get("args")
    if not isinstance(args, list) or "--" not in args:
        return None
    i = args.index("--")
    if i + 1 >= len(args):
        return None
    out = dict(entry)
    out["command"] = args[i + 1]
    rest = args[i + 2 :]
    if rest:
        out["args"] = rest
    else:
        out.pop("args", None)  # "args": [] and no args mean the same to every client
    return out


def _load(path: Path) -> Any:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise click.ClickException(f"{path}: no such file (nothing to wrap)") from None
    try:
        return json.loads(text), text
    except json.JSONDecodeError as e:
        raise click.ClickException(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, old_text: str, new_text: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"{path.name}.agentsh-backup-{stamp}")
    n = 1
    while backup.exists():
        backup = path.with_name(f"{path.name}.agentsh-backup-{stamp}-{n}")
        n += 1
    mode = path.stat().st_mode & 0o7777
    backup.write_text(old_text, "utf-8")
    os.chmod(backup, mode)
    tmp = path.with_name(f".{path.name}.agentsh-tmp")
    tmp.write_text(new_text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return backup


def _patterns(config_dir: str | None) -> list[str]:
    from agentsh.agent.core.mcp.offline import load_policy

    d = config_dir or os.environ.get("AGENTSH_CONFIG_DIR", "/etc/agentsh")
    loaded, _ = load_policy(d)
    insp = loaded.policy.mcp.inspection
    return [*insp.server_patterns, *insp.custom_servers]


def _show(path: Path, old_text: str, new_text: str) -> None:
    diff = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"{path} (before)",
        tofile=f"{path} (after)",
    )
    click.echo("".join(diff), nl=False)


_common = [
    click.option("--client", type=click.Choice(CLIENTS), required=True),
    click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True),
    click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
                 help="Client config file (default: the client's file for the scope)."),
    click.option("--dry-run", is_flag=True, help="Show the diff, change nothing."),
]


def _apply(f: Any) -> Any:
    for opt in reversed(_common):
        f = opt(f)
    return f


@click.command("wrap")
@_apply
@click.option("--only-matching", is_flag=True,
              help="Wrap only entries matching mcp.inspection.server_patterns/custom_servers.")
@click.option("--config-dir", help="Policy directory the shims decide on offline (default: the running daemon's).")
@click.option("--state-dir", help="State directory the shims spool under (default: the running daemon's).")
@click.pass_context
def wrap(ctx: click.Context, client: str, scope: str, config: Path | None, dry_run: bool, only_matching: bool,
         config_dir: str | None, state_dir: str | None) -> None:
    """Run each stdio MCP server of a client's config under agentsh-shim,
    wired to the running daemon (its socket, policy and state directories)."""
    from agentsh.agent.ctl.common import socket_of

    path = config or config_path(client, scope)
    doc, old_text = _load(path)
    shim = shim_path()
    wiring, warning = daemon_wiring(socket_of(ctx), config_dir, state_dir)
    if warning:
        click.echo(f"agentshctl: warning: {warning}", err=True)
    wiring_dir = dict(zip(wiring[::2], wiring[1::2], strict=True)).get("--config-dir")
    patterns = _patterns(config_dir or wiring_dir) if only_matching else []
    from agentsh.agent.core.mcp.serverid import is_mcp_server  # here: it imports the policy models

    wrapped, already, skipped = [], [], []
    for label, servers in server_maps(doc, client):
        for name, entry in list(servers.items()):
            where = f"{label}.{name}" if label else name
            if not is_stdio(entry):
                skipped.append(f"{where} (not a stdio server)")
                continue
            if is_wrapped(entry):
                if wiring_of(entry) != wiring:
                    orig = unwrap_entry(entry)
                    if orig is not None:
                        servers[name] = wrap_entry(name, orig, shim, wiring)
                        wrapped.append(f"{where} (rewired)")
                        continue
                already.append(where)
                continue
            args = [str(a) for a in entry.get("args") or []]
            if only_matching and not is_mcp_server(entry["command"], args, patterns):
                skipped.append(f"{where} (matches no server pattern)")
                continue
            servers[name] = wrap_entry(name, entry, shim, wiring)
            wrapped.append(where)
    _finish(path, old_text, doc, dry_run, "wrapped", wrapped, already, "already wrapped", skipped)


@click.command("unwrap")
@_apply
def unwrap(client: str, scope: str, config: Path | None, dry_run: bool) -> None:
    """Restore the original commands of entries wrapped by `mcp wrap`."""
    path = config or config_path(client, scope)
    doc, old_text = _load(path)
    restored, plain, skipped = [], [], []
    for label, servers in server_maps(doc, client):
        for name, entry in list(servers.items()):
            where = f"{label}.{name}" if label else name
            if not isinstance(entry, dict) or not is_wrapped(entry):
                plain.append(where)
                continue
            orig = unwrap_entry(entry)
            if orig is None:
                skipped.append(f"{where} (shim args without '-- COMMAND'; restore from a backup)")
                continue
            servers[name] = orig
            restored.append(where)
    _finish(path, old_text, doc, dry_run, "restored", restored, plain, "not wrapped", skipped)


def _finish(path: Path, old_text: str, doc: Any, dry_run: bool, verb: str, changed: list[str],
            same: list[str], same_label: str, skipped: list[str]) -> None:
    new_text = _dump(doc)
    if changed:
        # diff of the content (both sides 2-space indented), not of the old formatting
        try:
            _show(path, _dump(json.loads(old_text)), new_text)
        except json.JSONDecodeError:  # pragma: no cover - _load already parsed it
            _show(path, old_text, new_text)
    click.echo(f"{path}: {verb} {len(changed)}" + (f" ({', '.join(changed)})" if changed else ""))
    if same:
        click.echo(f"  {same_label}: {', '.join(same)}")
    for s in skipped:
        click.echo(f"  skipped: {s}")
    if not changed:
        click.echo("  nothing to change")
        return
    if dry_run:
        click.echo("  dry run: file not changed")
        return
    backup = _write(path, old_text, new_text)
    click.echo(f"  backup: {backup}")
