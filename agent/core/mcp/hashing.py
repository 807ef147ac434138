"""Tool definition hashing: the identity a pin is made of.

The hash covers what the model reads and what the call must look like:
``name``, ``description``, ``inputSchema`` and ``outputSchema``. It does not
cover ``annotations`` (hints that servers churn without changing behaviour) or
any other field. A missing field hashes as ``null``, so "absent" and "null"
are the same definition. Canonical form: JSON with sorted keys at every level
(orjson ``OPT_SORT_KEYS``), no whitespace; format ``sha256:<64 hex>``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

HASHED_FIELDS: tuple[str, ...] = ("name", "description", "inputSchema", "outputSchema")
PREFIX = "sha256:"


def hashed_part(tool: dict[str, Any]) -> dict[str, Any]:
    """The fields of a tool definition that the hash covers (missing → None)."""
    return {k: tool.get(k) for k in HASHED_FIELDS}


def canonical_json(value: Any) -> str:
    """Sorted-key compact JSON; falls back to the stdlib for values orjson refuses
    (integers beyond 64 bits, non-string keys), which stay deterministic there too."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=str)


def tool_hash(tool: dict[str, Any]) -> str:
    """``sha256:`` + hex SHA-256 of the canonical JSON of the hashed fields."""
    data = canonical_json(hashed_part(tool)).encode()
    return PREFIX + hashlib.sha256(data).hexdigest()


def short_hash(h: str | None, n: int = 8) -> str:
    """The first ``n`` hex digits, for tables (``a1b2c3d4``)."""
    if not h:
        return "-"
    return h.removeprefix(PREFIX)[:n]


def field_text(definition: dict[str, Any], field: str) -> str:
    """A field as a string for diffs: strings as they are, anything else as
    canonical JSON, a missing value as the empty string."""
    v = definition.get(field)
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return canonical_json(v)


def diff_definitions(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Field-level changes between two definitions (only the hashed fields), in the
    ``FieldChange`` shape of ``mcp_tool_changed`` (docs/events.md):
    ``{"field", "previous", "new"}``."""
    out: list[dict[str, str]] = []
    for f in HASHED_FIELDS:
        if canonical_json(old.get(f)) == canonical_json(new.get(f)):
            continue
        out.append({"field": f, "previous": field_text(old, f), "new": field_text(new, f)})
    return out
