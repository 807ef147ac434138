"""The BPF layer inside the real daemon: status, policy reload, kill -9 and
restart of agentshd without a single denied connect getting through, and
`agentshctl bpf detach`. Attached to a child cgroup of the test's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from netns import CgroupClient, Listener, child_cgroup
from test_bpf_restart import LOOPER

from agentsh.agent.netmon.programs import detach_all
from tests.conftest import DaemonProc, wait_for

pytestmark = [pytest.mark.bpf, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


def policy(cgdir: str, pin: str, port: int, deny: bool = True) -> str:
    return f"""
proxy: {{mode: disabled}}
daemon: {{watch_interval_seconds: 0.2}}
mcp:
  servers:
    - {{id: evil, type: http, url: "http://127.0.0.9:{port}/mcp"}}
  denied_servers: {"[{id: evil}]" if deny else "[]"}
network:
  enabled: true
  cgroup_path: {cgdir}
  pin_dir: {pin}
  discovery: false
"""


@pytest.fixture
def place():
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        yield cgdir, pin
        detach_all(pin, cgdir)


def bpf_status(d: DaemonProc) -> dict:
    return json.loads(d.ctl("status", "--json").stdout)["bpf"]


def test_daemon_enforces_survives_kill_9_and_reload_flips_the_verdict(daemon_factory, place, tmp_path) -> None:
    cgdir, pin = place
    target = Listener("127.0.0.9")
    d: DaemonProc = daemon_factory(policy(cgdir, pin, target.port))
    wait_for(lambda: bpf_status(d)["state"] == "active", 60, what="bpf active")
    st = json.loads(d.ctl("status", "--json").stdout)
    # the only reason it is not healthy: this test turns the LLM proxy off
    assert st["degraded_reasons"] == ["LLM proxy disabled by policy (proxy.mode: disabled)"], st["degraded_reasons"]
    stop = tmp_path / "stop"
    looper = subprocess.Popen([sys.executable, "-c", LOOPER, cgdir, "127.0.0.9", str(target.port), str(stop)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert looper.stdout.readline().strip() == "looping"
        time.sleep(0.3)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        time.sleep(0.5)  # no daemon at all
        d.start()  # recompiles, re-adopts the pinned maps, replaces the programs
        wait_for(lambda: bpf_status(d)["state"] == "active", 60, what="bpf active after restart")
        time.sleep(0.3)
        stop.touch()
        ok, eperm, other = map(int, looper.stdout.readline().split())
    finally:
        stop.touch()
        looper.wait(10)
    assert ok == 0 and target.accepted == 0
    assert eperm > 100 and other == 0
    ev = d.wait_event("mcp_network_connection", lambda e: e["action"] == "block")
    assert ev["server_id"] == "evil" and ev["remote_addr"] == f"127.0.0.9:{target.port}"
    # reload: the server is no longer denied -> connects work, without reattaching
    progs_before = {p["attach_type"]: p["prog_id"] for p in bpf_status(d)["programs"]}
    d.write_policy(policy(cgdir, pin, target.port, deny=False))
    assert d.ctl("policy", "reload").returncode == 0
    with CgroupClient(cgdir) as c:
        wait_for(lambda: c.tcp("127.0.0.9", target.port, read=True) == "ok:hello", 10, what="allowed after reload")
    progs_after = {p["attach_type"]: p["prog_id"] for p in bpf_status(d)["programs"]}
    assert progs_after == progs_before
    target.close()


def test_ctl_bpf_detach_removes_enforcement(daemon_factory, place) -> None:
    cgdir, pin = place
    target = Listener("127.0.0.9")
    try:
        d: DaemonProc = daemon_factory(policy(cgdir, pin, target.port))
        wait_for(lambda: bpf_status(d)["state"] == "active", 60, what="bpf active")
        with CgroupClient(cgdir) as c:
            assert c.tcp("127.0.0.9", target.port) == "EPERM"
            r = d.ctl("bpf", "detach")
            assert r.returncode == 0, r.stderr
            assert c.tcp("127.0.0.9", target.port, read=True) == "ok:hello"
        assert not os.path.exists(pin)
    finally:
        target.close()


def test_enforcement_outlives_the_daemon_and_ctl_detaches_without_it(daemon_factory, place) -> None:
    cgdir, pin = place
    target = Listener("127.0.0.9")
    try:
        d: DaemonProc = daemon_factory(policy(cgdir, pin, target.port))
        wait_for(lambda: bpf_status(d)["state"] == "active", 60, what="bpf active")
        assert d.stop() == 0
        with CgroupClient(cgdir) as c:
            assert c.tcp("127.0.0.9", target.port) == "EPERM"  # still enforced, no daemon
            r = d.ctl("bpf", "detach", "--pin-dir", pin, "--cgroup-path", cgdir)
            assert r.returncode == 0, r.stderr
            assert "detaching locally" in r.stderr
            assert c.tcp("127.0.0.9", target.port, read=True) == "ok:hello"
        assert not os.path.exists(pin)
    finally:
        target.close()
