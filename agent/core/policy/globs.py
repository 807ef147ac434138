"""Glob patterns used in policy rules (`*`, `?`, `[abc]`, `[!abc]`).

Compiled once to an anchored regex; matching is case-sensitive. A malformed
pattern (unclosed `[`, empty class, NUL) is a policy error, caught at load.
Loading only *checks* the syntax (a scan, no regex compile: a policy may hold
100k rules); patterns are compiled when first matched.
"""

from __future__ import annotations

import re
from functools import lru_cache


class GlobError(ValueError):
    pass


def validate_glob(pattern: str) -> None:
    """Raise GlobError if ``pattern`` is malformed; cheap (no regex is built)."""
    if not pattern:
        raise GlobError("empty glob pattern")
    if "\x00" in pattern:
        raise GlobError("glob pattern contains NUL")
    if "[" not in pattern and "]" not in pattern:
        return
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "[":
            i = _class_end(pattern, i)
        elif c == "]":
            raise GlobError(f"unmatched ']' at position {i} in glob {pattern!r}")
        i += 1


def _class_end(pattern: str, i: int) -> int:
    """Index of the ``]`` closing the class that opens at ``i``."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "!":
        j += 1
    start = j
    if j < n and pattern[j] == "]":
        j += 1
    j = pattern.find("]", j)
    if j < 0:
        raise GlobError(f"unclosed '[' at position {i} in glob {pattern!r}")
    if j == start:
        raise GlobError(f"empty character class at position {i} in glob {pattern!r}")
    k = start
    while k + 2 < j:  # a range "x-y" must not run backwards (the regex would not compile)
        if pattern[k + 1] == "-":
            if pattern[k] > pattern[k + 2]:
                raise GlobError(
                    f"bad character range {pattern[k : k + 3]!r} at position {k} in glob {pattern!r}"
                )
            k += 3
        else:
            k += 1
    return j


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise GlobError("empty glob pattern")
    if "\x00" in pattern:
        raise GlobError("glob pattern contains NUL")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append(".*")
            continue
        if c == "?":
            out.append(".")
        elif c == "[":
            negate = i + 1 < n and pattern[i + 1] == "!"
            start = i + 2 if negate else i + 1
            j = _class_end(pattern, i)
            body = pattern[start:j]
            body = body.replace("\\", "\\\\").replace("^", "\\^")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = j
        elif c == "]":
            raise GlobError(f"unmatched ']' at position {i} in glob {pattern!r}")
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error as e:  # validate_glob should have caught it already
        raise GlobError(f"glob {pattern!r} does not compile: {e}") from None


def glob_match(pattern: str, value: str) -> bool:
    if pattern == "*":
        return True
    return _compile(pattern).fullmatch(value) is not None


def is_literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")
