"""Event types: the one JSONL event stream's schema.

Every event has the common envelope (``id``, ``timestamp``, ``type``,
``source``, ``host``, ``session_id`` and process fields where known) plus the
fields of its type, named as in the seed designs. ``agentshctl events schema``
prints the JSON Schema generated from these models; docs/events.md describes
them for people.

Producers build a model and hand it to ``EventWriter.emit``; the writer fills
``id``, ``timestamp`` and ``host`` when empty. Events that arrive over the
control socket (from shims and the proxy) are validated with ``parse_event``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Source = Literal["daemon", "proxy", "shim", "bpf", "hook", "ctl"]
ServerType = Literal["stdio", "http", "sse", ""]
Action = Literal["allow", "block"]


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = ""
    timestamp: str = ""
    type: str
    source: Source = "daemon"
    host: str = ""
    session_id: str | None = None
    # process fields, where known
    pid: int | None = None
    ppid: int | None = None
    uid: int | None = None
    username: str | None = None
    comm: str | None = None
    exe: str | None = None
    cmdline: list[str] | None = None
    sender_timestamp: str | None = None
    """Events handed in by other processes: the time the sender claimed (the
    envelope's ``id``, ``host`` and ``timestamp`` are always the daemon's)."""


# ------------------------------------------------------------------ lifecycle


class DaemonStarted(Event):
    type: Literal["daemon_started"] = "daemon_started"
    version: str
    config_dir: str
    socket: str
    events_path: str


class DaemonStopping(Event):
    type: Literal["daemon_stopping"] = "daemon_stopping"
    reason: str
    uptime_seconds: float


class ComponentExited(Event):
    type: Literal["component_exited"] = "component_exited"
    component: str
    exit_code: int | None = None
    signal: str | None = None
    restarts: int = 0
    will_restart: bool = False
    next_restart_in_seconds: float | None = None


class PolicyLoaded(Event):
    type: Literal["policy_loaded"] = "policy_loaded"
    hash: str
    files: list[str]
    trigger: str = "start"  # start|sighup|api|watch


class PolicyRejected(Event):
    type: Literal["policy_rejected"] = "policy_rejected"
    errors: list[str]
    files: list[str]
    trigger: str = "start"
    kept_hash: str | None = None


class EventsDropped(Event):
    type: Literal["events_dropped"] = "events_dropped"
    dropped_total: int
    dropped_since_last: int


class EventsRotated(Event):
    type: Literal["events_rotated"] = "events_rotated"
    reason: str  # size|reopen
    path: str


class EventsTornTail(Event):
    """The log did not end with a newline when the writer opened it (a crash in
    the middle of a write): the partial last line was cut off."""

    type: Literal["events_torn_tail"] = "events_torn_tail"
    path: str
    bytes_removed: int
    fragment_head: str = ""
    """The start of the removed fragment (at most 200 bytes)."""


class AdminAction(Event):
    """An administrative act on the admin socket (anything that can lower
    enforcement), with the caller's credentials from SO_PEERCRED."""

    type: Literal["admin_action"] = "admin_action"
    action: str
    """policy_reload | mcp_approve | bpf_detach | events_reopen | selftest ..."""
    outcome: Literal["ok", "rejected", "error"] = "ok"
    detail: dict[str, Any] = Field(default_factory=dict)
    """What changed (e.g. the approved tools with their hashes, the new policy hash)."""


# ------------------------------------------------------------------ MCP (seed 001)


class DetectionMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    position: int
    context: str = ""


class DetectionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    category: str
    severity: Literal["low", "medium", "high", "critical"]
    matches: list[DetectionMatch]
    field: str
    why: str = ""
    """One line: the order and its object, e.g. "order 'must run' → shell command `sudo -l` (privilege ...)"."""


class FieldChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str
    previous: str
    new: str


class MCPToolSeen(Event):
    type: Literal["mcp_tool_seen"] = "mcp_tool_seen"
    server_id: str
    server_type: ServerType = "stdio"
    server_addr: str | None = None
    tool_name: str
    tool_hash: str
    description: str | None = None
    status: Literal["new", "unchanged", "changed"]
    detections: list[DetectionResult] = Field(default_factory=list)
    max_severity: str | None = None
    blocked: bool = False


class MCPToolChanged(Event):
    type: Literal["mcp_tool_changed"] = "mcp_tool_changed"
    server_id: str
    tool_name: str
    previous_hash: str
    new_hash: str
    changes: list[FieldChange]
    detections: list[DetectionResult] = Field(default_factory=list)
    action: Literal["block", "alert", "allow"] = "alert"


class MCPDetection(Event):
    type: Literal["mcp_detection"] = "mcp_detection"
    server_id: str
    tool_name: str
    detection: DetectionResult
    action: Literal["alert", "warn", "block"]


class MCPToolShadowed(Event):
    type: Literal["mcp_tool_shadowed"] = "mcp_tool_shadowed"
    tool_name: str
    server_id: str
    other_server_ids: list[str]


# ------------------------------------------------------------------ MCP calls (seed 000)


class MCPToolCalled(Event):
    """A tools/call seen by a shim on a server's stdin, with the decision taken."""

    type: Literal["mcp_tool_called"] = "mcp_tool_called"
    server_id: str
    tool_name: str
    jsonrpc_id: Any = None
    input: Any = None
    action: Action = "allow"
    reason: str | None = None
    input_truncated: bool | None = None
    """``input`` is a bounded copy: the call's arguments were too big to ship whole."""
    server_type: ServerType = "stdio"
    tool_hash: str | None = None


class MCPToolCallIntercepted(Event):
    type: Literal["mcp_tool_call_intercepted"] = "mcp_tool_call_intercepted"
    request_id: str
    dialect: Literal["anthropic", "openai", "openai-responses"]
    tool_name: str
    tool_call_id: str
    input: Any = None
    server_id: str
    server_type: ServerType
    server_addr: str | None = None
    tool_hash: str
    action: Action
    reason: str | None = None
    input_truncated: bool | None = None
    """``input`` is a bounded copy: the call's arguments were too big to ship whole."""


class MCPResultInjection(Event):
    """A tool result (text a tool returned: an issue body, a web page, a file) that
    carries instructions addressed to the AI agent (indirect prompt injection)."""

    type: Literal["mcp_result_injection"] = "mcp_result_injection"
    server_id: str | None = None
    tool_name: str
    call_id: str | None = None
    """The JSON-RPC id (shim) or the tool_use id (proxy) of the call that returned it."""
    excerpt: str = ""
    """The sentence that carries the injection (at most 300 characters)."""
    detections: list[DetectionResult] = Field(default_factory=list)
    max_severity: Literal["low", "medium", "high", "critical"] | None = None
    action: Literal["alert", "block"] = "alert"


class MCPNetworkConnection(Event):
    type: Literal["mcp_network_connection"] = "mcp_network_connection"
    remote_addr: str
    server_id: str
    server_type: ServerType
    action: Action
    protocol: Literal["tcp", "udp"] = "tcp"
    family: Literal["ipv4", "ipv6"] = "ipv4"
    phase: Literal["connect", "existing", "sendmsg"] = "connect"
    cgroup_id: int | None = None
    tag: str | None = None


class NetworkConnect(Event):
    """Audit-everything mode (``network.trace_all``): every connect() with its result."""

    type: Literal["network_connect"] = "network_connect"
    remote_addr: str
    family: Literal["ipv4", "ipv6", "unix", "other"]
    result: int
    cgroup_id: int | None = None


class BPFLostEvents(Event):
    type: Literal["bpf_lost_events"] = "bpf_lost_events"
    lost_total: int
    lost_since_last: int


class MCPServerDiscovered(Event):
    type: Literal["mcp_server_discovered"] = "mcp_server_discovered"
    server_id: str
    server_type: ServerType
    server_addr: str
    tools: int
    error: str | None = None
    tls_fingerprint_ok: bool | None = None


# ------------------------------------------------------------------ shims


class ShimRegistered(Event):
    type: Literal["shim_registered"] = "shim_registered"
    server_id: str
    command: list[str]


class ShimExited(Event):
    type: Literal["shim_exited"] = "shim_exited"
    server_id: str
    exit_code: int | None = None
    calls: int = 0
    blocks: int = 0


class ProtocolError(Event):
    """Malformed JSON-RPC / SSE seen and forwarded unchanged (sampled, with counts)."""

    type: Literal["protocol_error"] = "protocol_error"
    layer: Literal["shim", "proxy"]
    detail: str
    count: int = 1
    server_id: str | None = None


# ------------------------------------------------------------------ LLM proxy


class LLMRequest(Event):
    type: Literal["llm_request"] = "llm_request"
    request_id: str
    provider: Literal["anthropic", "openai", "unknown"]
    dialect: str | None = None
    model: str | None = None
    path: str
    status: int
    streaming: bool
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float
    request_bytes: int
    response_bytes: int
    tool_calls: int = 0
    tool_calls_blocked: int = 0
    redactions: dict[str, int] = Field(default_factory=dict)
    malformed_lines: int = 0
    error: str | None = None


# ------------------------------------------------------------------ hooks / flow (seed 002)


class HookEvaluation(Event):
    type: Literal["hook_evaluation"] = "hook_evaluation"
    hook_event: str
    tool_name: str
    decision: Literal["allow", "warn", "ask", "deny"]
    reason: str | None = None
    classification: str | None = None
    flow_type: str | None = None
    risk_level: str | None = None


class FlowSummary(Event):
    type: Literal["flow_summary"] = "flow_summary"
    duration_seconds: float
    total_origins: int
    total_flow_edges: int
    flow_type_distribution: dict[str, int] = Field(default_factory=dict)
    risk_level_distribution: dict[str, int] = Field(default_factory=dict)
    linked_mcp_sessions: list[str] = Field(default_factory=list)
    tools_used: list[str] = Field(default_factory=list)


EVENT_TYPES: tuple[type[Event], ...] = (
    DaemonStarted,
    DaemonStopping,
    ComponentExited,
    PolicyLoaded,
    PolicyRejected,
    EventsDropped,
    EventsRotated,
    EventsTornTail,
    AdminAction,
    MCPToolSeen,
    MCPToolChanged,
    MCPDetection,
    MCPToolShadowed,
    MCPToolCalled,
    MCPToolCallIntercepted,
    MCPResultInjection,
    MCPNetworkConnection,
    NetworkConnect,
    BPFLostEvents,
    MCPServerDiscovered,
    ShimRegistered,
    ShimExited,
    ProtocolError,
    LLMRequest,
    HookEvaluation,
    FlowSummary,
)

AnyEvent = Annotated[
    DaemonStarted
    | DaemonStopping
    | ComponentExited
    | PolicyLoaded
    | PolicyRejected
    | EventsDropped
    | EventsRotated
    | EventsTornTail
    | AdminAction
    | MCPToolSeen
    | MCPToolChanged
    | MCPDetection
    | MCPToolShadowed
    | MCPToolCalled
    | MCPToolCallIntercepted
    | MCPResultInjection
    | MCPNetworkConnection
    | NetworkConnect
    | BPFLostEvents
    | MCPServerDiscovered
    | ShimRegistered
    | ShimExited
    | ProtocolError
    | LLMRequest
    | HookEvaluation
    | FlowSummary,
    Field(discriminator="type"),
]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)
TYPE_NAMES: frozenset[str] = frozenset(
    t.model_fields["type"].default for t in EVENT_TYPES
)


FOREIGN_TYPES: dict[str, frozenset[str]] = {
    "shim": frozenset(
        {
            "mcp_tool_seen",
            "mcp_tool_changed",
            "mcp_detection",
            "mcp_tool_shadowed",
            "mcp_tool_called",
            "mcp_result_injection",
            "shim_registered",
            "shim_exited",
            "protocol_error",
        }
    ),
    "proxy": frozenset(
        {"llm_request", "mcp_tool_call_intercepted", "mcp_result_injection", "protocol_error"}
    ),
    "hook": frozenset({"hook_evaluation"}),
    "ctl": frozenset(),
}
"""The event types each unprivileged layer emits: all a non-root sender may hand in."""
FOREIGN_SOURCES: frozenset[str] = frozenset(FOREIGN_TYPES)


def vouch(ev: Event, uid: int) -> bool:
    """Admit an event that a process other than the daemon handed in (API post,
    decision channel or spool file) on behalf of ``uid``.

    The envelope becomes the daemon's: ``id``, ``host`` and ``timestamp`` are
    assigned when it is written (the sender's claimed time is kept as
    ``sender_timestamp``). Root may hand in any type; anyone else only the
    types of an unprivileged layer (``FOREIGN_TYPES``) under that layer's
    source, and the event carries their uid: a group member cannot forge
    daemon, BPF, policy or admin events under any source.
    """
    if ev.timestamp:
        ev.sender_timestamp = ev.sender_timestamp or ev.timestamp
    ev.id = ""
    ev.host = ""
    ev.timestamp = ""
    if uid == 0:
        if ev.uid is None:
            ev.uid = 0
        return True
    if ev.type not in FOREIGN_TYPES.get(ev.source, ()):
        return False
    ev.uid = uid
    return True


def parse_event(data: dict[str, Any]) -> Event:
    """Validate an event that came from outside the daemon (shim, proxy, spool)."""
    return _ADAPTER.validate_python(data)


def json_schema() -> dict[str, Any]:
    return _ADAPTER.json_schema()
