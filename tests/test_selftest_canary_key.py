"""The data-flow canary of `agentshctl selftest` must always be a secret the
sensitive-data rules recognise: a canary they miss reads as a hook layer that
lets an exfiltration through (a selftest that fails by chance)."""

from __future__ import annotations

from agentsh.agent.core.sensitive import SensitiveDetector
from agentsh.agent.ctl.selftest import canary_access_key


def test_every_canary_access_key_is_recognised_as_an_aws_access_key() -> None:
    det = SensitiveDetector()
    keys = {canary_access_key() for _ in range(3000)}
    assert len(keys) == 3000  # fresh every time
    missed = [k for k in keys if [m.type for m in det.find(f"AWS_ACCESS_KEY_ID={k}\n")] != ["aws_access_key"]]
    assert missed == []


def test_a_key_without_a_digit_is_not_an_access_key_which_is_why_the_canary_has_one() -> None:
    # the rule the old canary tripped on 3.6% of runs: 16 letters after AKIA are a word
    assert SensitiveDetector().find("AWS_ACCESS_KEY_ID=AKIABCDEFGHJKLMNPQRS\n") == []
