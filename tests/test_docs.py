"""Docs that are generated from code stay in step with it."""

from __future__ import annotations

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
