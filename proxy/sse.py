"""Real-time SSE relay that holds each tool call until it is complete (docs/proxy.md "Streaming").

Framing is the official SDKs' (their SSE decoders): lines end at CR, LF or
CRLF, an event ends at a blank line, ``data:`` lines are joined with LF,
comments and unknown fields are ignored, each line is strict UTF-8.

Text never waits: an event that cannot touch a tool call goes to the client
as the exact bytes received, unparsed. Whether it can is a substring test
(``Interceptor.wants``): the dialect's type/key names, or a JSON escape that
could spell one (``\\u00XX`` for an ASCII character), or dialect state. Those
events are parsed and fed to a per-dialect model of what the SDKs'
accumulators build (anthropic ``accumulate_event``, openai
``ChatCompletionStreamState`` and ``ResponseStreamState``):

* a tool call's events are **held** from its first event until the call is
  complete (Anthropic ``content_block_stop``; OpenAI chat: the next call of
  the choice, ``finish_reason``, ``[DONE]``; Responses ``output_item.done``;
  end of stream), then the judge decides on the complete call (name, id,
  parsed arguments) and the held events are released byte-identical when it
  is allowed, or replaced by a text block when it is blocked. Events after a
  held one queue behind it, so order never changes;
* anything the model cannot place unambiguously (indexes out of order,
  fragments for a finished call, a name that differs between two views of
  one item, an event name that disagrees with its data, unparseable JSON in
  a candidate event, an over-long event, ...) **refuses** the stream: held
  events are dropped and the stream ends with an error event the SDK raises
  (``Refused``). Real provider streams never look like that.

The replacement keeps the stream well-formed for the SDKs: Anthropic gets a
text block at the same index; OpenAI chat gets the text in ``delta.content``
and the remaining tool calls renumbered densely; Responses gets a ``message``
item at the same ``output_index`` with contiguous ``sequence_number``.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import orjson

from agentsh.agent.core.lenient_json import Unparseable, loads_ex
from agentsh.agent.core.mcp.types import Decision
from agentsh.proxy.decider import blocked_text
from agentsh.proxy.dialects import UsageScan
from agentsh.proxy.rewrite import Refused, parse_args, responses_item_id, responses_message_item

log = logging.getLogger("agentsh.proxy")

Judge = Callable[[str, str, Any], Awaitable[Decision | None]]
Write = Callable[[bytes], Awaitable[None]]

# A blank line ends an event: a line terminator (CRLF, lone CR, LF) directly
# followed by another one.
_END_OF_EVENT = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
_SEQ = re.compile(rb'"sequence_number":(\s*)(\d+)')
# A JSON escape that spells an ASCII character could hide any of the needles.
_ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")
MAX_HELD_FACTOR = 16
"""Held events may take this many times ``max_event_bytes`` before the stream is refused."""


def escaped(ev: bytes) -> bool:
    return b"\\u00" in ev and _ASCII_ESCAPE.search(ev) is not None


@dataclass(slots=True)
class Counters:
    tool_calls: int = 0
    blocked: int = 0
    malformed: int = 0
    blocked_names: list[str] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Call:
    """One tool call as the client will build it."""

    kind: str
    name_parts: list[str] = field(default_factory=list)
    id_parts: list[str] = field(default_factory=list)
    arg_parts: list[str] = field(default_factory=list)
    initial: Any = None
    """Arguments/input present before any fragment (Anthropic ``input``, Responses item)."""
    name: str = ""
    call_id: str = ""
    args: Any = None
    raw_args: str | None = None
    closed: bool = False
    decided: bool = False
    decision: Decision | None = None
    """Set when blocked."""
    first: int = -1
    """Sequence number of the event that opened it."""
    out_index: int = 0
    done_args: str | None = None

    @property
    def blocked(self) -> bool:
        return self.decision is not None


@dataclass(slots=True, eq=False)
class Item:
    """One event in the hold queue."""

    raw: bytes
    deps: tuple[Call, ...] = ()
    p: Parsed | None = None
    kind: str | None = None
    info: Any = None
    seq: int = 0

    def ready(self) -> bool:
        return all(c.decided for c in self.deps)


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


def fields(ev: bytes) -> tuple[str | None, str | None, bytes]:
    """(event name, joined data or None, line ending) the way the SDKs' decoders read ``ev``."""
    event: str | None = None
    data: list[str] = []
    try:
        for raw in ev.splitlines():
            if not raw or raw[0] == 58:  # blank, or ':' comment
                continue
            name, _, value = raw.decode("utf-8").partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value or None
    except UnicodeDecodeError:
        raise Refused("SSE event is not valid UTF-8") from None
    i = ev.find(b"\n")
    j = ev.find(b"\r")
    if j >= 0 and (i < 0 or j < i):
        eol = b"\r\n" if ev[j + 1 : j + 2] == b"\n" else b"\r"
    else:
        eol = b"\n"
    return event, ("\n".join(data) if data else None), eol


def load(data: str, counters: Counters) -> Any:
    """orjson, else the lenient parser (what the SDKs' ``json.loads`` accepts); Refused if neither."""
    try:
        return loads_ex(data)[0]
    except Unparseable:
        counters.malformed += 1
        raise Refused("unparseable JSON in an SSE event that may carry a tool call") from None


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _text(v: Any, what: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise Refused(f"{what} is not a string")


class Interceptor:
    """Per-stream model of one dialect (see the module docstring)."""

    needles: tuple[bytes, ...] = ()

    def __init__(self, judge: Judge, counters: Counters) -> None:
        self.judge = judge
        self.c = counters
        self._pending: list[Call] = []
        self._seq = count(1)
        self.total = 0
        self.nblocked = 0

    # -- classification
    def wants(self, ev: bytes) -> bool:
        for n in self.needles:
            if n in ev:
                return True
        return escaped(ev)

    # -- model
    def observe(self, ev: bytes) -> Item:
        raise NotImplementedError

    def end(self) -> None:
        """End of stream: close every open call."""

    def render(self, item: Item) -> list[bytes]:
        return [item.raw]

    def error_event(self, message: str) -> bytes:
        raise NotImplementedError

    # -- decisions
    def _close(self, call: Call) -> None:
        if call.closed:
            return
        call.closed = True
        call.name = call.name or "".join(call.name_parts)
        call.call_id = call.call_id or "".join(call.id_parts)
        joined = "".join(call.arg_parts)
        if call.kind == "anthropic":
            # the SDK replaces the block's input once its JSON buffer is non-empty
            call.args = parse_args(joined) if joined else call.initial
            call.raw_args = joined or None
        else:
            raw = joined if call.arg_parts else (call.initial if isinstance(call.initial, str) else "")
            call.raw_args = raw
            call.args = raw if call.kind in ("custom", "custom_tool_call") else parse_args(raw)
        self._pending.append(call)

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    async def decide_pending(self) -> None:
        while self._pending:
            call = self._pending.pop(0)
            self.c.tool_calls += 1
            self.total += 1
            d = await self.judge(call.name, call.call_id, call.args)
            if d is not None and d.blocked:
                call.decision = d
                self.c.blocked += 1
                self.nblocked += 1
                self.c.blocked_names.append(call.name)
            call.decided = True


# ------------------------------------------------------------------ Anthropic

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
        call = Call("anthropic", name=name, call_id=cid if isinstance(cid, str) else "", first=seq)
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
            call = self.blocks[idx]
            if call is None:
                return Item(ev, seq=seq)
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


# ------------------------------------------------------------------ OpenAI chat


def _openai_error(message: str, extra: dict[str, Any] | None = None) -> bytes:
    err = {"message": message, "type": "agentsh_refused", "param": None, "code": "agentsh_refused"}
    return b"data: " + orjson.dumps({**(extra or {}), "error": err}) + b"\n\n"


@dataclass(slots=True, eq=False)
class _Choice:
    tools: list[Call] = field(default_factory=list)
    fc: Call | None = None
    finished: bool = False
    texts: int = 0

    def calls(self) -> list[Call]:
        return self.tools + ([self.fc] if self.fc is not None else [])


_CHUNK_OBJECT = b'"object":"chat.completion.chunk"'
_INDEX_ZERO = re.compile(rb'"index"\s*:\s*0(?![0-9.eE])')


class OpenAIChatInterceptor(Interceptor):
    needles = (b"_call",)

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.choices: list[_Choice] = []  # by position == index (enforced)
        self.open = 0
        self.saw_text = False

    def wants(self, ev: bytes) -> bool:
        if self.open:
            return True
        if b"_call" in ev or escaped(ev):  # tool_calls, function_call
            return True
        if not self.saw_text:
            # remember (without parsing) that text came first: the replacement then starts a new line
            i = ev.find(b'"content":"')
            if i >= 0 and ev[i + 11 : i + 12] != b'"':
                self.saw_text = True
        i = ev.find(b'"index"')
        if i < 0:
            return False
        # one index key, 0, in one chat.completion.chunk object: every choice of the
        # chunk is choice 0 (a choice without an index breaks the SDK)
        j = ev.find(_CHUNK_OBJECT)
        if (
            ev.find(b'"index"', i + 7) < 0
            and _INDEX_ZERO.match(ev, i) is not None
            and j >= 0
            and ev.find(b'"object"') == j
            and ev.find(b'"object"', j + 8) < 0
        ):
            if not self.choices:
                self.choices.append(_Choice())  # the chunk creates choice 0 (or hits it)
            return False
        return True  # another choice layout: place it exactly

    def _close_choice(self, st: _Choice, deps: list[Call]) -> None:
        for call in st.calls():
            if not call.closed:
                self._close(call)
                self.open -= 1
                deps.append(call)

    def observe(self, ev: bytes) -> Item:
        seq = next(self._seq)
        event, data, eol = fields(ev)
        if data is None:
            return Item(ev, seq=seq)
        if data.startswith("[DONE]"):
            return Item(ev, tuple(self._end_calls()), seq=seq)
        if event is not None and event.startswith("thread."):
            raise Refused(f"unexpected event {event!r} in a chat completion stream")
        obj = load(data, self.c)
        if not isinstance(obj, dict):
            raise Refused("chat completion chunk is not an object")
        if obj.get("error"):
            return Item(ev, seq=seq)  # the SDK raises it
        choices = obj.get("choices")
        if obj.get("object") != "chat.completion.chunk":
            # the SDK's stream helper skips it; harmless only if it touches no call and no new choice
            if isinstance(choices, list) and all(
                isinstance(ch, dict)
                and _int(ch.get("index"))
                and ch["index"] < len(self.choices)
                and not (isinstance(ch.get("delta"), dict) and ("tool_calls" in ch["delta"] or "function_call" in ch["delta"]))
                for ch in choices
            ):
                return Item(ev, seq=seq)
            if choices is None or choices == []:
                return Item(ev, seq=seq)
            raise Refused("chunk that is not a chat.completion.chunk carries choices")
        if choices is None:
            return Item(ev, seq=seq)
        if not isinstance(choices, list):
            raise Refused("choices is not a list")
        p = Parsed(event, obj, eol)
        deps: list[Call] = []
        for ch in choices:
            if not isinstance(ch, dict):
                raise Refused("choice is not an object")
            ci = ch.get("index")
            if not _int(ci) or ci > len(self.choices):
                raise Refused("choice index out of order")
            if ci == len(self.choices):
                self.choices.append(_Choice())
            st = self.choices[ci]
            delta = ch.get("delta")
            if delta is not None and not isinstance(delta, dict):
                raise Refused("delta is not an object")
            if delta:
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self.saw_text = True
                tcs = delta.get("tool_calls")
                if tcs is not None:
                    if not isinstance(tcs, list):
                        raise Refused("tool_calls is not a list")
                    if tcs and st.finished:
                        raise Refused("tool call after finish_reason")
                    for e in tcs:
                        deps.append(self._fragment(st, e, seq))
                fc = delta.get("function_call")
                if fc is not None:
                    if not isinstance(fc, dict) or st.finished:
                        raise Refused("function_call delta after finish_reason or not an object")
                    if st.fc is None:
                        st.fc = Call("legacy", first=seq)
                        self.open += 1
                    elif st.fc.closed:
                        raise Refused("function_call fragment after the call was complete")
                    name = _text(fc.get("name"), "function_call name")
                    args = _text(fc.get("arguments"), "function_call arguments")
                    if name:
                        st.fc.name_parts.append(name)
                    if args:
                        st.fc.arg_parts.append(args)
                    deps.append(st.fc)
            if ch.get("finish_reason") is not None:
                st.finished = True
                self._close_choice(st, deps)
        return Item(ev, tuple(dict.fromkeys(deps)), p, "chunk", seq=seq)

    def _fragment(self, st: _Choice, e: Any, seq: int) -> Call:
        if not isinstance(e, dict):
            raise Refused("tool_calls entry is not an object")
        t = e.get("index")
        if not _int(t) or t > len(st.tools):
            raise Refused("tool_calls index out of order")
        if t == len(st.tools):
            for prior in st.tools:  # calls stream one after another: an earlier one is complete
                if not prior.closed:
                    self._close(prior)
                    self.open -= 1
            st.tools.append(Call("function", first=seq))
            self.open += 1
        call = st.tools[t]
        if call.closed:
            raise Refused("fragment for a tool call that was already complete")
        cid = _text(e.get("id"), "tool call id")
        if cid:
            call.id_parts.append(cid)
        fn = e.get("function")
        cu = e.get("custom")
        if fn is not None and cu is not None:
            raise Refused("tool call is both a function and a custom tool")
        for key, part in (("function", fn), ("custom", cu)):
            if part is None:
                continue
            if not isinstance(part, dict):
                raise Refused(f"tool call {key} is not an object")
            kind = "function" if key == "function" else "custom"
            if call.kind != kind and (call.name_parts or call.arg_parts):
                raise Refused("tool call is both a function and a custom tool")
            call.kind = kind
            name = _text(part.get("name"), "tool name")
            args = _text(part.get("arguments" if kind == "function" else "input"), "tool arguments")
            if name:
                call.name_parts.append(name)
            if args:
                call.arg_parts.append(args)
        return call

    def _end_calls(self) -> list[Call]:
        deps: list[Call] = []
        for st in self.choices:
            self._close_choice(st, deps)
        return deps

    def end(self) -> None:
        self._end_calls()

    def render(self, item: Item) -> list[bytes]:
        p = item.p
        if p is None:
            return [item.raw]
        d = p.data
        modified = False
        for ch in d["choices"]:
            st = self.choices[ch["index"]]
            calls = st.calls()
            nblocked = sum(1 for c in calls if c.blocked)
            fr = ch.get("finish_reason")
            if not nblocked:
                continue
            delta = ch.get("delta")
            texts: list[str] = []
            if isinstance(delta, dict):
                tcs = delta.get("tool_calls")
                if isinstance(tcs, list):
                    kept: list[Any] = []
                    for e in tcs:
                        call = st.tools[e["index"]]
                        if call.decision is not None:
                            if call.first == item.seq and e is self._first_entry(tcs, e["index"]):
                                texts.append(blocked_text(call.name, call.decision.reason))
                            continue
                        ci = sum(1 for c in st.tools[: e["index"]] if not c.blocked)
                        kept.append(e if ci == e["index"] else {**e, "index": ci})
                    if kept:
                        delta["tool_calls"] = kept
                    else:
                        del delta["tool_calls"]
                fc = st.fc
                if "function_call" in delta and fc is not None and fc.decision is not None:
                    del delta["function_call"]
                    if fc.first == item.seq:
                        texts.append(blocked_text(fc.name, fc.decision.reason))
                if texts:
                    text = "\n".join(texts)
                    if st.texts or self.saw_text:
                        text = "\n" + text
                    st.texts += len(texts)
                    prior = delta.get("content")
                    delta["content"] = prior + text if isinstance(prior, str) else text
            if fr in ("tool_calls", "function_call") and nblocked == len(calls):
                ch["finish_reason"] = "stop"
            modified = True
        if not modified:
            return [item.raw]
        if not d.get("usage") and all(
            ch.get("finish_reason") is None
            and not any(v is not None for v in (ch.get("delta") or {}).values())
            for ch in d["choices"]
        ):
            return []  # only blocked-call fragments were in it
        return [p.make(d)]

    @staticmethod
    def _first_entry(tcs: list[Any], index: int) -> Any:
        for e in tcs:
            if e.get("index") == index:
                return e
        return None

    def error_event(self, message: str) -> bytes:
        return _openai_error(message)


# ------------------------------------------------------------------ OpenAI Responses

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
            call = self.items.get(oi) if _int(oi) else None
            if call is None or call.kind != _R_PARTS[t]:
                if _int(oi) and oi in self.items:
                    return Item(ev, p=p, seq=seq)  # another item's type: the SDK ignores or rejects it
                raise Refused(f"{t} for an unknown output item")
            if oi not in self.open:
                raise Refused(f"{t} after its item was done")
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


INTERCEPTORS: dict[str, type[Interceptor]] = {
    "anthropic": AnthropicInterceptor,
    "openai": OpenAIChatInterceptor,
    "openai-responses": OpenAIResponsesInterceptor,
}


class SSERelay:
    """Event framing + hold queue + flushing. Feed upstream chunks; output goes to ``write``.

    Without an interceptor it is a plain copy. ``refused`` is set (and the
    error event written) when the stream had to be refused; the caller then
    stops reading upstream and ends the response.
    """

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
        self._max_held = MAX_HELD_FACTOR * max_event_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self._queue: deque[Item] = deque()
        self._held = 0
        self.copying = interceptor is None
        self.usage = usage
        self.refused: str | None = None
        self._in_write = False

    async def _out(self, b: bytes) -> None:
        """Write to the client; its failures (client gone) are the caller's, never a refusal."""
        self._in_write = True
        await self._write(b)
        self._in_write = False

    async def feed(self, chunk: bytes) -> None:
        if self.copying:
            if self.usage is not None:
                self.usage.scan(chunk)
            await self._write(chunk)
            return
        if self.refused is not None:
            return
        icpt = self.interceptor
        assert icpt is not None
        buf = self._buf
        buf += chunk
        pos = 0
        out: list[bytes] = []
        usage = self.usage
        search = _END_OF_EVENT.search
        scan = max(self._scan_from - 3, 0)
        queue = self._queue
        try:
            while True:
                m = search(buf, scan)
                if m is None:
                    break
                end = m.end()
                ev = bytes(buf[pos:end])
                pos = scan = end
                if usage is not None:
                    usage.scan(ev)
                wanted = icpt.wants(ev)
                if not wanted and not queue:
                    out.append(ev)
                    continue
                item = icpt.observe(ev) if wanted else Item(ev)
                queue.append(item)
                self._held += len(ev)
                if icpt.has_pending:
                    if out:  # text before a tool call never waits on the decision
                        await self._out(b"".join(out))
                        out = []
                    await icpt.decide_pending()
                self._release(out)
                if self._held > self._max_held:
                    raise Refused(f"tool call larger than {self._max_held} bytes held")
            if pos:
                del buf[:pos]
            self._scan_from = len(buf)
            if len(buf) > self._max:
                raise Refused(f"SSE event longer than max_sse_line_bytes ({self._max})")
        except Refused as r:
            await self._refuse(out, str(r))
            return
        except Exception as e:  # a bug must not pass an undecided call: refuse
            if self._in_write:
                raise
            log.exception("SSE interceptor failed; refusing the stream")
            await self._refuse(out, f"internal error ({e.__class__.__name__})")
            return
        if out:
            await self._write(b"".join(out))

    def _release(self, out: list[bytes]) -> None:
        icpt = self.interceptor
        assert icpt is not None
        queue = self._queue
        while queue and queue[0].ready():
            item = queue.popleft()
            self._held -= len(item.raw)
            out.extend(icpt.render(item))

    async def refuse(self, reason: str) -> None:
        """End the stream with the dialect's error event (held events are dropped)."""
        if self.refused is None and self.interceptor is not None:
            await self._refuse([], reason)

    async def _refuse(self, out: list[bytes], reason: str) -> None:
        self.refused = reason
        self._queue.clear()
        self._buf.clear()
        icpt = self.interceptor
        assert icpt is not None
        out.append(icpt.error_event(f"agentsh proxy refused the response: {reason}"))
        await self._out(b"".join(out))

    async def finish(self) -> None:
        """Upstream ended: close open calls, decide them, release everything."""
        if self.copying:
            return
        if self.refused is not None:
            return
        icpt = self.interceptor
        assert icpt is not None
        out: list[bytes] = []
        try:
            tail = bytes(self._buf)
            self._buf.clear()
            icpt.end()
            if icpt.has_pending:
                await icpt.decide_pending()
            self._release(out)
            if self._queue:
                raise Refused("stream ended with an undecided tool call")
            # an unterminated event is never dispatched by a receiver; pass it only if it cannot matter
            if tail and not icpt.wants(tail):
                out.append(tail)
        except Refused as r:
            await self._refuse(out, str(r))
            return
        except Exception as e:
            if self._in_write:
                raise
            log.exception("SSE interceptor failed; refusing the stream")
            await self._refuse(out, f"internal error ({e.__class__.__name__})")
            return
        if out:
            await self._write(b"".join(out))
