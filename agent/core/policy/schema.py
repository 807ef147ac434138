"""The one policy schema for every layer.

Every section is a pydantic v2 model with ``extra="forbid"`` so that a typo in
a key is an error, not a silently ignored setting. Defaults here are the
product's defaults; ``policies/default.yaml`` spells the important ones out.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentsh.agent.core.policy.globs import validate_glob
from agentsh.agent.core.policy.regex_safety import check_regex
from agentsh.agent.core.vocab import (
    SEVERITY_RANK as SEVERITY_RANK,  # re-exported for the MCP modules
)
from agentsh.agent.core.vocab import DetectionAction, PinAction, Provider, ServerType, Severity
from agentsh.agent.core.vocab import FlowDecision as FlowAction


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=False, validate_default=True, use_attribute_docstrings=True
    )


Glob = Annotated[str, Field(min_length=1)]


def _check_glob(v: str) -> str:
    validate_glob(v)
    return v


# --------------------------------------------------------------------------- daemon


class DaemonConfig(_Model):
    socket: str = "/run/agentsh/agentsh.sock"
    """Agent-side control socket (HTTP over a Unix socket, mode 0660, group `daemon.group`); the decision channel (`<stem>-decide.sock`) and the admin socket (`<stem>-admin.sock`) live beside it. Changing it needs a restart."""
    state_dir: str = "/var/lib/agentsh"
    """Registry database, last good policy, spool of events from shims/proxy, proxy body storage. Changing it needs a restart."""
    user: str = "agentsh"
    """Unprivileged user the LLM proxy drops to (falls back to ``nobody``)."""
    group: str = "agentsh"
    """Group of the agent-side sockets (control socket and decision channel, mode 0660): its members (the users whose AI agents are guarded: their shims and hooks) may ask for decisions, register tools, hand in events and read status. Nothing on these sockets can lower enforcement."""
    admin_group: str = "agentsh-admin"
    """Group of the admin socket (``<socket stem>-admin.sock``, mode 0660): its members and root may approve tools, reload policy, detach BPF and reopen the log; every such act is an ``admin_action`` event. When the group does not exist, only root."""
    max_connections_per_uid: int = Field(64, ge=1, le=100_000)
    """Connections one non-root uid may hold open on each daemon socket at once (root is never limited)."""
    watch_config: bool = True
    """Reload the policy when a file in the config directory changes."""
    watch_interval_seconds: float = Field(1.0, gt=0, le=60)
    """How often the config directory is checked for changed policy files."""
    shim_heartbeat_timeout_seconds: float = Field(30.0, gt=0)
    """A shim that has not sent a heartbeat for this long (or whose process is gone) is dropped from status."""


# --------------------------------------------------------------------------- events


class EventsConfig(_Model):
    path: str = "/var/log/agentsh/events.jsonl"
    """The JSONL event log. Changing it needs a restart."""
    queue_size: int = Field(65536, ge=16)
    """Bounded queue between producers and the writer; when full, events are counted as dropped (never block a producer)."""
    batch_max: int = Field(1024, ge=1)
    """Most events written per write() call."""
    fsync_interval_seconds: float = Field(1.0, ge=0)
    """0 disables periodic fsync (still fsynced at shutdown and rotation)."""
    rotate_max_bytes: int = Field(100 * 1024 * 1024, ge=0)
    """Rotate when the file would grow past this size; 0 disables built-in rotation."""
    rotate_backups: int = Field(5, ge=0, le=1000)
    """Rotated files kept (events.jsonl.1 ... .N); the oldest is deleted."""
    file_mode: int = 0o640
    """Mode of the event log file (octal string such as "0640" or an int)."""
    format: Literal["native", "ocsf"] = "native"
    """Line format: `native` (agentsh's event schema) or `ocsf` (each event as its OCSF 1.5.0 class, the native event under `unmapped`; docs/events.md, "OCSF"). A change applies to the events written after the reload."""

    @field_validator("file_mode", mode="before")
    @classmethod
    def _mode(cls, v: object) -> object:
        if isinstance(v, str):
            return int(v, 8)
        return v


# --------------------------------------------------------------------------- mcp


class MCPServerDeclaration(_Model):
    id: str = Field(min_length=1)
    """Server id used in rules, events and the registry."""
    type: ServerType = "stdio"
    """`stdio` (wrapped by agentsh-shim) or a network server (`http` streamable HTTP, `sse`)."""
    command: str | None = None
    """stdio: the command that starts the server (matched by the shim to find the server id)."""
    args: list[str] = Field(default_factory=list)
    """stdio: its arguments."""
    url: str | None = None
    """http/sse: the server's URL; its host is resolved and watched by the BPF layer, its tools discovered."""
    tls_fingerprint: str | None = None
    """``sha256:<hex>`` of the server certificate (DER); a mismatch blocks the server."""
    addresses: list[str] = Field(default_factory=list)
    """Extra literal IPs or CIDRs to treat as this server (besides DNS of ``url``)."""

    @model_validator(mode="after")
    def _by_type(self) -> MCPServerDeclaration:
        if self.type == "stdio":
            if not self.command:
                raise ValueError("a stdio server needs 'command'")
        else:
            if not self.url:
                raise ValueError(f"a {self.type} server needs 'url'")
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"url must be http(s)://host[:port]/..., got {self.url!r}")
        for a in self.addresses:
            ipaddress.ip_network(a, strict=False)
        if self.tls_fingerprint is not None and not re.fullmatch(
            r"sha256:[0-9a-fA-F:]{64,95}", self.tls_fingerprint
        ):
            raise ValueError("tls_fingerprint must be 'sha256:' followed by 64 hex digits")
        return self


class MCPServerRule(_Model):
    id: Glob
    """Server id glob (`*`, `?`, `[...]`)."""

    _v = field_validator("id")(_check_glob)


class MCPToolRule(_Model):
    server: Glob = "*"
    """Server id glob."""
    tool: Glob = "*"
    """Tool name glob."""
    hash: str | None = None
    """When set, the rule only matches a tool whose definition hash equals this."""

    _vs = field_validator("server")(_check_glob)
    _vt = field_validator("tool")(_check_glob)


class VersionPinningConfig(_Model):
    enabled: bool = True
    """Compare each tool's definition hash with its pin (rug-pull detection)."""
    on_change: PinAction = "alert"
    """What a changed definition does to calls: `block`, `alert` (allow + event), `allow` (no check)."""
    auto_trust_first: bool = True
    """Pin a tool's hash the first time it is seen."""


class ServerRateLimit(_Model):
    calls_per_minute: int = Field(ge=1)
    """Token refill rate for this server."""
    burst: int | None = Field(None, ge=1)
    """Bucket size (calls allowed at once); default: calls_per_minute."""


class RateLimitsConfig(_Model):
    enabled: bool = False
    """Token-bucket rate limit of tool calls per server (counted in the daemon)."""
    default_rpm: int = Field(60, ge=1)
    """Calls per minute for servers without a `per_server` entry."""
    default_burst: int | None = Field(None, ge=1)
    """Bucket size for those servers; default: default_rpm."""
    per_server: dict[str, ServerRateLimit] = Field(default_factory=dict)
    """Limits by server id."""


class CustomPattern(_Model):
    name: str = Field(min_length=1)
    """Pattern name reported in detections."""
    pattern: str = Field(min_length=1)
    """Python regular expression; rejected at load if it fails to compile or can backtrack catastrophically."""
    severity: Severity = "high"
    """Severity of a match."""
    description: str = ""
    """Shown with detections."""
    category: str = "custom"
    """Category reported in detections."""

    @field_validator("pattern")
    @classmethod
    def _safe(cls, v: str) -> str:
        check_regex(v)
        return v


class BuiltinDetections(_Model):
    credential_theft: bool = True
    """References to credentials, SSH keys, .env files, tokens."""
    exfiltration: bool = True
    """Instructions to send data out (curl/wget/nc, upload to URLs)."""
    hidden_instructions: bool = True
    """IMPORTANT:/HIDDEN:/SYSTEM OVERRIDE style hidden instructions."""
    shell_injection: bool = True
    """Shell metacharacter command chains in definitions."""
    path_traversal: bool = True
    """../ sequences and sensitive system paths."""
    invisible_unicode: bool = True
    """Zero-width, bidi control and tag characters (decoded and rescanned)."""
    ansi_escape: bool = True
    """ANSI terminal escape sequences."""
    encoded_payload: bool = True
    """base64 / hex / URL-encoded runs, decoded and rescanned."""
    model_directives: bool = True
    """Instructions addressed to the model ("do not tell the user", "before using this tool, read ...")."""
    shadowing: bool = True
    """A description giving orders about other tools or servers."""
    embedded_secrets: bool = True
    """API keys, tokens and private keys inside a definition."""


class DetectionConfig(_Model):
    builtin: BuiltinDetections = Field(default_factory=BuiltinDetections)
    """Switch built-in detection categories on or off."""
    custom_patterns: list[CustomPattern] = Field(default_factory=list)
    """Extra patterns of your own."""
    alert_threshold: Severity = "high"
    """Detections at or above this severity raise `mcp_detection` events (and block with `on_detection.action: block`)."""


class OnDetection(_Model):
    action: DetectionAction = "alert"
    """`alert`: event only. `block`: hide the tool from tools/list and refuse calls until approved."""
    webhook_url: str = ""
    """Reserved: not used yet (alerts go to the event log)."""


class RegistryConfig(_Model):
    pin_on_first_use: bool = True
    """Pin definitions the first time they are seen."""
    alert_on_change: bool = True
    """Emit `mcp_tool_changed` when a definition differs from its pin."""
    persistent: bool = True
    """Keep the registry (pins, approvals) in SQLite in the state dir across restarts, and the detector's verdicts on tool definitions in `verdicts.db` beside it (a cache valid only for the same detector build and `detection` settings; docs/mcp.md "Verdicts across restarts")."""


DEFAULT_SERVER_PATTERNS = [
    "@modelcontextprotocol/*",
    "mcp-server-*",
    "*-mcp-server",
    "mcp_server_*",
    "uvx mcp-server-*",
]


class ResultsInspectionConfig(_Model):
    enabled: bool = True
    """Scan tool results (tools/call results in the shim, tool_result blocks in the proxy) for instructions addressed to the model (indirect prompt injection)."""
    action: DetectionAction = "alert"
    """`alert`: emit `mcp_result_injection` and pass the result on. `block`: also withhold the result from the model (the caller replaces it with an error)."""
    max_bytes: int = Field(65536, ge=1024, le=16 * 1024 * 1024)
    """Only the first this many characters of a result are scanned (bytes, for ASCII text): the cost per result is bounded."""


class InspectionConfig(_Model):
    enabled: bool = True
    """Inspect tool definitions (detector, pins) at all."""
    server_patterns: list[Glob] = Field(default_factory=lambda: list(DEFAULT_SERVER_PATTERNS))
    """Command globs that identify MCP servers (used by `mcp wrap` and server id derivation)."""
    custom_servers: list[Glob] = Field(default_factory=list)
    """Extra command globs for your own MCP servers."""
    registry: RegistryConfig = Field(default_factory=RegistryConfig)
    """Tool registry and pins."""
    detection: DetectionConfig = Field(default_factory=DetectionConfig)
    """Detector settings."""
    on_detection: OnDetection = Field(default_factory=OnDetection)
    """What a detection at or above the threshold does."""
    results: ResultsInspectionConfig = Field(default_factory=ResultsInspectionConfig)
    """Indirect prompt injection in tool results (severity threshold: `detection.alert_threshold`)."""

    _vp = field_validator("server_patterns", "custom_servers")(
        lambda v: [_check_glob(x) for x in v]
    )


class MCPConfig(_Model):
    enforce_policy: bool = True
    """Block what the policy says to block. When false, decisions are reported ("would block") but nothing is blocked."""
    fail_closed: bool = False
    """Block tools and servers not in the registry (and, when the daemon is unreachable, calls that need a decision)."""
    servers: list[MCPServerDeclaration] = Field(default_factory=list)
    """Declared MCP servers (the source of truth for ids, network addresses and discovery)."""
    server_policy: Literal["allowlist", "denylist", "none"] = "none"
    """`allowlist`: only `allowed_servers`; `denylist`/`none`: all but `denied_servers`."""
    allowed_servers: list[MCPServerRule] = Field(default_factory=list)
    """Servers allowed under `server_policy: allowlist`."""
    denied_servers: list[MCPServerRule] = Field(default_factory=list)
    """Servers always blocked (checked first)."""
    tool_policy: Literal["allowlist", "denylist", "none"] = "denylist"
    """`allowlist`: only tools matching `allowed_tools`; `denylist`/`none`: all but `denied_tools`."""
    allowed_tools: list[MCPToolRule] = Field(default_factory=list)
    """Tool rules allowed under `tool_policy: allowlist`."""
    denied_tools: list[MCPToolRule] = Field(default_factory=list)
    """Tool rules always blocked."""
    version_pinning: VersionPinningConfig = Field(default_factory=VersionPinningConfig)
    """Rug-pull protection."""
    rate_limits: RateLimitsConfig = Field(default_factory=RateLimitsConfig)
    """Per-server call rate limits."""
    inspection: InspectionConfig = Field(default_factory=InspectionConfig)
    """Tool definition inspection."""
    known_endpoints: list[str] = Field(default_factory=list)
    """Undeclared addresses (IP, CIDR, or host:port) known to be MCP endpoints; blocked
    by the network layer when ``server_policy`` is ``allowlist``."""

    @model_validator(mode="after")
    def _unique_ids(self) -> MCPConfig:
        seen: set[str] = set()
        for s in self.servers:
            if s.id in seen:
                raise ValueError(f"duplicate server id {s.id!r} in mcp.servers")
            seen.add(s.id)
        return self


# --------------------------------------------------------------------------- proxy


class ProviderUpstream(_Model):
    base_url: str
    """Upstream base URL (any http(s) URL; tests point it at loopback)."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        p = urlsplit(v)
        if p.scheme not in ("http", "https") or not p.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/path], got {v!r}")
        return v.rstrip("/")


ProviderName = Provider  # one rule for provider names (agent/core/vocab.py)
"""A provider of the LLM proxy's dialect registry (docs/proxy.md "Dialects and routing"); the
registry, not this schema, knows the names and checks them (the loader's ``checks``)."""


class DLPCustomPattern(_Model):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """Type name used in `[REDACTED:<name>]` and in counts."""
    pattern: str = Field(min_length=1)
    """Python regular expression (safety-checked at load)."""

    @field_validator("pattern")
    @classmethod
    def _safe(cls, v: str) -> str:
        check_regex(v)
        return v


class DLPConfig(_Model):
    mode: Literal["redact", "disabled"] = "redact"
    """`redact`: replace sensitive values in request bodies before they leave the host; `disabled`."""
    types: list[str] | None = None
    """Restrict redaction to these detector types; ``null`` means all built-in types."""
    custom_patterns: list[DLPCustomPattern] = Field(default_factory=list)
    """Extra redaction patterns."""


class BodyStorageConfig(_Model):
    max_bytes: int = Field(50 * 1024 * 1024, ge=0)
    """Rotate the mcp-only body store at this size."""
    backups: int = Field(3, ge=0)
    """Rotated body-store files kept."""


class ProxyConfig(_Model):
    mode: Literal["embedded", "mcp-only", "disabled"] = "embedded"
    """`embedded`: DLP + MCP interception; `mcp-only`: no DLP, bodies stored for audit, MCP interception; `disabled`: not started."""
    listen: str = "127.0.0.1:7390"
    """HOST:PORT the proxy listens on."""
    providers: dict[ProviderName, ProviderUpstream] = Field(default_factory=dict)
    """Upstream per provider, by the provider's name (docs/proxy.md "Dialects and routing" lists the names and their default base URLs); a provider not listed goes to its public API. An unknown name is an error."""
    dlp: DLPConfig = Field(default_factory=DLPConfig)
    """Request-body redaction (embedded mode)."""
    body_storage: BodyStorageConfig = Field(default_factory=BodyStorageConfig)
    """mcp-only mode body storage under the state dir."""
    upstream_timeout_seconds: float = Field(600.0, gt=0)
    """Total timeout of one upstream request."""
    max_sse_line_bytes: int = Field(1024 * 1024, ge=1024)
    """Longest SSE event (and JSON-start sniff) the proxy buffers to inspect; an inspected stream with a longer one is refused (error event), held tool calls may take 16 times this."""

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"listen must be HOST:PORT, got {v!r}")
        return v


# --------------------------------------------------------------------------- network


class NetworkConfig(_Model):
    enabled: bool = True
    """Load the BPF layer at all."""
    tracing: bool = True
    """Emit ``mcp_network_connection`` events for connects to watched addresses."""
    blocking: bool = True
    """Refuse (EPERM) connects to blocked MCP server addresses."""
    trace_all: bool = False
    """Also record every connect() on the host (tracepoint), not only watched ones."""
    cgroup_path: str = ""
    """cgroup v2 directory to attach to; empty means the root of the cgroup2 hierarchy."""
    resolve_interval_seconds: float = Field(300.0, gt=0)
    """Re-resolve declared server hostnames at least this often (sooner when the DNS TTL says so)."""
    min_resolve_interval_seconds: float = Field(5.0, gt=0)
    """Never re-resolve more often than this."""
    discovery: bool = True
    """Connect to declared http/sse MCP servers and register their tools."""
    discovery_interval_seconds: float = Field(600.0, gt=0)
    """Re-list network servers' tools this often (and on list_changed)."""
    pin_dir: str = "/sys/fs/bpf/agentsh"
    """bpffs directory for pinned maps (mounted if missing)."""


# --------------------------------------------------------------------------- flow (docs/flow.md)


class FlowTrackingConfig(_Model):
    enabled: bool = True
    """Track data origins across tool calls (docs/flow.md)."""
    session_timeout_minutes: int = Field(30, ge=1)
    """Expire a flow session after this much inactivity (writes `flow_summary`)."""
    max_origins_per_session: int = Field(10000, ge=1)
    """Oldest origins are evicted past this."""
    hash_min_length: int = Field(20, ge=1)
    """Shortest content hashed as an origin."""
    max_response_hash_bytes: int = Field(65536, ge=1)
    """Responses are truncated to this before hashing."""


class ClassificationConfig(_Model):
    default_unknown: Literal["internal", "external", "hybrid", "unknown"] = "internal"
    """Classification of servers the heuristics cannot place."""
    server_overrides: dict[str, Literal["internal", "external", "hybrid"]] = Field(
        default_factory=dict
    )
    """Server id → internal/external/hybrid."""



class FlowPolicyConfig(_Model):
    internal_to_external: FlowAction = "ask"
    """Action for internal→external flows."""
    sensitive_data_external: FlowAction = "deny"
    """Action when sensitive data flows externally."""
    require_justification: bool = True
    """Ask for a justification on external writes."""
    suspicious_endpoints: list[str] = Field(
        default_factory=lambda: [
            "webhook.site",
            "requestbin.com",
            "pipedream.net",
            "hookbin.com",
            "beeceptor.com",
        ]
    )
    """Endpoints always denied as destinations."""
    tool_overrides: dict[str, FlowAction] = Field(default_factory=dict)
    """Tool name → action, overriding the above."""


class HooksConfig(_Model):
    enabled: bool = True
    """Accept agent hook evaluations."""
    fail_open: bool = True
    """Allow when the daemon is unreachable from a hook."""
    correlation_ttl_seconds: float = Field(5.0, gt=0)
    """How long a hook's pending call waits to be correlated with an MCP call."""


class FlowConfig(_Model):
    flow_tracking: FlowTrackingConfig = Field(default_factory=FlowTrackingConfig)
    """Data-flow tracking settings."""
    classification: ClassificationConfig = Field(default_factory=ClassificationConfig)
    """Server/tool classification."""
    flow_policy: FlowPolicyConfig = Field(default_factory=FlowPolicyConfig)
    """What flows are allowed."""
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Agent hooks."""


# --------------------------------------------------------------------------- metrics


class MetricsConfig(_Model):
    enabled: bool = False
    """Serve Prometheus metrics (`/metrics`) and a health check (`/healthz`: 200 when healthy, 503 with the reasons when degraded) on `metrics.listen`. Unauthenticated: keep it on loopback or a monitoring network (docs/operations.md "Monitoring")."""
    listen: str = "127.0.0.1:9464"
    """HOST:PORT of the metrics listener (applied on reload; a port in use is a degraded reason in status)."""

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"listen must be HOST:PORT, got {v!r}")
        return v


# --------------------------------------------------------------------------- root


class Policy(_Model):
    version: Literal[1] = 1
    """Policy format version."""
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    """The daemon itself."""
    events: EventsConfig = Field(default_factory=EventsConfig)
    """The event log."""
    mcp: MCPConfig = Field(default_factory=MCPConfig)
    """MCP servers, tools, decisions, inspection."""
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    """The LLM API proxy."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    """The BPF network layer."""
    flow: FlowConfig = Field(default_factory=FlowConfig)
    """Data-flow security (docs/flow.md)."""
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    """Prometheus metrics and the health endpoint for monitoring."""
