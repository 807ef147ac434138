"""What the line format costs a producer: serializing one event with the writer's
severity + format hook (native, ocsf) next to the same serialization without it.

Run: ``.venv/bin/python bench/event_format.py`` (a few seconds).

emit() serializes on the producer's thread (agent/core/events/writer.py), so the
hook's cost lands on every producer. Rounds of the three variants are
interleaved in one run (the machine's other load hits them alike); each prints
the median and p90 of per-event µs over the rounds and its ratio to the
baseline (the writer's serialization with the hook replaced by nothing).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.output import native, ocsf
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.policy.schema import EventsConfig

N = 2000
ROUNDS = 15


def events() -> list[m.Event]:
    det = m.DetectionResult(pattern="hidden_instructions", category="tool_poisoning", severity="high",
                            matches=[m.DetectionMatch(text="ignore", position=3)], field="description")
    out: list[m.Event] = []
    for i in range(N):
        k = i % 4
        if k == 3:
            out.append(m.MCPDetection(server_id="fs", tool_name=f"t{i}", detection=det, action="alert", pid=4242))
        else:
            out.append(m.MCPToolCalled(server_id="fs", tool_name="write_file", jsonrpc_id=i,
                                       input={"path": f"/tmp/f{i}", "content": "x" * 64},
                                       action="block" if k else "allow", reason="tool denied" if k else None,
                                       source="shim", pid=4242, uid=1000, comm="node", session_id="s-1"))
    return out


def none(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
    return d


def run(w: EventWriter, evs: list[m.Event]) -> float:
    ns = time.time_ns()
    t0 = time.perf_counter_ns()
    for ev in evs:
        w._line(ns, ev)
    return (time.perf_counter_ns() - t0) / len(evs) / 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        w = EventWriter(EventsConfig(path=str(Path(tmp) / "e.jsonl")))
        evs = events()
        for ev in evs:
            ev.id = "0" * 26
        variants = {"baseline (no hook)": none, "native + severity": native, "ocsf": ocsf}
        res: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(ROUNDS):
            for name, fn in variants.items():
                w._render = fn  # type: ignore[assignment]
                res[name].append(run(w, evs))
    base = statistics.median(res["baseline (no hook)"])
    print(f"serializing {N} events x {ROUNDS} rounds (µs per event)")
    print(f"{'variant':22s} {'median':>8s} {'p90':>8s} {'ratio':>7s}")
    for name, xs in res.items():
        xs.sort()
        p90 = xs[int(0.9 * (len(xs) - 1))]
        print(f"{name:22s} {statistics.median(xs):8.2f} {p90:8.2f} {statistics.median(xs) / base:7.2f}x")


if __name__ == "__main__":
    main()
