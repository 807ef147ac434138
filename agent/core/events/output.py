"""What one line of the event log says (``events.format``; docs/events.md).

The writer hands every event, as its native dict with the envelope filled, to
the renderer of the configured format before it serializes the line. Both
renderers set the envelope ``severity`` (the one place it is decided,
agent/core/events/severity.py); ``ocsf`` then turns the line into its OCSF form
(agent/core/events/ocsf.py), the native event kept under ``unmapped``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentsh.agent.core.events.ocsf import FALLBACK, to_ocsf
from agentsh.agent.core.events.severity import severity_of

Renderer = Callable[[Any, dict[str, Any]], dict[str, Any]]


def native(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    """The native line: ``d`` with the envelope severity (also set on the event)."""
    sev = severity_of(ev)
    ev.__dict__["severity"] = sev
    d["severity"] = sev
    return d


def ocsf(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    """The OCSF line of ``ev`` (Base Event if its mapping fails: never lose the event)."""
    d = native(ev, d)
    try:
        return to_ocsf(ev, d)
    except Exception as e:
        out = to_ocsf(ev, d, FALLBACK)
        out["status_detail"] = f"OCSF mapping of {ev.type} failed: {type(e).__name__}: {e}"[:500]
        return out


RENDERERS: dict[str, Renderer] = {"native": native, "ocsf": ocsf}


def renderer(fmt: str) -> Renderer:
    return RENDERERS[fmt]
