"""Which provider and dialect a request speaks, where it goes upstream, and
what an error looks like in that provider's shape.

Dialect is decided once per request from the path (and, for paths both
providers could serve, from the headers the official SDKs always send).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

import orjson

from agentsh.agent.core.policy.schema import ProxyConfig

Dialect = Literal["anthropic", "openai", "openai-responses"]
Provider = Literal["anthropic", "openai", "unknown"]

_DIALECT_PATHS: dict[str, tuple[Provider, Dialect]] = {
    "/v1/messages": ("anthropic", "anthropic"),
    "/v1/chat/completions": ("openai", "openai"),
    "/v1/responses": ("openai", "openai-responses"),
}

# Substrings one of which a body/event that carries a tool call must contain
# (or spell with a JSON escape: see ``may_carry_tool_call``).
NEEDLES: dict[str, tuple[bytes, ...]] = {
    "anthropic": (b"tool_use",),
    "openai": (b"tool_calls", b"function_call"),
    "openai-responses": (b"function_call", b"custom_tool_call"),
}
_ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")


def may_carry_tool_call(dialect: str, body: bytes) -> bool:
    """False only when no reading of ``body`` (JSON or SSE) can contain a tool call.

    A needle may be spelled with a JSON escape of an ASCII character, and
    ``json.loads`` reads UTF-16/32 bodies (BOM or NUL bytes up front), where
    no needle appears as such.
    """
    for n in NEEDLES[dialect]:
        if n in body:
            return True
    if b"\\u00" in body and _ASCII_ESCAPE.search(body) is not None:
        return True
    return body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    dialect: Dialect | None
    """None: pass-through path (not inspected)."""
    base_url: str
    """The provider's configured base URL."""
    target: str
    """Path and query sent upstream (appended to the base URL's path)."""

    @property
    def upstream_url(self) -> str:
        return self.base_url + self.target


def canonical_path(raw_path: str) -> str:
    """The path as the most liberal server could read it, for routing only.

    Percent-escapes decoded (all of them: a server that decodes ``%2F`` must
    not reach a dialect uninspected), ``\\`` as ``/``, ``;params`` dropped,
    empty and ``.`` segments removed, ``..`` resolved, lower case, no
    trailing slash. The query is not part of it.
    """
    path = raw_path.split("?", 1)[0].split("#", 1)[0]
    for _ in range(3):  # double-encoded escapes too
        dec = unquote(path, errors="replace")
        if dec == path:
            break
        path = dec
    out: list[str] = []
    for seg in path.replace("\\", "/").split("/"):
        seg = seg.split(";", 1)[0].strip()
        if seg in ("", "."):
            continue
        if seg == "..":
            if out:
                out.pop()
            continue
        out.append(seg)
    return "/" + "/".join(out).lower()


def route(method: str, target: str, headers: object, cfg: ProxyConfig) -> Route:
    """Map an incoming request (``target``: its raw path and query) to its upstream and dialect.

    A dialect path in any spelling (``//v1/messages``, ``/V1/./messages``,
    ``/v1/%6Dessages``, ...) is routed as the dialect and sent upstream in its
    canonical spelling with the client's query, so the upstream serves
    exactly what is inspected.
    """
    hit = _DIALECT_PATHS.get(canonical_path(target)) if method.upper() == "POST" else None
    if hit is not None:
        provider, dialect = hit
        path = next(p for p, v in _DIALECT_PATHS.items() if v == hit)
        q = target.find("?")
        target = path + (target[q:] if q >= 0 else "")
    else:
        dialect = None
        provider = _provider_from_headers(headers)
    base = cfg.providers.anthropic.base_url if provider == "anthropic" else cfg.providers.openai.base_url
    return Route(provider, dialect, base, target)


def media_type(content_type: str) -> str:
    """``Text/Event-Stream; charset=utf-8`` -> ``text/event-stream``."""
    return content_type.split(";", 1)[0].strip().lower()


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
        if 400 <= status < 500:
            etype = "invalid_request_error"
        return orjson.dumps({"type": "error", "error": {"type": etype, "message": message}})
    etype = "timeout" if status == 504 else "upstream_error"
    if 400 <= status < 500:
        etype = "invalid_request_error"
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
