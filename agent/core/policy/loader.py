"""Load the policy: main file + drop-ins, merged, validated, with precise errors.

Files: ``DIR/agentsh.yaml`` then ``DIR/policy.d/*.yaml`` in lexical order. When
``agentsh.yaml`` is absent the embedded default (``policies/default.yaml``) is
the base the drop-ins merge onto; when the directory holds no policy at all,
the embedded default is the policy.

Merge rule (docs/policy.md): mappings merge deeply, a later file wins for
scalars, lists concatenate (earlier files' items first).

Every error names the file, line and column and the key path, e.g.
``/etc/agentsh/policy.d/20-mcp.yaml:14:5: mcp.denied_tools[1].tool: ...``.
Facts the schema does not hold (the LLM proxy's provider names: the core does
not import the proxy) are checked by ``checks`` the caller passes: each
returns ``(key path, message)`` pairs, reported exactly like schema errors.

Policy files are hostile input to a root daemon that re-reads them on every
change, so reading is bounded (docs/policy.md, "Limits"): at most
``MAX_FILE_BYTES`` per file, ``MAX_TOTAL_BYTES`` in all, ``MAX_DROPINS``
drop-ins, no YAML aliases (yamlread.py says why), and linear time in the size
of the text. A good policy is read without positions; only when something is
wrong are the files read again with the origin of every value, kept in a tree
parallel to the data and merged with it in place (never looked up by key-path
prefix: that was quadratic).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.core.policy.yamlread import (
    ONode,
    YAMLSyntaxError,
    entry,
    pack,
    pos_of,
    read_data,
    read_yaml,
    unpack,
)

MAIN_FILE = "agentsh.yaml"
DROPIN_DIR = "policy.d"
EMBEDDED_DEFAULT = "<embedded>/policies/default.yaml"

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest policy file (bytes)."""
MAX_TOTAL_BYTES = 16 * 1024 * 1024
"""Largest sum of all policy files of one load (bytes)."""
MAX_DROPINS = 256
"""Most files in ``policy.d``."""
MAX_ERRORS = 50
"""Errors reported per load; the rest are summed up in one last line."""

Loc = tuple[str | int, ...]
Check = Callable[[Policy], list[tuple[Loc, str]]]
"""A check of a validated policy beyond the schema: (key path, message) per problem."""


@dataclass(frozen=True)
class Origin:
    file: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class PolicyError(Exception):
    """One or more problems with policy files; ``errors`` are ready-to-print lines."""

    def __init__(self, errors: list[str], files: Sequence[str] = ()) -> None:
        if len(errors) > MAX_ERRORS:
            more = len(errors) - MAX_ERRORS
            errors = [*errors[:MAX_ERRORS], f"... and {more} more error{'s' if more > 1 else ''}"]
        super().__init__("\n".join(errors))
        self.errors = errors
        self.files = list(files)


@dataclass
class Origins:
    """Where every value of a merged policy came from (file, line, column)."""

    files: list[str] = field(default_factory=list)
    root: ONode = None

    def get(self, loc: Iterable[str | int], *, prefer_value: bool = False) -> Origin | None:
        """The origin of ``loc`` or of its nearest ancestor that exists.

        A mapping entry has two positions: its key (for "unknown key") and its
        value (``prefer_value``, for wrong values).
        """
        node = self.root
        if node is None:
            return None
        best = pos_of(node)
        for part in loc:
            kids = node[1] if node.__class__ is tuple else None
            if isinstance(kids, dict) and isinstance(part, str) and part in kids:
                key_pos, node = entry(kids[part])
                best = pos_of(node) if prefer_value else key_pos
            elif isinstance(kids, list) and isinstance(part, int) and 0 <= part < len(kids):
                node = kids[part]
                best = pos_of(node)
            else:
                break
        return self.origin(best)

    def origin(self, pos: int) -> Origin:
        fno, line, column = unpack(pos)
        return Origin(self.files[fno], line, column)


@dataclass
class LoadedPolicy:
    policy: Policy
    files: list[str]
    hash: str


def format_loc(loc: Iterable[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"


def embedded_default_text() -> str:
    return (importlib.resources.files("agentsh.policies") / "default.yaml").read_text("utf-8")


# --------------------------------------------------------------------------- YAML with marks


def parse_yaml(text: str, fname: str, fno: int = 0) -> tuple[dict[str, Any], ONode]:
    """Parse one YAML document into a mapping plus its origin tree (see yamlread)."""
    errors: list[str] = []
    try:
        data, onode = read_yaml(text, fname, fno, errors)
    except YAMLSyntaxError as e:
        raise PolicyError([e.line], [fname]) from None
    if errors:
        raise PolicyError(errors, [fname])
    return data, onode


# --------------------------------------------------------------------------- merge


def merge(
    base: dict[str, Any], base_o: ONode, over: dict[str, Any], over_o: ONode
) -> tuple[dict[str, Any], ONode]:
    """Deep-merge ``over`` onto ``base`` **in place**: mappings merge, scalars
    replace, lists concatenate. The origin trees are merged alongside.

    Both sides must be freshly parsed (they are mutated and shared, never
    copied): that keeps a merge linear in the size of ``over``.
    """
    _merge_map(base, base_o[1], over, over_o[1])
    return base, base_o


def _merge_map(b: dict[str, Any], bkids: Any, o: dict[str, Any], okids: Any) -> None:
    """Merge mapping ``o`` into ``b``; ``bkids``/``okids`` are their origin
    trees' entries, or both None when no positions are kept."""
    for k, v in o.items():
        if k in b:
            bv = b[k]
            if bv.__class__ is dict and v.__class__ is dict:
                if bkids is None:
                    _merge_map(bv, None, v, None)
                else:
                    _merge_map(bv, bkids[k][1][1], v, okids[k][1][1])
                continue
            if bv.__class__ is list and v.__class__ is list:
                bv.extend(v)
                if bkids is not None:
                    bkids[k][1][1].extend(okids[k][1][1])
                continue
        # new key, or a scalar / type change: the later file wins, with its origins
        b[k] = v
        if bkids is not None:
            bkids[k] = okids[k]


# --------------------------------------------------------------------------- validate


def validate(data: dict[str, Any], origins: Origins, files: Sequence[str]) -> Policy:
    try:
        return Policy.model_validate(data)
    except ValidationError as e:
        raise PolicyError(validation_errors(e, origins, files), files) from None


def validation_errors(e: ValidationError, origins: Origins, files: Sequence[str]) -> list[str]:
    """pydantic's errors as ``file:line:column: key.path: message`` lines."""
    lines: list[str] = []
    for err in e.errors(include_url=False):
        loc: Loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
        etype = err["type"]
        unknown = etype == "extra_forbidden"
        missing = etype == "missing"
        if missing:
            origin = origins.get(loc[:-1], prefer_value=True)
        else:
            origin = origins.get(loc, prefer_value=not unknown)
        where = str(origin) if origin else (files[-1] if files else "<policy>")
        msg = err["msg"]
        if unknown:
            msg = f"unknown key {loc[-1]!r} (not part of the policy schema)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        lines.append(f"{where}: {format_loc(loc)}: {msg}")
    return lines


def policy_hash(policy: Policy) -> str:
    canonical = orjson.dumps(policy.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


# --------------------------------------------------------------------------- entry points


def _dropins(config_dir: Path) -> list[Path]:
    d = config_dir / DROPIN_DIR
    try:
        with os.scandir(d) as it:
            names = [
                e.name
                for e in it
                if e.name.endswith((".yaml", ".yml")) and e.is_file()
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [d / n for n in sorted(names)]


def policy_files(config_dir: Path) -> list[Path]:
    """The files that make up the policy in ``config_dir`` (main first, then drop-ins)."""
    files: list[Path] = []
    main = config_dir / MAIN_FILE
    if main.is_file():
        files.append(main)
    files.extend(_dropins(config_dir))
    return files


def _too_big(name: str, size: int | None = None) -> str:
    got = f" ({size} bytes)" if size is not None else ""
    return (
        f"{name}:1:1: <root>: file is larger than {MAX_FILE_BYTES} bytes{got}, "
        "the limit for one policy file (docs/policy.md, Limits)"
    )


def _read_file(p: Path) -> str:
    """A policy file's text, read without ever blocking (no FIFOs) or reading past the limit."""
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"not a regular file: {p}")
        if st.st_size > MAX_FILE_BYTES:
            raise _TooBig(_too_big(str(p), st.st_size))
        chunks = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        if left <= 0:  # grew while we read
            raise _TooBig(_too_big(str(p)))
        return b"".join(chunks).decode("utf-8")
    finally:
        os.close(fd)


class _TooBig(Exception):
    pass


def _read_all(paths: Sequence[Path]) -> tuple[list[tuple[str, str]], list[str]]:
    texts: list[tuple[str, str]] = []
    errors: list[str] = []
    for p in paths:
        try:
            texts.append((str(p), _read_file(p)))
        except _TooBig as e:
            errors.append(str(e))
        except (OSError, UnicodeDecodeError) as e:
            errors.append(f"{p}: cannot read: {e}")
    return texts, errors


def load_texts(texts: Sequence[tuple[str, str]], checks: Sequence[Check] = ()) -> LoadedPolicy:
    """Merge and validate ``(file name, YAML text)`` pairs in order.

    A clean policy is read once, without positions (read_data). Positions are
    only for error messages: when a file is not clean, or the merged policy
    does not validate, the files are read again with them (read_yaml).
    """
    names = [n for n, _ in texts]
    errors: list[str] = []
    total = 0
    datas: list[dict[str, Any]] = []
    for fno, (name, text) in enumerate(texts):
        size = len(text)
        if size * 4 > MAX_FILE_BYTES:  # only then can the UTF-8 size exceed it
            size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_FILE_BYTES:
            errors.append(_too_big(name, size))
            continue
        total += size
        if total > MAX_TOTAL_BYTES:
            errors.append(
                f"{name}:1:1: <root>: the policy files add up to more than {MAX_TOTAL_BYTES} "
                "bytes, the limit for one policy (docs/policy.md, Limits)"
            )
            break
        d = read_data(text)
        if d is None:  # not plainly clean: read again, with positions for the errors
            n_errors = len(errors)
            try:
                d, _ = read_yaml(text, name, fno, errors)
            except YAMLSyntaxError as e:
                errors.append(e.line)
                continue
            if len(errors) > n_errors:
                continue
        if not errors:
            datas.append(d)
    if errors:
        raise PolicyError(errors, names)
    data: dict[str, Any] = datas[0] if datas else {}
    for d in datas[1:]:
        _merge_map(data, None, d, None)
    try:
        policy = Policy.model_validate(data)
    except ValidationError as e:
        raise PolicyError(validation_errors(e, _origins_of(texts), names), names) from None
    found = [p for check in checks for p in check(policy)]
    if found:
        raise PolicyError(check_errors(found, _origins_of(texts), names), names)
    return LoadedPolicy(policy=policy, files=names, hash=policy_hash(policy))


def check_errors(found: Sequence[tuple[Loc, str]], origins: Origins, files: Sequence[str]) -> list[str]:
    """``checks`` findings as ``file:line:column: key.path: message`` lines (the key's position)."""
    lines: list[str] = []
    for loc, msg in found:
        origin = origins.get(loc)
        where = str(origin) if origin else (files[-1] if files else "<policy>")
        lines.append(f"{where}: {format_loc(loc)}: {msg}")
    return lines


def _origins_of(texts: Sequence[tuple[str, str]]) -> Origins:
    """Read every file again, with positions, and merge the origin trees."""
    data: dict[str, Any] | None = None
    root: ONode = (pack(0, 1, 1), {})
    for fno, (name, text) in enumerate(texts):
        d, o = read_yaml(text, name, fno, [])  # clean: read_data read it
        if data is None:
            data, root = d, o
        else:
            merge(data, root, d, o)
    return Origins([n for n, _ in texts], root)


def load_paths(paths: Sequence[Path], checks: Sequence[Check] = ()) -> LoadedPolicy:
    texts, errors = _read_all(paths)
    if errors:
        raise PolicyError(errors, [str(p) for p in paths])
    return load_texts(texts, checks)


def load_dir(config_dir: Path | str, checks: Sequence[Check] = ()) -> LoadedPolicy:
    """The effective policy of a config directory (see module docstring)."""
    config_dir = Path(config_dir)
    files = policy_files(config_dir)
    names = [str(p) for p in files]
    n_dropins = len(files) - (1 if files and files[0].name == MAIN_FILE else 0)
    if n_dropins > MAX_DROPINS:
        raise PolicyError(
            [
                f"{config_dir / DROPIN_DIR}: {n_dropins} drop-in files, more than the limit "
                f"of {MAX_DROPINS} (docs/policy.md, Limits)"
            ],
            names,
        )
    texts: list[tuple[str, str]] = []
    if not files or files[0].name != MAIN_FILE:
        texts.append((EMBEDDED_DEFAULT, embedded_default_text()))
    read, errors = _read_all(files)
    texts.extend(read)
    if errors:
        raise PolicyError(errors, [EMBEDDED_DEFAULT, *names] if len(texts) > len(read) else names)
    return load_texts(texts, checks)


def load_embedded() -> LoadedPolicy:
    return load_texts([(EMBEDDED_DEFAULT, embedded_default_text())])
