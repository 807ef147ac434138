"""JSON-RPC inspection beside the relay: what each complete line means for the shim.

The relay (shim/relay.py) moves bytes and hands over every COMPLETE line, in
both directions, before any byte of it is forwarded. This module parses it
with the one parser (agentsh.agent.core.mcp.jsonrpc, lenient where the receivers
are) and asks the ``Gate`` (the daemon link with its offline fallback,
shim/main.py) for the decisions the shim enforces:

- a client ``tools/call`` (request, notification, or inside a batch) is
  decided BEFORE it is forwarded; a blocked call is not forwarded and the
  client gets ``{"jsonrpc":"2.0","id":<same id>,"error":{"code":-32001,
  "message":"[agentsh] Tool 'X' blocked by policy: REASON"}}``;
- a server response that could answer a pending ``tools/list`` (ids matched
  the way the clients match them) is held until the verdicts on its tools are
  known; tools the verdicts block, tools that cannot be fully reviewed and
  repeated names are removed from the result (the only time a server line is
  re-serialised);
- a server response to a ``tools/call`` is parsed and handed to
  ``Gate.tool_result`` before it is forwarded; then the call's outcome
  (result or JSON-RPC error, with the call's arguments) goes to
  ``Gate.tool_call_done`` (data-flow records: docs/flow.md "Modes").

The rule (docs/shim.md "Refused messages"): a line that cannot be parsed, is
not valid JSON-RPC, is too long, or is a response nobody is waiting for is
NOT forwarded; where a request id is known, its sender gets a JSON-RPC error
instead, so nothing hangs. Everything refused is counted for the
``protocol_error`` event.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from agentsh.agent.core.mcp import jsonrpc as rpc
from agentsh.agent.core.mcp.detector import MAX_DEPTH as DETECT_MAX_DEPTH
from agentsh.agent.core.mcp.detector import MAX_STRINGS as DETECT_MAX_STRINGS
from agentsh.agent.core.mcp.jsonrpc import Kind, Message, Pending
from agentsh.shim.relay import ClientVerdict

__all__ = ["Gate", "InspectStats", "MessageInspector", "blocked_message"]

log = logging.getLogger("agentsh.shim")

MAX_PENDING = 4096
"""Client requests awaiting a server response; beyond, new requests are refused."""
MAX_PENDING_LISTS = 256
"""Live tools/list requests awaiting a response; beyond, new ones are refused."""
SCAN_MIN = 64 * 1024
"""Server lines at least this long are first read by their top level only
(``jsonrpc.scan_top``); they are fully parsed only when their content is
decided on (tools/list and tools/call responses, initialize)."""
TOOL_MAX_DEPTH = DETECT_MAX_DEPTH + 2
"""A tool definition nested deeper than the detector scans is not shown (the
detector starts counting at the tool's fields, one and two levels down)."""
TOOL_MAX_STRINGS = DETECT_MAX_STRINGS
"""A tool definition with more strings (keys and values) than the detector scans is not shown."""
MAX_REFUSED_TOOLS = 4096
_FULL: Any = object()


class Gate(Protocol):
    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        """(allowed, reason) for one tools/call; blocks the calling relay thread."""

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        """Register a tools/list page; returns the names to hide from the client."""

    def server_info(self, name: str | None, version: str | None) -> None: ...

    def tools_changed(self) -> None: ...

    def tool_result(self, name: str, call_id: Any, result: Any) -> str | None:
        """The parsed result of an allowed tools/call, before the client gets it.

        Optional (gates without it are fine). ``result`` is the decoded JSON,
        possibly lenient-normalised and arbitrarily deep: bound it
        (``lenient_json.clip``) before shipping it anywhere. A string return
        withholds the result: the client gets a JSON-RPC error with that
        message instead (``mcp.inspection.results.action: block``)."""

    def tool_call_done(self, name: str, call_id: Any, arguments: Any, result: Any, error: Any) -> None:
        """The outcome of an allowed tools/call (``result``, or the JSON-RPC
        ``error`` object), before the client gets it. Optional; must not block:
        it runs on the relay thread."""


def blocked_message(tool: str, reason: str) -> str:
    return f"[agentsh] Tool '{tool}' blocked by policy: {reason or 'blocked'}"


def _refused(what: str) -> str:
    return f"[agentsh] refused: {what}"


@dataclass
class InspectStats:
    invalid: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    """Lines refused (not forwarded) per direction; reasons in ``invalid_reasons``."""
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    oversized: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    """Lines refused for being longer than the relay's bound."""
    lenient: dict[str, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    """Lines orjson refused that the lenient parser read (decided like any other)."""
    calls: int = 0
    blocks: int = 0
    tools: int = 0
    hidden: int = 0
    refused_tools: int = 0
    list_responses: int = 0
    tool_results: int = 0
    results_withheld: int = 0
    sampling_requests: int = 0
    list_changed: int = 0
    scanned: int = 0
    """Big server lines forwarded after a top-level scan (no decision needed)."""


def _reviewable(tool: dict[str, Any]) -> str | None:
    """Why the detector could not see all of ``tool`` (None when it can)."""
    if "\ufffd" in tool["name"]:
        return "tool name is not valid Unicode"
    strings = 0
    stack: list[tuple[Any, int]] = [(tool, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > TOOL_MAX_DEPTH:
            return f"tool definition nested deeper than {TOOL_MAX_DEPTH}"
        values = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict):
            strings += len(node)
        for v in values:
            if isinstance(v, dict | list):
                stack.append((v, depth + 1))
            elif isinstance(v, str):
                strings += 1
        if strings >= TOOL_MAX_STRINGS:
            return f"tool definition with more than {TOOL_MAX_STRINGS} strings"
    return None


class MessageInspector:
    """Implements ``agentsh.shim.relay.Inspector`` for MCP."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.stats = InspectStats()
        self._lock = threading.Lock()
        self.to_server = rpc.PendingRequests(MAX_PENDING)  # client requests awaiting the server
        self.to_client = rpc.PendingRequests(MAX_PENDING, evict_live=True)  # server requests
        self._tool_names: set[str] = set()
        self._refused_tools: OrderedDict[str, str] = OrderedDict()  # name -> why it is not shown
        self._tool_result = getattr(gate, "tool_result", None)
        self._call_done = getattr(gate, "tool_call_done", None)

    # ------------------------------------------------------------------ client -> server

    def client_line(self, line: bytes) -> ClientVerdict | None:
        try:
            return self._client_line(line)
        except Exception:  # a bug must not stop the relay, nor let the line through
            log.exception("inspecting a client line failed; refusing it")
            self._count_invalid("client", "internal error")
            found, rid = rpc.recover_id(line[:4096])
            return ClientVerdict(None, rpc.error_response(rid if found else None, _refused("internal error"),
                                                          rpc.INTERNAL_ERROR))

    def _client_line(self, line: bytes) -> ClientVerdict | None:
        msg = rpc.parse_line(line)
        kind = msg.kind
        if kind is Kind.BLANK:
            return ClientVerdict(None, None)
        if not msg.strict:
            self.stats.lenient["client"] += 1
        if kind is Kind.INVALID:
            return ClientVerdict(None, self._refuse_client(msg))
        if kind is Kind.BATCH:
            return self._client_batch(msg)
        if kind is Kind.REQUEST or kind is Kind.NOTIFICATION:
            out = self._client_request(msg)
            return None if out is None else ClientVerdict(None, out or None)
        with self._lock:
            self._resolve(self.to_client, msg.id)
        return None

    def client_oversized(self, head: bytes, size: int) -> bytes | None:
        """A client line longer than the relay's bound: refused; the reply for it."""
        self.stats.oversized["client"] += 1
        found, rid = rpc.recover_id(head)
        return rpc.error_response(rid if found else None,
                                  _refused(f"message of {size} bytes is over the size limit"),
                                  rpc.INVALID_REQUEST)

    def _refuse_client(self, msg: Message) -> bytes:
        self._count_invalid("client", msg.reason)
        return rpc.error_response(msg.id if msg.has_id else None, _refused(msg.reason),
                                  msg.code or rpc.INVALID_REQUEST)

    def _client_request(self, msg: Message) -> bytes | None:
        """None: forward. b"": drop silently (refused notification). Else: the reply."""
        method = msg.method
        is_request = msg.kind is Kind.REQUEST
        context: Any = None
        if method == rpc.TOOLS_CALL:
            if is_request and not self.to_server.has_room():
                return self._too_many(msg)  # before deciding: no decision for a call never sent
            name, args = rpc.tool_call(msg)
            if name is None:
                self._count_invalid("client", "tools/call without a tool name")
                return rpc.error_response(msg.id, _refused("tools/call without a tool name"),
                                          rpc.INVALID_PARAMS) if is_request else b""
            self.stats.calls += 1
            with self._lock:
                why = self._refused_tools.get(name)
            if why is None and "\ufffd" in name:
                why = "tool name is not valid Unicode"
            if why is not None:
                allowed, reason = False, why
            else:
                allowed, reason = self.gate.decide_call(name, args, msg.id)
            if not allowed:
                self.stats.blocks += 1
                return rpc.error_response(msg.id, blocked_message(name, reason)) if is_request else b""
            context = (name, args)
        elif method == rpc.TOOLS_LIST:
            params = msg.params
            context = isinstance(params, dict) and bool(params.get("cursor"))
        elif method == rpc.NOTIFICATION_CANCELLED and not is_request:
            params = msg.params
            if isinstance(params, dict) and "requestId" in params:
                with self._lock:
                    for p in self.to_server.matches(params["requestId"]):
                        p.cancelled = True
        if not is_request:
            return None
        with self._lock:
            if method == rpc.TOOLS_LIST and self.to_server.count(rpc.TOOLS_LIST) >= MAX_PENDING_LISTS:
                entry = None
            else:
                entry = self.to_server.add(msg.id, method or "", context)
        if entry is None:
            return self._too_many(msg)
        return None

    def _too_many(self, msg: Message) -> bytes:
        self._count_invalid("client", "too many requests pending")
        return rpc.error_response(msg.id, _refused("too many requests pending"), rpc.INTERNAL_ERROR)

    def _client_batch(self, msg: Message) -> ClientVerdict | None:
        keep: list[Any] = []
        replies: list[Any] = []
        changed = False
        for item, raw in zip(msg.items, msg.obj, strict=True):
            if item.kind is Kind.INVALID:
                replies.append(orjson.loads(self._refuse_client(item)))
                changed = True
                continue
            if item.kind in (Kind.REQUEST, Kind.NOTIFICATION):
                out = self._client_request(item)
                if out is not None:
                    changed = True
                    if out:
                        replies.append(orjson.loads(out))
                    continue
            elif item.is_response:
                with self._lock:
                    self._resolve(self.to_client, item.id)
            keep.append(raw)
        if not changed:
            return None
        to_server = None
        if keep:
            try:
                to_server = rpc.dumps_line(keep)
            except (orjson.JSONEncodeError, TypeError):
                # cannot be written back (e.g. nested too deep): refuse what is left
                self._count_invalid("client", "batch cannot be re-serialised")
                for raw in keep:
                    rid = raw.get("id") if isinstance(raw, dict) else None
                    if rid is not None:
                        replies.append({"jsonrpc": "2.0", "id": rid, "error": {
                            "code": rpc.INVALID_REQUEST, "message": _refused("batch cannot be re-serialised")}})
        return ClientVerdict(to_server, rpc.dumps_line(replies) if replies else None)

    # ------------------------------------------------------------------ server -> client

    def server_line(self, data: bytes | bytearray, start: int = 0, end: int | None = None) -> bytes | None:
        """A complete server line ``data[start:end]``, before any byte of it is
        forwarded: None = forward it as is; bytes = write these instead (b"" = drop)."""
        if end is None:
            end = len(data)
        try:
            return self._server_line(data, start, end)
        except Exception:  # a bug must not stop the relay, nor let the line through
            log.exception("inspecting a server line failed; refusing it")
            found, rid = rpc.recover_id(bytes(data[start : min(end, start + 4096)]))
            return self._answer_refused(rid, found, "internal error")

    def _server_line(self, data: bytes | bytearray, start: int, end: int) -> bytes | None:
        if end - start >= SCAN_MIN:
            members = rpc.scan_top(data, start, end)
            if members is not None:
                verdict = self._server_scanned(rpc.classify(members))
                if verdict is not _FULL:
                    self.stats.scanned += 1
                    return verdict
        return self._server_msg(rpc.parse_line(data, start, end, bare_cr=True))

    def server_oversized(self, head: bytes, size: int) -> bytes:
        """A server line longer than the relay's bound: dropped; an error for its request."""
        self.stats.oversized["server"] += 1
        found, rid = rpc.recover_id(head)
        return self._answer_refused(rid, found, f"response of {size} bytes is over the size limit")

    def _server_scanned(self, msg: Message) -> Any:
        """Decide on a big line from its top level alone, or _FULL to parse it fully."""
        kind = msg.kind
        if kind is Kind.NOTIFICATION:
            if msg.method == rpc.TOOLS_LIST_CHANGED:
                return _FULL
            return None
        if kind is Kind.REQUEST:
            self._server_request(msg)
            return None
        if kind is Kind.RESPONSE or kind is Kind.ERROR:
            with self._lock:
                matches = self.to_server.matches(msg.id) if msg.has_id else []
                if matches and not any(p.method in (rpc.TOOLS_LIST, rpc.TOOLS_CALL, rpc.INITIALIZE)
                                       for p in matches):
                    self.to_server.remove(matches[0])
                    return None
            return _FULL
        return _FULL

    def _server_msg(self, msg: Message) -> bytes | None:
        kind = msg.kind
        if kind is Kind.BLANK:
            return b""
        if not msg.strict:
            self.stats.lenient["server"] += 1
        if kind is Kind.INVALID:
            self._count_invalid("server", msg.reason)
            return self._answer_refused(msg.id, msg.has_id, msg.reason, count=False)
        if kind is Kind.BATCH:
            return self._server_batch(msg)
        if kind is Kind.REQUEST:
            self._server_request(msg)
            return None
        if kind is Kind.NOTIFICATION:
            if msg.method == rpc.TOOLS_LIST_CHANGED:
                self.stats.list_changed += 1
                self.gate.tools_changed()
            return None
        return self._server_response(msg)

    def _server_request(self, msg: Message) -> None:
        with self._lock:
            self.to_client.add(msg.id, msg.method or "")
        if msg.method == rpc.SAMPLING_CREATE_MESSAGE:
            self.stats.sampling_requests += 1

    def _answer_refused(self, rid: Any, has_id: bool, reason: str, *, count: bool = True) -> bytes:
        """A refused server line: an error for the request it answers, if any is known."""
        if count:
            self._count_invalid("server", reason)
        if not has_id:
            return b""
        with self._lock:
            matches = self.to_server.matches(rid)
            if not matches:
                return b""
            p = matches[0]
            self.to_server.remove(p)
        return rpc.error_response(p.id, _refused(f"the server's response ({reason})"), rpc.INTERNAL_ERROR)

    def _server_response(self, msg: Message) -> bytes | None:
        """None: forward as is; bytes: the replacement line (b"": drop)."""
        with self._lock:
            matches = self.to_server.matches(msg.id) if msg.has_id else []
            if not matches:
                entry = None
            else:
                lists = [p for p in matches if p.method == rpc.TOOLS_LIST]
                result = msg.result
                if lists and msg.kind is Kind.RESPONSE and (
                        (isinstance(result, dict) and "tools" in result) or len(lists) == len(matches)):
                    entry = lists[0]
                else:
                    others = [p for p in matches if p.method != rpc.TOOLS_LIST]
                    entry = (others or matches)[0]
                self.to_server.remove(entry)
        if entry is None:
            # nobody waits for it: a client would drop it, unless it is sent ahead
            # for a request id the client is about to use (then it would be unfiltered)
            self._count_invalid("server", "response to no pending request")
            return b""
        if msg.kind is Kind.ERROR:
            if entry.method == rpc.TOOLS_CALL and self._call_done is not None:
                name, args = entry.context
                err = msg.obj.get("error") if isinstance(msg.obj, dict) else None
                self._call_done(name, entry.id, args, None, err)
            return None
        if entry.method == rpc.TOOLS_LIST:
            return self._list_response(msg, entry)
        if entry.method == rpc.TOOLS_CALL:
            self.stats.tool_results += 1
            name, args = entry.context
            withheld = self._tool_result(name, entry.id, msg.result) if self._tool_result is not None else None
            if self._call_done is not None:
                self._call_done(name, entry.id, args, msg.result, None)
            if isinstance(withheld, str):
                # the result carries an injection and the policy blocks it: the
                # client (and the model) get an error in its place
                self.stats.results_withheld += 1
                return rpc.error_response(entry.id, withheld, rpc.BLOCKED_CODE)
        elif entry.method == rpc.INITIALIZE:
            self.gate.server_info(*rpc.server_info(msg.result))
        return None

    def _list_response(self, msg: Message, entry: Pending) -> bytes | None:
        self.stats.list_responses += 1
        result = msg.result
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            self._count_invalid("server", "malformed tools/list result")
            return rpc.error_response(entry.id, _refused("the server's tools/list result is malformed"),
                                      rpc.INTERNAL_ERROR)
        raw_tools: list[Any] = result["tools"]
        review: list[dict[str, Any]] = []
        seen: set[str] = set()
        for t in raw_tools:
            if not (isinstance(t, dict) and isinstance(t.get("name"), str)):
                self._count_invalid("server", "tool without a name")
                continue
            name = t["name"]
            if name in seen:
                self._count_invalid("server", "tool listed twice")
                continue
            seen.add(name)
            why = _reviewable(t)
            if why is not None:
                self._refuse_tool(name, why)
                continue
            review.append(t)
        complete = not entry.context and rpc.next_cursor(result) is None
        hide = self.gate.review_tools(review, complete)
        with self._lock:
            for t in review:
                self._refused_tools.pop(t["name"], None)
        if len(self._tool_names) < 100_000:
            self._tool_names.update(t["name"] for t in review)
        self.stats.tools = len(self._tool_names)
        kept = [t for t in review if t["name"] not in hide]
        if len(kept) == len(raw_tools):
            return None
        self.stats.hidden += len(raw_tools) - len(kept)
        try:
            return rpc.dumps_line(rpc.with_tools(msg.obj, kept))
        except (orjson.JSONEncodeError, TypeError):
            # something beside the tools cannot be written back (nested too deep):
            # the client gets the decided tools and the cursor only
            reduced: dict[str, Any] = {"tools": kept}
            cursor = rpc.next_cursor(result)
            if cursor is not None:
                reduced["nextCursor"] = cursor
            return rpc.dumps_line({"jsonrpc": "2.0", "id": msg.id, "result": reduced})

    def _refuse_tool(self, name: str, why: str) -> None:
        self.stats.refused_tools += 1
        self._count_invalid("server", "tool definition not reviewable")
        with self._lock:
            self._refused_tools[name] = why
            self._refused_tools.move_to_end(name)
            while len(self._refused_tools) > MAX_REFUSED_TOOLS:
                self._refused_tools.popitem(last=False)

    def _server_batch(self, msg: Message) -> bytes | None:
        items: list[Any] = []
        changed = False
        for item, raw in zip(msg.items, msg.obj, strict=True):
            kind = item.kind
            if kind is Kind.INVALID:
                self._count_invalid("server", item.reason)
                out: bytes | None = self._answer_refused(item.id, item.has_id, item.reason, count=False)
            elif kind is Kind.REQUEST:
                self._server_request(item)
                out = None
            elif kind is Kind.NOTIFICATION:
                out = self._server_msg(item)
            else:
                out = self._server_response(item)
            if out is None:
                items.append(raw)
            else:
                changed = True
                if out:
                    items.append(orjson.loads(out))
        if not changed:
            return None
        if not items:
            return b""
        try:
            return rpc.dumps_line(items)
        except (orjson.JSONEncodeError, TypeError):
            self._count_invalid("server", "batch cannot be re-serialised")
            return b""

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _resolve(pending: rpc.PendingRequests, rid: Any) -> None:
        matches = pending.matches(rid)
        if matches:
            pending.remove(matches[0])

    def _count_invalid(self, direction: str, reason: str) -> None:
        self.stats.invalid[direction] += 1
        key = reason.split(":", 1)[0]
        self.stats.invalid_reasons[key] = self.stats.invalid_reasons.get(key, 0) + 1
