"""Train the detector's sentence scorer, and estimate how it generalizes.

    .venv/bin/python bench/train_detector.py            # train, write agent/core/mcp/detector_weights.json
    .venv/bin/python bench/train_detector.py --check    # retrain, compare with the shipped weights
    .venv/bin/python bench/train_detector.py --estimate # leave-one-author-out, leave-one-category-out

docs/mcp.md "The learned scorer". Data (never ../shared/eval, never a blind set still to be
measured; the v3 to v52 blind sets, measured once each, are development data now;
``--exclude v4a --exclude v4b`` trains without v4, to measure the combined detector on it):

* negatives: every sentence of the 1,749 real tools (tests/data/real_tools), every
  sentence of the benign entries (hard negatives, clean) of the labelled sets;
* positives: the payload sentences of the malicious entries. Which sentences are the
  payload is not labelled, so it is learned (multiple-instance learning): the first
  description sentence is the tool's honest job and never a candidate, a sentence
  that also occurs in a benign entry is not one either; in round 0 each malicious
  tool spreads a weight of 1 over its candidates; in later rounds only the
  candidates that score near that tool's best one stay positive.

Training is logistic regression, AdaGrad with L2, a fixed number of epochs in a
fixed order: the same data gives the same weights (rounded to 6 decimals).
Features seen in fewer than ``MIN_DF`` different tools are dropped: a word only
one attack used is memorised, not learned.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detector import (
    BLIND,
    BLIND_V3,
    BLIND_V4,
    BLIND_V5,
    BLIND_V6,
    BLIND_V7,
    BLIND_V8,
    BLIND_V9,
    BLIND_V10,
    BLIND_V11,
    BLIND_V12,
    BLIND_V13,
    BLIND_V14,
    BLIND_V15,
    BLIND_V16,
    BLIND_V17,
    BLIND_V18,
    BLIND_V19,
    BLIND_V20,
    BLIND_V21,
    BLIND_V22,
    BLIND_V23,
    BLIND_V24,
    BLIND_V25,
    BLIND_V26,
    BLIND_V27,
    BLIND_V28,
    BLIND_V29,
    BLIND_V30,
    BLIND_V31,
    BLIND_V32,
    BLIND_V33,
    BLIND_V34,
    BLIND_V35,
    BLIND_V36,
    BLIND_V37,
    BLIND_V38,
    BLIND_V39,
    BLIND_V40,
    BLIND_V41,
    BLIND_V42,
    BLIND_V43,
    BLIND_V44,
    BLIND_V45,
    BLIND_V46,
    BLIND_V47,
    BLIND_V48,
    BLIND_V49,
    BLIND_V50,
    BLIND_V51,
    BLIND_V52,
    DATA,
    _peers_siblings,
    real_tool_defs,
)

from agentsh.agent.core.mcp.checks import RANK
from agentsh.agent.core.mcp.detect_parse import parse_tool
from agentsh.agent.core.mcp.detect_score import WEIGHTS_PATH, Model, units
from agentsh.agent.core.mcp.detector import Detector
from agentsh.agent.core.policy.schema import DetectionConfig

MIN_DF = 3
EPOCHS = 12
L2 = 1e-3
LR = 0.3
POS_W_CAP = 10.0
THRESHOLD_FLOOR = 0.9  # the leave-one-author-out operating point (docs/mcp.md)
MIL_ROUNDS = 3
MIL_MARGIN = 2.0  # logits below the tool's best candidate by more than this are dropped
SEED = 1729
TRAIN_SETS = (
    "dev_tools",
    "test_tools",
    "heldout",
    "v2",
    "v3a",
    "v3b",
    "v4a",
    "v4b",
    "v5a",
    "v5b",
    "v6a",
    "v6b",
    "v6c",
    "v7a",
    "v7b",
    "v7c",
    "v8a",
    "v8b",
    "v8c",
    "v9a",
    "v9b",
    "v9c",
    "v10a",
    "v10b",
    "v10c",
    "v11a",
    "v11b",
    "v11c",
    "v12a",
    "v12b",
    "v12c",
    "v13a",
    "v13b",
    "v13c",
    "v14a",
    "v14b",
    "v14c",
    "v15a",
    "v15b",
    "v15c",
    "v16a",
    "v16b",
    "v16c",
    "v17a",
    "v17b",
    "v17c",
    "v18a",
    "v18b",
    "v18c",
    "v19a",
    "v19b",
    "v19c",
    "v20a",
    "v20b",
    "v20c",
    "v21a",
    "v21b",
    "v21c",
    "v22a",
    "v22b",
    "v22c",
    "v23a",
    "v23b",
    "v23c",
    "v24a",
    "v24b",
    "v24c",
    "v25a",
    "v25b",
    "v25c",
    "v26a",
    "v26b",
    "v26c",
    "v27a",
    "v27b",
    "v27c",
    "v28a",
    "v28b",
    "v28c",
    "v29a",
    "v29b",
    "v29c",
    "v30a",
    "v30b",
    "v30c",
    "v31a",
    "v31b",
    "v31c",
    "v32a",
    "v32b",
    "v32c",
    "v33a",
    "v33b",
    "v33c",
    "v34a",
    "v34b",
    "v34c",
    "v35a",
    "v35b",
    "v35c",
    "v36a",
    "v36b",
    "v36c",
    "v37a",
    "v37b",
    "v37c",
    "v38a",
    "v38b",
    "v38c",
    "v39a",
    "v39b",
    "v39c",
    "v40a",
    "v40b",
    "v40c",
    "v41a",
    "v41b",
    "v41c",
    "v42a",
    "v42b",
    "v42c",
    "v43a",
    "v43b",
    "v43c",
    "v44a",
    "v44b",
    "v44c",
    "v45a",
    "v45b",
    "v45c",
    "v46a",
    "v46b",
    "v46c",
    "v47a",
    "v47b",
    "v47c",
    "v48a",
    "v48b",
    "v48c",
    "v49a",
    "v49b",
    "v49c",
    "v50a",
    "v50b",
    "v50c",
    "v51a",
    "v51b",
    "v51c",
    "v52a",
    "v52b",
    "v52c",
)


@dataclass(slots=True)
class Sample:
    """One sentence: its features and where it came from."""

    feats: list[str]
    group: str  # the entry (tool) it belongs to
    source: str  # dev_tools|test_tools|heldout|v2|real
    label: str  # malicious|hard_negative|clean|real
    category: str
    candidate: bool  # a positive candidate (malicious, not the honest first sentence)
    rule_high: bool  # the rule checks reach `high` on this entry
    text: str


def _kind(e: dict[str, Any]) -> str:
    if e["label"] == "malicious":
        return "malicious"
    cat = str(e.get("category", ""))
    return "hard_negative" if cat.startswith("hard") else "clean"


def load_entries() -> dict[str, list[dict[str, Any]]]:
    ld = lambda p: json.loads(p.read_text())  # noqa: E731
    return {
        "dev_tools": ld(BLIND / "dev_tools.json"),
        "test_tools": ld(BLIND / "test_tools.json"),
        "heldout": ld(DATA / "detector_heldout.json"),
        "v2": ld(DATA / "detector_test_v2.json"),
        "v3a": ld(BLIND_V3 / "v3a_tools.json"),
        "v3b": ld(BLIND_V3 / "v3b_tools.json"),
        "v4a": ld(BLIND_V4 / "v4a_tools.json"),
        "v4b": ld(BLIND_V4 / "v4b_tools.json"),
        "v5a": ld(BLIND_V5 / "v5a_tools.json"),
        "v5b": ld(BLIND_V5 / "v5b_tools.json"),
        "v6a": ld(BLIND_V6 / "v6a_tools.json"),
        "v6b": ld(BLIND_V6 / "v6b_tools.json"),
        "v6c": ld(BLIND_V6 / "v6c_tools.json"),
        "v7a": ld(BLIND_V7 / "v7a_tools.json"),
        "v7b": ld(BLIND_V7 / "v7b_tools.json"),
        "v7c": ld(BLIND_V7 / "v7c_tools.json"),
        "v8a": ld(BLIND_V8 / "v8a_tools.json"),
        "v8b": ld(BLIND_V8 / "v8b_tools.json"),
        "v8c": ld(BLIND_V8 / "v8c_tools.json"),
        "v9a": ld(BLIND_V9 / "v9a_tools.json"),
        "v9b": ld(BLIND_V9 / "v9b_tools.json"),
        "v9c": ld(BLIND_V9 / "v9c_tools.json"),
        "v10a": ld(BLIND_V10 / "v10a_tools.json"),
        "v10b": ld(BLIND_V10 / "v10b_tools.json"),
        "v10c": ld(BLIND_V10 / "v10c_tools.json"),
        "v11a": ld(BLIND_V11 / "v11a_tools.json"),
        "v11b": ld(BLIND_V11 / "v11b_tools.json"),
        "v11c": ld(BLIND_V11 / "v11c_tools.json"),
        "v12a": ld(BLIND_V12 / "v12a_tools.json"),
        "v12b": ld(BLIND_V12 / "v12b_tools.json"),
        "v12c": ld(BLIND_V12 / "v12c_tools.json"),
        "v13a": ld(BLIND_V13 / "v13a_tools.json"),
        "v13b": ld(BLIND_V13 / "v13b_tools.json"),
        "v13c": ld(BLIND_V13 / "v13c_tools.json"),
        "v14a": ld(BLIND_V14 / "v14a_tools.json"),
        "v14b": ld(BLIND_V14 / "v14b_tools.json"),
        "v14c": ld(BLIND_V14 / "v14c_tools.json"),
        "v15a": ld(BLIND_V15 / "v15a_tools.json"),
        "v15b": ld(BLIND_V15 / "v15b_tools.json"),
        "v15c": ld(BLIND_V15 / "v15c_tools.json"),
        "v16a": ld(BLIND_V16 / "v16a_tools.json"),
        "v16b": ld(BLIND_V16 / "v16b_tools.json"),
        "v16c": ld(BLIND_V16 / "v16c_tools.json"),
        "v17a": ld(BLIND_V17 / "v17a_tools.json"),
        "v17b": ld(BLIND_V17 / "v17b_tools.json"),
        "v17c": ld(BLIND_V17 / "v17c_tools.json"),
        "v18a": ld(BLIND_V18 / "v18a_tools.json"),
        "v18b": ld(BLIND_V18 / "v18b_tools.json"),
        "v18c": ld(BLIND_V18 / "v18c_tools.json"),
        "v19a": ld(BLIND_V19 / "v19a_tools.json"),
        "v19b": ld(BLIND_V19 / "v19b_tools.json"),
        "v19c": ld(BLIND_V19 / "v19c_tools.json"),
        "v20a": ld(BLIND_V20 / "v20a_tools.json"),
        "v20b": ld(BLIND_V20 / "v20b_tools.json"),
        "v20c": ld(BLIND_V20 / "v20c_tools.json"),
        "v21a": ld(BLIND_V21 / "v21a_tools.json"),
        "v21b": ld(BLIND_V21 / "v21b_tools.json"),
        "v21c": ld(BLIND_V21 / "v21c_tools.json"),
        "v22a": ld(BLIND_V22 / "v22a_tools.json"),
        "v22b": ld(BLIND_V22 / "v22b_tools.json"),
        "v22c": ld(BLIND_V22 / "v22c_tools.json"),
        "v23a": ld(BLIND_V23 / "v23a_tools.json"),
        "v23b": ld(BLIND_V23 / "v23b_tools.json"),
        "v23c": ld(BLIND_V23 / "v23c_tools.json"),
        "v24a": ld(BLIND_V24 / "v24a_tools.json"),
        "v24b": ld(BLIND_V24 / "v24b_tools.json"),
        "v24c": ld(BLIND_V24 / "v24c_tools.json"),
        "v25a": ld(BLIND_V25 / "v25a_tools.json"),
        "v25b": ld(BLIND_V25 / "v25b_tools.json"),
        "v25c": ld(BLIND_V25 / "v25c_tools.json"),
        "v26a": ld(BLIND_V26 / "v26a_tools.json"),
        "v26b": ld(BLIND_V26 / "v26b_tools.json"),
        "v26c": ld(BLIND_V26 / "v26c_tools.json"),
        "v27a": ld(BLIND_V27 / "v27a_tools.json"),
        "v27b": ld(BLIND_V27 / "v27b_tools.json"),
        "v27c": ld(BLIND_V27 / "v27c_tools.json"),
        "v28a": ld(BLIND_V28 / "v28a_tools.json"),
        "v28b": ld(BLIND_V28 / "v28b_tools.json"),
        "v28c": ld(BLIND_V28 / "v28c_tools.json"),
        "v29a": ld(BLIND_V29 / "v29a_tools.json"),
        "v29b": ld(BLIND_V29 / "v29b_tools.json"),
        "v29c": ld(BLIND_V29 / "v29c_tools.json"),
        "v30a": ld(BLIND_V30 / "v30a_tools.json"),
        "v30b": ld(BLIND_V30 / "v30b_tools.json"),
        "v30c": ld(BLIND_V30 / "v30c_tools.json"),
        "v31a": ld(BLIND_V31 / "v31a_tools.json"),
        "v31b": ld(BLIND_V31 / "v31b_tools.json"),
        "v31c": ld(BLIND_V31 / "v31c_tools.json"),
        "v32a": ld(BLIND_V32 / "v32a_tools.json"),
        "v32b": ld(BLIND_V32 / "v32b_tools.json"),
        "v32c": ld(BLIND_V32 / "v32c_tools.json"),
        "v33a": ld(BLIND_V33 / "v33a_tools.json"),
        "v33b": ld(BLIND_V33 / "v33b_tools.json"),
        "v33c": ld(BLIND_V33 / "v33c_tools.json"),
        "v34a": ld(BLIND_V34 / "v34a_tools.json"),
        "v34b": ld(BLIND_V34 / "v34b_tools.json"),
        "v34c": ld(BLIND_V34 / "v34c_tools.json"),
        "v35a": ld(BLIND_V35 / "v35a_tools.json"),
        "v35b": ld(BLIND_V35 / "v35b_tools.json"),
        "v35c": ld(BLIND_V35 / "v35c_tools.json"),
        "v36a": ld(BLIND_V36 / "v36a_tools.json"),
        "v36b": ld(BLIND_V36 / "v36b_tools.json"),
        "v36c": ld(BLIND_V36 / "v36c_tools.json"),
        "v37a": ld(BLIND_V37 / "v37a_tools.json"),
        "v37b": ld(BLIND_V37 / "v37b_tools.json"),
        "v37c": ld(BLIND_V37 / "v37c_tools.json"),
        "v38a": ld(BLIND_V38 / "v38a_tools.json"),
        "v38b": ld(BLIND_V38 / "v38b_tools.json"),
        "v38c": ld(BLIND_V38 / "v38c_tools.json"),
        "v39a": ld(BLIND_V39 / "v39a_tools.json"),
        "v39b": ld(BLIND_V39 / "v39b_tools.json"),
        "v39c": ld(BLIND_V39 / "v39c_tools.json"),
        "v40a": ld(BLIND_V40 / "v40a_tools.json"),
        "v40b": ld(BLIND_V40 / "v40b_tools.json"),
        "v40c": ld(BLIND_V40 / "v40c_tools.json"),
        "v41a": ld(BLIND_V41 / "v41a_tools.json"),
        "v41b": ld(BLIND_V41 / "v41b_tools.json"),
        "v41c": ld(BLIND_V41 / "v41c_tools.json"),
        "v42a": ld(BLIND_V42 / "v42a_tools.json"),
        "v42b": ld(BLIND_V42 / "v42b_tools.json"),
        "v42c": ld(BLIND_V42 / "v42c_tools.json"),
        "v43a": ld(BLIND_V43 / "v43a_tools.json"),
        "v43b": ld(BLIND_V43 / "v43b_tools.json"),
        "v43c": ld(BLIND_V43 / "v43c_tools.json"),
        "v44a": ld(BLIND_V44 / "v44a_tools.json"),
        "v44b": ld(BLIND_V44 / "v44b_tools.json"),
        "v44c": ld(BLIND_V44 / "v44c_tools.json"),
        "v45a": ld(BLIND_V45 / "v45a_tools.json"),
        "v45b": ld(BLIND_V45 / "v45b_tools.json"),
        "v45c": ld(BLIND_V45 / "v45c_tools.json"),
        "v46a": ld(BLIND_V46 / "v46a_tools.json"),
        "v46b": ld(BLIND_V46 / "v46b_tools.json"),
        "v46c": ld(BLIND_V46 / "v46c_tools.json"),
        "v47a": ld(BLIND_V47 / "v47a_tools.json"),
        "v47b": ld(BLIND_V47 / "v47b_tools.json"),
        "v47c": ld(BLIND_V47 / "v47c_tools.json"),
        "v48a": ld(BLIND_V48 / "v48a_tools.json"),
        "v48b": ld(BLIND_V48 / "v48b_tools.json"),
        "v48c": ld(BLIND_V48 / "v48c_tools.json"),
        "v49a": ld(BLIND_V49 / "v49a_tools.json"),
        "v49b": ld(BLIND_V49 / "v49b_tools.json"),
        "v49c": ld(BLIND_V49 / "v49c_tools.json"),
        "v50a": ld(BLIND_V50 / "v50a_tools.json"),
        "v50b": ld(BLIND_V50 / "v50b_tools.json"),
        "v50c": ld(BLIND_V50 / "v50c_tools.json"),
        "v51a": ld(BLIND_V51 / "v51a_tools.json"),
        "v51b": ld(BLIND_V51 / "v51b_tools.json"),
        "v51c": ld(BLIND_V51 / "v51c_tools.json"),
        "v52a": ld(BLIND_V52 / "v52a_tools.json"),
        "v52b": ld(BLIND_V52 / "v52b_tools.json"),
        "v52c": ld(BLIND_V52 / "v52c_tools.json"),
    }


def _rule_detector() -> Detector:
    d = Detector(DetectionConfig())
    d.scorer = None  # the rules alone: their findings are features
    return d


def samples_of_tool(det: Detector, tool: dict[str, Any], peers: Sequence[Any], siblings: Sequence[str],
                    server: str | None, group: str, source: str, label: str, category: str
                    ) -> list[Sample]:  # fmt: skip
    parsed = parse_tool(tool, peers, siblings, server)
    if not parsed.fields:
        return []
    findings = det.findings(parsed)
    high = any(RANK[f.severity] >= RANK["high"] for f in findings)
    out = []
    for u in units(parsed, findings):
        out.append(Sample(u.feats, group, source, label, category,
                          label == "malicious" and not u.first, high,
                          u.field.lower[u.start : u.end]))  # fmt: skip
    return out


def build_samples(exclude: Sequence[str] = ()) -> list[Sample]:
    det = _rule_detector()
    out: list[Sample] = []
    for source, entries in load_entries().items():
        if source in exclude:
            continue
        for e in entries:
            tool = dict(e["tool"])
            if "input_schema" in tool and "inputSchema" not in tool:
                tool["inputSchema"] = tool.pop("input_schema")
            peers, sib = _peers_siblings(e)
            out.extend(samples_of_tool(det, tool, peers, sib, e.get("server"), f"{source}:{e['id']}",
                                       source, _kind(e), str(e.get("category", "?"))))  # fmt: skip
    rt = real_tool_defs()
    if rt is not None:
        by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in rt[1]:
            by_server[str(t.get("_server", ""))].append(t)
        for server, group in sorted(by_server.items()):
            for t in group:
                tool = {k: v for k, v in t.items() if k != "_server"}
                sib = [x["name"] for x in group if x is not t]
                out.extend(samples_of_tool(det, tool, [], sib, server or None,
                                           f"real:{server}:{tool['name']}", "real", "real", "real"))  # fmt: skip
    # a sentence that also occurs in a benign entry is not a payload
    benign_texts = {s.text for s in out if s.label != "malicious"}
    for s in out:
        if s.candidate and s.text in benign_texts:
            s.candidate = False
    return out


# ---------------------------------------------------------------- logistic regression


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def fit(rows: list[tuple[list[str], float, float]], epochs: int | None = None, seed: int = SEED
        ) -> tuple[float, dict[str, float]]:  # fmt: skip
    """Weighted logistic regression: rows of (features, label 0/1, weight); AdaGrad, L2."""
    w: dict[str, float] = {}
    g2: dict[str, float] = {}
    bias, gb = 0.0, 1e-8
    order = list(range(len(rows)))
    rnd = random.Random(seed)
    for _ in range(EPOCHS if epochs is None else epochs):
        rnd.shuffle(order)
        for i in order:
            feats, y, sw = rows[i]
            z = bias
            for x in feats:
                z += w.get(x, 0.0)
            g = (_sigmoid(z) - y) * sw
            gb += g * g
            bias -= LR * g / math.sqrt(gb)
            for x in feats:
                wx = w.get(x, 0.0)
                gx = g + L2 * wx
                acc = g2.get(x, 1e-8) + gx * gx
                g2[x] = acc
                w[x] = wx - LR * gx / math.sqrt(acc)
    return bias, {k: v for k, v in w.items() if abs(v) >= 1e-4}


def vocabulary(samples: Iterable[Sample]) -> set[str]:
    df: Counter[str] = Counter()
    seen: set[tuple[str, str]] = set()
    for s in samples:
        for x in set(s.feats):
            if (s.group, x) not in seen:
                seen.add((s.group, x))
                df[x] += 1
    return {x for x, n in df.items() if n >= MIN_DF}


def train(samples: list[Sample], seed: int = SEED) -> Model:
    vocab = vocabulary(samples)
    feats = [sorted(set(x for x in s.feats if x in vocab)) for s in samples]
    neg = [i for i, s in enumerate(samples) if s.label != "malicious"]
    by_tool: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        if s.candidate:
            by_tool[s.group].append(i)
    n_neg, n_pos = len(neg), max(1, len(by_tool))
    pos_w = min(POS_W_CAP, 0.5 * n_neg / n_pos)  # positives are rare: weigh them up
    chosen: dict[str, list[tuple[int, float]]] = {g: [(i, 1.0 / len(ix)) for i in ix]
                                                  for g, ix in by_tool.items()}  # fmt: skip
    model = Model(0.0, {}, 0.5, 0.3, {})
    for _round in range(MIL_ROUNDS):
        rows = [(feats[i], 0.0, 1.0) for i in neg]
        for g in sorted(chosen):
            rows.extend((feats[i], 1.0, pos_w * wt) for i, wt in chosen[g])
        bias, w = fit(rows, seed=seed)
        model = Model(bias, w, 0.5, 0.3, {})
        nxt: dict[str, list[tuple[int, float]]] = {}
        for g, ix in by_tool.items():
            scored = sorted(((model.logit(feats[i]), i) for i in ix), reverse=True)
            best = scored[0][0]
            keep = [i for z, i in scored if z >= best - MIL_MARGIN][:3]
            nxt[g] = [(i, 1.0 / len(keep)) for i in keep]
        chosen = nxt
    model.meta = {"rounds": MIL_ROUNDS, "epochs": EPOCHS, "l2": L2, "min_df": MIN_DF,
                  "negatives": n_neg, "positive_tools": len(by_tool), "features": len(model.weights)}  # fmt: skip
    return model


def tool_scores(model: Model, samples: Iterable[Sample]) -> dict[str, tuple[float, Sample]]:
    """Per entry: its best sentence score (and any sample, for the entry's labels)."""
    best: dict[str, tuple[float, Sample]] = {}
    for s in samples:
        p = model.score(s.feats)
        if s.group not in best or p > best[s.group][0]:
            best[s.group] = (p, s)
    return best


def choose_thresholds(model: Model, samples: list[Sample]) -> tuple[float, float]:
    """`high`: above every real tool's and every benign entry's best sentence in training,
    with a margin (in-sample scores are optimistic); `medium`: a note, not an alert."""
    best = tool_scores(model, samples)
    neg = sorted((p for p, s in best.values() if s.label != "malicious"), reverse=True)
    top = neg[0] if neg else 0.5
    high = round(min(0.97, max(THRESHOLD_FLOOR, top + (1 - top) * 0.25)), 4)
    return high, round(max(0.3, high - 0.3), 4)


def train_full(samples: list[Sample]) -> Model:
    m = train(samples)
    m.threshold_high, m.threshold_medium = choose_thresholds(m, samples)
    return m


# ---------------------------------------------------------------- estimates


def evaluate(model: Model, samples: list[Sample]) -> dict[str, Any]:
    best = tool_scores(model, samples)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # label -> scorer hits, combined, n
    cats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for p, s in best.values():
        hit = p >= model.threshold_high
        key = s.label
        rows[key][0] += hit
        rows[key][1] += hit or s.rule_high
        rows[key][2] += 1
        if s.label == "malicious":
            c = cats[s.category]
            c[0] += hit
            c[1] += hit or s.rule_high
            c[2] += 1
    return {"rows": dict(rows), "cats": dict(cats)}


def _fmt(r: list[int]) -> str:
    return (
        f"{r[0]:3d}/{r[2]:<4d} ({r[0] / r[2]:6.1%})  combined {r[1]:3d}/{r[2]:<4d} ({r[1] / r[2]:6.1%})"
        if r[2]
        else "-"
    )


def print_eval(title: str, res: dict[str, Any], cats: bool = False) -> None:
    print(f"  {title}")
    for label in ("malicious", "hard_negative", "clean", "real"):
        r = res["rows"].get(label)
        if r:
            what = "recall" if label == "malicious" else "flagged"
            print(f"    {label:14s} {what:7s} scorer {_fmt(r)}")
    if cats:
        for c, r in sorted(res["cats"].items()):
            print(f"      {c:32s} scorer {_fmt(r)}")


def _real_fold(group: str) -> int:
    server = group.split(":")[1]
    return sum(map(ord, server)) % 2


def estimate(samples: list[Sample], which: str = "all") -> None:
    if which in ("all", "loao"):
        loao(samples)
    if which in ("all", "loco"):
        loco(samples)


LOAO_FOLDS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("v4a", "v4b"), 1),  # both v4 authors: the newest set, written after v3 was trained on
    (("v3b",), 1),
    (("v3a",), 0),
    (("v3a", "v3b"), 0),  # both v3 authors: what a set written after training looks like
    (("test_tools",), 0),
    (("dev_tools",), 1),
)


def loao(samples: list[Sample]) -> None:
    print("== leave-one-author-out (train without one author's set and half of the real servers)")
    for held, fold in LOAO_FOLDS:
        tr = [
            s
            for s in samples
            if s.source not in held and not (s.source == "real" and _real_fold(s.group) == fold)
        ]
        te = [
            s
            for s in samples
            if s.source in held or (s.source == "real" and _real_fold(s.group) == fold)
        ]
        m = train_full(tr)
        print(f"  threshold_high={m.threshold_high}")
        print_eval(f"held out: {'+'.join(held)} + real servers of fold {fold}",
                   evaluate(m, te), cats=True)  # fmt: skip


def loco(samples: list[Sample]) -> None:
    print("== leave-one-category-out (train without one attack class, in every set)")
    cats = sorted(
        {
            s.category
            for s in samples
            if s.label == "malicious" and s.source in ("dev_tools", "test_tools")
        }
    )
    tot = [0, 0, 0]
    for c in cats:
        tr = [s for s in samples if not (s.label == "malicious" and s.category == c)]
        te = [s for s in samples if s.label == "malicious" and s.category == c]
        m = train_full(tr)
        r = evaluate(m, te)["rows"].get("malicious", [0, 0, 0])
        for i in range(3):
            tot[i] += r[i]
        print(f"    {c:32s} scorer {_fmt(r)}")
    print(f"    {'ALL':32s} scorer {_fmt(tot)}")


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--check", action="store_true", help="retrain and compare with the shipped weights"
    )
    ap.add_argument(
        "--estimate", action="store_true", help="generalization estimates (no weights written)"
    )
    ap.add_argument(
        "--which", choices=("all", "loao", "loco"), default="all", help="with --estimate"
    )
    ap.add_argument(
        "--epochs", type=int, default=EPOCHS, help="with --estimate: a quicker, rougher run"
    )
    ap.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    ap.add_argument(
        "--exclude",
        action="append",
        default=[],
        choices=TRAIN_SETS,
        help="leave this set out of training (to measure the combined detector on it)",
    )
    args = ap.parse_args(argv)
    samples = build_samples(args.exclude)
    npos = len({s.group for s in samples if s.candidate})
    print(f"{len(samples)} sentences, {npos} malicious entries with candidates, "
          f"{sum(s.label != 'malicious' for s in samples)} negative sentences")  # fmt: skip
    if args.estimate:
        globals()["EPOCHS"] = args.epochs
        estimate(samples, args.which)
        return 0
    model = train_full(samples)
    doc = model.to_json()
    if args.check:
        shipped = json.loads(args.out.read_text())
        same = shipped == json.loads(json.dumps(doc))
        print(
            "shipped weights reproduced" if same else "shipped weights DIFFER from a fresh training"
        )
        return 0 if same else 1
    args.out.write_text(json.dumps(doc, indent=0, sort_keys=True, ensure_ascii=False) + "\n")
    print(
        f"wrote {args.out} ({len(model.weights)} features, threshold_high={model.threshold_high})"
    )
    print_eval("in-sample (optimistic)", evaluate(model, samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
