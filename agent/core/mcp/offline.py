"""Decisions while agentshd is unreachable: one offline path for every layer.

Both deciders run the SAME decision pipeline the daemon runs
(agentsh.agent.core.mcp.decision.DecisionEngine), with the policy a layer holds:

* ``LocalDecider`` (the shim): the whole MCPService — detector, registry,
  engine — on an in-memory registry fed by the tools/list the shim itself
  sees, events going to the shim's spool.
* ``SnapshotDecider`` (the LLM proxy): the engine on a registry rebuilt from
  the daemon's last decision snapshot (listed tools with hashes, pins,
  approvals, detections; channel ``op: snapshot``), so server/tool rules,
  pins and detection blocks hold offline, and ``fail_closed`` for names the
  snapshot does not know.

What that can and cannot do (docs/shim.md "Offline", docs/proxy.md "When the
daemon is unreachable"):

- server/tool allow/deny rules, ``fail_closed`` for tools this server has
  not listed, detection on tools/list (and ``on_detection: block``) work as
  with the daemon;
- pins are per daemon (its SQLite registry): offline, a tool is pinned at the
  first tools/list this shim sees, so a rug pull across runs is only caught
  by the daemon, one within this process's lifetime is caught locally;
- rate limits are per daemon: offline each shim has its own bucket (same
  ``calls_per_minute``/``burst``), so the host-wide budget is not enforced;
- approvals are the daemon's: an approved tool that is flagged or changed is
  blocked offline when the policy says block;
- data flow (docs/flow.md "Modes"): both deciders run the flow step on a
  ``FlowEngine`` of their own. The shim's holds no origins (a flow crosses
  servers, so shims; a single server's round trip is no flow): offline it
  still denies suspicious endpoints, credentials in arguments going to an
  external server, sensitive files uploaded. The proxy's is fed by the
  proxy itself while the daemon is away (proxy/flow_feed.py: every
  ``tool_result`` of the conversations it relays), so offline it also
  catches data read earlier in those conversations.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentsh.agent.core.events.models import Event
from agentsh.agent.core.mcp.decision import DecisionEngine
from agentsh.agent.core.mcp.registry import ToolRegistry
from agentsh.agent.core.mcp.service import MCPService
from agentsh.agent.core.mcp.types import Decision, DecisionRequest
from agentsh.agent.core.policy.loader import LoadedPolicy, PolicyError, load_dir, load_embedded
from agentsh.agent.core.policy.schema import Policy

__all__ = ["LocalDecider", "SnapshotDecider", "event_json", "load_policy"]

log = logging.getLogger("agentsh.shim")


def load_policy(config_dir: str | Path) -> tuple[LoadedPolicy, str | None]:
    """The policy of ``config_dir``, else the embedded default (with the error)."""
    try:
        return load_dir(config_dir), None
    except PolicyError as e:
        return load_embedded(), "; ".join(e.errors)
    except OSError as e:
        return load_embedded(), str(e)


def _now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def event_json(ev: Event) -> dict[str, Any]:
    """An event as the control API / spool carries it (timestamp set now)."""
    if not ev.timestamp:
        ev.timestamp = _now_rfc3339()
    return ev.model_dump(mode="json", exclude_none=True)


class LocalDecider:
    """MCPService on an in-memory registry; built on first use (policy load costs ms)."""

    def __init__(
        self,
        loaded: LoadedPolicy,
        emit: Callable[[dict[str, Any]], None],
        server_id: str,
        session_id: str | None,
        pid: int,
        flow_session: str | None = None,
    ) -> None:
        self.loaded = loaded
        self._emit = emit
        self.server_id = server_id
        self.session_id = session_id
        self.pid = pid
        self.flow_session = flow_session
        self._svc: MCPService | None = None
        self._lock = threading.Lock()
        self._local = threading.local()  # per-thread 'mute events' flag
        self.decisions = 0

    def _service(self) -> MCPService:
        with self._lock:
            if self._svc is None:
                from agentsh.agent.core.flow.engine import FlowEngine  # only when deciding offline

                policy = self.loaded.policy.model_copy(deep=True)
                policy.mcp.inspection.registry.persistent = False
                self._svc = MCPService(policy, "/nonexistent", self._on_event, flow=FlowEngine(policy))
            return self._svc

    def _on_event(self, ev: Event) -> bool:
        if getattr(self._local, "mute", False):
            return True
        if ev.source == "daemon":
            ev.source = "shim"
        self._emit(event_json(ev))
        return True

    def register_tools(
        self, tools: list[dict[str, Any]], complete: bool, quiet: bool = False
    ) -> list[dict[str, Any]]:
        """Inspect + register locally; returns per-tool verdict dicts like the daemon's."""
        svc = self._service()
        with self._lock:
            self._local.mute = quiet
            try:
                verdicts = svc.register_tools(
                    self.server_id,
                    "stdio",
                    None,
                    tools,
                    session_id=self.session_id,
                    source="shim",
                    complete=complete,
                    pid=self.pid,
                )
            finally:
                self._local.mute = False
        return [v.to_json() for v in verdicts]

    def decide(self, tool: str, arguments: Any, jsonrpc_id: Any) -> Decision:
        self.decisions += 1
        return self._service().decide(
            DecisionRequest(
                tool_name=tool,
                server_id=self.server_id,
                arguments=arguments,
                source="shim",
                session_id=self.session_id,
                jsonrpc_id=jsonrpc_id,
                pid=self.pid,
                flow_session=self.flow_session,
            )
        )


class SnapshotDecider:
    """The decision pipeline on the daemon's last decision snapshot.

    ``update(snapshot)`` rebuilds the registry when the daemon's snapshot
    changes; ``decide(req)`` returns the Decision the daemon would have taken
    for the tools it had listed then, without emitting (the caller records
    the event itself, so it reaches the log once the daemon is back). Rate
    limits are per process offline (a bucket of this process's own).
    """

    def __init__(self, policy: Policy) -> None:
        from agentsh.agent.core.flow.engine import FlowEngine

        self.policy = policy
        self.version: str | None = None
        self.flow = FlowEngine(policy)
        """Flow state of the proxy's own while the daemon is away (fed by proxy/flow_feed.py)."""
        self.engine = DecisionEngine(ToolRegistry(None), policy, emit=None, flow=self.flow)
        self.decisions = 0

    def update_policy(self, policy: Policy) -> None:
        self.policy = policy
        self.engine.update_policy(policy)
        self.flow.update_policy(policy)

    def update(self, snapshot: dict[str, Any]) -> None:
        reg = ToolRegistry.from_snapshot(snapshot.get("tools") or ())
        engine = DecisionEngine(reg, self.policy, emit=None, flow=self.flow)
        engine.ratelimiter = self.engine.ratelimiter  # keep the buckets across snapshots
        self.engine = engine
        self.version = snapshot.get("version")

    def decide(self, req: DecisionRequest) -> Decision:
        self.decisions += 1
        return self.engine.decide(dataclasses.replace(req, emit=False))
