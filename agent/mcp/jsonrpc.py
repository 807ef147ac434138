"""The one JSON-RPC 2.0 / MCP message parser every layer uses (shim, proxy, daemon).

Why one parser: the shim, the LLM proxy and the daemon must agree on what a
``tools/call`` is, what a ``tools/list`` result holds and what counts as
invalid; two parsers would disagree on the edge cases attackers pick.

Design:
- ``parse_line(bytes)`` classifies one newline-delimited message with orjson.
  A byte pre-check rejects lines that cannot be JSON objects/arrays without
  parsing them (they are counted as invalid all the same).
- Classification follows JSON-RPC 2.0 strictly: ``"jsonrpc": "2.0"`` is
  required; ids are strings, integers (or null in error responses); a
  request/notification has a string ``method``; a response has exactly one of
  ``result``/``error``. Anything else is ``INVALID`` with a reason, and the
  relay forwards it unchanged and counts it.
- ``Correlator`` maps request ids to methods per direction, bounded, so a
  response can be recognised as the answer to ``tools/list``/``initialize``.
- The serialising helpers (``error_response``, ``with_tools``) are only used
  where agentsh must write its own message; forwarded bytes are never
  re-serialised.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import orjson

__all__ = [
    "INITIALIZE",
    "SAMPLING_CREATE_MESSAGE",
    "TOOLS_CALL",
    "TOOLS_LIST",
    "TOOLS_LIST_CHANGED",
    "Correlator",
    "Kind",
    "Message",
    "classify",
    "error_response",
    "id_key",
    "parse_line",
    "server_info",
    "tool_call",
    "tools_of",
    "with_tools",
]

INITIALIZE = "initialize"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
SAMPLING_CREATE_MESSAGE = "sampling/createMessage"

# Error code agentsh uses for a refused call: JSON-RPC reserves -32000..-32099
# for implementation-defined server errors.
BLOCKED_CODE = -32001

_WS = b" \t\r\n"


class Kind(IntEnum):
    INVALID = 0
    REQUEST = 1
    NOTIFICATION = 2
    RESPONSE = 3
    ERROR = 4
    BATCH = 5


@dataclass(slots=True)
class Message:
    kind: Kind
    obj: Any = None
    """The parsed JSON (dict for single messages, list for batches); None if not JSON."""
    method: str | None = None
    id: Any = None
    reason: str = ""
    """Why the message is invalid (empty otherwise)."""
    items: list[Message] = field(default_factory=list)
    """Batch members, each classified (batch only)."""

    @property
    def is_request(self) -> bool:
        return self.kind is Kind.REQUEST

    @property
    def is_response(self) -> bool:
        return self.kind is Kind.RESPONSE or self.kind is Kind.ERROR

    @property
    def params(self) -> Any:
        return self.obj.get("params") if isinstance(self.obj, dict) else None

    @property
    def result(self) -> Any:
        return self.obj.get("result") if isinstance(self.obj, dict) else None


def _valid_id(v: Any) -> bool:
    # bool is an int subclass; JSON-RPC ids are strings or numbers (fractions discouraged)
    return isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool))


def classify(obj: Any) -> Message:
    """Classify an already-parsed JSON value as a JSON-RPC message."""
    if isinstance(obj, list):
        if not obj:
            return Message(Kind.INVALID, obj, reason="empty batch")
        return Message(Kind.BATCH, obj, items=[_classify_one(x) for x in obj])
    return _classify_one(obj)


def _classify_one(obj: Any) -> Message:
    if not isinstance(obj, dict):
        return Message(Kind.INVALID, obj, reason="not a JSON object")
    if obj.get("jsonrpc") != "2.0":
        return Message(Kind.INVALID, obj, reason="missing or wrong 'jsonrpc' version")
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str):
            return Message(Kind.INVALID, obj, reason="'method' is not a string")
        if "result" in obj or "error" in obj:
            return Message(Kind.INVALID, obj, method, reason="request carries result/error")
        params = obj.get("params")
        if params is not None and not isinstance(params, dict | list):
            return Message(Kind.INVALID, obj, method, reason="'params' is not object/array")
        if "id" not in obj:
            return Message(Kind.NOTIFICATION, obj, method)
        rid = obj["id"]
        if not _valid_id(rid):
            return Message(Kind.INVALID, obj, method, rid, reason="invalid request id")
        return Message(Kind.REQUEST, obj, method, rid)
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result == has_error:
        return Message(Kind.INVALID, obj, reason="neither method nor exactly one of result/error")
    if "id" not in obj:
        return Message(Kind.INVALID, obj, reason="response without id")
    rid = obj["id"]
    if has_error:
        err = obj["error"]
        if not (isinstance(err, dict) and isinstance(err.get("code"), int)):
            return Message(Kind.INVALID, obj, id=rid, reason="malformed error object")
        if rid is not None and not _valid_id(rid):
            return Message(Kind.INVALID, obj, id=rid, reason="invalid response id")
        return Message(Kind.ERROR, obj, id=rid)
    if not _valid_id(rid):
        return Message(Kind.INVALID, obj, id=rid, reason="invalid response id")
    return Message(Kind.RESPONSE, obj, id=rid)


def parse_line(line: bytes | bytearray | memoryview) -> Message:
    """Classify one line (with or without its trailing newline)."""
    data = bytes(line).strip(_WS)
    if not data:
        return Message(Kind.INVALID, reason="empty line")
    first = data[0]
    # Fast pre-check: JSON-RPC messages are objects or arrays.
    if first != 0x7B and first != 0x5B:  # '{' '['
        return Message(Kind.INVALID, reason="not JSON")
    last = data[-1]
    if last != 0x7D and last != 0x5D:  # '}' ']'
        return Message(Kind.INVALID, reason="not JSON")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        return Message(Kind.INVALID, reason=f"not JSON: {e}")
    return classify(obj)


def id_key(rid: Any) -> tuple[str, Any]:
    """Hashable id key that keeps 1 and "1" apart (they are different JSON-RPC ids)."""
    return ("s", rid) if isinstance(rid, str) else ("n", rid)


class Correlator:
    """Pending requests of ONE direction: id -> (method, context), bounded.

    A peer that never answers cannot grow this without limit: the oldest
    entry is dropped (and counted) when ``max_pending`` is reached.
    """

    __slots__ = ("_pending", "dropped", "max_pending")

    def __init__(self, max_pending: int = 4096) -> None:
        self._pending: OrderedDict[tuple[str, Any], tuple[str, Any]] = OrderedDict()
        self.max_pending = max_pending
        self.dropped = 0

    def note(self, rid: Any, method: str, context: Any = None) -> None:
        key = id_key(rid)
        self._pending[key] = (method, context)
        self._pending.move_to_end(key)
        while len(self._pending) > self.max_pending:
            self._pending.popitem(last=False)
            self.dropped += 1

    def resolve(self, rid: Any) -> tuple[str, Any] | None:
        """The (method, context) of the request this response answers; removes it."""
        if rid is None:
            return None
        return self._pending.pop(id_key(rid), None)

    def peek(self, rid: Any) -> tuple[str, Any] | None:
        if rid is None:
            return None
        return self._pending.get(id_key(rid))

    def has(self, method: str) -> bool:
        return any(m == method for m, _ in self._pending.values())

    def __len__(self) -> int:
        return len(self._pending)


# --------------------------------------------------------------------------- MCP helpers


def tools_of(result: Any) -> list[dict[str, Any]]:
    """The tool definitions of a tools/list result (dict entries with a string name)."""
    if not isinstance(result, dict):
        return []
    tools = result.get("tools")
    if not isinstance(tools, list):
        return []
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def next_cursor(result: Any) -> str | None:
    if isinstance(result, dict):
        c = result.get("nextCursor")
        if isinstance(c, str) and c:
            return c
    return None


def server_info(result: Any) -> tuple[str | None, str | None]:
    """(name, version) from an initialize result's serverInfo."""
    if isinstance(result, dict):
        info = result.get("serverInfo")
        if isinstance(info, dict):
            name, version = info.get("name"), info.get("version")
            return (
                name if isinstance(name, str) else None,
                version if isinstance(version, str) else None,
            )
    return None, None


def tool_call(msg: Message) -> tuple[str | None, Any]:
    """(tool name, arguments) of a tools/call request; name None when malformed."""
    params = msg.params
    if not isinstance(params, dict):
        return None, None
    name = params.get("name")
    return (name if isinstance(name, str) else None), params.get("arguments")


def error_response(rid: Any, message: str, code: int = BLOCKED_CODE, data: Any = None) -> bytes:
    """A JSON-RPC error response line (with trailing newline) for request ``rid``."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": err}) + b"\n"


def with_tools(obj: dict[str, Any], tools: list[Any]) -> dict[str, Any]:
    """A copy of a tools/list response object whose result lists only ``tools``.

    Everything else (id, nextCursor, _meta, unknown keys) is kept as it was.
    """
    out = dict(obj)
    result = dict(out.get("result") or {})
    result["tools"] = tools
    out["result"] = result
    return out


def dumps_line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"
