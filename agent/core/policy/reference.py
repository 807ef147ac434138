"""Generate the key reference of docs/policy.md from the schema, so it cannot drift.

``python -m agentsh.agent.core.policy.reference`` prints the Markdown table;
tests/test_docs.py checks docs/policy.md contains it.
"""

from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from agentsh.agent.core.policy.schema import Policy

BEGIN = "<!-- BEGIN GENERATED KEY REFERENCE -->"
END = "<!-- END GENERATED KEY REFERENCE -->"


def _type_name(t: Any) -> str:
    origin = get_origin(t)
    if origin is typing.Literal:
        return " \\| ".join(repr(a).replace("'", "`") for a in get_args(t))
    if origin is typing.Annotated:
        return _type_name(get_args(t)[0])
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in get_args(t))
    if origin is list:
        return f"list of {_type_name(get_args(t)[0])}"
    if origin is dict:
        k, v = get_args(t)
        return f"map {_type_name(k)} → {_type_name(v)}"
    if t is type(None):
        return "null"
    if isinstance(t, type) and issubclass(t, BaseModel):
        return "mapping"
    return getattr(t, "__name__", str(t))


def _model_of(t: Any) -> type[BaseModel] | None:
    for cand in (t, *get_args(t)):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand
        if get_origin(cand) in (list, dict):
            inner = _model_of(get_args(cand)[-1])
            if inner:
                return inner
    return None


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        d = field.default
    elif field.default_factory is not None:
        d = field.default_factory()
    else:
        return "(required)"
    if isinstance(d, BaseModel):
        return ""
    if isinstance(d, bool):
        return f"`{str(d).lower()}`"
    if d is None:
        return "`null`"
    if isinstance(d, list | dict) and not d:
        return f"`{d!r}`"
    return f"`{d}`" if not isinstance(d, list) else "`" + ", ".join(map(str, d)) + "`"


def rows(model: type[BaseModel] = Policy, prefix: str = "") -> list[tuple[str, str, str, str]]:
    out: list[tuple[str, str, str, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        ann = field.annotation
        sub = _model_of(ann)
        desc = (field.description or "").replace("\n", " ").replace("|", "\\|")
        out.append((key, _type_name(ann), _default(field), desc))
        if sub is not None:
            suffix = "[]." if get_origin(ann) is list else (".<name>." if get_origin(ann) is dict else ".")
            out.extend(rows(sub, key + suffix))
    return out


def markdown() -> str:
    lines = [BEGIN, "", "| key | type | default | meaning |", "|---|---|---|---|"]
    for key, typ, default, desc in rows():
        lines.append(f"| `{key}` | {typ} | {default} | {desc} |")
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
