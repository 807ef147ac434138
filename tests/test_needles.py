"""The one-pass needle search (Hyperscan) gives the answers the str.find reading gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.agent.core.mcp import detect_results as R
from agentsh.agent.core.mcp import needles
from agentsh.agent.core.mcp.detector import Detector
from agentsh.agent.core.mcp.needles import NeedleSet
from agentsh.agent.core.policy.schema import DetectionConfig

DATA = Path(__file__).parent / "data"
one_pass = pytest.mark.skipif(not needles.one_pass_available(), reason="hyperscan is not installed here")


def _by_find(low: str, needle: str) -> list[int]:
    out, i = [], low.find(needle)
    while i >= 0:
        out.append(i)
        i = low.find(needle, i + 1)
    return out


@one_pass
def test_every_occurrence_is_found_overlapping_ones_included() -> None:
    ns = NeedleSet(["ai", "aia", "[[", "who or", "{color"])
    low = "aiaiai [[[ who or what {color:red} main said"
    at = ns.find(low)
    assert at is not None
    for n in ns.needles:
        assert at.get(n, []) == _by_find(low, n), n


@one_pass
def test_text_that_is_not_ascii_or_holds_too_many_hits_is_left_to_str_find() -> None:
    ns = NeedleSet(["ai"])
    assert ns.find("café ai") is None  # byte offsets would not be character offsets
    assert ns.find("ai" * (needles.MAX_HITS + 10)) is None  # a text built of needles


def _result_texts() -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    for p in sorted(DATA.glob("detector_blind*/*results*.json")):
        for e in json.loads(p.read_text()):
            if isinstance(e, dict) and isinstance(e.get("result"), str):
                out.append((e.get("tool"), e["result"]))
    return out


@one_pass
def test_result_scans_are_the_same_with_and_without_the_one_pass_search(monkeypatch: pytest.MonkeyPatch) -> None:
    det = Detector(DetectionConfig())
    texts = _result_texts()[::3]  # (a third of them: the comparison, not the corpus, is the point)
    assert len(texts) > 1500
    with_hs = [[r.model_dump() for r in det.scan_result(t, tool_name=tn)] for tn, t in texts]
    monkeypatch.setattr(R._NEEDLES, "_db", None)
    without = [[r.model_dump() for r in det.scan_result(t, tool_name=tn)] for tn, t in texts]
    differ = [texts[i][1][:80] for i in range(len(texts)) if with_hs[i] != without[i]]
    assert not differ
    assert sum(1 for x in with_hs if x) > 300  # (the sets hold injections: the comparison compares findings)
