"""The event writer and reader, against real files, FIFOs, /dev/full and a real SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import typing
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.reader import (
    format_event_line,
    iter_events,
    parse_since,
    tail,
)
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.policy.schema import EventsConfig

TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def call(i: int, tag: str = "p") -> m.MCPToolCalled:
    return m.MCPToolCalled(
        id=f"{tag}-{i}",
        server_id="fs",
        tool_name="read_file",
        jsonrpc_id=i,
        input={"path": f"/tmp/f{i}", "limit": 100},
        session_id="s1",
    )


def read_all_lines(directory: Path) -> list[bytes]:
    """Every line of every file in ``directory``; asserts each file ends with a newline."""
    out: list[bytes] = []
    for p in sorted(directory.iterdir()):
        data = p.read_bytes()
        if data:
            assert data.endswith(b"\n"), f"{p.name} ends with a partial line"
        out.extend(data.splitlines())
    return out


def parse_lines(lines: list[bytes]) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for raw in lines]  # raises on any split/corrupt line


def wait_for(cond: typing.Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def cfg(path: Path, **kw: Any) -> EventsConfig:
    return EventsConfig(path=str(path), **kw)


# ------------------------------------------------------------------ basics


async def test_lines_carry_envelope_mode_0640_and_rfc3339_micro_timestamps(tmp_path: Path) -> None:
    old_umask = os.umask(0o077)  # the writer must set the mode itself, not rely on umask
    try:
        path = tmp_path / "log" / "events.jsonl"
        w = EventWriter(cfg(path))
        await w.start()
        seen = m.MCPToolSeen(server_id="s", tool_name="t", tool_hash="h", status="new")
        called = m.MCPToolCalled(server_id="fs", tool_name="x", input={"a": None})
        given = m.PolicyLoaded(hash="abc", files=[], timestamp="2026-01-02T03:04:05.000006Z")
        assert w.emit(seen) and w.emit(called) and w.emit(given)
        assert seen.id and called.id and seen.id != called.id  # filled by emit()
        assert await w.stop()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    lines = parse_lines(path.read_bytes().splitlines())
    assert [d["type"] for d in lines] == ["mcp_tool_seen", "mcp_tool_called", "policy_loaded"]
    for d in lines:
        assert TS_RE.match(d["timestamp"]), d["timestamp"]
        assert d["host"] == socket.gethostname()
        assert list(d)[:5] == ["id", "timestamp", "type", "source", "host"]
    assert lines[0]["id"] == seen.id
    assert "session_id" not in lines[0] and "description" not in lines[0]  # None omitted
    assert lines[0]["detections"] == []  # empty list of the schema kept
    assert lines[1]["input"] == {"a": None}  # payload kept verbatim
    assert lines[2]["timestamp"] == "2026-01-02T03:04:05.000006Z"  # producer's time kept
    assert lines[2]["files"] == []


def _sample_value(ann: Any) -> Any:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Annotated:  # e.g. the identifier types of agent/core/vocab.py
        return _sample_value(args[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return _sample_value(next(a for a in args if a is not type(None)))
    if origin is list:
        return [_sample_value(args[0])]
    if origin is dict:
        return {"k": _sample_value(args[1])}
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann(
            **{
                k: _sample_value(f.annotation)
                for k, f in ann.model_fields.items()
                if f.is_required()
            }
        )
    return {str: "v", int: 3, float: 1.5, bool: True}.get(ann, {"any": [1, None]})


def test_every_event_type_serializes_like_pydantic_exclude_none(tmp_path: Path) -> None:
    """The writer's fast path (``__dict__`` + orjson) must equal pydantic's own dump."""
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path))
    events = []
    for cls in m.EVENT_TYPES:
        data = {k: _sample_value(f.annotation) for k, f in cls.model_fields.items() if k != "type"}
        data.update(id="", timestamp="", host="", source="proxy", session_id=None, pid=None,
                    sender_timestamp="2026-01-02T03:04:05Z")  # intake accepts RFC 3339 only
        if "sender_timestamp" in cls.model_fields:  # validated as RFC 3339: not a sample string
            data["sender_timestamp"] = "2026-01-02T03:04:05.000006Z"
        ev = cls(**data)
        events.append(ev)
        assert w.emit(ev)
    w.start_thread()
    assert w.stop_sync()
    lines = parse_lines(path.read_bytes().splitlines())
    assert len(lines) == len(m.EVENT_TYPES)
    for ev, got in zip(events, lines, strict=True):
        want = ev.model_dump(mode="json", exclude_none=True)
        want["timestamp"] = got["timestamp"]
        want["host"] = got["host"]
        assert got == want
        assert type(m.parse_event(got)) is type(ev)  # and it validates back


async def test_concurrent_thread_and_task_producers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, batch_max=64))
    await w.start()
    n = 2000
    accepted: list[bool] = []

    def producer(t: int) -> None:
        accepted.extend(w.emit(call(i, f"t{t}")) for i in range(n))

    async def task(t: int) -> None:
        for i in range(n):
            accepted.append(w.emit(call(i, f"a{t}")))
            if i % 50 == 0:
                await asyncio.sleep(0)

    threads = [threading.Thread(target=producer, args=(t,), daemon=True) for t in range(4)]
    for th in threads:
        th.start()
    await asyncio.gather(*(task(t) for t in range(2)))
    await asyncio.to_thread(lambda: [th.join() for th in threads])
    assert await w.stop()
    assert all(accepted) and len(accepted) == 6 * n
    ids = Counter(d["id"] for d in parse_lines(path.read_bytes().splitlines()))
    assert len(ids) == 6 * n and set(ids.values()) == {1}
    st = w.stats()
    assert st["written"] == st["accepted"] == 6 * n and st["dropped"] == 0
    assert st["bytes_written"] == path.stat().st_size


async def test_rotation_and_external_reopen_under_concurrent_writers_split_no_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, rotate_max_bytes=32 * 1024, rotate_backups=1000, batch_max=128))
    await w.start()
    n = 3000
    emitted: list[str] = []
    done = threading.Event()
    moves = [0]

    def producer(t: int) -> None:
        for i in range(n):
            if i % 500 == 0:  # make sure the mover really works while we write
                wait_for(lambda i=i: moves[0] >= i // 500)
            ev = call(i, f"t{t}")
            assert w.emit(ev)
            emitted.append(ev.id)

    def mover() -> None:  # an external logrotate: rename, then ask for a reopen
        k = 0
        while not done.is_set():
            try:
                os.rename(path, tmp_path / f"moved-{k}.jsonl")
                k += 1
            except FileNotFoundError:
                pass
            w.request_reopen()
            moves[0] += 1
            time.sleep(0.03)

    async def task(t: int) -> None:
        for i in range(n):
            while moves[0] < i // 500:
                await asyncio.sleep(0.001)
            ev = call(i, f"a{t}")
            assert w.emit(ev)
            emitted.append(ev.id)
            if i % 20 == 0:
                await asyncio.sleep(0.0005)

    threads = [threading.Thread(target=producer, args=(t,), daemon=True) for t in range(3)]
    mv = threading.Thread(target=mover, daemon=True)
    mv.start()
    for th in threads:
        th.start()
    await asyncio.gather(*(task(t) for t in range(2)))
    await asyncio.to_thread(lambda: [th.join() for th in threads])
    done.set()
    await asyncio.to_thread(mv.join)
    assert await w.stop()

    records = parse_lines(read_all_lines(tmp_path))
    ids = Counter(d["id"] for d in records)
    assert set(ids.values()) == {1}, "an id appears twice"
    producer_ids = [d["id"] for d in records if d["type"] == "mcp_tool_called"]
    assert sorted(producer_ids) == sorted(emitted) and len(emitted) == 5 * n
    st = w.stats()
    assert st["rotations"] > 5 and st["reopens"] >= 5, st
    rotated = Counter(d["reason"] for d in records if d["type"] == "events_rotated")
    assert rotated == {"size": st["rotations"], "reopen": st["reopens"]}
    assert st["written"] == 5 * n and st["dropped"] == 0 and st["last_error"] is None


def test_size_rotation_keeps_n_backups_and_deletes_the_oldest(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, rotate_max_bytes=2000, rotate_backups=3))
    for i in range(200):
        w.emit(call(i))
    w.start_thread()
    assert w.stop_sync()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "events.jsonl",
        "events.jsonl.1",
        "events.jsonl.2",
        "events.jsonl.3",
    ]
    for p in tmp_path.iterdir():
        assert p.stat().st_size <= 2000
        assert stat.S_IMODE(p.stat().st_mode) == 0o640
    # what survives is the newest, in order, with no gap
    survivors = [
        d for d in iter_events(str(path), include_rotated=True) if d["type"] == "mcp_tool_called"
    ]
    nums = [d["jsonrpc_id"] for d in survivors]
    assert nums == list(range(nums[0], 200))
    assert w.stats()["rotations"] > 3


# ------------------------------------------------------------------ overflow, drain, errors


def test_overflow_is_counted_and_logged_as_events_dropped(tmp_path: Path) -> None:
    """The writer is stuck opening a FIFO nobody reads: the small queue overflows."""
    path = tmp_path / "events.fifo"
    os.mkfifo(path)
    w = EventWriter(cfg(path, queue_size=16))
    w.start_thread()  # blocks in open() until a reader appears
    results = [w.emit(call(i)) for i in range(500)]
    st = w.stats()
    assert st["dropped"] > 0 and st["dropped"] == results.count(False)
    assert st["queue_depth"] <= 16

    chunks: list[bytes] = []

    def reader() -> None:
        with open(path, "rb") as f:  # unblocks the writer; EOF when it closes
            while data := f.read(65536):
                chunks.append(data)

    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    assert w.stop_sync(timeout=10)
    rt.join(10)
    records = parse_lines(b"".join(chunks).splitlines())
    st = w.stats()
    calls = [d for d in records if d["type"] == "mcp_tool_called"]
    dropped_events = [d for d in records if d["type"] == "events_dropped"]
    assert len(calls) == st["written"] == results.count(True)
    assert st["written"] + st["dropped"] == 500
    assert dropped_events and dropped_events[-1]["dropped_total"] == st["dropped"]
    assert sum(d["dropped_since_last"] for d in dropped_events) == st["dropped"]


async def test_stop_drains_everything_then_refuses_and_counts_new_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, fsync_interval_seconds=0))
    for i in range(20000):  # queued before the writer even runs
        assert w.emit(call(i))
    await w.start()
    assert await w.stop()
    lines = path.read_bytes().splitlines()
    assert len(lines) == 20000
    assert [orjson.loads(x)["jsonrpc_id"] for x in lines] == list(range(20000))
    assert not w.emit(call(0, "late"))
    st = w.stats()
    assert st["dropped"] == 1 and st["written"] == 20000 and st["queue_depth"] == 0
    assert st["fsyncs"] >= 1  # at shutdown even with periodic fsync off


def test_disk_full_is_retried_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.symlink_to("/dev/full")  # every write fails with ENOSPC
    w = EventWriter(cfg(path))
    w.start_thread()
    for i in range(100):
        assert w.emit(call(i))
    wait_for(lambda: (w.stats()["last_error"] or "").startswith("write"))
    assert "space" in w.stats()["last_error"].lower()
    assert w.stats()["written"] == 0 and w.stats()["write_errors"] >= 1
    path.unlink()  # the admin frees the disk / fixes the path ...
    w.request_reopen()  # ... and tells the writer
    wait_for(lambda: w.stats()["written"] == 100)
    assert w.stop_sync()
    records = parse_lines(path.read_bytes().splitlines())
    assert records[0]["type"] == "events_rotated" and records[0]["reason"] == "reopen"
    assert [d["jsonrpc_id"] for d in records[1:]] == list(range(100))
    assert w.stats()["dropped"] == 0


def test_unopenable_path_is_retried_until_it_can_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "log"
    blocker.write_text("not a directory")
    path = blocker / "events.jsonl"
    w = EventWriter(cfg(path))
    w.start_thread()
    assert w.emit(call(1))
    wait_for(lambda: w.stats()["last_error"] is not None)
    assert w.stats()["last_error"].startswith("open")
    blocker.unlink()  # now the directory can be created: the retry succeeds on its own
    wait_for(lambda: w.stats()["written"] == 1)
    assert w.stop_sync()
    assert orjson.loads(path.read_bytes())["id"] == "p-1"


def test_stop_gives_up_after_timeout_and_counts_the_rest_as_dropped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.symlink_to("/dev/full")
    w = EventWriter(cfg(path))
    w.start_thread()
    for i in range(10):
        w.emit(call(i))
    assert not w.stop_sync(timeout=0.3)
    st = w.stats()
    assert st["written"] == 0 and st["dropped"] == 10 and st["accepted"] == 10


def test_sigterm_drains_every_accepted_event_to_disk(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    report = tmp_path / "accepted.txt"
    script = r"""
import asyncio, os, signal, sys, threading
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.events.models import MCPToolCalled
from agentsh.agent.core.policy.schema import EventsConfig

path, report = sys.argv[1], sys.argv[2]

async def main():
    w = EventWriter(EventsConfig(path=path, queue_size=1_000_000))
    await w.start()
    accepted, refused, running = [], [0], [True]

    def make(tag, i):
        return MCPToolCalled(id=f"{tag}-{i}", server_id="fs", tool_name="t", input={"i": i})

    def thread_producer():
        i = 0
        while running[0]:
            ev = make("th", i)
            if w.emit(ev):
                accepted.append(ev.id)
            else:
                refused[0] += 1
            i += 1
            if i % 100 == 0:
                threading.Event().wait(0.0005)

    async def task_producer():
        i = 0
        while running[0]:
            ev = make("tk", i)
            if w.emit(ev):
                accepted.append(ev.id)
            else:
                refused[0] += 1
            i += 1
            if i % 50 == 0:
                # An event loop waits on I/O between bursts; sleep(0) would make
                # this a busy loop that starves every other thread of the GIL.
                await asyncio.sleep(0.0002)

    stopped = asyncio.Event()

    async def on_term():
        ok = await w.stop()          # producers still running while this drains
        running[0] = False
        with open(report, "w") as f:
            f.write(f"{ok} {refused[0]} {w.stats()['dropped']}\n")
            f.write("\n".join(accepted))
        stopped.set()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(on_term()))
    th = threading.Thread(target=thread_producer, daemon=True)
    th.start()
    t = asyncio.ensure_future(task_producer())
    print("ready", flush=True)
    await stopped.wait()
    t.cancel()

asyncio.run(main())
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path), str(report)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        wait_for(lambda: path.exists() and path.stat().st_size > 200_000)  # mid-production
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:  # never leave a producer running after a failure
            proc.kill()
            proc.wait()
    head, *accepted = report.read_text().splitlines()
    ok, refused, dropped = head.split()
    assert ok == "True" and int(refused) == int(dropped)  # refusals after stop are counted
    on_disk = Counter(d["id"] for d in parse_lines(path.read_bytes().splitlines()))
    # (a real run, not an empty one: the signal came after 200 KB, about 1,000 events, were on disk; the
    # count itself is the machine's, exactly 1,000 on a fast host)
    assert len(accepted) >= 500
    missing = [i for i in accepted if on_disk[i] != 1]
    assert not missing, f"{len(missing)} accepted events not on disk exactly once"
    assert any(i.startswith("th-") for i in accepted) and any(i.startswith("tk-") for i in accepted)


# ------------------------------------------------------------------ reader


def test_reader_follows_across_size_rotation_and_external_reopen(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, rotate_max_bytes=4096, rotate_backups=200))
    w.start_thread()
    got: list[str] = []
    stop = threading.Event()

    def follower() -> None:
        for d in iter_events(
            str(path), types=["mcp_tool_called"], follow=True, poll_interval=0.02, stop=stop
        ):
            got.append(d["id"])

    ft = threading.Thread(target=follower, daemon=True)
    ft.start()
    emitted = []
    for i in range(900):
        ev = call(i)
        w.emit(ev)
        emitted.append(ev.id)
        if i == 0:  # the follower has the file open before rotations start
            wait_for(lambda: len(got) == 1)
        if i % 30 == 0:
            time.sleep(0.01)
        if i in (300, 600):  # external logrotate in the middle
            # A file created and moved away between two polls cannot be seen by
            # any polling follower (tail -F alike): move once the reader caught up.
            wait_for(lambda n=i: len(got) == n + 1)
            os.rename(path, tmp_path / f"old-{i}")
            w.request_reopen()
    try:
        wait_for(lambda: len(got) >= len(emitted))
        time.sleep(0.1)  # nothing more (no duplicates) arrives
    finally:
        stop.set()
        ft.join(5)
        w.stop_sync()
    assert got == emitted, (len(got), len(emitted), sorted(set(emitted) - set(got))[:20])
    assert w.stats()["rotations"] > 10 and w.stats()["reopens"] == 2


def test_slow_followers_lose_nothing_when_many_rotations_happen_between_two_polls(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    stop = threading.Event()
    got: dict[str, list[str]] = {"early": [], "history": [], "from_end": []}

    def follower(name: str, **kw: Any) -> threading.Thread:
        def run() -> None:
            for d in iter_events(
                str(path),
                types=["mcp_tool_called"],
                follow=True,
                poll_interval=0.3,
                stop=stop,
                **kw,
            ):
                got[name].append(d["id"])

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    threads = [follower("early")]  # started before the file exists
    w = EventWriter(cfg(path, rotate_max_bytes=4096, rotate_backups=200))
    w.start_thread()
    emitted = [call(i) for i in range(900)]
    try:
        for ev in emitted[:300]:
            w.emit(ev)
        wait_for(lambda: w.stats()["rotations"] >= 10 and len(got["early"]) == 300)
        threads.append(follower("history", include_rotated=True))
        threads.append(follower("from_end", from_end=True))
        time.sleep(0.5)  # both have listed the files
        before = w.stats()["rotations"]
        for ev in emitted[300:]:  # ~40 rotations, far faster than one poll
            w.emit(ev)
        wait_for(lambda: all(len(g) >= 600 for g in got.values()))
        time.sleep(0.4)  # nothing more (no duplicates) arrives
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        w.stop_sync()
    ids = [ev.id for ev in emitted]
    assert w.stats()["rotations"] - before > 20
    assert got["early"] == ids and got["history"] == ids
    assert got["from_end"] == ids[300:]


def test_reader_holds_back_a_partial_last_line_until_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    a = orjson.dumps({"id": "a", "type": "x", "timestamp": "2026-01-01T00:00:00.000000Z"})
    b = orjson.dumps({"id": "b", "type": "y", "timestamp": "2026-01-02T00:00:00.000000Z"})
    path.write_bytes(a + b"\nnot json\n" + b[:10])
    assert [d["id"] for d in iter_events(str(path))] == ["a"]
    stop = threading.Event()
    got: list[str] = []

    def follower() -> None:
        for d in iter_events(str(path), follow=True, poll_interval=0.02, stop=stop):
            got.append(d["id"])

    ft = threading.Thread(target=follower, daemon=True)
    ft.start()
    wait_for(lambda: got == ["a"])
    with open(path, "ab") as f:
        f.write(b[10:] + b"\n")
    wait_for(lambda: got == ["a", "b"])
    stop.set()
    ft.join(5)
    assert [d["id"] for d in iter_events(str(path), since=parse_since("2026-01-01T12:00:00Z"))] == [
        "b"
    ]
    assert [d["id"] for d in iter_events(str(path), types=["x"])] == ["a"]
    assert [d["id"] for d in tail(str(path), n=1)] == ["b"]


def test_reader_restarts_at_zero_after_truncation(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"id":"1","type":"x"}\n{"id":"2","type":"x"}\n')
    stop = threading.Event()
    got: list[str] = []

    def follower() -> None:
        for d in iter_events(str(path), follow=True, poll_interval=0.02, stop=stop):
            got.append(d["id"])

    ft = threading.Thread(target=follower, daemon=True)
    ft.start()
    wait_for(lambda: got == ["1", "2"])
    with open(path, "r+b") as f:  # copytruncate-style, same inode
        f.truncate(0)
        f.write(b'{"id":"3","type":"x"}\n')
    wait_for(lambda: got == ["1", "2", "3"])
    stop.set()
    ft.join(5)


def test_parse_since_accepts_durations_and_rfc3339() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    assert parse_since("10m", now) == now - timedelta(minutes=10)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("1d", now) == now - timedelta(days=1)
    assert parse_since("2026-11-22T09:00:00Z") == datetime(2026, 11, 22, 9, tzinfo=UTC)
    assert parse_since("2026-11-22T11:00:00+02:00") == datetime(2026, 11, 22, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="10m"):
        parse_since("yesterday")


def test_format_event_line_shows_time_type_source_and_key_fields() -> None:
    d = {
        "id": "x",
        "timestamp": "2026-11-22T10:00:00.123456Z",
        "type": "mcp_tool_called",
        "source": "shim",
        "host": "h",
        "server_id": "fs",
        "tool_name": "write_file",
        "action": "block",
        "reason": "tool denied",
        "input": {"path": "/etc/passwd"},
        "pid": 42,
    }
    line = format_event_line(d)
    assert line.startswith("2026-11-22T10:00:00.123Z mcp_tool_called")
    for part in ("shim", "server_id=fs", "tool_name=write_file", "action=block"):
        assert part in line
    assert 'reason="tool denied"' in line and "pid=42" in line and "\n" not in line
    unknown = format_event_line({"type": "new_kind", "timestamp": "t", "source": "x", "z": 1})
    assert "z=1" in unknown
