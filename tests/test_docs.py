"""Docs that are generated from code stay in step with it."""

from __future__ import annotations

import re
from pathlib import Path

from agentsh.agent.core.policy.reference import markdown

REPO = Path(__file__).resolve().parents[1]


def test_policy_reference_lists_every_key_of_the_schema() -> None:
    text = (REPO / "docs/policy.md").read_text()
    assert markdown() in text, "docs/policy.md is stale: regenerate with python -m agentsh.agent.core.policy.reference"


def test_events_reference_is_generated_from_the_event_models() -> None:
    from agentsh.agent.core.events.reference import BLOCKS, block

    text = (REPO / "docs/events.md").read_text()
    for name in BLOCKS:
        assert block(name) in text, (
            f"docs/events.md block {name} is stale: regenerate with "
            "python -m agentsh.agent.core.events.reference --write docs/events.md"
        )


def test_readme_names_the_two_commands() -> None:
    text = (REPO / "README.md").read_text()
    assert "make run" in text and "make test" in text


# Comments and docs point at docs/ sections, never at the design documents the
# product started from: a requirement id or a design number means nothing to a
# reader of this repository.
DESIGN_CITATION = re.compile(
    r"\b(?:FR|SC)-\d+"  # requirement ids: FR-011, SC-008, FR-030..034
    r"|\bseeds?\s+\d{3}"  # seed 001, seeds 000/003
    r"|\bseeds?\s+designs?\b|\bdesign\s+seeds?\b"
    r"|\bthe\s+seed(?:'|\u2019)s\b",  # the seed's DataOrigin, the seed's edge case
    re.IGNORECASE,
)
CITATION_ROOTS = ("agent", "proxy", "shim", "bpf", "docs", "README.md")
# Being edited by another change; drop each entry once its citations are gone.
CITATIONS_PENDING: frozenset[str] = frozenset()


def _design_citations(text: str) -> list[tuple[int, str]]:
    return [
        (n, m.group(0))
        for n, line in enumerate(text.splitlines(), 1)
        for m in DESIGN_CITATION.finditer(line)
    ]


def test_design_citation_pattern_tells_citations_from_ordinary_seeds() -> None:
    cited = (
        "rules (seed 001)\n(FR-030..034)\nSC-008\nOrder (seeds 000/003)\n"
        "the seed's DataOrigin\nnamed as in the seed designs\n"
    )
    assert [n for n, _ in _design_citations(cited)] == [1, 2, 3, 4, 5, 6]
    ordinary = 'seed phrases\nrandom.Random(seed)\n"w:seed": -0.14\nshuffle seed; positives\nmake seed\n'
    assert _design_citations(ordinary) == []


def test_code_and_docs_cite_docs_sections_not_design_documents() -> None:
    found: list[str] = []
    for root in CITATION_ROOTS:
        top = REPO / root
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            rel = path.relative_to(REPO).as_posix()
            if not path.is_file() or "__pycache__" in path.parts or rel in CITATIONS_PENDING:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # compiled objects: no comments to read
            found += [f"{rel}:{n}: {hit}" for n, hit in _design_citations(text)]
    assert not found, "cite the docs/ section that states the rule instead:\n" + "\n".join(found)
