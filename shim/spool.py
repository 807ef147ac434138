"""Local event spool for when the daemon is unreachable (no event lost).

Format (docs/shim.md): ``<state_dir>/spool/shim-<pid>-<seq>.jsonl``, one
event JSON object per line, exactly what ``POST /v1/events`` would have
carried. A segment is written as ``….jsonl.tmp`` (each line flushed as it is
written) and atomically renamed to ``….jsonl`` when it is complete: when the
daemon is reachable again, when the shim exits, or when the segment is older
than ``max_age`` / larger than ``max_bytes``. The daemon ingests (and then
deletes) only ``*.jsonl``, so it never reads a half-written line. A ``.tmp``
left by a shim that was SIGKILLed is complete up to its last newline; the
daemon may ingest ``shim-<pid>-*.jsonl.tmp`` whose pid is no longer alive.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Spool", "spool_dir"]


def _writable_dir(p: Path) -> bool:
    try:
        p.mkdir(parents=True, exist_ok=True, mode=0o750)
    except OSError:
        return False
    return os.access(p, os.W_OK | os.X_OK)


def spool_dir(state_dir: str | os.PathLike[str]) -> Path:
    """``<state_dir>/spool``, or, for a user outside the daemon's group, a
    private per-user directory the daemon ingests once a shim of that user has
    registered it (``$XDG_STATE_HOME/agentsh/spool``, default
    ``~/.local/state/agentsh/spool``). Not /tmp: under systemd the daemon has
    a private /tmp and would never see it."""
    primary = Path(state_dir) / "spool"
    if _writable_dir(primary):
        return primary
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local/state")
    cand = Path(xdg) / "agentsh" / "spool"
    if _writable_dir(cand):
        with contextlib.suppress(OSError):
            os.chmod(cand, 0o700)  # the daemon ingests only a private directory
        return cand
    return primary  # writes will fail and be counted as dropped


class Spool:
    """Append-only JSONL segments; thread-safe (events come from relay threads and the loop)."""

    def __init__(
        self, directory: Path, *, max_age: float = 30.0, max_bytes: int = 8 * 1024 * 1024
    ) -> None:
        self.dir = directory
        self.max_age = max_age
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._fh: Any = None
        self._path: Path | None = None
        self._opened = 0.0
        self._size = 0
        self._seq = 0
        self.written = 0
        self.dropped = 0
        self.segments: list[Path] = []

    def write(self, events: list[dict[str, Any]]) -> int:
        """Append events; returns how many were written (the rest counted as dropped)."""
        n = 0
        with self._lock:
            for ev in events:
                try:
                    if self._fh is None:
                        self._open()
                    line = orjson.dumps(ev) + b"\n"
                    self._fh.write(line)
                    self._fh.flush()
                    self._size += len(line)
                    n += 1
                except (OSError, TypeError, ValueError):
                    self.dropped += 1
            self.written += n
            if self._fh is not None and (
                self._size >= self.max_bytes or time.monotonic() - self._opened >= self.max_age
            ):
                self._close()
        return n

    def seal(self) -> None:
        """Complete the current segment so the daemon can ingest it."""
        with self._lock:
            self._close()

    def maybe_seal(self) -> None:
        with self._lock:
            if self._fh is not None and time.monotonic() - self._opened >= self.max_age:
                self._close()

    def _open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o750)
        self._seq += 1
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self._path = self.dir / f"shim-{os.getpid()}-{stamp}-{self._seq:04d}.jsonl"
        tmp = self._path.with_name(self._path.name + ".tmp")
        self._fh = open(tmp, "ab", buffering=0)  # noqa: SIM115 - kept open across writes
        os.chmod(tmp, 0o640)
        self._opened = time.monotonic()
        self._size = 0

    def _close(self) -> None:
        if self._fh is None or self._path is None:
            return
        tmp = self._path.with_name(self._path.name + ".tmp")
        try:
            os.fsync(self._fh.fileno())
        except OSError:
            pass
        self._fh.close()
        self._fh = None
        try:
            if self._size:
                os.replace(tmp, self._path)
                self.segments.append(self._path)
            else:
                tmp.unlink()
        except OSError:
            pass
        self._path = None
