"""Load the policy: main file + drop-ins, merged, validated, with precise errors.

Files: ``DIR/agentsh.yaml`` then ``DIR/policy.d/*.yaml`` in lexical order. When
``agentsh.yaml`` is absent the embedded default (``policies/default.yaml``) is
the base the drop-ins merge onto; when the directory holds no policy at all,
the embedded default is the policy.

Merge rule (docs/policy.md): mappings merge deeply, a later file wins for
scalars, lists concatenate (earlier files' items first).

Every error names the file, line and column and the key path, e.g.
``/etc/agentsh/policy.d/20-mcp.yaml:14:5: mcp.denied_tools[1].tool: ...``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from agentsh.agent.policy.schema import Policy

MAIN_FILE = "agentsh.yaml"
DROPIN_DIR = "policy.d"
EMBEDDED_DEFAULT = "<embedded>/policies/default.yaml"

Loc = tuple[str | int, ...]


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
        super().__init__("\n".join(errors))
        self.errors = errors
        self.files = list(files)


@dataclass
class LoadedPolicy:
    policy: Policy
    files: list[str]
    hash: str
    origins: dict[Loc, Origin] = field(default_factory=dict, repr=False)


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


class _Constructor(yaml.SafeLoader):
    pass


def _to_python(
    node: yaml.Node, fname: str, loc: Loc, origins: dict[Loc, Origin], errors: list[str]
) -> Any:
    mark = node.start_mark
    origins[loc] = Origin(fname, mark.line + 1, mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            if knode.tag == "tag:yaml.org,2002:merge":
                errors.append(
                    f"{fname}:{knode.start_mark.line + 1}:{knode.start_mark.column + 1}: "
                    f"{format_loc(loc)}: YAML merge keys ('<<') are not supported"
                )
                continue
            if not isinstance(knode, yaml.ScalarNode):
                errors.append(
                    f"{fname}:{knode.start_mark.line + 1}:{knode.start_mark.column + 1}: "
                    f"{format_loc(loc)}: mapping keys must be plain strings"
                )
                continue
            key = str(knode.value)
            if key in out:
                errors.append(
                    f"{fname}:{knode.start_mark.line + 1}:{knode.start_mark.column + 1}: "
                    f"{format_loc((*loc, key))}: duplicate key {key!r}"
                )
                continue
            child = (*loc, key)
            out[key] = _to_python(vnode, fname, child, origins, errors)
            # The key's position serves "unknown key" errors; the value's
            # position (kept under a marker) serves type errors.
            origins[(*child, "<value>")] = origins[child]
            origins[child] = Origin(fname, knode.start_mark.line + 1, knode.start_mark.column + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _to_python(item, fname, (*loc, i), origins, errors) for i, item in enumerate(node.value)
        ]
    constructor = _Constructor("")
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as e:
        errors.append(f"{fname}:{mark.line + 1}:{mark.column + 1}: {format_loc(loc)}: {e}")
        return None


def parse_yaml(text: str, fname: str) -> tuple[dict[str, Any], dict[Loc, Origin]]:
    """Parse one YAML document into a mapping plus the origin of every key path."""
    origins: dict[Loc, Origin] = {}
    errors: list[str] = []
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        where = f"{fname}:{m.line + 1}:{m.column + 1}" if m else fname
        problem = e.problem or str(e)
        if e.context:
            problem = f"{e.context}: {problem}"
        raise PolicyError([f"{where}: YAML syntax error: {problem}"], [fname]) from None
    except yaml.composer.ComposerError as e:  # multiple documents
        raise PolicyError([f"{fname}: {e}"], [fname]) from None
    except yaml.YAMLError as e:
        raise PolicyError([f"{fname}: YAML error: {e}"], [fname]) from None
    if node is None:
        return {}, origins
    if not isinstance(node, yaml.MappingNode):
        m = node.start_mark
        raise PolicyError(
            [f"{fname}:{m.line + 1}:{m.column + 1}: <root>: a policy file must be a mapping"],
            [fname],
        )
    data = _to_python(node, fname, (), origins, errors)
    if errors:
        raise PolicyError(errors, [fname])
    return data, origins


# --------------------------------------------------------------------------- merge


def merge(
    base: dict[str, Any],
    base_origins: dict[Loc, Origin],
    over: dict[str, Any],
    over_origins: dict[Loc, Origin],
) -> tuple[dict[str, Any], dict[Loc, Origin]]:
    """Deep-merge ``over`` onto ``base``: mappings merge, scalars replace, lists concatenate."""
    origins = dict(base_origins)

    def rebase(src: Loc, dst: Loc) -> None:
        n = len(src)
        for k, v in over_origins.items():
            if k[:n] == src:
                origins[dst + k[n:]] = v

    def go(b: Any, o: Any, loc: Loc) -> Any:
        if isinstance(b, dict) and isinstance(o, dict):
            out = dict(b)
            for k, v in o.items():
                child = (*loc, k)
                if k in out:
                    out[k] = go(out[k], v, child)
                else:
                    out[k] = v
                    rebase(child, child)
            if loc in over_origins:
                origins.setdefault(loc, over_origins[loc])
            return out
        if isinstance(b, list) and isinstance(o, list):
            offset = len(b)
            for i in range(len(o)):
                rebase((*loc, i), (*loc, offset + i))
            return b + o
        # scalar (or a type change): the later file wins, with its origins
        for k in [k for k in origins if k[: len(loc)] == loc and len(k) > len(loc)]:
            del origins[k]
        rebase(loc, loc)
        return o

    merged = go(base, over, ())
    return merged, origins


# --------------------------------------------------------------------------- validate


def _origin_for(loc: Loc, origins: dict[Loc, Origin], *, prefer_value: bool) -> Origin | None:
    cur = tuple(loc)
    while True:
        if prefer_value and (*cur, "<value>") in origins:
            return origins[(*cur, "<value>")]
        if cur in origins:
            return origins[cur]
        if not cur:
            return None
        cur = cur[:-1]


def validate(
    data: dict[str, Any], origins: dict[Loc, Origin], files: Sequence[str]
) -> Policy:
    try:
        return Policy.model_validate(data)
    except ValidationError as e:
        lines: list[str] = []
        for err in e.errors(include_url=False):
            loc: Loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
            etype = err["type"]
            unknown = etype == "extra_forbidden"
            missing = etype == "missing"
            if missing:
                origin = _origin_for(loc[:-1], origins, prefer_value=True)
            else:
                origin = _origin_for(loc, origins, prefer_value=not unknown)
            where = str(origin) if origin else (files[-1] if files else "<policy>")
            msg = err["msg"]
            if unknown:
                msg = f"unknown key {loc[-1]!r} (not part of the policy schema)"
            elif msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            lines.append(f"{where}: {format_loc(loc)}: {msg}")
        raise PolicyError(lines, files) from None


def policy_hash(policy: Policy) -> str:
    canonical = orjson.dumps(policy.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


# --------------------------------------------------------------------------- entry points


def policy_files(config_dir: Path) -> list[Path]:
    """The files that make up the policy in ``config_dir`` (main first, then drop-ins)."""
    files: list[Path] = []
    main = config_dir / MAIN_FILE
    if main.is_file():
        files.append(main)
    dropins = config_dir / DROPIN_DIR
    if dropins.is_dir():
        files.extend(
            sorted(
                (p for p in dropins.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()),
                key=lambda p: p.name,
            )
        )
    return files


def load_texts(texts: Sequence[tuple[str, str]]) -> LoadedPolicy:
    """Merge and validate ``(file name, YAML text)`` pairs in order."""
    data: dict[str, Any] = {}
    origins: dict[Loc, Origin] = {}
    errors: list[str] = []
    names = [n for n, _ in texts]
    for name, text in texts:
        try:
            d, o = parse_yaml(text, name)
        except PolicyError as e:
            errors.extend(e.errors)
            continue
        data, origins = merge(data, origins, d, o)
    if errors:
        raise PolicyError(errors, names)
    policy = validate(data, origins, names)
    return LoadedPolicy(policy=policy, files=names, hash=policy_hash(policy), origins=origins)


def load_paths(paths: Sequence[Path]) -> LoadedPolicy:
    texts: list[tuple[str, str]] = []
    errors: list[str] = []
    for p in paths:
        try:
            texts.append((str(p), p.read_text("utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            errors.append(f"{p}: cannot read: {e}")
    if errors:
        raise PolicyError(errors, [str(p) for p in paths])
    return load_texts(texts)


def load_dir(config_dir: Path | str) -> LoadedPolicy:
    """The effective policy of a config directory (see module docstring)."""
    config_dir = Path(config_dir)
    files = policy_files(config_dir)
    texts: list[tuple[str, str]] = []
    if not files or files[0].name != MAIN_FILE:
        texts.append((EMBEDDED_DEFAULT, embedded_default_text()))
    errors: list[str] = []
    for p in files:
        try:
            texts.append((str(p), p.read_text("utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            errors.append(f"{p}: cannot read: {e}")
    if errors:
        raise PolicyError(errors, [n for n, _ in texts])
    return load_texts(texts)


def load_embedded() -> LoadedPolicy:
    return load_texts([(EMBEDDED_DEFAULT, embedded_default_text())])
