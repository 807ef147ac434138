"""Asking the decision pipeline about a tool call seen in an LLM response.

The daemon owns the registry, pins and rate limits, so every decision goes to
it over the proxy's channel (agent/daemon/channel.py; the daemon also emits
the ``mcp_tool_call_intercepted`` event). To keep text responses free of IPC,
a ``NameGate`` holds the names of the daemon's decision snapshot (polled at
most once a second): a tool name that cannot be an MCP tool is never sent for
a decision, and when nothing could be blocked at all the relay skips parsing.

Data flow (proxy/flow_feed.py, docs/flow.md "Proxy-only mode"): once the
request's flow session has origins, every tool call is decided with
``flow_check`` (Claude Code's own Read, Bash, WebFetch included), after the
session's records in flight have landed; ``can_ask`` is false (``ask``
degrades to ``warn``). Every call of an inspected response is remembered for
results whose call a later request does not repeat.

When the daemon does not answer (stopped, overloaded), ``ToolJudge`` decides
with the same pipeline on that snapshot (agent/core/mcp/offline.py
``SnapshotDecider``, with the flow engine the proxy feeds while the daemon is
away), records the event itself, and says so in its reports: "deciding
offline" is a degraded state in ``agentshctl status``. Only with no snapshot
at all does ``fail_closed`` alone decide (flow checks still run offline).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentsh.agent.core.mcp.offline import SnapshotDecider
from agentsh.agent.core.mcp.types import Decision, DecisionRequest

if TYPE_CHECKING:
    from agentsh.proxy.flow_feed import RequestFlow

log = logging.getLogger("agentsh.proxy")

OFFLINE_HOLD_SECONDS = 5.0
"""After a decision the daemon did not answer, decide offline at once for this
long (instead of waiting for a timeout per call); a successful report or
snapshot poll ends it sooner."""


class Decider(Protocol):
    async def decide(self, req: DecisionRequest) -> Decision: ...


class DaemonDecider:
    """Production decider: the daemon over the proxy's channel (ChannelClient)."""

    def __init__(self, client: Any, timeout: float = 2.0) -> None:
        self._client = client
        self._timeout = timeout

    async def decide(self, req: DecisionRequest) -> Decision:
        body = await self._client.decide(req.to_json(), self._timeout)
        return Decision.from_json(body)


class LocalDecider:
    """In-process decider around the daemon's own pipeline (tests, embedding)."""

    def __init__(self, service: Any) -> None:
        self._service = service

    async def decide(self, req: DecisionRequest) -> Decision:
        d = self._service.decide(req)
        if inspect.isawaitable(d):
            d = await d
        return d


class NameGate:
    """Which tool names could be MCP tools, per the daemon's last snapshot.

    ``names is None`` means "not known" (no snapshot yet, or the daemon has no
    names endpoint): then every tool call is decided.
    """

    __slots__ = ("enforce", "fail_closed", "names", "version")

    def __init__(self, names: frozenset[str] | None = None, fail_closed: bool = False) -> None:
        self.names = names
        self.fail_closed = fail_closed
        self.enforce = True
        self.version: int | str | None = None

    def update(self, snap: dict[str, Any]) -> None:
        self.names = frozenset(str(n) for n in snap.get("names") or ())
        self.fail_closed = bool(snap.get("fail_closed", self.fail_closed))
        self.enforce = bool(snap.get("enforce", True))
        v = snap.get("version")
        self.version = v if isinstance(v, int | str) else None

    @property
    def plain_copy(self) -> bool:
        """No tool call can be blocked: relay without looking at a byte."""
        return self.names is not None and not self.names and not self.fail_closed

    def needs(self, name: str) -> bool:
        names = self.names
        if names is None or self.fail_closed:
            return True
        if name in names:
            return True
        # client-prefixed names: mcp__<server>__<tool> (Claude Code), <server>__<tool>
        if "__" in name:
            return any(p in names for p in name.split("__") if p)
        return False


class SnapshotPoller:
    """Keeps the NameGate and the offline decider fresh: ``op: snapshot`` on the
    channel once a second (an unchanged snapshot is one short answer)."""

    def __init__(
        self,
        client: Any,
        gate: NameGate,
        offline: SnapshotDecider | None = None,
        interval: float = 1.0,
        on_ok: Callable[[], None] | None = None,
        selftests: dict[str, str] | None = None,
    ) -> None:
        self._client = client
        self.gate = gate
        self.offline = offline
        self._interval = interval
        self._on_ok = on_ok
        self.selftests = selftests
        """Filled from the snapshot: selftest token → loopback upstream (agentshctl selftest)."""
        self._task: asyncio.Task[None] | None = None
        self.version: str | None = None
        self.last_ok: float | None = None
        self.errors = 0

    async def refresh(self) -> bool:
        try:
            res = await asyncio.wait_for(self._client.snapshot(self.version), 2.0)
        except Exception:  # daemon down or not answering: keep the last view
            self.errors += 1
            return False
        if self._on_ok is not None:
            self._on_ok()
        snap = res.get("snapshot") if isinstance(res, dict) else None
        if isinstance(snap, dict):
            try:
                if self.offline is not None:
                    self.offline.update(snap)
                self.gate.update(snap)
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                # keep the last view; the snapshot ages, and health says so ("stale")
                self.errors += 1
                log.warning("decision snapshot refused, keeping the last one: %s", e)
                return False
            if self.selftests is not None:
                self.selftests.clear()
                for t in snap.get("selftest") or ():
                    if isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("upstream"), str):
                        self.selftests[t["token"]] = t["upstream"]
            v = snap.get("version")
            self.version = v if isinstance(v, str) else None
        self.last_ok = time.monotonic()
        return True

    async def _run(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(self._interval)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class ToolJudge:
    """Gate + decider + offline path: one verdict per tool call.

    Returns None when the call is not ours to judge (cannot be an MCP tool):
    it passes and no event is written, as for any native tool.
    """

    def __init__(
        self,
        decider: Decider,
        gate: NameGate,
        emit: Callable[[dict[str, Any]], None],
        offline: SnapshotDecider | None = None,
    ) -> None:
        self.decider = decider
        self.gate = gate
        self._emit = emit
        self.offline = offline
        self.daemon_failures = 0
        self.offline_decisions = 0
        self.fail_open = 0
        self.last_offline_at: float | None = None
        self.last_fail_open_at: float | None = None
        self._offline_until = 0.0

    @property
    def is_offline(self) -> bool:
        return time.monotonic() < self._offline_until

    def daemon_answered(self) -> None:
        """Something else reached the daemon: try it again for the next decision."""
        self._offline_until = 0.0

    def daemon_failed(self, why: str) -> None:
        """Something else (a flow record) found the daemon not answering: decide
        offline at once for a while, as after a failed decision."""
        self.daemon_failures += 1
        self._offline_until = time.monotonic() + OFFLINE_HOLD_SECONDS

    def health(self) -> dict[str, Any]:
        return {
            "offline": self.is_offline,
            "offline_decisions": self.offline_decisions,
            "last_offline_at": self.last_offline_at,
            "fail_open": self.fail_open,
            "last_fail_open_at": self.last_fail_open_at,
            "daemon_failures": self.daemon_failures,
        }

    async def judge(
        self,
        *,
        name: str,
        call_id: str,
        arguments: Any,
        request_id: str,
        dialect: str,
        flow: RequestFlow | None = None,
    ) -> Decision | None:
        check = False
        if flow is not None:
            flow.remember(call_id, name, arguments)
            check = flow.active
        if not check and not self.gate.needs(name):
            return None
        if check:
            assert flow is not None
            await flow.settled()
        req = DecisionRequest(
            tool_name=name,
            arguments=arguments,
            source="proxy",
            request_id=request_id,
            dialect=dialect,
            tool_call_id=call_id,
            flow_session=flow.key if flow is not None else None,
            flow_check=check,
            can_ask=False,
        )
        why = "offline"
        if not self.is_offline:
            try:
                return await self.decider.decide(req)
            except Exception as e:  # unreachable, timed out, refused: decide without it
                self.daemon_failures += 1
                self._offline_until = time.monotonic() + OFFLINE_HOLD_SECONDS
                why = e.__class__.__name__
                log.warning("agentshd did not decide tool %r (%s); deciding offline", name, why)
        return self._decide_offline(req, why)

    def _decide_offline(self, req: DecisionRequest, why: str) -> Decision | None:
        name = req.tool_name
        self.last_offline_at = time.time()
        off = self.offline
        if off is not None and (off.version is not None or req.flow_check):
            self.offline_decisions += 1
            d = off.decide(req)
            if not d.known and not d.blocked and not d.reason:
                return None  # not an MCP tool by the last snapshot, no flow: passes, like online
            d.reason = f"{d.reason} (decided offline: agentshd unavailable)" if d.reason else "decided offline: agentshd unavailable"
        else:
            closed = self.gate.fail_closed
            d = Decision(
                action="block" if closed else "allow",
                reason=f"agentshd unavailable ({why}) and no decision snapshot, fail {'closed' if closed else 'open'}",
                known=False,
                tool_name=name,
            )
            if not closed:
                self.fail_open += 1
                self.last_fail_open_at = self.last_offline_at
        # The daemon could not record this decision; record it ourselves
        # (handed in or spooled, never lost) so no block goes unlogged.
        self._emit(
            {
                "type": "mcp_tool_call_intercepted",
                "source": "proxy",
                "request_id": req.request_id,
                "dialect": req.dialect,
                "tool_name": name,
                "tool_call_id": req.tool_call_id,
                "input": req.arguments,
                "server_id": d.server_id,
                "server_type": d.server_type,
                "tool_hash": d.tool_hash,
                "action": d.action,
                "reason": d.reason,
                **_flow_fields(d),
            }
        )
        return d


def _flow_fields(d: Decision) -> dict[str, Any]:
    """The flow verdict of an offline decision, for its event (as the daemon's)."""
    f = d.flow
    if not f or (f.get("flow_type") is None and f.get("action") == "allow"):
        return {}
    return {
        "flow_type": f.get("flow_type"),
        "risk_level": f.get("risk_level"),
        "flow_decision": f.get("action"),
        "coverage": f.get("coverage"),
    }
