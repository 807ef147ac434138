"""Live stdio shims known to the daemon (register / heartbeat / unregister)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import psutil


@dataclass
class ShimInfo:
    shim_id: str
    server_id: str
    pid: int
    command: list[str]
    session_id: str | None
    uid: int | None
    registered_at: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    tools: int = 0
    calls: int = 0
    blocks: int = 0
    offline_decisions: int = 0
    """Calls this shim decided from its local policy copy (daemon unreachable)."""
    spooled: int = 0
    """Events this shim wrote to its spool instead of handing them in."""
    last_offline_at: float | None = None
    """When the shim last decided offline or spooled (its own clock, epoch seconds)."""
    spool_dir: str | None = None
    hidden: int = 0
    """Tools it removed from tools/list results."""
    refused: int = 0
    """JSON-RPC lines it refused (not forwarded)."""
    superseded: bool = False
    """The same process registered again (after a lost connection): its later
    registration carries its counters (they are cumulative per process)."""

    def snapshot(self) -> dict[str, Any]:
        return {
            "shim_id": self.shim_id,
            "server_id": self.server_id,
            "pid": self.pid,
            "command": self.command,
            "session_id": self.session_id,
            "uid": self.uid,
            "registered_at": self.registered_at,
            "last_seen_seconds_ago": round(time.time() - self.last_seen, 1),
            "tools": self.tools,
            "calls": self.calls,
            "blocks": self.blocks,
            "offline_decisions": self.offline_decisions,
            "spooled": self.spooled,
            "last_offline_at": self.last_offline_at,
        }


COUNTERS = ("calls", "blocks", "offline_decisions", "spooled", "hidden", "refused")
"""What a shim reports cumulatively (heartbeat, unregister); summed for /metrics."""


class ShimTable:
    def __init__(self, heartbeat_timeout: float = 30.0) -> None:
        self._shims: dict[str, ShimInfo] = {}
        self._ids = itertools.count(1)
        self.heartbeat_timeout = heartbeat_timeout
        self.sessions = 0
        """Shim processes registered since the daemon started."""
        self._gone = dict.fromkeys(COUNTERS, 0)
        """The last counters of shims that left."""

    def register(
        self,
        server_id: str,
        pid: int,
        command: list[str],
        session_id: str | None,
        uid: int | None,
    ) -> ShimInfo:
        shim_id = f"shim-{pid}-{next(self._ids)}"
        info = ShimInfo(shim_id, server_id, pid, command, session_id, uid)
        again = False
        for s in self._shims.values():
            if s.pid == pid and s.uid == uid and not s.superseded:
                s.superseded = again = True
        if not again:
            self.sessions += 1
        self._shims[shim_id] = info
        return info

    def get(self, shim_id: str) -> ShimInfo | None:
        return self._shims.get(shim_id)

    def heartbeat(self, shim_id: str, body: dict[str, Any]) -> bool:
        info = self._shims.get(shim_id)
        if info is None:
            return False
        info.last_seen = time.time()
        for k in ("tools", *COUNTERS):
            v = body.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 53:
                # cumulative counters never go down (a shim cannot make /metrics see a reset)
                setattr(info, k, v if k == "tools" else max(v, getattr(info, k)))
        t = body.get("last_offline_at")
        if isinstance(t, int | float) and not isinstance(t, bool):
            info.last_offline_at = float(t)
        return True

    def unregister(self, shim_id: str, body: dict[str, Any] | None = None) -> ShimInfo | None:
        """``body``: the shim's final counters (as in a heartbeat)."""
        if body:
            self.heartbeat(shim_id, body)
        info = self._shims.pop(shim_id, None)
        if info is not None:
            self._retire(info)
        return info

    def _retire(self, info: ShimInfo) -> None:
        if not info.superseded:
            for k in COUNTERS:
                self._gone[k] += getattr(info, k)

    def totals(self) -> dict[str, int]:
        """Counters of every shim since the daemon started (per process: its latest registration)."""
        out = dict(self._gone)
        for s in self._shims.values():
            if not s.superseded:
                for k in COUNTERS:
                    out[k] += getattr(s, k)
        return out

    def expire(self) -> list[ShimInfo]:
        """Drop shims whose process is gone or that missed heartbeats."""
        now = time.time()
        gone = [
            s
            for s in self._shims.values()
            if not psutil.pid_exists(s.pid) or now - s.last_seen > self.heartbeat_timeout
        ]
        for s in gone:
            self._shims.pop(s.shim_id, None)
        for s in gone:
            self._retire(s)
        return gone

    def serves(self, server_id: str) -> bool:
        """Whether any live shim still wraps this server."""
        return any(s.server_id == server_id for s in self._shims.values())

    def list(self) -> list[dict[str, Any]]:
        return [s.snapshot() for s in self._shims.values()]

    def __len__(self) -> int:
        return len(self._shims)
