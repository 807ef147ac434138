"""Real-time SSE relay with inline blocking of tool calls (seed 004).

``SSERelay`` splits the upstream bytes into SSE events and writes each one to
the client as soon as it is complete. An event is only looked at when a cheap
substring test says it could matter (``tool_use`` / ``tool_calls`` /
``function_call``, or state left by an earlier block); everything else is
written as the exact bytes received. Three dialect state machines rewrite the
candidates so that the stream stays well-formed for the SDKs' accumulators:

* Anthropic: a blocked ``tool_use`` block becomes a text block at the same
  index (start + delta + stop), its deltas and stop are dropped, and
  ``stop_reason`` becomes ``end_turn`` only when every tool call was blocked.
* OpenAI chat: blocked entries leave ``tool_calls`` (allowed ones are
  renumbered so the SDK's index-based accumulator stays dense), the
  replacement text goes into ``delta.content``, ``finish_reason`` becomes
  ``stop`` only when every tool call of the choice was blocked.
* OpenAI Responses: a blocked ``function_call`` output item becomes a
  ``message`` item at the same ``output_index`` (added, content part, text
  delta/done, part done, item done), its argument events are dropped, the
  final ``response.completed`` output is rewritten, and ``sequence_number``
  stays contiguous.

Malformed JSON is passed through and counted; an event longer than the limit
switches the relay to plain copying for the rest of the stream.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentsh.agent.mcp.types import Decision
from agentsh.proxy.decider import blocked_text
from agentsh.proxy.dialects import UsageScan
from agentsh.proxy.rewrite import responses_item_id, responses_message_item

Judge = Callable[[str, str, Any], Awaitable[Decision | None]]
Write = Callable[[bytes], Awaitable[None]]

_END_OF_EVENT = re.compile(rb"\n\r?\n")
_SEQ = re.compile(rb'"sequence_number":(\s*)(\d+)')


@dataclass(slots=True)
class Counters:
    tool_calls: int = 0
    blocked: int = 0
    malformed: int = 0
    blocked_names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Parsed:
    event: str | None
    data: Any
    eol: bytes

    def make(self, obj: Any, event: str | None = None) -> bytes:
        """Serialise a (synthetic or rewritten) event in the upstream's framing."""
        eol = self.eol
        head = b""
        if self.event is not None:
            name = event if event is not None else (obj.get("type") if isinstance(obj, dict) else None)
            head = b"event: " + str(name or self.event).encode() + eol
        return head + b"data: " + orjson.dumps(obj) + eol + eol


def parse_event(ev: bytes, counters: Counters) -> Parsed | None:
    """The JSON data of one SSE event, or None (no data, [DONE], or malformed: counted)."""
    event: str | None = None
    parts: list[bytes] = []
    for line in ev.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.startswith(b"data:"):
            v = line[5:]
            parts.append(v[1:] if v.startswith(b" ") else v)
        elif line.startswith(b"event:"):
            v = line[6:]
            event = (v[1:] if v.startswith(b" ") else v).decode("utf-8", "replace")
    if not parts:
        return None
    data = parts[0] if len(parts) == 1 else b"\n".join(parts)
    if data.startswith(b"[DONE]"):
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        counters.malformed += 1
        return None
    eol = b"\r\n" if b"\r\n" in ev else b"\n"
    return Parsed(event, obj, eol)


class Interceptor:
    """Base: per-stream state machine for one dialect."""

    needles: tuple[bytes, ...] = ()

    def __init__(self, judge: Judge, counters: Counters) -> None:
        self.judge = judge
        self.c = counters

    def wants(self, ev: bytes) -> bool:
        return any(n in ev for n in self.needles)

    async def process(self, ev: bytes) -> list[bytes] | None:
        """Replacement events for ``ev`` (empty list: drop it), or None to pass it unchanged."""
        raise NotImplementedError

    async def _verdict(self, name: str, call_id: str, args: Any) -> Decision | None:
        self.c.tool_calls += 1
        d = await self.judge(name, call_id, args)
        if d is not None and d.blocked:
            self.c.blocked += 1
            self.c.blocked_names.append(name)
            return d
        return None


class AnthropicInterceptor(Interceptor):
    needles = (b"tool_use",)

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.blocked_idx: set[Any] = set()
        self.total = 0
        self.blocked = 0

    def wants(self, ev: bytes) -> bool:
        if b"tool_use" in ev:
            return True
        return bool(self.blocked_idx) and (b"content_block_delta" in ev or b"content_block_stop" in ev)

    async def process(self, ev: bytes) -> list[bytes] | None:
        p = parse_event(ev, self.c)
        if p is None or not isinstance(p.data, dict):
            return None
        d = p.data
        t = d.get("type")
        if t == "content_block_start":
            cb = d.get("content_block")
            if not isinstance(cb, dict) or cb.get("type") != "tool_use":
                return None
            self.total += 1
            name = str(cb.get("name", ""))
            dec = await self._verdict(name, str(cb.get("id", "")), None)
            if dec is None:
                return None
            idx = d.get("index")
            self.blocked_idx.add(idx)
            self.blocked += 1
            text = blocked_text(name, dec.reason)
            return [
                p.make({"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}),
                p.make({"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": text}}),
                p.make({"type": "content_block_stop", "index": idx}),
            ]
        if t in ("content_block_delta", "content_block_stop"):
            return [] if d.get("index") in self.blocked_idx else None
        if t == "message_delta":
            delta = d.get("delta")
            if (
                isinstance(delta, dict)
                and delta.get("stop_reason") == "tool_use"
                and self.total
                and self.blocked == self.total
            ):
                delta["stop_reason"] = "end_turn"
                return [p.make(d)]
        return None


@dataclass(slots=True)
class _Choice:
    seen: set[int] = field(default_factory=set)
    blocked: set[int] = field(default_factory=set)
    index_map: dict[int, int] = field(default_factory=dict)
    next_index: int = 0
    total: int = 0
    texts: int = 0
    fc_blocked: bool = False


class OpenAIChatInterceptor(Interceptor):
    needles = (b"tool_calls", b"function_call")

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.choices: dict[int, _Choice] = {}
        self.saw_text = False

    def wants(self, ev: bytes) -> bool:
        if not self.saw_text:
            # remember (without parsing) that text came first: the replacement then starts a new line
            i = ev.find(b'"content":"')
            if i >= 0 and ev[i + 11 : i + 12] != b'"':
                self.saw_text = True
        return b"tool_calls" in ev or b"function_call" in ev

    async def process(self, ev: bytes) -> list[bytes] | None:
        p = parse_event(ev, self.c)
        if p is None or not isinstance(p.data, dict):
            return None
        d = p.data
        choices = d.get("choices")
        if not isinstance(choices, list):
            return None
        modified = False
        for ch in choices:
            if not isinstance(ch, dict):
                continue
            st = self.choices.setdefault(ch.get("index", 0) if isinstance(ch.get("index", 0), int) else 0, _Choice())
            delta = ch.get("delta")
            texts: list[str] = []
            if isinstance(delta, dict):
                tcs = delta.get("tool_calls")
                if isinstance(tcs, list):
                    kept: list[Any] = []
                    changed = False
                    for tc in tcs:
                        i = tc.get("index") if isinstance(tc, dict) else None
                        if not isinstance(i, int):
                            kept.append(tc)
                            continue
                        if i not in st.seen:
                            fn = tc.get("function")
                            name = fn.get("name") if isinstance(fn, dict) else None
                            if name is None:  # arguments before a name: nothing to decide on
                                kept.append(tc)
                                continue
                            st.seen.add(i)
                            st.total += 1
                            dec = await self._verdict(str(name), str(tc.get("id", "")), None)
                            if dec is not None:
                                st.blocked.add(i)
                                texts.append(blocked_text(str(name), dec.reason))
                                changed = True
                                continue
                            st.index_map[i] = st.next_index
                            st.next_index += 1
                        if i in st.blocked:
                            changed = True
                            continue
                        ci = st.index_map.get(i, i)
                        if ci != i:
                            tc = {**tc, "index": ci}
                            changed = True
                        kept.append(tc)
                    if changed:
                        modified = True
                        if kept:
                            delta["tool_calls"] = kept
                        else:
                            del delta["tool_calls"]
                fc = delta.get("function_call")
                if isinstance(fc, dict):
                    name = fc.get("name")
                    if name is not None and not st.fc_blocked:
                        st.total += 1
                        dec = await self._verdict(str(name), "", None)
                        if dec is not None:
                            st.fc_blocked = True
                            st.blocked.add(-1)
                            texts.append(blocked_text(str(name), dec.reason))
                    if st.fc_blocked:
                        del delta["function_call"]
                        modified = True
                if texts:
                    text = "\n".join(texts)
                    if st.texts or self.saw_text:
                        text = "\n" + text
                    st.texts += len(texts)
                    prior = delta.get("content")
                    delta["content"] = prior + text if isinstance(prior, str) else text
                    modified = True
            fr = ch.get("finish_reason")
            if fr in ("tool_calls", "function_call") and st.total and len(st.blocked) == st.total:
                ch["finish_reason"] = "stop"
                modified = True
        if not modified:
            return None
        if not d.get("usage") and all(
            isinstance(ch, dict)
            and ch.get("finish_reason") is None
            and not any(v is not None for v in (ch.get("delta") or {}).values())
            for ch in choices
        ):
            return []  # only blocked-call fragments were in it
        return [p.make(d)]


class OpenAIResponsesInterceptor(Interceptor):
    needles = (b"function_call",)

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.blocked_out: dict[int, tuple[str, str]] = {}  # output_index -> (item id, text)
        self.blocked_calls: dict[str, tuple[str, str]] = {}  # call_id -> (item id, text)
        self.offset = 0

    def wants(self, ev: bytes) -> bool:
        return self.offset != 0 or b"function_call" in ev

    def _renumber(self, ev: bytes) -> bytes:
        off = self.offset
        return _SEQ.sub(lambda m: b'"sequence_number":' + m.group(1) + str(int(m.group(2)) + off).encode(), ev)

    def _seq(self, d: dict[str, Any], obj: dict[str, Any], extra: int = 0) -> dict[str, Any]:
        s = d.get("sequence_number")
        if isinstance(s, int):
            obj["sequence_number"] = s + self.offset + extra
        return obj

    async def process(self, ev: bytes) -> list[bytes] | None:
        if b"function_call" not in ev:
            return [self._renumber(ev)] if self.offset else None
        p = parse_event(ev, self.c)
        if p is None or not isinstance(p.data, dict):
            return [self._renumber(ev)] if self.offset else None
        d = p.data
        t = d.get("type")
        oi = d.get("output_index")
        if t == "response.output_item.added":
            item = d.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call" and isinstance(oi, int):
                name = str(item.get("name", ""))
                call_id = str(item.get("call_id", ""))
                dec = await self._verdict(name, call_id, None)
                if dec is not None:
                    mid = responses_item_id(call_id, oi)
                    text = blocked_text(name, dec.reason)
                    self.blocked_out[oi] = (mid, text)
                    self.blocked_calls[call_id] = (mid, text)
                    part0 = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                    part1 = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
                    common = {"item_id": mid, "output_index": oi, "content_index": 0}
                    out = [
                        p.make(self._seq(d, {"type": t, "output_index": oi, "item": responses_message_item(mid, text, "in_progress")})),
                        p.make(self._seq(d, {"type": "response.content_part.added", **common, "part": part0}, 1)),
                        p.make(self._seq(d, {"type": "response.output_text.delta", **common, "delta": text, "logprobs": []}, 2)),
                        p.make(self._seq(d, {"type": "response.output_text.done", **common, "text": text, "logprobs": []}, 3)),
                        p.make(self._seq(d, {"type": "response.content_part.done", **common, "part": part1}, 4)),
                    ]
                    if isinstance(d.get("sequence_number"), int):
                        self.offset += 4
                    return out
        elif t in ("response.function_call_arguments.delta", "response.function_call_arguments.done"):
            if oi in self.blocked_out:
                if isinstance(d.get("sequence_number"), int):
                    self.offset -= 1
                return []
        elif t == "response.output_item.done":
            if oi in self.blocked_out:
                mid, text = self.blocked_out[oi]
                return [p.make(self._seq(d, {"type": t, "output_index": oi, "item": responses_message_item(mid, text)}))]
        else:
            resp = d.get("response")
            out_items = resp.get("output") if isinstance(resp, dict) else None
            if self.blocked_calls and isinstance(out_items, list):
                changed = False
                for k, item in enumerate(out_items):
                    if isinstance(item, dict) and item.get("type") == "function_call":
                        hit = self.blocked_calls.get(str(item.get("call_id", "")))
                        if hit is not None:
                            out_items[k] = responses_message_item(*hit)
                            changed = True
                if changed:
                    return [p.make(self._seq(d, d))]
        return [self._renumber(ev)] if self.offset else None


INTERCEPTORS: dict[str, type[Interceptor]] = {
    "anthropic": AnthropicInterceptor,
    "openai": OpenAIChatInterceptor,
    "openai-responses": OpenAIResponsesInterceptor,
}


class SSERelay:
    """Event framing + interceptor + flushing. Feed upstream chunks; output goes to ``write``."""

    def __init__(
        self,
        interceptor: Interceptor | None,
        write: Write,
        max_event_bytes: int,
        usage: UsageScan | None = None,
    ) -> None:
        self.interceptor = interceptor
        self._write = write
        self._max = max_event_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self.copying = interceptor is None
        self.overflowed = False
        self.usage = usage

    async def feed(self, chunk: bytes) -> None:
        if self.copying:
            if self.usage is not None:
                self.usage.scan(chunk)
            await self._write(chunk)
            return
        buf = self._buf
        buf += chunk
        pos = 0
        out: list[bytes] = []
        icpt = self.interceptor
        usage = self.usage
        search = _END_OF_EVENT.search
        scan = max(self._scan_from - 2, 0)
        while True:
            m = search(buf, scan)
            if m is None:
                break
            end = m.end()
            ev = bytes(buf[pos:end])
            pos = scan = end
            if usage is not None:
                usage.scan(ev)
            if self.copying:
                out.append(ev)
                continue
            if len(ev) > self._max:
                # over the scanner limit: pass it and everything after it unchanged
                self.copying = self.overflowed = True
                out.append(ev)
                continue
            if icpt is None or not icpt.wants(ev):
                out.append(ev)
                continue
            if out:  # text before a tool call never waits on the decision
                await self._write(b"".join(out))
                out = []
            res = await icpt.process(ev)
            if res is None:
                out.append(ev)
            else:
                out.extend(res)
        if pos:
            del buf[:pos]
        self._scan_from = len(buf)
        if out:
            await self._write(b"".join(out))
        if self.copying or len(buf) > self._max:
            # An event longer than the scanner limit: stop interpreting, copy the rest.
            self.copying = True
            self.overflowed = True
            pending = bytes(buf)
            buf.clear()
            if pending:
                await self._write(pending)

    async def finish(self) -> None:
        """Upstream ended: whatever is left (an unterminated event) goes out unchanged."""
        if self._buf:
            pending = bytes(self._buf)
            self._buf.clear()
            await self._write(pending)
