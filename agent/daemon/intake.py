"""Events handed in by other processes: one admission path for all of them.

Shims, hooks and the LLM proxy hand events to the daemon over the control
API (``POST /v1/events``), the channel (``op: events``) or spool files. Each
goes through ``admit``: validated against the event models, vouched for by the
uid the kernel (or the spool file's descriptor) names — never by what the
event says about itself — and given the daemon's envelope (id, host,
timestamp). ``hand_in`` then writes them and returns only once they are in
the log file, so an acknowledgement means the events survive a daemon crash.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentsh.agent.core.events.models import FOREIGN_TYPES, Event, parse_event, vouch

MAX_EVENTS_PER_BATCH = 10_000


@dataclass
class Admitted:
    events: list[Event] = field(default_factory=list)
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, msg: str) -> None:
        self.rejected += 1
        if len(self.errors) < 20:
            self.errors.append(msg)


def admit(
    items: Iterable[Any],
    uid: int,
    *,
    pid: int | None = None,
    sources: frozenset[str] | None = None,
) -> Admitted:
    """Validate and vouch for ``items`` on behalf of ``uid``.

    ``sources`` narrows what the sender may speak for (a supervised child
    speaks only for its own layer, whatever its uid). ``pid`` fills the
    process field of events that carry none.
    """
    out = Admitted()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            out.reject(f"events[{i}]: not an object")
            continue
        try:
            ev = parse_event(item)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in first["loc"])
            out.reject(f"events[{i}]: {loc}: {first['msg']}")
            continue
        if sources is not None and (
            ev.source not in sources or ev.type not in FOREIGN_TYPES.get(ev.source, ())
        ):
            out.reject(f"events[{i}]: this sender may not hand in {ev.type!r} events as {ev.source!r}")
            continue
        if not vouch(ev, uid):
            out.reject(f"events[{i}]: a {ev.source} sender (uid {uid}) may not hand in {ev.type!r} events")
            continue
        if ev.pid is None and pid is not None:
            ev.pid = pid
        out.events.append(ev)
    return out


async def hand_in(writer: Any, events: list[Event]) -> int:
    """Write ``events``; returns how many were accepted, once they are written.

    Uses the writer's acknowledged emit when it has one (every accepted event
    is in the file when this returns); otherwise plain emit.
    """
    if not events:
        return 0
    acked = getattr(writer, "emit_acked", None)
    if acked is not None:
        res = await acked(events)
        return int(getattr(res, "accepted", res if isinstance(res, int) else len(events)))
    return sum(1 for ev in events if writer.emit(ev))
