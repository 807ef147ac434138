"""Reading ``events.jsonl``: what ``agentshctl events tail`` and ``mcp events`` use.

The reader is tolerant by design: the file is being appended to while it is
read, so a last line without its newline is held back until it is complete
(or skipped at the end of a non-following read), lines that are not JSON
objects are skipped, and while following it notices rotation (the path now
names another inode: the rest of the old file is read first, then the new file
from its start) and truncation (the file got shorter: read again from 0).
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

_REL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_OLD_FILE_GRACE = 2.0
"""Seconds to keep reading a rotated-away file in case its writer still appends."""


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


class _Filter:
    """``types`` (names or globs like ``mcp_*``) and ``since``; fast string compare when possible."""

    def __init__(self, types: Iterable[str] | None, since: datetime | None) -> None:
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
    return d if isinstance(d, dict) else None


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


class _Follower:
    """One open file being followed; buffers a partial last line."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        st = os.fstat(f.fileno())
        self.ino = (st.st_dev, st.st_ino)
        self.buf = b""
        self.left_at: float | None = None  # when the path stopped naming this file

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
) -> Iterator[dict[str, Any]]:
    """Yield events (dicts) from ``path``, filtered by ``types`` and ``since``.

    ``include_rotated`` reads ``path.N`` … ``path.1`` first. ``follow`` keeps
    waiting for new lines (across rotation, reopen and truncation) until
    ``stop`` is set or the caller stops iterating. ``from_end`` skips what is
    already in the file (``tail -f`` without history).
    """
    keep = _Filter(types, since)
    if include_rotated and not from_end:
        for rp in rotated_files(path):
            yield from _read_whole(rp, keep)
    if not follow:
        if not from_end:
            yield from _read_whole(path, keep)
        return
    yield from _follow(path, keep, from_end, poll_interval, stop)


def _open_follower(path: str) -> _Follower | None:
    try:
        return _Follower(open(path, "rb"))
    except FileNotFoundError:
        return None


def _head(fd: int) -> bytes:
    """A file's first line (at most 512 bytes): with the inode, its identity across renames."""
    try:
        data = os.pread(fd, 512, 0)
    except OSError:
        return b""
    nl = data.find(b"\n")
    return data[: nl + 1] if nl >= 0 else data


def _follow(
    path: str,
    keep: _Filter,
    from_end: bool,
    poll_interval: float,
    stop: threading.Event | None,
) -> Iterator[dict[str, Any]]:
    seen: dict[tuple[int, int], bytes] = {}  # files already read (or history at start)

    def remember(fo: _Follower) -> None:
        seen[fo.ino] = _head(fo.f.fileno())
        while len(seen) > 10000:
            del seen[next(iter(seen))]

    for rp in rotated_files(path):  # history is not replayed
        fo = _open_follower(rp)
        if fo is not None:
            remember(fo)
            fo.f.close()
    cur = _open_follower(path)
    if cur is not None:
        remember(cur)
        if from_end:
            cur.f.seek(0, os.SEEK_END)
    old: list[_Follower] = []  # rotated-away files still read for a grace period
    try:
        while stop is None or not stop.is_set():
            got = False
            for fo in old:
                for raw in fo.read_lines():
                    got = True
                    d = _parse(raw)
                    if d is not None and keep(d):
                        yield d
            if cur is not None:
                cur.truncated()
                for raw in cur.read_lines():
                    got = True
                    d = _parse(raw)
                    if d is not None and keep(d):
                        yield d
            # did the path move on to another file?
            try:
                st = os.stat(path)
                ino: tuple[int, int] | None = (st.st_dev, st.st_ino)
            except FileNotFoundError:
                ino = None
            now = time.monotonic()
            if ino is not None and (cur is None or ino != cur.ino):
                if cur is not None:
                    cur.left_at = now
                    old.append(cur)
                for fo in old:
                    remember(fo)  # their first lines may have arrived since
                known = dict(seen)
                cur = _open_follower(path)
                skip = {cur.ino} if cur is not None else set()
                old.extend(_unseen_rotations(path, known, skip, now))
                for fo in old:
                    remember(fo)
                if cur is not None:
                    remember(cur)
                continue  # read the new file at once
            for fo in [fo for fo in old if now - (fo.left_at or now) > _OLD_FILE_GRACE]:
                old.remove(fo)
                fo.f.close()
            if not got:
                if stop is not None:
                    if stop.wait(poll_interval):
                        break
                else:
                    time.sleep(poll_interval)
    finally:
        for fo in [*old, *([cur] if cur else [])]:
            with contextlib.suppress(OSError):
                fo.f.close()


def _unseen_rotations(
    path: str, known: dict[tuple[int, int], bytes], skip: set[tuple[int, int]], now: float
) -> list[_Follower]:
    """Files rotated away between two polls: ``path.1`` … up to a file already read.

    The writer's size rotation can rename several files between two polls, and
    an external mover can take the file we read while the next one is already
    rotated. Walk ``path.1``, ``path.2`` … until a known file (same inode and
    first line); since the chain can shift while we walk it, walk again until
    nothing new turns up, then read the new ones oldest (least recently
    written) first.
    """
    found: dict[tuple[int, int], tuple[int, _Follower]] = {}
    for _ in range(5):
        new = 0
        i = 1
        while True:
            fo = _open_follower(f"{path}.{i}")
            if fo is None:
                break
            if known.get(fo.ino) == _head(fo.f.fileno()):
                fo.f.close()
                break
            i += 1
            if fo.ino in skip or fo.ino in found:
                fo.f.close()
                continue
            fo.left_at = now
            found[fo.ino] = (os.fstat(fo.f.fileno()).st_mtime_ns, fo)
            new += 1
        if not new:
            break
    return [fo for _m, fo in sorted(found.values(), key=lambda t: t[0])]


def tail(
    path: str, n: int = 20, types: Iterable[str] | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """The last ``n`` matching events (current file, then rotated ones if needed)."""
    out: deque[dict[str, Any]] = deque(maxlen=n)
    for d in iter_events(path, types=types, since=since, include_rotated=True):
        out.append(d)
    return list(out)


# ------------------------------------------------------------------ human form

_ENVELOPE = {"id", "timestamp", "type", "source", "host", "session_id"}
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
    "hook_evaluation": ("hook_event", "tool_name", "decision", "reason", "flow_type", "risk_level"),
    "flow_summary": ("duration_seconds", "total_origins", "total_flow_edges", "tools_used"),
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
