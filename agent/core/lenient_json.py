"""Parse JSON the way the most permissive receiver would, so a decision is
taken on what the receiver will act on.

Why this exists: agentsh decides on messages (MCP JSON-RPC lines, LLM API
bodies and SSE events) that are then read by other programs. Our fast parser,
orjson, is stricter than those receivers:

* Node's ``JSON.parse`` (MCP servers and clients written in TypeScript) takes
  lone surrogate escapes (``"\\ud800"``), numbers beyond the float range
  (``1e400`` is Infinity) and nesting far deeper than orjson's 1,024 levels;
  Node decodes invalid UTF-8 on the way in with U+FFFD replacement.
* Python's ``json`` (the ``mcp`` SDK, the anthropic/openai SDKs) takes the
  same plus ``NaN`` / ``Infinity`` literals, and a UTF-8 BOM on bytes input.

A message orjson rejects is therefore not harmless garbage: a receiver may
execute it. ``loads`` accepts the union of what those receivers accept, with
the same meaning (duplicate keys: the last one wins, as in all of them), so a
layer can decide on the message instead of forwarding it uninspected. What
even this cannot parse, no receiver we know of parses either: callers refuse
it (parse or refuse, docs/architecture.md "Failure rules").

Values come back normalized for the rest of agentsh: lone surrogates are
replaced by U+FFFD (they cannot be encoded as UTF-8, so nothing downstream
could log or forward them; and no real tool name contains one), integers
beyond 64 bits become floats (what a JavaScript receiver sees). The fast path
is orjson itself: well-formed input costs nothing extra.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "Unparseable", "clip", "loads", "loads_ex"]

MAX_DEPTH = 100_000
"""Deeper nesting is refused: no receiver needs it and it only costs memory."""

_BOM = "\ufeff"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64 = 1 << 63


class Unparseable(ValueError):
    """No JSON receiver we protect would parse this either."""


def loads(data: bytes | bytearray | memoryview | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data`` as the most permissive receiver reads it.

    Raises ``Unparseable`` (a ValueError) when nothing could parse it or it
    nests deeper than ``max_depth``.
    """
    return loads_ex(data, max_depth=max_depth)[0]


def loads_ex(
    data: bytes | bytearray | memoryview | str, *, max_depth: int = MAX_DEPTH
) -> tuple[Any, bool]:
    """``(value, strict)``: ``strict`` is False when only the lenient path parsed it."""
    try:
        return orjson.loads(data), True
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        text = bytes(data).decode("utf-8", "replace")  # Node's decoder: U+FFFD for bad bytes
    if text.startswith(_BOM):
        text = text[1:]
    try:
        value = json.loads(text, strict=False, parse_int=_parse_int)
    except RecursionError:
        value = _parse_deep(text, max_depth)
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        raise Unparseable(str(e)) from None
    return _normalize(value, max_depth), False


# --------------------------------------------------------------------------- normalizing


def _norm_str(s: str) -> str:
    if _LONE_SURROGATE.search(s) is None:
        return s
    # A proper pair was already combined by the parser; what is left is lone.
    return _LONE_SURROGATE.sub("\ufffd", s)


def _parse_int(digits: str) -> int | float:
    """An integer literal the way the fast path (orjson) reads it: exact within
    64 bits, else a correctly rounded double as a JavaScript receiver sees it,
    Infinity past the float range. The float comes from the text, so there is
    no 4,300-digit ``int`` limit and no overflow."""
    if len(digits) <= 18:
        return int(digits)
    v = int(digits) if len(digits) <= 21 else None
    if v is not None and -_INT64 <= v < 2 * _INT64:
        return v
    return float(digits)


def _norm_scalar(v: Any) -> Any:
    if isinstance(v, str):
        return _norm_str(v)
    if isinstance(v, int) and not isinstance(v, bool) and not -_INT64 <= v < _INT64:
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return v


def _normalize(root: Any, max_depth: int) -> Any:
    """Iterative (the value may be deeper than Python's recursion limit)."""
    if not isinstance(root, dict | list):
        return _norm_scalar(root)
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise Unparseable(f"nesting deeper than {max_depth}")
        if isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1))
                else:
                    node[i] = _norm_scalar(v)
        else:
            if any(_LONE_SURROGATE.search(k) for k in node):
                items = [(_norm_str(k), v) for k, v in node.items()]
                node.clear()
                node.update(items)  # later duplicates win, as when parsing
            for k, v in node.items():
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1))
                else:
                    node[k] = _norm_scalar(v)
    return root


# --------------------------------------------------------------------------- deep documents

_TOKEN = re.compile(
    r"""[ \t\n\r]*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<lit>true|false|null|NaN|-?Infinity)
    | (?P<punct>[\[\]{}:,])
    )""",
    re.VERBOSE | re.DOTALL,
)
_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
}
_END = object()


def _parse_deep(text: str, max_depth: int) -> Any:
    """An iterative JSON parser for what ``json`` cannot recurse into.

    Same grammar and meaning as ``json.loads(strict=False)``; only used for
    documents nested deeper than the interpreter's recursion limit.
    """
    pos = 0
    # each frame: [container, pending key or None, expecting: 'value'|'key'|'sep']
    stack: list[list[Any]] = []
    root: Any = _END

    def fail(msg: str) -> Unparseable:
        return Unparseable(f"{msg} at char {pos}")

    def put(value: Any) -> None:
        nonlocal root
        if not stack:
            root = value
            return
        frame = stack[-1]
        if isinstance(frame[0], list):
            frame[0].append(value)
        else:
            frame[0][frame[1]] = value
            frame[1] = None
        frame[2] = "sep"

    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip(" \t\n\r") == "" and root is not _END and not stack:
                return root
            raise fail("unexpected input")
        pos = m.end()
        top = stack[-1] if stack else None
        if root is not _END and top is None:
            raise fail("extra data")
        kind = m.lastgroup or ""  # every alternative of _TOKEN is a named group
        tok = m.group(kind)
        expecting = top[2] if top is not None else "value"
        if kind == "punct":
            if tok in "[{":
                if expecting not in ("value", "first"):
                    raise fail("unexpected " + tok)
                if len(stack) >= max_depth:
                    raise Unparseable(f"nesting deeper than {max_depth}")
                container: Any = [] if tok == "[" else {}
                put(container)
                stack.append([container, None, "first" if tok == "[" else "firstkey"])
            elif tok in "]}":
                if top is None or (tok == "]") != isinstance(top[0], list):
                    raise fail("unbalanced " + tok)
                if expecting not in ("sep", "first", "firstkey"):
                    raise fail("unexpected " + tok)
                stack.pop()
            elif tok == ",":
                if expecting != "sep" or top is None:  # "sep" is only expected inside a container
                    raise fail("unexpected ,")
                top[2] = "value" if isinstance(top[0], list) else "key"
            else:  # ':'
                if expecting != "colon" or top is None:
                    raise fail("unexpected :")
                top[2] = "value"
            continue
        if expecting in ("key", "firstkey"):
            if kind != "str" or top is None:  # keys are only expected inside an object
                raise fail("expected a key")
            top[1] = json.loads(tok, strict=False)
            top[2] = "colon"
            continue
        if expecting not in ("value", "first"):
            raise fail("unexpected value")
        if kind == "str":
            put(json.loads(tok, strict=False))
        elif kind == "num":
            put(json.loads(tok, parse_int=_parse_int))
        else:
            put(_LITERALS[tok])
        if not stack:
            rest = text[pos:]
            if rest.strip(" \t\n\r"):
                raise fail("extra data")
            return root


# --------------------------------------------------------------------------- for events


def clip(value: Any, *, max_depth: int = 32, max_items: int = 1000, max_str: int = 65536) -> Any:
    """A bounded copy of a decoded value for events and IPC payloads.

    Subtrees deeper than ``max_depth`` become the string ``"<nested too deep>"``,
    containers keep their first ``max_items`` entries (plus a marker), strings
    are cut to ``max_str`` characters. Iterative, so any decoded value is safe.
    """
    def leaf(v: Any) -> Any:
        if isinstance(v, str) and len(v) > max_str:
            return v[:max_str] + f"...<{len(v) - max_str} more chars>"
        return v

    if not isinstance(value, dict | list):
        return leaf(value)
    out: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any, int]] = [(value, out, 1)]
    while stack:
        src, dst, depth = stack.pop()
        items = list(src.items()) if isinstance(src, dict) else list(enumerate(src))
        extra = len(items) - max_items
        for k, v in items[:max_items]:
            if isinstance(v, dict | list):
                if depth >= max_depth:
                    child: Any = "<nested too deep>"
                else:
                    child = {} if isinstance(v, dict) else []
                    stack.append((v, child, depth + 1))
            else:
                child = leaf(v)
            if isinstance(dst, dict):
                dst[k] = child
            else:
                dst.append(child)
        if extra > 0:
            if isinstance(dst, dict):
                dst["<truncated>"] = f"{extra} more entries"
            else:
                dst.append(f"<{extra} more items>")
    return out
