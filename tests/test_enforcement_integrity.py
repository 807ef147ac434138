"""Every enforcement point reaches the pipeline, or everyone knows (issue:
enforcement integrity §1). The real agentshd runs its real LLM proxy child
against a local stand-in upstream; the official anthropic SDK is the client.

The machine has no `agentsh` user or group (as under `make run` on a fresh
host): the proxy drops to `nobody`, which cannot open the root-owned sockets,
and must still decide every tool call through the channel its parent handed
it at spawn.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import psutil
import pytest
from fake_llm_upstream import FakeUpstream, Scenario, tool

from agentsh.agent.core.client_async import ControlClient
from tests.conftest import DaemonProc, wait_for


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proxy_policy(fake: FakeUpstream, port: int, extra: str = "") -> str:
    return f"""
network: {{enabled: false}}
daemon: {{watch_interval_seconds: 0.2}}
events: {{fsync_interval_seconds: 0.2}}
proxy:
  mode: embedded
  listen: 127.0.0.1:{port}
  providers:
    anthropic: {{base_url: "{fake.url}"}}
    openai: {{base_url: "{fake.url}"}}
mcp:
  denied_tools:
    - {{server: "*", tool: write_file}}
{extra}"""


def status(d: DaemonProc) -> dict[str, Any]:
    return json.loads(d.ctl("status", "--json").stdout)


def proxy_component(d: DaemonProc) -> dict[str, Any] | None:
    return next((c for c in status(d)["components"] if c["name"] == "llm-proxy"), None)


def wait_proxy_ready(d: DaemonProc, timeout: float = 30) -> dict[str, Any]:
    return wait_for(  # type: ignore[no-any-return]
        lambda: (c := proxy_component(d)) is not None and c["state"] == "running" and c["ready"] and c, timeout,
        what="llm-proxy ready",
    )


def register_fs_tools(d: DaemonProc) -> None:
    async def go() -> None:
        async with ControlClient(str(d.socket)) as c:
            await c.post("/v1/mcp/tools", {"server_id": "fs", "tools": [
                {"name": "write_file", "description": "Writes a file."},
                {"name": "read_file", "description": "Reads a file."},
            ]})

    asyncio.run(go())


def wait_snapshot_has(d: DaemonProc, timeout: float = 15) -> None:
    """The proxy polls the decision snapshot once a second: wait until it has ours."""
    def fresh() -> bool:
        c = proxy_component(d)
        rep = (c or {}).get("report") or {}
        return bool(rep.get("snapshot_version")) and not rep["snapshot_version"].startswith("0:")
    wait_for(fresh, timeout, what="proxy snapshot")


def ask(port: int, fake: FakeUpstream, key: str, name: str) -> anthropic.types.Message:
    fake.add(key, Scenario([tool(name, f"toolu_{key}", {"path": "/etc/x"})]))
    ac = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0, timeout=30)
    with ac.messages.stream(model=key, max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
        return s.get_final_message()


def test_proxy_without_an_agentsh_group_decides_through_the_channel_it_was_handed(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(proxy_policy(fake, port))
    comp = wait_proxy_ready(d)
    assert 0 not in psutil.Process(comp["pid"]).uids()  # dropped root, to nobody
    register_fs_tools(d)
    wait_snapshot_has(d)
    msg = ask(port, fake, "deny1", "write_file")
    assert msg.content[0].type == "text" and "blocked by policy: tool denied" in msg.content[0].text
    allowed = ask(port, fake, "allow1", "read_file")
    assert allowed.content[0].type == "tool_use" and allowed.content[0].name == "read_file"
    ev = d.wait_event("mcp_tool_call_intercepted", lambda e: e["tool_name"] == "write_file")
    assert ev["action"] == "block" and ev["reason"] == "tool denied"
    # the proxy reports over the same channel; nothing about it is degraded
    st = status(d)
    assert not [r for r in st["degraded_reasons"] if r.startswith("llm-proxy")], st["degraded_reasons"]


def test_stopped_daemon_the_proxy_blocks_from_its_snapshot_and_status_says_so(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(proxy_policy(fake, port))
    wait_proxy_ready(d)
    register_fs_tools(d)
    wait_snapshot_has(d)
    assert d.proc is not None
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        msg = ask(port, fake, "deny2", "write_file")
        allowed = ask(port, fake, "allow2", "read_file")
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    assert msg.content[0].type == "text"
    assert "tool denied (decided offline: agentshd unavailable)" in msg.content[0].text
    assert allowed.content[0].type == "tool_use"
    # the offline decision reaches the log once the daemon answers again
    ev = d.wait_event("mcp_tool_call_intercepted", lambda e: e["tool_name"] == "write_file")
    assert ev["source"] == "proxy" and ev["action"] == "block" and "decided offline" in ev["reason"]
    reasons = wait_for(
        lambda: [r for r in status(d)["degraded_reasons"] if "offline" in r], 15, what="offline reported"
    )
    assert any(r.startswith("llm-proxy") for r in reasons), reasons


def test_port_in_use_is_a_one_line_failure_in_status_not_a_crash_loop(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    port = free_port()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))
    blocker.listen(1)
    try:
        d: DaemonProc = daemon_factory(proxy_policy(fake, port))
        comp = wait_for(lambda: (c := proxy_component(d)) and c["state"] == "failed" and c, 30, what="proxy failed")
        assert comp["error"] == f"cannot listen on 127.0.0.1:{port}: Address already in use"
        st = status(d)
        assert f"llm-proxy failed: cannot listen on 127.0.0.1:{port}: Address already in use" in st["degraded_reasons"]
        time.sleep(2)
        assert proxy_component(d)["restarts"] == 0  # type: ignore[index]  # no crash loop
        assert "Traceback" not in d.log()
    finally:
        blocker.close()


def test_kill_9_of_the_daemon_takes_the_proxy_along_and_a_new_daemon_serves_the_port(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(proxy_policy(fake, port))
    first = wait_proxy_ready(d)
    assert d.proc is not None
    d.proc.kill()
    d.proc.wait()
    wait_for(lambda: not psutil.pid_exists(first["pid"]) or psutil.Process(first["pid"]).status() == "zombie",
             15, what="proxy died with its daemon")
    d.start()
    second = wait_proxy_ready(d)
    assert second["pid"] != first["pid"] and second["restarts"] == 0
    register_fs_tools(d)
    wait_snapshot_has(d)
    assert ask(port, fake, "deny3", "write_file").content[0].type == "text"


def test_a_new_daemon_ends_an_orphaned_proxy_it_can_identify_as_its_own(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(proxy_policy(fake, port), start=False)
    d.state_dir.mkdir(parents=True, exist_ok=True)
    # An orphan of an older daemon: holds the port, parent gone (reparented to init).
    code = (
        "import os,socket,sys,time\n"
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        f"s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{port})); s.listen(1)\n"
        "print(os.getpid(), flush=True)\n"
        "n=os.open(os.devnull, os.O_WRONLY); os.dup2(n, 1); os.dup2(n, 2)\n"
        "time.sleep(120)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "-m", "agentsh.proxy", "--state-dir", str(d.state_dir)],
        capture_output=True, text=True, timeout=10,
    )
    orphan = int(out.stdout.split()[0])
    wait_for(lambda: psutil.Process(orphan).ppid() == 1, 5, what="orphaned")
    d.start()
    comp = wait_proxy_ready(d)
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == "zombie"
    assert comp["restarts"] == 0
    assert "stale LLM proxy" in d.log()


def test_a_restarting_proxy_is_degraded_with_its_cause_and_never_reported_as_stopped_none(
    daemon_factory: Any, fake: FakeUpstream
) -> None:
    d: DaemonProc = daemon_factory(proxy_policy(fake, free_port()))
    first = wait_proxy_ready(d)
    os.kill(first["pid"], signal.SIGKILL)
    seen: list[tuple[int, list[str], str]] = []

    def back() -> bool:
        r = d.ctl("status")
        st = status(d)
        seen.append((r.returncode, [x for x in st["degraded_reasons"] if x.startswith("llm-proxy")], r.stdout))
        c = proxy_component(d)
        return bool(c and c["state"] == "running" and c["ready"] and c["pid"] != first["pid"])

    wait_for(back, 60, interval=0.1, what="llm-proxy restarted")
    not_ready = [s for s in seen if s[1]]
    assert not_ready, "the restart was never visible in status"
    for code, reasons, text in not_ready:
        assert code == 1, text  # degraded while the proxy is not serving
        assert all(
            r.startswith(("llm-proxy restarting after it exited (", "llm-proxy starting")) for r in reasons
        ), reasons
        assert "None" not in text and "stopped (" not in text, text
    assert any("SIGKILL" in r or "exited" in r for _, rs, _ in not_ready for r in rs)
