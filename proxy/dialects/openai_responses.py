"""OpenAI Responses API (``POST /v1/responses``): ``function_call`` and
``custom_tool_call`` output items; ``*_call_output`` input items in requests
(docs/proxy.md "Dialects and routing"). Same provider as chat completions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from agentsh.proxy.dialects.base import (
    Dialect,
    Judge,
    Refused,
    RewriteResult,
    ToolResult,
    UsageKeys,
    blocked_text,
    call_name,
    exact_path,
    parse_args,
    result_name,
    result_texts,
)
from agentsh.proxy.dialects.openai_chat import PROVIDER
from agentsh.proxy.dialects.stream import (
    Call,
    Counters,
    Interceptor,
    Item,
    Parsed,
    fields,
    load,
)
from agentsh.proxy.dialects.stream import is_index as _int
from agentsh.proxy.dialects.stream import text_or_none as _text

_SEQ = re.compile(rb'"sequence_number":(\s*)(\d+)')


# ------------------------------------------------------------------ non-streaming


def responses_message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """A Responses API output message carrying the replacement text."""
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        if status == "completed"
        else [],
    }


def responses_item_id(call_id: str, output_index: int) -> str:
    tail = call_id.removeprefix("call_") or str(output_index)
    return f"msg_agentsh_{tail}"


RESPONSES_TOOL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}


async def rewrite(doc: Any, judge: Judge) -> RewriteResult:
    """A blocked item becomes a ``message`` output item at its position (no stop reason to change)."""
    if not isinstance(doc, dict):
        return RewriteResult(None)  # no SDK builds a message from it
    res = RewriteResult(None)
    output = doc.get("output")
    if output is None:
        return res
    if not isinstance(output, list):
        raise Refused("response output is not a list")
    new: list[Any] = []
    for i, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in RESPONSES_TOOL_ITEMS:
            assert isinstance(item, dict)
            res.tool_calls += 1
            name = call_name(item.get("name"))
            cid = item.get("call_id")
            call_id = cid if isinstance(cid, str) else ""
            raw = item.get(RESPONSES_TOOL_ITEMS[kind])
            d = await judge(name, call_id, parse_args(raw) if kind == "function_call" else raw)
            if d is not None and d.blocked:
                res.blocked += 1
                res.blocked_names.append(name)
                new.append(responses_message_item(responses_item_id(call_id, i), blocked_text(name, d.reason)))
                continue
        new.append(item)
    if res.blocked:
        doc["output"] = new
        res.body = orjson.dumps(doc)
    return res


# ------------------------------------------------------------------ streaming


_R_TOOLS: dict[str, tuple[str, str, str]] = {
    # item type -> (arguments field, delta event, done event)
    "function_call": ("arguments", "response.function_call_arguments.delta", "response.function_call_arguments.done"),
    "custom_tool_call": ("input", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"),
}
_R_PARTS = {v[1]: k for k, v in _R_TOOLS.items()} | {v[2]: k for k, v in _R_TOOLS.items()}


class OpenAIResponsesInterceptor(Interceptor):
    # every output_item.added is placed (one per item), so an index is never reused unseen
    needles = (b"function_call", b"custom_tool_call", b"output_item.added")

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.items: dict[int, Call | None] = {}  # output_index -> tool call (None: another item)
        self.open: dict[int, Call] = {}
        self.known: dict[tuple[str, str, str, str], Call] = {}
        self.offset = 0

    def wants(self, ev: bytes) -> bool:
        return self.offset != 0 or Interceptor.wants(self, ev)

    def _renumber(self, ev: bytes) -> bytes:
        off = self.offset
        if not off:
            return ev
        return _SEQ.sub(lambda m: b'"sequence_number":' + m.group(1) + str(int(m.group(2)) + off).encode(), ev)

    def _item_call(self, item: dict[str, Any], oi: int, seq: int) -> Call:
        kind = item["type"]
        name = item.get("name")
        if not isinstance(name, str):
            raise Refused(f"{kind} item without a string name")
        cid = _text(item.get("call_id"), "call_id") or ""
        init = _text(item.get(_R_TOOLS[kind][0]), "tool arguments")
        call = Call(kind, name=name, call_id=cid, initial=init, first=seq, out_index=oi)
        return call

    def _finish(self, call: Call, final: str | None) -> None:
        if final is not None:
            call.initial, call.arg_parts = final, []
        self._close(call)
        self.known.setdefault((call.kind, call.name, call.call_id, call.raw_args or ""), call)

    def observe(self, ev: bytes) -> Item:
        seq = next(self._seq)
        if not Interceptor.wants(self, ev):
            return Item(ev, seq=seq)  # only here to be renumbered
        event, data, eol = fields(ev)
        if data is None:
            return Item(ev, seq=seq)
        if data.startswith("[DONE]"):
            return Item(ev, tuple(self._end_calls()), seq=seq)
        if event is not None and event.startswith("thread."):
            raise Refused(f"unexpected event {event!r} in a responses stream")
        obj = load(data, self.c)
        if not isinstance(obj, dict):
            raise Refused("responses event is not an object")
        if obj.get("error"):
            return Item(ev, seq=seq)  # the SDK raises it
        p = Parsed(event, obj, eol)
        t = obj.get("type")
        oi = obj.get("output_index")
        if t == "response.output_item.added":
            item = obj.get("item")
            if item is None:
                return Item(ev, p=p, seq=seq)
            if not _int(oi) or not isinstance(item, dict):
                raise Refused("output_item.added without an output_index or item")
            if oi in self.items:
                raise Refused("duplicate output_index")
            if item.get("type") in _R_TOOLS:
                call = self._item_call(item, oi, seq)
                self.items[oi] = self.open[oi] = call
                return Item(ev, (call,), p, "added", seq=seq)
            self.items[oi] = None
            return Item(ev, p=p, seq=seq)
        if t in _R_PARTS:
            known = self.items.get(oi) if _int(oi) else None
            if known is None or known.kind != _R_PARTS[t]:
                if _int(oi) and oi in self.items:
                    return Item(ev, p=p, seq=seq)  # another item's type: the SDK ignores or rejects it
                raise Refused(f"{t} for an unknown output item")
            if oi not in self.open:
                raise Refused(f"{t} after its item was done")
            call = known
            argkey = _R_TOOLS[call.kind][0]
            if t.endswith(".delta"):
                delta = obj.get("delta")
                if not isinstance(delta, str):
                    raise Refused(f"{t} without a string delta")
                call.arg_parts.append(delta)
            else:
                call.done_args = _text(obj.get(argkey), "tool arguments")
                name = obj.get("name")
                if name is not None and name != call.name:
                    raise Refused("tool name differs between output_item.added and arguments.done")
            return Item(ev, (call,), p, "part", seq=seq)
        if t == "response.output_item.done":
            item = obj.get("item")
            if not _int(oi) or not isinstance(item, dict):
                raise Refused("output_item.done without an output_index or item")
            kind = item.get("type")
            prev = self.items.get(oi, False)
            if isinstance(prev, Call):
                if oi not in self.open:
                    raise Refused("output item done twice")
                final = self._item_call(item, oi, seq) if kind in _R_TOOLS else None
                if final is None or final.kind != prev.kind or final.name != prev.name or final.call_id != prev.call_id:
                    raise Refused("tool call item changed between output_item.added and output_item.done")
                streamed = (prev.initial or "") + "".join(prev.arg_parts)
                final_args = final.initial or ""
                if (prev.arg_parts or prev.initial) and streamed != final_args:
                    raise Refused("tool arguments differ between the deltas and output_item.done")
                if prev.done_args is not None and prev.done_args != final_args:
                    raise Refused("tool arguments differ between arguments.done and output_item.done")
                del self.open[oi]
                self._finish(prev, final_args)
                return Item(ev, (prev,), p, "done", seq=seq)
            if kind in _R_TOOLS:
                if prev is None:
                    raise Refused("output item changed type between added and done")
                call = self._item_call(item, oi, seq)
                self.items[oi] = call
                self._finish(call, None)
                return Item(ev, (call,), p, "done", seq=seq)
            return Item(ev, p=p, seq=seq)
        resp = obj.get("response")
        if isinstance(resp, dict) and resp.get("output") is not None:
            output = resp["output"]
            if not isinstance(output, list):
                raise Refused("response output is not a list")
            found: list[tuple[int, Call]] = []
            for pos, it in enumerate(output):
                if isinstance(it, dict) and it.get("type") in _R_TOOLS:
                    c = self._item_call(it, pos, seq)
                    args = c.initial or ""
                    hit = self.known.get((c.kind, c.name, c.call_id, args))
                    if hit is None:
                        self._finish(c, args)
                        hit = c
                    found.append((pos, hit))
            if found:
                return Item(ev, tuple(dict.fromkeys(c for _, c in found)), p, "lifecycle", found, seq=seq)
        return Item(ev, p=p, seq=seq)

    def _end_calls(self) -> list[Call]:
        deps = list(self.open.values())
        for call in deps:
            self._finish(call, None)
        self.open.clear()
        return deps

    def end(self) -> None:
        self._end_calls()

    def _seqd(self, d: dict[str, Any], obj: dict[str, Any], extra: int = 0) -> dict[str, Any]:
        s = d.get("sequence_number")
        if _int(s):
            obj["sequence_number"] = s + self.offset + extra
        return obj

    def render(self, item: Item) -> list[bytes]:
        k = item.kind
        p = item.p
        if k is None or p is None or not any(c.blocked for c in item.deps):
            return [self._renumber(item.raw)]
        d = p.data
        counted = _int(d.get("sequence_number"))
        if k == "lifecycle":
            out = d["response"]["output"]
            for pos, call in item.info:
                if call.decision is not None:
                    out[pos] = responses_message_item(*self._replacement(call))
            return [p.make(self._seqd(d, d))]
        call = item.deps[0]
        mid, text = self._replacement(call)
        if k == "part":
            if counted:
                self.offset -= 1
            return []
        oi = call.out_index
        if k == "done":
            return [p.make(self._seqd(d, {"type": d["type"], "output_index": oi, "item": responses_message_item(mid, text)}))]
        # "added": the message item and its text, in the events the SDK expects
        part0 = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        part1 = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        common = {"item_id": mid, "output_index": oi, "content_index": 0}
        out_ev = [
            p.make(self._seqd(d, {"type": d["type"], "output_index": oi, "item": responses_message_item(mid, text, "in_progress")})),
            p.make(self._seqd(d, {"type": "response.content_part.added", **common, "part": part0}, 1)),
            p.make(self._seqd(d, {"type": "response.output_text.delta", **common, "delta": text, "logprobs": []}, 2)),
            p.make(self._seqd(d, {"type": "response.output_text.done", **common, "text": text, "logprobs": []}, 3)),
            p.make(self._seqd(d, {"type": "response.content_part.done", **common, "part": part1}, 4)),
        ]
        if counted:
            self.offset += 4
        return out_ev

    @staticmethod
    def _replacement(call: Call) -> tuple[str, str]:
        assert call.decision is not None
        return responses_item_id(call.call_id, call.out_index), blocked_text(call.name, call.decision.reason)

    def error_event(self, message: str) -> bytes:
        err = {"type": "agentsh_refused", "code": "agentsh_refused", "message": message, "param": None}
        body = {"type": "error", "code": "agentsh_refused", "message": message, "param": None, "error": err}
        return b"event: error\ndata: " + orjson.dumps(body) + b"\n\n"


# ------------------------------------------------------------------ tool results in requests


_RESPONSES_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_RESPONSES_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def extract_results(doc: dict[str, Any], budget: int) -> list[ToolResult]:
    calls: dict[str, tuple[str | None, Any]] = {}
    out: list[ToolResult] = []
    items = doc.get("input")
    for it in items if isinstance(items, list) else ():
        if not isinstance(it, dict):
            continue
        kind = it.get("type")
        cid = it.get("call_id")
        if not isinstance(cid, str) or not cid:
            continue
        if kind in _RESPONSES_CALLS:
            raw = it.get(_RESPONSES_CALLS[kind])
            calls[cid] = (result_name(it.get("name")), parse_args(raw) if kind == "function_call" else raw)
        elif kind in _RESPONSES_OUTPUTS:
            name, args = calls.get(cid, (None, None))
            out.append(ToolResult(cid, name, args, result_texts(it.get("output"), budget)))
    return out


def withhold(doc: dict[str, Any], texts: Mapping[str, str]) -> int:
    n = 0
    for it in doc.get("input") or ():
        if isinstance(it, dict) and str(it.get("type", "")).endswith("_call_output") and it.get("call_id") in texts:
            it["output"] = texts[it["call_id"]]
            n += 1
    return n


DIALECT = Dialect(
    name="openai-responses",
    provider=PROVIDER,
    match=exact_path("/v1/responses"),
    needles=(b"function_call", b"custom_tool_call"),
    result_needles=(b"_call_output",),
    usage=UsageKeys(("input_tokens",), ("output_tokens",), b'_tokens"'),
    rewrite=rewrite,
    interceptor=OpenAIResponsesInterceptor,
    extract_results=extract_results,
    withhold=withhold,
)
