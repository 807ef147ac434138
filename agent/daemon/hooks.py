"""Agent hooks and flow records in the daemon (docs/flow.md "Hooks", "Modes").

The hook command (agent/hook_cmd.py) hands Claude Code's hook payload in over
the agent channel (``op: hook``); this module answers it from the one decision
pipeline (MCP checks, then the flow step: agent/core/mcp/decision.py) and the
daemon's ``FlowEngine``, and writes one ``hook_evaluation`` event per
evaluation. The hook command never writes events itself.

* ``PreToolUse`` — a decision: ``allow`` / ``warn`` / ``ask`` / ``deny``. For an
  ``mcp__*`` tool a pending correlation is registered first, so the shim's
  ``tools/call`` that follows joins this hook session (docs/flow.md "Sessions").
* ``PostToolUse`` — the tool's result is recorded as a data origin.
* ``PostToolUseFailure`` — the tool failed: no result will come.

Claude Code runs PostToolUse hooks asynchronously (``async: true``): the next tool's
PreToolUse can arrive before the previous tool's result has been recorded.
So a PreToolUse of a call that can send data off the host first waits, up to
``RESULT_WAIT_SECONDS``, for the results of this session's earlier calls that
were allowed but not yet recorded. A result that does not come in that time
(the tool was refused later, the hook was killed) is given up once; after
``LOST_STREAK`` results in a row never came (no PostToolUse hook installed),
the session stops waiting until a result arrives again.

``op: flow_record`` is the same recording for the shim (an MCP ``tools/call``
result) and the LLM proxy (a ``tool_result`` block): proxy-only
mode (docs/flow.md "Proxy-only mode", "Modes"). The shim's results are waited for the same way:
an allowed shim ``tools/call`` (``expect_result``, called by the channel after
the decision) is a result in flight of its flow session until the shim's
``flow_record`` for it (``call_id``) arrives, and a later decision of a call
that can send data out in that session (``must_settle``: a shim's, the
proxy's) waits for it first. The proxy awaits its own records itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agentsh.agent.core.events.models import FlowSummary, HookEvaluation
from agentsh.agent.core.flow.classify import split_mcp_name
from agentsh.agent.core.mcp.decision import FLOW_PREFIX, flow_session_key
from agentsh.agent.core.mcp.types import Decision, DecisionRequest
from agentsh.agent.daemon.jsonhttp import BadInput

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext

log = logging.getLogger("agentsh.hooks")

RESULT_WAIT_SECONDS = 3.0
"""How long a PreToolUse waits for earlier results still being recorded."""
LOST_STREAK = 2
"""Results given up in a row after which a session no longer waits for results."""
OUTSTANDING_MAX_AGE = 3600.0
"""An allowed call whose result never came is forgotten after this long."""
SELFTEST_PREFIX = "agentsh-selftest-"
"""Hook sessions of ``agentshctl selftest``: not counted as hook coverage."""
THREAD_BYTES = 64 * 1024
"""Payloads larger than this are fingerprinted in a worker thread."""
MAX_ID = 256
AGENTS = frozenset({"claude-code"})
EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
_LAYERS = {"shim": "mcp", "proxy": "proxy", "hook": "hook"}


def hooks_conf_path(socket: Path) -> Path:
    """What the hook command reads when the daemon does not answer (whether
    to fail open), next to the control socket: ``<stem>-hooks.conf``."""
    return socket.with_name(socket.stem + "-hooks.conf")


def write_hooks_conf(socket: Path, fail_open: bool) -> None:
    """Write ``fail_open=0|1`` for the hook command (on start and each reload).
    It stays when the daemon stops: a stopped daemon's hooks still honour
    ``flow.hooks.fail_open``."""
    path = hooks_conf_path(socket)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(f"fail_open={1 if fail_open else 0}\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("cannot write %s (hooks will fail open when the daemon is away): %s", path, e)


@dataclass(slots=True)
class _Hook:
    event: str
    session: str
    tool: str
    tool_input: Any
    tool_use_id: str | None
    tool_response: Any
    agent: str


def _str(p: dict[str, Any], key: str, required: bool = True) -> str | None:
    v = p.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not 0 < len(v) <= MAX_ID:
        raise BadInput(f"hook payload: {key} must be a string of 1-{MAX_ID} characters")
    return v


def parse_hook(d: dict[str, Any]) -> _Hook:
    """The fields of a hook payload we use, validated (BadInput otherwise)."""
    agent = d.get("agent", "claude-code")
    if agent not in AGENTS:
        raise BadInput(f"agent must be one of {', '.join(sorted(AGENTS))}")
    p = d.get("payload")
    if not isinstance(p, dict):
        raise BadInput("payload (the hook's JSON object) is required")
    event = p.get("hook_event_name", d.get("event"))
    if event not in EVENTS:
        raise BadInput(f"hook_event_name must be one of {', '.join(sorted(EVENTS))}")
    session = _str(p, "session_id")
    tool = _str(p, "tool_name")
    assert session is not None and tool is not None
    return _Hook(
        event=event,
        session=session,
        tool=tool,
        tool_input=p.get("tool_input"),
        tool_use_id=_str(p, "tool_use_id", required=False),
        tool_response=p.get("tool_response"),
        agent=agent,
    )


class HookService:
    """The daemon's side of agent hooks; ``ctx`` is the DaemonContext."""

    def __init__(self, ctx: DaemonContext) -> None:
        self.ctx = ctx
        self._outstanding: dict[str, dict[str, float]] = {}
        """hook session → tool_use_id → when it was allowed: results not recorded yet."""
        self._changed: dict[str, asyncio.Event] = {}
        self._seen: dict[str, float] = {}
        """Real hook sessions → last evaluation (monotonic)."""
        self._selftest_seen: dict[str, float] = {}
        self._lost: dict[str, int] = {}
        """hook session → results given up in a row."""
        self.counts: dict[str, int] = {
            "evaluations": 0,
            "pre": 0,
            "post": 0,
            "failures": 0,
            "allow": 0,
            "warn": 0,
            "ask": 0,
            "deny": 0,
            "disabled": 0,
            "waited": 0,
            "results_lost": 0,
            "waits_skipped": 0,
            "errors": 0,
            "records": 0,
        }
        self.last_evaluation_at: float | None = None
        self.last_error_at: float | None = None
        self.last_error: str | None = None

    @property
    def flow(self) -> Any:
        return self.ctx.mcp.flow

    # ------------------------------------------------------------------ op: hook

    async def handle(
        self, d: dict[str, Any], peer: Any, size: int = 0, deadline: float | None = None
    ) -> dict[str, Any]:
        """Answer one hook payload: ``decision``, ``reason``, ``risk_level``,
        ``flow_type``, ``activity_id`` (the ``hook_evaluation`` event's id)."""
        h = parse_hook(d)
        try:
            if not self.ctx.store.policy.flow.hooks.enabled:
                self.counts["disabled"] += 1
                self._done(h.session, h.tool_use_id)
                return {
                    "decision": "allow",
                    "reason": "agentsh hooks are disabled by policy (flow.hooks.enabled: false): "
                    "not evaluated",
                    "evaluated": False,
                }
            if h.event == "PostToolUseFailure":
                self.counts["failures"] += 1
                self._done(h.session, h.tool_use_id)
                return {"decision": "allow", "reason": None, "evaluated": False}
            self._touch(h.session)
            if h.event == "PreToolUse":
                return await self._pre(h, peer, size, deadline)
            return await self._post(h, peer, size)
        except BadInput:
            raise
        except Exception as e:
            self.counts["errors"] += 1
            self.last_error_at = time.time()
            self.last_error = f"{e.__class__.__name__}: {e}"
            raise

    async def _pre(self, h: _Hook, peer: Any, size: int, deadline: float | None) -> dict[str, Any]:
        t0 = time.monotonic()
        fe = self.flow
        uid = getattr(peer, "uid", None)
        if split_mcp_name(h.tool) is not None and fe is not None:
            fe.register_pending(h.session, h.tool, h.tool_input, scope=str(uid) if uid is not None else "")
        if (
            fe is not None
            and fe.enabled
            and self._pending_results(h.session, h.tool_use_id)
            and fe.is_sink(h.tool, None, h.tool_input)
        ):
            if self._lost.get(h.session, 0) >= LOST_STREAK:
                self.counts["waits_skipped"] += 1
            else:
                await self._settle(h.session, h.tool_use_id, deadline)
        req = DecisionRequest(
            tool_name=h.tool,
            arguments=h.tool_input,
            source="hook",
            session_id=h.session,
            pid=getattr(peer, "pid", None),
            uid=uid,
            emit=False,
            flow_session=h.session,
            can_ask=True,
            flow_check=True,
        )
        mcp = self.ctx.mcp
        dec: Decision = (
            await asyncio.to_thread(mcp.decide, req) if size > THREAD_BYTES else mcp.decide(req)
        )
        decision, reason = self._answer_of(dec)
        if decision != "deny" and h.tool_use_id:
            self._outstanding.setdefault(h.session, {})[h.tool_use_id] = time.monotonic()
        self.counts["pre"] += 1
        self.counts[decision] += 1
        f = dec.flow or {}
        cls = f.get("classification")
        ev = HookEvaluation(
            source="hook",
            session_id=h.session,
            pid=getattr(peer, "pid", None),
            uid=uid,
            hook_event=h.event,
            agent=h.agent,
            tool_name=h.tool,
            tool_use_id=h.tool_use_id,
            server_id=dec.server_id or None,
            decision=decision,  # type: ignore[arg-type]
            reason=reason,
            classification=cls if cls is not None else self._classify(h.tool),
            flow_type=f.get("flow_type"),
            risk_level=f.get("risk_level"),
            coverage=f.get("coverage") or "full",
            matched_origins=list(f.get("matched_origins") or []),
            destinations=list(f.get("destinations") or []),
            sensitive_types=list(f.get("sensitive_types") or []),
            latency_ms=round((time.monotonic() - t0) * 1000, 3),
        )
        return self._finish(ev, {"flow_type": f.get("flow_type")})

    @staticmethod
    def _answer_of(dec: Decision) -> tuple[str, str | None]:
        """(hook decision, reason naming agentsh) of a pipeline decision."""
        f = dec.flow or {}
        if dec.blocked:
            r = dec.reason
            return "deny", r if r.startswith("agentsh") else f"agentsh: blocked by policy: {r}"
        action = f.get("action")
        why = f.get("reason") or f"{f.get('flow_type') or 'data flow'} ({f.get('risk_level')})"
        if action == "ask":
            return "ask", FLOW_PREFIX + why
        if action == "warn":
            return "warn", FLOW_PREFIX + why
        return "allow", dec.reason or None  # e.g. "would block: ..." with enforce_policy off

    async def _post(self, h: _Hook, peer: Any, size: int) -> dict[str, Any]:
        t0 = time.monotonic()
        fe = self.flow
        res = None
        try:
            if fe is not None and fe.enabled and h.tool_response is not None:
                args = h.tool_input if isinstance(h.tool_input, dict) else None

                def record() -> Any:
                    return fe.record(h.session, h.tool, None, h.tool_response, source="hook", arguments=args)

                res = await asyncio.to_thread(record) if size > THREAD_BYTES else record()
                self.counts["records"] += 1
        finally:
            self._done(h.session, h.tool_use_id)
        self.counts["post"] += 1
        self.counts["allow"] += 1
        ev = HookEvaluation(
            source="hook",
            session_id=h.session,
            pid=getattr(peer, "pid", None),
            uid=getattr(peer, "uid", None),
            hook_event=h.event,
            agent=h.agent,
            tool_name=h.tool,
            tool_use_id=h.tool_use_id,
            decision="allow",
            classification=self._classify(h.tool),
            coverage="full",
            sensitive_types=list(res.sensitive) if res is not None else [],
            recorded=res is not None,
            latency_ms=round((time.monotonic() - t0) * 1000, 3),
        )
        return self._finish(ev, {})

    def _finish(self, ev: HookEvaluation, extra: dict[str, Any]) -> dict[str, Any]:
        self.counts["evaluations"] += 1
        self.last_evaluation_at = time.time()
        try:
            self.ctx.events.emit(ev)
        except Exception:  # an event problem must never change the answer
            log.exception("cannot emit hook_evaluation")
        return {
            "decision": ev.decision,
            "reason": ev.reason,
            "risk_level": ev.risk_level,
            **extra,
            "activity_id": ev.id or None,
            "evaluated": True,
        }

    def _classify(self, tool: str) -> str | None:
        fe = self.flow
        return fe.classify(tool).classification if fe is not None else None

    # ------------------------------------------------------------------ results in flight

    def _pending_results(self, session: str, own: str | None) -> bool:
        pend = self._outstanding.get(session)
        return bool(pend) and any(k != own for k in pend)  # type: ignore[union-attr]

    def _done(self, session: str, tool_use_id: str | None) -> None:
        self._lost.pop(session, None)  # results arrive: wait for them again
        pend = self._outstanding.get(session)
        if pend is not None and tool_use_id is not None:
            pend.pop(tool_use_id, None)
            if not pend:
                del self._outstanding[session]
        ev = self._changed.pop(session, None)
        if ev is not None:
            ev.set()

    async def _settle(self, session: str, own: str | None, deadline: float | None) -> None:
        """Wait until this session's earlier allowed calls have their results
        recorded (or RESULT_WAIT_SECONDS pass: those still missing are given up)."""
        limit = RESULT_WAIT_SECONDS
        if deadline is not None:
            limit = min(limit, max(0.0, deadline - time.time() - 0.25))
        end = time.monotonic() + limit
        self.counts["waited"] += 1
        # only the calls allowed before this one: later ones cannot have fed it
        earlier = {k for k in self._outstanding.get(session) or {} if k != own}
        while earlier & (self._outstanding.get(session) or {}).keys():
            left = end - time.monotonic()
            if left <= 0:
                pend = self._outstanding.get(session) or {}
                lost = [k for k in pend if k in earlier]
                for k in lost:
                    del pend[k]
                if not pend:
                    self._outstanding.pop(session, None)
                self.counts["results_lost"] += len(lost)
                self._lost[session] = self._lost.get(session, 0) + len(lost)
                log.info("hook session %s: gave up waiting for %d result(s)", session, len(lost))
                return
            ev = self._changed.get(session)
            if ev is None:
                ev = self._changed[session] = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), left)

    # ------------------------------------------------------------------ shim results in flight

    @staticmethod
    def _shim_token(pid: int | None, call_id: Any) -> str:
        """The outstanding-result key of one shim ``tools/call`` (its JSON-RPC id)."""
        try:
            cid = orjson.dumps(call_id).decode()
        except (TypeError, orjson.JSONEncodeError):
            cid = repr(call_id)
        return f"shim:{pid}:{cid}"

    def _resolved(self, req: DecisionRequest) -> str:
        key = flow_session_key(req)
        fe = self.flow
        return (fe.linked_session(key) if fe is not None else None) or key

    def expect_result(self, req: DecisionRequest, dec: Decision) -> None:
        """A shim's ``tools/call`` was allowed: its result is in flight until the
        shim records it (``flow_record`` with ``call_id``), or gives up."""
        if req.source != "shim" or dec.blocked or req.jsonrpc_id is None:
            return
        fe = self.flow
        if fe is None or not fe.enabled:
            return
        token = self._shim_token(req.pid, req.jsonrpc_id)
        self._outstanding.setdefault(self._resolved(req), {})[token] = time.monotonic()

    def must_settle(self, req: DecisionRequest) -> bool:
        """Whether a decision (a shim's or the proxy's) has to wait for results
        of its flow session still in flight before it is taken: there are some,
        and the call can send data off the host. Cheap when nothing is in flight."""
        if not self._outstanding or req.source == "hook":
            return False
        fe = self.flow
        if fe is None or not fe.enabled:
            return False
        key = self._resolved(req)
        own = self._shim_token(req.pid, req.jsonrpc_id) if req.source == "shim" else None
        if not self._pending_results(key, own):
            return False
        if self._lost.get(key, 0) >= LOST_STREAK:
            self.counts["waits_skipped"] += 1
            return False
        try:
            return fe.is_sink(req.tool_name, req.server_id, req.arguments)
        except Exception:  # classification trouble: wait rather than miss a result
            log.exception("is_sink failed for %r", req.tool_name)
            return True

    async def settle(self, req: DecisionRequest, deadline: float | None) -> None:
        """Wait (bounded) for the results ``must_settle`` found in flight."""
        own = self._shim_token(req.pid, req.jsonrpc_id) if req.source == "shim" else None
        await self._settle(self._resolved(req), own, deadline)

    def _touch(self, session: str) -> None:
        now = time.monotonic()
        if session.startswith(SELFTEST_PREFIX):
            self._selftest_seen[session] = now
        else:
            self._seen[session] = now

    # ------------------------------------------------------------------ op: flow_record

    async def record(self, d: dict[str, Any], peer: Any, size: int = 0) -> dict[str, Any]:
        """``record_now`` in a worker thread (for large results)."""
        if size > THREAD_BYTES:
            return await asyncio.to_thread(self.record_now, d, peer)
        return self.record_now(d, peer)

    def record_now(self, d: dict[str, Any], peer: Any) -> dict[str, Any]:
        """Record a tool result as a data origin for the shim (MCP ``tools/call``
        result) or the LLM proxy (a ``tool_result`` block), in the same flow
        session its decisions use (``flow_session_key``). BadInput when malformed."""
        tool = d.get("tool_name")
        if not isinstance(tool, str) or not 0 < len(tool) <= MAX_ID:
            raise BadInput("tool_name (string) is required")
        if "content" not in d:
            raise BadInput("content (the tool's result) is required")
        source = d.get("source", "shim")
        if source not in _LAYERS:
            raise BadInput("source must be one of hook, proxy, shim")
        for k in ("server_id", "session_id", "flow_session"):
            v = d.get(k)
            if v is not None and (not isinstance(v, str) or not 0 < len(v) <= MAX_ID):
                raise BadInput(f"{k} must be a string of 1-{MAX_ID} characters or null")
        pid = d.get("pid")
        uid = getattr(peer, "uid", None)
        if uid is not None and uid != 0:
            pid = getattr(peer, "pid", None)
        elif pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
            raise BadInput("pid must be an integer or null")
        req = DecisionRequest(
            tool_name=tool,
            server_id=d.get("server_id"),
            source=source,
            session_id=d.get("session_id"),
            pid=pid,
            uid=uid,
            flow_session=d.get("flow_session"),
        )
        key = flow_session_key(req)
        fe = self.flow
        if fe is None or not fe.enabled:
            return {"recorded": False, "session": key, "sensitive": []}
        args = d.get("arguments")
        try:
            res = fe.record(
                key,
                tool,
                req.server_id,
                d["content"],
                source=_LAYERS[source],
                arguments=args if isinstance(args, dict) else None,
            )
        finally:
            if source == "shim" and d.get("call_id") is not None:
                # the result of an allowed tools/call: no longer in flight
                self._done(fe.linked_session(key) or key, self._shim_token(pid, d["call_id"]))
        self.counts["records"] += 1
        return {
            "recorded": res is not None,
            "session": fe.linked_session(key) or key,
            "sensitive": list(res.sensitive) if res is not None else [],
        }

    # ------------------------------------------------------------------ housekeeping

    def expire(self, everything: bool = False) -> int:
        """Write ``flow_summary`` for flow sessions that ended (idle past the
        timeout; ``everything``: all, the daemon is stopping) and forget hook
        bookkeeping of sessions gone quiet. Returns the summaries written."""
        fe = self.flow
        now = time.monotonic()
        policy = self.ctx.store.policy
        timeout = policy.flow.flow_tracking.session_timeout_minutes * 60.0
        for s, t in list(self._selftest_seen.items()):
            if everything or now - t > 60.0:
                del self._selftest_seen[s]
                if fe is not None:
                    fe.forget(s)
        for s, t in list(self._seen.items()):
            if everything or now - t > timeout:
                del self._seen[s]
                self._lost.pop(s, None)
        for s, pend in list(self._outstanding.items()):
            for k, t in list(pend.items()):
                # a hook session gone quiet, or a result older than anyone waits for
                if now - t > OUTSTANDING_MAX_AGE or (s not in self._seen and not k.startswith("shim:")):
                    del pend[k]
            if not pend:
                self._outstanding.pop(s, None)
        if fe is None:
            return 0
        n = 0
        for summary in fe.expire(everything=everything):
            sid = summary.pop("session_id")
            if sid.startswith(SELFTEST_PREFIX):
                continue
            try:
                self.ctx.events.emit(FlowSummary(session_id=sid, **summary))
                n += 1
            except Exception:
                log.exception("cannot emit flow_summary for %s", sid)
        return n

    # ------------------------------------------------------------------ status

    def active_sessions(self) -> int:
        timeout = self.ctx.store.policy.flow.flow_tracking.session_timeout_minutes * 60.0
        now = time.monotonic()
        return sum(1 for t in self._seen.values() if now - t < timeout)

    def coverage(self) -> dict[str, Any]:
        """``security_coverage`` fields of ``status`` (docs/flow.md "Modes"): ``level`` is
        ``full`` while hook sessions are active (hooks are installed and the
        agent used them within the flow session timeout), else ``proxy_only``."""
        policy = self.ctx.store.policy
        enabled = policy.flow.hooks.enabled
        active = self.active_sessions() if enabled else 0
        fe = self.flow
        return {
            "hooks_enabled": enabled,
            "hooks_active": active > 0,
            "hook_sessions": active,
            "last_hook_evaluation_at": self.last_evaluation_at,
            "flow_tracking": bool(fe is not None and fe.enabled),
            "level": "full" if active > 0 else "proxy_only",
            "hooks": dict(self.counts),
            "flow": fe.stats() if fe is not None else None,
            "last_hook_error": self.last_error,
            "last_hook_error_at": self.last_error_at,
        }
