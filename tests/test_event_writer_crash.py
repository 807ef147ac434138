"""Acknowledged emit and torn-tail repair: nothing acknowledged is lost, even to
``kill -9`` in the middle of a flood, and a restarted writer never appends onto
a partial line. Real processes, real files, real signals."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.policy.schema import EventsConfig


def call(i: int, tag: str) -> m.MCPToolCalled:
    return m.MCPToolCalled(
        id=f"{tag}-{i}", server_id="fs", tool_name="read_file", input={"path": f"/tmp/f{i}"}
    )


def cfg(path: Path, **kw: Any) -> EventsConfig:
    return EventsConfig(path=str(path), **kw)


def complete_records(path: Path) -> list[dict[str, Any]]:
    """Every complete line of a file being written (the last one may be partial)."""
    data = path.read_bytes()
    return [orjson.loads(x) for x in data[: data.rfind(b"\n") + 1].splitlines()]


# ------------------------------------------------------------------ acknowledged emit


async def test_emit_acked_returns_once_its_events_are_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, fsync_interval_seconds=0))
    await w.start()
    try:
        for r in range(20):
            batch = [call(i, f"r{r}") for i in range(50)]
            res = await w.emit_acked(batch)
            assert (res.accepted, res.dropped, res.written) == (50, 0, True)
            on_disk = {d["id"] for d in complete_records(path)}  # read before anything else
            assert {ev.id for ev in batch} <= on_disk, f"round {r}: acknowledged before written"
        fsyncs = w.stats()["fsyncs"]
        res = await w.emit_acked([call(0, "sync")], fsync=True)
        assert res.written and w.stats()["fsyncs"] == fsyncs + 1  # periodic fsync is off
    finally:
        assert await w.stop()


def test_emit_acked_sync_from_threads_amid_a_flood_of_plain_emits(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    w = EventWriter(cfg(path, queue_size=1_000_000))
    w.start_thread()
    stop = threading.Event()
    late: list[str] = []

    def flood() -> None:  # bounded: the ackers re-read the whole file after every ack
        for i in range(60_000):
            if stop.is_set():
                return
            w.emit(call(i, "flood"))
            if i % 200 == 0:
                time.sleep(0.002)

    def acker(t: int) -> None:
        for r in range(15):
            batch = [call(i, f"a{t}-{r}") for i in range(25)]
            res = w.emit_acked_sync(batch)
            assert res.written and res.accepted == 25
            data = path.read_bytes()
            late.extend(ev.id for ev in batch if f'"id":"{ev.id}"'.encode() not in data)

    fl = threading.Thread(target=flood, daemon=True)
    fl.start()
    ackers = [threading.Thread(target=acker, args=(t,), daemon=True) for t in range(4)]
    for th in ackers:
        th.start()
    for th in ackers:
        th.join(120)
    stop.set()
    fl.join(30)
    assert w.stop_sync()
    assert not late, f"{len(late)} events acknowledged before they were written"
    st = w.stats()
    assert st["dropped"] == 0 and st["written"] == st["accepted"] > 4 * 15 * 25
    ids = Counter(d["id"] for d in complete_records(path))
    assert all(ids[f"a{t}-{r}-{i}"] == 1 for t in range(4) for r in range(15) for i in range(25))


def test_ack_waits_while_the_write_is_blocked(tmp_path: Path) -> None:
    """A FIFO whose reader does not read: write(2) blocks once the pipe is full,
    and no acknowledgement may come before it returns."""
    path = tmp_path / "events.fifo"
    os.mkfifo(path)
    w = EventWriter(cfg(path))
    w.start_thread()  # blocks in open() until the reader below appears
    rfd = os.open(path, os.O_RDONLY)
    try:
        big = [
            m.MCPToolCalled(id=f"big-{i}", server_id="fs", tool_name="t", input={"x": "y" * 2000})
            for i in range(100)  # ~200 KB: more than the pipe holds
        ]
        res = w.emit_acked_sync(big, timeout=0.5)
        assert (res.accepted, res.written) == (100, False)
        got = b""
        small = [call(i, "after") for i in range(3)]
        results: list[Any] = []
        t = threading.Thread(target=lambda: results.append(w.emit_acked_sync(small)))
        t.start()
        deadline = time.monotonic() + 30
        while not (results and b'"after-2"' in got):  # drain the pipe
            assert time.monotonic() < deadline
            if select.select([rfd], [], [], 0.05)[0]:
                got += os.read(rfd, 1 << 20)
        t.join(10)
        assert results[0].written
        ids = [orjson.loads(x)["id"] for x in got.splitlines()]
        assert ids[:100] == [ev.id for ev in big] and ids[100:103] == ["after-0", "after-1", "after-2"]
    finally:
        w.stop_sync(timeout=1)
        os.close(rfd)


def test_emit_acked_on_a_failing_disk_says_not_written_and_stop_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.symlink_to("/dev/full")  # every write fails with ENOSPC
    w = EventWriter(cfg(path))
    w.start_thread()
    res = w.emit_acked_sync([call(i, "full") for i in range(10)], timeout=0.3)
    assert (res.accepted, res.dropped, res.written) == (10, 0, False)
    waiting: list[Any] = []
    t = threading.Thread(target=lambda: waiting.append(w.emit_acked_sync([call(0, "wait")])))
    t.start()
    time.sleep(0.2)
    assert not w.stop_sync(timeout=0.3)  # gives up on the disk
    t.join(10)
    assert waiting and waiting[0].accepted == 1 and waiting[0].written is False
    st = w.stats()
    assert st["written"] == 0 and st["dropped"] == 11 == st["accepted"]


async def test_emit_acked_after_stop_is_refused_and_counted(tmp_path: Path) -> None:
    w = EventWriter(cfg(tmp_path / "events.jsonl"))
    await w.start()
    assert await w.stop()
    res = await w.emit_acked([call(1, "late"), call(2, "late")])
    assert (res.accepted, res.dropped) == (0, 2)
    assert w.stats()["dropped"] == 2


# ------------------------------------------------------------------ torn tail


@pytest.mark.parametrize("keep", [b"", b'{"id":"old-1","type":"x"}\n'])
def test_torn_tail_is_cut_off_counted_and_reported(tmp_path: Path, keep: bytes) -> None:
    path = tmp_path / "events.jsonl"
    fragment = b'{"id":"torn-7","type":"mcp_tool_called","input":{"pa'
    path.write_bytes(keep + fragment)
    w = EventWriter(cfg(path))
    w.start_thread()
    assert w.emit(call(1, "new"))
    assert w.stop_sync()
    data = path.read_bytes()
    assert data.startswith(keep) and data.endswith(b"\n")
    records = [orjson.loads(x) for x in data.splitlines()]  # every line is JSON again
    if keep:
        assert records.pop(0)["id"] == "old-1"
    torn, new = records
    assert torn["type"] == "events_torn_tail" and torn["bytes_removed"] == len(fragment)
    assert torn["fragment_head"] == fragment.decode() and torn["path"] == str(path)
    assert type(m.parse_event(torn)) is m.EventsTornTail
    assert new["id"] == "new-1"
    st = w.stats()
    assert st["torn_tails"] == 1 and st["torn_tail_bytes"] == len(fragment)


def test_file_ending_with_a_newline_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"id":"a","type":"x"}\n')
    w = EventWriter(cfg(path))
    w.start_thread()
    w.emit(call(1, "b"))
    assert w.stop_sync()
    assert [orjson.loads(x)["id"] for x in path.read_bytes().splitlines()] == ["a", "b-1"]
    assert w.stats()["torn_tails"] == 0


def test_torn_tail_longer_than_one_scan_block_is_found(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    fragment = b'{"id":"big","input":"' + b"x" * 300_000
    path.write_bytes(b'{"id":"a","type":"x"}\n' + fragment)
    w = EventWriter(cfg(path))
    w.start_thread()
    assert w.stop_sync()
    lines = path.read_bytes().splitlines()
    assert orjson.loads(lines[0])["id"] == "a"
    assert orjson.loads(lines[1])["bytes_removed"] == len(fragment) and len(lines) == 2


# ------------------------------------------------------------------ kill -9 in a flood

CHILD = r"""
import asyncio, os, sys, threading, time
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.events.models import MCPToolCalled
from agentsh.agent.core.policy.schema import EventsConfig

path, tag = sys.argv[1], sys.argv[2]

def make(i, kind):
    return MCPToolCalled(id=f"{tag}-{kind}-{i}", server_id="fs", tool_name="write_file",
                         input={"path": f"/srv/data/{i}", "content": "y" * (i % 700)})

def report(ids):
    # one write(2) per acknowledged batch, < PIPE_BUF: never interleaved
    os.write(1, ("\n".join(ids) + "\n").encode())

async def main():
    w = EventWriter(EventsConfig(path=path, queue_size=1_000_000, fsync_interval_seconds=0))
    await w.start()

    def flood(t):  # unacknowledged pressure: large writes, busy GIL
        i = 0
        while True:
            w.emit(make(i, f"flood{t}"))
            i += 1
            if i % 300 == 0:
                time.sleep(0.0005)

    def sync_acker():
        i = 0
        while True:
            batch = [make(i + k, "sync") for k in range(20)]
            r = w.emit_acked_sync(batch)
            assert r.written and r.accepted == 20, r
            report([e.id for e in batch])
            i += 20

    for t in range(2):
        threading.Thread(target=flood, args=(t,), daemon=True).start()
    threading.Thread(target=sync_acker, daemon=True).start()
    i = 0
    while True:
        batch = [make(i + k, "async") for k in range(40)]
        r = await w.emit_acked(batch)
        assert r.written and r.accepted == 40, r
        report([e.id for e in batch])
        i += 40

asyncio.run(main())
"""


def _ends_torn(path: Path) -> bool:
    return path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")


def test_kill_9_mid_flood_loses_no_acknowledged_event_and_repairs_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    acked: list[str] = []
    torn_expected = 0
    for rnd, kill_after in enumerate((600, 4000, 1500)):
        torn_expected += _ends_torn(path)  # the child's writer must repair it
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), f"r{rnd}"], stdout=subprocess.PIPE
        )
        got: list[str] = []
        try:
            assert proc.stdout is not None
            buf = b""
            while len(got) < kill_after:
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"child exited early with {proc.wait()}"
                buf += chunk
                *lines, buf = buf.split(b"\n")
                got.extend(x.decode() for x in lines)
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(30) == -signal.SIGKILL
            rest = proc.stdout.read()  # acknowledged before it died
            *lines, _partial = (buf + rest).split(b"\n")
            got.extend(x.decode() for x in lines)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        acked.extend(got)
        assert any("-sync-" in i for i in got) and any("-async-" in i for i in got)
        if rnd == 1 and not _ends_torn(path):
            # The kill rarely lands inside a write(2) (page-cache writes are
            # quick): leave what such a kill leaves, the first bytes of a
            # batch whose write never completed (so was never acknowledged).
            line = orjson.dumps(call(1, "cut").model_dump(exclude_none=True))
            with open(path, "ab") as f:
                f.write(line[: len(line) // 2])

    final_torn = int(_ends_torn(path))
    torn_expected += final_torn
    w = EventWriter(cfg(path))  # the restarted daemon's writer
    w.start_thread()
    assert w.stop_sync()
    assert w.stats()["torn_tails"] == final_torn

    data = path.read_bytes()
    assert data.endswith(b"\n")
    records = [orjson.loads(x) for x in data.splitlines()]  # every line is valid JSON
    # under a slow machine the floods can pass events.rotate_max_bytes: what
    # was acknowledged before a rotation is in the rotated files, and counts
    for old in sorted(path.parent.glob(path.name + ".*")):
        records += [orjson.loads(x) for x in old.read_bytes().splitlines()]
    ids = Counter(d["id"] for d in records)
    assert max(ids.values()) == 1, "an event was written twice"
    missing = [i for i in acked if ids[i] != 1]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged events are not on disk"
    assert len(acked) >= 600 + 4000 + 1500
    torn = [d for d in records if d["type"] == "events_torn_tail"]
    assert torn_expected >= 1 and len(torn) == torn_expected, (len(torn), torn_expected)
    assert all(d["bytes_removed"] > 0 for d in torn)


def test_stop_right_after_a_burst_writes_every_line_even_mid_fsync(tmp_path: Path) -> None:
    """Lines put while the writer is in fsync() (GIL released) and stop() comes
    before it looks again: the final drain must still write them."""
    lost = []
    for r in range(25):
        path = tmp_path / f"events-{r}.jsonl"
        w = EventWriter(cfg(path, fsync_interval_seconds=0.0005, queue_size=1_000_000))
        w.start_thread()

        def burst(t: int, w: EventWriter = w, r: int = r) -> None:
            for i in range(1500):
                w.emit(call(i, f"r{r}t{t}"))

        ths = [threading.Thread(target=burst, args=(t,)) for t in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        assert w.stop_sync()
        st = w.stats()
        if st["written"] != st["accepted"] or st["queue_depth"]:
            lost.append((r, st["accepted"] - st["written"]))
        assert len(path.read_bytes().splitlines()) == st["written"]
    assert not lost, f"accepted lines left unwritten at stop: {lost}"
