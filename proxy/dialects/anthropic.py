"""Anthropic Messages API (``POST /v1/messages``): ``tool_use`` content blocks,
``tool_result`` blocks in requests (docs/proxy.md "Dialects and routing")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from agentsh.agent.core.lenient_json import Unparseable, loads_ex
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
    exact_path,
    result_name,
    result_texts,
)
from agentsh.proxy.dialects.stream import (
    Call,
    Counters,
    Interceptor,
    Item,
    Parsed,
    escaped,
    fields,
    load,
)
from agentsh.proxy.dialects.stream import is_index as _int


def error_body(status: int, message: str) -> bytes:
    etype = {504: "timeout_error", 529: "overloaded_error"}.get(status, "api_error")
    if 400 <= status < 500:
        etype = "invalid_request_error"
    return orjson.dumps({"type": "error", "error": {"type": etype, "message": message}})


def _claims(headers: Any, target: str) -> bool:
    """The headers the Anthropic SDKs always send."""
    get = getattr(headers, "get", None)
    return get is not None and bool(get("anthropic-version") or get("x-api-key"))


PROVIDER = Provider(
    name="anthropic",
    default_base_url="https://api.anthropic.com",
    error_body=error_body,
    secret_headers=frozenset({"x-api-key"}),
    credential_headers=("x-api-key",),
    claims=_claims,
    client_env={"ANTHROPIC_BASE_URL": ""},
)


# ------------------------------------------------------------------ non-streaming


async def rewrite(doc: Any, judge: Judge) -> RewriteResult:
    """A blocked ``tool_use`` block becomes a text block at its position; ``stop_reason``
    ``tool_use`` becomes ``end_turn`` when every call was blocked."""
    if not isinstance(doc, dict):
        return RewriteResult(None)  # no SDK builds a message from it
    content = doc.get("content")
    res = RewriteResult(None)
    if content is None:
        return res
    if not isinstance(content, list):
        raise Refused("message content is not a list")
    new: list[Any] = []
    changed = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            res.tool_calls += 1
            name = call_name(block.get("name"))
            cid = block.get("id")
            d = await judge(name, cid if isinstance(cid, str) else "", block.get("input"))
            if d is not None and d.blocked:
                res.blocked += 1
                res.blocked_names.append(name)
                new.append({"type": "text", "text": blocked_text(name, d.reason)})
                changed = True
                continue
        new.append(block)
    if not changed:
        return res
    doc["content"] = new
    if res.blocked == res.tool_calls and doc.get("stop_reason") == "tool_use":
        doc["stop_reason"] = "end_turn"
    res.body = orjson.dumps(doc)
    return res


# ------------------------------------------------------------------ streaming


_A_TYPES = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)


class AnthropicInterceptor(Interceptor):
    # Whatever can place, open, feed or close a tool_use block, or carry one, is
    # a message_*, content_block_start/stop or input_json_delta event: its type
    # is spelled with one of these (or an escape). Text deltas have none.
    needles = (b"block_st", b"input_json", b"message_")

    def wants(self, ev: bytes) -> bool:
        return b"block_st" in ev or b"message_" in ev or b"input_json" in ev or escaped(ev)

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.blocks: list[Call | None] = []  # by position, as the SDK's message.content
        self.open: dict[int, Call] = {}
        self.started = False

    def _tool(self, block: dict[str, Any], seq: int) -> Call:
        name = block.get("name")
        if not isinstance(name, str):
            raise Refused("tool_use block without a string name")
        cid = block.get("id")
        call = Call("tool_use", name=name, call_id=cid if isinstance(cid, str) else "", first=seq)
        call.initial = block.get("input")
        return call

    def observe(self, ev: bytes) -> Item:
        seq = next(self._seq)
        event, data, eol = fields(ev)
        if not data:
            return Item(ev, seq=seq)
        if event is None or event == "ping":
            # the SDKs skip these events unread; one that would matter to another reader is ambiguous
            try:
                obj = loads_ex(data)[0]
            except Unparseable:
                return Item(ev, seq=seq)
            if isinstance(obj, dict) and obj.get("type") in _A_TYPES:
                raise Refused(f"{obj['type']} event without a matching event name")
            return Item(ev, seq=seq)
        if event == "error":
            return Item(ev, seq=seq)  # the SDK raises it
        obj = load(data, self.c)
        t = obj.get("type") if isinstance(obj, dict) else None
        if t != event:
            raise Refused(f"event name {event!r} does not match its data type {t!r}")
        assert isinstance(obj, dict)
        p = Parsed(event, obj, eol)
        if t == "message_start":
            if self.started:
                raise Refused("second message_start")
            self.started = True
            msg = obj.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            if content is None:
                return Item(ev, seq=seq)
            if not isinstance(content, list):
                raise Refused("message_start content is not a list")
            deps: list[Call] = []
            for blk in content:
                if isinstance(blk, dict) and blk.get("type") == "tool_use":
                    call = self._tool(blk, seq)
                    self._close(call)  # complete as it stands; later input is refused
                    self.blocks.append(call)
                    deps.append(call)
                else:
                    self.blocks.append(None)
            return Item(ev, tuple(deps), p, "message_start", seq=seq)
        if t in ("content_block_start", "content_block_delta", "content_block_stop") and not self.started:
            raise Refused(f"{t} before message_start")
        if t == "content_block_start":
            idx = obj.get("index")
            if not _int(idx) or idx != len(self.blocks):
                raise Refused("content_block_start index out of order")
            cb = obj.get("content_block")
            if not isinstance(cb, dict):
                raise Refused("content_block_start without a content_block")
            if cb.get("type") == "tool_use":
                call = self._tool(cb, seq)
                self.blocks.append(call)
                self.open[idx] = call
                return Item(ev, (call,), p, "start", idx, seq=seq)
            self.blocks.append(None)
            return Item(ev, seq=seq)
        if t == "content_block_delta" or t == "content_block_stop":
            idx = obj.get("index")
            if not _int(idx) or idx >= len(self.blocks):
                raise Refused(f"{t} for an unknown block")
            block = self.blocks[idx]
            if block is None:
                return Item(ev, seq=seq)
            call = block
            if t == "content_block_stop":
                if idx in self.open:
                    del self.open[idx]
                    self._close(call)
                return Item(ev, (call,), p, "stop", seq=seq)
            delta = obj.get("delta")
            dtype = delta.get("type") if isinstance(delta, dict) else None
            if dtype == "input_json_delta":
                if idx not in self.open:
                    raise Refused("tool input after its block was closed")
                pj = delta.get("partial_json")  # type: ignore[union-attr]
                if not isinstance(pj, str):
                    raise Refused("input_json_delta without a string partial_json")
                call.arg_parts.append(pj)
            return Item(ev, (call,), p, "part", seq=seq)
        if t == "message_delta":
            return Item(ev, (), p, "message_delta", seq=seq)
        return Item(ev, seq=seq)

    def end(self) -> None:
        for call in self.open.values():
            self._close(call)
        self.open.clear()

    def render(self, item: Item) -> list[bytes]:
        k = item.kind
        if k is None:
            return [item.raw]
        p = item.p
        assert p is not None
        if k == "message_start":
            if not any(c.blocked for c in item.deps):
                return [item.raw]
            calls = iter(item.deps)
            content = p.data["message"]["content"]
            for i, blk in enumerate(content):
                if isinstance(blk, dict) and blk.get("type") == "tool_use":
                    call = next(calls)
                    if call.decision is not None:
                        content[i] = {"type": "text", "text": blocked_text(call.name, call.decision.reason)}
            return [p.make(p.data)]
        if k == "message_delta":
            delta = p.data.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") == "tool_use" and self.total and self.nblocked == self.total:
                delta["stop_reason"] = "end_turn"
                return [p.make(p.data)]
            return [item.raw]
        call = item.deps[0]
        if call.decision is None:
            return [item.raw]
        if k != "start":
            return []  # the blocked block's deltas and stop
        idx = item.info
        text = blocked_text(call.name, call.decision.reason)
        return [
            p.make({"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}),
            p.make({"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": text}}),
            p.make({"type": "content_block_stop", "index": idx}),
        ]

    def error_event(self, message: str) -> bytes:
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + orjson.dumps(body) + b"\n\n"


# ------------------------------------------------------------------ tool results in requests


def extract_results(doc: dict[str, Any], budget: int) -> list[ToolResult]:
    calls: dict[str, tuple[str | None, Any]] = {}
    out: list[ToolResult] = []
    msgs = doc.get("messages")
    for m in msgs if isinstance(msgs, list) else ():
        blocks = m.get("content") if isinstance(m, dict) else None
        for b in blocks if isinstance(blocks, list) else ():
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "tool_use":
                cid = b.get("id")
                if isinstance(cid, str):
                    calls[cid] = (result_name(b.get("name")), b.get("input"))
            elif kind == "tool_result":
                tid = b.get("tool_use_id")
                if not isinstance(tid, str) or not tid:
                    continue
                name, args = calls.get(tid, (None, None))
                out.append(ToolResult(tid, name, args, result_texts(b.get("content"), budget), b.get("is_error") is True))
    return out


def withhold(doc: dict[str, Any], texts: Mapping[str, str]) -> int:
    n = 0
    for m in doc.get("messages") or ():
        for b in (m.get("content") if isinstance(m, dict) else None) or ():
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in texts:
                b["content"] = [{"type": "text", "text": texts[b["tool_use_id"]]}]
                b["is_error"] = True
                n += 1
    return n


DIALECT = Dialect(
    name="anthropic",
    provider=PROVIDER,
    match=exact_path("/v1/messages"),
    needles=(b"tool_use",),
    result_needles=(b"tool_result",),
    usage=UsageKeys(("input_tokens",), ("output_tokens",), b'_tokens"'),
    rewrite=rewrite,
    interceptor=AnthropicInterceptor,
    extract_results=extract_results,
    withhold=withhold,
)
