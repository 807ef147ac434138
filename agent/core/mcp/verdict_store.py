"""The detector's verdicts on tool definitions, kept across daemon restarts.

Why: inspecting a definition for the first time costs about 1.4 ms of CPU per tool
(docs/mcp.md, "Speed"). The daemon keeps every verdict in memory, keyed by the full
definition and its context (peers, server, the names listed beside it), so a server's next
tools/list costs a lookup. This store keeps the same verdicts in ``<state_dir>/verdicts.db``,
so a restart (an upgrade, a crash, a reboot) does not pay again for every server's tools.

A verdict is valid only for the detector that made it. Every row carries the fingerprint of
the detector's code, its learned weights and its configuration (:func:`detector_fingerprint`).
Rows of another fingerprint are deleted when the store opens and are never read. A row that
does not parse is deleted and the definition inspected again: the store is never trusted
over the detector. A store that cannot be opened or written is dropped with one log line;
the memory cache and the detector go on as before (nothing is enforced from this file).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from agentsh.agent.core.events.models import DetectionResult
from agentsh.agent.core.policy.schema import DetectionConfig
from agentsh.agent.core.private_files import private_sqlite

log = logging.getLogger(__name__)

VERDICTS_FILE = "verdicts.db"
_TRIM_EVERY = 256  # puts between two trims of the oldest rows


def detector_fingerprint(cfg: DetectionConfig) -> str:
    """sha256 over the source of every module of ``agentsh.agent.core`` (the detector and what
    it imports: the sensitive-path and event models among them), the learned weights and
    the detection configuration. Any upgrade or configuration change gives a new value."""
    core = Path(__file__).resolve().parent.parent  # agentsh/agent/core
    h = hashlib.sha256()
    for p in sorted(core.rglob("*")):
        if p.suffix in (".py", ".json") and p.is_file():
            h.update(str(p.relative_to(core)).encode() + b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    h.update(json.dumps(cfg.model_dump(mode="json"), sort_keys=True).encode())
    return h.hexdigest()


class VerdictStore:
    """``key`` (the in-memory cache's key, as bytes) → the detector's results. Thread-safe;
    every failure disables the store instead of raising."""

    def __init__(self, path: Path, fingerprint: str, max_rows: int) -> None:
        self.path = path
        self._fp = fingerprint
        self._max = max_rows
        self._lock = threading.Lock()
        self._puts = 0
        self.loaded_from_disk = 0
        """Lookups answered from the file (for tests and the benchmark)."""
        self._db: sqlite3.Connection | None = None
        try:
            private_sqlite(path)  # (before SQLite creates its -wal and -shm with the file's mode)
            db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # a lost last row only costs an inspection
            db.execute("CREATE TABLE IF NOT EXISTS verdicts (key BLOB PRIMARY KEY, fingerprint TEXT NOT NULL, "
                       "results TEXT NOT NULL)")
            stale = db.execute("DELETE FROM verdicts WHERE fingerprint != ?", (fingerprint,)).rowcount
            if stale:
                log.info("verdict store: %d verdicts of another detector version or configuration dropped", stale)
            self._db = db
        except (sqlite3.Error, OSError) as e:
            self._fail("cannot open", e)

    def _fail(self, what: str, e: BaseException) -> None:
        if self.path.parent.is_dir():
            log.warning("verdict store %s: %s %s; verdicts are kept in memory only", self.path, what, e)
        db, self._db = self._db, None
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass

    @property
    def active(self) -> bool:
        return self._db is not None

    def get(self, key: bytes) -> list[DetectionResult] | None:
        with self._lock:
            if self._db is None:
                return None
            try:
                row = self._db.execute("SELECT results FROM verdicts WHERE key = ? AND fingerprint = ?",
                                       (key, self._fp)).fetchone()
            except sqlite3.Error as e:
                self._fail("cannot read", e)
                return None
            if row is None:
                return None
            try:
                raw = json.loads(row[0])
                if not isinstance(raw, list):
                    raise ValueError("not a list")
                out = [DetectionResult.model_validate(x) for x in raw]
            except ValueError as e:  # (pydantic's ValidationError is a ValueError)
                log.warning("verdict store: a stored verdict does not parse (%s); the definition is inspected again", e)
                try:
                    self._db.execute("DELETE FROM verdicts WHERE key = ?", (key,))
                except sqlite3.Error as e2:
                    self._fail("cannot write", e2)
                return None
            self.loaded_from_disk += 1
            return out

    def put(self, key: bytes, results: Sequence[DetectionResult]) -> None:
        doc = json.dumps([r.model_dump(mode="json") for r in results], separators=(",", ":"))
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.execute("INSERT OR REPLACE INTO verdicts (key, fingerprint, results) VALUES (?, ?, ?)",
                                 (key, self._fp, doc))
                self._puts += 1
                if self._puts % _TRIM_EVERY == 0:
                    self._trim()
            except sqlite3.Error as e:
                self._fail("cannot write", e)

    def _trim(self) -> None:
        assert self._db is not None
        n = self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
        if n > self._max:
            self._db.execute("DELETE FROM verdicts WHERE rowid IN (SELECT rowid FROM verdicts ORDER BY rowid LIMIT ?)",
                             (n - self._max,))

    def rows(self) -> int:
        with self._lock:
            if self._db is None:
                return 0
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                try:
                    self._trim()
                    self._db.close()
                except sqlite3.Error:
                    pass
                self._db = None
