"""The one JSON-RPC 2.0 / MCP message parser every layer uses (shim, proxy, daemon).

Why one parser: the shim, the LLM proxy and the daemon must agree on what a
``tools/call`` is, what a ``tools/list`` result holds and what counts as
invalid; two parsers would disagree on the edge cases attackers pick.

Parse the way the receivers parse (docs/shim.md "Refused messages"):

- ``parse_line`` reads one newline-delimited message with
  ``agentsh.agent.core.lenient_json`` (orjson first; when orjson refuses, the union
  of what Node's ``JSON.parse`` and Python's ``json``/pydantic accept: lone
  surrogates, ``1e400``, deep nesting, invalid UTF-8 ...). What even that
  cannot parse, no receiver parses: it is ``INVALID`` with code -32700.
- A line may end with one ``\\r`` (the TS SDK strips it). Toward a server,
  any other raw CR makes it ``INVALID``: the Python SDK's stdin reader splits
  lines on a bare CR, the TS SDK does not, so they would read different
  messages (``bare_cr=True`` for the client-bound direction, where every SDK
  splits on LF only and a CR is JSON whitespace).
- Classification follows JSON-RPC 2.0 strictly: ``"jsonrpc": "2.0"``; ids are
  strings or numbers (null only in error responses); a request/notification
  has a string ``method``; a response has exactly one of ``result``/``error``.
  Anything else is ``INVALID`` (code -32600) with a reason.
- Ids are matched the way the clients match them (``id_keys``): the TS SDK
  looks a response up by ``Number(id)``, the Python SDK by ``int(id)`` for
  strings, so ``"1"``, ``"0x1"`` and ``1.0`` all answer request 1.
  ``PendingRequests`` keeps the requests of one direction, several per id,
  bounded.
- ``scan_top`` reads only the top level of a big object line (the members'
  boundaries and small values) so a large message that needs no decision
  costs a few ``memchr`` passes instead of a full parse.
- The serialising helpers (``error_response``, ``with_tools``) are only used
  where agentsh must write its own message; forwarded bytes are never
  re-serialised.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import orjson

from agentsh.agent.core import lenient_json

__all__ = [
    "BLOCKED_CODE",
    "INITIALIZE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "NOTIFICATION_CANCELLED",
    "PARSE_ERROR",
    "SAMPLING_CREATE_MESSAGE",
    "TOOLS_CALL",
    "TOOLS_LIST",
    "TOOLS_LIST_CHANGED",
    "Kind",
    "Message",
    "Pending",
    "PendingRequests",
    "classify",
    "error_response",
    "id_keys",
    "js_number",
    "parse_line",
    "recover_id",
    "scan_top",
    "server_info",
    "tool_call",
    "tools_of",
    "with_tools",
]

INITIALIZE = "initialize"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
NOTIFICATION_CANCELLED = "notifications/cancelled"
SAMPLING_CREATE_MESSAGE = "sampling/createMessage"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BLOCKED_CODE = -32001
"""Error code agentsh uses for a refused call: JSON-RPC reserves -32000..-32099
for implementation-defined server errors."""

_WS = frozenset(b" \t\r\n")


class Kind(IntEnum):
    INVALID = 0
    REQUEST = 1
    NOTIFICATION = 2
    RESPONSE = 3
    ERROR = 4
    BATCH = 5
    BLANK = 6
    """Whitespace only: not a message at all (dropped, not counted)."""


_NO_ID: Any = object()


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
    code: int = 0
    """INVALID only: PARSE_ERROR (not JSON for any receiver) or INVALID_REQUEST."""
    strict: bool = True
    """False when only the lenient parser could read the line (orjson refused it)."""
    has_id: bool = False
    """True when ``id`` holds a value that can be echoed in an error (INVALID included)."""

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


def _invalid(obj: Any, reason: str, method: str | None = None, rid: Any = _NO_ID) -> Message:
    ok = rid is not _NO_ID and _valid_id(rid)
    return Message(Kind.INVALID, obj, method, rid if ok else None, reason=reason,
                   code=INVALID_REQUEST, has_id=ok)


def classify(obj: Any) -> Message:
    """Classify an already-parsed JSON value as a JSON-RPC message."""
    if isinstance(obj, list):
        if not obj:
            return _invalid(obj, "empty batch")
        return Message(Kind.BATCH, obj, items=[_classify_one(x) for x in obj])
    return _classify_one(obj)


def _classify_one(obj: Any) -> Message:
    if not isinstance(obj, dict):
        return _invalid(obj, "not a JSON object")
    rid = obj.get("id", _NO_ID)
    if obj.get("jsonrpc") != "2.0":
        return _invalid(obj, "missing or wrong 'jsonrpc' version", rid=rid)
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str):
            return _invalid(obj, "'method' is not a string", rid=rid)
        if "result" in obj or "error" in obj:
            return _invalid(obj, "request carries result/error", method, rid)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict | list):
            return _invalid(obj, "'params' is not object/array", method, rid)
        if rid is _NO_ID:
            return Message(Kind.NOTIFICATION, obj, method)
        if not _valid_id(rid):
            return _invalid(obj, "invalid request id", method)
        return Message(Kind.REQUEST, obj, method, rid, has_id=True)
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result == has_error:
        return _invalid(obj, "neither method nor exactly one of result/error", rid=rid)
    if rid is _NO_ID:
        return _invalid(obj, "response without id")
    if has_error:
        err = obj["error"]
        if not (isinstance(err, dict) and isinstance(err.get("code"), int)
                and not isinstance(err.get("code"), bool)):
            return _invalid(obj, "malformed error object", rid=rid)
        if rid is not None and not _valid_id(rid):
            return _invalid(obj, "invalid response id")
        return Message(Kind.ERROR, obj, id=rid, has_id=rid is not None)
    if not _valid_id(rid):
        return _invalid(obj, "invalid response id")
    return Message(Kind.RESPONSE, obj, id=rid, has_id=True)


def _bounds(data: bytes | bytearray, start: int, end: int) -> tuple[int, int]:
    """[start, end) of the message without its line terminator and JSON whitespace."""
    if end > start and data[end - 1] == 0x0A:
        end -= 1
        if end > start and data[end - 1] == 0x0D:
            end -= 1
    while start < end and data[start] in _WS:
        start += 1
    while end > start and data[end - 1] in _WS:
        end -= 1
    return start, end


def parse_line(
    line: bytes | bytearray, start: int = 0, end: int | None = None, *, bare_cr: bool = False
) -> Message:
    """Classify one line ``line[start:end]`` (with or without its trailing newline).

    ``bare_cr``: the receivers of this direction read a raw CR inside a line as
    JSON whitespace (MCP clients split on LF only); otherwise (toward servers,
    where the Python SDK splits on a bare CR) such a line is INVALID."""
    if end is None:
        end = len(line)
    if not bare_cr and line.find(b"\r", start, end) >= 0:
        s, e = _bounds(line, start, end)
        if line.find(b"\r", s, e) >= 0:
            found, rid = recover_id(line, s, e)
            return Message(Kind.INVALID, id=rid if found else None, has_id=found,
                           reason="bare CR inside a line (receivers split lines differently)",
                           code=INVALID_REQUEST)
    # fast path: orjson skips the JSON whitespace (and the CRLF) itself
    if start == 0 and end == len(line) and type(line) is bytes:
        try:
            return _classified(orjson.loads(line), True)
        except orjson.JSONDecodeError:
            pass
    else:
        view = memoryview(line)[start:end]
        try:
            return _classified(orjson.loads(view), True)
        except orjson.JSONDecodeError:
            pass
        finally:
            view.release()
    s, e = _bounds(line, start, end)
    if s >= e:
        return Message(Kind.BLANK, reason="empty line")
    view = memoryview(line)[s:e]
    try:
        obj, strict = lenient_json.loads_ex(view)
    except ValueError as exc:  # lenient_json.Unparseable
        found, rid = recover_id(line, s, e)
        return Message(Kind.INVALID, id=rid if found else None, has_id=found,
                       reason=f"not JSON: {exc}", code=PARSE_ERROR)
    finally:
        view.release()
    return _classified(obj, strict)


def _classified(obj: Any, strict: bool) -> Message:
    msg = classify(obj)
    msg.strict = strict
    return msg


# --------------------------------------------------------------------------- ids as clients match them

_JS_SPACE = "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)", re.ASCII)
_JS_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)", re.ASCII)
_EXACT = 1 << 53  # integers a double holds exactly
_MAX_ID_CHARS = 1024
"""Longer string ids are matched exactly only (no client sends such ids)."""


def _f64(i: int) -> float:
    try:
        return float(i)
    except OverflowError:
        return float("inf") if i > 0 else float("-inf")


def js_number(s: str) -> float | None:
    """JavaScript's ``Number(s)`` for a string; None where it gives NaN."""
    t = s.strip(_JS_SPACE)
    if not t:
        return 0.0
    if _JS_RADIX.fullmatch(t):
        return _f64(int(t[2:], {"x": 16, "o": 8, "b": 2}[t[1].lower()]))
    if _JS_DECIMAL.fullmatch(t):
        return float(t)
    return None


def id_keys(rid: Any) -> tuple[tuple[str, Any], ...]:
    """The keys under which a client may match ``rid`` to a request id.

    Two ids are the same request when they share a key: equal strings; equal
    numbers as the TS SDK compares them (``Number(id)``: ``"1"``, ``" 1 "``,
    ``"0x1"``, ``"1e0"``, ``1.0`` are all 1; integers rounded to doubles) or
    as the Python SDK does (``int(id)`` of a string). ``None``/bools: no keys.
    """
    if type(rid) is int and -_EXACT <= rid <= _EXACT:
        return (("n", rid),)
    if isinstance(rid, str):
        keys: dict[tuple[str, Any], None] = {("s", rid): None}
        if len(rid) <= _MAX_ID_CHARS:
            n = js_number(rid)
            if n is not None and n == n:
                keys[("n", n)] = None
            try:
                i = int(rid)
            except ValueError:
                pass
            else:
                keys[("n", i)] = None
                keys[("n", _f64(i))] = None
        return tuple(keys)
    if isinstance(rid, bool) or rid is None:
        return ()
    if isinstance(rid, int):
        f = _f64(rid)
        return (("n", rid),) if f == rid else (("n", rid), ("n", f))
    if isinstance(rid, float):
        return (("n", rid),) if rid == rid else ()
    return ()


@dataclass(slots=True, eq=False)
class Pending:
    """One request that was forwarded and awaits its response."""

    id: Any
    """The id as the requester sent it (errors agentsh writes carry it)."""
    method: str
    context: Any = None
    cancelled: bool = False
    seq: int = 0
    keys: tuple[tuple[str, Any], ...] = ()


class PendingRequests:
    """Requests of ONE direction awaiting a response, matched like the clients match.

    Several requests may share an id (a client may reuse one); a response
    ``matches`` every pending request it could answer. Bounded: ``add``
    returns None when ``max_pending`` live requests are pending and nothing
    can be evicted (the caller refuses the request); cancelled requests, and
    with ``evict_live`` any request, are evicted oldest first.
    """

    __slots__ = ("_by_key", "_entries", "_seq", "dropped", "evict_live", "max_pending")

    def __init__(self, max_pending: int = 4096, *, evict_live: bool = False) -> None:
        self._by_key: dict[tuple[str, Any], list[Pending]] = {}
        self._entries: dict[int, Pending] = {}  # insertion order = age
        self._seq = itertools.count()
        self.max_pending = max_pending
        self.evict_live = evict_live
        self.dropped = 0

    def add(self, rid: Any, method: str, context: Any = None) -> Pending | None:
        if len(self._entries) >= self.max_pending and not self._evict_one():
            return None
        p = Pending(rid, method, context, seq=next(self._seq), keys=id_keys(rid))
        self._entries[p.seq] = p
        for k in p.keys:
            self._by_key.setdefault(k, []).append(p)
        return p

    def has_room(self) -> bool:
        """Whether ``add`` would succeed now."""
        return (len(self._entries) < self.max_pending or self.evict_live
                or any(p.cancelled for p in self._entries.values()))

    def _evict_one(self) -> bool:
        victim = next((p for p in self._entries.values() if p.cancelled), None)
        if victim is None and self.evict_live and self._entries:
            victim = next(iter(self._entries.values()))
        if victim is None:
            return False
        self.remove(victim)
        self.dropped += 1
        return True

    def matches(self, rid: Any) -> list[Pending]:
        """Every pending request ``rid`` could answer, oldest first."""
        keys = id_keys(rid)
        if not keys:
            return []
        if len(keys) == 1:
            return list(self._by_key.get(keys[0], ()))
        found: dict[int, Pending] = {}
        for k in keys:
            for p in self._by_key.get(k, ()):
                found[p.seq] = p
        return [found[s] for s in sorted(found)]

    def remove(self, p: Pending) -> None:
        if self._entries.pop(p.seq, None) is None:
            return
        for k in p.keys:
            lst = self._by_key.get(k)
            if lst is not None:
                lst.remove(p)
                if not lst:
                    del self._by_key[k]

    def count(self, method: str, *, live: bool = True) -> int:
        return sum(1 for p in self._entries.values()
                   if p.method == method and not (live and p.cancelled))

    def __iter__(self) -> Iterator[Pending]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)


# --------------------------------------------------------------------------- top-level scan

_SCALAR = re.compile(rb"-?(?:Infinity|[0-9][0-9.eE+\-]*)|true|false|null|NaN")
_STRUCT = re.compile(rb'["{}\[\]]')
SMALL_VALUE = 4096
"""Top-level values up to this size are decoded by ``scan_top``; bigger
containers are represented by an empty container of the same type."""


class _Stop(Exception):
    pass


def scan_top(
    data: bytes | bytearray,
    start: int = 0,
    end: int | None = None,
    *,
    partial: bool = False,
    budget: int = 4096,
) -> dict[str, Any] | None:
    """The top-level members of the JSON object in ``data[start:end]``, without
    parsing the values in between.

    Strings are skipped with ``find`` (escape-aware), containers by matching
    brackets outside strings, so for valid JSON the members are exactly those a
    full parse gives (duplicates: the last wins; keys decoded like the parser).
    Values up to SMALL_VALUE bytes are decoded; bigger ones come back as an
    empty dict/list of the right type. None when the text is not an object,
    is malformed where the scan looks, or needs more than ``budget`` steps
    (the caller parses it fully). It does NOT validate what it skips: use it
    only where an unparseable message is harmless (see the shim's inspector).
    With ``partial``, a truncated text gives the members seen so far.
    """
    if end is None:
        end = len(data)
    steps = 0

    def skip_ws(i: int) -> int:
        while i < end and data[i] in _WS:
            i += 1
        return i

    def string_end(i: int) -> int:
        nonlocal steps
        k = i + 1
        while True:
            steps += 1
            if steps > budget:
                raise _Stop
            j = data.find(b'"', k, end)
            if j < 0:
                raise _Stop
            b = j - 1
            while data[b] == 0x5C:  # backslash run before the quote
                b -= 1
            if (j - 1 - b) % 2 == 0:
                return j + 1
            k = j + 1

    def value_end(i: int) -> int:
        nonlocal steps
        if i >= end:
            raise _Stop
        c = data[i]
        if c == 0x22:
            return string_end(i)
        if c == 0x7B or c == 0x5B:
            depth = 0
            k = i
            while True:
                steps += 1
                if steps > budget:
                    raise _Stop
                m = _STRUCT.search(data, k, end)
                if m is None:
                    raise _Stop
                p = m.start()
                ch = data[p]
                if ch == 0x22:
                    k = string_end(p)
                    continue
                depth += 1 if ch in (0x7B, 0x5B) else -1
                k = p + 1
                if depth == 0:
                    return k
        m = _SCALAR.match(data, i, end)
        if m is None:
            raise _Stop
        return m.end()

    out: dict[str, Any] = {}
    try:
        i = skip_ws(start)
        if i >= end or data[i] != 0x7B:
            return None
        i = skip_ws(i + 1)
        if i < end and data[i] == 0x7D:
            i = skip_ws(i + 1)
            return out if i == end else None
        while True:
            if i >= end or data[i] != 0x22:
                raise _Stop
            j = string_end(i)
            key = lenient_json.loads(data[i:j])
            i = skip_ws(j)
            if i >= end or data[i] != 0x3A:
                raise _Stop
            i = skip_ws(i + 1)
            j = value_end(i)
            if j - i <= SMALL_VALUE:
                out[key] = lenient_json.loads(data[i:j])
            else:
                c = data[i]
                out[key] = {} if c == 0x7B else [] if c == 0x5B else lenient_json.loads(data[i:j])
            i = skip_ws(j)
            if i < end and data[i] == 0x2C:
                i = skip_ws(i + 1)
                continue
            if i < end and data[i] == 0x7D:
                i = skip_ws(i + 1)
                return out if i == end else None
            raise _Stop
    except (_Stop, ValueError, IndexError):
        return out if partial else None


def recover_id(data: bytes | bytearray, start: int = 0, end: int | None = None) -> tuple[bool, Any]:
    """(found, id): the top-level ``id`` of a line that could not be parsed (or
    only its head), so the error for it can name the request. Best effort."""
    if end is None:
        end = len(data)
    members = scan_top(data, start, end, partial=True, budget=256)
    if members and "id" in members and _valid_id(members["id"]):
        return True, members["id"]
    return False, None


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
