"""Benchmark: the LLM proxy against a direct connection to a local upstream.

One run, three processes (upstream, proxy without policy, proxy with policy)
plus this client, all on loopback:

* non-streaming latency p50/p99 and requests/s at concurrency 1 and 64, and
  the proxy's CPU time per request (a figure other load on the machine does
  not skew, unlike requests/s on a shared box);
* SSE time to first byte and total time for a 2,000-event stream, direct,
  through the proxy with no policy (empty registry: plain copy) and with a
  policy (registry has tools, the stream carries a tool call that is held
  until complete and decided; its text events pass unparsed), and the
  proxy's CPU time per stream for both.

* requests that carry tool results (an Anthropic conversation after three
  tool calls, ~9 KB, a new tool_use_id each request as in an agent loop):
  the proxy parses them and hands each new result to the flow engine as a
  data origin (docs/flow.md "Proxy-only mode"); with a text answer, and with
  a tool call answer that is then flow-checked against a session of 10,000
  index entries (the decision in-process, as in the rows above).

Both proxies run as installed by default, data-flow step included (records
are serialised as for the channel; the daemon's side of a record is another
process: its cost is in bench/flow.py). Prints the figures and the ratios
against the targets (added p50 <= 1 ms and p99 <= 3 ms at c=1; SSE TTFB
within 1 ms of direct; proxy throughput >= 50% of direct at c=64; these are
for requests without tool results). Usage: ``.venv/bin/python bench/proxy.py
[--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

SMALL_BODY = b'{"model":"small","max_tokens":64,"messages":[{"role":"user","content":"Say hi."}]}'
SSE_BODY = b'{"model":"sse2000","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Go."}]}'
SSE_TOOL_BODY = b'{"model":"sse2000tool","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Go."}]}'
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-bench"}
TOOLRES_MSGS = [
    {"role": "user", "content": "Fix the failing test."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_b1", "name": "Read", "input": {"file_path": "/proj/app.py"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_b1", "content": "\n".join(f"{n:6}\tdef handler_{n}(request):  # route {n}" for n in range(80))}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_b2", "name": "Bash", "input": {"command": "pytest -q tests/test_app.py", "description": "run"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_b2", "content": "F.. [100%]\nFAILED tests/test_app.py::test_route - AssertionError: 404 != 200\n" * 12}]},
]
TOOLS = [{"name": "get_weather", "description": "Weather for a city.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


# ------------------------------------------------------------------ child processes


def serve_upstream(port_file: str) -> None:
    from fake_llm_upstream import FakeUpstream, Scenario, text, tool

    async def main() -> None:
        f = FakeUpstream()
        f.add("small", Scenario([text("Hi! How can I help you today?")]))
        f.add("sse2000", Scenario([text("x" * 2000)], split_text=1, pace=True, pause_after_first=0.02))
        f.add("sse2000tool", Scenario([text("x" * 1990), tool("get_weather", "toolu_bench", {"city": "Paris"})], split_text=1, pace=True, pause_after_first=0.02))
        f.add("flowtool", Scenario([tool("WebFetch", "toolu_fetch", {"url": "https://docs.example.com/api?q=pagination", "prompt": "summarise"})]))
        f.requests = _Discard()  # do not keep 100k request records
        await f.start()
        Path(port_file).write_text(str(f.port))
        await asyncio.Event().wait()

    asyncio.run(main())


class _Discard(list):  # type: ignore[type-arg]
    def append(self, _: Any) -> None:
        pass


def toolres_body(n: int, model: str = "small") -> bytes:
    """The conversation after three tool calls; the last one's id is new each request."""
    import orjson

    msgs = [*TOOLRES_MSGS,
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_g{n}", "name": "Grep", "input": {"pattern": "route 42"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_g{n}", "content": f"app.py:42: def handler_42(request):  # match {n}"}]}]
    return orjson.dumps({"model": model, "max_tokens": 64, "messages": msgs})


def serve_proxy(port_file: str, upstream: str, with_policy: bool) -> None:
    import orjson

    from agentsh.agent.core.flow import FlowEngine
    from agentsh.agent.core.mcp.service import MCPService
    from agentsh.agent.core.policy.schema import Policy
    from agentsh.proxy.decider import LocalDecider, NameGate
    from agentsh.proxy.flow_feed import FlowFeed, session_key
    from agentsh.proxy.server import ProxyServer

    class NullSink:
        def emit(self, ev: dict[str, Any]) -> None:
            pass

    class ChannelShapedSink:
        """The proxy's side of a record: the line the channel client writes."""

        async def record(self, msg: dict[str, Any]) -> dict[str, Any]:
            orjson.dumps({**msg, "op": "flow_record", "id": 1})
            return {"recorded": True}

    async def main() -> None:
        state = tempfile.mkdtemp(prefix="agentsh-bench-")
        pol = Policy.model_validate(
            {
                "daemon": {"state_dir": state},
                "proxy": {"providers": {"anthropic": {"base_url": upstream}, "openai": {"base_url": upstream}}},
                "mcp": {"inspection": {"registry": {"persistent": False}}},
            }
        )
        engine = FlowEngine(pol)
        # the session of the benchmark's API key holds ~10,000 index entries (the default budget)
        key = session_key({"x-api-key": HEADERS["x-api-key"]})
        i = 0
        while engine.stats()["index_entries"] < 9_900:
            engine.record(key, "Read", None, f"file {i}: " + " ".join(f"w{i}x{k}" for k in range(40)) + f"\nTOKEN_{i}=tok{i * 7919:x}z{i}",
                          arguments={"file_path": f"/proj/f{i}.txt"})
            i += 1
        svc = MCPService(pol, state, lambda ev: True, flow=engine)
        if with_policy:
            svc.register_tools("weather", "stdio", None, TOOLS)
            gate = NameGate(frozenset(["get_weather", "weather"]), False)
        else:
            gate = NameGate(frozenset(), False)  # empty registry: nothing can be blocked
        feed = FlowFeed(pol, ChannelShapedSink())
        srv = ProxyServer(pol, decider=LocalDecider(svc), gate=gate, sink=NullSink(), state_dir=state, flow=feed)
        port = await srv.start()
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


def spawn(*args: str) -> tuple[subprocess.Popen[bytes], int]:
    fd, pf = tempfile.mkstemp()
    os.close(fd)
    os.unlink(pf)
    p = subprocess.Popen([sys.executable, __file__, *args, pf])
    deadline = time.monotonic() + 20
    while not os.path.exists(pf) or not Path(pf).read_text():
        if time.monotonic() > deadline or p.poll() is not None:
            raise SystemExit(f"child {args} did not start")
        time.sleep(0.05)
    time.sleep(0.05)
    port = int(Path(pf).read_text())
    os.unlink(pf)
    return p, port


# ------------------------------------------------------------------ measurements


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def latency_c1(session: Any, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        async with session.post(url, data=SMALL_BODY, headers=HEADERS) as r:
            await r.read()
        out.append((time.perf_counter() - t) * 1000)
    return out


_SEQ = [0]


async def latency_toolres(session: Any, url: str, n: int, model: str = "small") -> list[float]:
    """Requests carrying tool results (a new tool_use_id each, as in an agent loop)."""
    out = []
    for _ in range(n):
        _SEQ[0] += 1
        body = toolres_body(_SEQ[0], model)
        t = time.perf_counter()
        async with session.post(url, data=body, headers=HEADERS) as r:
            await r.read()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def throughput(session: Any, url: str, conc: int, total: int) -> float:
    left = total

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with session.post(url, data=SMALL_BODY, headers=HEADERS) as r:
                await r.read()

    t = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(conc)])
    return total / (time.perf_counter() - t)


def _sse_raw(port: int, body: bytes, sock: Any) -> tuple[float, float, int]:
    """One SSE request on a raw keep-alive socket: (TTFB of the body, total, body bytes).

    A raw client so that the figure is the proxy's, not an HTTP client library's.
    """
    req = (
        b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nanthropic-version: 2023-06-01\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )
    t = time.perf_counter()
    sock.sendall(req)
    data = b""
    ttfb = None
    while True:
        data += sock.recv(262144)
        if ttfb is None:
            _head, sep, rest = data.partition(b"\r\n\r\n")
            if sep and rest:
                ttfb = time.perf_counter() - t
        if data.endswith(b"\r\n0\r\n\r\n"):
            break
    total = time.perf_counter() - t
    return (ttfb or 0) * 1000, total * 1000, len(data.partition(b"\r\n\r\n")[2])


async def sse_once(session: Any, url: str, body: bytes) -> tuple[float, float, int]:
    import socket

    port = int(url.split(":")[2].split("/")[0])
    socks = _SOCKS.setdefault(port, [])
    if not socks:
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    return await asyncio.to_thread(_sse_raw, port, body, socks[0])


_SOCKS: dict[int, list[Any]] = {}


def _cpu_seconds(pid: int) -> float:
    """utime+stime of a child process (Linux /proc), for a figure other load does not skew."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def run(quick: bool) -> None:
    import aiohttp

    n1 = 600 if quick else 2000
    n64 = 3000 if quick else 8000
    nsse = 10 if quick else 30
    up, up_port = spawn("--serve-upstream")
    px, px_port = spawn("--serve-proxy", f"http://127.0.0.1:{up_port}", "0")
    pxp, pxp_port = spawn("--serve-proxy", f"http://127.0.0.1:{up_port}", "1")
    direct = f"http://127.0.0.1:{up_port}/v1/messages"
    proxied = f"http://127.0.0.1:{px_port}/v1/messages"
    policied = f"http://127.0.0.1:{pxp_port}/v1/messages"
    try:
        conn = aiohttp.TCPConnector(limit=128)
        async with aiohttp.ClientSession(connector=conn) as s:
            for u in (direct, proxied, policied):  # warm up pools and code paths
                await latency_c1(s, u, 50)
                await sse_once(s, u, SSE_BODY)
            # interleave direct/proxy rounds so machine noise hits both alike
            lat_d: list[float] = []
            lat_p: list[float] = []
            lat_pp: list[float] = []
            for _ in range(5):
                lat_d += await latency_c1(s, direct, n1 // 5)
                lat_p += await latency_c1(s, proxied, n1 // 5)
                lat_pp += await latency_c1(s, policied, n1 // 5)
            rps_d1 = 1000 / statistics.mean(lat_d)
            rps_p1 = 1000 / statistics.mean(lat_p)
            tp_d = tp_p = 0.0
            cpu_up = cpu_px = 0.0
            for _ in range(4):  # interleaved rounds: noise from other work hits both alike
                u0 = _cpu_seconds(up.pid)
                tp_d += await throughput(s, direct, 64, n64 // 4)
                u1, p0 = _cpu_seconds(up.pid), _cpu_seconds(px.pid)
                tp_p += await throughput(s, proxied, 64, n64 // 4)
                cpu_up += u1 - u0
                cpu_px += _cpu_seconds(px.pid) - p0
            tp_d /= 4
            tp_p /= 4
            sse: dict[str, list[tuple[float, float, int]]] = {"direct": [], "proxy": [], "direct+tool": [], "proxy+policy": []}
            sse_cpu = {"proxy": 0.0, "proxy+policy": 0.0}
            for _ in range(nsse):
                sse["direct"].append(await sse_once(s, direct, SSE_BODY))
                c0 = _cpu_seconds(px.pid)
                sse["proxy"].append(await sse_once(s, proxied, SSE_BODY))
                sse_cpu["proxy"] += _cpu_seconds(px.pid) - c0
                sse["direct+tool"].append(await sse_once(s, direct, SSE_TOOL_BODY))
                c0 = _cpu_seconds(pxp.pid)
                sse["proxy+policy"].append(await sse_once(s, policied, SSE_TOOL_BODY))
                sse_cpu["proxy+policy"] += _cpu_seconds(pxp.pid) - c0
            # requests with tool results (flow records), then answered by a tool call (flow check)
            ntr = n1 // 2
            tr: dict[str, list[float]] = {"direct": [], "proxy": [], "direct+call": [], "proxy+call": []}
            await latency_toolres(s, policied, 20)
            for _ in range(5):
                tr["direct"] += await latency_toolres(s, direct, ntr // 5)
                tr["proxy"] += await latency_toolres(s, policied, ntr // 5)
                tr["direct+call"] += await latency_toolres(s, direct, ntr // 5, "flowtool")
                tr["proxy+call"] += await latency_toolres(s, policied, ntr // 5, "flowtool")
    finally:
        for p in (up, px, pxp):
            p.terminate()
        for p in (up, px, pxp):
            p.wait(5)

    def row(name: str, xs: list[float]) -> str:
        return f"  {name:<28} p50 {pct(xs, 0.5):7.3f} ms   p99 {pct(xs, 0.99):7.3f} ms"

    print(f"agentsh LLM proxy benchmark (loopback, {os.cpu_count()} CPUs, python {sys.version.split()[0]})")
    print("proxy as installed by default: proxy.mode embedded, DLP redact on every request body; events to a null sink")
    print(f"non-streaming, concurrency 1 ({len(lat_d)} requests each):")
    print(row("direct", lat_d))
    print(row("proxy (no policy)", lat_p))
    print(row("proxy (policy, no tool call)", lat_pp))
    add50 = pct(lat_p, 0.5) - pct(lat_d, 0.5)
    add99 = pct(lat_p, 0.99) - pct(lat_d, 0.99)
    print(f"  added p50 {add50:.3f} ms (target <= 1)  added p99 {add99:.3f} ms (target <= 3)")
    print(f"  requests/s c=1: direct {rps_d1:8.0f}  proxy {rps_p1:8.0f}  ratio {rps_p1 / rps_d1:.2f}")
    print(f"non-streaming, concurrency 64 ({n64} requests each):")
    print(f"  requests/s: direct {tp_d:8.0f}  proxy {tp_p:8.0f}  ratio {tp_p / tp_d:.2f} (target >= 0.50)")
    per = 1e6 / (n64 // 4 * 4)
    print(
        f"  CPU per request (load-independent): proxy {cpu_px * per:.0f} us, upstream {cpu_up * per:.0f} us"
        " (the ratio above is bounded by the CPUs the client, upstream and proxy share)"
    )
    print(f"SSE, 2,000-event stream ({nsse} runs each; upstream pauses 20 ms after the first event):")
    for k, v in sse.items():
        tt = [x[0] for x in v]
        tot = [x[1] for x in v]
        print(f"  {k:<14} TTFB p50 {pct(tt, 0.5):7.3f} ms  total p50 {pct(tot, 0.5):8.2f} ms  bytes {v[0][2]}")
    d_tt = pct([x[0] for x in sse["direct"]], 0.5)
    for k, base in (("proxy", "direct"), ("proxy+policy", "direct+tool")):
        b_tt = pct([x[0] for x in sse[base]], 0.5)
        b_tot = pct([x[1] for x in sse[base]], 0.5)
        tt = pct([x[0] for x in sse[k]], 0.5)
        tot = pct([x[1] for x in sse[k]], 0.5)
        print(f"  {k:<14} TTFB +{tt - b_tt:.3f} ms vs {base} (target <= 1)  total ratio {tot / b_tot:.2f}")
    del d_tt
    print(
        f"  proxy CPU per stream (load-independent): plain copy {sse_cpu['proxy'] * 1000 / nsse:.2f} ms,"
        f" inspected (1,990 text events + a decided tool call) {sse_cpu['proxy+policy'] * 1000 / nsse:.2f} ms"
    )
    print(f"requests carrying tool results ({len(toolres_body(0))} B, 3 results, one new per request; {len(tr['proxy'])} each):")
    print(row("direct, text answer", tr["direct"]))
    print(row("proxy, text answer", tr["proxy"]))
    print(row("direct, tool call answer", tr["direct+call"]))
    print(row("proxy, tool call flow-checked", tr["proxy+call"]))
    for k, base in (("proxy", "direct"), ("proxy+call", "direct+call")):
        a50 = pct(tr[k], 0.5) - pct(tr[base], 0.5)
        a99 = pct(tr[k], 0.99) - pct(tr[base], 0.99)
        print(f"  {k:<12} added p50 {a50:.3f} ms  added p99 {a99:.3f} ms")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-upstream":
        serve_upstream(sys.argv[2])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-proxy":
        serve_proxy(sys.argv[4], sys.argv[2], sys.argv[3] == "1")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    asyncio.run(run(ap.parse_args().quick))


if __name__ == "__main__":
    main()
