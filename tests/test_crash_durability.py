"""Nothing acknowledged is lost (issue: enforcement integrity §5): kill -9 the
real daemon while two senders flood it with events (HTTP `POST /v1/events`
and the agent channel's `op: events`); every event the daemon acknowledged
is in the log exactly once after a restart, every line is whole JSON, and a
torn tail, if the kill left one, is cut off and counted."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import orjson

from tests.conftest import DaemonProc, read_events, wait_for

SENDER = r"""
import asyncio, sys
from agentsh.agent.core.client_async import ChannelClient, ControlClient, channel_path

sock, kind, tag = sys.argv[1], sys.argv[2], sys.argv[3]

def batch(n):
    return [{"type": "protocol_error", "source": "shim", "layer": "shim", "detail": f"{tag}-{n}-{i}"} for i in range(2000)]

async def go():
    n = 0
    if kind == "http":
        async with ControlClient(sock) as c:
            while True:
                res = await c.post("/v1/events", {"events": batch(n)})
                print(n, res["accepted"], flush=True)
                n += 1
    ch = ChannelClient(channel_path(sock))
    while True:
        res = await ch.events(batch(n))
        print(n, res["accepted"], flush=True)
        n += 1

try:
    asyncio.run(go())
except Exception as e:
    print("stopped", type(e).__name__, flush=True)
"""


def start_sender(d: DaemonProc, kind: str, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SENDER, str(d.socket), kind, tag], stdout=subprocess.PIPE, text=True)


def acked(p: subprocess.Popen[str], kind: str, early: list[str]) -> set[str]:
    out, _ = p.communicate(timeout=30)
    got: set[str] = set()
    for line in [*early, *out.splitlines()]:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            n, accepted = int(parts[0]), int(parts[1])
            assert accepted == 2000, line  # nothing dropped under this load
            got.update(f"{kind}-{n}-{i}" for i in range(2000))
    return got


def test_events_acknowledged_before_a_kill_9_are_all_in_the_log_once(daemon: DaemonProc) -> None:
    senders = {f"{k}{j}": start_sender(daemon, k, f"{k}{j}") for k in ("http", "channel") for j in range(2)}
    # a flood in flight: every sender has had a few batches acknowledged (however
    # loaded the machine is), and is sending more
    early: dict[str, list[str]] = {k: [] for k in senders}
    for k, p in senders.items():
        assert p.stdout is not None
        while len(early[k]) < 2:
            line = p.stdout.readline()
            assert line, f"sender {k} stopped early"
            early[k].append(line.strip())
    time.sleep(0.3)
    assert daemon.proc is not None
    daemon.proc.kill()
    daemon.proc.wait()
    want = {k: acked(p, k, early[k]) for k, p in senders.items()}
    assert all(len(v) >= 4000 for v in want.values()), {k: len(v) for k, v in want.items()}

    # the kill may have left half a line; the next daemon repairs it before writing
    raw = daemon.events_path.read_bytes()
    torn = not raw.endswith(b"\n")
    daemon.start()
    wait_for(lambda: daemon.events("daemon_started")[1:], what="second start")
    lines = daemon.events_path.read_bytes().splitlines()
    for line in lines:
        orjson.loads(line)  # every line whole
    details: dict[str, int] = {}
    for e in read_events(daemon.events_path):
        if e["type"] == "protocol_error":
            details[e["detail"]] = details.get(e["detail"], 0) + 1
    for kind, ids in want.items():
        missing = ids - details.keys()
        assert not missing, f"{len(missing)} acknowledged {kind} events lost, e.g. {sorted(missing)[:3]}"
    assert all(n == 1 for n in details.values())
    repaired: list[dict[str, Any]] = daemon.events("events_torn_tail")
    assert bool(repaired) == torn
