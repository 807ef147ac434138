"""Golden outputs of the MCP tool-poisoning detector: a speed change must not change a decision.

    .venv/bin/python bench/detector_golden.py --write [PATH]   # record (default: the test's file)
    .venv/bin/python bench/detector_golden.py --check [PATH]   # compare, list what differs
    .venv/bin/python bench/detector_golden.py --all ...        # also the eval corpora and the
                                                               # frozen v3 set (digests only)

Every finding of the default detector (pattern, category, severity, field, why with its
learned score, the positions of its matches and a digest of their text and context) on: the real tools
(tests/data/real_tools, with their siblings and server, as bench/detector.py runs
them), the blind dev and former test sets (tests/data/detector_blind), the held-out
set and detector_test_v2.json, tool results included. The default file is
tests/data/detector_golden.json, which tests/test_detector_golden.py compares against.

``--all`` adds the eval corpora (../shared/eval, measure only) and the frozen v3 set:
for v3 only a SHA-256 of each file's outputs is kept and compared; its entries and
findings are never written or printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detector import BLIND, BLIND_V3, DATA, _v3_entries, eval_dir, real_tool_defs, run_tool_entry

from agentsh.agent.core.mcp.detector import Detector
from agentsh.agent.core.policy.schema import DetectionConfig

GOLDEN = DATA / "detector_golden.json"

Record = list[Any]


def _records(results: list[Any]) -> list[Record]:
    """One finding: its verdict in clear, its matches as positions plus a digest of their
    text and context (the file stays small; any change still shows)."""
    out: list[Record] = []
    for r in results:
        ms = [[m.text, m.position, m.context] for m in r.matches]
        digest = hashlib.sha256(json.dumps(ms, ensure_ascii=False).encode()).hexdigest()[:16]
        out.append([r.pattern, r.category, r.severity, r.field, r.why, [m.position for m in r.matches],
                    digest])  # fmt: skip
    return out


def _tools(det: Detector, entries: list[dict[str, Any]]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for i, e in enumerate(entries):
        out[f"{i}:{e.get('id', '?')}"] = _records(run_tool_entry(det, e))
    return out


def _results(det: Detector, entries: list[dict[str, Any]]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for i, e in enumerate(entries):
        text = e["result"] if isinstance(e["result"], str) else json.dumps(e["result"])
        out[f"{i}:{e.get('id', '?')}"] = _records(det.scan_result(text, tool_name=e.get("tool")))
    return out


def _real(det: Detector) -> dict[str, list[Record]]:
    rt = real_tool_defs()
    if rt is None:
        return {}
    by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in rt[1]:
        by_server[str(t.get("_server", ""))].append(t)
    out: dict[str, list[Record]] = {}
    for server, group in by_server.items():
        for t in group:
            tool = {k: v for k, v in t.items() if k != "_server"}
            sib = [x["name"] for x in group if x is not t]
            out[f"{server}:{tool['name']}"] = _records(
                det.inspect(tool, siblings=sib, server=server or None)
            )
    return out


def collect(det: Detector, everything: bool = False) -> dict[str, Any]:
    load = lambda p: json.loads(p.read_text())  # noqa: E731
    sets: dict[str, Any] = {"real_tools": _real(det)}
    for name in ("dev_tools", "test_tools"):
        sets[f"blind/{name}"] = _tools(det, load(BLIND / f"{name}.json"))
    for name in ("dev_results", "test_results"):
        sets[f"blind/{name}"] = _results(det, load(BLIND / f"{name}.json"))
    sets["heldout"] = _tools(det, load(DATA / "detector_heldout.json"))
    sets["test_v2"] = _tools(det, load(DATA / "detector_test_v2.json"))
    if not everything:
        return sets
    d = eval_dir()
    if d is not None:
        sec = load(d / "security_corpus_v1.json")["entries"]
        sets["eval/security_corpus_v1"] = _tools(det, [
            {"id": e["id"], "tool": {"name": "".join(ch if ch.isalnum() else "_" for ch in e["id"]),
                                     "description": e["description"]}} for e in sec])  # fmt: skip
        sets["eval/detect_corpus_v1"] = _tools(det, load(d / "detect_corpus_v1.json")["entries"])
        ref = load(d / "corpus_v1.tools.json")["tools"]
        sets["eval/corpus_v1.tools"] = _tools(det, [
            {"id": t["tool"], "server": t["server"],
             "tool": {"name": t["tool"], "description": t["description"]}} for t in ref])  # fmt: skip
    for p in sorted(BLIND_V3.glob("*.json")):  # frozen: a digest of the outputs, nothing else
        entries = _v3_entries(json.loads(p.read_bytes()))
        tools = [e for e in entries if isinstance(e.get("tool"), dict) and "result" not in e]
        results = [e for e in entries if "result" in e]
        outs = {"tools": _tools(det, tools), "results": _results(det, results)}
        blob = json.dumps(outs, sort_keys=True, ensure_ascii=False).encode()
        sets[f"v3/{p.name}"] = {"sha256": hashlib.sha256(blob).hexdigest()}
    return sets


def compare(want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """What differs, one line per entry (v3: per file, never the entry)."""
    diffs: list[str] = []
    for name in sorted(set(want) | set(got)):
        w, g = want.get(name), got.get(name)
        if w is None or g is None:
            diffs.append(f"{name}: only in {'the golden file' if g is None else 'this run'}")
            continue
        if name.startswith("v3/"):
            if w != g:
                diffs.append(f"{name}: outputs differ (digest)")
            continue
        for key in sorted(set(w) | set(g)):
            if w.get(key) != g.get(key):
                diffs.append(f"{name} {key}:\n    want {w.get(key)}\n    got  {g.get(key)}")
    return diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    ap.add_argument(
        "--all", action="store_true", help="also the eval corpora and the frozen v3 set"
    )
    ap.add_argument("path", nargs="?", type=Path, default=GOLDEN)
    args = ap.parse_args()
    got = collect(Detector(DetectionConfig()), args.all)
    if args.write:
        args.path.write_text(
            json.dumps(
                got, sort_keys=True, ensure_ascii=False, indent=None, separators=(",", ":")
            ).replace("]],", "]],\n")
            + "\n"
        )
        n = sum(len(v) for k, v in got.items() if not k.startswith("v3/"))
        print(f"wrote {args.path}: {n} entries in {len(got)} sets")
        return
    diffs = compare(json.loads(args.path.read_text()), got)
    for line in diffs[:50]:
        print(line)
    print(f"{len(diffs)} entries differ" if diffs else "identical")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
