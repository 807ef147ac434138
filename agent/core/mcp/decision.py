"""The one MCP tool-call decision pipeline, shared by the shim, the LLM proxy and
(via the daemon) every other layer, so rate limits and pins are one truth.

Order (docs/mcp.md "Evaluation order"; first block wins):

1. registry lookup: unknown → ``unknown tool, fail closed`` when
   ``mcp.fail_closed``, else allow (``known=False``; no event from the proxy)
2. server policy: ``denied_servers`` → ``server denied``; ``server_policy:
   allowlist`` and no ``allowed_servers`` match → ``server not in allowlist``
3. tool policy: a ``denied_tools`` rule (server+tool globs, optional hash) →
   ``tool denied``; ``tool_policy: allowlist`` and no ``allowed_tools`` match →
   ``tool not in allowlist``
4. rate limit (``rate_limits.enabled``): no token → ``rate limit exceeded for
   server "S"``. Only calls that pass 2-3 reach the bucket and a call without a
   token consumes nothing.
5. version pin (``version_pinning.enabled``, hash != pin, not approved):
   ``on_change: block`` → ``tool "T" hash changed (pinned: P, current: C)``;
   ``alert`` → allowed with alert ``tool "T" hash changed (alert only)``
6. detection (``inspection.on_detection.action: block``, a detection at or
   above ``alert_threshold``, not approved) → ``tool definition flagged:
   <category> (<severity>)``
7. allow

8. data flow (docs/flow.md "Modes"; the daemon's one ``FlowEngine``): for a
   call that carries arguments (or a ``flow_check`` from a hook or the proxy,
   for any tool name, MCP or not), in the call's flow session: a ``deny``
   verdict → ``agentsh data-flow policy: <flow reason>``; ``ask`` is returned
   in ``Decision.flow`` for a caller that can ask (a hook) and degrades to
   ``warn`` for one that cannot (shim, proxy); ``warn`` allows with an alert.
   A name that is not an MCP tool (no registry entry, no ``mcp__`` prefix, no
   server) gets this step only: ``fail_closed`` is about MCP tools.

``mcp.enforce_policy: false`` turns every block into an allow whose reason is
``would block: <reason>`` (and an ``ask`` into ``would ask: <reason>``). Steps
2-3 depend only on (server, tool, hash) and the policy, so their result is
cached per policy version. Hooks do not take rate-limit tokens: the call is
counted where it is made (the shim, the proxy).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agentsh.agent.core.events.models import Event, MCPToolCalled, MCPToolCallIntercepted
from agentsh.agent.core.mcp.ratelimit import RateLimiter
from agentsh.agent.core.mcp.registry import ToolEntry, ToolRegistry
from agentsh.agent.core.mcp.types import Decision, DecisionRequest
from agentsh.agent.core.policy.globs import glob_match
from agentsh.agent.core.policy.schema import MCPConfig, MCPToolRule, Policy
from agentsh.agent.core.vocab import SEVERITY_RANK

if TYPE_CHECKING:  # the shim and the proxy decide offline without the flow engine
    from agentsh.agent.core.flow.engine import FlowEngine

log = logging.getLogger(__name__)

R_SERVER_DENIED = "server denied"
R_SERVER_NOT_ALLOWED = "server not in allowlist"
R_TOOL_DENIED = "tool denied"
R_TOOL_NOT_ALLOWED = "tool not in allowlist"
R_UNKNOWN_FAIL_CLOSED = "unknown tool, fail closed"
R_SELFTEST = "selftest canary (agentshctl selftest)"
WOULD_BLOCK = "would block: "
WOULD_ASK = "would ask: "
FLOW_PREFIX = "agentsh data-flow policy: "
_FLOW_LAYER = {"hook": "hook", "proxy": "proxy", "shim": "mcp", "test": "mcp"}
_PPID_TTL = 60.0
_ppid_cache: dict[int, tuple[float, int | None]] = {}
_STATIC_CACHE_MAX = 65536


def q(s: str) -> str:
    """Quote like Go's %q (JSON string quoting is the same for printable text)."""
    return orjson.dumps(s).decode()


def r_rate_limited(server_id: str) -> str:
    return f"rate limit exceeded for server {q(server_id)}"


def r_pin_changed(tool: str, pinned: str, current: str) -> str:
    return f"tool {q(tool)} hash changed (pinned: {pinned}, current: {current})"


def r_pin_alert(tool: str) -> str:
    return f"tool {q(tool)} hash changed (alert only)"


def r_flagged(category: str, severity: str) -> str:
    return f"tool definition flagged: {category} ({severity})"


_REASON_CLASS = {
    R_SERVER_DENIED: "server_denied",
    R_SERVER_NOT_ALLOWED: "not_in_allowlist",
    R_TOOL_DENIED: "tool_denied",
    R_TOOL_NOT_ALLOWED: "not_in_allowlist",
    R_UNKNOWN_FAIL_CLOSED: "unknown_fail_closed",
    R_SELFTEST: "selftest",
}


def reason_class(reason: str) -> str:
    """The bounded class of a block reason (a metrics label: never a tool or
    server name). Classes: docs/operations.md "Monitoring"."""
    cls = _REASON_CLASS.get(reason)
    if cls is not None:
        return cls
    if reason.startswith(FLOW_PREFIX):
        return "flow"
    if reason.startswith("rate limit exceeded"):
        return "rate_limited"
    if reason.startswith("tool definition flagged"):
        return "flagged"
    if reason.endswith(")") and " hash changed (pinned: " in reason:
        return "pin_changed"
    return "other"


def _norm_hash(h: str | None) -> str | None:
    if h is None:
        return None
    h = h.strip().lower()
    return h if h.startswith("sha256:") else "sha256:" + h


def _parent_of(pid: int) -> int | None:
    """The parent pid of ``pid`` (/proc), cached for a minute."""
    now = time.monotonic()
    hit = _ppid_cache.get(pid)
    if hit is not None and now - hit[0] < _PPID_TTL:
        return hit[1]
    ppid: int | None = None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        ppid = int(stat[stat.rindex(b")") + 2 :].split(None, 2)[1])
    except (OSError, ValueError, IndexError):
        ppid = None
    if len(_ppid_cache) >= 4096:
        _ppid_cache.clear()
    _ppid_cache[pid] = (now, ppid if ppid and ppid > 1 else None)
    return _ppid_cache[pid][1]


def flow_session_key(req: DecisionRequest) -> str:
    """The flow session a call or a recorded result belongs to (docs/flow.md
    "Sessions"): the caller's ``flow_session`` (a hook's or the agent's
    session id), else its ``session_id`` (the shim's ``AGENTSH_SESSION_ID``),
    else, for a shim, the agent process that started it — every stdio MCP
    server of one agent is a child of that agent, so a read on one server and
    a post on another meet in one session — else the shim process itself."""
    if req.flow_session:
        return req.flow_session
    if req.session_id:
        return req.session_id
    uid = req.uid if req.uid is not None else 0
    if req.source == "shim":
        if req.pid:
            parent = _parent_of(req.pid)
            return f"agent:{uid}:{parent}" if parent else f"shim:{uid}:{req.pid}"
        return f"shim:{uid}:{req.server_id or '-'}"
    return f"{req.source}:{uid}:unscoped"


def _mcp_shaped(req: DecisionRequest) -> bool:
    return req.server_id is not None or req.tool_name.startswith("mcp__")


@dataclass(frozen=True, slots=True)
class _Rule:
    server: str
    tool: str
    hash: str | None

    def matches(self, server_id: str, tool: str, h: str | None) -> bool:
        if self.hash is not None and self.hash != h:
            return False
        return glob_match(self.server, server_id) and glob_match(self.tool, tool)


def _rules(rules: list[MCPToolRule]) -> tuple[_Rule, ...]:
    return tuple(_Rule(r.server, r.tool, _norm_hash(r.hash)) for r in rules)


class _Compiled:
    """The MCP policy, flattened once per reload for the hot path."""

    def __init__(self, mcp: MCPConfig) -> None:
        self.enforce = mcp.enforce_policy
        self.fail_closed = mcp.fail_closed
        self.denied_servers = tuple(r.id for r in mcp.denied_servers)
        self.server_allowlist = mcp.server_policy == "allowlist"
        self.allowed_servers = tuple(r.id for r in mcp.allowed_servers)
        self.denied_tools = _rules(mcp.denied_tools)
        self.tool_allowlist = mcp.tool_policy == "allowlist"
        self.allowed_tools = _rules(mcp.allowed_tools)
        self.rate_limits = mcp.rate_limits.enabled
        vp = mcp.version_pinning
        self.pin_enabled = vp.enabled and vp.on_change != "allow"
        self.pin_block = vp.on_change == "block"
        insp = mcp.inspection
        self.detect_block = insp.enabled and insp.on_detection.action == "block"
        self.threshold = SEVERITY_RANK[insp.detection.alert_threshold]
        self._static: dict[tuple[str, str, str | None], str | None] = {}

    def static(self, server_id: str, tool: str, h: str | None) -> str | None:
        """Steps 2-3: server and tool policy. Cached: depends on nothing else."""
        key = (server_id, tool, h)
        try:
            return self._static[key]
        except KeyError:
            pass
        reason = self._static_eval(server_id, tool, h)
        if len(self._static) >= _STATIC_CACHE_MAX:
            self._static.clear()
        self._static[key] = reason
        return reason

    def _static_eval(self, server_id: str, tool: str, h: str | None) -> str | None:
        if any(glob_match(p, server_id) for p in self.denied_servers):
            return R_SERVER_DENIED
        if self.server_allowlist and not any(glob_match(p, server_id) for p in self.allowed_servers):
            return R_SERVER_NOT_ALLOWED
        if any(r.matches(server_id, tool, h) for r in self.denied_tools):
            return R_TOOL_DENIED
        if self.tool_allowlist and not any(r.matches(server_id, tool, h) for r in self.allowed_tools):
            return R_TOOL_NOT_ALLOWED
        return None

    def definition(self, e: ToolEntry, alerts: list[str] | None) -> str | None:
        """Steps 5-6: what the tool's definition (pin, detections) says."""
        if (
            self.pin_enabled
            and e.pinned_hash is not None
            and e.pinned_hash != e.hash
            and not e.approved
        ):
            if self.pin_block:
                return r_pin_changed(e.tool_name, e.pinned_hash, e.hash)
            if alerts is not None:
                alerts.append(r_pin_alert(e.tool_name))
        if (
            self.detect_block
            and e.max_severity is not None
            and SEVERITY_RANK.get(e.max_severity, -1) >= self.threshold
            and not e.approved
        ):
            best = max(e.detections, key=lambda d: SEVERITY_RANK[d.severity], default=None)
            if best is None:  # a stored row whose detections no longer parse (registry.py)
                return r_flagged("unreadable detection", e.max_severity)
            return r_flagged(best.category or best.pattern, best.severity)
        return None


class DecisionEngine:
    """``decide(req)``: synchronous, lock-free on the registry, one event per decision."""

    def __init__(
        self,
        registry: ToolRegistry,
        policy: Policy,
        emit: Callable[[Event], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        flow: FlowEngine | None = None,
    ) -> None:
        self.registry = registry
        self._emit = emit
        self.flow = flow
        """The daemon's flow engine (None: no flow step, e.g. offline deciders)."""
        self.ratelimiter = RateLimiter(policy.mcp.rate_limits, clock)
        self.counts: dict[str, int] = {
            "allow": 0,
            "block": 0,
            "would_block": 0,
            "unknown": 0,
            "emit_failed": 0,
            "flow_checks": 0,
            "flow_deny": 0,
            "flow_ask": 0,
            "flow_warn": 0,
        }
        self._c = _Compiled(policy.mcp)
        self.canaries: dict[tuple[str, str], float] = {}
        """(server id, tool) → expiry (monotonic): temporary selftest tools that
        are denied like a denied_tools rule (and, like one, only reported when
        enforce_policy is false)."""
        self.canary_decisions: dict[tuple[str, str], list[tuple[str, str]]] = {}
        """Per canary: the (source, action) of each decision taken on it."""
        self.by_class: dict[tuple[str, str, str], int] = {}
        """(layer, action, reason class) → decisions: read at scrape time (agent/daemon/metrics.py)."""

    def update_policy(self, policy: Policy) -> None:
        self._c = _Compiled(policy.mcp)
        self.ratelimiter.update(policy.mcp.rate_limits)

    def definition_block(self, e: ToolEntry) -> str | None:
        """Whether the tool's definition alone blocks it (pin block or detection
        block), for hiding it from tools/list. None when not enforcing."""
        c = self._c
        return c.definition(e, None) if c.enforce else None

    # ------------------------------------------------------------------ the pipeline

    def decide(self, req: DecisionRequest) -> Decision:
        c = self._c
        if req.server_id is not None:
            e = self.registry.live(req.server_id, req.tool_name)
            cands: tuple[ToolEntry, ...] = (e,) if e is not None else ()
        else:
            cands = self.registry.resolve(req.tool_name)
        if not cands:
            if req.flow_check and not _mcp_shaped(req):
                return self._flow_only(req, c)
            return self._unknown(req, c)
        alerts: list[str] = []
        if self.canaries:
            for e in cands:
                if self._canary(e.server_id, e.tool_name):
                    d = self._finish(req, c, e, R_SELFTEST, alerts, True)
                    self.canary_decisions.setdefault((e.server_id, e.tool_name), []).append((req.source, d.action))
                    return d
        if len(cands) == 1:
            e = cands[0]
            reason = c.static(e.server_id, e.tool_name, e.hash)
            if (
                reason is None
                and c.rate_limits
                and req.source != "hook"
                and not self.ratelimiter.take(e.server_id)
            ):
                reason = r_rate_limited(e.server_id)
            if reason is None:
                reason = c.definition(e, alerts)
            return self._finish(req, c, e, reason, alerts, True)
        # Several servers list this name: block if any of them would block.
        reason = None
        chosen = cands[0]
        for e in cands:
            reason = c.static(e.server_id, e.tool_name, e.hash)
            if reason is not None:
                chosen = e
                break
        if reason is None and c.rate_limits and req.source != "hook":
            sids = tuple(dict.fromkeys(e.server_id for e in cands))
            empty = self.ratelimiter.take_all(sids)
            if empty is not None:
                reason = r_rate_limited(empty)
                chosen = next(e for e in cands if e.server_id == empty)
        if reason is None:
            for e in cands:
                reason = c.definition(e, alerts)
                if reason is not None:
                    chosen = e
                    break
        if reason is None:
            alerts.append(
                f"ambiguous tool name {q(req.tool_name)}: provided by servers "
                + ", ".join(q(e.server_id) for e in cands)
            )
        return self._finish(req, c, chosen, reason, alerts, True)

    def _canary(self, server_id: str, tool: str) -> bool:
        exp = self.canaries.get((server_id, tool))
        if exp is None:
            return False
        if time.monotonic() > exp:
            self.canaries.pop((server_id, tool), None)
            return False
        return True

    def _unknown(self, req: DecisionRequest, c: _Compiled) -> Decision:
        self.counts["unknown"] += 1
        reason = None
        server_type = ""
        server_addr = ""
        if req.server_id is not None:
            # The shim knows the server for sure: server policy and hash-less tool
            # rules apply even to a tool the registry has not seen listed.
            reason = c.static(req.server_id, req.tool_name, None)
            srv = self.registry.servers().get(req.server_id)
            if srv is not None:
                server_type, server_addr = srv.server_type, srv.server_addr
        if reason is None and c.fail_closed:
            reason = R_UNKNOWN_FAIL_CLOSED
        d = Decision(
            action="allow",
            reason="",
            server_id=req.server_id or "",
            server_type=server_type,  # type: ignore[arg-type]
            server_addr=server_addr,
            known=False,
            tool_name=req.tool_name,
        )
        if reason is None:
            reason = self._flow_step(req, c, d, req.server_id, req.tool_name)
        self._apply(d, c, reason, req.source)
        if not d.reason and d.alerts:
            d.reason = "; ".join(d.alerts)
        if req.emit and (req.source == "shim" or (req.source == "proxy" and d.reason)):
            self._send(req, d)
        return d

    def _finish(
        self,
        req: DecisionRequest,
        c: _Compiled,
        e: ToolEntry,
        reason: str | None,
        alerts: list[str],
        known: bool,
    ) -> Decision:
        d = Decision(
            action="allow",
            reason="",
            server_id=e.server_id,
            server_type=e.server_type,  # type: ignore[arg-type]
            server_addr=e.server_addr,
            tool_hash=e.hash,
            known=known,
            tool_name=e.tool_name,
            alerts=alerts,
        )
        if reason is None:
            reason = self._flow_step(req, c, d, e.server_id, e.tool_name)
        self._apply(d, c, reason, req.source)
        if not d.reason and alerts:
            d.reason = "; ".join(alerts)
        if req.emit and req.source in ("shim", "proxy"):
            self._send(req, d)
        return d

    def _flow_only(self, req: DecisionRequest, c: _Compiled) -> Decision:
        """A flow check of a tool that is not an MCP tool (Read, WebFetch, Bash …)."""
        d = Decision(action="allow", known=False, tool_name=req.tool_name)
        reason = self._flow_step(req, c, d, None, req.tool_name)
        self._apply(d, c, reason, req.source)
        if not d.reason and d.alerts:
            d.reason = "; ".join(d.alerts)
        if req.emit and req.source == "proxy" and d.reason:
            self._send(req, d)
        return d

    def _flow_step(
        self, req: DecisionRequest, c: _Compiled, d: Decision, server_id: str | None, tool: str
    ) -> str | None:
        """Step 8: the flow verdict on ``d`` (``d.flow``, alerts); the block
        reason when the flow policy denies."""
        fe = self.flow
        if fe is None or not fe.enabled or (req.arguments is None and not req.flow_check):
            return None
        try:
            key = flow_session_key(req)
            if req.source == "shim" and not req.flow_session:
                # an MCP session driven by a hook-enabled agent joins its hook session (docs/flow.md "Sessions");
                # a shim naming the agent's session (CLAUDE_CODE_SESSION_ID) is in it already
                scope = str(req.uid) if req.uid is not None else ""
                fe.correlate(key, tool, req.arguments, scope=scope)
            v = fe.check(
                key,
                tool,
                server_id,
                req.arguments,
                can_ask=req.can_ask,
                source=_FLOW_LAYER.get(req.source, "mcp"),  # type: ignore[arg-type]
            )
        except Exception:  # a flow-tracker bug must not take the MCP decision down
            log.exception("flow check failed for tool %r", tool)
            return None
        self.counts["flow_checks"] += 1
        info = v.to_json()
        info["action"] = v.action
        d.flow = info
        if v.action == "allow":
            return None
        why = v.reason or f"{v.flow_type or 'flow'} ({v.risk_level})"
        if v.action == "deny":
            self.counts["flow_deny"] += 1
            return FLOW_PREFIX + why
        if v.action == "ask":
            self.counts["flow_ask"] += 1
            if not c.enforce:
                info["action"] = "allow"
                d.alerts.append(WOULD_ASK + FLOW_PREFIX + why)
            else:
                d.alerts.append(FLOW_PREFIX + "ask: " + why)
            return None
        self.counts["flow_warn"] += 1
        d.alerts.append(FLOW_PREFIX + "warn: " + why)
        return None

    def _apply(self, d: Decision, c: _Compiled, reason: str | None, source: str) -> None:
        if reason is None:
            self.counts["allow"] += 1
            key = (source, "allow", "alert" if d.alerts else "allow")
        elif c.enforce:
            d.action = "block"
            d.reason = reason
            self.counts["block"] += 1
            key = (source, "block", reason_class(reason))
        else:
            d.reason = WOULD_BLOCK + reason
            self.counts["allow"] += 1
            self.counts["would_block"] += 1
            key = (source, "allow", "would_block")
        n = self.by_class
        n[key] = n.get(key, 0) + 1

    def _send(self, req: DecisionRequest, d: Decision) -> None:
        if self._emit is None:
            return
        try:
            ev: Event
            if req.source == "proxy":
                if req.dialect is None:  # the control API refuses this; an in-process caller's bug
                    raise ValueError("a proxy decision request names no dialect")
                ev = MCPToolCallIntercepted(
                    source="proxy",
                    session_id=req.session_id,
                    pid=req.pid,
                    uid=req.uid,
                    input_truncated=req.arguments_truncated,
                    request_id=req.request_id or "",
                    dialect=req.dialect,  # kept as given; validated by the event model
                    tool_name=req.tool_name,
                    tool_call_id=req.tool_call_id or "",
                    input=req.arguments,
                    server_id=d.server_id,
                    server_type=d.server_type,
                    server_addr=d.server_addr or None,
                    tool_hash=d.tool_hash,
                    action=d.action,
                    reason=d.reason or None,
                    **_flow_fields(d),
                )
            else:
                ev = MCPToolCalled(
                    source="shim",
                    session_id=req.session_id,
                    pid=req.pid,
                    uid=req.uid,
                    input_truncated=req.arguments_truncated,
                    server_id=d.server_id,
                    tool_name=req.tool_name,
                    jsonrpc_id=req.jsonrpc_id,
                    input=req.arguments,
                    action=d.action,
                    reason=d.reason or None,
                    server_type=d.server_type,
                    tool_hash=d.tool_hash or None,
                    **_flow_fields(d),
                )
            if not self._emit(ev):
                self.counts["emit_failed"] += 1
        except Exception:  # an event problem must never change or break a decision
            self.counts["emit_failed"] += 1
            log.exception("cannot emit decision event for tool %r", req.tool_name)

    def stats(self) -> dict[str, int]:
        return dict(self.counts)


def _flow_fields(d: Decision) -> dict[str, Any]:
    """The flow verdict's fields for a decision event (only when a flow was seen)."""
    f = d.flow
    if not f or (f.get("flow_type") is None and f.get("action") == "allow"):
        return {}
    return {
        "flow_type": f.get("flow_type"),
        "risk_level": f.get("risk_level"),
        "flow_decision": f.get("action"),
        "coverage": f.get("coverage"),
    }
