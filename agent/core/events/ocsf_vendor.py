"""Derive the vendored OCSF JSON Schema (agent/core/events/ocsf_schema/) from the OCSF schema files.

The OCSF form of the event log (docs/events.md, "OCSF") is tested against the
OCSF definitions of the classes it uses. They are vendored as one JSON Schema
bundle, derived here from the official OCSF export of the pinned version
(``schema.ocsf.io/<version>/export/schema``, Apache-2.0, as shipped by the
``ocsf-json-schema`` package, a dev dependency) with that package's
generator: every class with the profiles we apply, every object it reaches,
``additionalProperties: false`` as OCSF defines them, enums, required
attributes and type patterns.

``python -m agentsh.agent.core.events.ocsf_vendor`` rewrites the bundle;
tests/test_ocsf.py checks the vendored file equals what this derives.
"""

from __future__ import annotations

import json
from typing import Any

from agentsh.agent.core.events.ocsf import CLASSES, OCSF_VERSION, PROFILES, SCHEMA_FILE

BUNDLE_ID = f"https://agentsh.dev/schemas/events/v1/ocsf-{OCSF_VERSION}.json"


def class_def_name(key: str) -> str:
    """The bundle's ``$defs`` key of an OCSF class (OCSF object names stay as they are)."""
    return f"class_{key}"


def build_bundle() -> dict[str, Any]:
    """One JSON Schema (draft 2020-12): ``oneOf`` the classes agentsh writes, objects shared in ``$defs``."""
    from ocsf_json_schema import OcsfJsonSchemaEmbedded, get_ocsf_schema

    gen = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=OCSF_VERSION))
    defs: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    for c in sorted(CLASSES.values(), key=lambda c: c.uid):
        s = gen.get_class_schema(c.key, profiles=list(PROFILES))
        for name, obj in s.pop("$defs", {}).items():
            if name in defs and defs[name] != obj:
                raise ValueError(f"object {name} differs between classes")
            defs[name] = obj
        source_id = s.pop("$id")
        s.pop("$schema")
        s["$comment"] = f"OCSF {OCSF_VERSION} class {c.key} ({c.uid}): {source_id}"
        classes[class_def_name(c.key)] = s
    overlap = set(defs) & set(classes)
    if overlap:
        raise ValueError(f"class and object names collide: {overlap}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": BUNDLE_ID,
        "title": f"agentsh events in OCSF {OCSF_VERSION}",
        "description": (
            f"The OCSF {OCSF_VERSION} classes agentsh writes (events.format: ocsf), with the "
            f"profiles {', '.join(PROFILES)}; derived from the OCSF schema (Apache-2.0). "
            "Each event validates against exactly one class (class_uid)."
        ),
        "oneOf": [{"$ref": f"#/$defs/{k}"} for k in classes],
        "$defs": {**classes, **dict(sorted(defs.items()))},
    }


def dumps(bundle: dict[str, Any]) -> str:
    return json.dumps(bundle, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    SCHEMA_FILE.write_text(dumps(build_bundle()))
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
