"""Local decisions while agentshd is unreachable.

The shim reads the policy from the config directory itself and runs the SAME
code the daemon runs (agentsh.agent.mcp.service.MCPService: detector,
registry, decision engine) on an in-memory registry, with events going to
the spool instead of the daemon. What that can and cannot do
(docs/shim.md, "Offline"):

- server/tool allow/deny rules, ``fail_closed`` for tools this server has
  not listed, detection on tools/list (and ``on_detection: block``) work as
  with the daemon;
- pins are per daemon (its SQLite registry): offline, a tool is pinned at the
  first tools/list this shim sees, so a rug pull across runs is only caught
  by the daemon, one within this process's lifetime is caught locally;
- rate limits are per daemon: offline each shim has its own bucket (same
  ``calls_per_minute``/``burst``), so the host-wide budget is not enforced;
- approvals are the daemon's: an approved tool that is flagged or changed is
  blocked offline when the policy says block.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentsh.agent.events.models import Event
from agentsh.agent.mcp.service import MCPService
from agentsh.agent.mcp.types import Decision, DecisionRequest
from agentsh.agent.policy.loader import LoadedPolicy, PolicyError, load_dir, load_embedded

__all__ = ["LocalDecider", "event_json", "load_policy"]

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
    ) -> None:
        self.loaded = loaded
        self._emit = emit
        self.server_id = server_id
        self.session_id = session_id
        self.pid = pid
        self._svc: MCPService | None = None
        self._lock = threading.Lock()
        self._local = threading.local()  # per-thread 'mute events' flag
        self.decisions = 0

    def _service(self) -> MCPService:
        with self._lock:
            if self._svc is None:
                policy = self.loaded.policy.model_copy(deep=True)
                policy.mcp.inspection.registry.persistent = False
                self._svc = MCPService(policy, "/nonexistent", self._on_event)
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
            )
        )
