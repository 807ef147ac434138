"""Plain data types shared by every MCP enforcement layer.

These are the contract between the decision pipeline (agent/core/mcp/decision.py,
runs in the daemon) and its callers: the shim and the LLM proxy (over the
control socket) and the BPF layer (in the daemon).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentsh.agent.core.vocab import Action, CallSource
from agentsh.agent.core.vocab import MaybeServerType as ServerType

__all__ = ["Action", "CallSource", "Decision", "DecisionRequest", "ServerType"]


@dataclass(slots=True)
class DecisionRequest:
    """One question to the decision pipeline: may this tool call go ahead?"""

    tool_name: str
    """As the caller saw it: a bare MCP tool name (shim), or the name in the LLM
    response (proxy), which may be a client-prefixed name like
    ``mcp__<server>__<tool>`` (Claude Code)."""
    server_id: str | None = None
    """Known to the shim (its own server); None from the proxy."""
    arguments: Any = None
    source: CallSource = "shim"
    session_id: str | None = None
    # proxy context, carried into the mcp_tool_call_intercepted event
    request_id: str | None = None
    dialect: str | None = None
    """The proxy's name of the API dialect (an identifier, agent/core/vocab.py
    ``IDENT_PATTERN``); kept as given, required for ``source="proxy"``."""
    tool_call_id: str | None = None
    # shim context, carried into the mcp_tool_called event
    jsonrpc_id: Any = None
    pid: int | None = None
    emit: bool = True
    """Emit the decision event from the daemon (the normal case)."""
    arguments_truncated: bool | None = None
    """The caller clipped ``arguments`` (too big to ship whole; agent/core/client_sync.py)."""
    uid: int | None = None
    """Set by the daemon from the caller's credentials (never read from a request)."""
    # data-flow step (docs/flow.md "Modes")
    flow_session: str | None = None
    """The flow session this call belongs to: the agent's session id (Claude
    Code's, from a hook or the LLM request). None: the daemon derives the MCP
    session from the caller (``session_id``, else the shim's agent process)."""
    can_ask: bool = False
    """Someone can answer "ask" (a hook-enabled agent); else "ask" degrades to "warn"."""
    flow_check: bool = False
    """Run the flow step for this call even when it is not an MCP tool (the
    proxy asking about Claude Code's own tools, a hook)."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(slots=True)
class Decision:
    action: Action
    reason: str = ""
    server_id: str = ""
    server_type: ServerType = ""
    server_addr: str = ""
    tool_hash: str = ""
    known: bool = True
    """False when the tool is not in the registry (then: not an MCP tool, unless fail_closed)."""
    tool_name: str = ""
    """The MCP tool name resolved in the registry (prefix stripped)."""
    alerts: list[str] = field(default_factory=list)
    """Non-blocking findings on an allowed call (e.g. pin changed, on_change=alert)."""
    flow: dict[str, Any] | None = None
    """The data-flow step's verdict when it ran (``action`` allow/warn/ask/deny,
    ``flow_type``, ``risk_level``, ``reason``, ``coverage``, ``session``,
    classification and matched origins); None when it did not run."""

    @property
    def blocked(self) -> bool:
        return self.action == "block"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Decision:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
