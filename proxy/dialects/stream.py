"""The stream model every dialect's interceptor builds on (docs/proxy.md "Streaming").

The framing is the official SDKs' (``fields``); ``Interceptor`` is the per-stream
model of one dialect: ``wants`` (a substring test: text never waits),
``observe`` (place an event, open/feed/close calls), ``render`` (an event as
released: byte-identical or replaced), ``error_event`` (the refusal the SDK
raises). The relay that holds and releases events is proxy/sse.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING, Any, TypeGuard

import orjson

from agentsh.agent.core.lenient_json import Unparseable, loads_ex
from agentsh.proxy.dialects.base import Judge, Refused, parse_args

if TYPE_CHECKING:
    from agentsh.agent.core.mcp.types import Decision

__all__ = ["Call", "Counters", "Interceptor", "Item", "Parsed", "escaped", "fields", "load", "orjson"]

# A JSON escape that spells an ASCII character could hide any of the needles.
_ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")

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


def is_index(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def text_or_none(v: Any, what: str) -> str | None:
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
        if call.kind == "tool_use":
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
