"""agentshctl events tail|schema|reopen."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from agentsh.agent.core.client_sync import DaemonUnavailable, call
from agentsh.agent.core.events import reader
from agentsh.agent.ctl.common import api, die, print_json, socket_of

# agentsh.agent.core.events.models (pydantic) is imported only where it is used:
# `agentshctl events tail` without --type must start fast (docs/operations.md "CLI start-up").

DEFAULT_EVENTS = "/var/log/agentsh/events.jsonl"


def events_path(ctx: click.Context, explicit: str | None) -> Path:
    """The log file: --events, else what the running daemon writes, else the default."""
    if explicit:
        return Path(explicit)
    try:
        st = call(socket_of(ctx), "GET", "/v1/status")
        return Path(st["events"]["path"])
    except DaemonUnavailable:
        return Path(DEFAULT_EVENTS)


def read_events(
    ctx: click.Context,
    events_file: str | None,
    types: Iterable[str],
    since: str | None,
    follow: bool,
    *,
    session_id: str | None = None,
    min_risk: str | None = None,
    flow_type: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Events from the log (--events, else the daemon's): exits with a message
    when there is no log or --since does not parse. ``session_id``,
    ``min_risk``, ``flow_type``: the flow filters (agent/core/events/reader.py)."""
    path = events_path(ctx, events_file)
    if not path.exists() and not follow:
        die(f"no event log at {path}")
    try:
        since_dt = reader.parse_since(since) if since else None
    except ValueError as e:
        die(str(e))
    return reader.iter_events(
        str(path), types=set(types) or None, since=since_dt, follow=follow,
        session_id=session_id, min_risk=min_risk, flow_type=flow_type,
    )


@click.group()
def events() -> None:
    """Read the event log."""


@events.command()
@click.option("-f", "--follow", is_flag=True, help="Keep reading as events arrive (survives rotation).")
@click.option("--type", "types", multiple=True, help="Only this event type or glob, e.g. mcp_* (repeatable).")
@click.option("--since", help="Only events since: 10m, 2h, 1d or an RFC 3339 time.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON lines as written.")
@click.option("--events", "events_file", help="Event log file (default: the daemon's).")
@click.option("-n", "--lines", type=int, default=None, help="Only the last N matching events (without -f).")
@click.option("--session-id", help="Only events of this agent session (hook evaluations, decisions, flow summaries).")
@click.option("--risk-level", type=click.Choice(reader.RISK_LEVELS),
              help="Only events whose data-flow risk is at least this (high: high and critical).")
@click.option("--flow-type", help="Only events with this data flow, e.g. internal->external.")
@click.pass_context
def tail(
    ctx: click.Context,
    follow: bool,
    types: tuple[str, ...],
    since: str | None,
    as_json: bool,
    events_file: str | None,
    lines: int | None,
    session_id: str | None,
    risk_level: str | None,
    flow_type: str | None,
) -> None:
    """Print events from the log, optionally following it."""
    if types:
        from agentsh.agent.core.events.models import TYPE_NAMES

        unknown = [t for t in types if t not in TYPE_NAMES and not any(c in t for c in "*?[")]
    else:
        unknown = []
    if unknown:
        die(f"unknown event type(s): {', '.join(unknown)} (see `agentshctl events schema`)")
    it = read_events(ctx, events_file, types, since, follow,
                     session_id=session_id, min_risk=risk_level, flow_type=flow_type)
    if lines is not None and not follow:
        it = iter(deque(it, maxlen=lines))
    try:
        for ev in it:
            if as_json:
                click.echo(orjson.dumps(ev).decode())
            else:
                click.echo(reader.format_event_line(ev))
    except KeyboardInterrupt:
        pass


@events.command()
@click.option(
    "--format", "fmt", type=click.Choice(["native", "ocsf"]), default="native", show_default=True,
    help="native: agentsh's event schema; ocsf: the OCSF classes written with events.format: ocsf.",
)
def schema(fmt: str) -> None:
    """Print the JSON Schema of the event log's lines (every event type)."""
    if fmt == "ocsf":
        from agentsh.agent.core.events.ocsf import SCHEMA_FILE

        click.echo(SCHEMA_FILE.read_text(), nl=False)
        return
    from agentsh.agent.core.events.contract import published_schema

    print_json(published_schema())


@events.command()
@click.pass_context
def reopen(ctx: click.Context) -> None:
    """Reopen the event log (after an external logrotate moved it)."""
    api(ctx, "POST", "/v1/events/reopen", admin=True)
    click.echo("event log reopened")
