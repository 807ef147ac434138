"""Glob patterns used in policy rules (`*`, `?`, `[abc]`, `[!abc]`).

Compiled once to an anchored regex; matching is case-sensitive. A malformed
pattern (unclosed `[`, empty class, NUL) is a policy error, caught at load.
"""

from __future__ import annotations

import re
from functools import lru_cache


class GlobError(ValueError):
    pass


def validate_glob(pattern: str) -> None:
    _compile(pattern)


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
            j = i + 1
            negate = j < n and pattern[j] == "!"
            if negate:
                j += 1
            start = j
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                raise GlobError(f"unclosed '[' at position {i} in glob {pattern!r}")
            body = pattern[start:j]
            if not body:
                raise GlobError(f"empty character class at position {i} in glob {pattern!r}")
            body = body.replace("\\", "\\\\").replace("^", "\\^")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = j
        elif c == "]":
            raise GlobError(f"unmatched ']' at position {i} in glob {pattern!r}")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def glob_match(pattern: str, value: str) -> bool:
    if pattern == "*":
        return True
    return _compile(pattern).fullmatch(value) is not None


def is_literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")
