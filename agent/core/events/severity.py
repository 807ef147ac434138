"""The envelope ``severity`` of every event, decided in one place.

A SIEM routes on ``severity`` without knowing every event type, so producers
never set it: the writer calls :func:`severity_of` for each event it writes
(whatever a producer or a sender put there is replaced). Each type has one
rule here; docs/events.md ("Severity") lists them, generated from
:data:`RULES`, and a test checks that every event type has a rule.

Levels: ``info`` (routine: lifecycle, allowed activity), ``low`` (worth a look:
recoverable trouble), ``medium`` (an enforcement decision or a suspicious
fact: a blocked call, a rejected policy), ``high`` (the security picture is
incomplete or enforcement was lowered: lost events, a detached BPF layer, a
pinned tool that changed under a block), ``critical`` (only from a detection
or a data flow rated critical). They map 1:1 onto OCSF ``severity_id`` 1..5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentsh.agent.core.vocab import EVENT_SEVERITIES as LEVELS
from agentsh.agent.core.vocab import EVENT_SEVERITY_RANK as _RANK
from agentsh.agent.core.vocab import EventSeverity as Severity

_FLOW_RISK: dict[str, Severity] = {"none": "info", "low": "low", "medium": "medium", "high": "high", "critical": "critical"}


def worst(*levels: str | None) -> Severity:
    """The highest of ``levels`` (unknown values and None count as ``info``)."""
    best = 0
    for s in levels:
        r = _RANK.get(s, 0) if s else 0
        if r > best:
            best = r
    return LEVELS[best]


def _detections(ev: Any) -> Severity:
    return worst(*(d.severity for d in getattr(ev, "detections", ()) or ()))


@dataclass(frozen=True, slots=True)
class Rule:
    """How one event type's severity is decided: ``fn`` of the event, told as ``doc``."""

    doc: str
    fn: Callable[[Any], Severity]


def _const(level: Severity, why: str = "") -> Rule:
    return Rule(f"`{level}`" + (f" ({why})" if why else ""), lambda ev: level)


def _component_exited(ev: Any) -> Severity:
    if ev.will_restart:
        return "low"
    clean = (ev.exit_code == 0 and not ev.signal) or ev.signal == "SIGTERM"
    return "info" if clean else "high"


_ADMIN: dict[str, Severity] = {
    "bpf_detach": "high",
    "mcp_approve": "high",
    "policy_reload": "medium",
    "events_reopen": "info",
    "selftest": "info",
}


def _tool_seen(ev: Any) -> Severity:
    floor: Severity = "medium" if ev.blocked or ev.status == "changed" else "info"
    return worst(floor, ev.max_severity, _detections(ev))


def _blocked_call(ev: Any) -> Severity:
    flow = _FLOW_RISK.get(getattr(ev, "risk_level", None) or "")
    if ev.action != "block":
        return worst("info", flow)  # an allowed call with a flow warning: the flow's risk
    pin = "hash changed" in (ev.reason or "") or "hash mismatch" in (ev.reason or "")
    return worst("high" if pin else "medium", flow)


def _llm_request(ev: Any) -> Severity:
    if ev.tool_calls_blocked:
        return "medium"
    if ev.redactions and any(ev.redactions.values()):
        return "low"
    return "info"


def _hook(ev: Any) -> Severity:
    by_decision: Severity = {"deny": "medium", "ask": "low", "warn": "low"}.get(ev.decision, "info")  # type: ignore[assignment]
    return worst(by_decision, _FLOW_RISK.get(ev.risk_level or ""))


def _discovered(ev: Any) -> Severity:
    if ev.tls_fingerprint_ok is False:
        return "high"
    return "low" if ev.error else "info"


RULES: dict[str, Rule] = {
    "daemon_started": _const("info"),
    "daemon_stopping": _const("info"),
    "component_exited": Rule(
        "`low` when it will be restarted; `info` for a clean exit (code 0 or SIGTERM) that is not; "
        "`high` when it crashed and will not be restarted (restart budget used: a layer is down)",
        _component_exited,
    ),
    "policy_loaded": Rule(
        "`info` at start; `low` for a reload (`trigger` other than `start`): enforcement changed",
        lambda ev: "info" if ev.trigger == "start" else "low",
    ),
    "policy_rejected": _const("medium", "the policy did not change as intended"),
    "events_dropped": _const("high", "the picture is incomplete"),
    "events_rotated": _const("info"),
    "events_torn_tail": _const("low", "a crash cut a line short; it was removed"),
    "admin_action": Rule(
        "by `action`: `bpf_detach` and `mcp_approve` `high` (they lower enforcement), "
        "`policy_reload` `medium` (a new policy may allow more), `events_reopen` and `selftest` "
        "`info`, any other action `medium`; the same whatever the `outcome` (a refused attempt "
        "matters as much)",
        lambda ev: _ADMIN.get(ev.action, "medium"),
    ),
    "mcp_tool_seen": Rule(
        "the highest detection severity (`max_severity`, `detections`); at least `medium` when "
        "`blocked` or `status: changed`; else `info`",
        _tool_seen,
    ),
    "mcp_tool_changed": Rule(
        "`high` when the change was blocked (`action: block`), else `medium`; raised to the "
        "highest detection severity",
        lambda ev: worst("high" if ev.action == "block" else "medium", _detections(ev)),
    ),
    "mcp_detection": Rule(
        "the detection's own severity (`detection.severity`)", lambda ev: worst(ev.detection.severity)
    ),
    "mcp_tool_shadowed": _const("medium"),
    "mcp_tool_called": Rule(
        "`info` when allowed; a block is `medium`, `high` when the tool's definition changed after "
        "it was pinned; raised to the data-flow step's `risk_level` when it found a flow "
        "(a warned flow is reported at its risk even when allowed)",
        _blocked_call,
    ),
    "mcp_tool_call_intercepted": Rule("as `mcp_tool_called`", _blocked_call),
    "mcp_result_injection": Rule(
        "the highest detection severity (`max_severity`, `detections`), at least `medium`",
        lambda ev: worst("medium", ev.max_severity, _detections(ev)),
    ),
    "mcp_network_connection": Rule(
        "`medium` when blocked, else `info`", lambda ev: "medium" if ev.action == "block" else "info"
    ),
    "network_connect": _const("info", "audit trail of every connect"),
    "bpf_lost_events": _const("high", "the kernel dropped records: the picture is incomplete"),
    "mcp_server_discovered": Rule(
        "`high` when the TLS fingerprint did not match (`tls_fingerprint_ok: false`); `low` when "
        "listing failed (`error`); else `info`",
        _discovered,
    ),
    "shim_registered": _const("info"),
    "shim_exited": _const("info"),
    "protocol_error": _const("low", "malformed traffic can be an evasion attempt"),
    "llm_request": Rule(
        "`medium` when tool calls were blocked (`tool_calls_blocked` > 0); `low` when secrets were "
        "redacted (`redactions`); else `info`",
        _llm_request,
    ),
    "hook_evaluation": Rule(
        "by `decision`: `deny` `medium`, `ask`/`warn` `low`, `allow` `info`; raised to the "
        "flow tracker's `risk_level` (`medium`, `high`, `critical`)",
        _hook,
    ),
    "flow_summary": _const("info", "the decisions are in `hook_evaluation`"),
}
"""One rule per event type."""


_FNS: dict[str, Callable[[Any], Severity]] = {t: r.fn for t, r in RULES.items()}


def _info(ev: Any) -> Severity:
    return "info"


def severity_of(ev: Any) -> Severity:
    """The severity of ``ev`` (an event model); ``info`` for a type without a rule."""
    return _FNS.get(ev.type, _info)(ev)
