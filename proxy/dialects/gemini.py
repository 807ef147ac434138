"""Google Gemini API (``POST .../models/{model}:generateContent`` and
``:streamGenerateContent``): ``functionCall`` parts of ``candidates[].content``
in responses, ``functionResponse`` parts of ``contents[]`` in requests
(docs/proxy.md "Gemini").

Read the way the official ``google-genai`` SDK reads it: its models accept
both the camelCase and the snake_case spelling of every field (a part with
both ``functionCall`` and ``function_call`` is ambiguous and refused), and
its stream decoder reads a line that does not start with ``data: `` as raw
JSON, balanced across lines and events; so a candidate stream event may hold
only ``data:`` lines (and comments without a brace). A function call always
arrives whole in one response object (streamed arguments, Vertex AI's
``partialArgs`` / ``willContinue``, are refused: the Gemini API never sends
them). ``:streamGenerateContent`` without ``alt=sse`` answers a JSON array of
responses: it is read whole, decided and sent on as one body.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote

import orjson

from agentsh.proxy.dialects.base import (
    Dialect,
    Judge,
    Provider,
    Refused,
    RewriteResult,
    ToolResult,
    UsageKeys,
    blocked_text,
    call_name,
    result_name,
    result_texts,
)
from agentsh.proxy.dialects.stream import Call, Interceptor, Item, Parsed, fields, load

_STATUS = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 501: "UNIMPLEMENTED",
    502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip


def error_body(status: int, message: str) -> bytes:
    """A ``google.rpc.Status`` error, as the Gemini API returns it (the SDK raises ``APIError``)."""
    st = _STATUS.get(status) or ("INTERNAL" if status >= 500 else "FAILED_PRECONDITION" if status >= 400 else "UNKNOWN")
    return orjson.dumps({"error": {"code": status, "message": message, "status": st}})


def _claims(headers: Any, target: str) -> bool:
    """A pass-through request with a Gemini credential, or under the Gemini API's versions."""
    get = getattr(headers, "get", None)
    if get is not None and get("x-goog-api-key"):
        return True
    path, _, query = target.partition("?")
    if path[:9].lower().startswith(("/v1beta/", "/v1alpha/")):
        return True
    return bool(query) and any(k == "key" for k, _ in parse_qsl(query, keep_blank_values=True))


PROVIDER = Provider(
    name="gemini",
    default_base_url="https://generativelanguage.googleapis.com",
    error_body=error_body,
    secret_headers=frozenset({"x-goog-api-key"}),
    credential_headers=("x-goog-api-key",),
    secret_query=frozenset({"key"}),
    claims=_claims,
    client_env={"GOOGLE_GEMINI_BASE_URL": ""},
)

_METHODS = {":streamgeneratecontent": ":streamGenerateContent", ":generatecontent": ":generateContent"}
_SAFE = "/-._~!$&'()*+,;=:@"


def match(canon: str, cased: str) -> str | None:
    """Any path whose last segment ends in ``:generateContent`` / ``:streamGenerateContent``
    (the model, its version and any prefix as the client wrote them, re-encoded)."""
    if canon[-16:] != ":generatecontent" and canon[-22:] != ":streamgeneratecontent":
        return None
    for low, method in _METHODS.items():
        if canon.endswith(low):
            n = len(low)
            head = cased[:-n] if cased[-n:].lower() == low else canon[:-n]
            if not head.rstrip("/") or head.endswith("/"):
                return None  # no resource before the method
            return quote(head, safe=_SAFE) + method
    return None


# ------------------------------------------------------------------ function calls


def _one(d: dict[str, Any], camel: str, snake: str, what: str) -> Any:
    a, b = d.get(camel), d.get(snake)
    if a is not None and b is not None:
        raise Refused(f"{what} spelled both {camel} and {snake}")
    return a if a is not None else b


def _function_call(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    fc = _one(part, "functionCall", "function_call", "part")
    if fc is None:
        return None
    if not isinstance(fc, dict):
        raise Refused("functionCall is not an object")
    if _one(fc, "partialArgs", "partial_args", "functionCall") is not None or _one(
        fc, "willContinue", "will_continue", "functionCall"
    ):
        raise Refused("streamed function call arguments (partialArgs/willContinue) are not supported")
    return fc


def _call_of(fc: dict[str, Any]) -> tuple[str, str, Any]:
    name = call_name(fc.get("name"))
    cid = fc.get("id")
    args = fc.get("args")
    if args is not None and not isinstance(args, dict):
        raise Refused("functionCall args is not an object")
    return name, cid if isinstance(cid, str) else "", args if args is not None else {}


def _calls(resp: Any) -> Iterator[tuple[list[Any], int, dict[str, Any]]]:
    """(parts list, index, functionCall) of every function call of one GenerateContentResponse."""
    if not isinstance(resp, dict):
        return
    cands = resp.get("candidates")
    if cands is None:
        return
    if not isinstance(cands, list):
        raise Refused("candidates is not a list")
    for cand in cands:
        if not isinstance(cand, dict):
            continue
        content = cand.get("content")
        if content is None:
            continue
        if not isinstance(content, dict):
            raise Refused("candidate content is not an object")
        parts = content.get("parts")
        if parts is None:
            continue
        if not isinstance(parts, list):
            raise Refused("content parts is not a list")
        for i, part in enumerate(parts):
            fc = _function_call(part)
            if fc is not None:
                yield parts, i, fc


def _replacement(text: str) -> dict[str, Any]:
    return {"text": text}


async def rewrite(doc: Any, judge: Judge) -> RewriteResult:
    """A blocked ``functionCall`` part becomes a text part at its position (``finishReason`` is
    ``STOP`` for function calls already). A JSON array (``:streamGenerateContent`` without
    ``alt=sse``) is decided response by response."""
    res = RewriteResult(None)
    changed = False
    for resp in doc if isinstance(doc, list) else (doc,):
        for parts, i, fc in list(_calls(resp)):
            res.tool_calls += 1
            name, cid, args = _call_of(fc)
            d = await judge(name, cid, args)
            if d is not None and d.blocked:
                res.blocked += 1
                res.blocked_names.append(name)
                parts[i] = _replacement(blocked_text(name, d.reason))
                changed = True
    if changed:
        res.body = orjson.dumps(doc)
    return res


# ------------------------------------------------------------------ streaming (alt=sse)


def _plain_data_event(ev: bytes) -> bool:
    """One ``data:`` line and its blank line (every event of a real Gemini stream)."""
    body = ev.rstrip(b"\r\n")
    return not body or (body.startswith(b"data:") and b"\n" not in body and b"\r" not in body)


class GeminiInterceptor(Interceptor):
    """Each ``data:`` event is a whole GenerateContentResponse: a function call is complete in
    its event, decided there, and the event released as is or with the call replaced."""

    needles = (b"functionCall", b"function_call")

    def wants(self, ev: bytes) -> bool:
        return Interceptor.wants(self, ev) or not _plain_data_event(ev)

    def observe(self, ev: bytes) -> Item:
        seq = next(self._seq)
        for line in ev.splitlines():
            if line and not line.startswith(b"data:") and not (line[:1] == b":" and b"{" not in line):
                raise Refused("a line other than data: in a Gemini stream (its SDK reads such lines as JSON)")
        event, data, eol = fields(ev)
        if data is None:
            return Item(ev, seq=seq)
        obj = load(data, self.c)
        if not isinstance(obj, dict) or obj.get("error") is not None:
            return Item(ev, seq=seq)  # no SDK builds a response from it / the SDK raises it
        found: list[tuple[list[Any], int, Call]] = []
        for parts, i, fc in list(_calls(obj)):
            name, cid, args = _call_of(fc)
            call = Call("function", name=name, call_id=cid, first=seq)
            call.args, call.closed = args, True
            self._pending.append(call)
            found.append((parts, i, call))
        if not found:
            return Item(ev, seq=seq)
        return Item(ev, tuple(c for _, _, c in found), Parsed(event, obj, eol), "chunk", found, seq=seq)

    def render(self, item: Item) -> list[bytes]:
        if item.kind is None or not any(c.blocked for c in item.deps):
            return [item.raw]
        p = item.p
        assert p is not None
        for parts, i, call in item.info:
            if call.decision is not None:
                parts[i] = _replacement(blocked_text(call.name, call.decision.reason))
        return [p.make(p.data)]

    def error_event(self, message: str) -> bytes:
        return b"data: " + error_body(502, message) + b"\r\n\r\n"


# ------------------------------------------------------------------ tool results in requests


def _results(doc: dict[str, Any]) -> Iterator[tuple[str, str | None, Any, dict[str, Any]]]:
    """(call id, name, arguments of its call, functionResponse) of every tool result.

    A result without an ``id`` (the Gemini API does not always set one) is
    named by its position, which stays the same when the conversation is
    re-sent; its call is the latest earlier ``functionCall`` of the same name.
    """
    by_id: dict[str, tuple[str | None, Any]] = {}
    by_name: dict[str | None, Any] = {}
    contents = doc.get("contents")
    for ci, content in enumerate(contents if isinstance(contents, list) else ()):
        parts = content.get("parts") if isinstance(content, dict) else None
        for pi, part in enumerate(parts if isinstance(parts, list) else ()):
            if not isinstance(part, dict):
                continue
            fc = part.get("functionCall", part.get("function_call"))
            if isinstance(fc, dict):
                name = result_name(fc.get("name"))
                by_name[name] = fc.get("args")
                if isinstance(fc.get("id"), str) and fc["id"]:
                    by_id[fc["id"]] = (name, fc.get("args"))
                continue
            fr = part.get("functionResponse", part.get("function_response"))
            if not isinstance(fr, dict):
                continue
            name = result_name(fr.get("name"))
            rid = fr.get("id")
            if isinstance(rid, str) and rid:
                cname, args = by_id.get(rid, (name, by_name.get(name)))
                yield rid, name or cname, args, fr
            else:
                yield f"gemini#{ci}.{pi}:{name}", name, by_name.get(name), fr


def extract_results(doc: dict[str, Any], budget: int) -> list[ToolResult]:
    return [
        ToolResult(cid, name, args, result_texts([fr.get("response"), fr.get("parts")], budget))
        for cid, name, args, fr in _results(doc)
    ]


def withhold(doc: dict[str, Any], texts: Mapping[str, str]) -> int:
    """The result's ``response`` becomes ``{"error": text}`` (the Gemini API's key for a failed call)."""
    n = 0
    for cid, _name, _args, fr in list(_results(doc)):
        if cid in texts:
            fr["response"] = {"error": texts[cid]}
            fr.pop("parts", None)
            n += 1
    return n


DIALECT = Dialect(
    name="gemini",
    provider=PROVIDER,
    match=match,
    needles=(b"functionCall", b"function_call"),
    result_needles=(b"functionResponse", b"function_response"),
    usage=UsageKeys(("promptTokenCount",), ("candidatesTokenCount",), b'TokenCount"', model_key="modelVersion"),
    rewrite=rewrite,
    interceptor=GeminiInterceptor,
    extract_results=extract_results,
    withhold=withhold,
)
