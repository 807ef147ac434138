"""Benchmark of the BPF network layer (run as root; < 2 minutes).

1. connect()+close latency to a loopback listener from a process in a child
   cgroup, measured in one run, interleaved in rounds, in three setups:
   detached (baseline), attached + unwatched destination, attached + watched
   (allowed, emits an event). Printed as p50/p99 and ratios to the baseline.
2. Event delivery: 10,000 watched connects/s for 3 s into a real EventWriter
   (events.jsonl in a temp dir); prints events/s written and lost counts.
   The load uses UDP connect() (runs the same connect4 hook, no handshake) so
   the generator itself can sustain the rate on 2 cores.
3. Policy reload → map update time (target: < 100 ms).
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.policy.schema import EventsConfig, Policy
from agentsh.agent.netmon.cgroup import ensure_cgroup2, remove_cgroup
from agentsh.agent.netmon.monitor import NetworkMonitor, detach_all

LAT_CLIENT = textwrap.dedent(
    """
    import os, socket, sys, time, json
    cg, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    print("ready", flush=True)
    for line in sys.stdin:
        host = line.strip()
        if not host:
            break
        out = []
        for _ in range(n):
            s = socket.socket()
            t0 = time.perf_counter_ns()
            s.connect((host, port))
            s.close()
            out.append(time.perf_counter_ns() - t0)
        print(json.dumps(out), flush=True)
    """
)

LOAD_CLIENT = textwrap.dedent(
    """
    import os, socket, sys, time
    cg, host, port, rate, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    t0 = time.perf_counter()
    end = t0 + secs
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        due = int((now - t0) * rate)
        while sent < due:
            s.connect((host, port))
            sent += 1
        time.sleep(0.0005)
    print(sent, time.perf_counter() - t0, flush=True)
    """
)


def pct(xs: list[int], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] / 1000.0


class Acceptor:
    def __init__(self, host: str) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(4096)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.close()


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("bench/bpf.py must run as root")
    root = ensure_cgroup2()
    cg = os.path.join(root, f"agentsh-bench-{uuid.uuid4().hex[:8]}")
    os.mkdir(cg)
    pin = f"/sys/fs/bpf/agentsh-bench-{uuid.uuid4().hex[:8]}"
    tmp = Path(tempfile.mkdtemp(prefix="agentsh-bench-"))
    # the same port on two loopback addresses: only 127.0.0.42 is watched
    acc_w = Acceptor("127.0.0.42")
    acc_u = Acceptor("127.0.0.43")
    udp_port = 9
    port_w, port_u = acc_w.port, acc_u.port

    def policy(extra_deny: list[str] | None = None) -> Policy:
        return Policy.model_validate(
            {
                "mcp": {
                    "servers": [
                        {"id": "bench", "type": "http", "url": f"http://127.0.0.42:{port_w}/"},
                        {"id": "load", "type": "http", "url": f"http://127.0.0.44:{udp_port}/"},
                        *[
                            {"id": f"s{i}", "type": "http", "url": f"http://10.99.{i // 250}.{i % 250 + 1}:443/"}
                            for i in range(200)
                        ],
                    ],
                    "denied_servers": [{"id": d} for d in (extra_deny or [])],
                },
                "network": {"cgroup_path": cg, "pin_dir": pin, "discovery": False},
            }
        )

    writer = EventWriter(EventsConfig(path=str(tmp / "events.jsonl"), fsync_interval_seconds=0))
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def run(c):
        return asyncio.run_coroutine_threadsafe(c, loop).result(60)

    run(writer.start())
    mon = NetworkMonitor(policy(), writer.emit, tmp, report_existing=False)
    try:
        # ---------------------------------------------------------------- latency
        n, rounds = 400, 6
        clients = {}
        for name, port in (("w", port_w), ("u", port_u)):
            c = subprocess.Popen(
                [sys.executable, "-c", LAT_CLIENT, cg, str(port), str(n)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            assert c.stdout.readline().strip() == "ready"
            clients[name] = c

        def sample(name: str, host: str) -> list[int]:
            import json

            c = clients[name]
            c.stdin.write(host + "\n")
            c.stdin.flush()
            return json.loads(c.stdout.readline())

        # warm-up
        sample("u", "127.0.0.43")
        sample("w", "127.0.0.42")
        res: dict[str, list[int]] = {"detached": [], "unwatched": [], "watched": []}
        t_start = time.monotonic()
        run(mon.start())
        st = mon.status()
        if st["state"] != "active":
            sys.exit(f"BPF unavailable: {st['reason']}")
        for _ in range(rounds):
            # attached
            res["unwatched"] += sample("u", "127.0.0.43")
            res["watched"] += sample("w", "127.0.0.42")
            # detached (programs off, maps kept)
            detach_all_progs(cg)
            res["detached"] += sample("u", "127.0.0.43")
            res["detached"] += sample("w", "127.0.0.42")
            mon.programs.attach()
        base50, base99 = pct(res["detached"], 0.5), pct(res["detached"], 0.99)
        print(f"connect()+close latency, {rounds} interleaved rounds x {n} per setup (microseconds):")
        print(f"  {'setup':<30} {'p50':>8} {'p99':>8} {'p50 ratio':>10} {'p99 ratio':>10}")
        for k, label in (
            ("detached", "detached (baseline)"),
            ("unwatched", "attached, unwatched dest"),
            ("watched", "attached, watched+allowed"),
        ):
            p50, p99 = pct(res[k], 0.5), pct(res[k], 0.99)
            print(f"  {label:<30} {p50:8.1f} {p99:8.1f} {p50 / base50:10.3f} {p99 / base99:10.3f}")
        ov = (pct(res["unwatched"], 0.5) / base50 - 1) * 100
        print(f"  unwatched p50 overhead: {ov:+.1f}% (target <= 5%)")
        print(f"  watch map entries: {st['maps']['watch_v1']['entries']}")
        for c in clients.values():
            c.stdin.write("\n")
            c.stdin.flush()
            c.wait()

        # ---------------------------------------------------------------- reload
        times = []
        for i in range(10):
            t0 = time.perf_counter()
            run(mon.update_policy(policy(["bench"] if i % 2 == 0 else [])))
            times.append((time.perf_counter() - t0) * 1000)
        print(f"policy reload -> maps updated: median {statistics.median(times):.2f} ms, "
              f"max {max(times):.2f} ms (target < 100 ms)")
        run(mon.update_policy(policy()))

        # ---------------------------------------------------------------- events
        time.sleep(1.5)  # let the writer flush the latency phase's events
        lines_before = _lines(tmp / "events.jsonl")
        before_seen = mon.consumer.seen
        rate, secs = 10000, 3.0
        load = subprocess.run(
            [sys.executable, "-c", LOAD_CLIENT, cg, "127.0.0.44", str(udp_port), str(rate), str(secs)],
            capture_output=True, text=True, check=True,
        )
        sent, elapsed = load.stdout.split()
        sent, elapsed = int(sent), float(elapsed)
        deadline = time.monotonic() + 10
        while mon.consumer.seen - before_seen < sent and time.monotonic() < deadline:
            time.sleep(0.05)
        got = mon.consumer.seen - before_seen
        run(writer.stop())
        lines = _lines(tmp / "events.jsonl") - lines_before
        mon.consumer.read_stats()
        st = mon.status()
        print(f"event delivery: {sent} watched connects in {elapsed:.2f}s "
              f"({sent / elapsed:,.0f}/s offered)")
        print(f"  records consumed: {got}  events written to events.jsonl: {lines}  "
              f"(writer dropped: {writer.stats().get('dropped', '?')})")
        print(f"  kernel ring-buffer lost: {st['lost_events']}  emit failures: {st['events_emit_failed']}")
        print(f"  delivered {got / elapsed:,.0f} events/s; lost {sent - got}")
        print(f"total bench time {time.monotonic() - t_start:.1f}s")
    finally:
        run(mon.stop(detach=True))
        detach_all(pin, cg)
        remove_cgroup(cg)


def _lines(p: Path) -> int:
    if not p.exists():
        return 0
    with open(p, "rb") as f:
        return sum(1 for _ in f)


def detach_all_progs(cg: str) -> None:
    from agentsh.agent.netmon.programs import detach_cgroup

    detach_cgroup(cg)


if __name__ == "__main__":
    main()
