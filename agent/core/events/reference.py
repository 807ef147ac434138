"""Generate the per-type sections of docs/events.md from the models, so they cannot drift.

docs/events.md keeps its hand-written prose (intake rules, correlation,
delivery, reading the log) and carries generated blocks between markers:
the envelope table, the severity rules, every event type with its fields,
and the OCSF mapping. ``python -m agentsh.agent.core.events.reference --write
docs/events.md`` regenerates them in place; tests/test_docs.py checks the
file holds what this module generates.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.contract import required_fields
from agentsh.agent.core.events.ocsf import MAPPINGS, OCSF_VERSION
from agentsh.agent.core.events.severity import RULES

GROUPS: list[tuple[str, str, list[str]]] = [
    ("Daemon and policy lifecycle", "", ["daemon_started", "daemon_stopping", "component_exited",
                                         "admin_action", "policy_loaded", "policy_rejected"]),
    ("The event log itself", "", ["events_dropped", "events_rotated", "events_torn_tail"]),
    ("MCP tool definitions", "", ["mcp_tool_seen", "mcp_tool_changed", "mcp_detection",
                                  "mcp_tool_shadowed"]),
    ("MCP tool calls and results",
     "The call events share `session_id`; see \"Correlation\" below.",
     ["mcp_tool_call_intercepted", "mcp_tool_called", "mcp_result_injection",
      "mcp_network_connection", "network_connect", "bpf_lost_events", "mcp_server_discovered"]),
    ("Shims and the wire", "", ["shim_registered", "shim_exited", "protocol_error"]),
    ("LLM proxy", "", ["llm_request"]),
    ("Hooks and data flow", "", ["hook_evaluation", "flow_summary"]),
]
"""Sections of the type reference; a type in none of them is listed under "Other"."""


def _marker(name: str) -> tuple[str, str]:
    return f"<!-- BEGIN GENERATED {name} -->", f"<!-- END GENERATED {name} -->"


def _one_line(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").strip()).replace("|", "\\|")


def _anchor(model: type[BaseModel]) -> str:
    return model.__name__.lower()


def type_name(t: Any) -> str:
    """A field's type as a reader of the JSON line sees it (null is never written)."""
    origin = get_origin(t)
    args = get_args(t)
    if t is Any:
        return "any JSON"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" if a != "" else '`""`' for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (types.UnionType, typing.Union):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"map {type_name(args[0])} → {type_name(args[1])}"
    if isinstance(t, type) and issubclass(t, BaseModel):
        return f"[{t.__name__}](#{_anchor(t)})"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(t, getattr(t, "__name__", str(t)))


def field_rows(model: type[BaseModel], skip: frozenset[str] = frozenset()) -> list[str]:
    req = set(required_fields(model))
    rows = ["| field | type | always | meaning |", "| --- | --- | --- | --- |"]
    for name, f in model.model_fields.items():
        if name in skip:
            continue
        rows.append(
            f"| `{name}` | {type_name(f.annotation)} | {'yes' if name in req else ''} | {_one_line(f.description)} |"
        )
    return rows


def envelope() -> str:
    return "\n".join(field_rows(m.Event))


def severity_table() -> str:
    rows = ["| type | severity |", "| --- | --- |"]
    for t in _ordered_types():
        rule = RULES.get(t)
        rows.append(f"| `{t}` | {_one_line(rule.doc) if rule else '`info` (no rule)'} |")
    return "\n".join(rows)


def _ordered_types() -> list[str]:
    listed = [t for _, _, ts in GROUPS for t in ts if t in m.TYPE_NAMES]
    return listed + sorted(m.TYPE_NAMES - set(listed))


def _by_type() -> dict[str, type[m.Event]]:
    return {cls.model_fields["type"].default: cls for cls in m.EVENT_TYPES}


def event_types() -> str:
    by_type = _by_type()
    envelope_fields = frozenset(m.Event.model_fields)
    out: list[str] = []
    groups = [*GROUPS, ("Other", "", sorted(m.TYPE_NAMES - {t for _, _, ts in GROUPS for t in ts}))]
    nested_done: set[str] = set()
    for title, intro, names in groups:
        names = [n for n in names if n in by_type]
        if not names:
            continue
        out += [f"### {title}", ""]
        if intro:
            out += [intro, ""]
        for name in names:
            cls = by_type[name]
            out += [f"#### `{name}`", "", _one_line(cls.__doc__).replace("\\|", "|"), ""]
            rule = RULES.get(name)
            mp = MAPPINGS.get(name)
            facts = []
            if rule:
                facts.append(f"Severity: {_one_line(rule.doc)}.")
            if mp:
                facts.append(f"OCSF: {mp.cls.name} ({mp.cls.uid}), {mp.activity}.")
            if facts:
                out += [" ".join(facts), ""]
            out += field_rows(cls, skip=envelope_fields)
            out.append("")
            for nested in _nested_of(cls):
                if nested.__name__ in nested_done:
                    continue
                nested_done.add(nested.__name__)
                out += [f"#### {nested.__name__}", "", _one_line(nested.__doc__), ""]
                out += field_rows(nested)
                out.append("")
    return "\n".join(out).rstrip()


def _nested_of(model: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []

    def walk(t: Any) -> None:
        if isinstance(t, type) and issubclass(t, BaseModel):
            if t not in found:
                found.append(t)
                for f in t.model_fields.values():
                    walk(f.annotation)
            return
        for a in get_args(t):
            walk(a)

    for f in model.model_fields.values():
        walk(f.annotation)
    return found


def ocsf_table() -> str:
    rows = [
        "| type | OCSF class | category | activity | status, action / disposition | main fields |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for t in _ordered_types():
        mp = MAPPINGS.get(t)
        if mp is None:
            rows.append(f"| `{t}` | Base Event (0) | Uncategorized (0) | Other (99) | | (no mapping: the native event under `unmapped`) |")
            continue
        c = mp.cls
        rows.append(
            f"| `{t}` | {c.name} ({c.uid}) | {c.category_name} ({c.category_uid}) | {_one_line(mp.activity)} "
            f"| {_one_line(mp.outcome)} | {_one_line(mp.fields)} |"
        )
    return "\n".join(rows)


def intake() -> str:
    """What a non-root sender may hand in, per layer (``FOREIGN_TYPES``)."""
    rows = []
    for source, allowed in m.FOREIGN_TYPES.items():
        names = ", ".join(f"`{t}`" for t in _ordered_types() if t in allowed)
        rows.append(f"- `{source}`: {names or 'none (the daemon writes its events itself)'}")
    return "\n".join(rows)


BLOCKS = {
    "INTAKE": intake,
    "ENVELOPE": envelope,
    "SEVERITY RULES": severity_table,
    "EVENT TYPES": event_types,
    "OCSF MAPPING": ocsf_table,
}
"""Generated blocks of docs/events.md, by marker name."""


def block(name: str) -> str:
    begin, end = _marker(name)
    return f"{begin}\n\n{BLOCKS[name]()}\n\n{end}"


def update(text: str) -> str:
    """``text`` with every generated block replaced by what the models say now."""
    for name in BLOCKS:
        begin, end = _marker(name)
        i, j = text.index(begin), text.index(end) + len(end)
        text = text[:i] + block(name) + text[j:]
    return text


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--write":
        p = Path(argv[1])
        p.write_text(update(p.read_text()))
        print(f"{p}: generated sections regenerated (OCSF {OCSF_VERSION})")
        return
    for name in BLOCKS:
        print(block(name), end="\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
