"""Event types: the one JSONL event stream's schema.

Every event has the common envelope (``id``, ``timestamp``, ``type``,
``source``, ``host``, ``session_id`` and process fields where known) plus the
fields of its type (docs/events.md). ``agentshctl events schema``
prints the JSON Schema generated from these models; docs/events.md describes
them for people.

Producers build a model and hand it to ``EventWriter.emit``; the writer fills
``id``, ``timestamp`` and ``host`` when empty. Events that arrive over the
control socket (from shims and the proxy) are validated with ``parse_event``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from agentsh.agent.core.vocab import (
    Action,
    Coverage,
    DetectionAction,
    Dialect,
    EventSeverity,
    FlowDecision,
    MaybeServerType,
    PinAction,
    Provider,
    RiskLevel,
    Severity,
    Source,
)

ServerType = MaybeServerType

# Strict on intake (extra="forbid": a sender's typo or forged field is an error);
# the published schema is the same models rendered open (agent/core/events/contract.py).
# Attribute docstrings are the field descriptions of the schema and of docs/events.md.
_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)
_FROZEN = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))")


def rfc3339_utc(v: str) -> str:
    """``v`` if it is an RFC 3339 time in UTC (``Z``, kept as written); another
    offset is converted to UTC; anything else (no zone, another format, a day
    or hour that does not exist) is a ValueError."""
    m = _RFC3339.fullmatch(v)
    bad = ValueError(f"not an RFC 3339 time with a zone: {v[:40]!r}")
    if m is None:
        raise bad
    date, clock, frac, zone, sign, hh, mm = m.groups()
    try:
        t = datetime.strptime(f"{date}T{clock}", "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise bad from None
    if zone in ("Z", "z"):
        return f"{date}T{clock}{frac or ''}Z"
    if int(hh) > 23 or int(mm) > 59:
        raise bad
    off = timedelta(hours=int(hh), minutes=int(mm))
    t = t - off if sign == "+" else t + off
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (frac or "") + "Z"


class Event(BaseModel):
    """The envelope every event carries (docs/events.md, "The envelope")."""

    model_config = _CONFIG

    id: str = ""
    """Unique event id (26 hex characters: writer start time + random + sequence): unique across daemon restarts, sortable within one daemon run. Assigned by the daemon."""
    timestamp: str = ""
    """RFC 3339 UTC with microseconds, e.g. `2026-11-22T10:00:00.123456Z`: when the daemon accepted the event. Assigned by the daemon."""
    type: str
    """The event type: one of the types below (new ones are added over time)."""
    source: Source = "daemon"
    """The component that saw it: `daemon`, `proxy`, `shim`, `bpf`, `hook` or `ctl`."""
    host: str = ""
    """Host name of the machine. Assigned by the daemon."""
    severity: EventSeverity = "info"
    """`info`, `low`, `medium`, `high` or `critical`, from the type's rule (docs/events.md, "Severity"). Assigned by the daemon's writer: a value set by a producer or a sender is replaced."""
    session_id: str | None = None
    """The agent session, when known; joins the events of one session."""
    pid: int | None = None
    """Process id of the process concerned, where known (for events handed in without one: the sender's, from the kernel)."""
    ppid: int | None = None
    """Its parent's process id."""
    uid: int | None = None
    """Its user id (for events handed in by a non-root sender: the sender's, from the kernel)."""
    username: str | None = None
    """The user name of `uid`."""
    comm: str | None = None
    """Its command name (the kernel's `comm`, at most 15 characters)."""
    exe: str | None = None
    """Path of its executable."""
    cmdline: list[str] | None = None
    """Its command line, as a list of strings."""
    sender_timestamp: str | None = None
    """Events handed in by a shim or the proxy: the time the sender says it happened (RFC 3339 UTC; a spooled event can be minutes older than its `timestamp`). The envelope's `id`, `host` and `timestamp` are always the daemon's."""

    @field_validator("timestamp", "sender_timestamp")
    @classmethod
    def _rfc3339(cls, v: str | None) -> str | None:
        return rfc3339_utc(v) if v else v


# ------------------------------------------------------------------ lifecycle


class DaemonStarted(Event):
    """The daemon is up: policy loaded, event writer and sockets ready."""

    type: Literal["daemon_started"] = "daemon_started"
    version: str
    """The agentsh version."""
    config_dir: str
    """The policy directory (`agentsh.yaml` and `policy.d/`)."""
    socket: str
    """The control socket's path."""
    events_path: str
    """The event log's path."""


class DaemonStopping(Event):
    """Orderly shutdown began (SIGTERM, `systemctl stop`). The event log is drained
    after this event, so it is normally among the last lines of a run."""

    type: Literal["daemon_stopping"] = "daemon_stopping"
    reason: str
    """Why it stops (`signal`, or what asked for the stop)."""
    uptime_seconds: float
    """Seconds since the daemon started."""


class ComponentExited(Event):
    """A supervised child (e.g. the LLM proxy) exited."""

    type: Literal["component_exited"] = "component_exited"
    component: str
    """The child's name (`llm-proxy`)."""
    exit_code: int | None = None
    """Its exit status (absent when a signal ended it)."""
    signal: str | None = None
    """The signal that ended it (`SIGKILL`, ...)."""
    restarts: int = 0
    """Restarts so far."""
    will_restart: bool = False
    """Whether the supervisor starts it again (false: stopped on purpose, or its restart budget is used up)."""
    next_restart_in_seconds: float | None = None
    """The backoff before the next start."""


class PolicyLoaded(Event):
    """A policy became active."""

    type: Literal["policy_loaded"] = "policy_loaded"
    hash: str
    """Hash of the loaded files."""
    files: list[str]
    """The policy files, in merge order."""
    trigger: str = "start"
    """What loaded it: `start`, `sighup`, `api`, `watch`."""


class PolicyRejected(Event):
    """A new policy failed validation and was not applied: the last good one stays in force."""

    type: Literal["policy_rejected"] = "policy_rejected"
    errors: list[str]
    """Each `file:line:column: message`."""
    files: list[str]
    """The policy files that were read."""
    trigger: str = "start"
    """What asked for the load: `start`, `sighup`, `api`, `watch`."""
    kept_hash: str | None = None
    """The hash of the policy still in force."""


class EventsDropped(Event):
    """Events were lost because the writer's queue was full. Written by the writer
    itself (so it cannot be dropped), at most once per second while drops go on,
    and once more at shutdown."""

    type: Literal["events_dropped"] = "events_dropped"
    dropped_total: int
    """Events dropped since the daemon started."""
    dropped_since_last: int
    """Events dropped since the previous `events_dropped`."""


class EventsRotated(Event):
    """The writer started a new file; this is the first line of the new file."""

    type: Literal["events_rotated"] = "events_rotated"
    reason: str
    """`size` (built-in rotation) or `reopen` (after `SIGHUP` / `agentshctl events reopen`, e.g. external logrotate)."""
    path: str
    """The log file's path."""


class EventsTornTail(Event):
    """The log did not end with a newline when the writer opened it (a crash in
    the middle of a write): the partial last line was cut off."""

    type: Literal["events_torn_tail"] = "events_torn_tail"
    path: str
    """The log file that was repaired."""
    bytes_removed: int
    """Bytes cut off (the partial line; it was never acknowledged)."""
    fragment_head: str = ""
    """The start of the removed fragment (at most 200 bytes)."""


class AdminAction(Event):
    """An administrative act on the admin socket (anything that can lower
    enforcement), with the caller from SO_PEERCRED in the envelope: `uid`, `pid`,
    `exe`, `username`."""

    type: Literal["admin_action"] = "admin_action"
    action: str
    """What was done: `policy_reload`, `mcp_approve`, `bpf_detach`, `events_reopen`, `selftest`."""
    outcome: Literal["ok", "rejected", "error"] = "ok"
    """`ok`, `rejected` (refused, e.g. an invalid policy) or `error`."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """What changed: the new policy hash, the approved tools and their hashes, the detached programs, the selftest's canary and the decisions taken on it."""


# ------------------------------------------------------------------ MCP tool definitions


class DetectionMatch(BaseModel):
    """One place a detection pattern matched."""

    model_config = _FROZEN
    text: str
    """The matched text."""
    position: int
    """Its offset in the field."""
    context: str = ""
    """The text around it."""


class DetectionResult(BaseModel):
    """One suspicious pattern found in a tool definition or a tool result.

    Frozen: the registry's entries, the detector's cache and the events built
    from one registration share the same instances (docs/mcp.md)."""

    model_config = _FROZEN
    pattern: str
    """The pattern's name."""
    category: str
    """Its category (tool poisoning, hidden instructions, credential or exfiltration bait, ...)."""
    severity: Severity
    """`low`, `medium`, `high` or `critical`."""
    matches: list[DetectionMatch]
    """Where it matched."""
    field: str
    """The field it was found in (`description`, `inputSchema...`)."""
    why: str = ""
    """One line: the order and its object, e.g. "order 'must run' → shell command `sudo -l` (privilege ...)"."""


class FieldChange(BaseModel):
    """One changed field of a tool definition."""

    model_config = _CONFIG
    field: str
    """Which field (`description`, `inputSchema`, ...)."""
    previous: str
    """Its pinned value."""
    new: str
    """Its new value."""


class MCPToolSeen(Event):
    """A tool definition was seen in a `tools/list` response (a stdio server via a
    shim, or a network server via discovery)."""

    type: Literal["mcp_tool_seen"] = "mcp_tool_seen"
    server_id: str
    """The MCP server's id (declared in the policy, or derived from its command)."""
    server_type: ServerType = "stdio"
    """`stdio`, `http` or `sse`."""
    server_addr: str | None = None
    """The server's address (network servers)."""
    tool_name: str
    """The tool's name."""
    tool_hash: str
    """SHA-256 of the normalized name + description + inputSchema."""
    description: str | None = None
    """The tool's description."""
    status: Literal["new", "unchanged", "changed"]
    """`new` (first time), `unchanged` (matches the pin), `changed` (differs from the pin)."""
    detections: list[DetectionResult] = Field(default_factory=list)
    """What the detector found in the definition."""
    max_severity: str | None = None
    """The highest severity among `detections`."""
    blocked: bool = False
    """The policy hid the tool from the agent."""


class MCPToolChanged(Event):
    """A pinned tool's definition changed ("rug pull")."""

    type: Literal["mcp_tool_changed"] = "mcp_tool_changed"
    server_id: str
    """The MCP server's id."""
    tool_name: str
    """The tool's name."""
    previous_hash: str
    """The pinned hash."""
    new_hash: str
    """The hash of the new definition."""
    changes: list[FieldChange]
    """What changed, field by field."""
    detections: list[DetectionResult] = Field(default_factory=list)
    """What the detector found in the new definition."""
    action: PinAction = "alert"
    """`block`, `alert` or `allow` (from `on_change` in the policy)."""


class MCPDetection(Event):
    """One suspicious pattern in a tool definition (tool poisoning, hidden
    instructions, credential or exfiltration bait...)."""

    type: Literal["mcp_detection"] = "mcp_detection"
    server_id: str
    """The MCP server's id."""
    tool_name: str
    """The tool's name."""
    detection: DetectionResult
    """The detection."""
    action: Literal["alert", "warn", "block"]
    """What the policy does about it: `alert`, `warn` or `block`."""


class MCPToolShadowed(Event):
    """A tool name is offered by more than one server (a server may be shadowing
    another's tool)."""

    type: Literal["mcp_tool_shadowed"] = "mcp_tool_shadowed"
    tool_name: str
    """The tool's name."""
    server_id: str
    """The server that offered it now."""
    other_server_ids: list[str]
    """The other servers offering the same name."""


# ------------------------------------------------------------------ MCP calls


class MCPToolCalled(Event):
    """A `tools/call` request on a stdio server's stdin, seen by its shim (source
    `shim`), with the decision taken. `pid`/`uid` are the shim's, from the kernel."""

    type: Literal["mcp_tool_called"] = "mcp_tool_called"
    server_id: str
    """The MCP server's id."""
    tool_name: str
    """The tool called."""
    jsonrpc_id: Any = None
    """The JSON-RPC request id, as received."""
    input: Any = None
    """The call's arguments, as received (nulls inside included)."""
    action: Action = "allow"
    """`allow` or `block`."""
    reason: str | None = None
    """Why it was blocked (`server denied`, `tool denied`, `hash mismatch`, `rate limit`, `unknown tool, fail closed`...). A decision the shim took without the daemon ends in `(decided offline: agentshd unavailable)`."""
    input_truncated: bool | None = None
    """``input`` is a bounded copy: the call's arguments were too big to ship whole (over 1 MiB)."""
    server_type: ServerType = "stdio"
    """`stdio` (a shim only wraps stdio servers)."""
    tool_hash: str | None = None
    """The hash of the tool's definition, when known."""
    flow_type: str | None = None
    """When the data-flow step found a flow: its type (docs/flow.md)."""
    risk_level: RiskLevel | None = None
    """When the data-flow step found a flow or a suspicious endpoint: its risk."""
    flow_decision: FlowDecision | None = None
    """The data-flow step's verdict (`warn`: allowed and reported; `ask` degrades to `warn` where nobody can be asked)."""
    coverage: Coverage | None = None
    """The flow session's coverage mode."""


class MCPToolCallIntercepted(Event):
    """The LLM proxy saw the model ask for a tool call that belongs to a registered
    MCP tool (Anthropic `tool_use` block, OpenAI `tool_calls`, or a Responses API
    function call). Source `proxy`. When the daemon did not answer in time, the
    proxy decided offline on its snapshot and wrote the event itself."""

    type: Literal["mcp_tool_call_intercepted"] = "mcp_tool_call_intercepted"
    request_id: str
    """The proxy request (joins `llm_request`)."""
    dialect: Dialect
    """The API dialect of the response, as the proxy names it (e.g. `anthropic`, `openai`, `openai-responses`): lowercase letters, digits, `_` and `-` (docs/architecture.md "Vocabulary")."""
    tool_name: str
    """The tool the model called."""
    tool_call_id: str
    """The call's id in the response (`toolu_…`, `call_…`)."""
    input: Any = None
    """The call's arguments."""
    server_id: str
    """The MCP server the tool belongs to."""
    server_type: ServerType
    """`stdio`, `http` or `sse`."""
    server_addr: str | None = None
    """The server's address (network servers)."""
    tool_hash: str
    """The hash of the tool's definition."""
    action: Action
    """`allow` or `block` (a blocked call is replaced by a text block)."""
    reason: str | None = None
    """Why it was blocked (as in `mcp_tool_called`); ends in `(decided offline: agentshd unavailable)` when the proxy decided on its snapshot."""
    input_truncated: bool | None = None
    """``input`` is a bounded copy: the call's arguments were too big to ship whole (over 1 MiB)."""
    flow_type: str | None = None
    """When the data-flow step found a flow: its type (docs/flow.md)."""
    risk_level: RiskLevel | None = None
    """When the data-flow step found a flow or a suspicious endpoint: its risk."""
    flow_decision: FlowDecision | None = None
    """The data-flow step's verdict (`warn`: allowed and reported; `ask` degrades to `warn` where nobody can be asked)."""
    coverage: Coverage | None = None
    """The flow session's coverage mode."""


class MCPResultInjection(Event):
    """A tool result (text a tool returned: an issue body, a web page, a file) that
    carries instructions addressed to the AI agent (indirect prompt injection)."""

    type: Literal["mcp_result_injection"] = "mcp_result_injection"
    server_id: str | None = None
    """The MCP server whose tool returned it, when known."""
    tool_name: str
    """The tool that returned it."""
    call_id: str | None = None
    """The JSON-RPC id (shim) or the tool_use id (proxy) of the call that returned it."""
    excerpt: str = ""
    """The sentence that carries the injection (at most 300 characters)."""
    detections: list[DetectionResult] = Field(default_factory=list)
    """What was found."""
    max_severity: Severity | None = None
    """The highest severity among `detections`."""
    action: DetectionAction = "alert"
    """`alert` (the result was passed on) or `block` (withheld from the model)."""


class MCPNetworkConnection(Event):
    """A connection to a known network MCP server address, seen (and possibly
    refused) by the BPF layer (source `bpf`)."""

    type: Literal["mcp_network_connection"] = "mcp_network_connection"
    remote_addr: str
    """`host:port` or `[v6]:port`."""
    server_id: str
    """The MCP server the address belongs to."""
    server_type: ServerType
    """`stdio`, `http` or `sse`."""
    action: Action
    """`block` when the BPF program refused it (`EPERM`), else `allow`."""
    protocol: Literal["tcp", "udp"] = "tcp"
    """`tcp` or `udp`."""
    family: Literal["ipv4", "ipv6"] = "ipv4"
    """`ipv4` or `ipv6`."""
    phase: Literal["connect", "existing", "sendmsg"] = "connect"
    """`connect`, `existing` (a connection found at start) or `sendmsg` (UDP)."""
    cgroup_id: int | None = None
    """The cgroup of the connecting process."""
    tag: str | None = None
    """Why the address is watched: `declared`, `known_endpoint`, `registry` or `selftest` (a canary)."""


class NetworkConnect(Event):
    """Audit-everything mode (`network.trace_all`): every `connect()` with its result (source `bpf`)."""

    type: Literal["network_connect"] = "network_connect"
    remote_addr: str
    """`host:port` or `[v6]:port` (empty for `unix` and `other`)."""
    family: Literal["ipv4", "ipv6", "unix", "other"]
    """`ipv4`, `ipv6`, `unix` or `other`."""
    result: int
    """The syscall's return value (0, or a negative errno)."""
    cgroup_id: int | None = None
    """The cgroup of the connecting process."""


class BPFLostEvents(Event):
    """The BPF ring buffer overflowed and the kernel dropped records."""

    type: Literal["bpf_lost_events"] = "bpf_lost_events"
    lost_total: int
    """Records lost since the BPF layer started."""
    lost_since_last: int
    """Records lost since the previous `bpf_lost_events`."""


class MCPServerDiscovered(Event):
    """The daemon connected to a declared network MCP server and listed its tools."""

    type: Literal["mcp_server_discovered"] = "mcp_server_discovered"
    server_id: str
    """The MCP server's id."""
    server_type: ServerType
    """`http` or `sse`."""
    server_addr: str
    """The address it connected to."""
    tools: int
    """How many tools it listed."""
    error: str | None = None
    """Why connecting or listing failed."""
    tls_fingerprint_ok: bool | None = None
    """Whether the certificate matched the policy's `tls_fingerprint` (absent when none is set; a mismatch blocks the server)."""


# ------------------------------------------------------------------ shims


class ShimRegistered(Event):
    """An `agentsh-shim` started and registered with the daemon."""

    type: Literal["shim_registered"] = "shim_registered"
    server_id: str
    """The wrapped server's id."""
    command: list[str]
    """The wrapped command line."""


class ShimExited(Event):
    """A shim's server exited."""

    type: Literal["shim_exited"] = "shim_exited"
    server_id: str
    """The wrapped server's id."""
    exit_code: int | None = None
    """The server's exit status."""
    calls: int = 0
    """`tools/call` requests in its life."""
    blocks: int = 0
    """Of those, refused."""


class ProtocolError(Event):
    """Messages a layer could not parse and decide, and therefore refused (never
    forwarded): the shim answers with a JSON-RPC error, the proxy with an
    error in the provider's shape. Reported in batches, with counts."""

    type: Literal["protocol_error"] = "protocol_error"
    layer: Literal["shim", "proxy"]
    """`shim` or `proxy`."""
    detail: str
    """What was wrong."""
    count: int = 1
    """Occurrences folded into this event (they are sampled, not one per line)."""
    server_id: str | None = None
    """The MCP server concerned (shim)."""


# ------------------------------------------------------------------ LLM proxy


class LLMRequest(Event):
    """One request through the LLM proxy."""

    type: Literal["llm_request"] = "llm_request"
    request_id: str
    """The proxy's id of the request (joins `mcp_tool_call_intercepted`)."""
    provider: Provider
    """The provider the request went to, as the proxy names it (e.g. `anthropic`, `openai`; `unknown` when no upstream matched): lowercase letters, digits, `_` and `-` (docs/architecture.md "Vocabulary")."""
    dialect: Dialect | None = None
    """The API dialect, as the proxy names it (as in `mcp_tool_call_intercepted`)."""
    model: str | None = None
    """The model asked for."""
    path: str
    """The request path (e.g. `/v1/messages`)."""
    status: int
    """The HTTP status returned to the client."""
    streaming: bool
    """Whether the response was streamed (SSE)."""
    input_tokens: int | None = None
    """Input tokens, as the provider reported them."""
    output_tokens: int | None = None
    """Output tokens, as the provider reported them."""
    latency_ms: float
    """Milliseconds from the request to the end of the response."""
    request_bytes: int
    """Bytes of the request body."""
    response_bytes: int
    """Bytes of the response body."""
    tool_calls: int = 0
    """Tool calls in the response."""
    tool_calls_blocked: int = 0
    """Of those, replaced because the policy blocked them."""
    redactions: dict[str, int] = Field(default_factory=dict)
    """Redactions made in the request, counted per rule (name → count)."""
    malformed_lines: int = 0
    """SSE lines forwarded unparsed."""
    error: str | None = None
    """What went wrong, when the request failed."""


# ------------------------------------------------------------------ hooks / flow


class HookEvaluation(Event):
    """An agent hook (Claude Code PreToolUse / PostToolUse) was evaluated by the
    daemon (docs/flow.md "Hooks"). Written by the daemon only: the hook command
    hands the payload in, never an event. `session_id` is the agent's session;
    `pid`/`uid` are the hook command's, from the kernel."""

    type: Literal["hook_evaluation"] = "hook_evaluation"
    hook_event: str
    """The hook: `PreToolUse` (a decision) or `PostToolUse` (the result recorded as a data origin)."""
    tool_name: str
    """The tool the agent uses (`Read`, `Bash`, `WebFetch`, `mcp__<server>__<tool>` ...)."""
    decision: FlowDecision
    """`allow`, `warn`, `ask` or `deny` (what the hook answered the agent; `PostToolUse` is always `allow`)."""
    reason: str | None = None
    """Why (for anything but `allow`): names the flow, e.g. `internal→external flow: data read by Read (/home/u/.env) sent by WebFetch to evil.example (sensitive: aws_access_key)`."""
    classification: str | None = None
    """The flow tracker's class of the tool: `internal`, `external`, `hybrid`, `unknown`."""
    flow_type: str | None = None
    """The data flow found, if any: `internal→external`, `internal→internal`, `external→internal`, `external→external`."""
    risk_level: RiskLevel | None = None
    """The flow's risk: `none`, `medium`, `high`, `critical`."""
    coverage: Coverage | None = None
    """The session's coverage mode: `full` (hooks see the agent's own tools) or `proxy_only`."""
    agent: str = "claude-code"
    """The agent whose hook ran."""
    tool_use_id: str | None = None
    """The agent's id of the tool call (joins PreToolUse and PostToolUse of one call)."""
    server_id: str | None = None
    """For an MCP tool: its server."""
    matched_origins: list[dict[str, Any]] = Field(default_factory=list)
    """The recorded data the call's arguments carry: per origin `tool`, `server`, `label` (file, URL, command), `source` (internal/external), `sensitive` types, `how` it matched, `age_seconds`."""
    destinations: list[str] = Field(default_factory=list)
    """Hosts the call would send to."""
    sensitive_types: list[str] = Field(default_factory=list)
    """Sensitive data types flowing out (PreToolUse) or found in the recorded result (PostToolUse)."""
    recorded: bool | None = None
    """PostToolUse: the result was recorded as a data origin (false: flow tracking is off)."""
    latency_ms: float | None = None
    """Time the daemon took, including any wait for results of earlier calls still being recorded."""


class FlowSummary(Event):
    """A flow-tracking session expired: what it saw."""

    type: Literal["flow_summary"] = "flow_summary"
    duration_seconds: float
    """How long the session lasted."""
    total_origins: int
    """Data origins recorded (tool results, files read, secrets seen)."""
    total_flow_edges: int
    """Flows found from an origin to a later tool use."""
    flow_type_distribution: dict[str, int] = Field(default_factory=dict)
    """Flows counted by type (name → count)."""
    risk_level_distribution: dict[str, int] = Field(default_factory=dict)
    """Flows counted by risk level (name → count)."""
    linked_mcp_sessions: list[str] = Field(default_factory=list)
    """MCP sessions linked to this one."""
    tools_used: list[str] = Field(default_factory=list)
    """Tools used in the session."""
    coverage: Coverage | None = None
    """`full` when hooks fed the session, else `proxy_only`."""
    reason: Literal["idle", "evicted", "shutdown"] | None = None
    """Why it ended: idle past `flow.flow_tracking.session_timeout_minutes`, evicted (too many sessions), or the daemon stopped (flow state is not kept across restarts)."""


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
    # the hook command hands in payloads, never events: the daemon writes
    # hook_evaluation itself, so no group member can forge an evaluation
    "hook": frozenset(),
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
