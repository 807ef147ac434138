"""Benchmark: agentsh-shim vs the same server run directly (one run, same client).

The server is tests/mcp_servers/echo_server.py (raw JSON-RPC, cached replies,
never the bottleneck); the client writes requests to raw pipes and reads
replies up to the newline without parsing them. Each round keeps one direct
and one shim connection open and alternates blocks of 10 ping-pongs between
them (then pipelined runs, direct then shim), so machine noise hits both
alike. Printed:

- added latency per request/response pair (p50/p90/p99 of shim minus the
  direct percentile) for small requests that are not tools/call (pure relay),
  small tools/call (decided by the shim: locally with the daemon down, and by
  a real agentshd when it can be started), and 1 MB tools/call results;
- messages/s ping-pong and pipelined (window 8/64) with the shim/direct ratio.

Targets: p50 added latency <= 200 us (relay); 1 MB throughput >= 80% of direct.
Runs in well under 2 minutes.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHIM = os.environ.get("AGENTSH_BENCH_SHIM") or str(BIN / "agentsh-shim")
"""AGENTSH_BENCH_SHIM runs another build (e.g. a launcher for an older checkout) for before/after."""
AGENTSHD = str(BIN / "agentshd")
SERVER = [sys.executable, str(REPO / "tests" / "mcp_servers" / "echo_server.py")]
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
MB = 1024 * 1024
BLOCK = 10
"""Ping-pongs per turn when direct and shim alternate."""


class Conn:
    """A spawned process with big raw pipes; write a request, read one reply line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        in_r, self.w = os.pipe()
        self.r, out_w = os.pipe()
        for fd in (in_r, self.w, self.r, out_w):
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, MB)
            except OSError:
                pass
        self.proc = subprocess.Popen(argv, stdin=in_r, stdout=out_w, env=env)
        os.close(in_r)
        os.close(out_w)
        self.buf = bytearray()

    def send(self, data: bytes) -> None:
        mv = memoryview(data)
        while mv:
            mv = mv[os.write(self.w, mv):]

    def recv_line(self) -> int:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                del self.buf[: i + 1]
                return i + 1
            chunk = os.read(self.r, MB)
            if not chunk:
                raise EOFError("server closed")
            self.buf += chunk

    def close(self) -> int:
        os.close(self.w)
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        os.close(self.r)
        return rc


def req(i: int, method: str, params: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}\n' % (i, method.encode(), params.encode())


PING = lambda i: req(i, "ping", "{}")  # noqa: E731
CALL_SMALL = lambda i: req(i, "tools/call", '{"name":"echo","arguments":{"message":"hello"}}')  # noqa: E731
READ_1MB = lambda i: req(i, "resources/read", f'{{"uri":"bench://blob","size":{MB}}}')  # noqa: E731
CALL_1MB = lambda i: req(i, "tools/call", f'{{"name":"echo","arguments":{{"size":{MB}}}}}')  # noqa: E731


def handshake(c: Conn) -> None:
    c.send(req(0, "initialize", '{"protocolVersion":"2025-06-18","capabilities":{},'
                                '"clientInfo":{"name":"bench","version":"1"}}'))
    c.recv_line()
    c.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    c.send(req(1, "tools/list", "{}"))
    c.recv_line()


def pingpong(c: Conn, make: Callable[[int], bytes], n: int) -> list[float]:
    out = []
    for i in range(n):
        data = make(1000 + i)
        t0 = time.perf_counter_ns()
        c.send(data)
        c.recv_line()
        out.append((time.perf_counter_ns() - t0) / 1000.0)
    return out


def pipelined(c: Conn, make: Callable[[int], bytes], n: int, window: int) -> float:
    """Messages per second with ``window`` requests in flight."""
    t0 = time.perf_counter()
    sent = got = 0
    while got < n:
        while sent < n and sent - got < window:
            c.send(make(100000 + sent))
            sent += 1
        c.recv_line()
        got += 1
    return n / (time.perf_counter() - t0)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def start_daemon(root: Path) -> subprocess.Popen[bytes] | None:
    if not os.path.exists(AGENTSHD):
        return None
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "agentsh.yaml").write_text(
        "network:\n  enabled: false\nproxy:\n  mode: disabled\n"
    )
    sock = root / "run" / "agentsh.sock"
    p = subprocess.Popen(
        [AGENTSHD, "--foreground", "--config-dir", str(root / "etc"), "--socket", str(sock),
         "--state-dir", str(root / "lib"), "--events", str(root / "log" / "events.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if sock.exists() and (root / "log" / "events.jsonl").exists():
            return p
        if p.poll() is not None:
            return None
        time.sleep(0.1)
    p.kill()
    return None


def scenario(
    name: str,
    make: Callable[[int], bytes],
    shim_env: dict[str, str],
    rounds: int,
    n: int,
    windows: tuple[int, ...],
    n_pipe: int,
) -> dict[str, float]:
    direct_env = dict(os.environ)
    lat: dict[str, list[float]] = {"direct": [], "shim": []}
    tput: dict[tuple[str, int], list[float]] = {}
    for _ in range(rounds):
        conns = {"direct": Conn(SERVER, direct_env), "shim": Conn([SHIM, "--", *SERVER], shim_env)}
        for c in conns.values():
            handshake(c)
            pingpong(c, make, max(5, n // 10))  # warm-up
        # ping-pong in small blocks, alternating (and swapping who goes first), so
        # a burst of load from elsewhere on the machine hits both sides alike
        order = ["direct", "shim"]
        for b in range(0, n, BLOCK):
            for kind in order:
                lat[kind] += pingpong(conns[kind], make, min(BLOCK, n - b))
            order.reverse()
        for w in windows:
            for kind in ("direct", "shim"):
                tput.setdefault((kind, w), []).append(pipelined(conns[kind], make, n_pipe, w))
        for c in conns.values():
            c.close()
    d50, s50 = pct(lat["direct"], 50), pct(lat["shim"], 50)
    print(f"\n== {name}  ({rounds} rounds x {n} ping-pong, pipelined {n_pipe} msgs)")
    print(f"   {'':8} {'p50 us':>10} {'p90 us':>10} {'p99 us':>10} {'ping-pong msg/s':>16}")
    for kind in ("direct", "shim"):
        xs = lat[kind]
        print(f"   {kind:8} {pct(xs, 50):10.1f} {pct(xs, 90):10.1f} {pct(xs, 99):10.1f} "
              f"{1e6 / statistics.mean(xs):16.0f}")
    added = {p: pct(lat["shim"], p) - pct(lat["direct"], p) for p in (50, 90, 99)}
    print(f"   added latency: p50 {added[50]:.1f} us, p90 {added[90]:.1f} us, p99 {added[99]:.1f} us")
    pp_ratio = statistics.mean(lat["direct"]) / statistics.mean(lat["shim"])
    print(f"   ping-pong throughput ratio shim/direct: {pp_ratio:.2f}")
    out = {"p50_added_us": added[50], "p50_direct_us": d50, "p50_shim_us": s50,
           "pingpong_ratio": pp_ratio}
    for w in windows:
        d = statistics.median(tput[("direct", w)])
        s = statistics.median(tput[("shim", w)])
        print(f"   pipelined window {w:>3}: direct {d:9.0f} msg/s, shim {s:9.0f} msg/s, "
              f"ratio {s / d:.2f}")
        out[f"pipelined_ratio_w{w}"] = s / d
    return out


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="ashb", dir="/tmp"))
    down_env = {
        **os.environ,
        "AGENTSH_SOCKET": str(tmp / "no-daemon.sock"),
        "AGENTSH_STATE_DIR": str(tmp / "state-down"),
        "AGENTSH_CONFIG_DIR": str(tmp / "etc-none"),
    }
    t0 = time.monotonic()
    print("agentsh-shim benchmark: echo server direct vs under agentsh-shim")
    try:
        relay = scenario("small requests, not tools/call (pure relay)", PING, down_env,
                         rounds=3, n=2000, windows=(64,), n_pipe=20000)
        local = scenario("small tools/call, daemon down (local decision)", CALL_SMALL, down_env,
                         rounds=2, n=1000, windows=(64,), n_pipe=5000)
        big = scenario("1 MB results, not tools/call (pure relay)", READ_1MB, down_env,
                       rounds=3, n=100, windows=(8,), n_pipe=200)
        scenario("tools/call with 1 MB results, daemon down (local decision)", CALL_1MB,
                 down_env, rounds=2, n=100, windows=(8,), n_pipe=200)
        daemon = start_daemon(tmp / "d")
        remote = None
        if daemon is not None:
            try:
                up_env = {**os.environ, "AGENTSH_SOCKET": str(tmp / "d" / "run" / "agentsh.sock"),
                          "AGENTSH_STATE_DIR": str(tmp / "d" / "lib"),
                          "AGENTSH_CONFIG_DIR": str(tmp / "d" / "etc")}
                remote = scenario("small tools/call, decided by agentshd", CALL_SMALL, up_env,
                                  rounds=2, n=500, windows=(64,), n_pipe=2000)
                scenario("tools/call with 1 MB results, decided by agentshd", CALL_1MB, up_env,
                         rounds=2, n=60, windows=(8,), n_pipe=120)
            finally:
                daemon.terminate()
                daemon.wait(20)
        else:
            print("\n(agentshd not available: daemon scenarios skipped)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n== summary")
    print(f"   relay p50 added latency: {relay['p50_added_us']:.1f} us (target <= 200 us) "
          f"{'OK' if relay['p50_added_us'] <= 200 else 'MISSED'}")
    print(f"   local-decision tools/call p50 added latency: {local['p50_added_us']:.1f} us")
    if remote is not None:
        print(f"   daemon-decided tools/call p50 added latency: {remote['p50_added_us']:.1f} us")
    r1 = big["pingpong_ratio"]
    r8 = big["pipelined_ratio_w8"]
    print(f"   1 MB relay throughput shim/direct: ping-pong {r1:.2f}, pipelined(8) {r8:.2f} "
          f"(target >= 0.80) {'OK' if min(r1, r8) >= 0.8 else 'MISSED'}")
    print(f"   benchmark took {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
