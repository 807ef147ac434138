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

from agentsh.agent.policy.globs import validate_glob
from agentsh.agent.policy.regex_safety import check_regex

Severity = Literal["low", "medium", "high", "critical"]
SEVERITY_RANK: dict[str, int] = {"low": 0, "medium": 1, "high": 2, "critical": 3}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=True)


Glob = Annotated[str, Field(min_length=1)]


def _check_glob(v: str) -> str:
    validate_glob(v)
    return v


# --------------------------------------------------------------------------- daemon


class DaemonConfig(_Model):
    socket: str = "/run/agentsh/agentsh.sock"
    state_dir: str = "/var/lib/agentsh"
    run_dir: str = "/run/agentsh"
    user: str = "agentsh"
    """Unprivileged user the LLM proxy drops to (falls back to ``nobody``)."""
    group: str = "agentsh"
    """Group that owns the control socket; its members may use mutating endpoints."""
    watch_config: bool = True
    """Reload the policy when a file in the config directory changes."""
    watch_interval_seconds: float = Field(1.0, gt=0, le=60)
    shim_heartbeat_timeout_seconds: float = Field(30.0, gt=0)


# --------------------------------------------------------------------------- events


class EventsConfig(_Model):
    path: str = "/var/log/agentsh/events.jsonl"
    queue_size: int = Field(65536, ge=16)
    batch_max: int = Field(1024, ge=1)
    fsync_interval_seconds: float = Field(1.0, ge=0)
    """0 disables periodic fsync (still fsynced at shutdown and rotation)."""
    rotate_max_bytes: int = Field(100 * 1024 * 1024, ge=0)
    """Rotate when the file would grow past this size; 0 disables built-in rotation."""
    rotate_backups: int = Field(5, ge=0, le=1000)
    file_mode: int = 0o640

    @field_validator("file_mode", mode="before")
    @classmethod
    def _mode(cls, v: object) -> object:
        if isinstance(v, str):
            return int(v, 8)
        return v


# --------------------------------------------------------------------------- mcp


class MCPServerDeclaration(_Model):
    id: str = Field(min_length=1)
    type: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    url: str | None = None
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

    _v = field_validator("id")(_check_glob)


class MCPToolRule(_Model):
    server: Glob = "*"
    tool: Glob = "*"
    hash: str | None = None
    """When set, the rule only matches a tool whose definition hash equals this."""

    _vs = field_validator("server")(_check_glob)
    _vt = field_validator("tool")(_check_glob)


class VersionPinningConfig(_Model):
    enabled: bool = True
    on_change: Literal["block", "alert", "allow"] = "alert"
    auto_trust_first: bool = True


class ServerRateLimit(_Model):
    calls_per_minute: int = Field(ge=1)
    burst: int | None = Field(None, ge=1)


class RateLimitsConfig(_Model):
    enabled: bool = False
    default_rpm: int = Field(60, ge=1)
    default_burst: int | None = Field(None, ge=1)
    per_server: dict[str, ServerRateLimit] = Field(default_factory=dict)


class CustomPattern(_Model):
    name: str = Field(min_length=1)
    pattern: str = Field(min_length=1)
    severity: Severity = "high"
    description: str = ""
    category: str = "custom"

    @field_validator("pattern")
    @classmethod
    def _safe(cls, v: str) -> str:
        check_regex(v)
        return v


class BuiltinDetections(_Model):
    credential_theft: bool = True
    exfiltration: bool = True
    hidden_instructions: bool = True
    shell_injection: bool = True
    path_traversal: bool = True
    invisible_unicode: bool = True
    ansi_escape: bool = True
    encoded_payload: bool = True
    model_directives: bool = True
    shadowing: bool = True
    embedded_secrets: bool = True


class DetectionConfig(_Model):
    builtin: BuiltinDetections = Field(default_factory=BuiltinDetections)
    custom_patterns: list[CustomPattern] = Field(default_factory=list)
    alert_threshold: Severity = "high"


class OnDetection(_Model):
    action: Literal["alert", "block"] = "alert"
    webhook_url: str = ""


class RegistryConfig(_Model):
    pin_on_first_use: bool = True
    alert_on_change: bool = True
    persistent: bool = True


DEFAULT_SERVER_PATTERNS = [
    "@modelcontextprotocol/*",
    "mcp-server-*",
    "*-mcp-server",
    "mcp_server_*",
    "uvx mcp-server-*",
]


class InspectionConfig(_Model):
    enabled: bool = True
    server_patterns: list[Glob] = Field(default_factory=lambda: list(DEFAULT_SERVER_PATTERNS))
    custom_servers: list[Glob] = Field(default_factory=list)
    registry: RegistryConfig = Field(default_factory=RegistryConfig)
    detection: DetectionConfig = Field(default_factory=DetectionConfig)
    on_detection: OnDetection = Field(default_factory=OnDetection)

    _vp = field_validator("server_patterns", "custom_servers")(
        lambda v: [_check_glob(x) for x in v]
    )


class MCPConfig(_Model):
    enforce_policy: bool = True
    fail_closed: bool = False
    servers: list[MCPServerDeclaration] = Field(default_factory=list)
    server_policy: Literal["allowlist", "denylist", "none"] = "none"
    allowed_servers: list[MCPServerRule] = Field(default_factory=list)
    denied_servers: list[MCPServerRule] = Field(default_factory=list)
    tool_policy: Literal["allowlist", "denylist", "none"] = "denylist"
    allowed_tools: list[MCPToolRule] = Field(default_factory=list)
    denied_tools: list[MCPToolRule] = Field(default_factory=list)
    version_pinning: VersionPinningConfig = Field(default_factory=VersionPinningConfig)
    rate_limits: RateLimitsConfig = Field(default_factory=RateLimitsConfig)
    inspection: InspectionConfig = Field(default_factory=InspectionConfig)
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

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        p = urlsplit(v)
        if p.scheme not in ("http", "https") or not p.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/path], got {v!r}")
        return v.rstrip("/")


class ProvidersConfig(_Model):
    anthropic: ProviderUpstream = Field(
        default_factory=lambda: ProviderUpstream(base_url="https://api.anthropic.com")
    )
    openai: ProviderUpstream = Field(
        default_factory=lambda: ProviderUpstream(base_url="https://api.openai.com")
    )


class DLPCustomPattern(_Model):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    pattern: str = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _safe(cls, v: str) -> str:
        check_regex(v)
        return v


class DLPConfig(_Model):
    mode: Literal["redact", "disabled"] = "redact"
    types: list[str] | None = None
    """Restrict redaction to these detector types; ``null`` means all built-in types."""
    custom_patterns: list[DLPCustomPattern] = Field(default_factory=list)


class BodyStorageConfig(_Model):
    max_bytes: int = Field(50 * 1024 * 1024, ge=0)
    backups: int = Field(3, ge=0)


class ProxyConfig(_Model):
    mode: Literal["embedded", "mcp-only", "disabled"] = "embedded"
    listen: str = "127.0.0.1:8765"
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    dlp: DLPConfig = Field(default_factory=DLPConfig)
    body_storage: BodyStorageConfig = Field(default_factory=BodyStorageConfig)
    upstream_timeout_seconds: float = Field(600.0, gt=0)
    max_sse_line_bytes: int = Field(1024 * 1024, ge=1024)

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
    min_resolve_interval_seconds: float = Field(5.0, gt=0)
    discovery: bool = True
    """Connect to declared http/sse MCP servers and register their tools."""
    discovery_interval_seconds: float = Field(600.0, gt=0)
    pin_dir: str = "/sys/fs/bpf/agentsh"


# --------------------------------------------------------------------------- flow (seed 002)


class FlowTrackingConfig(_Model):
    enabled: bool = True
    session_timeout_minutes: int = Field(30, ge=1)
    max_origins_per_session: int = Field(10000, ge=1)
    hash_min_length: int = Field(20, ge=1)
    max_response_hash_bytes: int = Field(65536, ge=1)


class ClassificationConfig(_Model):
    default_unknown: Literal["internal", "external", "hybrid", "unknown"] = "internal"
    server_overrides: dict[str, Literal["internal", "external", "hybrid"]] = Field(
        default_factory=dict
    )


FlowAction = Literal["allow", "warn", "ask", "deny"]


class FlowPolicyConfig(_Model):
    internal_to_external: FlowAction = "ask"
    sensitive_data_external: FlowAction = "deny"
    require_justification: bool = True
    suspicious_endpoints: list[str] = Field(
        default_factory=lambda: [
            "webhook.site",
            "requestbin.com",
            "pipedream.net",
            "hookbin.com",
            "beeceptor.com",
        ]
    )
    tool_overrides: dict[str, FlowAction] = Field(default_factory=dict)


class HooksConfig(_Model):
    enabled: bool = True
    fail_open: bool = True
    correlation_ttl_seconds: float = Field(5.0, gt=0)


class FlowConfig(_Model):
    flow_tracking: FlowTrackingConfig = Field(default_factory=FlowTrackingConfig)
    classification: ClassificationConfig = Field(default_factory=ClassificationConfig)
    flow_policy: FlowPolicyConfig = Field(default_factory=FlowPolicyConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)


# --------------------------------------------------------------------------- root


class Policy(_Model):
    version: Literal[1] = 1
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    mcp: MCPConfig = Field(default_factory=MCPConfig)
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    flow: FlowConfig = Field(default_factory=FlowConfig)
