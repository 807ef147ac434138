"""Per-server token buckets for MCP tool calls (``mcp.rate_limits``).

A bucket holds at most ``burst`` tokens and refills at ``calls_per_minute/60``
tokens per second. ``burst`` defaults to ``rate_limits.default_burst`` and,
when that is unset, to ``calls_per_minute``: a server may use a whole minute's
budget at once, and never more than ``calls_per_minute`` plus refill within any
minute. Servers without a ``per_server`` entry get ``default_rpm``.

Checking and consuming are separate (``available`` / ``take``) so the decision
pipeline can consume a token only for calls it lets through: a blocked call
does not use up the budget.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from agentsh.agent.core.policy.schema import RateLimitsConfig


@dataclass(slots=True)
class _Bucket:
    rate: float  # tokens per second
    capacity: float
    tokens: float
    stamp: float


class RateLimiter:
    def __init__(
        self, cfg: RateLimitsConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._cfg = cfg

    @property
    def enabled(self) -> bool:
        return self._cfg.enabled

    def limits(self, server_id: str) -> tuple[int, int]:
        """(calls_per_minute, burst) in force for a server."""
        cfg = self._cfg
        per = cfg.per_server.get(server_id)
        if per is not None:
            rpm = per.calls_per_minute
            burst = per.burst or cfg.default_burst or rpm
        else:
            rpm = cfg.default_rpm
            burst = cfg.default_burst or rpm
        return rpm, burst

    def update(self, cfg: RateLimitsConfig) -> None:
        """New limits: keep each bucket's fill level (clipped to the new burst)."""
        with self._lock:
            self._cfg = cfg
            for sid, b in list(self._buckets.items()):
                rpm, burst = self.limits(sid)
                b.rate = rpm / 60.0
                b.capacity = float(burst)
                b.tokens = min(b.tokens, b.capacity)

    def _bucket(self, server_id: str, now: float) -> _Bucket:
        b = self._buckets.get(server_id)
        if b is None:
            rpm, burst = self.limits(server_id)
            b = _Bucket(rpm / 60.0, float(burst), float(burst), now)
            self._buckets[server_id] = b
        elif now > b.stamp:
            b.tokens = min(b.capacity, b.tokens + (now - b.stamp) * b.rate)
            b.stamp = now
        return b

    def available(self, server_id: str) -> bool:
        """Would a call to this server be allowed now? (consumes nothing)"""
        with self._lock:
            return self._bucket(server_id, self._clock()).tokens >= 1.0

    def take(self, server_id: str) -> bool:
        """Consume one token if there is one; False (nothing consumed) otherwise."""
        with self._lock:
            b = self._bucket(server_id, self._clock())
            if b.tokens >= 1.0:
                b.tokens -= 1.0
                return True
            return False

    def take_all(self, server_ids: tuple[str, ...]) -> str | None:
        """Consume one token from each server's bucket, all or nothing. Returns the
        first server without a token (nothing consumed), or None on success."""
        with self._lock:
            now = self._clock()
            buckets = [(sid, self._bucket(sid, now)) for sid in server_ids]
            for sid, b in buckets:
                if b.tokens < 1.0:
                    return sid
            for _, b in buckets:
                b.tokens -= 1.0
            return None

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {sid: round(b.tokens, 3) for sid, b in self._buckets.items()}
