"""The OCSF form of each event (``events.format: ocsf``; docs/events.md, "OCSF").

A SIEM that speaks OCSF (Splunk, Sentinel, Security Lake, Elastic, ...) takes
these lines without a custom parser: every event type maps to one OCSF
1.5.0 class (:data:`MAPPINGS`, one entry per type, documented from the same
entries), with ``category_uid``/``class_uid``/``activity_id``/``type_uid``,
``severity_id`` from the envelope ``severity``, ``status_id``, the
``security_control`` profile's ``action_id``/``disposition_id`` where agentsh
decided something, ``time`` in epoch milliseconds, ``metadata.product``, the
host as ``device`` and the process as ``actor`` (``host`` profile). The whole
native event is kept under ``unmapped`` (field for field, as in the native
line), so nothing is lost and ``agentshctl events tail`` reads both forms
(``reader.native_of``).

The classes are checked against the OCSF definitions vendored in
``ocsf_schema/`` (tests/test_ocsf.py validates every type's form).
"""

from __future__ import annotations

import calendar
import errno
import ipaddress
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentsh.agent.core.version import __version__
from agentsh.agent.core.vocab import EVENT_SEVERITIES

OCSF_VERSION = "1.5.0"
PROFILES: tuple[str, ...] = ("host", "security_control")
SCHEMA_DIR = Path(__file__).with_name("ocsf_schema")
SCHEMA_FILE = SCHEMA_DIR / f"ocsf-{OCSF_VERSION}.schema.json"

SEVERITY_ID = {s: i + 1 for i, s in enumerate(EVENT_SEVERITIES)}  # info 1 .. critical 5
SEVERITY_CAPTION = {1: "Informational", 2: "Low", 3: "Medium", 4: "High", 5: "Critical"}
STATUS = {0: "Unknown", 1: "Success", 2: "Failure", 99: "Other"}
FINDING_STATUS = {0: "Unknown", 1: "New", 2: "In Progress", 3: "Suppressed", 4: "Resolved", 5: "Archived", 99: "Other"}
ACTION = {0: "Unknown", 1: "Allowed", 2: "Denied", 3: "Observed", 4: "Modified"}
DISPOSITION = {1: "Allowed", 2: "Blocked", 11: "Corrected", 14: "Delayed", 15: "Detected", 19: "Alert"}


@dataclass(frozen=True, slots=True)
class OcsfClass:
    uid: int
    key: str
    """The class's name in the OCSF schema (as in its URL)."""
    name: str
    category_uid: int
    category_name: str
    activities: dict[int, str]
    statuses: dict[int, str] = field(default_factory=lambda: STATUS)
    default_status: int = 1


API_ACTIVITY = OcsfClass(
    6003, "api_activity", "API Activity", 6, "Application Activity",
    {0: "Unknown", 1: "Create", 2: "Read", 3: "Update", 4: "Delete", 99: "Other"},
)
APPLICATION_LIFECYCLE = OcsfClass(
    6002, "application_lifecycle", "Application Lifecycle", 6, "Application Activity",
    {0: "Unknown", 1: "Install", 2: "Remove", 3: "Start", 4: "Stop", 5: "Restart", 6: "Enable",
     7: "Disable", 8: "Update", 99: "Other"},
)
APPLICATION_ERROR = OcsfClass(
    6008, "application_error", "Application Error", 6, "Application Activity",
    {0: "Unknown", 1: "General Error", 2: "Translation Error", 99: "Other"},
    default_status=2,
)
DETECTION_FINDING = OcsfClass(
    2004, "detection_finding", "Detection Finding", 2, "Findings",
    {0: "Unknown", 1: "Create", 2: "Update", 3: "Close", 99: "Other"},
    statuses=FINDING_STATUS,
)
NETWORK_ACTIVITY = OcsfClass(
    4001, "network_activity", "Network Activity", 4, "Network Activity",
    {0: "Unknown", 1: "Open", 2: "Close", 3: "Reset", 4: "Fail", 5: "Refuse", 6: "Traffic",
     7: "Listen", 99: "Other"},
)
ENTITY_MANAGEMENT = OcsfClass(
    3004, "entity_management", "Entity Management", 3, "Identity & Access Management",
    {0: "Unknown", 1: "Create", 2: "Read", 3: "Update", 4: "Delete", 5: "Move", 6: "Enroll",
     7: "Unenroll", 8: "Enable", 9: "Disable", 10: "Activate", 11: "Deactivate", 12: "Suspend",
     13: "Resume", 99: "Other"},
)
EVENT_LOG_ACTIVITY = OcsfClass(
    1008, "event_log_actvity", "Event Log Activity", 1, "System Activity",  # sic: OCSF's name
    {0: "Unknown", 1: "Clear", 2: "Delete", 3: "Export", 4: "Archive", 5: "Rotate", 6: "Start",
     7: "Stop", 8: "Restart", 9: "Enable", 10: "Disable", 99: "Other"},
)
BASE_EVENT = OcsfClass(0, "base_event", "Base Event", 0, "Uncategorized", {0: "Unknown", 99: "Other"})

CLASSES: dict[str, OcsfClass] = {
    c.key: c
    for c in (API_ACTIVITY, APPLICATION_LIFECYCLE, APPLICATION_ERROR, DETECTION_FINDING,
              NETWORK_ACTIVITY, ENTITY_MANAGEMENT, EVENT_LOG_ACTIVITY, BASE_EVENT)
}
"""Every OCSF class agentsh writes (the vendored schema holds exactly these)."""


# ------------------------------------------------------------------ building blocks


def epoch_ms(ts: str) -> int:
    """RFC 3339 UTC (as the writer formats it) → epoch milliseconds."""
    dt = datetime.fromisoformat(ts)
    return calendar.timegm(dt.utctimetuple()) * 1000 + dt.microsecond // 1000


def _endpoint(addr: str, **extra: Any) -> dict[str, Any]:
    """A network_endpoint from ``host:port``, ``[v6]:port``, a bare host or a URL."""
    host, port = addr, ""
    if "://" in addr:
        try:
            u = urlsplit(addr)
            host = u.hostname or ""
            port = str(u.port or "")
        except ValueError:  # not a URL after all ("http://[::1", a port out of range)
            host, port = "", ""
    elif addr.startswith("["):
        host, _, rest = addr[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif addr.count(":") == 1:
        host, port = addr.split(":")
    out: dict[str, Any] = {}
    try:
        ipaddress.ip_address(host)
        if len(host) > 40:  # OCSF ip_t: at most 40 characters (a long IPv6 scope)
            raise ValueError(host)
        out["ip"] = host
    except ValueError:
        if host:
            out["hostname"] = host
    if port.isdigit() and int(port) <= 65535:
        out["port"] = int(port)
    if not out.get("ip") and not out.get("hostname"):
        out["name"] = addr or "unknown"
    out.update(extra)
    return out


def _file(path: str) -> dict[str, Any]:
    return {"name": os.path.basename(path) or path, "path": path, "type_id": 1, "type": "Regular File"}


def _user(ev: Any) -> dict[str, Any] | None:
    if ev.uid is None and not ev.username:
        return None
    u: dict[str, Any] = {}
    if ev.uid is not None:
        u["uid"] = str(ev.uid)
    if ev.username:
        u["name"] = ev.username
    return u


def _actor(ev: Any) -> dict[str, Any]:
    """The process concerned (``host`` profile), or the agentsh component that saw it."""
    actor: dict[str, Any] = {}
    user = _user(ev)
    if ev.pid is not None:
        p: dict[str, Any] = {"pid": ev.pid}
        if ev.comm:
            p["name"] = ev.comm
        if ev.cmdline:
            p["cmd_line"] = shlex.join(ev.cmdline)
        if ev.exe:
            p["file"] = _file(ev.exe)
        if ev.ppid is not None:
            p["parent_process"] = {"pid": ev.ppid}
        if user:
            p["user"] = user
        actor["process"] = p
    if user:
        actor["user"] = user
    if ev.session_id:
        actor["session"] = {"uid": ev.session_id}
    if not actor:
        actor["app_name"] = f"agentsh {ev.source}"
    return actor


def _tool(name: str, server_id: str | None, uid: str | None = None, kind: str = "MCP tool") -> dict[str, Any]:
    r: dict[str, Any] = {"name": name, "type": kind}
    if uid:
        r["uid"] = uid
    if server_id:
        r["group"] = {"name": server_id}
    return r


def _decision(blocked: bool) -> dict[str, Any]:
    return {"action_id": 2, "disposition_id": 2} if blocked else {"action_id": 1, "disposition_id": 1}


def _app(name: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "vendor_name": "agentsh", **kw}


def _here(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"hostname": d["host"]}


_POLICY = {"name": "agentsh policy", "type": "Policy", "type_id": 5}


# ------------------------------------------------------------------ per type

Mapper = Callable[[Any, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Mapping:
    """How one event type becomes OCSF: ``fn(event, native line)`` gives the class's
    parts; ``activity``, ``outcome`` and ``fields`` say it for docs/events.md."""

    cls: OcsfClass
    activity: str
    outcome: str
    fields: str
    fn: Mapper


def _daemon_started(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 3, "app": _app("agentshd", version=ev.version),
            "message": f"agentshd {ev.version} started (events: {ev.events_path})"}


def _daemon_stopping(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 4, "app": _app("agentshd"),
            "message": f"agentshd stopping ({ev.reason}) after {ev.uptime_seconds:.0f}s"}


def _component_exited(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    clean = (ev.exit_code == 0 and not ev.signal) or ev.signal == "SIGTERM"
    how = ev.signal or f"exit code {ev.exit_code}"
    then = f"restarting in {ev.next_restart_in_seconds}s" if ev.will_restart else "not restarted"
    return {"activity_id": 4, "app": _app(ev.component), "status_id": 1 if clean else 2,
            "status_code": ev.signal or str(ev.exit_code), "status_detail": then,
            "message": f"{ev.component} exited ({how}); {then}"}


def _shim_registered(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 3, "app": _app("agentsh-shim", feature={"name": ev.server_id}),
            "message": f"shim for {ev.server_id} started: {shlex.join(ev.command)}"}


def _shim_exited(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    out = {"activity_id": 4, "app": _app("agentsh-shim", feature={"name": ev.server_id}),
           "status_id": 1 if ev.exit_code in (0, None) else 2,
           "message": f"shim for {ev.server_id} exited: {ev.calls} calls, {ev.blocks} blocked"}
    if ev.exit_code is not None:
        out["status_code"] = str(ev.exit_code)
    return out


def _policy_loaded(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 10,
            "entity": {**_POLICY, "uid": ev.hash, "data": {"files": ev.files, "trigger": ev.trigger}},
            "message": f"policy {ev.hash} active ({ev.trigger})"}


def _policy_rejected(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    out = {"activity_id": 3, "status_id": 2,
           "entity": {**_POLICY, "data": {"files": ev.files, "trigger": ev.trigger, "errors": ev.errors}},
           "message": f"policy rejected ({len(ev.errors)} errors); {ev.kept_hash or 'the previous policy'} stays in force"}
    if ev.errors:
        out["status_detail"] = ev.errors[0]
    return out


_ADMIN: dict[str, tuple[int, str, int, str, str]] = {
    # action: (activity_id, label for Other, entity type_id, entity type, entity name)
    "policy_reload": (3, "", 5, "Policy", "agentsh policy"),
    "mcp_approve": (8, "", 99, "MCP tool approval", "agentsh MCP tool pins"),
    "bpf_detach": (9, "", 99, "BPF programs", "agentsh BPF layer"),
    "events_reopen": (99, "Reopen", 99, "Event log", "agentsh event log"),
    "selftest": (99, "Selftest", 99, "Selftest canary", "agentsh selftest"),
}


def _admin_action(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    act, label, tid, typ, name = _ADMIN.get(ev.action, (99, ev.action, 99, "agentsh", ev.action))
    who = f"uid {ev.uid}" if ev.uid is not None else "unknown caller"
    out = {"activity_id": act, "status_id": 1 if ev.outcome == "ok" else 2,
           "entity": {"name": name, "type": typ, "type_id": tid, "data": ev.detail},
           "message": f"admin {ev.action} by {who}{f' ({ev.exe})' if ev.exe else ''}: {ev.outcome}"}
    if label:
        out["activity_label"] = label
    if ev.outcome != "ok":
        out["status_detail"] = ev.outcome
    return out


_EVENTS_LOG = {"log_name": "agentsh events", "log_provider": "agentshd", "log_type_id": 2, "log_type": "Application"}


def _events_dropped(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 99, "activity_label": "Drop", "status_id": 2, **_EVENTS_LOG,
            "count": ev.dropped_since_last, "status_detail": "event queue full",
            "message": f"{ev.dropped_since_last} events dropped ({ev.dropped_total} since start)"}


def _events_rotated(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 5, **_EVENTS_LOG, "file": _file(ev.path), "status_detail": ev.reason,
            "message": f"event log {ev.path} rotated ({ev.reason})"}


def _events_torn_tail(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 99, "activity_label": "Repair", **_EVENTS_LOG, "file": _file(ev.path),
            "status_detail": f"{ev.bytes_removed} bytes of a partial last line removed",
            "message": f"event log {ev.path}: partial last line ({ev.bytes_removed} bytes) removed"}


def _bpf_lost(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 99, "activity_label": "Drop", "status_id": 2, "log_name": "agentsh BPF ring buffer",
            "log_provider": "agentshd", "log_type_id": 2, "log_type": "Application",
            "count": ev.lost_since_last, "status_detail": "BPF ring buffer overflow",
            "message": f"kernel dropped {ev.lost_since_last} BPF records ({ev.lost_total} since start)"}


def _finding(uid: str, title: str, desc: str, types: list[str], **kw: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"uid": uid, "title": title, "types": types}
    if desc:
        info["desc"] = desc
    return {"activity_id": 1, "status_id": 1, "finding_info": info, "is_alert": True, "message": title, **kw}


def _by_policy(action: str) -> dict[str, Any]:
    """alert/warn/block/allow of a detection → action and disposition."""
    if action == "block":
        return {"action_id": 2, "disposition_id": 2}
    if action == "allow":
        return {"action_id": 1, "disposition_id": 1, "is_alert": False}
    return {"action_id": 1, "disposition_id": 19}


def _tool_changed(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    fields = ", ".join(c.field for c in ev.changes) or "definition"
    out = _finding(
        f"mcp_tool_changed:{ev.server_id}:{ev.tool_name}:{ev.new_hash}",
        f"MCP tool definition changed after it was pinned: {ev.server_id}/{ev.tool_name}",
        f"changed: {fields}; pinned {ev.previous_hash}, now {ev.new_hash}",
        ["mcp_tool_changed", *sorted({x.category for x in ev.detections})],
        resources=[_tool(ev.tool_name, ev.server_id, ev.new_hash)],
    )
    out.update(_by_policy(ev.action))
    return out


def _detection(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    det = ev.detection
    out = _finding(
        f"mcp_detection:{ev.server_id}:{ev.tool_name}:{det.pattern}:{det.field}",
        f"{det.category} in MCP tool {ev.server_id}/{ev.tool_name}: {det.pattern}",
        det.why or (f"matched {det.matches[0].text!r} in {det.field}" if det.matches else det.field),
        [det.category],
        resources=[_tool(ev.tool_name, ev.server_id)],
    )
    out["finding_info"]["analytic"] = {"name": det.pattern, "type_id": 1, "type": "Rule", "category": det.category}
    out.update(_by_policy(ev.action))
    return out


def _shadowed(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    servers = sorted({ev.server_id, *ev.other_server_ids})
    return _finding(
        f"mcp_tool_shadowed:{ev.tool_name}:{','.join(servers)}",
        f"MCP tool name {ev.tool_name} offered by several servers: {', '.join(servers)}",
        "a server may be shadowing another server's tool",
        ["mcp_tool_shadowed"],
        resources=[_tool(ev.tool_name, s) for s in servers],
    )


def _result_injection(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    out = _finding(
        ev.id or f"mcp_result_injection:{ev.server_id}:{ev.tool_name}:{ev.call_id}",
        f"Instructions to the model in a result of {ev.server_id or '?'}/{ev.tool_name} (indirect prompt injection)",
        ev.excerpt,
        ["mcp_result_injection", *sorted({x.category for x in ev.detections})],
        resources=[_tool(ev.tool_name, ev.server_id)],
    )
    out.update(_by_policy(ev.action))
    return out


def _api(op: str, service: str | None, request_uid: Any = None) -> dict[str, Any]:
    api: dict[str, Any] = {"operation": op}
    if service:
        api["service"] = {"name": service}
    if request_uid is not None and request_uid != "":
        uid = request_uid if isinstance(request_uid, str) else json.dumps(request_uid, default=str)
        api["request"] = {"uid": uid}
    return api


def _tool_called(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    blocked = ev.action == "block"
    out = {"activity_id": 99, "activity_label": "Call", "status_id": 2 if blocked else 1,
           "api": _api("tools/call", ev.server_id, ev.jsonrpc_id), "src_endpoint": _here(ev, d),
           "resources": [_tool(ev.tool_name, ev.server_id, ev.tool_hash)], **_decision(blocked),
           "message": f"tools/call {ev.server_id}/{ev.tool_name}: {ev.action}"
           + (f" ({ev.reason})" if ev.reason else "")}
    if ev.reason:
        out["status_detail"] = ev.reason
    return out


def _intercepted(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    blocked = ev.action == "block"
    out = {"activity_id": 99, "activity_label": "Call", "status_id": 2 if blocked else 1,
           "api": _api("tool_call", ev.server_id, ev.tool_call_id),  # one name whatever the dialect (in `message`)
           "src_endpoint": _here(ev, d),
           "resources": [_tool(ev.tool_name, ev.server_id, ev.tool_hash)], **_decision(blocked),
           "message": f"model called {ev.server_id}/{ev.tool_name} ({ev.dialect}): {ev.action}"
           + (f" ({ev.reason})" if ev.reason else "")}
    if ev.server_addr:
        out["dst_endpoint"] = _endpoint(ev.server_addr, svc_name=ev.server_id)
    if ev.reason:
        out["status_detail"] = ev.reason
    return out


def _tool_seen(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    out = {"activity_id": 2, "api": _api("tools/list", ev.server_id), "src_endpoint": _here(ev, d),
           "resources": [_tool(ev.tool_name, ev.server_id, ev.tool_hash)], **_decision(ev.blocked),
           "status_detail": ev.status,
           "message": f"tool {ev.server_id}/{ev.tool_name} {ev.status}"
           + (f", {len(ev.detections)} detections (max {ev.max_severity})" if ev.detections else "")
           + (", hidden from the agent" if ev.blocked else "")}
    if ev.server_addr:
        out["dst_endpoint"] = _endpoint(ev.server_addr, svc_name=ev.server_id)
    return out


def _discovered(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    mismatch = ev.tls_fingerprint_ok is False
    out = {"activity_id": 2, "api": _api("tools/list", ev.server_id), "src_endpoint": _here(ev, d),
           "dst_endpoint": _endpoint(ev.server_addr, svc_name=ev.server_id),
           "status_id": 2 if (ev.error or mismatch) else 1,
           "message": f"discovered {ev.server_id} at {ev.server_addr}: {ev.tools} tools"
           + (f" (error: {ev.error})" if ev.error else "") + (" (TLS fingerprint mismatch)" if mismatch else "")}
    if mismatch:
        out.update(_decision(True))
        out["status_detail"] = "TLS fingerprint mismatch"
    elif ev.error:
        out["status_detail"] = ev.error
    return out


def _llm_request(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    ok = ev.status < 400 and not ev.error
    latency = round(ev.latency_ms)
    api = _api(ev.path, ev.provider, ev.request_id)
    api["response"] = {"code": ev.status, **({"error": ev.error} if ev.error else {})}
    out = {"activity_id": 1, "api": api, "src_endpoint": _here(ev, d),
           "http_request": {"url": {"path": ev.path}, "length": ev.request_bytes},
           "http_response": {"code": ev.status, "length": ev.response_bytes, "latency": latency},
           "duration": latency, "status_id": 1 if ok else 2, "status_code": str(ev.status),
           "message": f"{ev.provider} {ev.model or '?'} {ev.path} → {ev.status}: "
           f"{ev.tool_calls} tool calls, {ev.tool_calls_blocked} blocked"}
    if ev.tool_calls_blocked or (ev.redactions and any(ev.redactions.values())):
        out.update(action_id=4, disposition_id=11)  # Modified / Corrected
    else:
        out.update(action_id=1, disposition_id=1)
    if ev.error:
        out["status_detail"] = ev.error
    return out


_HOOK = {"allow": (1, 1), "warn": (1, 19), "ask": (1, 14), "deny": (2, 2)}


def _hook(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    action_id, disp = _HOOK[ev.decision]
    agent = getattr(ev, "agent", None) or "agent"
    out = {"activity_id": 99, "activity_label": "Evaluate",
           "api": _api(ev.hook_event, f"{agent} hooks", getattr(ev, "tool_use_id", None)),
           "src_endpoint": _here(ev, d), "status_id": 2 if ev.decision == "deny" else 1,
           "resources": [_tool(ev.tool_name, getattr(ev, "server_id", None), kind=ev.classification or "tool")],
           "action_id": action_id, "disposition_id": disp,
           "message": f"{ev.hook_event} {ev.tool_name}: {ev.decision}" + (f" ({ev.reason})" if ev.reason else "")}
    if ev.reason:
        out["status_detail"] = ev.reason
    return out


_PROTO_NUM = {"tcp": 6, "udp": 17}


def _conn(protocol: str | None, family: str) -> dict[str, Any]:
    c: dict[str, Any] = {"direction_id": 2, "direction": "Outbound"}
    if protocol:
        c["protocol_name"] = protocol
        c["protocol_num"] = _PROTO_NUM[protocol]
    if family in ("ipv4", "ipv6"):
        c["protocol_ver_id"] = 4 if family == "ipv4" else 6
    return c


def _mcp_connection(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    blocked = ev.action == "block"
    act = 6 if ev.phase == "sendmsg" else (5 if blocked else 1)
    out = {"activity_id": act, "status_id": 2 if blocked else 1,
           "src_endpoint": _here(ev, d), "dst_endpoint": _endpoint(ev.remote_addr, svc_name=ev.server_id),
           "connection_info": _conn(ev.protocol, ev.family), **_decision(blocked),
           "message": f"{ev.phase} to MCP server {ev.server_id} at {ev.remote_addr}: {ev.action}"}
    if blocked:
        out["status_detail"] = "refused by the agentsh BPF program (EPERM)"
    return out


def _network_connect(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    r = ev.result
    if r in (0, -errno.EINPROGRESS):
        act, status = 1, 1
    elif r in (-errno.EPERM, -errno.EACCES):
        act, status = 5, 2
    else:
        act, status = 4, 2
    out: dict[str, Any] = {"activity_id": act, "status_id": status, "status_code": str(r),
                           "src_endpoint": _here(ev, d), "connection_info": _conn(None, ev.family),
                           "message": f"connect({ev.remote_addr or ev.family}) = {r}"}
    if ev.remote_addr:
        out["dst_endpoint"] = _endpoint(ev.remote_addr)
    if r < 0:
        out["status_detail"] = errno.errorcode.get(-r, f"errno {-r}")
    return out


def _protocol_error(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 1, "count": ev.count, "status_detail": ev.detail,
            "message": f"malformed {'JSON-RPC' if ev.layer == 'shim' else 'traffic'} in the {ev.layer}"
            + (f" ({ev.server_id})" if ev.server_id else "") + f": {ev.detail}"}


def _flow_summary(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 99, "activity_label": "Flow session summary",
            "duration": round(ev.duration_seconds * 1000),
            "message": f"flow session ended after {ev.duration_seconds:.0f}s: {ev.total_origins} origins, "
            f"{ev.total_flow_edges} flows"}


def _other(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return {"activity_id": 99, "activity_label": ev.type, "message": ev.type}


_ALLOW_BLOCK = "`allow` → Success, Allowed/Allowed; `block` → Failure (`status_detail`: the reason), Denied/Blocked"
_BY_POLICY = "New; `block` → Denied/Blocked, `alert`/`warn` → Allowed/Alert, `allow` → Allowed/Allowed (`is_alert: false`)"

MAPPINGS: dict[str, Mapping] = {
    "daemon_started": Mapping(APPLICATION_LIFECYCLE, "Start (3)", "Success", "`app` agentshd + version", _daemon_started),
    "daemon_stopping": Mapping(APPLICATION_LIFECYCLE, "Stop (4)", "Success", "`app` agentshd", _daemon_stopping),
    "component_exited": Mapping(
        APPLICATION_LIFECYCLE, "Stop (4)", "Success for a clean exit (code 0, SIGTERM), else Failure; `status_code` the exit code or signal",
        "`app` the component", _component_exited),
    "policy_loaded": Mapping(ENTITY_MANAGEMENT, "Activate (10)", "Success", "`entity` Policy (`uid` the hash, `data` files, trigger)", _policy_loaded),
    "policy_rejected": Mapping(ENTITY_MANAGEMENT, "Update (3)", "Failure; `status_detail` the first error", "`entity` Policy (`data` files, errors)", _policy_rejected),
    "events_dropped": Mapping(EVENT_LOG_ACTIVITY, "Other (99) `Drop`", "Failure", "`count` dropped since the last, `log_name`", _events_dropped),
    "events_rotated": Mapping(EVENT_LOG_ACTIVITY, "Rotate (5)", "Success; `status_detail` the reason", "`file` the log", _events_rotated),
    "events_torn_tail": Mapping(EVENT_LOG_ACTIVITY, "Other (99) `Repair`", "Success", "`file` the log", _events_torn_tail),
    "admin_action": Mapping(
        ENTITY_MANAGEMENT, "`policy_reload` Update (3), `mcp_approve` Enable (8), `bpf_detach` Disable (9), others Other (99)",
        "`ok` → Success, else Failure", "`entity` what was acted on (`data` the detail); `actor` the caller (uid, pid, exe)", _admin_action),
    "mcp_tool_seen": Mapping(
        API_ACTIVITY, "Read (2) `tools/list`", "Success; `blocked` → Denied/Blocked, else Allowed/Allowed",
        "`api.service` the server, `resources` the tool (`uid` its hash)", _tool_seen),
    "mcp_tool_changed": Mapping(DETECTION_FINDING, "Create (1)", _BY_POLICY, "`finding_info` (title, changed fields, hashes), `resources` the tool", _tool_changed),
    "mcp_detection": Mapping(DETECTION_FINDING, "Create (1)", _BY_POLICY, "`finding_info` (`analytic` the pattern, `types` its category)", _detection),
    "mcp_tool_shadowed": Mapping(DETECTION_FINDING, "Create (1)", "New", "`resources` the tool on each server", _shadowed),
    "mcp_tool_called": Mapping(
        API_ACTIVITY, "Other (99) `Call`", _ALLOW_BLOCK,
        "`api` tools/call (`request.uid` the JSON-RPC id), `resources` the tool, `actor` the shim", _tool_called),
    "mcp_tool_call_intercepted": Mapping(
        API_ACTIVITY, "Other (99) `Call`", _ALLOW_BLOCK,
        "`api` tool_call (`request.uid` the call id; the dialect is in `message`), `resources` the tool", _intercepted),
    "mcp_result_injection": Mapping(DETECTION_FINDING, "Create (1)", _BY_POLICY, "`finding_info.desc` the excerpt", _result_injection),
    "mcp_network_connection": Mapping(
        NETWORK_ACTIVITY, "Open (1); Refuse (5) when blocked; Traffic (6) for `sendmsg`", _ALLOW_BLOCK.replace(" (`status_detail`: the reason)", ""),
        "`dst_endpoint` (ip, port, `svc_name` the server), `connection_info`", _mcp_connection),
    "network_connect": Mapping(
        NETWORK_ACTIVITY, "Open (1) for 0 / EINPROGRESS, Refuse (5) for EPERM / EACCES, else Fail (4)",
        "Success or Failure; `status_code` the result, `status_detail` the errno name", "`dst_endpoint`, `connection_info`", _network_connect),
    "bpf_lost_events": Mapping(EVENT_LOG_ACTIVITY, "Other (99) `Drop`", "Failure", "`count` lost since the last", _bpf_lost),
    "mcp_server_discovered": Mapping(
        API_ACTIVITY, "Read (2) `tools/list`", "Success; Failure on `error` or a TLS fingerprint mismatch (then Denied/Blocked)",
        "`dst_endpoint` the server", _discovered),
    "shim_registered": Mapping(APPLICATION_LIFECYCLE, "Start (3)", "Success", "`app` agentsh-shim (`feature` the server)", _shim_registered),
    "shim_exited": Mapping(APPLICATION_LIFECYCLE, "Stop (4)", "Success for exit code 0, else Failure", "`app` agentsh-shim", _shim_exited),
    "protocol_error": Mapping(APPLICATION_ERROR, "General Error (1)", "Failure; `status_detail` the detail", "`count`", _protocol_error),
    "llm_request": Mapping(
        API_ACTIVITY, "Create (1)", "Success below HTTP 400 without `error`; tool calls blocked or redactions → Modified/Corrected",
        "`api` (operation the path, service the provider), `http_request`, `http_response`, `duration`", _llm_request),
    "hook_evaluation": Mapping(
        API_ACTIVITY, "Other (99) `Evaluate`", "`allow` Allowed/Allowed, `warn` Allowed/Alert, `ask` Allowed/Delayed, `deny` Denied/Blocked (Failure)",
        "`api.operation` the hook event, `resources` the tool", _hook),
    "flow_summary": Mapping(BASE_EVENT, "Other (99)", "Success", "`duration`", _flow_summary),
}
"""One mapping per event type (a test checks every type has one)."""

_FALLBACK = Mapping(BASE_EVENT, "Other (99)", "Success", "", _other)
FALLBACK = _FALLBACK
"""Base Event, the native event under ``unmapped``: for a type without a mapping."""


def to_ocsf(ev: Any, d: dict[str, Any], mapping: Mapping | None = None) -> dict[str, Any]:
    """The OCSF form of ``ev``; ``d`` is its native line (envelope filled, severity set).

    ``mapping`` overrides the type's (the writer falls back to Base Event when a
    mapping fails, so an event is never lost to its OCSF form).
    """
    m = mapping or MAPPINGS.get(ev.type, _FALLBACK)
    c = m.cls
    p = m.fn(ev, d)
    act = p.pop("activity_id")
    label = p.pop("activity_label", "")
    status_id = p.pop("status_id", c.default_status)
    sev = SEVERITY_ID.get(d.get("severity") or "info", 1)
    product: dict[str, Any] = {"name": "agentsh", "vendor_name": "agentsh", "version": __version__,
                               "feature": {"name": ev.source}}
    md: dict[str, Any] = {"version": OCSF_VERSION, "product": product, "uid": d["id"],
                          "event_code": ev.type, "profiles": list(PROFILES),
                          "log_name": "agentsh events", "log_provider": "agentshd"}
    if ev.sender_timestamp:
        md["original_time"] = ev.sender_timestamp
    if ev.session_id:
        md["correlation_uid"] = ev.session_id
    out: dict[str, Any] = {
        "time": epoch_ms(d["timestamp"]),
        "class_uid": c.uid,
        "class_name": c.name,
        "category_uid": c.category_uid,
        "category_name": c.category_name,
        "activity_id": act,
        "activity_name": label if act == 99 and label else c.activities[act],
        "type_uid": c.uid * 100 + act,
        "type_name": f"{c.name}: {c.activities[act]}",
        "severity_id": sev,
        "severity": SEVERITY_CAPTION[sev],
        "status_id": status_id,
        "status": c.statuses[status_id],
        "metadata": md,
        "device": {"hostname": d["host"], "type_id": 0, "type": "Unknown"},
        "actor": _actor(ev),
    }
    if "action_id" in p:
        out["action"] = ACTION[p["action_id"]]
    if "disposition_id" in p:
        out["disposition"] = DISPOSITION[p["disposition_id"]]
    out.update(p)
    out["unmapped"] = d
    return out

