"""The detector's fast paths decide exactly what the full analysis decides.

tests/data/detector_golden.json holds every finding of the default detector on the real
tools and the labelled dev sets, recorded by bench/detector_golden.py; the shortcuts
(scorer pruning, memoised sentence bounds, gates and word scores) must reproduce it,
whether the memos are empty or full, and each shortcut equals the slow definition it
replaces."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentsh.agent.core.mcp.detect_parse import make_field, split_sentences
from agentsh.agent.core.mcp.detect_score import _lower_pos, _word_feats, load_model, units
from agentsh.agent.core.mcp.detect_text import TextMemo
from agentsh.agent.core.mcp.detector import Detector, clear_caches
from agentsh.agent.core.policy.schema import DetectionConfig

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def golden() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(
            "detector_golden", ROOT / "bench" / "detector_golden.py"
        )
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return mod


def test_findings_on_real_tools_and_dev_sets_equal_the_recorded_ones_cold_and_warm(
    golden: ModuleType,
) -> None:
    want = json.loads(golden.GOLDEN.read_text())
    assert sum(1 for v in want["real_tools"].values() if v) > 50  # the file holds findings
    det = Detector(DetectionConfig())
    clear_caches()
    cold = golden.collect(det)
    assert golden.compare(want, cold) == []
    warm = golden.collect(det)  # every text memoised by the first pass
    assert golden.compare(want, warm) == []


def _linear_lower_pos(f, orig: int) -> int:  # type: ignore[no-untyped-def]
    """The definition: the first normalised character whose original position is >= orig."""
    if f.prep is None:
        return orig
    for i in range(len(f.lower)):
        if f.prep.orig_span(i, i + 1)[0] >= orig:
            return i
    return len(f.lower)


def test_position_mapping_by_bisection_equals_the_linear_scan() -> None:
    rnd = random.Random(12)
    alphabet = "ab .\n\x1b[31m\u00e9\u200b\uff46\U000e0041\ufb01\x00\u0430\u202e"
    for _ in range(2000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))
        f = make_field("description", "description", text, False)
        for orig in range(-1, len(text) + 2):
            assert _lower_pos(f, orig) == _linear_lower_pos(f, orig), (text, orig)


def test_fast_word_score_equals_the_sum_over_built_features() -> None:
    m = load_model()
    assert m is not None
    texts = [str(t.get("description", "")).lower()
             for e in json.loads((ROOT / "tests/data/real_tools/real_tools.json").read_text())
             for t in e["tools"]]  # fmt: skip
    texts += ["port 8080 and 12ab a12 1.5 x_1 ^ 007", "", "   ", "v2 2024-01-02 10:00"]
    n = 0
    for text in texts:
        for a, z in split_sentences(text) or ((0, len(text)),):
            t = text[a:z]
            fast = m.word_logit(t)
            if fast is None:
                continue
            n += 1
            slow = m.bias + sum(m.weights.get(x, 0.0) for x in set(_word_feats(t)))
            assert fast == pytest.approx(slow, abs=1e-9), t
    assert n > 3000


def test_pruned_sentences_could_not_reach_the_scorers_threshold() -> None:
    """Every sentence the pruning drops scores below threshold_medium when scored in full."""
    m = load_model()
    assert m is not None
    det = Detector(DetectionConfig())
    from agentsh.agent.core.mcp.detect_parse import parse_tool

    tools = json.loads((ROOT / "tests/data/detector_blind/dev_tools.json").read_text())
    kept_total = 0
    for e in tools:
        parsed = parse_tool(e["tool"])
        found = [f for c in det._checks for f in c.run(parsed, det._ctx)]
        kept = {(u.field.path, u.start) for u in units(parsed, found, prune=m)}
        kept_total += len(kept)
        for u in units(parsed, found):
            if (u.field.path, u.start) not in kept:
                assert m.score(u.feats) < m.threshold_medium, (
                    e["id"],
                    u.field.lower[u.start : u.end],
                )
    assert kept_total > 50  # the attacks' sentences are scored


def test_text_memo_stays_bounded_and_skips_long_texts() -> None:
    calls: list[str] = []

    def fn(s: str) -> int:
        calls.append(s)
        return len(s)

    memo = TextMemo(fn, max_entries=4, max_len=10)
    for i in range(10):
        assert memo(f"t{i}") == 2
    assert len(memo._d) == 4
    assert memo("t9") == 2 and calls.count("t9") == 1  # a recent text is answered from the memo
    long = "x" * 11
    assert memo(long) == 11 and memo(long) == 11
    assert calls.count(long) == 2 and long not in memo._d
    memo.clear()
    assert not memo._d
