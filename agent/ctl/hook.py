"""``agentshctl hook install|uninstall|status|evaluate``: agent hooks (docs/flow.md "Hooks").

``install`` merges agentsh's entries into the ``hooks`` of Claude Code's
settings (project: ``./.claude/settings.json``; user:
``$CLAUDE_CONFIG_DIR/settings.json``, default ``~/.claude/settings.json``)::

    "PreToolUse":         [{"matcher": "Read|Glob|...|mcp__.*", "hooks": [{"type": "command",
                            "command": "/abs/python -S -E /abs/agentsh/agent/hook_cmd.py --event PreToolUse",
                            "timeout": 30}]}],
    "PostToolUse":        [... "--event PostToolUse", "async": true ...],
    "PostToolUseFailure": [... "--event PostToolUseFailure", "async": true ...]

Every other key, hook and matcher group is kept; installing twice changes
nothing; a changed file is backed up first (``settings.json.agentsh-backup-<time>``,
like ``mcp wrap``). The command is absolute (Claude Code's PATH does not
have the virtualenv), holds no secret (the daemon authenticates the
hook by its uid on the socket), and names the daemon's socket only when it is
not the default. ``uninstall`` removes exactly agentsh's entries.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import click

from agentsh.agent.core.timefmt import seconds_since
from agentsh.agent.ctl.common import ago, print_json, socket_of

AGENTS = ("claude-code",)
DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"
# Every tool that reads data or can send it, including the ones Claude Code
# added or renamed (Agent = Task, MultiEdit, NotebookEdit, LS); docs/flow.md "Hooks".
PRE_MATCHER = "Read|Glob|Grep|LS|Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch|WebSearch|Task|Agent|mcp__.*"
POST_MATCHER = PRE_MATCHER.replace("Bash|", "Bash|BashOutput|NotebookRead|")
HOOK_TIMEOUT = 30
"""Seconds Claude Code waits for the hook (the command itself gives up after 8)."""
EVENTS: dict[str, tuple[str, bool]] = {
    # event: (matcher, async) — PostToolUse only records; a failed
    # tool's PostToolUseFailure tells the daemon no result is coming
    "PreToolUse": (PRE_MATCHER, False),
    "PostToolUse": (POST_MATCHER, True),
    "PostToolUseFailure": (PRE_MATCHER, True),
}
NUDGE = (
    "Hooks provide visibility into agent-internal tools like Read, Bash, WebFetch. "
    "Without hooks, flow detection is limited to MCP-proxied tool calls."
)


def settings_path(scope: str, home: Path | None = None, cwd: Path | None = None) -> Path:
    if scope == "project":
        return (cwd or Path.cwd()) / ".claude" / "settings.json"
    conf = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(conf) if conf and home is None else (home or Path.home()) / ".claude"
    return base / "settings.json"


def script_path() -> Path:
    from agentsh.agent import hook_cmd  # import-light by design: no agentsh dependencies

    return Path(hook_cmd.__file__).resolve()


def hook_command(event: str, socket: str | None) -> str:
    """The command Claude Code runs: the interpreter of this installation with
    ``-S -E`` (start-up in milliseconds, nothing from the user's environment)
    and the hook script, both absolute."""
    parts = [sys.executable, "-S", "-E", str(script_path()), "--event", event]
    if socket and os.path.abspath(socket) != DEFAULT_SOCKET:
        parts += ["--socket", os.path.abspath(socket)]
    return shlex.join(parts)


def our_entry(event: str, socket: str | None) -> dict[str, Any]:
    matcher, is_async = EVENTS[event]
    hook: dict[str, Any] = {"type": "command", "command": hook_command(event, socket), "timeout": HOOK_TIMEOUT}
    if is_async:
        hook["async"] = True
    return {"matcher": matcher, "hooks": [hook]}


def is_ours(hook: Any) -> bool:
    """A hook entry agentsh installed (its command runs agentsh's hook script)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return any(w.endswith("/agent/hook_cmd.py") for w in words)


def installed(doc: Any) -> dict[str, list[str]]:
    """event → commands of agentsh's entries in a settings document."""
    out: dict[str, list[str]] = {}
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for g in groups:
            for h in (g.get("hooks") if isinstance(g, dict) else None) or []:
                if is_ours(h):
                    out.setdefault(event, []).append(h["command"])
    return out


def _strip(groups: list[Any]) -> list[Any]:
    """``groups`` without agentsh's hooks (groups left empty by that go too)."""
    out = []
    for g in groups:
        if isinstance(g, dict) and isinstance(g.get("hooks"), list) and any(is_ours(h) for h in g["hooks"]):
            rest = [h for h in g["hooks"] if not is_ours(h)]
            if not rest:
                continue
            g = {**g, "hooks": rest}
        out.append(g)
    return out


def install_into(doc: dict[str, Any], socket: str | None) -> dict[str, Any]:
    """``doc`` with agentsh's entries (idempotent: an identical install is kept as is)."""
    hooks = doc.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise click.ClickException("settings: \"hooks\" is not an object; fix it first")
    hooks = dict(hooks)
    for event in EVENTS:
        want = our_entry(event, socket)
        groups = hooks.get(event) or []
        if not isinstance(groups, list):
            raise click.ClickException(f"settings: hooks.{event} is not a list; fix it first")
        ours = [g for g in groups if isinstance(g, dict) and any(is_ours(h) for h in g.get("hooks") or [])]
        if ours == [want]:
            continue
        hooks[event] = [*_strip(groups), want]
    return {**doc, "hooks": hooks}


def uninstall_from(doc: dict[str, Any]) -> dict[str, Any]:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return doc
    new: dict[str, Any] = {}
    for event, groups in hooks.items():
        if isinstance(groups, list):
            kept = _strip(groups)
            if kept or not groups:
                new[event] = kept
        else:
            new[event] = groups
    out = dict(doc)
    if new:
        out["hooks"] = new
    else:
        out.pop("hooks", None)
    return out


# --------------------------------------------------------------------------- files


def _load(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}, None
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise click.ClickException(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise click.ClickException(f"{path}: not a JSON object")
    return doc, text


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _save(path: Path, old_text: str | None, new_text: str) -> Path | None:
    """Write atomically; back the old file up first. The backup's path (None: new file)."""
    backup = None
    mode = 0o644
    if old_text is not None:
        mode = path.stat().st_mode & 0o7777
        stamp = time.strftime("%Y%m%dT%H%M%S")
        backup = path.with_name(f"{path.name}.agentsh-backup-{stamp}")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.agentsh-backup-{stamp}-{n}")
            n += 1
        backup.write_text(old_text, "utf-8")
        os.chmod(backup, mode)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.agentsh-tmp")
    tmp.write_text(new_text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return backup


def _change(path: Path, old_text: str | None, old: dict[str, Any], new: dict[str, Any], dry_run: bool, verb: str) -> None:
    if new == old:
        click.echo(f"{path}: agentsh hooks already {verb}; nothing to change")
        return
    before = _dump(old) if old_text is not None else ""
    after = _dump(new)
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"{path} (before)", tofile=f"{path} (after)",
    )
    click.echo("".join(diff), nl=False)
    if dry_run:
        click.echo(f"{path}: dry run, file not changed")
        return
    backup = _save(path, old_text, after)
    click.echo(f"{path}: agentsh hooks {verb}" + (f" (backup: {backup})" if backup else ""))


# --------------------------------------------------------------------------- commands

_agent = click.option("--agent", type=click.Choice(AGENTS), default="claude-code", show_default=True,
                      help="The agent whose hooks to manage.")


@click.group()
def hook() -> None:
    """Install, remove and check agent hooks (Claude Code) and evaluate one."""


@hook.command()
@_agent
@click.option("--scope", type=click.Choice(["project", "user"]), default="project", show_default=True,
              help="project: ./.claude/settings.json; user: ~/.claude/settings.json.")
@click.option("--settings", "settings", type=click.Path(dir_okay=False, path_type=Path),
              help="Settings file (default: the agent's file for the scope).")
@click.option("--dry-run", is_flag=True, help="Show the diff, change nothing.")
@click.pass_context
def install(ctx: click.Context, agent: str, scope: str, settings: Path | None, dry_run: bool) -> None:
    """Add agentsh's PreToolUse/PostToolUse hooks to the agent's settings.

    The hooks hand each tool call to agentshd, which denies data flows the
    policy forbids (flow.*). They fail open when the daemon is away (unless
    flow.hooks.fail_open is false). A non-default daemon socket (--socket) is
    recorded in the hook command.
    """
    path = settings or settings_path(scope)
    doc, text = _load(path)
    _change(path, text, doc, install_into(doc, socket_of(ctx)), dry_run, "installed")
    _warn_daemon(socket_of(ctx))


@hook.command()
@_agent
@click.option("--scope", type=click.Choice(["project", "user"]), default="project", show_default=True)
@click.option("--settings", "settings", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show the diff, change nothing.")
def uninstall(agent: str, scope: str, settings: Path | None, dry_run: bool) -> None:
    """Remove agentsh's hooks from the agent's settings (other hooks stay)."""
    path = settings or settings_path(scope)
    doc, text = _load(path)
    if text is None:
        click.echo(f"{path}: no such file; nothing to remove")
        return
    _change(path, text, doc, uninstall_from(doc), dry_run, "removed")


def _daemon_status(socket: str | None) -> tuple[dict[str, Any] | None, str]:
    from agentsh.agent.core.client_sync import ControlError, DaemonUnavailable, call

    try:
        return call(socket, "GET", "/v1/status"), ""
    except (DaemonUnavailable, ControlError) as e:
        return None, str(e)


def _warn_daemon(socket: str | None) -> None:
    st, why = _daemon_status(socket)
    if st is None:
        click.echo(f"agentshctl: warning: {why}: the hooks fail open until it runs", err=True)
    elif not (st.get("security_coverage") or {}).get("hooks_enabled", True):
        click.echo("agentshctl: warning: the daemon's policy has flow.hooks.enabled: false", err=True)


def status_report(socket: str | None, scopes: dict[str, Path]) -> dict[str, Any]:
    files: list[dict[str, Any]] = []  # JSON rows
    for scope, path in scopes.items():
        try:
            doc, _ = _load(path)
            err = None
        except click.ClickException as e:
            doc, err = {}, e.message
        found = installed(doc)
        problems = []
        if found:
            problems += [f"{e} hook missing (re-run `agentshctl hook install`)" for e in EVENTS if e not in found]
        for cmds in found.values():
            for c in cmds:
                words = shlex.split(c)
                for w in words[:3]:
                    if w.startswith("/") and not os.path.exists(w):
                        problems.append(f"{w} does not exist (re-run `agentshctl hook install`)")
        files.append({"scope": scope, "path": str(path), "installed": sorted(found),
                      "commands": found, "problems": sorted(set(problems)), "error": err})
    # the daemon the installed hooks talk to (the socket recorded in them), else --socket
    recorded = [_socket_in(c) for f in files for cmds in f["commands"].values() for c in cmds]
    socket = next((r for r in recorded if r), None) or socket
    st, why = _daemon_status(socket)
    cov = (st or {}).get("security_coverage") or {}
    return {"agent": "claude-code", "settings": files, "socket": socket or DEFAULT_SOCKET,
            "daemon_reachable": st is not None, "daemon_error": why or None, "coverage": cov}


def _socket_in(command: str) -> str | None:
    words = shlex.split(command)
    if "--socket" in words:
        i = words.index("--socket")
        return words[i + 1] if i + 1 < len(words) else None
    return DEFAULT_SOCKET


@hook.command("status")
@_agent
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status_cmd(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Which settings have agentsh's hooks, and whether the daemon sees them.

    Exit 0 when the hooks are installed (in the project or the user settings)
    and the daemon answers; 1 otherwise.
    """
    rep = status_report(socket_of(ctx), {"project": settings_path("project"), "user": settings_path("user")})
    ok = any(f["installed"] and not f["problems"] for f in rep["settings"]) and rep["daemon_reachable"]
    if as_json:
        print_json({**rep, "ok": ok})
        sys.exit(0 if ok else 1)
    for f in rep["settings"]:
        what = ("installed: " + ", ".join(f["installed"])) if f["installed"] else "not installed"
        click.echo(f"{agent} {f['scope']:<7} {f['path']}: {f['error'] or what}")
        for p in f["problems"]:
            click.echo(f"  ! {p}")
    if not rep["daemon_reachable"]:
        click.echo(f"daemon: {rep['daemon_error']} (the hooks fail open meanwhile, unless flow.hooks.fail_open is false)")
    else:
        cov = rep["coverage"]
        last = cov.get("last_hook_evaluation_at")
        seen = f"last evaluation {ago(seconds_since(last))} ago" if last else "no hook evaluation seen yet"
        click.echo(
            f"daemon: reachable; hooks {'enabled' if cov.get('hooks_enabled', True) else 'DISABLED by policy'}; "
            f"coverage {cov.get('level', 'proxy_only')}, {cov.get('hook_sessions', 0)} active hook session(s); {seen}"
        )
    if not any(f["installed"] for f in rep["settings"]):
        click.echo(f"{NUDGE} Run `agentshctl hook install --agent claude-code` to enable.")
    sys.exit(0 if ok else 1)


@hook.command(context_settings={"ignore_unknown_options": True})
@click.option("--event", type=click.Choice(list(EVENTS)), required=True)
@_agent
@click.pass_context
def evaluate(ctx: click.Context, event: str, agent: str) -> None:
    """Evaluate one hook: payload on stdin, Claude Code's answer on stdout.

    The same code the installed hook runs (agent/hook_cmd.py), with the
    start-up of agentshctl; fails open like it.
    """
    from agentsh.agent import hook_cmd

    hook_cmd.main(["--event", event, "--agent", agent, "--socket", socket_of(ctx) or DEFAULT_SOCKET])
