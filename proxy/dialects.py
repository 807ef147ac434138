"""Which provider and dialect a request speaks, where it goes upstream, and
what an error looks like in that provider's shape.

Dialect is decided once per request from the path (and, for paths both
providers could serve, from the headers the official SDKs always send).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import orjson

from agentsh.agent.policy.schema import ProxyConfig

Dialect = Literal["anthropic", "openai", "openai-responses"]
Provider = Literal["anthropic", "openai", "unknown"]

_DIALECT_PATHS: dict[str, tuple[Provider, Dialect]] = {
    "/v1/messages": ("anthropic", "anthropic"),
    "/v1/chat/completions": ("openai", "openai"),
    "/v1/responses": ("openai", "openai-responses"),
}

# Substrings that must be present in a body/SSE event before it is worth parsing.
NEEDLES: dict[str, tuple[bytes, ...]] = {
    "anthropic": (b"tool_use",),
    "openai": (b"tool_calls", b"function_call"),
    "openai-responses": (b"function_call",),
}


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    dialect: Dialect | None
    """None: pass-through path (not inspected)."""
    base_url: str
    """The provider's configured base URL."""
    target: str
    """Path and query as the client sent them (appended to the base URL's path)."""

    @property
    def upstream_url(self) -> str:
        return self.base_url + self.target


def route(method: str, path: str, target: str, headers: object, cfg: ProxyConfig) -> Route:
    """Map an incoming request (``target``: its raw path and query) to its upstream and dialect."""
    hit = _DIALECT_PATHS.get(path) if method == "POST" else None
    if hit is None and method == "POST" and path.endswith("/"):
        hit = _DIALECT_PATHS.get(path.rstrip("/"))
    if hit is not None:
        provider, dialect = hit
    else:
        dialect = None
        provider = _provider_from_headers(headers)
    base = cfg.providers.anthropic.base_url if provider == "anthropic" else cfg.providers.openai.base_url
    return Route(provider, dialect, base, target)


def _provider_from_headers(headers: object) -> Provider:
    get = getattr(headers, "get", None)
    if get is not None and (get("anthropic-version") or get("x-api-key")):
        return "anthropic"
    return "openai"


# ------------------------------------------------------------------ error shapes


def error_body(provider: Provider, status: int, message: str) -> bytes:
    """An error in the shape the provider's SDK parses (so the agent sees a clean APIError)."""
    if provider == "anthropic":
        etype = {504: "timeout_error", 529: "overloaded_error"}.get(status, "api_error")
        return orjson.dumps({"type": "error", "error": {"type": etype, "message": message}})
    etype = "timeout" if status == 504 else "upstream_error"
    return orjson.dumps({"error": {"message": message, "type": etype, "param": None, "code": None}})


# ------------------------------------------------------------------ summaries (best effort, no parse)

_USAGE_RE = re.compile(
    rb'"(input_tokens|output_tokens|prompt_tokens|completion_tokens)"\s*:\s*(\d+)'
)
_MODEL_RE = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')


class UsageScan:
    """Token counts picked out of response bytes with one regex, no JSON parse.

    Counts in Anthropic's message_delta and the providers' final usage objects
    are cumulative, so the largest value seen per key is the total.
    """

    __slots__ = ("input", "model", "output")

    def __init__(self) -> None:
        self.input: int | None = None
        self.output: int | None = None
        self.model: str | None = None

    def scan(self, data: bytes) -> None:
        if b'_tokens"' in data:
            for key, val in _USAGE_RE.findall(data):
                n = int(val)
                if key in (b"input_tokens", b"prompt_tokens"):
                    if self.input is None or n > self.input:
                        self.input = n
                elif self.output is None or n > self.output:
                    self.output = n
        if self.model is None and b'"model"' in data:
            m = _MODEL_RE.search(data)
            if m is not None:
                self.model = m.group(1).decode("utf-8", "replace")
