"""Network MCP discovery against a real MCP server (the `mcp` SDK, streamable HTTP
and SSE) and TLS certificate pinning that blocks a mismatching server in the kernel."""

from __future__ import annotations

import asyncio
import hashlib
import os
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from netns import CgroupClient, child_cgroup, free_port

from agentsh.agent.core.events.models import Event, MCPServerDiscovered
from agentsh.agent.core.mcp.service import MCPService
from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.netmon.discovery import fetch_cert_fingerprint
from agentsh.agent.netmon.monitor import NetworkMonitor, detach_all

SERVER = textwrap.dedent(
    """
    import sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("weather")

    @app.tool()
    def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return "sunny"

    @app.tool()
    def get_forecast(city: str, days: int = 3) -> str:
        \"\"\"Forecast for the next days.\"\"\"
        return "rain"

    transport, port = sys.argv[1], int(sys.argv[2])
    app.run(transport, host="127.0.0.1", port=port)
    """
)


def _serve(transport: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    p = subprocess.Popen(
        [sys.executable, "-c", SERVER, transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    import socket

    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p, port
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("MCP server did not start")


class Events:
    def __init__(self) -> None:
        self.items: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, ev: Event) -> bool:
        with self.lock:
            self.items.append(ev)
        return True

    def discovered(self, sid: str) -> list[MCPServerDiscovered]:
        with self.lock:
            return [e for e in self.items if isinstance(e, MCPServerDiscovered) and e.server_id == sid]


@pytest.fixture(scope="module")
def servers():
    http, hport = _serve("streamable-http")
    sse, sport = _serve("sse")
    yield hport, sport
    for p in (http, sse):
        p.kill()
        p.wait()


async def _wait(cond: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.bpf
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
async def test_http_and_sse_mcp_servers_are_discovered_and_tools_registered(
    servers: tuple[int, int], tmp_path: Path
) -> None:
    hport, sport = servers
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        pol = Policy.model_validate(
            {
                "mcp": {
                    "servers": [
                        {"id": "weather-http", "type": "http", "url": f"http://127.0.0.1:{hport}/mcp"},
                        {"id": "weather-sse", "type": "sse", "url": f"http://127.0.0.1:{sport}/sse"},
                    ]
                },
                "network": {"cgroup_path": cgdir, "pin_dir": pin, "discovery_interval_seconds": 600},
            }
        )
        events = Events()
        svc = MCPService(pol, tmp_path, events)
        mon = NetworkMonitor(pol, events, tmp_path, mcp=svc, report_existing=False)
        try:
            await mon.start()
            assert mon.status()["state"] == "active", mon.status()
            ok = await _wait(lambda: events.discovered("weather-http") and events.discovered("weather-sse"))
            assert ok, mon.status()["discovery"]
            for sid, port in (("weather-http", hport), ("weather-sse", sport)):
                d = events.discovered(sid)[0]
                assert d.error is None and d.tools == 2 and d.server_addr == f"127.0.0.1:{port}"
                names = {t["tool_name"] for t in svc.list(sid)}
                assert names == {"get_weather", "get_forecast"}
            assert svc.server_addrs() == {
                f"127.0.0.1:{hport}": "weather-http",
                f"127.0.0.1:{sport}": "weather-sse",
            }
            st = mon.status()["discovery"]
            assert st["weather-http"]["tools"] == 2 and st["weather-sse"]["server_type"] == "sse"
        finally:
            await mon.stop(detach=True)
            svc.close()
            detach_all(pin, cgdir)


def _self_signed(tmp: Path) -> tuple[Path, Path, str]:
    key, crt = tmp / "k.pem", tmp / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(crt), "-days", "1", "-subj", "/CN=127.0.0.31"],
        check=True, capture_output=True,
    )
    der = ssl.PEM_cert_to_DER_cert(crt.read_text())
    return key, crt, hashlib.sha256(der).hexdigest()


@pytest.mark.bpf
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
async def test_tls_fingerprint_mismatch_blocks_the_server_in_the_kernel(tmp_path: Path) -> None:
    key, crt, fp = _self_signed(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.31", 0, ssl=ctx)
    port = srv.sockets[0].getsockname()[1]
    assert await fetch_cert_fingerprint("127.0.0.31", port) == fp
    wrong = "sha256:" + "ab" * 32
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        pol = Policy.model_validate(
            {
                "mcp": {"servers": [
                    {"id": "pinned", "type": "http", "url": f"https://127.0.0.31:{port}/mcp",
                     "tls_fingerprint": wrong},
                ]},
                "network": {"cgroup_path": cgdir, "pin_dir": pin},
            }
        )
        events = Events()
        svc = MCPService(pol, tmp_path, events)
        mon = NetworkMonitor(pol, events, tmp_path, mcp=svc, report_existing=False)
        try:
            await mon.start()
            assert await _wait(lambda: "pinned" in mon.status()["tls_blocked"])
            d = await asyncio.to_thread(lambda: None) or events.discovered("pinned")
            assert d and d[0].tls_fingerprint_ok is False and "does not match" in (d[0].error or "")
            assert "pinned" in mon.status()["blocked_servers"]
            with CgroupClient(cgdir) as c:
                assert await asyncio.to_thread(c.tcp, "127.0.0.31", port) == "EPERM"
            # the right pin unblocks it (policy reload)
            good = pol.model_copy(deep=True)
            good.mcp.servers[0].tls_fingerprint = "sha256:" + fp
            await mon.update_policy(good)
            assert await _wait(lambda: "pinned" not in mon.status()["tls_blocked"])
            with CgroupClient(cgdir) as c:
                assert await asyncio.to_thread(c.tcp, "127.0.0.31", port) == "ok"
        finally:
            await mon.stop(detach=True)
            svc.close()
            detach_all(pin, cgdir)
            srv.close()
