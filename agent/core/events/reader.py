"""Reading ``events.jsonl``: what ``agentshctl events tail`` and ``mcp events`` use.

The reader is tolerant by design: the file is being appended to while it is
read, so a last line without its newline is held back until it is complete
(or skipped at the end of a non-following read), and lines that are not JSON
objects are skipped. While following it tracks the files by inode, not by
name: the path and its rotated siblings ``path.N`` are listed whenever the
path names another file, every known file is read to its end before newer
ones, and new files are read from their start, oldest first. So a follower
neither misses nor repeats a line across any number of size rotations between
two polls, as long as the rotated files still exist (``rotate_backups``). An
external move (logrotate + reopen) is followed too: the moved file stays open
until the new one has data. Only a file that is created *and* moved to another
name between two polls cannot be seen. Truncation in place (the file got
shorter) restarts at 0.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

import orjson

from agentsh.agent.core.vocab import RISK_LEVELS as RISK_LEVELS  # agentshctl events --risk-level
from agentsh.agent.core.vocab import RISK_RANK as _RISK_RANK

_REL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_MAX_OPEN = 64
"""Files moved away (no newer file has data yet) kept open at most; older ones are closed."""
_FORGET_AFTER_LISTINGS = 3
"""A closed file is forgotten once this many directory listings in a row lack it."""


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """``"10m"``, ``"2h"``, ``"1d"``, ``"30s"``, ``"1w"`` ago, or an RFC 3339 time → aware UTC."""
    m = _REL.match(value)
    if m:
        base = now or datetime.now(UTC)
        return base - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"invalid time {value!r}: use a duration like 10m, 2h, 1d or an RFC 3339 "
            "time like 2026-11-22T10:00:00Z"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _ts_key(ts: Any) -> datetime | None:
    if not isinstance(ts, str) or not ts:
        return None
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _risk_at_least(d: dict[str, Any], rank: int) -> bool:
    """The event's flow risk (``risk_level``; for ``flow_summary`` any level
    counted in ``risk_level_distribution``) is at least ``rank``."""
    r = d.get("risk_level")
    if isinstance(r, str) and _RISK_RANK.get(r, -1) >= rank:
        return True
    dist = d.get("risk_level_distribution")
    if isinstance(dist, dict):
        return any(_RISK_RANK.get(k, -1) >= rank and v for k, v in dist.items())
    return False


def _has_flow_type(d: dict[str, Any], flow_type: str) -> bool:
    if d.get("flow_type") == flow_type:
        return True
    dist = d.get("flow_type_distribution")
    return isinstance(dist, dict) and bool(dist.get(flow_type))


def _session_match(d: dict[str, Any], session_id: str) -> bool:
    if d.get("session_id") == session_id:
        return True
    linked = d.get("linked_mcp_sessions")  # a flow_summary names the MCP sessions it absorbed
    return isinstance(linked, list) and session_id in linked


class _Filter:
    """``types`` (names or globs like ``mcp_*``), ``since``, and the flow
    filters (``session_id``, ``min_risk``, ``flow_type``); fast string compare
    when possible."""

    def __init__(
        self,
        types: Iterable[str] | None,
        since: datetime | None,
        session_id: str | None = None,
        min_risk: str | None = None,
        flow_type: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.min_risk = _RISK_RANK[min_risk] if min_risk is not None else None
        self.flow_type = flow_type.replace("->", "→") if flow_type else None
        self.exact: frozenset[str] | None = None
        self.globs: tuple[str, ...] = ()
        if types is not None:
            names = [t for t in types if t]
            self.exact = frozenset(t for t in names if not any(c in t for c in "*?["))
            self.globs = tuple(t for t in names if any(c in t for c in "*?["))
        self.since = since
        self.since_str = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if since else None

    def __call__(self, d: dict[str, Any]) -> bool:
        if self.exact is not None:
            t = d.get("type")
            if t not in self.exact and not any(fnmatch.fnmatchcase(str(t), g) for g in self.globs):
                return False
        if self.session_id is not None and not _session_match(d, self.session_id):
            return False
        if self.min_risk is not None and not _risk_at_least(d, self.min_risk):
            return False
        if self.flow_type is not None and not _has_flow_type(d, self.flow_type):
            return False
        if self.since is not None:
            ts = d.get("timestamp")
            if isinstance(ts, str) and len(ts) == 27 and ts[-1] == "Z":  # our own format
                return ts >= self.since_str  # type: ignore[operator]
            k = _ts_key(ts)
            return k is not None and k >= self.since
        return True


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return native_of(d) if isinstance(d, dict) else None


def native_of(d: dict[str, Any]) -> dict[str, Any]:
    """The native event of a line in either format: an OCSF line (``events.format:
    ocsf``) carries it under ``unmapped`` (docs/events.md, "OCSF")."""
    if "type" not in d and "class_uid" in d:
        u = d.get("unmapped")
        if isinstance(u, dict) and "type" in u:
            return u
    return d


def rotated_files(path: str) -> list[str]:
    """``path.N`` … ``path.1`` that exist, oldest first (the writer's numbering)."""
    out = []
    i = 1
    while os.path.exists(f"{path}.{i}"):
        out.append(f"{path}.{i}")
        i += 1
    return out[::-1]


def _read_whole(path: str, keep: _Filter) -> Iterator[dict[str, Any]]:
    try:
        f = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return
    with f:
        for raw in f:
            d = _parse(raw)  # a partial last line fails to parse and is skipped
            if d is not None and keep(d):
                yield d


def iter_events(
    path: str,
    types: Iterable[str] | None = None,
    since: datetime | None = None,
    follow: bool = False,
    include_rotated: bool = False,
    *,
    from_end: bool = False,
    poll_interval: float = 0.25,
    stop: threading.Event | None = None,
    session_id: str | None = None,
    min_risk: str | None = None,
    flow_type: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield events (dicts) from ``path``, filtered by ``types`` and ``since``
    (and the flow filters: ``session_id``; ``min_risk``, a risk level, keeps
    events whose flow risk is at least that; ``flow_type``, e.g.
    ``internal→external`` or ``internal->external``).

    ``include_rotated`` reads ``path.N`` … ``path.1`` first. ``follow`` keeps
    waiting for new lines (across rotation, reopen and truncation) until
    ``stop`` is set or the caller stops iterating. ``from_end`` skips what is
    already in the file (``tail -f`` without history).
    """
    keep = _Filter(types, since, session_id, min_risk, flow_type)
    if follow:
        history = include_rotated and not from_end
        yield from _follow(path, keep, from_end, history, poll_interval, stop)
        return
    if include_rotated and not from_end:
        for rp in rotated_files(path):
            yield from _read_whole(rp, keep)
    if not from_end:
        yield from _read_whole(path, keep)


class _Follower:
    """One open file being followed (by inode); buffers a partial last line."""

    def __init__(self, f: BinaryIO, ino: int, rank: int) -> None:
        self.f = f
        self.ino = ino
        self.rank = rank  # 0: the path itself, N: path.N, -1: no longer in the directory
        self.buf = b""

    def read_lines(self) -> list[bytes]:
        data = self.f.read()
        if not data:
            return []
        data = self.buf + data
        cut = data.rfind(b"\n") + 1
        self.buf = data[cut:]
        return data[:cut].splitlines()

    def truncated(self) -> bool:
        pos = self.f.tell()
        size = os.fstat(self.f.fileno()).st_size
        if size < pos:
            self.f.seek(0)
            self.buf = b""
            return True
        return False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.close()


class _LogFiles:
    """The files of one log, followed by inode in rotation order (oldest first).

    The writer's size rotation renames ``path`` → ``path.1`` → ``path.2`` … and
    can do so several times between two polls. Names are therefore useless as
    identities; one directory listing is (a single ``getdents`` runs under the
    directory lock, so it never sees a rename half-done) and orders the files
    at that instant: the highest ``N`` is the oldest, ``path`` the newest. Every
    file that was not in the previous listing is newer than every file we
    already know, so new files go after the known ones. A known file is read to
    its end before any newer one; it is closed once a newer file has data (the
    writer writes one file at a time, so it will not grow again) and then
    remembered by inode and rank until it leaves the directory. An inode seen
    again at a *newer* rank than remembered was freed and reused: a new file.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.dir = os.path.dirname(path) or "."
        self.base = os.path.basename(path)
        self.open: list[_Follower] = []
        self.done: dict[int, list[int]] = {}  # closed files: ino -> [rank, listings absent]
        self.use_stat = False  # d_ino differs from st_ino on this filesystem
        self._mismatch: tuple[str, int, int] | None = None
        self._listed = False

    def _listing(self) -> list[tuple[int, int, str]]:
        """``(rank, inode, path)`` of ``path`` and ``path.N``, oldest first."""
        out = []
        prefix = self.base + "."
        try:
            with os.scandir(self.dir) as it:
                for e in it:
                    n = e.name
                    if n == self.base:
                        rank = 0
                    elif n.startswith(prefix) and n[len(prefix) :].isdigit():
                        rank = int(n[len(prefix) :])
                        if rank == 0:
                            continue
                    else:
                        continue
                    try:
                        ino = e.stat().st_ino if self.use_stat else e.inode()
                    except FileNotFoundError:
                        continue
                    out.append((rank, ino, e.path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out.sort(key=lambda t: (t[0] == 0, -t[0]))
        return out

    def sync(self, *, history: bool = False, from_end: bool = False) -> None:
        """List the directory; open every file not seen before, oldest first.

        ``history`` (first call only): also read the rotated files from their
        start (otherwise they count as already read); ``from_end``: start
        ``path`` itself at its end.
        """
        first, self._listed = not self._listed, True
        for _attempt in range(50):
            entries = self._listing()
            if self._add_new(entries, first, history, from_end):
                break
        present = {ino for _r, ino, _p in entries}
        for fo in self.open:
            if fo.ino not in present:
                fo.rank = -1
        for ino in [i for i in self.done if i not in present]:
            self.done[ino][1] += 1
            if self.done[ino][1] >= _FORGET_AFTER_LISTINGS:
                del self.done[ino]

    def _add_new(
        self, entries: list[tuple[int, int, str]], first: bool, history: bool, from_end: bool
    ) -> bool:
        """False when a file moved between the listing and its open(): list again."""
        known = {fo.ino: fo for fo in self.open}
        for rank, ino, name in entries:
            fo = known.get(ino)
            if fo is not None:
                fo.rank = rank
                continue
            d = self.done.get(ino)
            if d is not None and rank >= d[0]:
                d[0], d[1] = rank, 0
                continue
            self.done.pop(ino, None)
            if first and rank > 0 and not history:
                self.done[ino] = [rank, 0]  # history is not replayed
                continue
            try:
                f = open(name, "rb")  # noqa: SIM115
            except FileNotFoundError:
                return False
            real = os.fstat(f.fileno()).st_ino
            if real != ino:
                f.close()
                if self._mismatch == (name, ino, real):  # not a race: d_ino is not st_ino here
                    self.use_stat = True
                self._mismatch = (name, ino, real)
                return False
            if first and rank == 0 and from_end:
                f.seek(0, os.SEEK_END)
            fo = _Follower(f, ino, rank)
            self.open.append(fo)
            known[ino] = fo
        return True

    def current_changed(self) -> bool:
        """Does ``path`` name another file than the newest one we follow?"""
        try:
            ino = os.stat(self.path).st_ino
        except OSError:
            return True
        return not self.open or self.open[-1].ino != ino

    def read(self) -> list[bytes]:
        """New complete lines of every followed file, oldest file first."""
        files = self.open
        if not files:
            return []
        last = files[-1]
        if last.rank == 0:
            last.truncated()
        chunks = [fo.read_lines() for fo in files]
        # A file older than one that has data is complete. Read it once more:
        # what it got while we read the newer ones was written before them.
        finished = []
        newer_has_data = False
        for i in range(len(files) - 1, -1, -1):
            if newer_has_data:
                finished.append(i)
            newer_has_data = newer_has_data or files[i].f.tell() > 0
        for i in finished:
            chunks[i] += files[i].read_lines()
        out = [line for chunk in chunks for line in chunk]
        close = set(finished)
        excess = len(files) - len(close) - _MAX_OPEN  # moved away, no newer data: stop early
        for i in range(len(files) - 1):
            if excess <= 0:
                break
            if i not in close:
                close.add(i)
                excess -= 1
        if close:
            for i in close:
                fo = files[i]
                if fo.rank >= 0:
                    self.done[fo.ino] = [fo.rank, 0]
                fo.close()
            self.open = [fo for i, fo in enumerate(files) if i not in close]
        return out

    def close(self) -> None:
        for fo in self.open:
            fo.close()
        self.open = []


def _follow(
    path: str,
    keep: _Filter,
    from_end: bool,
    history: bool,
    poll_interval: float,
    stop: threading.Event | None,
) -> Iterator[dict[str, Any]]:
    files = _LogFiles(path)
    files.sync(history=history, from_end=from_end)
    try:
        while stop is None or not stop.is_set():
            if files.current_changed():
                files.sync()
            lines = files.read()
            for raw in lines:
                d = _parse(raw)
                if d is not None and keep(d):
                    yield d
            if not lines:
                if stop is not None:
                    if stop.wait(poll_interval):
                        break
                else:
                    time.sleep(poll_interval)
    finally:
        files.close()


def tail(
    path: str, n: int = 20, types: Iterable[str] | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """The last ``n`` matching events (current file, then rotated ones if needed)."""
    out: deque[dict[str, Any]] = deque(maxlen=n)
    for d in iter_events(path, types=types, since=since, include_rotated=True):
        out.append(d)
    return list(out)


# ------------------------------------------------------------------ human form

_ENVELOPE = {"id", "timestamp", "type", "source", "host", "severity", "session_id"}
_PROCESS = ("pid", "ppid", "uid", "username", "comm", "exe", "cmdline")
_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "daemon_started": ("version", "config_dir", "socket", "events_path"),
    "daemon_stopping": ("reason", "uptime_seconds"),
    "component_exited": ("component", "exit_code", "signal", "restarts", "will_restart"),
    "policy_loaded": ("hash", "trigger", "files"),
    "policy_rejected": ("trigger", "kept_hash", "errors"),
    "events_dropped": ("dropped_total", "dropped_since_last"),
    "events_rotated": ("reason", "path"),
    "mcp_tool_seen": ("server_id", "tool_name", "status", "max_severity", "blocked", "tool_hash"),
    "mcp_tool_changed": ("server_id", "tool_name", "action", "previous_hash", "new_hash"),
    "mcp_detection": ("server_id", "tool_name", "action", "detection"),
    "mcp_tool_shadowed": ("tool_name", "server_id", "other_server_ids"),
    "mcp_tool_called": ("server_id", "tool_name", "action", "reason", "input"),
    "mcp_tool_call_intercepted": (
        "dialect",
        "server_id",
        "tool_name",
        "action",
        "reason",
        "tool_call_id",
    ),
    "mcp_network_connection": ("server_id", "remote_addr", "action", "phase", "protocol"),
    "network_connect": ("remote_addr", "family", "result"),
    "bpf_lost_events": ("lost_total", "lost_since_last"),
    "mcp_server_discovered": ("server_id", "server_type", "server_addr", "tools", "error"),
    "shim_registered": ("server_id", "command"),
    "shim_exited": ("server_id", "exit_code", "calls", "blocks"),
    "protocol_error": ("layer", "server_id", "count", "detail"),
    "llm_request": (
        "provider",
        "model",
        "status",
        "streaming",
        "latency_ms",
        "tool_calls",
        "tool_calls_blocked",
        "error",
    ),
    "hook_evaluation": ("hook_event", "tool_name", "decision", "risk_level", "flow_type", "reason"),
    "flow_summary": (
        "reason",
        "coverage",
        "duration_seconds",
        "total_origins",
        "total_flow_edges",
        "risk_level_distribution",
        "tools_used",
    ),
}
_MAX_VALUE = 80


def _short(v: Any) -> str:
    if isinstance(v, str):
        s = v if v and not any(c.isspace() for c in v) else orjson.dumps(v).decode()
    elif isinstance(v, (bool, int, float)) or v is None:
        s = orjson.dumps(v).decode()
    elif isinstance(v, dict) and "pattern" in v and "severity" in v:  # a detection
        s = f"{v.get('severity')}:{v.get('category')}:{v.get('pattern')}"
    else:
        s = orjson.dumps(v).decode()
    return s if len(s) <= _MAX_VALUE else s[: _MAX_VALUE - 1] + "…"


def format_event_line(d: dict[str, Any]) -> str:
    """One readable line: time, type, source, then the type's key fields as k=v."""
    ts = str(d.get("timestamp", ""))
    if len(ts) == 27 and ts.endswith("Z"):
        ts = ts[:23] + "Z"  # milliseconds are enough for people
    etype = str(d.get("type", "?"))
    parts = [ts, f"{etype:<26}", f"{d.get('source', '?'):<6}"]
    keys = _KEY_FIELDS.get(etype)
    if keys is None:
        keys = tuple(k for k in d if k not in _ENVELOPE and k not in _PROCESS)
    for k in keys:
        v = d.get(k)
        if v is None or v == [] or v == {}:
            continue
        parts.append(f"{k}={_short(v)}")
    if d.get("session_id"):
        parts.append(f"session={_short(d['session_id'])}")
    for k in ("pid", "comm"):
        if d.get(k) is not None:
            parts.append(f"{k}={_short(d[k])}")
    return " ".join(parts)
