"""Histograms as plain ints, kept by any process and reported to the daemon.

The LLM proxy and the daemon observe latencies with the same buckets, and the
daemon's Prometheus collector (agent/daemon/metrics.py) turns the reported
counts into histograms (docs/operations.md "Monitoring").
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0
)  # fmt: skip
"""Seconds: what agentsh adds (proxy hold time, hook evaluations)."""
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds: whole LLM requests (upstream included)."""


class Buckets:
    """A histogram as plain ints: ``observe`` is one bisect and two adds."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1  # le semantics: v == bound is in it
        self.sum += seconds

    def to_json(self) -> dict[str, Any]:
        """What a process reports: per-bucket counts (not cumulative) and the sum."""
        return {"b": list(self.counts), "s": round(self.sum, 6)}
