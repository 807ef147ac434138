"""Checks that a policy-supplied regular expression is safe to run on untrusted text.

A custom pattern that fails to compile, or whose shape can backtrack
catastrophically (nested or adjacent unbounded quantifiers over overlapping
input), is a policy error at load time, never a runtime hang.
"""

from __future__ import annotations

import re


class UnsafeRegexError(ValueError):
    pass


def check_regex(pattern: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise UnsafeRegexError(f"pattern does not compile: {e}") from None
    return compiled
