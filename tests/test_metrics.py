"""Prometheus metrics and the health endpoints on a real agentshd (docs/operations.md
"Monitoring"): real traffic through the real shim, the real LLM proxy (official
anthropic SDK against the local stand-in upstream), the real hook command, the
control API; every counter is checked against what happened (and where there
is an independent record of it, the event log, against that record)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from fake_llm_upstream import FakeUpstream, Scenario, text
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from agentsh.agent import hook_cmd
from agentsh.agent.core.client_async import ChannelClient, ControlClient, ControlError, channel_path
from tests.conftest import DaemonProc, wait_for
from tests.test_enforcement_integrity import (
    ask,
    register_fs_tools,
    wait_proxy_ready,
    wait_snapshot_has,
)
from tests.test_shim_mcp import poisoned, shim_session

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
TOOL_NAMES = ("read_notes", "fetch_data", "helper", "write_file", "read_file", "ReadNotesFile", "poison")
HOOK = str(Path(hook_cmd.__file__).resolve())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        body = r.read().decode()
    out: Samples = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def val(m: Samples, name: str, **labels: str) -> float:
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Per label set, how much ``name`` moved (only the ones that moved)."""
    keys = {k[1] for k in (*before, *after) if k[0] == name}
    out = {}
    for k in keys:
        d = after.get((name, k), 0.0) - before.get((name, k), 0.0)
        if d:
            out[k] = d
    return out


def labels(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(kw.items()))


def label_values(m: Samples) -> set[str]:
    return {v for (_, ls) in m for (_, v) in ls}


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def api_get(sock: Path, path: str) -> tuple[int, dict[str, Any]]:
    """GET over a daemon socket with curl: the status code and the JSON body."""
    r = subprocess.run(["curl", "-s", "--unix-socket", str(sock), "-w", "\n%{http_code}", f"http://agentsh{path}"],
                       capture_output=True, text=True, timeout=30)
    body, _, code = r.stdout.rpartition("\n")
    return int(code), json.loads(body)


def status(d: DaemonProc) -> dict[str, Any]:
    return json.loads(d.ctl("status", "--json").stdout)


def event_lines(d: DaemonProc) -> int:
    return len([x for x in d.events_path.read_bytes().splitlines() if x.strip()])


def quiet_scrape(d: DaemonProc, port: int) -> Samples:
    """A scrape once the event queue is empty and every queued event is in the file."""
    def settled() -> Samples | None:
        m = scrape(port)
        if val(m, "agentsh_events_queued") == 0 and val(m, "agentsh_events_written_total") == event_lines(d):
            return m
        return None
    return wait_for(settled, 15, what="event queue drained")  # type: ignore[no-any-return]


def run_hook(sock: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """The hook command exactly as Claude Code runs it."""
    return subprocess.run([sys.executable, "-S", "-E", HOOK, "--event", payload["hook_event_name"], "--socket", str(sock)],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin"})


def metrics_policy(port: int, body: str = "") -> str:
    return f"""
network: {{enabled: false}}
proxy: {{mode: disabled}}
daemon: {{watch_config: false}}
events: {{fsync_interval_seconds: 0.2}}
metrics: {{enabled: true, listen: "127.0.0.1:{port}"}}
{body}"""


# --------------------------------------------------------------------------- the daemon's own traffic


async def test_counters_move_by_exactly_the_traffic_the_daemon_saw(daemon_factory: Any, tmp_path: Path) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(metrics_policy(port, """
mcp:
  denied_tools:
    - {server: "*", tool: fetch_data}
  inspection:
    on_detection: {action: block}
"""))
    before = quiet_scrape(d, port)
    lines0 = event_lines(d)
    detections0 = len(d.events("mcp_detection"))

    # 1. a real shim around the poisoned server: a tool hidden, one call allowed, one denied
    cmd, env = poisoned(tmp_path / "calls.jsonl", tools="read_notes,fetch_data,helper")
    async with shim_session(d, cmd, "poison", env) as s:
        seen = {t.name for t in (await s.list_tools()).tools}
        assert seen == {"read_notes", "fetch_data"}  # helper: flagged, hidden
        assert (await s.call_tool("read_notes", {"topic": "t"})).content[0].text == "notes about t"
        with pytest.raises(MCPError, match="blocked by policy: tool denied"):
            await s.call_tool("fetch_data", {"url": "https://example.org"})
    d.wait_event("shim_exited", lambda e: e["server_id"] == "poison")

    # 2. a blocked tool asked for on the decision channel (as the proxy would)
    chan = ChannelClient(channel_path(d.socket))
    dec = await chan.decide({"tool_name": "fetch_data", "server_id": "elsewhere", "source": "proxy",
                             "dialect": "anthropic", "request_id": "r1", "tool_call_id": "c1"})
    await chan.close()
    assert dec["action"] == "block" and dec["reason"] == "tool denied"
    async with ControlClient(str(d.socket)) as c:
        # 3. events handed in
        posted = await c.post("/v1/events", {"events": [
            {"type": "protocol_error", "source": "shim", "layer": "shim", "detail": f"metrics test {i}"} for i in range(5)
        ]})
        assert posted["accepted"] == 5

    # 4. a policy change that is rejected, then one that is taken
    bad = d.write_policy("mcp: {no_such_key: 1}\n", name="50-bad.yaml")
    async with ControlClient(str(d.admin_socket)) as admin:
        with pytest.raises(ControlError) as ei:
            await admin.post("/v1/policy/reload")
        assert ei.value.status == 422
        bad.unlink()
        assert (await admin.post("/v1/policy/reload"))["ok"]

    # 5. the agent hook command: one PreToolUse evaluation
    r = run_hook(d.socket, {"session_id": "cc-metrics", "hook_event_name": "PreToolUse", "tool_name": "Read",
                            "tool_input": {"file_path": "/tmp/metrics-notes.txt"}, "tool_use_id": "tu1"})
    assert r.returncode == 0 and r.stdout == b"", r  # allowed
    d.wait_event("hook_evaluation", lambda e: e["session_id"] == "cc-metrics")

    after = quiet_scrape(d, port)
    assert delta(before, after, "agentsh_decisions_total") == {
        labels(layer="shim", action="allow", reason="allow"): 1,
        labels(layer="shim", action="block", reason="tool_denied"): 1,
        labels(layer="proxy", action="block", reason="tool_denied"): 1,
        labels(layer="hook", action="allow", reason="allow"): 1,
    }
    assert delta(before, after, "agentsh_shim_sessions_total") == {(): 1}
    assert delta(before, after, "agentsh_shim_tool_calls_total") == {(): 2}
    assert delta(before, after, "agentsh_shim_tool_calls_blocked_total") == {(): 1}
    assert delta(before, after, "agentsh_shim_tools_hidden_total") == {(): 1}
    assert val(after, "agentsh_shims") == 0
    # one mcp_detection event per flag, all blocking here
    flags = delta(before, after, "agentsh_detector_flags_total")
    new_detections = d.events("mcp_detection")[detections0:]
    assert new_detections and sum(flags.values()) == len(new_detections)
    assert all(dict(k)["action"] == "block" for k in flags)
    assert delta(before, after, "agentsh_policy_reloads_total") == {
        labels(result="rejected"): 1, labels(result="ok"): 1,
    }
    assert delta(before, after, "agentsh_hook_evaluations_total") == {labels(event="PreToolUse", decision="allow"): 1}
    assert delta(before, after, "agentsh_hook_evaluation_seconds_count") == {(): 1}
    assert after[("agentsh_hook_evaluation_seconds_sum", ())] - before[("agentsh_hook_evaluation_seconds_sum", ())] > 0
    # events: the counter is the file
    written = after[("agentsh_events_written_total", ())] - before[("agentsh_events_written_total", ())]
    assert written == event_lines(d) - lines0 > 5
    assert len([e for e in d.events("protocol_error") if e.get("detail", "").startswith("metrics test")]) == 5
    assert val(after, "agentsh_events_dropped_total") == 0
    # bounded labels: no tool or server name anywhere
    values = label_values(after)
    assert not [v for v in values for name in TOOL_NAMES if name in v], values


# --------------------------------------------------------------------------- the LLM proxy, through the daemon


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeUpstream]:
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    f = FakeUpstream()
    asyncio.run_coroutine_threadsafe(f.start(), loop).result(10)
    yield f
    asyncio.run_coroutine_threadsafe(f.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)


def say(port: int, fake: FakeUpstream, key: str) -> None:
    fake.add(key, Scenario([text("Hello there.")]))
    ac = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0, timeout=30)
    msg = ac.messages.create(model=key, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert msg.content[0].text == "Hello there."


def test_proxy_counters_reach_the_daemon_and_survive_a_proxy_restart(daemon_factory: Any, fake: FakeUpstream) -> None:
    mport, pport = free_port(), free_port()
    d: DaemonProc = daemon_factory(f"""
network: {{enabled: false}}
daemon: {{watch_interval_seconds: 0.2}}
events: {{fsync_interval_seconds: 0.2}}
metrics: {{enabled: true, listen: "127.0.0.1:{mport}"}}
proxy:
  mode: embedded
  listen: 127.0.0.1:{pport}
  providers:
    anthropic: {{base_url: "{fake.url}"}}
mcp:
  denied_tools:
    - {{server: "*", tool: write_file}}
""")
    comp = wait_proxy_ready(d)
    register_fs_tools(d)
    wait_snapshot_has(d)
    before = scrape(mport)
    msg = ask(pport, fake, "metrics-deny", "write_file")  # streamed; the tool call is replaced
    assert not [b for b in msg.content if b.type == "tool_use"]
    say(pport, fake, "metrics-text")

    def reported(n: int) -> Samples | None:
        m = scrape(mport)
        return m if val(m, "agentsh_proxy_requests_total") == n else None

    m = wait_for(lambda: reported(2), 15, what="proxy report with 2 requests")
    assert val(m, "agentsh_proxy_streams_total") == 1
    assert val(m, "agentsh_proxy_tool_calls_total") == 1
    assert val(m, "agentsh_proxy_tool_calls_blocked_total") == 1
    assert val(m, "agentsh_proxy_errors_total") == 0
    assert val(m, "agentsh_proxy_added_latency_seconds_count") == 2
    assert val(m, "agentsh_proxy_request_duration_seconds_count") == 2
    assert val(m, "agentsh_proxy_added_latency_seconds_bucket", le="+Inf") == 2
    added, total = val(m, "agentsh_proxy_added_latency_seconds_sum"), val(m, "agentsh_proxy_request_duration_seconds_sum")
    assert 0 < added < total  # the proxy's own hold time is part of the whole
    # the daemon decided the proxy's tool call
    assert delta(before, m, "agentsh_decisions_total") == {labels(layer="proxy", action="block", reason="tool_denied"): 1}
    assert val(m, "agentsh_component_up", component="llm-proxy") == 1

    # the proxy dies: its counters are kept, the new process adds to them
    os.kill(comp["pid"], signal.SIGKILL)
    wait_for(lambda: (c := wait_proxy_ready(d)) and c["pid"] != comp["pid"], 30, what="proxy restarted")
    say(pport, fake, "metrics-after")
    m2 = wait_for(lambda: reported(3), 15, what="proxy report with 3 requests")
    assert val(m2, "agentsh_proxy_tool_calls_blocked_total") == 1
    assert val(m2, "agentsh_proxy_added_latency_seconds_count") == 3
    assert val(m2, "agentsh_component_restarts_total", component="llm-proxy") == 1
    assert not [v for v in label_values(m2) for name in TOOL_NAMES if name in v]


# --------------------------------------------------------------------------- health


def test_health_endpoints_say_degraded_with_the_reasons_status_gives(daemon_factory: Any) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(metrics_policy(port))
    st = status(d)
    assert not st["healthy"] and st["metrics"]["listening"]
    reasons = st["degraded_reasons"]
    assert any("BPF network layer disabled" in r for r in reasons)
    assert any("LLM proxy disabled" in r for r in reasons)
    assert healthz(port) == (503, {"healthy": False, "degraded_reasons": reasons})
    for sock in (d.socket, d.admin_socket):  # read-only: both sockets
        assert api_get(sock, "/v1/health") == (503, {"healthy": False, "degraded_reasons": reasons})
    m = scrape(port)
    assert val(m, "agentsh_healthy") == 0 and val(m, "agentsh_degraded_reasons") == len(reasons)


def test_a_metrics_port_in_use_is_one_degraded_reason_and_is_retried_on_reload(daemon_factory: Any) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        d: DaemonProc = daemon_factory(metrics_policy(port))
        st = status(d)
        why = f"metrics listener cannot listen on 127.0.0.1:{port}: Address already in use"
        assert why in st["degraded_reasons"]
        assert st["metrics"] == {**st["metrics"], "enabled": True, "listening": False, "error": why}
        assert api_get(d.socket, "/v1/health")[1]["degraded_reasons"].count(why) == 1
        assert "Traceback" not in d.log()
    finally:
        holder.close()
    # the port is free: the next reload (a changed policy) takes it
    d.write_policy(metrics_policy(port, "mcp: {fail_closed: false}"))
    asyncio.run(_reload(d))
    assert wait_for(lambda: status(d)["metrics"]["listening"], 10, what="metrics listener up")
    assert why not in status(d)["degraded_reasons"]
    assert healthz(port)[0] == 503  # BPF and proxy are still off


async def _reload(d: DaemonProc) -> None:
    async with ControlClient(str(d.admin_socket)) as admin:
        assert (await admin.post("/v1/policy/reload"))["ok"]


@pytest.fixture
def place() -> Iterator[tuple[str, str]]:
    """A child cgroup of the test's own for the BPF layer, and a pin dir (detached at the end)."""
    from netns import child_cgroup

    from agentsh.agent.netmon.programs import detach_all

    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        yield cgdir, pin
        detach_all(pin, cgdir)


@pytest.mark.bpf
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_health_is_200_when_every_layer_enforces_and_selftest_moves_every_layer(
    place: tuple[str, str], daemon_factory: Any
) -> None:
    cgdir, pin = place
    mport = free_port()
    d: DaemonProc = daemon_factory(f"""
daemon: {{watch_interval_seconds: 0.2}}
proxy: {{mode: embedded, listen: "127.0.0.1:{free_port()}"}}
metrics: {{enabled: true, listen: "127.0.0.1:{mport}"}}
network:
  enabled: true
  cgroup_path: {cgdir}
  pin_dir: {pin}
  discovery: false
""")
    st = wait_for(lambda: (s := status(d))["healthy"] and s, 60, what="healthy daemon")
    assert st["degraded_reasons"] == []
    assert healthz(mport) == (200, {"healthy": True})
    for sock in (d.socket, d.admin_socket):
        assert api_get(sock, "/v1/health") == (200, {"healthy": True})
    before = scrape(mport)
    assert val(before, "agentsh_healthy") == 1 and val(before, "agentsh_bpf_active") == 1
    assert val(before, "agentsh_component_up", component="llm-proxy") == 1

    r = d.ctl("selftest", "--json", "--wait", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    after = scrape(mport)
    # the canaries were refused by every layer, each counted once where it was decided
    moved = delta(before, after, "agentsh_decisions_total")
    assert {k: v for k, v in moved.items() if dict(k)["reason"] == "selftest"} == {
        labels(layer="shim", action="block", reason="selftest"): 1,
        labels(layer="proxy", action="block", reason="selftest"): 2,
        labels(layer="hook", action="block", reason="selftest"): 1,
    }
    # the kernel's counters are read about once a second
    wait_for(lambda: delta(before, scrape(mport), "agentsh_bpf_blocked_total") == {(): 1}, 10, what="bpf blocked +1")
    assert val(scrape(mport), "agentsh_bpf_events_seen_total") > val(before, "agentsh_bpf_events_seen_total")
    hooks = delta(before, after, "agentsh_hook_evaluations_total")
    assert sum(v for k, v in hooks.items() if dict(k)["decision"] == "deny") >= 2
    assert val(after, "agentsh_bpf_events_lost_total", ring="events") == 0
    assert not [v for v in label_values(after) if "agentsh-selftest" in v]
