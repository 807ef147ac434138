"""Decision pipeline latency: in-process vs over the daemon's sockets, and what
Prometheus metrics cost on that path.

The issue's claim to check: a remote client (shim, proxy) gets a decision over
the control socket "in well under a millisecond". One run measures, side by
side: a dict lookup (floor), the in-process DecisionEngine (which counts each
decision by layer/action/reason class for /metrics: one dict increment), and
decisions to two real agentshd over their decision channel (the only
decision transport), from the asyncio client (the LLM proxy's) and the
blocking one (the shim's relay threads), one with ``metrics.enabled: false`` and one with ``metrics.enabled:
true`` scraped every 100 ms during the run (150 times more often than a
usual 15 s scrape interval). The two daemons are measured in alternating
rounds so that other load on a shared machine falls on both alike.

    .venv/bin/python bench/decision.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from agentsh.agent.core.client_async import ChannelClient, ControlClient, channel_path
from agentsh.agent.core.client_sync import SyncChannelClient
from agentsh.agent.core.mcp.decision import DecisionEngine
from agentsh.agent.core.mcp.registry import ToolRegistry
from agentsh.agent.core.mcp.types import DecisionRequest
from agentsh.agent.core.policy.schema import Policy

N = 20_000
N_SOCKET = 1_000
ROUNDS = 3
SCRAPE_EVERY = 0.1
TOOLS = [{"name": f"tool{i}", "description": "Reads a thing.", "inputSchema": {"type": "object"}} for i in range(20)]
BODY = {"tool_name": "tool4", "server_id": "srv3", "source": "shim", "arguments": {"path": "/tmp/x"}, "jsonrpc_id": 1}


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
    counts: dict[tuple[str, str, str], int] = {}
    key = ("shim", "allow", "allow")

    def count() -> None:  # what _apply adds per decision for /metrics
        counts[key] = counts.get(key, 0) + 1

    return {
        "baseline dict.get": timed(lambda: {"tool_name": "x"}.get("tool_name"), N),
        "metrics: the per-decision count alone": timed(count, N),
        "in-process shim decision": timed(lambda: (eng.decide(req), sink.clear()), N),
        "in-process proxy decision": timed(lambda: (eng.decide(proxy_req), sink.clear()), N),
    }


class Daemon:
    def __init__(self, name: str, metrics_port: int | None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"ashb{name}", dir="/tmp"))
        (self.root / "etc").mkdir()
        pol = "network: {enabled: false}\nproxy: {mode: disabled}\n"
        if metrics_port is not None:
            pol += f"metrics: {{enabled: true, listen: '127.0.0.1:{metrics_port}'}}\n"
        (self.root / "etc/agentsh.yaml").write_text(pol)
        self.sock = str(self.root / "s.sock")
        bindir = Path(sys.executable).parent
        self.proc = subprocess.Popen(
            [str(bindir / "agentshd"), "--config-dir", str(self.root / "etc"), "--socket", self.sock,
             "--state-dir", str(self.root / "lib"), "--events", str(self.root / "events.jsonl")],
            stderr=subprocess.DEVNULL,
        )
        self.chan: ChannelClient | None = None
        self.sync: SyncChannelClient | None = None

    async def setup(self) -> None:
        for _ in range(300):
            if os.path.exists(self.sock):
                break
            await asyncio.sleep(0.05)
        async with ControlClient(self.sock) as http:
            await http.post("/v1/mcp/tools", {"server_id": "srv3", "server_type": "stdio", "tools": TOOLS})
        self.chan = ChannelClient(channel_path(self.sock))
        self.sync = SyncChannelClient(self.sock)
        for _ in range(200):
            await self.chan.decide(BODY)
            self.sync.decide(BODY)

    async def round(self, chan: list[int], sync: list[int]) -> None:
        assert self.chan is not None and self.sync is not None
        for _ in range(N_SOCKET):
            t = time.perf_counter_ns()
            await self.chan.decide(BODY)
            chan.append(time.perf_counter_ns() - t)
        for _ in range(N_SOCKET):
            t = time.perf_counter_ns()
            self.sync.decide(BODY)
            sync.append(time.perf_counter_ns() - t)

    async def close(self) -> None:
        if self.chan is not None:
            await self.chan.close()
        if self.sync is not None:
            self.sync.close()
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def scraper(port: int, stop: threading.Event, done: list[int]) -> None:
    while not stop.is_set():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            body = r.read()
        assert b"agentsh_decisions_total" in body
        done.append(1)
        stop.wait(SCRAPE_EVERY)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def over_sockets() -> tuple[dict[str, tuple[float, float]], int]:
    port = free_port()
    off, on = Daemon("off", None), Daemon("on", port)
    stop, scrapes = threading.Event(), []
    try:
        await off.setup()
        await on.setup()
        th = threading.Thread(target=scraper, args=(port, stop, scrapes), daemon=True)
        th.start()
        res: dict[str, tuple[list[int], list[int]]] = {"off": ([], []), "on": ([], [])}
        for _ in range(ROUNDS):
            await off.round(*res["off"])
            await on.round(*res["on"])
        stop.set()
        th.join()
    finally:
        await off.close()
        await on.close()
    return {
        "decision channel, metrics off": pct(res["off"][0]),
        "decision channel, metrics on + scraping": pct(res["on"][0]),
        "blocking channel client, metrics off": pct(res["off"][1]),
        "blocking channel client, metrics on + scraping": pct(res["on"][1]),
    }, len(scrapes)


def main() -> None:
    res = in_process()
    sock_res, scrapes = asyncio.run(over_sockets())
    res.update(sock_res)
    base = res["baseline dict.get"][0]
    print(f"decision latency ({os.cpu_count()} cpus), p50 / p99 in microseconds")
    print(f"{'case':48s} {'p50':>9s} {'p99':>9s}  {'p50 vs dict.get':>16s}")
    for k, (p50, p99) in res.items():
        print(f"{k:48s} {p50:9.2f} {p99:9.2f}  {p50 / base:15.0f}x")
    chan_p50 = res["decision channel, metrics off"][0]
    print(f"\nover the decision channel the decision itself is {res['in-process shim decision'][0] / chan_p50:.1%} of the round trip;"
          f" target 'well under 1 ms': p50 {chan_p50:.0f} us -> {'OK' if chan_p50 < 1000 else 'MISSED'}")
    for what in ("decision channel", "blocking channel client"):
        (a50, a99), (b50, b99) = res[f"{what}, metrics off"], res[f"{what}, metrics on + scraping"]
        print(f"metrics on / off, {what}: p50 {b50 / a50:.2f}x, p99 {b99 / a99:.2f}x ({scrapes} scrapes during the run)")
    cnt = res["metrics: the per-decision count alone"][0]
    print(f"the count each decision makes for /metrics: {cnt:.2f} us, "
          f"{cnt / res['in-process shim decision'][0]:.1%} of an in-process decision")


if __name__ == "__main__":
    main()
