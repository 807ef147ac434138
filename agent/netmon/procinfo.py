"""Process facts for events (exe, cmdline, ppid, username), cached per pid.

One psutil lookup per new pid; later events from the same process are a dict
hit. A pid whose process already exited gets what the kernel record carried
(pid, uid, comm) and is cached as such for a short while, so a burst from a
short-lived client does not retry /proc for every record. The cache is keyed by
(pid, comm) so a reused pid with a different command is looked up afresh.
"""

from __future__ import annotations

import pwd
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import psutil


@dataclass(frozen=True, slots=True)
class ProcFacts:
    exe: str | None
    cmdline: list[str] | None
    ppid: int | None
    username: str | None


_EXITED_TTL = 5.0


class ProcCache:
    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[int, str], tuple[ProcFacts, float]] = OrderedDict()
        self._users: dict[int, str | None] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def username(self, uid: int) -> str | None:
        try:
            return self._users[uid]
        except KeyError:
            try:
                name: str | None = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = None
            self._users[uid] = name
            return name

    def get(self, pid: int, comm: str, uid: int) -> ProcFacts:
        key = (pid, comm)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and (hit[1] == 0.0 or hit[1] > now):
                self._cache.move_to_end(key)
                self.hits += 1
                return hit[0]
        self.misses += 1
        facts, expires = self._lookup(pid, uid, now)
        with self._lock:
            self._cache[key] = (facts, expires)
            if len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return facts

    def _lookup(self, pid: int, uid: int, now: float) -> tuple[ProcFacts, float]:
        try:
            p = psutil.Process(pid)
            with p.oneshot():
                try:
                    exe = p.exe() or None
                except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
                    exe = None
                try:
                    cmdline = p.cmdline() or None
                except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
                    cmdline = None
                ppid = p.ppid()
            return ProcFacts(exe, cmdline, ppid, self.username(uid)), 0.0
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied, OSError):
            return ProcFacts(None, None, None, self.username(uid)), now + _EXITED_TTL

    def forget(self, pid: int) -> None:
        with self._lock:
            for k in [k for k in self._cache if k[0] == pid]:
                del self._cache[k]

    def __len__(self) -> int:
        return len(self._cache)
