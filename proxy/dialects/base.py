"""What a provider dialect is, and the pieces every dialect shares
(docs/proxy.md "Dialects and routing", "Adding a provider").

A ``Provider`` is one upstream API (its ``proxy.providers`` key, default base
URL, credentials, error shape); a ``Dialect`` is one request/response format
it speaks on some paths (how to find, decide and replace tool calls in a
buffered body and in a stream, where tool results are in a request, which
usage keys count tokens). The one list of them is ``agentsh.proxy.dialects``.

This module and the dialect modules import nothing heavy (no aiohttp, no
pydantic): the daemon and ``agentshctl`` import the registry to check
``proxy.providers`` keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentsh.agent.core.lenient_json import Unparseable, loads_ex

if TYPE_CHECKING:
    from agentsh.agent.core.mcp.types import Decision
    from agentsh.proxy.dialects.stream import Counters, Interceptor

# judge(name, call_id, arguments) -> Decision | None (None: not an MCP tool)
Judge = Callable[[str, str, Any], Awaitable["Decision | None"]]

_ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")


class Refused(Exception):
    """A response (or stream) that may carry a tool call cannot be parsed and decided."""


def blocked_text(name: str, reason: str) -> str:
    """The replacement text the agent (and the model) sees for a blocked call."""
    if reason:
        return f"[agentsh] Tool '{name}' blocked by policy: {reason}"
    return f"[agentsh] Tool '{name}' blocked by policy"


def may_carry(needles: tuple[bytes, ...], body: bytes) -> bool:
    """False only when no reading of ``body`` (JSON or SSE) can contain one of ``needles``.

    A needle may be spelled with a JSON escape of an ASCII character, and
    ``json.loads`` reads UTF-16/32 bodies (BOM or NUL bytes up front), where
    no needle appears as such.
    """
    for n in needles:
        if n in body:
            return True
    if b"\\u00" in body and _ASCII_ESCAPE.search(body) is not None:
        return True
    return body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]


def parse_args(raw: Any) -> Any:
    """Tool arguments as the agent will read them: JSON text decoded, else the text itself."""
    if isinstance(raw, str):
        try:
            return loads_ex(raw)[0]
        except Unparseable:
            return raw
    return raw


def parse_body(body: bytes) -> tuple[Any, bool]:
    """(value, strict) of a JSON body as ``json.loads(bytes)`` reads it; Refused if it cannot be read."""
    data: bytes | str = body
    if body[:3] != b"\xef\xbb\xbf" and (body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]):
        try:
            data = body.decode(json.detect_encoding(body), "surrogatepass")
        except (UnicodeDecodeError, LookupError):
            raise Refused("response body is neither UTF-8 nor readable UTF-16/32 JSON") from None
    try:
        return loads_ex(data)
    except Unparseable as e:
        raise Refused(f"unparseable JSON response ({e})") from None


def call_name(v: Any) -> str:
    if not isinstance(v, str):
        raise Refused("tool call without a string name")
    return v


@dataclass
class RewriteResult:
    body: bytes | None
    """New body, or None when the original bytes stand."""
    tool_calls: int = 0
    blocked: int = 0
    blocked_names: list[str] = field(default_factory=list)
    strict: bool = True
    """False when only the lenient parser could read the body."""


# ------------------------------------------------------------------ tool results (requests)


@dataclass(slots=True)
class ToolResult:
    """One tool result of a request, with the call that produced it."""

    call_id: str
    tool_name: str | None
    """None: its call is not in the request (the feed looks it up in what it remembers)."""
    arguments: Any
    content: list[str]
    is_error: bool = False


_SKIP_KEYS = frozenset(
    {
        "type", "id", "tool_use_id", "tool_call_id", "call_id", "media_type", "mime_type", "mimeType",
        "cache_control", "citations", "annotations", "logprobs", "status", "is_error", "role",
        "detail", "file_id", "name", "fileUri", "file_uri",
    }
)  # fmt: skip
_BINARY_TYPES = frozenset(
    {"image", "audio", "image_url", "input_image", "input_audio", "input_file", "file", "base64"}
)
_MEDIA_KEYS = ("media_type", "mime_type", "mimeType")


def result_texts(content: Any, budget: int) -> list[str]:
    """The text of a tool result in any of the dialects' shapes, bounded by
    ``budget`` characters: a string; a list of blocks / parts (``text``,
    Anthropic ``document`` with a text source, ``search_result`` and nested
    ``content``, OpenAI ``text`` / ``input_text`` / ``output_text`` parts,
    Gemini ``response`` objects). Images, audio, files and base64 sources are
    skipped (no text the agent could pass on verbatim), as are ids, types and
    other metadata. A string that is JSON (an MCP result in Claude Code) is
    kept whole: the engine opens it."""
    out: list[str] = []
    left = budget
    stack: list[tuple[Any, int]] = [(content, 0)]
    while stack and left > 0:
        v, depth = stack.pop()
        if isinstance(v, str):
            if v:
                out.append(v[:left])
                left -= min(len(v), left)
        elif isinstance(v, list):
            if depth < 32:
                stack.extend((x, depth + 1) for x in reversed(v))
        elif isinstance(v, dict):
            kind = v.get("type")
            if depth >= 32 or (isinstance(kind, str) and kind in _BINARY_TYPES):
                continue
            if "data" in v and any(k in v for k in _MEDIA_KEYS) and v.get("type") != "text":
                continue  # a base64 source by its shape
            stack.extend(
                (x, depth + 1)
                for k, x in reversed(list(v.items()))
                if isinstance(k, str) and k not in _SKIP_KEYS
            )
    return out


def result_name(v: Any) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= 256 else None


# ------------------------------------------------------------------ usage (no parse)


class UsageKeys:
    """The response keys a dialect reports tokens and the model under, as one regex."""

    __slots__ = ("hint", "inputs", "model_hint", "model_re", "usage_re")

    def __init__(self, inputs: tuple[str, ...], outputs: tuple[str, ...], hint: bytes, model_key: str = "model") -> None:
        keys = "|".join(re.escape(k) for k in (*inputs, *outputs))
        self.usage_re = re.compile(rb'"(' + keys.encode() + rb')"\s*:\s*(\d+)')
        self.inputs = frozenset(k.encode() for k in inputs)
        self.hint = hint
        """A substring every usage key ends with (the cheap test before the regex)."""
        self.model_hint = b'"' + model_key.encode() + b'"'
        self.model_re = re.compile(re.escape(self.model_hint) + rb'\s*:\s*"([^"\\]{1,200})"')


class UsageScan:
    """Token counts picked out of response bytes with one regex, no JSON parse.

    Counts in Anthropic's message_delta, the providers' final usage objects
    and Gemini's per-chunk ``usageMetadata`` are cumulative, so the largest
    value seen per key is the total.
    """

    __slots__ = ("input", "keys", "model", "output")

    def __init__(self, keys: tuple[UsageKeys, ...] = ()) -> None:
        self.keys = keys
        self.input: int | None = None
        self.output: int | None = None
        self.model: str | None = None

    def scan(self, data: bytes) -> None:
        for k in self.keys:
            if k.hint in data:
                for key, val in k.usage_re.findall(data):
                    n = int(val)
                    if key in k.inputs:
                        if self.input is None or n > self.input:
                            self.input = n
                    elif self.output is None or n > self.output:
                        self.output = n
            if self.model is None and k.model_hint in data:
                m = k.model_re.search(data)
                if m is not None:
                    self.model = m.group(1).decode("utf-8", "replace")


# ------------------------------------------------------------------ provider and dialect


def _no_claim(headers: Any, target: str) -> bool:
    return False


@dataclass(frozen=True, slots=True, eq=False)
class Provider:
    """One upstream API."""

    name: str
    """Its key under ``proxy.providers`` and the ``provider`` of ``llm_request`` events."""
    default_base_url: str
    """Where it goes when ``proxy.providers.<name>`` is not set."""
    error_body: Callable[[int, str], bytes]
    """An error (status, message) in the shape its SDK parses (so the agent sees a clean API error)."""
    secret_headers: frozenset[str] = frozenset()
    """Request headers that carry its credentials (never logged, never in an event)."""
    credential_headers: tuple[str, ...] = ()
    """Headers whose value identifies the caller (a flow session per credential)."""
    secret_query: frozenset[str] = frozenset()
    """Query parameters that carry its credentials (redacted wherever a target is shown)."""
    claims: Callable[[Any, str], bool] = _no_claim
    """(headers, target) -> a pass-through request belongs to it (checked in registry order)."""
    client_env: Mapping[str, str] = field(default_factory=dict)
    """``agentshctl proxy env``: environment variable -> path under the proxy's root URL."""


@dataclass(frozen=True, slots=True, eq=False)
class Dialect:
    """One request/response format: everything the proxy does differently per format."""

    name: str
    """``llm_request.dialect``, the ``dialect`` of decisions."""
    provider: Provider
    match: Callable[[str, str], str | None]
    """(canonical path, the same path with its case kept) -> the path sent upstream, or None."""
    needles: tuple[bytes, ...]
    """A response body that carries a tool call contains one of these (or spells it with an escape)."""
    result_needles: tuple[bytes, ...]
    """A request body that carries a tool result contains one of these (or spells it with an escape)."""
    usage: UsageKeys
    rewrite: Callable[[Any, Judge], Awaitable[RewriteResult]]
    """Decide the tool calls of a parsed non-streaming body and rewrite blocked ones (Refused if it cannot)."""
    interceptor: Callable[[Judge, Counters], Interceptor]
    """A stream model (docs/proxy.md "Streaming") for one response."""
    extract_results: Callable[[dict[str, Any], int], list[ToolResult]]
    """Every tool result of a parsed request (with the name and arguments of its call when present)."""
    withhold: Callable[[dict[str, Any], Mapping[str, str]], int]
    """Replace the content of the results with these call ids by the given text; returns how many."""

    def may_carry_tool_call(self, body: bytes) -> bool:
        return may_carry(self.needles, body)

    def may_carry_tool_result(self, body: bytes) -> bool:
        return may_carry(self.result_needles, body)

    def __repr__(self) -> str:
        return f"Dialect({self.name!r})"


def exact_path(path: str) -> Callable[[str, str], str | None]:
    """A matcher for one fixed path (canonical spelling: lower case)."""

    def match(canon: str, _cased: str) -> str | None:
        return path if canon == path else None

    return match
