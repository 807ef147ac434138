"""Benchmark: agentshctl start-up, next to ``python -c pass`` with the same interpreter.

One run, interleaved so the machine's other load hits both alike:

* every command's ``--help`` (the whole tree: ``agentshctl --help``,
  ``agentshctl mcp registry list --help``, ...);
* the common real commands: ``status`` against a running daemon (started here
  in a private directory, BPF layer and proxy off), ``policy validate`` of the
  embedded default, ``events tail -n 10`` (log of 2,000 events, path asked of
  the daemon), ``proxy env`` (listen address asked of the daemon).

Each row: p50 and p95 wall time of the whole process (fork to exit), the
ratio p50 / baseline p50, what the command adds to the interpreter's own
start (p50 - baseline p50), and whether p50 <= 150 ms holds (the target;
docs/operations.md "CLI start-up"). Usage:
``.venv/bin/python bench/cli.py [--runs N] [--quick]`` (about 1-2 min; needs
root for the daemon rows, which are skipped otherwise).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import benchdaemon
import click
from benchdaemon import pct

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
AGENTSHCTL = str(BIN / "agentshctl")
TARGET_MS = 150.0

BENCH_POLICY = """
network:
  enabled: false
proxy:
  mode: disabled
"""


def command_paths() -> Iterator[list[str]]:
    """Every command and subcommand of agentshctl, as argument lists."""
    from agentsh.agent.ctl.main import cli

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> Iterator[list[str]]:
        ctx = click.Context(cmd, info_name=path[-1] if path else "agentshctl", parent=parent)
        yield path
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    yield from walk(sub, [*path, name], ctx)

    yield from walk(cli, [], None)


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one run in ms. ``status`` exits 1 on the bench daemon (its
    BPF layer and proxy are off, so it is degraded): 0 and 1 both count."""
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = (time.perf_counter() - t0) * 1000
    if r.returncode not in (0, 1) or (r.returncode == 1 and "status" not in argv):
        raise SystemExit(f"bench/cli.py: {' '.join(argv)} exited {r.returncode}: {r.stderr.decode()[-400:]}")
    return dt


class Daemon(benchdaemon.Daemon):
    """agentshd in a private directory (root only), with an event log to tail."""

    def __init__(self) -> None:
        super().__init__(BENCH_POLICY)

    def fill_log(self, n: int) -> None:
        from agentsh.agent.core.events.models import MCPToolCalled

        with open(self.events, "wb") as f:
            for i in range(n):
                ev = MCPToolCalled(server_id="filesystem", tool_name="read_file", jsonrpc_id=i,
                                   input={"path": f"/home/dev/src/{i}.py"}, source="shim", pid=4242)
                f.write(ev.model_dump_json(exclude_none=True).encode() + b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    ap.add_argument("--quick", action="store_true", help="5 runs, --help of the top-level commands only")
    args = ap.parse_args()
    runs = 5 if args.quick else args.runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSH_")}

    rows: list[tuple[str, list[str]]] = []
    for path in command_paths():
        if args.quick and len(path) > 1:
            continue
        rows.append((" ".join(["agentshctl", *path, "--help"]), [AGENTSHCTL, *path, "--help"]))

    daemon: Daemon | None = None
    if os.geteuid() == 0:
        daemon = Daemon()
        daemon.fill_log(2000)
        daemon.start()
        sock = ["--socket", str(daemon.socket)]
        rows += [
            ("agentshctl status  (daemon running)", [AGENTSHCTL, *sock, "status"]),
            ("agentshctl policy validate default.yaml",
             [AGENTSHCTL, "policy", "validate", str(REPO / "policies" / "default.yaml")]),
            ("agentshctl events tail -n 10", [AGENTSHCTL, *sock, "events", "tail", "-n", "10"]),
            ("agentshctl proxy env  (listen from daemon)", [AGENTSHCTL, *sock, "proxy", "env"]),
        ]
    else:
        print("not root: skipping the rows that need a running daemon")
    baseline_argv = [sys.executable, "-c", "pass"]

    try:
        # Warm the page cache and .pyc files once, then interleave baseline and command.
        for _, argv in rows:
            timed(argv, env)
        base: list[float] = []
        results: dict[str, list[float]] = {name: [] for name, _ in rows}
        rng = random.Random(7)
        order = list(rows)
        for _ in range(runs):
            rng.shuffle(order)  # no row always runs in the same phase of a periodic load
            for name, argv in order:
                base.append(timed(baseline_argv, env))
                results[name].append(timed(argv, env))
    finally:
        if daemon is not None:
            daemon.stop()

    b50, b95 = pct(base, 50), pct(base, 95)
    print(f"agentshctl start-up, {runs} runs each, {len(base)} baseline runs interleaved; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"baseline `{Path(sys.executable).name} -c pass`: p50 {b50:.1f} ms  p95 {b95:.1f} ms\n")
    width = max(len(n) for n in results)
    print(f"{'command':<{width}}  {'p50 ms':>7} {'p95 ms':>7} {'x base':>6} {'+ms p50':>8}  p50<=150ms")
    failed = []
    for name, xs in results.items():
        p50, p95 = pct(xs, 50), pct(xs, 95)
        ok = p50 <= TARGET_MS
        if not ok:
            failed.append(name)
        print(f"{name:<{width}}  {p50:7.1f} {p95:7.1f} {p50 / b50:6.2f} {p50 - b50:8.1f}  {'yes' if ok else 'NO'}")
    print()
    if failed:
        print(f"target p50 <= {TARGET_MS:.0f} ms NOT met by {len(failed)} of {len(results)}: {', '.join(failed)}")
    else:
        print(f"target p50 <= {TARGET_MS:.0f} ms met by all {len(results)} commands")
    return 0


if __name__ == "__main__":
    sys.exit(main())
