"""Benchmark of the MCP tool-definition detector: quality on the eval corpora and speed.

Run: .venv/bin/python bench/detector.py [--verbose]

Quality (default DetectionConfig, alert_threshold=high): recall per malicious
category, false-positive rate on benign and hard-negative entries, and any
alert on the 45 real reference-server tools (each one is a false positive).
Speed: the time to inspect a tools/list of 100 tools (p50/p99), next to
orjson.loads of the same tools/list as the baseline — the ratio says what
inspection costs relative to merely parsing the message. Two workloads:
synthetic tools with full input schemas, and 100 tools cycled from the 45 real
reference-server tools (the representative one). Then scan throughput over a
few MB of synthetic tool JSON. The machine may be shared: run it more than once.

The corpora measure; they are never rules (see ../shared/eval/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import orjson

from agentsh.agent.mcp.detector import Detector, max_severity, reaches
from agentsh.agent.policy.schema import DetectionConfig

ROOT = Path(__file__).resolve().parent.parent


def eval_dir() -> Path:
    env = os.environ.get("AGENTSH_EVAL_DIR")
    candidates = [Path(env)] if env else []
    candidates += [
        ROOT.parent / "shared" / "eval" / "mcpproxy-065",
        ROOT / "shared" / "eval" / "mcpproxy-065",
    ]
    for c in candidates:
        if (c / "detect_corpus_v1.json").exists():
            return c
    sys.exit(
        f"eval corpora not found (tried {', '.join(map(str, candidates))}); set AGENTSH_EVAL_DIR"
    )


def _tool_from_detect(entry: dict) -> tuple[dict, list[dict]]:
    t = dict(entry["tool"])
    if "input_schema" in t and "inputSchema" not in t:  # corpus uses snake_case
        t["inputSchema"] = t.pop("input_schema")
    peers = []
    for p in entry.get("peers") or []:
        if isinstance(p, dict):
            # the API takes other servers' tools; a same-server sibling is not a peer
            if p.get("server") is not None and p.get("server") == entry.get("server"):
                continue
            peers.append(p.get("tool", p) if isinstance(p.get("tool"), dict) else p)
        elif isinstance(p, str):
            peers.append({"name": p})
    return t, peers


def quality(det: Detector, d: Path, verbose: bool) -> None:
    sec = json.loads((d / "security_corpus_v1.json").read_text())["entries"]
    dc = json.loads((d / "detect_corpus_v1.json").read_text())["entries"]
    real = json.loads((d / "corpus_v1.tools.json").read_text())["tools"]
    thr = det.threshold

    # (corpus, label-kind, category) -> [hit, total]
    rows: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    fps: list[str] = []

    def record(corpus: str, entry: dict, tool: dict, peers: list[dict]) -> None:
        res = det.inspect(tool, peers)
        hit = reaches(max_severity(res), thr)
        label = entry["label"]
        cat = entry.get("category", "?")
        if label == "malicious":
            kind = "malicious"
        else:
            hard = (
                cat.startswith("hard")
                or entry.get("hard_negative")
                or "hard" in str(entry.get("tags", ""))
            )
            kind = "hard_negative" if hard else "benign"
        r = rows[(corpus, kind, cat)]
        r[0] += hit
        r[1] += 1
        top = sorted(res, key=lambda x: -["low", "medium", "high", "critical"].index(x.severity))[
            :3
        ]
        desc = "; ".join(f"{x.severity}:{x.category}/{x.pattern}@{x.field}" for x in top) or "-"
        if kind == "malicious" and not hit:
            misses.append(f"  MISS {corpus}:{entry['id']} [{cat}] max={max_severity(res)} {desc}")
        if kind != "malicious" and hit:
            fps.append(f"  FP   {corpus}:{entry['id']} [{cat}] {desc}")

    for e in sec:
        name = "".join(ch if ch.isalnum() else "_" for ch in e["id"])
        record("security", e, {"name": name, "description": e["description"]}, [])
    for e in dc:
        tool, peers = _tool_from_detect(e)
        record("detect", e, tool, peers)

    print(f"== quality (default DetectionConfig, alert_threshold={thr})")
    tot = defaultdict(lambda: [0, 0])
    for (corpus, kind, cat), (h, n) in sorted(rows.items()):
        rate = h / n if n else 0.0
        what = "recall" if kind == "malicious" else "FP rate"
        print(f"  {corpus:9s} {kind:13s} {cat:24s} {what:7s} {h:2d}/{n:<2d} = {rate:5.2f}")
        tot[kind][0] += h
        tot[kind][1] += n
    for kind in ("malicious", "benign", "hard_negative"):
        h, n = tot[kind]
        what = "recall" if kind == "malicious" else "FP rate"
        print(f"  OVERALL   {kind:13s} {what:7s} {h}/{n} = {h / n if n else 0:.3f}")
    real_hits = []
    real_any = 0
    for t in real:
        res = det.inspect({"name": t["tool"], "description": t["description"]})
        real_any += bool(res)
        if reaches(max_severity(res), thr):
            real_hits.append(
                f"  REAL {t['tool_id']}: " + "; ".join(f"{x.severity}:{x.pattern}" for x in res)
            )
    print(
        f"  real reference tools: {len(real_hits)}/{len(real)} at >= {thr} ({real_any} with any lower-severity note)"
    )
    for line in real_hits:
        print(line)
    if verbose:
        for line in misses + fps:
            print(line)
    else:
        print(f"  ({len(misses)} misses, {len(fps)} false positives; --verbose lists them)")


# ---------------------------------------------------------------- speed

_WORDS = [
    "Read",
    "the",
    "complete",
    "contents",
    "of",
    "a",
    "file",
    "from",
    "the",
    "file",
    "system.",
    "Handles",
    "various",
    "text",
    "encodings",
    "and",
    "provides",
    "detailed",
    "error",
    "messages",
    "if",
    "the",
    "file",
    "cannot",
    "be",
    "read.",
    "Use",
    "this",
    "tool",
    "when",
    "you",
    "need",
    "to",
    "examine",
    "the",
    "contents",
    "of",
    "a",
    "single",
    "file.",
    "Only",
    "works",
    "within",
    "allowed",
    "directories.",
    "Returns",
    "the",
    "result",
    "as",
    "JSON",
    "with",
    "the",
    "fields",
    "described",
    "in",
    "the",
    "output",
    "schema.",
    "Supports",
    "pagination",
    "via",
    "the",
    "cursor",
    "parameter;",
    "results",
    "are",
    "sorted",
    "by",
    "modification",
    "time.",
]


def make_tools(n: int, seed: int = 7) -> list[dict]:
    import random

    rnd = random.Random(seed)
    tools = []
    for i in range(n):
        desc = " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(25, 70)))
        props = {}
        for j in range(rnd.randint(1, 5)):
            props[f"param_{j}"] = {
                "type": rnd.choice(["string", "integer", "boolean", "array"]),
                "description": " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(5, 20))),
            }
            if j == 0:
                props[f"param_{j}"]["enum"] = ["alpha", "beta", "gamma"]
        tools.append(
            {
                "name": f"tool_{i}_{rnd.choice(['read', 'write', 'list', 'search', 'get'])}",
                "title": f"Tool number {i}",
                "description": desc,
                "inputSchema": {
                    "type": "object",
                    "properties": props,
                    "required": list(props)[:1],
                    "$schema": "http://json-schema.org/draft-07/schema#",
                },
                "annotations": {"readOnlyHint": bool(i % 2), "title": f"Tool {i}"},
            }
        )
    return tools


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def real_tools(d: Path, n: int = 100) -> list[dict]:
    """n tools cycled from the 45 real reference-server tools (name + description: the
    corpus holds no schemas)."""
    real = json.loads((d / "corpus_v1.tools.json").read_text())["tools"]
    return [
        {"name": real[i % len(real)]["tool"], "description": real[i % len(real)]["description"]}
        for i in range(n)
    ]


def tools_list(det: Detector, label: str, tools: list[dict], runs: int = 300) -> None:
    """Inspect a whole tools/list (every tool) vs orjson.loads of the same message."""
    msg = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    t_insp: list[float] = []
    t_parse: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        orjson.loads(msg)
        t1 = time.perf_counter()
        for t in tools:
            det.inspect(t)
        t2 = time.perf_counter()
        t_parse.append((t1 - t0) * 1e3)
        t_insp.append((t2 - t1) * 1e3)
    p50i, p99i = pct(t_insp, 50), pct(t_insp, 99)
    p50p, p99p = pct(t_parse, 50), pct(t_parse, 99)
    mbs = len(msg) / (p50i / 1e3) / 1e6
    print(f"  tools/list of {len(tools)} {label} ({len(msg) / 1024:.0f} KiB JSON), {runs} runs")
    print(
        f"    inspect all       p50 {p50i:7.3f} ms  p99 {p99i:7.3f} ms   ({mbs:5.1f} MB/s at p50)"
    )
    print(f"    orjson.loads      p50 {p50p:7.3f} ms  p99 {p99p:7.3f} ms   (baseline)")
    print(f"    ratio inspect/parse p50 {p50i / p50p:6.1f}x")


def speed(det: Detector, d: Path) -> None:
    print("== speed")
    tools_list(det, "synthetic tools", make_tools(100))
    tools_list(det, "real reference tools (45, cycled)", real_tools(d))
    # throughput over a few MB
    big = make_tools(4000, seed=11)
    nbytes = len(orjson.dumps(big))
    t0 = time.perf_counter()
    for t in big:
        det.inspect(t)
    dt = time.perf_counter() - t0
    t0 = time.perf_counter()
    orjson.loads(orjson.dumps(big))
    dtp = time.perf_counter() - t0
    print(f"  throughput over {nbytes / 1e6:.1f} MB of tool JSON: inspect {nbytes / dt / 1e6:6.1f} MB/s, "
          f"orjson dumps+loads {nbytes / dtp / 1e6:6.1f} MB/s")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", "-v", action="store_true", help="list misses and false positives")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args()
    det = Detector(DetectionConfig())
    d = eval_dir()
    quality(det, d, args.verbose)
    if not args.no_speed:
        speed(det, d)


if __name__ == "__main__":
    main()
