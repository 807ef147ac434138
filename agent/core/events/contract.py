"""The published JSON Schema of the event log: what a consumer may rely on.

The event models (agent/core/events/models.py) serve two purposes that want
different schemas:

* **intake** — events other processes hand in are validated strictly
  (``parse_event``; ``extra="forbid"``: an unknown or misspelt field is an
  error, so nothing a sender invents reaches the log);
* **consumers** — SIEMs and scripts reading ``events.jsonl`` must keep working
  when a later agentsh adds fields or types, so the published schema is open:
  ``additionalProperties: true`` on every object, and an event of a type it
  does not know still validates as long as it has the envelope.

:func:`published_schema` renders the same models for consumers (what
``agentshctl events schema`` prints): ``$id`` with the major version, draft
2020-12, ``format: date-time`` on timestamps, ``required`` = the fields every
line of that type carries (the envelope, and every field that cannot be null:
only null fields are left out of a line), and each model's and field's
description. docs/events.md, "Machine-readable schema", has the versioning rule.
"""

from __future__ import annotations

import copy
import typing
from typing import Any

from pydantic import BaseModel

from agentsh.agent.core.events import models as m

SCHEMA_VERSION = 1
"""Major version: bumped only by a breaking change (docs/events.md)."""
SCHEMA_ID = f"https://agentsh.dev/schemas/events/v{SCHEMA_VERSION}.json"
ENVELOPE_REQUIRED = ("id", "timestamp", "type", "source", "host", "severity")
"""Written on every line, whatever the type."""
TIME_FIELDS = ("timestamp", "sender_timestamp")
DAEMON_ASSIGNED = ("id", "timestamp", "host", "severity")
"""Envelope fields the daemon fills (their model defaults are placeholders)."""


def _nullable(f: Any) -> bool:
    ann = f.annotation
    return f.default is None or ann is Any or type(None) in typing.get_args(ann)


def required_fields(model: type[BaseModel]) -> list[str]:
    """The fields every written line of ``model`` carries."""
    out = [n for n, f in model.model_fields.items() if not _nullable(f)]
    if issubclass(model, m.Event):
        out = [*ENVELOPE_REQUIRED, *(n for n in out if n not in ENVELOPE_REQUIRED)]
    return out


def _open_property(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as it appears in a line: null is never written (the field is left out)."""
    variants = prop.get("anyOf")
    if variants and {"type": "null"} in variants:
        rest = [v for v in variants if v != {"type": "null"}]
        del prop["anyOf"]
        if len(rest) == 1:
            prop.update(rest[0])
        else:
            prop["anyOf"] = rest
    if prop.get("default", 0) is None:
        del prop["default"]
    return prop


def _render(model: type[BaseModel], sub: dict[str, Any]) -> dict[str, Any]:
    sub = copy.deepcopy(sub)
    sub["additionalProperties"] = True
    sub["required"] = required_fields(model)
    props = sub["properties"]
    for name, prop in props.items():
        _open_property(prop)
        if name in TIME_FIELDS:
            prop["format"] = "date-time"
        if name in DAEMON_ASSIGNED:
            prop.pop("default", None)
    if issubclass(model, m.Event):
        props["type"]["description"] = (
            f"The event type: `{model.model_fields['type'].default}`."
            if model is not m.Event
            else m.Event.model_fields["type"].description
        )
    return sub


def _nested_models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}

    def walk(t: Any) -> None:
        if isinstance(t, type) and issubclass(t, BaseModel):
            if t.__name__ not in seen and not issubclass(t, m.Event):
                seen[t.__name__] = t
                for f in t.model_fields.values():
                    walk(f.annotation)
            return
        for a in typing.get_args(t):
            walk(a)

    for cls in m.EVENT_TYPES:
        for f in cls.model_fields.values():
            walk(f.annotation)
    return list(seen.values())


def published_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one line of ``events.jsonl`` (native format)."""
    raw = m.json_schema()
    defs: dict[str, Any] = raw["$defs"]
    out_defs: dict[str, Any] = {}
    for model in (*m.EVENT_TYPES, *_nested_models()):
        out_defs[model.__name__] = _render(model, defs[model.__name__])
    envelope = _render(m.Event, m.Event.model_json_schema())
    envelope["title"] = "Envelope"
    out_defs["Envelope"] = envelope
    known = sorted(m.TYPE_NAMES)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "agentsh event (one line of events.jsonl)",
        "description": (
            f"agentsh event log schema, version {SCHEMA_VERSION}. One JSON object per line: the "
            "envelope (id, timestamp, type, source, host, severity, ...) plus the fields of its "
            "type. Open for additions: ignore fields and types you do not know (later versions "
            f"of v{SCHEMA_VERSION} add them); fields whose value is null are left out of a line. "
            "A breaking change gets a new $id (v2). See docs/events.md."
        ),
        "oneOf": [
            *({"$ref": f"#/$defs/{cls.__name__}"} for cls in m.EVENT_TYPES),
            {
                "description": "An event type this version does not know: only the envelope is described.",
                "allOf": [{"$ref": "#/$defs/Envelope"}],
                "properties": {"type": {"not": {"enum": known}}},
            },
        ],
        "$defs": out_defs,
    }


def properties_without_description(schema: dict[str, Any]) -> list[str]:
    """``Model.field`` of every property (and model) in ``schema`` that lacks a description."""
    missing = []
    for name, sub in schema["$defs"].items():
        if not sub.get("description"):
            missing.append(name)
        for p, prop in sub.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{name}.{p}")
    return missing
