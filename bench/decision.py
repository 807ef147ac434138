"""Decision pipeline latency: in-process vs over the control socket.

The issue's claim to check: a remote client (shim, proxy) gets a decision over
the control socket "in well under a millisecond". One run measures, side by
side: a dict lookup (floor), the in-process DecisionEngine, and POST
/v1/mcp/decide to a real agentshd over its Unix socket with a keep-alive client.

    .venv/bin/python bench/decision.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentsh.agent.client import ControlClient
from agentsh.agent.mcp.decision import DecisionEngine
from agentsh.agent.mcp.registry import ToolRegistry
from agentsh.agent.mcp.types import DecisionRequest
from agentsh.agent.policy.schema import Policy

N = 20_000
N_SOCKET = 3_000
TOOLS = [{"name": f"tool{i}", "description": "Reads a thing.", "inputSchema": {"type": "object"}} for i in range(20)]


def pct(ts: list[int]) -> tuple[float, float]:
    ts = sorted(ts)
    return ts[len(ts) // 2] / 1000, ts[int(len(ts) * 0.99)] / 1000


def timed(fn, n: int) -> tuple[float, float]:
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t)
    return pct(out)


def in_process() -> dict[str, tuple[float, float]]:
    pol = Policy.model_validate({"mcp": {"denied_tools": [{"server": "*", "tool": "delete_*"}]}})
    reg = ToolRegistry(None)
    for s in range(20):
        reg.register(f"srv{s}", "stdio", "", TOOLS)
    sink: list = []
    eng = DecisionEngine(reg, pol, lambda e: sink.append(e) or True)
    req = DecisionRequest("tool4", server_id="srv3", jsonrpc_id=1, arguments={"path": "/tmp/x"})
    proxy_req = DecisionRequest("mcp__srv3__tool4", source="proxy", dialect="anthropic",
                                request_id="r", tool_call_id="t", arguments={"a": 1})
    return {
        "baseline dict.get": timed(lambda: {"tool_name": "x"}.get("tool_name"), N),
        "in-process shim decision": timed(lambda: (eng.decide(req), sink.clear()), N),
        "in-process proxy decision": timed(lambda: (eng.decide(proxy_req), sink.clear()), N),
    }


async def over_socket(sock: str) -> dict[str, tuple[float, float]]:
    async with ControlClient(sock) as c:
        await c.post("/v1/mcp/tools", {"server_id": "srv3", "server_type": "stdio", "tools": TOOLS})
        body = {"tool_name": "tool4", "server_id": "srv3", "source": "shim", "arguments": {"path": "/tmp/x"}, "jsonrpc_id": 1}
        for _ in range(200):
            await c.post("/v1/mcp/decide", body)
        out = []
        for _ in range(N_SOCKET):
            t = time.perf_counter_ns()
            await c.post("/v1/mcp/decide", body)
            out.append(time.perf_counter_ns() - t)
        chan = []
        for _ in range(200):
            await c.decide(body)
        for _ in range(N_SOCKET):
            t = time.perf_counter_ns()
            await c.decide(body)
            chan.append(time.perf_counter_ns() - t)
        status = []
        for _ in range(N_SOCKET // 3):
            t = time.perf_counter_ns()
            await c.get("/v1/components")
            status.append(time.perf_counter_ns() - t)
    return {
        "decision channel (client.decide)": pct(chan),
        "HTTP: POST /v1/mcp/decide": pct(out),
        "HTTP: GET /v1/components (floor)": pct(status),
    }


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="ashb", dir="/tmp"))
    (root / "etc").mkdir()
    (root / "etc/agentsh.yaml").write_text("network: {enabled: false}\nproxy: {mode: disabled}\n")
    sock = root / "s.sock"
    bindir = Path(sys.executable).parent
    d = subprocess.Popen([str(bindir / "agentshd"), "--config-dir", str(root / "etc"), "--socket", str(sock),
                          "--state-dir", str(root / "lib"), "--events", str(root / "events.jsonl")],
                         stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if sock.exists():
                break
            time.sleep(0.05)
        res = in_process()
        res.update(asyncio.run(over_socket(str(sock))))
    finally:
        d.terminate()
        d.wait()
        shutil.rmtree(root, ignore_errors=True)
    base = res["baseline dict.get"][0]
    print(f"decision latency ({os.cpu_count()} cpus), p50 / p99 in microseconds")
    print(f"{'case':38s} {'p50':>9s} {'p99':>9s}  {'p50 vs dict.get':>16s}")
    for k, (p50, p99) in res.items():
        print(f"{k:38s} {p50:9.2f} {p99:9.2f}  {p50 / base:15.0f}x")
    sock_p50 = res["decision channel (client.decide)"][0]
    print(f"\nover the decision channel the decision itself is {res['in-process shim decision'][0] / sock_p50:.1%} of the round trip;"
          f" target 'well under 1 ms': p50 {sock_p50:.0f} us -> {'OK' if sock_p50 < 1000 else 'MISSED'}")


if __name__ == "__main__":
    main()
