"""Policy loading time against the YAML floor, in the same run.

Run: ``.venv/bin/python bench/policy.py`` (about 30-60 s on 2 cores).

For 1k / 10k / 100k ``mcp.denied_tools`` rules, spread over ``agentsh.yaml``
(a fifth of them) and 20 drop-ins, it times:

* ``load_dir``: read, parse, merge, validate, hash: everything the daemon does
  on a reload (wall and CPU time: on shared CPUs wall can be well above CPU);
* floor ``yaml.parse``: libyaml's event stream of the same texts (CSafeLoader),
  with nothing built: no loader reading YAML can be faster;
* baseline ``yaml.load(CSafeLoader)``: the plain C-accelerated load of the same
  texts into Python objects, without positions, merge or validation.

and prints the ratios, the same 100k policy with one bad rule in its last
file (the error path reads the files again, with positions), whether 100k
rules load in under 2 s (the target,
docs/policy.md "Limits"), and how per-rule cost grows from 1k to 100k (linear:
~1x). Then the time to refuse a 342-byte alias bomb ("billion laughs").
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from agentsh.agent.core.policy.loader import PolicyError, load_dir

DROPINS = 20
TARGET_S = 2.0

BOMB = "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9) if p else ','.join(['lol'] * 9)}]\n"
    for p, c in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def rule_lines(start: int, n: int) -> str:
    return "".join(
        f'    - {{server: "srv-{i % 97}", tool: "tool_{i}_*"}}\n' for i in range(start, start + n)
    )


def make_policy(root: Path, n: int) -> list[Path]:
    (root / "policy.d").mkdir(parents=True)
    main_n = n // 5
    per = (n - main_n) // DROPINS
    files = [root / "agentsh.yaml"]
    files[0].write_text("version: 1\nmcp:\n  tool_policy: denylist\n  denied_tools:\n" + rule_lines(0, main_n))
    start = main_n
    for k in range(DROPINS):
        cnt = per if k < DROPINS - 1 else n - start
        f = root / "policy.d" / f"{k:02d}-rules.yaml"
        f.write_text("mcp:\n  denied_tools:\n" + rule_lines(start, cnt))
        files.append(f)
        start += cnt
    return files


def timed(fn: object, reps: int) -> float:
    return timed_cpu(fn, reps)[0]


def timed_cpu(fn: object, reps: int) -> tuple[float, float]:
    """Median wall and CPU seconds (the CPUs are shared: wall > CPU means waiting for one)."""
    wall, cpu = [], []
    for _ in range(reps):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    print(f"python {sys.version.split()[0]}, libyaml {yaml.__with_libyaml__}, {os.cpu_count()} cpus")
    print()
    hdr = (
        f"{'rules':>8}{'bytes':>11}{'load_dir s':>12}{'(cpu s)':>9}{'floor parse s':>15}"
        f"{'yaml.load s':>13}{'vs floor':>10}{'vs load':>9}{'µs/rule':>9}"
    )
    print(hdr)
    per_rule: dict[int, float] = {}
    ok_target = ok_cpu = False
    cpu_100k = 0.0
    with tempfile.TemporaryDirectory(prefix="agentsh-bench-policy-") as tmp:
        for n in (1_000, 10_000, 100_000):
            root = Path(tmp) / f"p{n}"
            files = make_policy(root, n)
            texts = [f.read_text() for f in files]
            size = sum(len(t) for t in texts)
            lp = load_dir(root)
            assert len(lp.policy.mcp.denied_tools) == n
            del lp
            reps = 5 if n < 100_000 else 3

            def parse_floor(texts: list[str] = texts) -> None:
                for t in texts:
                    for _ in yaml.parse(t, Loader=yaml.CSafeLoader):
                        pass

            def plain_load(texts: list[str] = texts) -> None:
                for t in texts:
                    yaml.load(t, Loader=yaml.CSafeLoader)

            ours, ours_cpu = timed_cpu(lambda root=root: load_dir(root), reps)
            floor = timed(parse_floor, reps)
            base = timed(plain_load, 1 if n >= 100_000 else reps)
            per_rule[n] = ours / n * 1e6
            if n == 100_000:
                ok_target = ours < TARGET_S
                ok_cpu, cpu_100k = ours_cpu < TARGET_S, ours_cpu
            print(
                f"{n:>8,}{size:>11,}{ours:>12.3f}{ours_cpu:>9.3f}{floor:>15.3f}{base:>13.3f}"
                f"{ours / floor:>9.1f}x{ours / base:>8.2f}x{per_rule[n]:>9.2f}"
            )
            if n == 100_000:  # the error path: one bad rule in the last drop-in
                last = files[-1]
                last.write_text(texts[-1] + '    - {tool: "[oops"}\n')
                err: list[str] = []

                def failing(root: Path = root, err: list[str] = err) -> None:
                    try:
                        load_dir(root)
                    except PolicyError as e:
                        err[:] = e.errors

                bad, bad_cpu = timed_cpu(failing, 3)
                print(
                    f"{'+1 bad':>8}{size + 20:>11,}{bad:>12.3f}{bad_cpu:>9.3f}"
                    f"{'':>15}{'':>13}{bad / floor:>9.1f}x{bad / base:>8.2f}x"
                    f"   (read again with positions for: {err[0].split(': ', 1)[0].rsplit('/', 1)[-1]})"
                )
        print()
        growth = per_rule[100_000] / per_rule[1_000]
        print(f"per-rule cost 100k vs 1k: {growth:.2f}x (1x = linear; the old loader was quadratic)")
        load1 = os.getloadavg()[0]
        print(
            f"target: 100,000 rules load in < {TARGET_S:.0f} s: "
            f"CPU time {'met' if ok_cpu else 'MISSED'} ({cpu_100k:.2f} s), "
            f"wall time {'met' if ok_target else 'MISSED'} ({per_rule[100_000] * 0.1:.2f} s; "
            f"load average {load1:.1f} on {os.cpu_count()} cpus)"
        )

        print()
        bomb = Path(tmp) / "bomb"
        bomb.mkdir()
        (bomb / "agentsh.yaml").write_text(BOMB)
        errors: list[str] = []

        def refuse() -> None:
            try:
                load_dir(bomb)
            except PolicyError as e:
                errors[:] = e.errors
            else:
                raise AssertionError("alias bomb was accepted")

        t = timed(refuse, 20)
        small = Path(tmp) / "small"
        small.mkdir()
        (small / "agentsh.yaml").write_text("mcp:\n  fail_closed: true\n")
        t_small = timed(lambda: load_dir(small), 20)
        print(f"alias bomb ({len(BOMB)} bytes, 9**9 nodes if expanded): refused in {t * 1000:.2f} ms")
        print(f"  (a valid 2-line policy loads in {t_small * 1000:.2f} ms; ratio {t / t_small:.2f}x)")
        print(f"  error: {errors[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
