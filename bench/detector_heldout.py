"""MCP tool-definition detector on an independent, held-out set.

tests/data/detector_heldout.json was written without looking at the detector's
rules or at the development corpora, so the figures here are a less optimistic
estimate than bench/detector.py. An entry counts as detected when the highest
severity over all detections reaches "high" under the default DetectionConfig.

    .venv/bin/python bench/detector_heldout.py [--verbose] [--set PATH]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from agentsh.agent.mcp.detector import Detector, max_severity, reaches
from agentsh.agent.policy.schema import DetectionConfig

HERE = Path(__file__).resolve().parent
DEFAULT_SET = HERE.parent / "tests" / "data" / "detector_heldout.json"
THRESHOLD = "high"


def top_detection(results) -> str:
    """'severity category/pattern@field' of the most severe result, or '-'."""
    sev = max_severity(results)
    if sev is None:
        return "-"
    for r in results:
        if r.severity == sev:
            return f"{sev} {r.category}/{r.pattern}@{r.field}"
    return sev


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verbose", "-v", action="store_true", help="list misses and false positives")
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="path of the held-out JSON set")
    args = ap.parse_args()

    entries = json.loads(args.set.read_text(encoding="utf-8"))
    det = Detector(DetectionConfig())

    stats: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (label, cat) -> [flagged, total]
    misses: list[tuple[str, str, str]] = []
    fps: list[tuple[str, str, str]] = []
    for e in entries:
        peers = [{"server": p["server"], "tool": p["tool"]} for p in e.get("peers", [])]
        results = det.inspect(e["tool"], peers=peers)
        flagged = reaches(max_severity(results), THRESHOLD)
        s = stats[(e["label"], e["category"])]
        s[0] += int(flagged)
        s[1] += 1
        if e["label"] == "malicious" and not flagged:
            misses.append((e["category"], e["id"], top_detection(results)))
        elif e["label"] == "benign" and flagged:
            fps.append((e["category"], e["id"], top_detection(results)))

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:5.1f}%" if b else "   n/a"

    print(f"held-out set: {args.set}  ({len(entries)} entries, threshold={THRESHOLD})")
    print("\nrecall per malicious category")
    tp = tot_m = 0
    for (label, cat), (f, n) in sorted(stats.items()):
        if label == "malicious":
            print(f"  {cat:<20} {f:>3}/{n:<3} {pct(f, n)}")
            tp += f
            tot_m += n
    print("\nfalse-positive rate per benign category")
    fp = tot_b = 0
    for (label, cat), (f, n) in sorted(stats.items()):
        if label == "benign":
            print(f"  {cat:<20} {f:>3}/{n:<3} {pct(f, n)}")
            fp += f
            tot_b += n
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / tot_m if tot_m else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    print("\noverall")
    print(f"  recall     {tp}/{tot_m} {pct(tp, tot_m)}")
    print(f"  FP rate    {fp}/{tot_b} {pct(fp, tot_b)}")
    print(f"  precision  {100 * precision:5.1f}%   F1 {f1:.3f}")

    if args.verbose:
        print(f"\nmisses ({len(misses)})")
        for cat, id_, top in sorted(misses):
            print(f"  [{cat}] {id_}: {top}")
        print(f"\nfalse positives ({len(fps)})")
        for cat, id_, top in sorted(fps):
            print(f"  [{cat}] {id_}: {top}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
