"""The MCP tool registry: which server provides which tool, with pins and approvals.

Hot path: lookups read an immutable snapshot (frozen entries) published by
attribute assignment, so the decision engine never takes a lock and never
sees a half-applied registration. Mutations (register, approve, remove) take a
lock, write SQLite in one small transaction, then publish a new snapshot
(copy-on-write; registrations are rare, lookups are per tool call).

Persistence: SQLite in WAL mode (``synchronous=NORMAL``: a commit is a write
to the WAL, no fsync per registration) at ``<state_dir>/registry.db``. Pins,
approvals, first/last seen, the last definition and detections, and which
tools each server currently lists all survive a restart. Detections are
``DetectionResult`` models up to this file: a row holds their JSON
(``model_dump``, sorted keys) and is parsed back into models on load.

Pins are keyed by ``(server_id, tool_name)``, not by tool name alone, so the same tool name on two servers never shares (or steals) a pin.
The first registration pins (trust on first use) when auto-pinning is on; a
changed hash never moves the pin (only an approval does); removing a server
never clears its pins.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter, ValidationError

from agentsh.agent.core.events.models import DetectionResult
from agentsh.agent.core.mcp.hashing import canonical_json, diff_definitions, hashed_part, tool_hash
from agentsh.agent.core.policy.schema import SEVERITY_RANK
from agentsh.agent.core.private_files import private_sqlite

log = logging.getLogger(__name__)

Status = Literal["new", "unchanged", "changed"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS servers (
    server_id   TEXT PRIMARY KEY,
    server_type TEXT NOT NULL,
    server_addr TEXT NOT NULL,
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL,
    active      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tools (
    server_id         TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    hash              TEXT NOT NULL,
    definition        TEXT NOT NULL,
    pinned_hash       TEXT,
    pinned_definition TEXT,
    first_seen        REAL NOT NULL,
    last_seen         REAL NOT NULL,
    listed            INTEGER NOT NULL,
    approved_hash     TEXT,
    approved_by       TEXT,
    approved_at       REAL,
    detections        TEXT NOT NULL,
    max_severity      TEXT,
    PRIMARY KEY (server_id, tool_name)
);
"""
_SCHEMA_VERSION = "1"
_TOOL_COLS = (
    "server_id, tool_name, hash, definition, pinned_hash, pinned_definition, first_seen, "
    "last_seen, listed, approved_hash, approved_by, approved_at, detections, max_severity"
)
_CLIENT_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")
_RESOLVE_CACHE_MAX = 4096
_DETECTIONS: TypeAdapter[list[DetectionResult]] = TypeAdapter(list[DetectionResult])
_BRIEF_KEYS = ("pattern", "category", "severity")
"""What a decision snapshot keeps of a detection (all the decision reads)."""


def client_server_name(server_id: str) -> str:
    """How MCP clients (Claude Code) spell a server name inside ``mcp__<server>__<tool>``:
    every character outside ``[A-Za-z0-9_-]`` becomes ``_``."""
    return _CLIENT_NAME_RE.sub("_", server_id)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    server_id: str
    server_type: str
    server_addr: str
    first_seen: float
    last_seen: float
    active: bool


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One tool of one server. Treat as read-only (snapshots share it)."""

    server_id: str
    tool_name: str
    server_type: str
    server_addr: str
    hash: str
    definition: dict[str, Any]
    """The hashed fields of the last definition seen."""
    pinned_hash: str | None
    pinned_definition: dict[str, Any] | None
    first_seen: float
    last_seen: float
    listed: bool
    """In the server's last tools/list."""
    approved_hash: str | None = None
    approved_by: str | None = None
    approved_at: float | None = None
    detections: tuple[DetectionResult, ...] = ()
    """In a registry built from a decision snapshot (``from_snapshot``) only
    pattern, category and severity are known: ``matches`` is empty, ``field`` ""."""
    max_severity: str | None = None

    @property
    def approved(self) -> bool:
        """An approval holds for the exact definition approved; any change lapses it."""
        return self.approved_hash is not None and self.approved_hash == self.hash

    @property
    def changed(self) -> bool:
        return self.pinned_hash is not None and self.pinned_hash != self.hash

    def to_json(self, full: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "server_id": self.server_id,
            "tool_name": self.tool_name,
            "server_type": self.server_type,
            "server_addr": self.server_addr,
            "hash": self.hash,
            "pinned_hash": self.pinned_hash,
            "pinned": self.pinned_hash is not None,
            "changed": self.changed,
            "approved": self.approved,
            "approved_by": self.approved_by,
            "approved_at": _iso(self.approved_at),
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
            "listed": self.listed,
            "detections": [d.model_dump(mode="json") for d in self.detections],
            "max_severity": self.max_severity,
        }
        if full:
            d["definition"] = self.definition
            d["pinned_definition"] = self.pinned_definition
        return d


@dataclass(slots=True)
class ToolRegistration:
    """What one registration of one tool found."""

    entry: ToolEntry
    status: Status
    """vs the pinned hash (or vs the last definition seen when the tool is not pinned)."""
    previous_hash: str | None = None
    """The hash compared against when ``status == "changed"``."""
    changes: list[dict[str, str]] = field(default_factory=list)
    """Field-level diffs vs that definition, when changed."""
    transition: bool = False
    """The definition differs from the one last seen (or the tool is new): the moment
    to emit one-off events (changed, detections) rather than on every tools/list."""
    shadowed_by: tuple[str, ...] = ()
    """Other servers currently listing a tool with the same name."""


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"


def _max_severity(detections: Iterable[DetectionResult]) -> str | None:
    best: str | None = None
    for d in detections:
        if best is None or SEVERITY_RANK[d.severity] > SEVERITY_RANK[best]:
            best = d.severity
    return best


def _detections_json(detections: Sequence[DetectionResult]) -> str:
    """A row's ``detections`` column: the same bytes the dicts of earlier versions gave."""
    return canonical_json([d.model_dump(mode="json") for d in detections])


def _load_detections(raw: str, where: str) -> tuple[DetectionResult, ...]:
    """A row's detections as models. A row that no longer parses loses its detection
    list (logged), not the registry: its ``max_severity`` column still carries the
    detection block, and moving the database aside would drop every pin."""
    try:
        return tuple(_DETECTIONS.validate_json(raw))
    except ValidationError as e:
        log.error("MCP registry: detections of %s unreadable, kept max_severity only: %s",
                  where, e)
        return ()


def _brief_detection(x: Any) -> DetectionResult:
    """A detection of a decision snapshot (``_BRIEF_KEYS``) as a model. ValueError
    (pydantic's ValidationError) for anything else."""
    if not isinstance(x, Mapping) or set(x) - set(_BRIEF_KEYS):
        raise ValueError(f"snapshot detection must be an object with {_BRIEF_KEYS}: {x!r}")
    return DetectionResult.model_validate({**x, "matches": [], "field": ""})


class _Snapshot:
    """Immutable indexes for lock-free reads. ``resolved`` is a per-snapshot cache of
    name resolutions (a new snapshot starts with an empty one)."""

    __slots__ = (
        "by_key", "by_name", "generation", "live", "names", "norm_servers", "resolved", "servers"
    )

    def __init__(
        self,
        by_key: dict[tuple[str, str], ToolEntry],
        servers: dict[str, ServerInfo],
        generation: int = 0,
    ):
        self.generation = generation
        self.names: frozenset[str] | None = None
        self.by_key = by_key
        self.servers = servers
        live: dict[tuple[str, str], ToolEntry] = {}
        by_name: dict[str, list[ToolEntry]] = {}
        for k, e in by_key.items():
            if e.listed:
                live[k] = e
                by_name.setdefault(e.tool_name, []).append(e)
        self.live = live
        self.by_name: dict[str, tuple[ToolEntry, ...]] = {
            n: tuple(sorted(es, key=lambda e: e.server_id)) for n, es in by_name.items()
        }
        norm: dict[str, list[str]] = {}
        for sid in {e.server_id for e in live.values()}:
            norm.setdefault(sid, []).append(sid)
            cn = client_server_name(sid)
            if cn != sid:
                norm.setdefault(cn, []).append(sid)
        self.norm_servers = {k: tuple(sorted(set(v))) for k, v in norm.items()}
        self.resolved: dict[str, tuple[ToolEntry, ...]] = {}


class ToolRegistry:
    """Thread-safe registry; ``path=None`` keeps it in memory only."""

    def __init__(self, path: Path | str | None = None) -> None:
        self._lock = threading.RLock()
        self.path = Path(path) if path is not None else None
        self.recovered_from: Path | None = None
        """Where an unreadable database was moved before starting afresh."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            if self.path is None:
                raise
            # A corrupt registry must not keep the daemon down: keep the file for
            # forensics, start empty, and say so loudly (pins must be re-established).
            self.recovered_from = self.path.with_name(
                f"{self.path.name}.corrupt-{int(time.time())}"
            )
            log.error("MCP registry %s unreadable (%s); moved to %s, starting empty",
                      self.path, e, self.recovered_from)
            for suffix in ("", "-wal", "-shm"):
                src = Path(str(self.path) + suffix)
                if src.exists():
                    src.rename(str(self.recovered_from) + suffix)
            self._open()

    def _open(self) -> None:
        if self.path is not None:
            private_sqlite(self.path)  # (before SQLite creates its -wal and -shm with the file's mode)
        db = sqlite3.connect(
            str(self.path) if self.path is not None else ":memory:",
            check_same_thread=False,
            isolation_level=None,
        )
        try:
            if self.path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', ?)",
                (_SCHEMA_VERSION,),
            )
            self._db = db
            self._snap = self._load()
        except BaseException:
            db.close()
            raise

    # ------------------------------------------------------------------ persistence

    def _load(self) -> _Snapshot:
        servers: dict[str, ServerInfo] = {}
        for sid, stype, addr, fs, ls, active in self._db.execute(
            "SELECT server_id, server_type, server_addr, first_seen, last_seen, active FROM servers"
        ):
            servers[sid] = ServerInfo(sid, stype, addr, fs, ls, bool(active))
        by_key: dict[tuple[str, str], ToolEntry] = {}
        for row in self._db.execute(f"SELECT {_TOOL_COLS} FROM tools"):
            (sid, name, h, d, ph, pd, fs, ls, listed, ah, aby, aat, dets, ms) = row
            srv = servers.get(sid)
            by_key[(sid, name)] = ToolEntry(
                server_id=sid,
                tool_name=name,
                server_type=srv.server_type if srv else "",
                server_addr=srv.server_addr if srv else "",
                hash=h,
                definition=orjson.loads(d),
                pinned_hash=ph,
                pinned_definition=orjson.loads(pd) if pd is not None else None,
                first_seen=fs,
                last_seen=ls,
                listed=bool(listed),
                approved_hash=ah,
                approved_by=aby,
                approved_at=aat,
                detections=_load_detections(dets, f"{sid}:{name}"),
                max_severity=ms,
            )
        return _Snapshot(by_key, servers)

    @staticmethod
    def _row(e: ToolEntry) -> tuple[Any, ...]:
        return (
            e.server_id,
            e.tool_name,
            e.hash,
            canonical_json(e.definition),
            e.pinned_hash,
            canonical_json(e.pinned_definition) if e.pinned_definition is not None else None,
            e.first_seen,
            e.last_seen,
            int(e.listed),
            e.approved_hash,
            e.approved_by,
            e.approved_at,
            _detections_json(e.detections),
            e.max_severity,
        )

    def _write(self, servers: Sequence[ServerInfo], tools: Sequence[ToolEntry]) -> None:
        db = self._db
        db.execute("BEGIN")
        try:
            if servers:
                db.executemany(
                    "INSERT OR REPLACE INTO servers(server_id, server_type, server_addr, "
                    "first_seen, last_seen, active) VALUES(?,?,?,?,?,?)",
                    [
                        (s.server_id, s.server_type, s.server_addr, s.first_seen, s.last_seen,
                         int(s.active))
                        for s in servers
                    ],
                )
            if tools:
                db.executemany(
                    f"INSERT OR REPLACE INTO tools({_TOOL_COLS}) VALUES({','.join('?' * 14)})",
                    [self._row(e) for e in tools],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ decision snapshots

    def snapshot_entries(self) -> list[dict[str, Any]]:
        """What another process needs to run the decision pipeline on the listed
        tools without the daemon (the LLM proxy's offline path): identity, hashes,
        pin, approval and detections — not the definitions."""
        return [
            {
                "server_id": e.server_id,
                "tool_name": e.tool_name,
                "server_type": e.server_type,
                "server_addr": e.server_addr,
                "hash": e.hash,
                "pinned_hash": e.pinned_hash,
                "approved_hash": e.approved_hash,
                "detections": [
                    {"pattern": d.pattern, "category": d.category, "severity": d.severity}
                    for d in e.detections
                ],
                "max_severity": e.max_severity,
            }
            for e in self._snap.live.values()
        ]

    @classmethod
    def from_snapshot(cls, entries: Iterable[Mapping[str, Any]], generation: int = 0) -> ToolRegistry:
        """An in-memory registry holding exactly ``entries`` (``snapshot_entries``
        of another registry), for deciding offline with the same pipeline.
        ValueError for an entry or detection it cannot parse."""
        reg = cls(None)
        by_key: dict[tuple[str, str], ToolEntry] = {}
        servers: dict[str, ServerInfo] = {}
        for d in entries:
            sid, name = str(d["server_id"]), str(d["tool_name"])
            stype, addr = str(d.get("server_type") or ""), str(d.get("server_addr") or "")
            by_key[(sid, name)] = ToolEntry(
                server_id=sid,
                tool_name=name,
                server_type=stype,
                server_addr=addr,
                hash=str(d.get("hash") or ""),
                definition={},
                pinned_hash=d.get("pinned_hash"),
                pinned_definition=None,
                first_seen=0.0,
                last_seen=0.0,
                listed=True,
                approved_hash=d.get("approved_hash"),
                detections=tuple(_brief_detection(x) for x in d.get("detections") or ()),
                max_severity=d.get("max_severity"),
            )
            servers.setdefault(sid, ServerInfo(sid, stype, addr, 0.0, 0.0, True))
        reg._snap = _Snapshot(by_key, servers, generation)
        return reg

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass

    # ------------------------------------------------------------------ mutations

    def register(
        self,
        server_id: str,
        server_type: str,
        server_addr: str,
        tools: Sequence[dict[str, Any]],
        detections: Mapping[str, Sequence[DetectionResult]] | None = None,
        *,
        auto_pin: bool = True,
        complete: bool = True,
        now: float | None = None,
    ) -> list[ToolRegistration]:
        """Register one server's tools (a tools/list result).

        ``complete`` means ``tools`` is the whole list: tools of this server not in
        it stop being listed (their pins stay). Pass ``complete=False`` for one
        page of a paginated list. ``detections`` maps tool name → detections
        for the definition being registered. Raises ValueError for a tool without
        a non-empty string ``name``, TypeError for a detection that is not a model.
        """
        if not isinstance(server_id, str) or not server_id:
            raise ValueError("server_id must be a non-empty string")
        for t in tools:
            if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
                raise ValueError("every tool must be an object with a non-empty string 'name'")
        detections = detections or {}
        for name, ds in detections.items():
            if not all(isinstance(d, DetectionResult) for d in ds):
                raise TypeError(f"detections[{name!r}]: DetectionResult models expected")
        now = time.time() if now is None else now
        with self._lock:
            snap = self._snap
            by_key = dict(snap.by_key)
            servers = dict(snap.servers)
            old_srv = servers.get(server_id)
            srv = ServerInfo(
                server_id,
                server_type or (old_srv.server_type if old_srv else ""),
                server_addr or (old_srv.server_addr if old_srv else ""),
                old_srv.first_seen if old_srv else now,
                now,
                True,
            )
            servers[server_id] = srv
            changed_rows: dict[tuple[str, str], ToolEntry] = {}
            results: list[ToolRegistration] = []
            seen: set[str] = set()
            for tool in tools:
                name = tool["name"]
                seen.add(name)
                defn = hashed_part(tool)
                h = tool_hash(tool)
                dets = tuple(detections.get(name, ()))
                old = by_key.get((server_id, name))
                if old is None:
                    entry = ToolEntry(
                        server_id=server_id,
                        tool_name=name,
                        server_type=srv.server_type,
                        server_addr=srv.server_addr,
                        hash=h,
                        definition=defn,
                        pinned_hash=h if auto_pin else None,
                        pinned_definition=defn if auto_pin else None,
                        first_seen=now,
                        last_seen=now,
                        listed=True,
                        detections=dets,
                        max_severity=_max_severity(dets),
                    )
                    reg = ToolRegistration(entry, "new", transition=True)
                else:
                    transition = old.hash != h
                    pinned_hash, pinned_def = old.pinned_hash, old.pinned_definition
                    if pinned_hash is None and auto_pin:
                        # Auto-pinning was off when first seen: trust this one now.
                        pinned_hash, pinned_def = h, defn
                    entry = replace(
                        old,
                        server_type=srv.server_type,
                        server_addr=srv.server_addr,
                        hash=h,
                        definition=defn,
                        pinned_hash=pinned_hash,
                        pinned_definition=pinned_def,
                        last_seen=now,
                        listed=True,
                        detections=dets if transition or name in detections else old.detections,
                        max_severity=(
                            _max_severity(dets)
                            if transition or name in detections
                            else old.max_severity
                        ),
                    )
                    if pinned_hash is not None:
                        base_hash, base_def = pinned_hash, pinned_def
                    else:
                        base_hash, base_def = old.hash, old.definition
                    if base_hash != h:
                        reg = ToolRegistration(
                            entry,
                            "changed",
                            previous_hash=base_hash,
                            changes=diff_definitions(base_def or {}, defn),
                            transition=transition,
                        )
                    else:
                        reg = ToolRegistration(entry, "unchanged", transition=transition)
                by_key[(server_id, name)] = entry
                changed_rows[(server_id, name)] = entry
                results.append(reg)
            if complete:
                for (sid, name), e in snap.by_key.items():
                    if sid == server_id and e.listed and name not in seen:
                        ne = replace(e, listed=False)
                        by_key[(sid, name)] = ne
                        changed_rows[(sid, name)] = ne
            self._write([srv], list(changed_rows.values()))
            new_snap = _Snapshot(by_key, servers, snap.generation + 1)
            for reg in results:
                others = new_snap.by_name.get(reg.entry.tool_name, ())
                reg.shadowed_by = tuple(e.server_id for e in others if e.server_id != server_id)
            self._snap = new_snap
            return results

    def remove_server(self, server_id: str, now: float | None = None) -> int:
        """The server went away: its tools stop being listed. Pins and approvals stay,
        so a server that comes back with modified tools is caught. Returns the number
        of tools that were listed."""
        now = time.time() if now is None else now
        with self._lock:
            snap = self._snap
            srv = snap.servers.get(server_id)
            if srv is None:
                return 0
            by_key = dict(snap.by_key)
            rows = []
            for k, e in snap.by_key.items():
                if k[0] == server_id and e.listed:
                    ne = replace(e, listed=False)
                    by_key[k] = ne
                    rows.append(ne)
            servers = dict(snap.servers)
            servers[server_id] = replace(srv, active=False, last_seen=now)
            self._write([servers[server_id]], rows)
            self._snap = _Snapshot(by_key, servers, snap.generation + 1)
            return len(rows)

    def approve(
        self, server_id: str, tool_name: str, approved_by: str = "", now: float | None = None
    ) -> ToolEntry:
        """Trust the tool's current definition: re-pin to its current hash and lift a
        detection block for it (until its hash changes). KeyError if unknown."""
        return self._approve(server_id, [tool_name], approved_by, now)[0]

    def approve_all(
        self, server_id: str, approved_by: str = "", now: float | None = None
    ) -> list[ToolEntry]:
        """Approve every known tool of a server. KeyError if the server has none."""
        names = sorted(n for (s, n) in self._snap.by_key if s == server_id)
        if not names:
            raise KeyError(server_id)
        return self._approve(server_id, names, approved_by, now)

    def _approve(
        self, server_id: str, names: Sequence[str], by: str, now: float | None
    ) -> list[ToolEntry]:
        now = time.time() if now is None else now
        with self._lock:
            snap = self._snap
            by_key = dict(snap.by_key)
            out: list[ToolEntry] = []
            for name in names:
                e = by_key.get((server_id, name))
                if e is None:
                    raise KeyError(f"{server_id}:{name}")
                ne = replace(
                    e,
                    pinned_hash=e.hash,
                    pinned_definition=e.definition,
                    approved_hash=e.hash,
                    approved_by=by or None,
                    approved_at=now,
                )
                by_key[(server_id, name)] = ne
                out.append(ne)
            self._write([], out)
            self._snap = _Snapshot(by_key, snap.servers, snap.generation + 1)
            return out

    # ------------------------------------------------------------------ lookups (lock-free)

    def get(self, server_id: str, tool_name: str) -> ToolEntry | None:
        """Any known entry, listed or not."""
        return self._snap.by_key.get((server_id, tool_name))

    def live(self, server_id: str, tool_name: str) -> ToolEntry | None:
        """The entry if the server currently lists the tool."""
        return self._snap.live.get((server_id, tool_name))

    def pinned_hash(self, server_id: str, tool_name: str) -> str | None:
        e = self._snap.by_key.get((server_id, tool_name))
        return e.pinned_hash if e is not None else None

    def resolve(self, name: str) -> tuple[ToolEntry, ...]:
        """Currently listed tools a name from an LLM response may refer to.

        In order: the exact MCP tool name (every server listing it, sorted by
        server id) plus Claude Code's ``mcp__<server>__<tool>``; when neither
        matches, ``<server>__<tool>`` or ``<server>.<tool>`` if exactly one split
        matches. ``<server>`` is a server id or its client spelling (characters
        outside ``[A-Za-z0-9_-]`` as ``_``). Empty tuple: not a known MCP tool.
        """
        snap = self._snap
        hit = snap.resolved.get(name)
        if hit is not None:
            return hit
        found: dict[tuple[str, str], ToolEntry] = {}
        for e in snap.by_name.get(name, ()):
            found[(e.server_id, e.tool_name)] = e
        if name.startswith("mcp__"):
            for e in _split_matches(snap, name[5:], "__"):
                found[(e.server_id, e.tool_name)] = e
        if not found:
            alts: dict[tuple[str, str], ToolEntry] = {}
            for sep in ("__", "."):
                for e in _split_matches(snap, name, sep):
                    alts[(e.server_id, e.tool_name)] = e
            if len(alts) == 1:
                found = alts
        out = tuple(found.values())
        if len(snap.resolved) >= _RESOLVE_CACHE_MAX:
            snap.resolved.clear()
        snap.resolved[name] = out
        return out

    def call_names(self) -> tuple[int, frozenset[str]]:
        """(generation, names) for callers that pre-filter tool calls (the LLM proxy):
        every listed tool name, every listed server id and its client spelling, and
        every ``<server>.<tool>``. Computed once per snapshot."""
        snap = self._snap
        names = snap.names
        if names is None:
            out: set[str] = set()
            for e in snap.live.values():
                out.add(e.tool_name)
                out.add(e.server_id)
                out.add(client_server_name(e.server_id))
                out.add(f"{e.server_id}.{e.tool_name}")
            names = snap.names = frozenset(out)
        return snap.generation, names

    def lookup_batch(self, names: Iterable[str]) -> dict[str, tuple[ToolEntry, ...]]:
        return {n: self.resolve(n) for n in names}

    def list(self, server: str | None = None, include_unlisted: bool = True) -> list[ToolEntry]:
        es = self._snap.by_key.values()
        return sorted(
            (
                e
                for e in es
                if (server is None or e.server_id == server) and (include_unlisted or e.listed)
            ),
            key=lambda e: (e.server_id, e.tool_name),
        )

    def servers(self) -> dict[str, ServerInfo]:
        return dict(self._snap.servers)

    def server_addrs(self) -> dict[str, str]:
        """addr → server_id of active network (http/sse) servers, for the BPF layer."""
        return {
            s.server_addr: s.server_id
            for s in self._snap.servers.values()
            if s.active and s.server_addr and s.server_type in ("http", "sse")
        }

    def stats(self) -> dict[str, int]:
        snap = self._snap
        return {
            "tools": len(snap.by_key),
            "tools_listed": len(snap.live),
            "servers": len(snap.servers),
            "servers_active": sum(1 for s in snap.servers.values() if s.active),
            "changed": sum(1 for e in snap.by_key.values() if e.changed),
            "flagged": sum(1 for e in snap.by_key.values() if e.detections),
        }


def _split_matches(snap: _Snapshot, rest: str, sep: str) -> list[ToolEntry]:
    """Every ``<server><sep><tool>`` split of ``rest`` that names a listed tool."""
    out: list[ToolEntry] = []
    i = rest.find(sep)
    while i > 0:
        server, tool = rest[:i], rest[i + len(sep) :]
        if tool:
            for sid in snap.norm_servers.get(server, ()):
                e = snap.live.get((sid, tool))
                if e is not None:
                    out.append(e)
        i = rest.find(sep, i + 1)
    return out
