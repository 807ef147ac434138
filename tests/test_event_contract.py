"""The event log's contract with consumers (docs/events.md): a versioned, open,
described JSON Schema that every written line satisfies, an envelope
``severity`` decided by one rule per type, strict intake, and one time format
(RFC 3339 UTC) in the log and in ``agentshctl status --json``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import time
import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
from jsonschema import Draft202012Validator, FormatChecker
from pydantic import BaseModel, ValidationError

from agentsh.agent.core.client_async import ControlClient
from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.contract import (
    ENVELOPE_REQUIRED,
    SCHEMA_ID,
    SCHEMA_VERSION,
    properties_without_description,
    published_schema,
    required_fields,
)
from agentsh.agent.core.events.severity import LEVELS, RULES, severity_of
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.policy.schema import EventsConfig
from tests.conftest import DaemonProc, wait_for

RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


# ------------------------------------------------------------------ samples of every type


def sample_value(ann: Any, variant: int = 0) -> Any:
    """A valid value for a field of type ``ann`` (``variant`` picks another Literal value)."""
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann is Any:
        return {"k": [1, None, "x"]}
    if origin is typing.Literal:
        return args[variant % len(args)]
    if origin in (typing.Union, types.UnionType):
        return sample_value(next(a for a in args if a is not type(None)), variant)
    if origin is list:
        return [sample_value(args[0], variant)]
    if origin is dict:
        return {"k": sample_value(args[1], variant)}
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann(**{k: sample_value(f.annotation, variant) for k, f in ann.model_fields.items()})
    return {str: "v", int: 3, float: 1.5, bool: True}.get(ann, "v")


ENVELOPE = set(m.Event.model_fields)


def full(cls: type[m.Event], variant: int = 0) -> m.Event:
    """``cls`` with every field set (a process, a session, a sender's time)."""
    data = {k: sample_value(f.annotation, variant) for k, f in cls.model_fields.items() if k not in ENVELOPE}
    return cls(
        **data, source="shim", session_id="s-1", pid=4242, ppid=1, uid=1000, username="dev",
        comm="node", exe="/usr/bin/node", cmdline=["node", "server.js"],
        sender_timestamp="2026-11-22T10:00:00.5+02:00",
    )


def minimal(cls: type[m.Event]) -> m.Event:
    """``cls`` with only what it requires (every nullable field left null)."""
    return cls(**{k: sample_value(f.annotation) for k, f in cls.model_fields.items() if f.is_required()})


def write(events: list[m.Event], path: Path, fmt: str = "native") -> list[dict[str, Any]]:
    """Write ``events`` with the real writer; the parsed lines."""
    w = EventWriter(EventsConfig(path=str(path), format=fmt))  # type: ignore[arg-type]
    for ev in events:
        assert w.emit(ev), ev
    w.start_thread()
    assert w.stop_sync()
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def validator() -> Draft202012Validator:
    schema = published_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FormatChecker())


# ------------------------------------------------------------------ severity


def test_every_event_type_has_a_severity_rule_and_the_writer_stamps_it(tmp_path: Path) -> None:
    assert set(RULES) == m.TYPE_NAMES, "every event type needs a rule in agent/core/events/severity.py"
    events = [full(cls, v) for cls in m.EVENT_TYPES for v in range(3)]
    for ev in events:
        ev.severity = "critical"  # what a producer or sender says is replaced
    lines = write(events, tmp_path / "e.jsonl")
    assert len(lines) == len(events)
    for ev, line in zip(events, lines, strict=True):
        assert line["severity"] in LEVELS
        assert line["severity"] == severity_of(ev)
        assert list(line)[:6] == ["id", "timestamp", "type", "source", "host", "severity"]
    assert {d["severity"] for d in lines} >= {"info", "medium", "high"}


def _det(sev: str) -> m.DetectionResult:
    return m.DetectionResult(pattern="p", category="tool_poisoning", severity=sev, matches=[], field="description")  # type: ignore[arg-type]


def test_severity_follows_the_documented_rule_of_each_type() -> None:
    call = dict(server_id="fs", tool_name="write_file")
    assert severity_of(m.MCPToolCalled(**call)) == "info"
    assert severity_of(m.MCPToolCalled(**call, action="block", reason="tool denied")) == "medium"
    assert severity_of(m.MCPToolCalled(**call, action="block", reason="hash mismatch (pinned sha256:1)")) == "high"
    assert severity_of(m.MCPDetection(**call, detection=_det("critical"), action="alert")) == "critical"
    assert severity_of(m.MCPDetection(**call, detection=_det("low"), action="alert")) == "low"
    seen = dict(server_id="fs", tool_name="t", tool_hash="h")
    assert severity_of(m.MCPToolSeen(**seen, status="unchanged")) == "info"
    assert severity_of(m.MCPToolSeen(**seen, status="new", blocked=True)) == "medium"
    assert severity_of(m.MCPToolSeen(**seen, status="new", detections=[_det("high")], max_severity="high")) == "high"
    changed = dict(server_id="fs", tool_name="t", previous_hash="a", new_hash="b", changes=[])
    assert severity_of(m.MCPToolChanged(**changed, action="block")) == "high"
    assert severity_of(m.MCPToolChanged(**changed, action="alert")) == "medium"
    assert severity_of(m.AdminAction(action="bpf_detach")) == "high"
    assert severity_of(m.AdminAction(action="mcp_approve", outcome="rejected")) == "high"
    assert severity_of(m.AdminAction(action="events_reopen")) == "info"
    assert severity_of(m.DaemonStarted(version="1", config_dir="/etc", socket="s", events_path="e")) == "info"
    assert severity_of(m.PolicyLoaded(hash="h", files=[])) == "info"
    assert severity_of(m.PolicyLoaded(hash="h", files=[], trigger="watch")) == "low"
    assert severity_of(m.EventsDropped(dropped_total=5, dropped_since_last=5)) == "high"
    assert severity_of(m.ComponentExited(component="llm-proxy", signal="SIGKILL", will_restart=True)) == "low"
    assert severity_of(m.ComponentExited(component="llm-proxy", signal="SIGTERM")) == "info"
    assert severity_of(m.ComponentExited(component="llm-proxy", exit_code=1)) == "high"
    hook = dict(hook_event="PreToolUse", tool_name="WebFetch")
    assert severity_of(m.HookEvaluation(**hook, decision="allow")) == "info"
    assert severity_of(m.HookEvaluation(**hook, decision="deny")) == "medium"
    assert severity_of(m.HookEvaluation(**hook, decision="warn", risk_level="critical")) == "critical"
    net = dict(remote_addr="10.0.0.1:443", server_id="s", server_type="http")
    assert severity_of(m.MCPNetworkConnection(**net, action="block")) == "medium"
    assert severity_of(m.MCPServerDiscovered(server_id="s", server_type="http", server_addr="a", tools=1,
                                             tls_fingerprint_ok=False)) == "high"


# ------------------------------------------------------------------ the published schema


def test_published_schema_has_a_versioned_id_required_envelope_times_and_descriptions() -> None:
    s = published_schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    mo = re.fullmatch(r"https://agentsh\.dev/schemas/events/v(\d+)\.json", s["$id"])
    assert mo and int(mo.group(1)) == SCHEMA_VERSION and s["$id"] == SCHEMA_ID
    assert properties_without_description(s) == [], "give every model and field a docstring"
    for cls in m.EVENT_TYPES:
        d = s["$defs"][cls.__name__]
        assert d["additionalProperties"] is True
        assert set(ENVELOPE_REQUIRED) <= set(d["required"]), cls.__name__
        assert d["properties"]["timestamp"]["format"] == "date-time"
        assert d["properties"]["sender_timestamp"]["format"] == "date-time"
        assert d["properties"]["type"]["const"] == cls.model_fields["type"].default
    for name in ("DetectionResult", "DetectionMatch", "FieldChange", "Envelope"):
        assert s["$defs"][name]["additionalProperties"] is True


def test_every_line_the_writer_writes_validates_against_the_published_schema(tmp_path: Path) -> None:
    v = validator()
    events = [*(full(cls, var) for cls in m.EVENT_TYPES for var in range(2)), *(minimal(c) for c in m.EVENT_TYPES)]
    lines = write(events, tmp_path / "e.jsonl")
    for line in lines:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in v.iter_errors(line)]
        assert not errors, (line["type"], errors)
    # the check bites: a bad time, a missing envelope field, a wrong type of a field
    bad_time = {**lines[0], "timestamp": "2026-13-01T00:00:00Z"}
    no_severity = {k: x for k, x in lines[0].items() if k != "severity"}
    seen = next(x for x in lines if x["type"] == "mcp_tool_seen")
    wrong_type = {**seen, "blocked": "yes"}
    for bad in (bad_time, no_severity, wrong_type):
        assert not v.is_valid(bad), bad


def test_required_lists_exactly_the_fields_every_line_of_a_type_carries(tmp_path: Path) -> None:
    lines = write([minimal(cls) for cls in m.EVENT_TYPES], tmp_path / "e.jsonl")
    for cls, line in zip(m.EVENT_TYPES, lines, strict=True):
        assert set(line) == set(required_fields(cls)), cls.__name__


def test_consumers_may_see_new_fields_and_types_but_intake_refuses_them() -> None:
    v = validator()
    line = {"id": "x", "timestamp": "2026-11-22T10:00:00.123456Z", "type": "mcp_tool_called", "source": "shim",
            "host": "h", "severity": "info", "server_id": "fs", "tool_name": "t", "action": "allow",
            "server_type": "stdio"}
    assert v.is_valid(line)
    assert v.is_valid({**line, "added_in_a_later_version": {"x": 1}})
    future = {**line, "type": "mcp_sampling_request", "prompt": "..."}
    assert v.is_valid(future)  # an unknown type with the envelope
    assert not v.is_valid({k: x for k, x in future.items() if k != "host"})
    assert not v.is_valid({**line, "action": 3})  # a known type is still checked
    with pytest.raises(ValidationError, match="added_in_a_later_version"):
        m.parse_event({**line, "added_in_a_later_version": 1})  # intake is strict


def test_intake_takes_only_rfc3339_times_and_keeps_them_in_utc() -> None:
    base = {"type": "protocol_error", "source": "shim", "layer": "shim", "detail": "d"}
    for bad in ("yesterday", "2026-11-22T10:00:00", "2026-11-22 10:00:00Z", "2026-02-30T00:00:00Z", "1763805600"):
        with pytest.raises(ValidationError, match="RFC 3339"):
            m.parse_event({**base, "timestamp": bad})
    assert m.parse_event({**base, "timestamp": "2026-11-22T10:00:00.5+02:00"}).timestamp == "2026-11-22T08:00:00.5Z"
    ev = m.parse_event({**base, "timestamp": "1999-01-01T00:00:00Z"})
    assert m.vouch(ev, 1000) and ev.sender_timestamp == "1999-01-01T00:00:00Z" and ev.timestamp == ""


# ------------------------------------------------------------------ one time format in status


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _walk(obj: Any, path: str = "") -> typing.Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, x in obj.items():
            yield from _walk(x, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, x in enumerate(obj):
            yield from _walk(x, f"{path}[{i}]")
    else:
        yield path, obj


def _recent(ts: str) -> bool:
    t = datetime.fromisoformat(ts).astimezone(UTC)
    return abs((datetime.now(UTC) - t).total_seconds()) < 600


def test_status_json_gives_every_time_in_rfc3339_utc_like_the_event_log(daemon_factory) -> None:
    port = _free_port()
    d: DaemonProc = daemon_factory(
        f"network: {{enabled: false}}\nproxy: {{mode: embedded, listen: 127.0.0.1:{port}}}\n"
        "daemon: {user: nobody, watch_interval_seconds: 0.2}\nevents: {fsync_interval_seconds: 0.2}\n"
    )

    def proxy() -> dict[str, Any] | None:
        st = json.loads(d.ctl("status", "--json").stdout)
        return next((c for c in st["components"] if c["name"] == "llm-proxy" and c["state"] == "running" and c["pid"]), None)

    first = wait_for(proxy, 30, what="proxy running")
    wait_for(lambda: 0 not in psutil.Process(first["pid"]).uids(), 30, what="proxy dropped root")
    os.kill(first["pid"], signal.SIGKILL)
    wait_for(lambda: (p := proxy()) and p["pid"] != first["pid"], 30, what="proxy restarted")

    async def shim() -> tuple[dict, dict]:
        async with ControlClient(str(d.socket)) as c:
            reg = await c.post("/v1/shims/register", {"server_id": "fs", "pid": os.getpid(), "command": ["x"]})
            # a shim reports its own clock as epoch seconds on the wire; status shows RFC 3339
            await c.post(f"/v1/shims/{reg['shim_id']}/heartbeat", {"calls": 1, "last_offline_at": time.time() - 5})
            return await c.get("/v1/shims"), await c.get("/v1/components")

    shims, comps = asyncio.run(shim())
    st = json.loads(d.ctl("status", "--json").stdout)
    times = {
        "started_at": st["started_at"],
        "policy.loaded_at": st["policy"]["loaded_at"],
        "shim registered_at": st["shims"][0]["registered_at"],
        "shim last_offline_at": st["shims"][0]["last_offline_at"],
        "proxy last_exit.at": next(c for c in st["components"] if c["name"] == "llm-proxy")["last_exit"]["at"],
        "/v1/shims registered_at": shims["shims"][0]["registered_at"],
        "/v1/components last_exit.at": comps["components"][0]["last_exit"]["at"],
    }
    for what, ts in times.items():
        assert isinstance(ts, str) and RFC3339_UTC.match(ts) and _recent(ts), (what, ts)
    for path, x in _walk(st):
        if path.endswith("_at") or path.endswith(".at"):
            assert x is None or (isinstance(x, str) and RFC3339_UTC.match(x)), (path, x)
        elif isinstance(x, int | float) and not isinstance(x, bool):
            assert not 1e9 < x < 1e11, f"{path} = {x} looks like an epoch time"
    text = d.ctl("status").stdout
    assert re.search(r"loaded \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", text), text
    assert re.search(r"SIGKILL \d+s ago", text), text


def test_a_blocked_call_takes_the_severity_of_its_flow_risk_and_a_changed_pin_is_high() -> None:
    from agentsh.agent.core.events.models import MCPToolCalled, MCPToolCallIntercepted
    from agentsh.agent.core.events.severity import severity_of

    common = {"request_id": "r", "dialect": "anthropic", "tool_name": "WebFetch", "tool_call_id": "t",
              "server_id": "", "server_type": "", "tool_hash": ""}
    flow = MCPToolCallIntercepted(**common, action="block", reason="agentsh data-flow policy: …",
                                  flow_type="internal→external", risk_level="critical")
    assert severity_of(flow) == "critical"
    warned = MCPToolCallIntercepted(**common, action="allow", flow_type="internal→external", risk_level="medium")
    assert severity_of(warned) == "medium"
    pin = MCPToolCalled(server_id="s", tool_name="t", action="block",
                        reason='tool "t" hash changed (pinned: sha256:a, current: sha256:b)')
    assert severity_of(pin) == "high"
    assert severity_of(MCPToolCalled(server_id="s", tool_name="t", action="block", reason="tool denied")) == "medium"
