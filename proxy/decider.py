"""Asking the decision pipeline about a tool call seen in an LLM response.

The daemon owns the registry, pins and rate limits, so every decision is one
POST /v1/mcp/decide (the daemon also emits the ``mcp_tool_call_intercepted``
event). To keep text responses free of IPC, a ``NameGate`` holds the daemon's
list of MCP tool names (GET /v1/mcp/names, polled at most once a second): a
tool name that cannot be an MCP tool is never sent for a decision, and when
nothing could be blocked at all the relay skips parsing entirely.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from agentsh.agent.mcp.types import Decision, DecisionRequest

log = logging.getLogger("agentsh.proxy")


class Decider(Protocol):
    async def decide(self, req: DecisionRequest) -> Decision: ...


class DaemonDecider:
    """Production decider: the daemon's decision channel (agent/daemon/decide_channel.py)."""

    def __init__(self, client: Any, timeout: float = 5.0) -> None:
        self._client = client
        self._timeout = timeout

    async def decide(self, req: DecisionRequest) -> Decision:
        body = await asyncio.wait_for(self._client.decide(req.to_json()), self._timeout)
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
        self.version: int | None = None

    def update(self, snap: dict[str, Any]) -> None:
        self.names = frozenset(str(n) for n in snap.get("names") or ())
        self.fail_closed = bool(snap.get("fail_closed", self.fail_closed))
        self.enforce = bool(snap.get("enforce", True))
        v = snap.get("version")
        self.version = v if isinstance(v, int) else None

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


class NamesPoller:
    """Keeps a NameGate fresh: GET /v1/mcp/names once a second (and on demand)."""

    def __init__(self, client: Any, gate: NameGate, interval: float = 1.0) -> None:
        self._client = client
        self.gate = gate
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self.last_ok: float | None = None
        self.errors = 0

    async def refresh(self) -> bool:
        try:
            snap = await asyncio.wait_for(self._client.get("/v1/mcp/names"), 2.0)
        except Exception as e:  # daemon down, endpoint missing, timeout: keep the last view
            self.errors += 1
            if getattr(e, "status", None) == 404:
                self.gate.names = None
            return False
        if isinstance(snap, dict):
            self.gate.update(snap)
            self.last_ok = time.monotonic()
            return True
        return False

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


def blocked_text(name: str, reason: str) -> str:
    """The replacement text the agent (and the model) sees for a blocked call."""
    if reason:
        return f"[agentsh] Tool '{name}' blocked by policy: {reason}"
    return f"[agentsh] Tool '{name}' blocked by policy"


class ToolJudge:
    """Gate + decider + fail-open/closed: one verdict per tool call.

    Returns None when the call is not ours to judge (cannot be an MCP tool):
    it passes and no event is written, as for any native tool.
    """

    def __init__(
        self,
        decider: Decider,
        gate: NameGate,
        emit: Callable[[dict[str, Any]], None],
    ) -> None:
        self.decider = decider
        self.gate = gate
        self._emit = emit
        self.daemon_failures = 0

    async def judge(
        self,
        *,
        name: str,
        call_id: str,
        arguments: Any,
        request_id: str,
        dialect: str,
    ) -> Decision | None:
        if not self.gate.needs(name):
            return None
        req = DecisionRequest(
            tool_name=name,
            arguments=arguments,
            source="proxy",
            request_id=request_id,
            dialect=dialect,
            tool_call_id=call_id,
        )
        try:
            return await self.decider.decide(req)
        except Exception as e:  # the daemon is unreachable or failed: policy says what to do
            self.daemon_failures += 1
            closed = self.gate.fail_closed
            why = e.__class__.__name__
            log.warning("decision for tool %r failed (%s); failing %s", name, why, "closed" if closed else "open")
            d = Decision(
                action="block" if closed else "allow",
                reason=f"agentshd unavailable ({why}), fail {'closed' if closed else 'open'}",
                known=False,
                tool_name=name,
            )
            # The daemon could not record this decision; record it ourselves
            # (spooled if the daemon stays down) so no block goes unlogged.
            if closed or (self.gate.names is not None and self.gate.needs(name)):
                self._emit(
                    {
                        "type": "mcp_tool_call_intercepted",
                        "source": "proxy",
                        "request_id": request_id,
                        "dialect": dialect,
                        "tool_name": name,
                        "tool_call_id": call_id,
                        "input": arguments,
                        "server_id": "",
                        "server_type": "",
                        "tool_hash": "",
                        "action": d.action,
                        "reason": d.reason,
                    }
                )
            return d
