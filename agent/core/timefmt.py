"""One time format for what agentsh hands to machines: RFC 3339 UTC.

The event log writes RFC 3339 UTC with microseconds (docs/events.md, "The
envelope"); the control API's JSON (``agentshctl status --json``, policy,
shims, components, BPF) uses the same. Inside the daemon times stay epoch
floats (health arithmetic); they become RFC 3339 at the API boundary with
:func:`rfc3339_times`, by the naming rule every time field follows: a key
named ``at`` or ending in ``_at`` holds a time (durations end in
``_seconds``, ``_ms`` or ``_ago``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any


def rfc3339(t: float | None) -> str | None:
    """Epoch seconds → ``2026-11-22T10:00:00.123456Z``; None stays None."""
    if t is None:
        return None
    sec, us = divmod(round(t * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{us:06d}Z"


def _is_time_key(k: Any) -> bool:
    return isinstance(k, str) and (k == "at" or k.endswith("_at"))


def rfc3339_times(obj: Any) -> Any:
    """``obj`` (JSON-like) with every number under a time key (``at``, ``*_at``) as RFC 3339."""
    if isinstance(obj, dict):
        return {
            k: rfc3339(v)
            if _is_time_key(k) and isinstance(v, int | float) and not isinstance(v, bool)
            else rfc3339_times(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [rfc3339_times(v) for v in obj]
    return obj


def epoch(v: Any) -> float | None:
    """An RFC 3339 time (or epoch seconds) → epoch seconds; None when it is neither."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str) and v:
        try:
            return datetime.fromisoformat(v.replace("z", "Z")).timestamp()
        except ValueError:
            return None
    return None


def seconds_since(v: Any, now: float | None = None) -> float | None:
    """How long ago ``v`` (RFC 3339 or epoch seconds) was; None when unknown."""
    t = epoch(v)
    return None if t is None else (time.time() if now is None else now) - t
