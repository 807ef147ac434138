"""Every labelled set at once: per-file totals, what each misses or flags, and a dump of every verdict.

    .venv/bin/python bench/detector_sets.py [--verbose] [--only v31,v32] [--dump verdicts.json]

The development loop's view (bench/detector.py keeps the per-category tables and the speed): all
blind sets already measured (tests/data/detector_blind_v*/, which are development data once
measured) and the first blind set, tool definitions and results. ``--dump`` writes each entry's
highest severity and first findings by id, so two runs (before and after a rule change) can be
compared with a plain diff. A set still waiting to be measured must not be read with this.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detector import DATA, THRESHOLD, _kind, run_tool_entry

from agentsh.agent.core.mcp.detector import Detector, max_severity, reaches
from agentsh.agent.core.policy.schema import DetectionConfig


def labelled_files() -> list[Path]:
    def order(p: Path) -> tuple[int, str]:
        m = re.match(r"v(\d+)", p.name)
        return (int(m.group(1)) if m else 0, p.name)

    files = sorted((p for p in DATA.glob("detector_blind_v*/v*_*.json")
                    if p.name.endswith(("_tools.json", "_results.json"))), key=order)  # fmt: skip
    first = DATA / "detector_blind"
    return files + [first / n for n in ("dev_tools.json", "test_tools.json", "dev_results.json", "test_results.json")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verbose", "-v", action="store_true", help="list every miss and false positive")
    ap.add_argument("--only", default="", help="comma-separated parts of file names (v31,v32b)")
    ap.add_argument("--dump", type=Path, help="write {id: [max severity, first findings]} here")
    args = ap.parse_args()
    det = Detector(DetectionConfig())
    only = [o for o in args.only.split(",") if o]
    dump: dict[str, Any] = {}
    totals = {k: [0, 0] for k in ("tools malicious", "tools hard_negative", "tools clean",
                                  "results malicious", "results hard_negative")}  # fmt: skip
    for p in labelled_files():
        if only and not any(o in p.name for o in only):
            continue
        results = p.name.endswith("_results.json")
        counts = {"malicious": [0, 0], "hard_negative": [0, 0], "clean": [0, 0]}
        wrong = []
        for e in json.loads(p.read_text()):
            kind = _kind(e)
            found = det.scan_result(e["result"], tool_name=e.get("tool")) if results else run_tool_entry(det, e)
            hit = reaches(max_severity(found), THRESHOLD)
            dump[e["id"]] = [max_severity(found), [f"{x.severity}:{x.pattern}" for x in found[:4]]]
            counts[kind][0] += hit
            counts[kind][1] += 1
            if hit != (kind == "malicious"):
                top = "; ".join(f"{x.severity}:{x.pattern}: {x.why[:110]}" for x in found[:2]) or "-"
                wrong.append(f"  {'MISS' if kind == 'malicious' else 'FP  '} {e['id']}: {top}")
        side = "results" if results else "tools"
        for kind, (h, n) in counts.items():
            if f"{side} {kind}" in totals:
                totals[f"{side} {kind}"][0] += h
                totals[f"{side} {kind}"][1] += n
        print(f"{p.parent.name}/{p.name}: " + ", ".join(f"{k} {h}/{n}" for k, (h, n) in counts.items() if n))
        if args.verbose and wrong:
            print("\n".join(wrong))
    print("all: " + ", ".join(f"{k} {h}/{n}" for k, (h, n) in totals.items() if n))
    if args.dump:
        args.dump.write_text(json.dumps(dump, indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
