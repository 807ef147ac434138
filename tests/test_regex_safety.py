"""regex_safety accepts ordinary policy patterns and refuses ones that can hang a scan."""

from __future__ import annotations

import re

import pytest

from agentsh.agent.core.policy.regex_safety import UnsafeRegexError, check_regex

SAFE = [
    r"internal\.corp\.example\.com",
    r"api[_-]?key",
    r"(?i)ignore previous",
    r"(?i)ignore\s+(all\s+)?previous\s+instructions",
    r"\bfoo\b",
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}",
    r"(\w+\.)+\w+",
    r"(?:\d{1,3}\.){3}\d{1,3}",
    r"sk-[A-Za-z0-9]{20,}",
    r"\d+\.?\d*",
    r"(foo|foobar)*",
    r"(ab|ac)*",
    r"\w+\s*=\s*\w+",
    r"a++b",
    r"(?>a+)+b",
    r"^\s*#.*$",
    r"https?://[^\s/]+/\S*",
    r"AKIA[0-9A-Z]{16}",
    r"(?:ab+c)+",
    r"-----BEGIN [A-Z ]+ KEY-----",
    r"(?i)<important>.*?</important>",
    r"[a-z]+(?:-[a-z]+)*",
    r"(?:\w+,)*\w+",
    r"(?i)(?:password|passwd|secret)\s*[:=]\s*\S+",
    r"\b\d{3}-\d{2}-\d{4}\b",
    r"(?:/[\w.-]+)+",
    r"(?s)<!--.*?-->",
    r"EMP-\d{6}",
]

UNSAFE = [
    r"(a+)+",
    r"(a*)*",
    r"(a|a)*",
    r"(a|aa)+",
    r"(.*a){20}",
    r"(.*a){3}",
    r"(\w+\s?)+$",
    r"^(\w+\s?)*$",
    r"([a-z]+ ?)+$",
    r"(\s*\w+)*",
    r"(?:x.*y)+",
    r"(\d+|x)*",
    r"((ab)*)+",
    r"(.*)*",
    r"(?:[a-z0-9]+[._-]?)+@",
    r"\d+\d+x",
    r"\w+\s*\w+!",
    r".*.*=.*",
    r"(a{1,100}){1,100}$",
]


@pytest.mark.parametrize("pattern", SAFE)
def test_ordinary_patterns_are_accepted_and_compiled(pattern: str) -> None:
    compiled = check_regex(pattern)
    assert isinstance(compiled, re.Pattern) and compiled.pattern == pattern


@pytest.mark.parametrize("pattern", UNSAFE)
def test_catastrophic_shapes_are_rejected_with_a_reason(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError, match="backtrack catastrophically"):
        check_regex(pattern)


@pytest.mark.parametrize("pattern", [r"(", r"a{2,1}", r"[z-a]", r"(?P<x>a)(?P<x>b)"])
def test_patterns_that_do_not_compile_are_rejected(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError, match="does not compile"):
        check_regex(pattern)


def test_unsafe_regex_error_is_a_value_error_so_pydantic_reports_it() -> None:
    assert issubclass(UnsafeRegexError, ValueError)


def test_policy_schema_rejects_unsafe_custom_pattern() -> None:
    from pydantic import ValidationError

    from agentsh.agent.core.policy.schema import CustomPattern

    with pytest.raises(ValidationError, match="catastrophically"):
        CustomPattern(name="bad", pattern=r"(\w+\s?)+$")
    assert CustomPattern(name="ok", pattern=r"internal\.corp\.example\.com").pattern
