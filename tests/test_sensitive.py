"""Behaviour of the shared sensitive-data detector (DLP, data flow, embedded secrets)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.agent.core.policy.regex_safety import UnsafeRegexError
from agentsh.agent.core.sensitive import BUILTIN_TYPES, SensitiveDetector

D = SensitiveDetector()

POSITIVE = [
    ("email", "write to jane.roe+tag@mail.example.co.uk today", "jane.roe+tag@mail.example.co.uk"),
    ("phone", "call (415) 555-2671 now", "(415) 555-2671"),
    ("phone", "office 212.555.0147.", "212.555.0147"),
    ("phone", "intl +44 20 7946 0958 ok", "+44 20 7946 0958"),
    ("phone", "us +1 650-253-0000", "+1 650-253-0000"),
    ("credit_card", "card 4111 1111 1111 1111 exp", "4111 1111 1111 1111"),
    ("credit_card", "amex 3782-822463-10005", "3782-822463-10005"),
    ("credit_card", "mc 5555555555554444", "5555555555554444"),
    ("us_ssn", "ssn 536-22-1234 on file", "536-22-1234"),
    ("aws_access_key", "key=AKIA4ZQ7R2XH5V3L9M2P", "AKIA4ZQ7R2XH5V3L9M2P"),
    (
        "aws_secret_key",
        'aws_secret_access_key = "k9Qz/3vT8pL2mN7xR4wY6sB1dF5gH0jK8cV2bN4m"',
        "k9Qz/3vT8pL2mN7xR4wY6sB1dF5gH0jK8cV2bN4m",
    ),
    (
        "github_token",
        "token ghp_4fT9kL2mN8pQ1rS6tU3vW7xY0zA5bC9dE2fG",
        "ghp_4fT9kL2mN8pQ1rS6tU3vW7xY0zA5bC9dE2fG",
    ),
    (
        "openai_api_key",
        "OPENAI=sk-proj-9fKq2LmZ7xR4tW1vB8nY3cD6",
        "sk-proj-9fKq2LmZ7xR4tW1vB8nY3cD6",
    ),
    (
        "anthropic_api_key",
        "x sk-ant-api03-Zx9Ab2Cd4Ef6Gh8Ij0Kl2Mn4-Op",
        "sk-ant-api03-Zx9Ab2Cd4Ef6Gh8Ij0Kl2Mn4-Op",
    ),
    (
        "slack_token",
        "bot xoxb-2345678901-9876543210-AbCdEfGhIjKl",
        "xoxb-2345678901-9876543210-AbCdEfGhIjKl",
    ),
    (
        "slack_token",
        "hook https://hooks.slack.com/services/T01/B02/AbCd1234",
        "https://hooks.slack.com/services/T01/B02/AbCd1234",
    ),
    ("stripe_key", "stripe rk_live_51Hx2Qa9Zb8Yc7Xd6We5Vf", "rk_live_51Hx2Qa9Zb8Yc7Xd6We5Vf"),
    (
        "jwt",
        "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXRlc3Q here",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXRlc3Q",
    ),
]


@pytest.mark.parametrize(("typ", "text", "expected"), POSITIVE, ids=lambda x: str(x)[:20])
def test_each_builtin_type_is_found_with_exact_span(typ: str, text: str, expected: str) -> None:
    matches = D.find(text)
    assert [(m.type, m.text) for m in matches] == [(typ, expected)]
    m = matches[0]
    assert text[m.start : m.end] == expected


def test_private_key_block_is_found_to_its_end() -> None:
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQ==\n-----END OPENSSH PRIVATE KEY-----"
    text = f"config:\n{block}\nthanks"
    (m,) = D.find(text)
    assert m.type == "private_key" and m.text == block


NEGATIVE = [
    "card 4111 1111 1111 1112",  # Luhn fails
    "order 1234567812345678",  # Luhn fails
    "ts 1700000000000 and 1699999999999",  # epoch millis
    "ssn 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000",  # invalid ranges
    "version 1.2.3.4 and 10.20.30.40",
    "date 2024-01-15 12:30:45",
    "phone-ish 123-456-7890 and 555-012-3456",  # NANP: area/exchange cannot start 0/1
    "id 12345678901234567890",
    "sk-learn-is-a-python-package-name",
    "contact me at user at example dot com",
    "just text about secrets and keys, no values",
]


@pytest.mark.parametrize("text", NEGATIVE, ids=lambda x: x[:24])
def test_lookalikes_are_not_matched(text: str) -> None:
    assert D.find(text) == []


def test_redact_replaces_every_match_and_counts_per_type() -> None:
    text = "a@b.io, c@d.io and 4111-1111-1111-1111 plus ghp_4fT9kL2mN8pQ1rS6tU3vW7xY0zA5bC9dE2fG."
    out, counts = D.redact(text)
    assert (
        out
        == "[REDACTED:email], [REDACTED:email] and [REDACTED:credit_card] plus [REDACTED:github_token]."
    )
    assert counts == {"email": 2, "credit_card": 1, "github_token": 1}
    assert D.redact("nothing here") == ("nothing here", {})


def test_types_restrict_and_unknown_types_are_rejected() -> None:
    only_email = SensitiveDetector(types=["email"])
    assert [m.type for m in only_email.find("x@y.org 4111111111111111")] == ["email"]
    with pytest.raises(ValueError, match="unknown sensitive types: nope"):
        SensitiveDetector(types=["email", "nope"])
    assert set(BUILTIN_TYPES) >= {"email", "phone", "credit_card", "us_ssn", "jwt", "private_key"}


def test_custom_patterns_are_found_and_validated() -> None:
    d = SensitiveDetector(types=[], custom=[("employee_id", r"EMP-\d{6}")])
    assert [(m.type, m.text) for m in d.find("by EMP-004211 today")] == [
        ("employee_id", "EMP-004211")
    ]
    with pytest.raises(UnsafeRegexError):
        SensitiveDetector(custom=[("bad", r"(a+)+$")])
    with pytest.raises(UnsafeRegexError):
        SensitiveDetector(custom=[("broken", r"(")])


def test_overlapping_candidates_resolve_to_one_match() -> None:
    # a JWT is one match even though its segments look like other tokens
    text = "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXRlc3Q"
    assert [m.type for m in D.find(text)] == ["jwt"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("0123456789 -.()+@abcxyzAKIAghp_sk-eyJ.:/=\n"))
        | st.characters(),
        max_size=300,
    )
)
def test_find_never_raises_and_matches_are_sorted_in_bounds_and_disjoint(text: str) -> None:
    matches = D.find(text)
    last = 0
    for m in matches:
        assert 0 <= m.start < m.end <= len(text)
        assert m.start >= last
        assert text[m.start : m.end] == m.text
        last = m.end
    redacted, counts = D.redact(text)
    assert sum(counts.values()) == len(matches)
    assert redacted.count("[REDACTED:") >= len(matches)
