"""agentshctl mcp: the tool registry, approvals, MCP events and tool calls.

``registry`` and ``approve`` ask the daemon (they need it running); ``events``
and ``calls`` read the event log directly (the path comes from the daemon's
status, or ``--events``), so they work while the daemon is down too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, urlencode

import click
import orjson

from agentsh.agent.core.mcp.hashing import short_hash
from agentsh.agent.core.vocab import SEVERITY_RANK
from agentsh.agent.ctl.common import api, die, print_json, table
from agentsh.agent.ctl.events_cmd import read_events

MCP_EVENT_TYPES = (
    "mcp_tool_seen",
    "mcp_tool_changed",
    "mcp_detection",
    "mcp_tool_shadowed",
    "mcp_tool_called",
    "mcp_tool_call_intercepted",
    "mcp_network_connection",
    "mcp_server_discovered",
)
CALL_EVENT_TYPES = ("mcp_tool_call_intercepted", "mcp_tool_called", "mcp_network_connection")


@click.group()
def mcp() -> None:
    """MCP tool registry, approvals, events and calls."""


# ------------------------------------------------------------------ registry


@mcp.group()
def registry() -> None:
    """Tools the daemon has seen, with their pins."""


def _status_label(t: dict[str, Any]) -> str:
    label = {"changed": "changed!"}.get(t.get("status", ""), t.get("status", "?"))
    extra = []
    if t.get("blocked"):
        extra.append("blocked")
    if not t.get("listed", True):
        extra.append("unlisted")
    return label + (f" ({', '.join(extra)})" if extra else "")


def _detections_label(t: dict[str, Any]) -> str:
    dets = t.get("detections") or []
    if not dets:
        return "none"
    return f"{len(dets)} {t.get('max_severity') or '?'}"


def _split_spec(spec: str) -> tuple[str, str]:
    server, sep, tool = spec.rpartition(":")
    if not sep or not server or not tool:
        die(f"expected SERVER:TOOL, got {spec!r}")
    return server, tool


@registry.command("list")
@click.option("--server", help="Only this server's tools.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def registry_list(ctx: click.Context, server: str | None, as_json: bool) -> None:
    """List registered tools: SERVER TOOL HASH STATUS DETECTIONS."""
    path = "/v1/mcp/registry" + ("?" + urlencode({"server": server}) if server else "")
    tools = api(ctx, "GET", path)["tools"]
    if as_json:
        print_json(tools)
        return
    if not tools:
        click.echo("no tools registered" + (f" for server {server!r}" if server else ""))
        return
    rows = [
        [t["server_id"], t["tool_name"], short_hash(t["hash"]), _status_label(t),
         _detections_label(t)]
        for t in tools
    ]
    click.echo(table(rows, ["SERVER", "TOOL", "HASH", "STATUS", "DETECTIONS"]))


@registry.command("show")
@click.argument("spec", metavar="SERVER:TOOL")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def registry_show(ctx: click.Context, spec: str, as_json: bool) -> None:
    """Show one tool: hashes, pin, approval, detections and its definition."""
    server, tool = _split_spec(spec)
    t = api(ctx, "GET", f"/v1/mcp/registry/{quote(server, safe='')}/{quote(tool, safe='')}")
    if as_json:
        print_json(t)
        return
    lines = [
        ("server", f"{t['server_id']} ({t.get('server_type') or '?'}"
                   + (f", {t['server_addr']}" if t.get("server_addr") else "") + ")"),
        ("tool", t["tool_name"]),
        ("status", _status_label(t)),
        ("hash", t["hash"]),
        ("pinned hash", t.get("pinned_hash") or "-"),
        ("approved", f"by {t.get('approved_by') or '?'} at {t['approved_at']}"
                     if t.get("approved") else "no"),
        ("first seen", t.get("first_seen") or "-"),
        ("last seen", t.get("last_seen") or "-"),
        ("listed", "yes" if t.get("listed") else "no (the server no longer lists it)"),
    ]
    if t.get("block_reason"):
        lines.append(("blocked", t["block_reason"]))
    w = max(len(k) for k, _ in lines)
    for k, v in lines:
        click.echo(f"{k + ':':<{w + 1}} {v}")
    dets = t.get("detections") or []
    click.echo(f"detections: {'none' if not dets else ''}")
    for d in dets:
        texts = ", ".join(repr(m.get("text", "")) for m in d.get("matches", [])[:3])
        click.echo(f"  - {d.get('severity')} {d.get('category')} ({d.get('pattern')}) "
                   f"in {d.get('field')}: {texts}")
    if t.get("changed") and t.get("pinned_definition") is not None:
        from agentsh.agent.core.mcp.hashing import diff_definitions

        click.echo("changes since pinned:")
        for c in diff_definitions(t["pinned_definition"], t["definition"]):
            click.echo(f"  {c['field']}:\n    - {c['previous']}\n    + {c['new']}")
    click.echo("definition:")
    click.echo(orjson.dumps(t.get("definition"), option=orjson.OPT_INDENT_2).decode())


# ------------------------------------------------------------------ approve


@mcp.command()
@click.argument("spec", metavar="SERVER:TOOL", required=False)
@click.option("--server", help="With --all: the server whose tools to approve.")
@click.option("--all", "all_tools", is_flag=True, help="Approve every tool of --server.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def approve(
    ctx: click.Context,
    spec: str | None,
    server: str | None,
    all_tools: bool,
    as_json: bool,
) -> None:
    """Trust a tool's current definition (re-pins it, lifts a detection block).

    Needs the admin socket (root or group agentsh-admin); the approval is
    recorded with your credentials (an admin_action event).

    \b
    agentshctl mcp approve filesystem:read_file
    agentshctl mcp approve --server filesystem --all
    """
    if all_tools:
        if spec or not server:
            die("use either SERVER:TOOL or --server S --all")
        payload: dict[str, Any] = {"server": server, "all": True}
    else:
        if not spec or server:
            die("use either SERVER:TOOL or --server S --all")
        s, t = _split_spec(spec)
        payload = {"server": s, "tool": t}
    res = api(ctx, "POST", "/v1/mcp/approve", payload, admin=True)["approved"]
    if as_json:
        print_json(res)
        return
    for t in res:
        click.echo(f"approved {t['server_id']}:{t['tool_name']} {short_hash(t['hash'])}")


# ------------------------------------------------------------------ events / calls


def _ts(ev: dict[str, Any]) -> str:
    ts = str(ev.get("timestamp") or "")
    return ts[:19].replace("T", " ") if ts else "-"


def _severity(ev: dict[str, Any]) -> str | None:
    t = ev.get("type")
    if t == "mcp_detection":
        return (ev.get("detection") or {}).get("severity")
    if t == "mcp_tool_seen":
        return ev.get("max_severity")
    if t == "mcp_tool_changed":
        sevs = [d.get("severity") for d in ev.get("detections") or []]
        sevs = [s for s in sevs if s in SEVERITY_RANK]
        return max(sevs, key=SEVERITY_RANK.__getitem__) if sevs else None
    return None


def _detail(ev: dict[str, Any]) -> str:
    t = ev.get("type")
    if t == "mcp_detection":
        return (ev.get("detection") or {}).get("pattern", "") + f" [{ev.get('action')}]"
    if t == "mcp_tool_seen":
        return str(ev.get("status", "")) + (" blocked" if ev.get("blocked") else "")
    if t == "mcp_tool_changed":
        fields = ",".join(c.get("field", "") for c in ev.get("changes") or [])
        return f"{short_hash(ev.get('previous_hash'))}->{short_hash(ev.get('new_hash'))} " \
               f"{fields} [{ev.get('action')}]"
    if t == "mcp_tool_shadowed":
        return "also on " + ",".join(ev.get("other_server_ids") or [])
    if t in CALL_EVENT_TYPES:
        return str(ev.get("action", "")) + (f": {ev['reason']}" if ev.get("reason") else "")
    if t == "mcp_server_discovered":
        return f"{ev.get('tools')} tools" + (f" error: {ev['error']}" if ev.get("error") else "")
    return ""


def _check_types(types: Iterable[str]) -> None:
    from agentsh.agent.core.events.models import TYPE_NAMES

    unknown = [t for t in types if t not in TYPE_NAMES]
    if unknown:
        die(f"unknown event type(s): {', '.join(unknown)}")


@mcp.command("events")
@click.option("--severity", type=click.Choice(list(SEVERITY_RANK)),
              help="Only detections at or above this severity (implies --type mcp_detection "
                   "unless --type is given).")
@click.option("--type", "types", multiple=True,
              help="Event type (repeatable), e.g. mcp_detection, mcp_tool_call_intercepted.")
@click.option("--since", help="Only events since: 10m, 2h, 1d or an RFC 3339 time.")
@click.option("--session", help="Only this session id.")
@click.option("--server", help="Only this server id.")
@click.option("-f", "--follow", is_flag=True, help="Keep reading as events arrive.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines output.")
@click.option("--events", "events_file", help="Event log file (default: the daemon's).")
@click.pass_context
def mcp_events(
    ctx: click.Context,
    severity: str | None,
    types: tuple[str, ...],
    since: str | None,
    session: str | None,
    server: str | None,
    follow: bool,
    as_json: bool,
    events_file: str | None,
) -> None:
    """MCP events from the log (tool definitions, detections, changes, calls)."""
    _check_types(types)
    wanted = set(types) or ({"mcp_detection"} if severity else set(MCP_EVENT_TYPES))
    floor = SEVERITY_RANK[severity] if severity else None

    def keep(ev: dict[str, Any]) -> bool:
        if session and ev.get("session_id") != session:
            return False
        if server and ev.get("server_id") != server:
            return False
        if floor is not None:
            sev = _severity(ev)
            return sev is not None and SEVERITY_RANK.get(sev, -1) >= floor
        return True

    detections_only = wanted == {"mcp_detection"}
    headers = (["TIMESTAMP", "SERVER", "TOOL", "PATTERN", "SEVERITY"] if detections_only
               else ["TIMESTAMP", "TYPE", "SERVER", "TOOL", "SEVERITY", "DETAIL"])

    def row(ev: dict[str, Any]) -> list[str]:
        if detections_only:
            d = ev.get("detection") or {}
            return [_ts(ev), str(ev.get("server_id", "")), str(ev.get("tool_name", "")),
                    str(d.get("pattern", "")), str(d.get("severity", ""))]
        return [_ts(ev), str(ev.get("type", "")).removeprefix("mcp_"),
                str(ev.get("server_id", "") or ev.get("remote_addr", "")),
                str(ev.get("tool_name", "-")), _severity(ev) or "-", _detail(ev)]

    _emit_rows(read_events(ctx, events_file, wanted, since, follow), keep, row, headers, follow,
               as_json)


@mcp.command()
@click.option("--server", help="Only calls to this server.")
@click.option("--tool", help="Only calls of this tool (name as seen by the layer).")
@click.option("--action", type=click.Choice(["allow", "block"]), help="Only this decision.")
@click.option("--since", help="Only calls since: 10m, 2h, 1d or an RFC 3339 time.")
@click.option("--session", help="Only this session id.")
@click.option("-f", "--follow", is_flag=True, help="Keep reading as calls arrive.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines output.")
@click.option("--events", "events_file", help="Event log file (default: the daemon's).")
@click.pass_context
def calls(
    ctx: click.Context,
    server: str | None,
    tool: str | None,
    action: str | None,
    since: str | None,
    session: str | None,
    follow: bool,
    as_json: bool,
    events_file: str | None,
) -> None:
    """MCP tool calls with their decisions (proxy, shim and network layers)."""

    def keep(ev: dict[str, Any]) -> bool:
        return not (
            (server and ev.get("server_id") != server)
            or (tool and ev.get("tool_name") != tool)
            or (action and ev.get("action") != action)
            or (session and ev.get("session_id") != session)
        )

    def row(ev: dict[str, Any]) -> list[str]:
        layer = {"mcp_tool_call_intercepted": "proxy", "mcp_tool_called": "shim",
                 "mcp_network_connection": "network"}.get(ev.get("type", ""), "?")
        return [_ts(ev), layer, str(ev.get("server_id", "")),
                str(ev.get("tool_name") or ev.get("remote_addr") or "-"),
                str(ev.get("action", "")), str(ev.get("reason") or "")]

    _emit_rows(read_events(ctx, events_file, CALL_EVENT_TYPES, since, follow), keep, row,
               ["TIMESTAMP", "LAYER", "SERVER", "TOOL", "ACTION", "REASON"], follow, as_json)


def _emit_rows(
    it: Iterator[dict[str, Any]],
    keep: Any,
    row: Any,
    headers: list[str],
    follow: bool,
    as_json: bool,
) -> None:
    """Print matching events: JSON lines, or a table (streamed rows when following)."""
    try:
        if as_json:
            for ev in it:
                if keep(ev):
                    click.echo(orjson.dumps(ev).decode())
            return
        if follow:
            click.echo("  ".join(headers))
            for ev in it:
                if keep(ev):
                    click.echo("  ".join(row(ev)))
            return
        rows = [row(ev) for ev in it if keep(ev)]
        if not rows:
            click.echo("no matching events")
            return
        click.echo(table(rows, headers))
    except KeyboardInterrupt:
        pass
