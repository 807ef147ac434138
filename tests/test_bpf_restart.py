"""Enforcement survives the daemon: kill -9 and restart, re-adoption, clean detach."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from netns import CgroupClient, Listener, child_cgroup

from agentsh.agent.netmon import bpfsys
from agentsh.agent.netmon.cgroup import open_dir
from agentsh.agent.netmon.programs import CGROUP_PROGS, detach_all

pytestmark = [pytest.mark.bpf, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]

MONITOR = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from agentsh.agent.netmon.monitor import NetworkMonitor
    from agentsh.agent.core.policy.schema import Policy

    async def main():
        pol = Policy.model_validate(json.loads(sys.argv[1]))
        mon = NetworkMonitor(pol, lambda e: True, Path(sys.argv[2]), report_existing=False)
        await mon.start()
        st = mon.status()
        print(json.dumps({"state": st["state"], "reason": st["reason"],
                          "programs": st.get("programs")}), flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)

LOOPER = textwrap.dedent(
    """
    import errno, os, socket, sys, time
    cg, host, port, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    ok = eperm = other = 0
    print("looping", flush=True)
    while not os.path.exists(stop):
        s = socket.socket()
        try:
            s.connect((host, port))
            ok += 1
        except OSError as e:
            if e.errno == errno.EPERM:
                eperm += 1
            else:
                other += 1
        finally:
            s.close()
    print(f"{ok} {eperm} {other}", flush=True)
    """
)


def _policy(cgdir: str, pin_dir: str, port: int) -> str:
    return json.dumps(
        {
            "mcp": {
                "servers": [{"id": "evil", "type": "http", "url": f"http://127.0.0.9:{port}/"}],
                "denied_servers": [{"id": "evil"}],
            },
            "network": {"cgroup_path": cgdir, "pin_dir": pin_dir, "discovery": False},
        }
    )


def _start_monitor(pol: str, state: Path) -> tuple[subprocess.Popen[str], dict]:
    p = subprocess.Popen(
        [sys.executable, "-c", MONITOR, pol, str(state)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line, "monitor subprocess died before reporting"
    return p, json.loads(line)


def _attached(cgdir: str) -> dict[str, list[int]]:
    fd = open_dir(cgdir)
    try:
        return {name: bpfsys.prog_query(fd, at)[1] for name, at in CGROUP_PROGS.items()}
    finally:
        os.close(fd)


@pytest.fixture
def place(tmp_path: Path):
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        yield cgdir, pin
        detach_all(pin, cgdir)


def test_kill_9_and_restart_never_lets_a_denied_connect_through(place, tmp_path: Path) -> None:
    cgdir, pin = place
    target = Listener("127.0.0.9")
    pol = _policy(cgdir, pin, target.port)
    a, st_a = _start_monitor(pol, tmp_path)
    assert st_a["state"] == "active", st_a
    stop = tmp_path / "stop"
    looper = subprocess.Popen(
        [sys.executable, "-c", LOOPER, cgdir, "127.0.0.9", str(target.port), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    b = None
    try:
        assert looper.stdout is not None and looper.stdout.readline().strip() == "looping"
        time.sleep(0.3)
        a.send_signal(signal.SIGKILL)
        a.wait()
        time.sleep(0.5)  # no daemon at all
        assert all(len(v) == 1 for v in _attached(cgdir).values())
        b, st_b = _start_monitor(pol, tmp_path)  # compiles, refills, replaces atomically
        assert st_b["state"] == "active", st_b
        time.sleep(0.3)
        stop.touch()
        ok, eperm, other = map(int, looper.stdout.readline().split())
    finally:
        stop.touch()
        looper.wait(10)
        if b is not None:
            b.kill()
            b.wait()
        target.close()
    assert ok == 0 and target.accepted == 0
    assert eperm > 100 and other == 0
    # the new instance's programs replaced the old ones (one per hook, new ids)
    old_ids = {p["attach_type"]: p["prog_id"] for p in st_a["programs"]}
    new_ids = {p["attach_type"]: p["prog_id"] for p in st_b["programs"]}
    assert set(old_ids) == set(new_ids) == {"connect4", "connect6", "sendmsg4", "sendmsg6"}
    assert all(old_ids[k] != new_ids[k] for k in old_ids)
    assert all(len(v) == 1 for v in _attached(cgdir).values())


def test_enforcement_stays_after_the_daemon_exits_and_detach_removes_it(place, tmp_path) -> None:
    cgdir, pin = place
    target = Listener("127.0.0.9")
    try:
        a, st = _start_monitor(_policy(cgdir, pin, target.port), tmp_path)
        assert st["state"] == "active", st
        a.terminate()
        a.wait()
        with CgroupClient(cgdir) as c:
            assert c.tcp("127.0.0.9", target.port) == "EPERM"
            removed = detach_all(pin, cgdir)
            assert sum("prog" in r for r in removed) == 4
            assert not any(r.startswith("FAILED") for r in removed)
            assert c.tcp("127.0.0.9", target.port, read=True) == "ok:hello"
        assert not os.path.exists(pin)
        assert all(v == [] for v in _attached(cgdir).values())
    finally:
        target.close()
