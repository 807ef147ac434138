"""JSON-RPC inspection beside the relay: what each line means for the shim.

The relay (shim/relay.py) moves bytes; this module parses complete lines with
the one parser (agentsh.agent.mcp.jsonrpc) and asks the ``Gate`` (the daemon
link with its offline fallback, shim/main.py) for the two decisions the shim
enforces:

- a client ``tools/call`` (request, notification, or inside a batch) is
  decided BEFORE it is forwarded; a blocked call is not forwarded and the
  client gets ``{"jsonrpc":"2.0","id":<same id>,"error":{"code":-32001,
  "message":"[agentsh] Tool 'X' blocked by policy: REASON"}}``;
- a server ``tools/list`` response is held until the verdicts on its tools
  are known; tools the verdicts block are removed from the result (the only
  time a server line is re-serialised; its id and other fields are kept).

Everything else is forwarded as is; lines that are not JSON-RPC are counted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from agentsh.agent.mcp import jsonrpc as rpc
from agentsh.agent.mcp.jsonrpc import Kind, Message
from agentsh.shim.relay import ClientVerdict

__all__ = ["Gate", "InspectStats", "MessageInspector", "blocked_message"]

MAX_PENDING_LISTS = 256
LIGHT_CHECK_MIN = 64 * 1024
"""Server lines at least this long that need no holding get a structural check
instead of a full parse (a 1 MB tool result would otherwise cost ~1 ms of GIL
time per message for nothing but a counter)."""
_EDGE = 4096


class Gate(Protocol):
    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        """(allowed, reason) for one tools/call; blocks the calling relay thread."""

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        """Register a tools/list page; returns the names to hide from the client."""

    def server_info(self, name: str | None, version: str | None) -> None: ...

    def tools_changed(self) -> None: ...


def blocked_message(tool: str, reason: str) -> str:
    return f"[agentsh] Tool '{tool}' blocked by policy: {reason or 'blocked'}"


@dataclass
class InspectStats:
    invalid: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    oversized: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    calls: int = 0
    blocks: int = 0
    tools: int = 0
    hidden: int = 0
    list_responses: int = 0
    unheld_list_responses: int = 0
    sampling_requests: int = 0
    list_changed: int = 0
    light_checked: int = 0


class MessageInspector:
    """Implements ``agentsh.shim.relay.Inspector`` for MCP."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.stats = InspectStats()
        self._lock = threading.Lock()
        self.to_server = rpc.Correlator()  # client requests awaiting a server response
        self.to_client = rpc.Correlator()  # server requests awaiting a client response
        self._lists: OrderedDict[tuple[str, Any], bool] = OrderedDict()  # id -> had cursor
        self._tool_names: set[str] = set()

    # ------------------------------------------------------------------ client -> server

    def client_line(self, line: bytes) -> ClientVerdict | None:
        msg = rpc.parse_line(line)
        kind = msg.kind
        if kind is Kind.INVALID:
            self._invalid("client", msg)
            return None
        if kind is Kind.BATCH:
            return self._client_batch(msg)
        if kind is Kind.REQUEST or kind is Kind.NOTIFICATION:
            blocked = self._client_request(msg)
            if blocked is None:
                return None
            return ClientVerdict(None, blocked or None)
        with self._lock:
            self.to_client.resolve(msg.id)
        return None

    def _client_request(self, msg: Message) -> bytes | None:
        """None: forward. b"": drop silently (blocked notification). Else: the error reply."""
        method = msg.method
        if msg.kind is Kind.REQUEST:
            with self._lock:
                self.to_server.note(msg.id, method or "")
                if method == rpc.TOOLS_LIST:
                    params = msg.params
                    had_cursor = isinstance(params, dict) and bool(params.get("cursor"))
                    key = rpc.id_key(msg.id)
                    self._lists[key] = had_cursor
                    while len(self._lists) > MAX_PENDING_LISTS:
                        self._lists.popitem(last=False)
        if method != rpc.TOOLS_CALL:
            return None
        name, args = rpc.tool_call(msg)
        if name is None:
            return None  # malformed params: the server answers with its own error
        self.stats.calls += 1
        allowed, reason = self.gate.decide_call(name, args, msg.id)
        if allowed:
            return None
        self.stats.blocks += 1
        with self._lock:
            self.to_server.resolve(msg.id)
        if msg.kind is Kind.NOTIFICATION:
            return b""
        return rpc.error_response(msg.id, blocked_message(name, reason))

    def _client_batch(self, msg: Message) -> ClientVerdict | None:
        keep: list[Any] = []
        replies: list[Any] = []
        changed = False
        for item, raw in zip(msg.items, msg.obj, strict=True):
            if item.kind is Kind.INVALID:
                self._invalid("client", item)
                keep.append(raw)
                continue
            if item.kind in (Kind.REQUEST, Kind.NOTIFICATION):
                blocked = self._client_request(item)
                if blocked is not None:
                    changed = True
                    if blocked:
                        replies.append(orjson.loads(blocked))
                    continue
            elif item.is_response:
                with self._lock:
                    self.to_client.resolve(item.id)
            keep.append(raw)
        if not changed:
            return None
        return ClientVerdict(
            rpc.dumps_line(keep) if keep else None, rpc.dumps_line(replies) if replies else None
        )

    # ------------------------------------------------------------------ server -> client

    def server_hold_needed(self) -> bool:
        return bool(self._lists)

    def server_line(self, line: bytes) -> bytes | None:
        """Held mode: may rewrite a tools/list response."""
        msg = rpc.parse_line(line)
        if msg.kind is Kind.RESPONSE:
            out = self._server_response(msg, held=True)
            return None if out is None else rpc.dumps_line(out)
        if msg.kind is Kind.BATCH:
            changed = False
            items = list(msg.obj)
            for i, item in enumerate(msg.items):
                if item.kind is Kind.RESPONSE:
                    new = self._server_response(item, held=True)
                    if new is not None:
                        items[i] = new
                        changed = True
                else:
                    self._server_other(item)
            return rpc.dumps_line(items) if changed else None
        self._server_other(msg)
        return None

    def server_line_seen(self, line: bytes | bytearray | memoryview) -> None:
        if len(line) >= LIGHT_CHECK_MIN:
            self._light_check(line)
            return
        msg = rpc.parse_line(line)
        if msg.kind is Kind.RESPONSE:
            self._server_response(msg, held=False)
        elif msg.kind is Kind.BATCH:
            for item in msg.items:
                if item.kind is Kind.RESPONSE:
                    self._server_response(item, held=False)
                else:
                    self._server_other(item)
        else:
            self._server_other(msg)

    def _server_other(self, msg: Message) -> None:
        kind = msg.kind
        if kind is Kind.INVALID:
            self._invalid("server", msg)
        elif kind is Kind.REQUEST:
            with self._lock:
                self.to_client.note(msg.id, msg.method or "")
            if msg.method == rpc.SAMPLING_CREATE_MESSAGE:
                self.stats.sampling_requests += 1
        elif kind is Kind.NOTIFICATION:
            if msg.method == rpc.TOOLS_LIST_CHANGED:
                self.stats.list_changed += 1
                self.gate.tools_changed()
        elif kind is Kind.ERROR:
            with self._lock:
                self.to_server.resolve(msg.id)
                if msg.id is not None:
                    self._lists.pop(rpc.id_key(msg.id), None)

    def _server_response(self, msg: Message, held: bool) -> dict[str, Any] | None:
        """Returns a rewritten response object, or None to forward unchanged."""
        with self._lock:
            req = self.to_server.resolve(msg.id)
            had_cursor = self._lists.pop(rpc.id_key(msg.id), None)
        if req is None:
            return None
        method = req[0]
        if method == rpc.INITIALIZE:
            self.gate.server_info(*rpc.server_info(msg.result))
            return None
        if method != rpc.TOOLS_LIST:
            return None
        self.stats.list_responses += 1
        result = msg.result
        tools = rpc.tools_of(result)
        complete = not had_cursor and rpc.next_cursor(result) is None
        self._tool_names.update(t["name"] for t in tools)
        self.stats.tools = len(self._tool_names)
        hide = self.gate.review_tools(tools, complete)
        if not held:
            self.stats.unheld_list_responses += 1
            return None
        if not hide:
            return None
        raw_tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(raw_tools, list):
            return None
        kept = [t for t in raw_tools if not (isinstance(t, dict) and t.get("name") in hide)]
        self.stats.hidden += len(raw_tools) - len(kept)
        return rpc.with_tools(msg.obj, kept)

    # ------------------------------------------------------------------ counting

    def _light_check(self, line: bytes | bytearray | memoryview) -> None:
        self.server_big_line(bytes(line[:_EDGE]), bytes(line[-_EDGE:]), len(line))

    def server_big_line(self, head: bytes, tail: bytes, size: int) -> None:
        """Framing check of a big forwarded line: '{...}' or '[...]' with a "jsonrpc"
        member near one end. Counts what is clearly not JSON-RPC; never resolves ids."""
        b = head.lstrip(b" \t\r\n")
        tail = tail.rstrip(b" \t\r\n")
        ok = (
            bool(b) and bool(tail)
            and b[:1] in (b"{", b"[") and tail[-1:] in (b"}", b"]")
            and (b'"jsonrpc"' in b or b'"jsonrpc"' in tail)
        )
        if not ok:
            self._invalid("server", Message(Kind.INVALID, reason="not JSON-RPC (framing)"))
        else:
            self.stats.light_checked += 1

    def _invalid(self, direction: str, msg: Message) -> None:
        self.stats.invalid[direction] += 1
        reason = msg.reason.split(":", 1)[0]
        self.stats.invalid_reasons[reason] = self.stats.invalid_reasons.get(reason, 0) + 1

    def oversized(self, direction: str, size: int) -> None:
        self.stats.oversized[direction] += 1
