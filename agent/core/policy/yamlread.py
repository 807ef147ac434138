"""Read one policy file: YAML text → plain Python data plus the position of every node.

Why not ``yaml.compose`` + a walk over the node tree: a policy file is hostile
input for a root daemon that re-reads it on every change.

* **No aliases, no anchors.** ``&a`` / ``*a`` let a few hundred bytes stand for
  billions of nodes (the "billion laughs" bomb); any expansion budget would
  still make one text node appear under several key paths, so an error could
  not name one place. They are refused with an error at each use
  (docs/policy.md, "Limits").
* **Bounded depth** (``MAX_DEPTH`` nested collections): the schema needs ~6.
* **Linear and cheap**: the C parser's event stream (libyaml, marks included)
  is turned into dicts/lists in one pass, with no node objects kept alive (a
  composed 100k-rule tree is millions of GC-tracked objects, and the cyclic
  GC then costs more than the parse).

Positions are packed into one int (``pack``) and kept in an *origin tree*
parallel to the data: ``int`` for a scalar, ``(pos, kids)`` for a collection,
where ``kids`` is ``{key: (key_pos, child)}`` for a mapping and ``[child, ...]``
for a sequence; a mapping entry whose value is a scalar is one int,
``key_pos * KEY + value_pos`` (ints are not tracked by the cyclic GC).
loader.merge() merges the two trees side by side; ``entry()`` unpacks one.
"""

from __future__ import annotations

from typing import Any

import yaml
import yaml.constructor
import yaml.resolver

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DEPTH = 32
"""Most nested mappings/sequences in one file."""

ONode = Any
"""An origin tree node: ``int`` (scalar) or ``(pos, kids)`` (collection)."""

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalar types a policy may use; others (!!binary, !!set, !!python/...) are refused.
_SCALARS = {
    t: yaml.constructor.SafeConstructor.yaml_constructors[t]
    for t in (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
    )
}
_CTOR = yaml.constructor.SafeConstructor()
_RESOLVE = yaml.resolver.Resolver().resolve

_LINE = 1 << 24
_FILE = 1 << 48
_KEY = 1 << 64  # a mapping entry with a scalar value: key_pos * _KEY + value_pos
# First characters of plain scalars that may resolve to a non-string type.
_RESOLVED_FIRST = frozenset(k for k in yaml.resolver.Resolver.yaml_implicit_resolvers if k)


def pack(fno: int, line: int, column: int) -> int:
    """A position as one int: file number, 1-based line and column."""
    return fno * _FILE + line * _LINE + column


def unpack(pos: int) -> tuple[int, int, int]:
    return pos // _FILE, (pos // _LINE) % _LINE, pos % _LINE


def pos_of(onode: ONode) -> int:
    return onode if onode.__class__ is int else onode[0]


def entry(kid: Any) -> tuple[int, ONode]:
    """A mapping entry of the origin tree as ``(key_pos, value onode)``."""
    if kid.__class__ is int:
        return divmod(kid, _KEY)
    return kid


class YAMLSyntaxError(Exception):
    """The text is not YAML; ``line`` is ready to print."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def _where(fname: str, mark: Any) -> str:
    return f"{fname}:{mark.line + 1}:{mark.column + 1}"


def _loc_str(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "<root>"


_SKIP = object()  # "drop the next value" (after a bad key)


class _Frame:
    __slots__ = ("data", "depth", "key", "kids", "kind", "pending", "pending_pos")

    def __init__(self, kind: int, data: Any, kids: Any, key: str | int | None) -> None:
        self.kind = kind  # 0 mapping, 1 sequence, 2 skipped subtree
        self.data = data
        self.kids = kids
        self.key = key  # where this collection sits in its parent
        self.pending: Any = None  # mapping: the key waiting for its value
        self.pending_pos = 0
        self.depth = 1  # skipped subtree: open collections


class _Retry(Exception):
    """The fast reader met something it does not handle: read again with positions."""


def read_data(text: str) -> dict[str, Any] | None:
    """The data of a clean policy file, fast (no positions), or None.

    None means "not clean" (any YAML the slow reader would report: syntax
    errors, anchors, tags, duplicate keys, ...): call read_yaml() for the
    errors. Positions cost a third of the time and are only ever needed for
    error messages, so a good policy is read once, without them.
    """
    loader = Loader(text)
    try:
        return _read_fast(loader)
    except (_Retry, yaml.YAMLError):
        return None
    finally:
        loader.dispose()


def _read_fast(loader: Any) -> dict[str, Any]:
    get = loader.get_event
    get()  # StreamStartEvent
    ev = get()
    if ev.__class__ is yaml.StreamEndEvent:
        return {}
    Scalar, MapStart, SeqStart = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    MapEnd, SeqEnd = yaml.MappingEndEvent, yaml.SequenceEndEvent
    ev = get()
    if ev.__class__ is not MapStart or ev.anchor is not None or ev.tag is not None:
        raise _Retry
    root: dict[str, Any] = {}
    conts: list[Any] = [root]  # open collections
    top: Any = root
    key: Any = None  # in a mapping: the key waiting for its value
    while True:
        ev = get()
        cls = ev.__class__
        if cls is MapEnd or cls is SeqEnd:
            conts.pop()
            if not conts:
                break
            top = conts[-1]
            continue
        if cls is Scalar:
            if ev.anchor is not None or ev.tag is not None:
                raise _Retry
            value = ev.value
            if key is None and top.__class__ is dict:  # a mapping key
                if value in top or value == "<<":
                    raise _Retry
                key = value
                continue
            if ev.implicit[0] and (not value or value[0] in _RESOLVED_FIRST):
                tag = _RESOLVE(yaml.ScalarNode, value, ev.implicit)
                if tag != _STR:
                    ctor = _SCALARS.get(tag)
                    if ctor is None:
                        raise _Retry
                    try:
                        value = ctor(_CTOR, yaml.ScalarNode(tag, value, None, None))
                    except (yaml.YAMLError, ValueError, OverflowError):
                        raise _Retry from None
            if top.__class__ is dict:
                top[key] = value
                key = None
            else:
                top.append(value)
            continue
        if cls is MapStart or cls is SeqStart:
            if ev.anchor is not None or ev.tag is not None or len(conts) >= MAX_DEPTH:
                raise _Retry
            new: Any = {} if cls is MapStart else []
            if top.__class__ is dict:
                if key is None:  # a collection as a mapping key
                    raise _Retry
                top[key] = new
            else:
                top.append(new)
            conts.append(new)
            top = new
            key = None
            continue
        raise _Retry  # an alias
    if get().__class__ is not yaml.DocumentEndEvent or get().__class__ is not yaml.StreamEndEvent:
        raise _Retry
    return root


def read_yaml(
    text: str, fname: str, fno: int, errors: list[str]
) -> tuple[dict[str, Any], ONode]:
    """Parse one single-document YAML mapping with the position of every node;
    problems are appended to ``errors``.

    Raises YAMLSyntaxError when the text cannot be parsed at all (then nothing
    else about the file is reported: positions after a syntax error mean little).
    """
    loader = Loader(text)
    try:
        return _read(loader, fname, fno, errors)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        where = _where(fname, m) if m else fname
        problem = e.problem or str(e)
        if e.context:
            problem = f"{e.context}: {problem}"
        raise YAMLSyntaxError(f"{where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as e:
        raise YAMLSyntaxError(f"{fname}: YAML error: {e}") from None
    finally:
        loader.dispose()


def _read(loader: Any, fname: str, fno: int, errors: list[str]) -> tuple[dict[str, Any], ONode]:
    get = loader.get_event
    get()  # StreamStartEvent
    ev = get()
    if ev.__class__ is yaml.StreamEndEvent:
        return {}, (pack(fno, 1, 1), {})
    root: dict[str, Any] = {}
    root_o: ONode = None
    stack: list[_Frame] = []

    def loc(extra: str | int | None = None) -> str:
        parts: list[str | int] = [f.key for f in stack[1:] if f.key is not None]
        if extra is not None:
            parts.append(extra)
        return _loc_str(parts)

    def err(mark: Any, where: str, msg: str) -> None:
        errors.append(f"{_where(fname, mark)}: {where}: {msg}")

    # Anchors/aliases: one error at the first, with the count of the others
    # (a bomb holds dozens; the first says all there is to say).
    first_alias = [-1, 0]  # index in errors, how many more

    def alias(mark: Any, where: str, sigil: str, name: str) -> None:
        if first_alias[0] < 0:
            first_alias[0] = len(errors)
            err(mark, where, f"YAML anchor/alias {sigil}{name}: {_NO_ALIAS}")
        else:
            first_alias[1] += 1

    Scalar, MapStart, SeqStart = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    MapEnd, SeqEnd, Alias = yaml.MappingEndEvent, yaml.SequenceEndEvent, yaml.AliasEvent
    DocEnd = yaml.DocumentEndEvent

    while True:
        ev = get()
        cls = ev.__class__
        if cls is DocEnd:
            break
        top = stack[-1] if stack else None
        if top is not None and top.kind == 2:  # inside a skipped subtree
            if cls is MapStart or cls is SeqStart:
                top.depth += 1
            elif cls is MapEnd or cls is SeqEnd:
                top.depth -= 1
                if top.depth == 0:
                    stack.pop()
            continue
        if cls is MapEnd or cls is SeqEnd:
            stack.pop()
            continue
        mark = ev.start_mark
        pos = fno * _FILE + (mark.line + 1) * _LINE + mark.column + 1
        if top is None:  # the document's root node
            if cls is not MapStart:
                raise YAMLSyntaxError(
                    f"{_where(fname, mark)}: <root>: a policy file must be a mapping"
                )
            root_o = (pos, {})
            stack.append(_Frame(0, root, root_o[1], None))
            _check_node(ev, mark, "<root>", err, alias)
            continue

        # -- where does this node go?
        if top.kind == 0 and top.pending is None:  # a mapping key
            if cls is Scalar:
                key = ev.value
                if ev.anchor is not None:
                    alias(mark, loc(key), "&", ev.anchor)
                if key == "<<" and ev.implicit[0] and ev.tag is None:
                    err(mark, loc(), "YAML merge keys ('<<') are not supported")
                    top.pending = _SKIP
                elif key in top.data:
                    err(mark, loc(key), f"duplicate key {key!r}")
                    top.pending = _SKIP
                else:
                    top.pending = key
                    top.pending_pos = pos
            elif cls is Alias:
                alias(mark, loc(), "*", ev.anchor)
                top.pending = _SKIP
            else:
                err(mark, loc(), "mapping keys must be plain strings")
                top.pending = _SKIP
                stack.append(_Frame(2, None, None, None))
            continue

        if top.kind == 0:
            key = top.pending
            top.pending = None
            if key is _SKIP:
                if cls is MapStart or cls is SeqStart:
                    stack.append(_Frame(2, None, None, None))
                continue
        else:
            key = len(top.data)

        if cls is Scalar:
            value = ev.value
            # Fast path: a quoted scalar, or a plain one no implicit type can start with.
            if (
                ev.tag is not None
                or ev.anchor is not None
                or (ev.implicit[0] and (not value or value[0] in _RESOLVED_FIRST))
            ):
                value = _scalar(ev, mark, key, loc, err, alias)
            if top.kind == 0:
                top.data[key] = value
                top.kids[key] = top.pending_pos * _KEY + pos
            else:
                top.data.append(value)
                top.kids.append(pos)
            continue
        if cls is Alias:
            alias(mark, loc(key), "*", ev.anchor)
            if top.kind == 1:  # keep the indices of later items right
                top.data.append(None)
                top.kids.append(pos)
            continue
        # a nested mapping or sequence
        if len(stack) >= MAX_DEPTH:
            err(mark, loc(key), f"nested more than {MAX_DEPTH} levels deep")
            if top.kind == 1:
                top.data.append(None)
                top.kids.append(pos)
            stack.append(_Frame(2, None, None, None))
            continue
        if ev.anchor is not None or ev.tag is not None:
            _check_node(ev, mark, loc(key), err, alias)
        if cls is MapStart:
            data: Any = {}
            onode: ONode = (pos, {})
            frame = _Frame(0, data, onode[1], key)
        else:
            data = []
            onode = (pos, [])
            frame = _Frame(1, data, onode[1], key)
        if top.kind == 0:
            top.data[key] = data
            top.kids[key] = (top.pending_pos, onode)
        else:
            top.data.append(data)
            top.kids.append(onode)
        stack.append(frame)

    if first_alias[1]:
        n = first_alias[1]
        errors[first_alias[0]] += f" ({n} more in this file)"
    ev = get()
    if ev.__class__ is not yaml.StreamEndEvent:
        raise YAMLSyntaxError(
            f"{_where(fname, ev.start_mark)}: a policy file must hold one YAML document, "
            "found another ('---')"
        )
    return root, root_o


_NO_ALIAS = (
    "anchors and aliases are not supported in policy files, write the value out "
    "(docs/policy.md, Limits)"
)


def _check_node(ev: Any, mark: Any, where: str, err: Any, alias: Any) -> None:
    """Anchors and explicit tags on a mapping or sequence."""
    if ev.anchor is not None:
        alias(mark, where, "&", ev.anchor)
    tag = ev.tag
    if tag is not None and tag != "!" and tag not in (_MAP, _SEQ):
        err(mark, where, f"YAML tag {tag!r} is not supported")


def _scalar(ev: Any, mark: Any, key: str | int, loc: Any, err: Any, alias: Any) -> Any:
    if ev.anchor is not None:
        alias(mark, loc(key), "&", ev.anchor)
    tag = ev.tag
    value = ev.value
    if tag is None or tag == "!":
        if not ev.implicit[0]:  # quoted: always a string
            return value
        tag = _RESOLVE(yaml.ScalarNode, value, ev.implicit)
    if tag == _STR:
        return value
    ctor = _SCALARS.get(tag)
    if ctor is None:
        err(mark, loc(key), f"YAML tag {tag!r} is not supported")
        return None
    try:
        return ctor(_CTOR, yaml.ScalarNode(tag, value, mark, ev.end_mark, ev.style))
    except (yaml.YAMLError, ValueError, OverflowError) as e:
        err(mark, loc(key), str(e))
        return None
