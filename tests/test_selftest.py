"""`agentshctl selftest` on a real daemon with every layer on (BPF attached to a
child cgroup of the test's own, the real LLM proxy, a real shim): it passes
when the layers enforce and fails, naming the layer, when one does not."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from netns import child_cgroup

from agentsh.agent.netmon.programs import detach_all
from tests.conftest import DaemonProc

pytestmark = [pytest.mark.bpf, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


@pytest.fixture
def place() -> Iterator[tuple[str, str]]:
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        yield cgdir, pin
        detach_all(pin, cgdir)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def full_policy(cgdir: str, pin: str, extra: str = "", blocking: bool = True) -> str:
    return f"""
daemon: {{watch_interval_seconds: 0.2}}
proxy: {{mode: embedded, listen: "127.0.0.1:{free_port()}"}}
network:
  enabled: true
  blocking: {str(blocking).lower()}
  cgroup_path: {cgdir}
  pin_dir: {pin}
  discovery: false
{extra}"""


def selftest(d: DaemonProc) -> tuple[int, dict[str, Any]]:
    r = d.ctl("selftest", "--json", "--wait", "30")
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout)


def by_layer(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["layer"]: c for c in res["checks"]}


def test_selftest_passes_on_every_layer_of_a_healthy_daemon(daemon_factory: Any, place: tuple[str, str]) -> None:
    d: DaemonProc = daemon_factory(full_policy(*place))
    rc, res = selftest(d)
    layers = by_layer(res)
    assert rc == 0, res
    for layer in ("shim", "proxy", "proxy (streaming)", "bpf"):
        assert layers[layer]["status"] == "pass", layers[layer]
    assert "EPERM" in layers["bpf"]["detail"]
    # the real hook command: the canary tool denied through the daemon, and a canary exfiltration
    assert layers["hooks"]["status"] == "pass", layers["hooks"]
    assert layers["hooks (data flow)"]["status"] == "pass", layers["hooks (data flow)"]
    acts = [e for e in d.events("admin_action") if e["action"] == "selftest"]
    assert [a["detail"]["phase"] for a in acts] == ["begin", "end"]
    assert sorted(map(tuple, acts[1]["detail"]["decisions"])) == [
        ("hook", "block"), ("proxy", "block"), ("proxy", "block"), ("shim", "block")
    ]
    # a selftest's hook session is not hook coverage
    assert not json.loads(d.ctl("status", "--json").stdout)["security_coverage"]["hooks_active"]
    # the canaries are gone afterwards
    st = json.loads(d.ctl("status", "--json").stdout)
    assert not any(s.startswith("agentsh-selftest-") for s in st["bpf"].get("watched_servers") or {})


def test_selftest_fails_naming_the_layers_when_nothing_is_enforced(daemon_factory: Any, place: tuple[str, str]) -> None:
    d: DaemonProc = daemon_factory(full_policy(*place, extra="mcp: {enforce_policy: false}", blocking=False))
    rc, res = selftest(d)
    layers = by_layer(res)
    assert rc == 1, res
    assert layers["shim"]["status"] == "FAIL" and "answered as allowed" in layers["shim"]["detail"]
    assert layers["proxy"]["status"] == "FAIL" and "reached the client" in layers["proxy"]["detail"]
    assert layers["bpf"]["status"] == "FAIL" and "NOT blocked" in layers["bpf"]["detail"]
    assert layers["hooks"]["status"] == "FAIL" and "answered 'allow'" in layers["hooks"]["detail"]


def test_selftest_needs_the_admin_socket(daemon_factory: Any, place: tuple[str, str]) -> None:
    d: DaemonProc = daemon_factory(full_policy(*place))
    os.chmod(d.root, 0o755)
    os.chmod(d.socket.parent, 0o755)
    os.chmod(d.socket, 0o666)
    os.chmod(d.admin_socket, 0o666)
    r = d.ctl("selftest", user="nobody")
    assert r.returncode != 0 and "forbidden" in r.stderr
