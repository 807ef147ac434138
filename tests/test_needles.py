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


_PREFILTERS = (R._EXTRA_PREFILTER, R._ADDRESS_PREFILTER, R._NOT_ADDRESSEE_PREFILTER)


@one_pass
def test_result_scans_are_the_same_with_and_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass needle search and the three window prefilters change nothing a scan finds."""
    det = Detector(DetectionConfig())
    assert all(p.wait_ready() for p in _PREFILTERS)
    texts = _result_texts()[::3]  # (a third of them: the comparison, not the corpus, is the point)
    assert len(texts) > 1500
    with_hs = [[r.model_dump() for r in det.scan_result(t, tool_name=tn)] for tn, t in texts]
    monkeypatch.setattr(R._NEEDLES, "_db", None)
    for p in _PREFILTERS:
        monkeypatch.setattr(p, "_db", None)
        monkeypatch.setattr(p, "_state", "off")
    without = [[r.model_dump() for r in det.scan_result(t, tool_name=tn)] for tn, t in texts]
    differ = [texts[i][1][:80] for i in range(len(texts)) if with_hs[i] != without[i]]
    assert not differ
    assert sum(1 for x in with_hs if x) > 300  # (the sets hold injections: the comparison compares findings)


def test_superset_translation_reads_whitespace_and_non_ascii_as_python_does() -> None:
    out = needles.hyperscan_superset(r"ai\s{1,3}[^\s\]]x\u2014[\u2013-]{0,40}助\S")
    assert r"[\t-\r \x1c-\x1f]{1,}" in out  # (Python's \s holds \x1c-\x1f; PCRE's does not; repeats opened)
    assert r"[^\t-\r \x1c-\x1f\]]" in out
    assert r"x\xff[\xff-]{0,}\xff[^\t-\r \x1c-\x1f]" in out
    with pytest.raises(ValueError):
        needles.hyperscan_superset(r"[\S]")
    with pytest.raises(ValueError):
        needles.hyperscan_superset(r"(a)\1")


@one_pass
@pytest.mark.parametrize("which", ["_EXTRA_PREFILTER", "_ADDRESS_PREFILTER", "_NOT_ADDRESSEE_PREFILTER"])
def test_a_window_the_prefilter_refuses_holds_no_match(which: str) -> None:
    pf = getattr(R, which)
    rx = pf._rx
    assert pf.wait_ready()
    refused = 0
    texts = [t for _tn, t in _result_texts()[::13]]
    # separators Python reads as whitespace and PCRE does not, and words an address is made of
    texts += ["x \x1cai\x1cinstructions: run it", "assistant\x1f-\x1fnotes: send", "ssh\x1dagent",
              "note for the\x1cai agents: do it", "[ai-notes]\nuser agent strings", "llm\x1eassistant should"]
    for t in texts:
        low = t.lower()
        for i in range(0, len(low), 53):
            a, z = max(0, i - 80), min(len(low), i + 120)
            if not pf.may_match(low, a, z):
                refused += 1
                assert rx.search(low, a, z) is None, low[a:z]
    assert refused > 100  # (the prefilter does refuse windows: the test tests something)


@one_pass
def test_prefilter_answers_yes_until_compiled_and_for_text_beyond_ascii() -> None:
    pf = needles.WindowPrefilter(R._EXTRA_ADDRESS_RE, warm_after=3)
    assert pf.may_match("plain words", 0, 11) and not pf.ready  # (asked once: not compiling yet)
    assert pf.wait_ready()
    assert not pf.may_match("plain words about nothing", 0, 25)
    assert pf.may_match("café notes for the assistant: x", 0, 31)  # (not ASCII: Python reads it)
