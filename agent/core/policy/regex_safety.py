"""Checks that a policy-supplied regular expression is safe to run on untrusted text.

A custom pattern that fails to compile, or whose shape can backtrack
catastrophically (nested or adjacent unbounded quantifiers over overlapping
input), is a policy error at load time, never a runtime hang: DLP and the MCP
detector run these patterns on attacker-controlled text of any size.

The analysis is structural, on the tree from Python's own regex parser:

* nested: inside a repeated group, an unbounded quantifier whose characters
  can also start what follows it in the same iteration or the next one
  (``(a+)+``, ``(\\w+\\s?)+``, ``(.*a){3}``) — the iteration boundaries are
  ambiguous, so a failing match tries exponentially many splits;
* alternation: inside a repeated group, two branches that can match the same
  text (``(a|a)*``, ``(a|aa)+``);
* adjacent: two unbounded quantifiers over overlapping characters separated
  only by optional items (``\\d+\\d+``, ``\\w+\\s*\\w+``) followed by something
  that can fail — quadratic per start position, cubic over a search.

Possessive quantifiers and atomic groups never backtrack and are accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # typeshed types the regex parser only under its pre-3.11 names (the same
    # modules: sre_parse/sre_constants re-export re._parser/re._constants).
    import sre_constants as _c
    import sre_parse as _p
else:
    try:  # Python >= 3.11
        from re import _constants as _c
        from re import _parser as _p
    except ImportError:  # pragma: no cover - older interpreters
        import sre_constants as _c
        import sre_parse as _p

__all__ = ["UnsafeRegexError", "check_regex"]


class UnsafeRegexError(ValueError):
    pass


# A repeat counts as "unbounded" when it can run this many times or more.
_BIG = 16

# Character classes are approximated as bit masks over a sample alphabet:
# Latin-1 plus a few representatives of other classes.
_ALPHABET = [chr(i) for i in range(256)] + [
    "\u0430",  # Cyrillic a (word)
    "\u0661",  # Arabic-Indic digit one (\d in unicode mode)
    "\u2003",  # em space (\s)
    "\u2028",  # line separator
    "\u200b",  # zero-width space (not word, not space)
    "\u4e2d",  # CJK (word)
    "\U0001f600",  # emoji (symbol)
]
_ALL = (1 << len(_ALPHABET)) - 1
_INDEX = {ch: i for i, ch in enumerate(_ALPHABET)}


def _mask(pred: Callable[[str], bool]) -> int:
    return reduce(
        lambda acc, i: acc | (1 << i), (i for i, ch in enumerate(_ALPHABET) if pred(ch)), 0
    )


_CATEGORY = {
    _c.CATEGORY_DIGIT: _mask(str.isdecimal),
    _c.CATEGORY_WORD: _mask(lambda ch: ch.isalnum() or ch == "_"),
    _c.CATEGORY_SPACE: _mask(str.isspace),
    _c.CATEGORY_LINEBREAK: _mask(lambda ch: ch == "\n"),
}
_CATEGORY.update(
    {
        _c.CATEGORY_NOT_DIGIT: _ALL & ~_CATEGORY[_c.CATEGORY_DIGIT],
        _c.CATEGORY_NOT_WORD: _ALL & ~_CATEGORY[_c.CATEGORY_WORD],
        _c.CATEGORY_NOT_SPACE: _ALL & ~_CATEGORY[_c.CATEGORY_SPACE],
        _c.CATEGORY_NOT_LINEBREAK: _ALL & ~_CATEGORY[_c.CATEGORY_LINEBREAK],
    }
)
_NEWLINE = 1 << _INDEX["\n"]

# An operand of the parse tree: its shape depends on the opcode beside it (an int
# for LITERAL, (min, max, body) for repeats, (group, add, del, body) for
# SUBPATTERN, ...), which a static type cannot follow; the code checks the
# opcode before it unpacks the operand.
_Av = Any

_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)
_ZERO_WIDTH = (_c.AT, _c.ASSERT, _c.ASSERT_NOT)


def _char_bit(code: int, icase: bool) -> int:
    ch = chr(code)
    chars = {ch, ch.lower(), ch.upper()} if icase else {ch}
    bits = 0
    for c in chars:
        i = _INDEX.get(c)
        if i is not None:
            bits |= 1 << i
    # a literal outside the sample alphabet still overlaps "any"-like classes
    return bits or (1 << _INDEX["\u4e2d"])


def _atom(op: object, av: _Av, flags: int) -> int | None:
    """Characters a single-character item can consume, or None if not an atom."""
    icase = bool(flags & re.IGNORECASE)
    if op is _c.LITERAL:
        return _char_bit(av, icase)
    if op is _c.NOT_LITERAL:
        return _ALL & ~_char_bit(av, False)
    if op is _c.ANY:
        return _ALL if flags & re.DOTALL else _ALL & ~_NEWLINE
    if op is _c.IN:
        bits = 0
        negate = False
        for iop, iav in av:
            if iop is _c.NEGATE:
                negate = True
            elif iop is _c.LITERAL:
                bits |= _char_bit(iav, icase)
            elif iop is _c.RANGE:
                lo, hi = iav
                for i, ch in enumerate(_ALPHABET):
                    o = ord(ch)
                    if lo <= o <= hi or (icase and lo <= ord(ch.swapcase()[:1] or ch) <= hi):
                        bits |= 1 << i
                if hi > 0xFF:  # ranges reaching beyond Latin-1 cover the samples we have
                    bits |= sum(
                        1 << i for i in range(256, len(_ALPHABET)) if lo <= ord(_ALPHABET[i]) <= hi
                    )
            elif iop is _c.CATEGORY:
                bits |= _CATEGORY.get(iav, _ALL)
            else:  # CHARSET/BIGCHARSET (only after compile) or unknown: be conservative
                bits = _ALL
        return _ALL & ~bits if negate else bits
    return None


def _is_unbounded(op: object, av: _Av) -> bool:
    return op in _REPEATS and av[1] >= _BIG


class _Analyzer:
    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.problem: str | None = None

    # ---------------------------------------------------------------- sets

    def first(self, seq: list, flags: int) -> tuple[int, bool]:
        """(chars that can start seq, seq can match empty)."""
        bits = 0
        for op, av in seq:
            b, nullable = self.first_item(op, av, flags)
            bits |= b
            if not nullable:
                return bits, False
        return bits, True

    def first_item(self, op: object, av: _Av, flags: int) -> tuple[int, bool]:
        a = _atom(op, av, flags)
        if a is not None:
            return a, False
        if op in _REPEATS or op is _c.POSSESSIVE_REPEAT:
            lo, _hi, body = av
            b, nullable = self.first(body, flags)
            return b, nullable or lo == 0
        if op is _c.SUBPATTERN:
            _g, add, _del, body = av
            return self.first(body, flags | add)
        if op is _c.ATOMIC_GROUP:
            return self.first(av, flags)
        if op is _c.BRANCH:
            bits, nullable = 0, False
            for alt in av[1]:
                b, n = self.first(alt, flags)
                bits |= b
                nullable = nullable or n
            return bits, nullable
        if op is _c.GROUPREF_EXISTS:
            _g, yes, no = av
            b1, n1 = self.first(yes, flags)
            b2, n2 = self.first(no or [], flags)
            return b1 | b2, n1 or n2
        if op is _c.GROUPREF:
            return _ALL, True
        return 0, True  # anchors and lookarounds consume nothing

    def last(self, seq: list, flags: int) -> int:
        """Characters that can end a non-empty match of seq."""
        bits = 0
        for op, av in reversed(seq):
            a = _atom(op, av, flags)
            if a is not None:
                return bits | a
            if op in _REPEATS or op is _c.POSSESSIVE_REPEAT:
                bits |= self.last(av[2], flags)
            elif op is _c.SUBPATTERN:
                bits |= self.last(av[3], flags | av[1])
            elif op is _c.ATOMIC_GROUP:
                bits |= self.last(av, flags)
            elif op is _c.BRANCH:
                for alt in av[1]:
                    bits |= self.last(alt, flags)
            elif op is _c.GROUPREF_EXISTS:
                bits |= self.last(av[1], flags) | self.last(av[2] or [], flags)
            elif op is _c.GROUPREF:
                bits |= _ALL
            if not self.first_item(op, av, flags)[1]:
                return bits
        return bits

    def consumable(self, seq: list, flags: int) -> int:
        """Every character any atom inside seq can consume."""
        bits = 0
        for op, av in seq:
            a = _atom(op, av, flags)
            if a is not None:
                bits |= a
            elif op in _REPEATS or op is _c.POSSESSIVE_REPEAT:
                bits |= self.consumable(av[2], flags)
            elif op is _c.SUBPATTERN:
                bits |= self.consumable(av[3], flags | av[1])
            elif op is _c.ATOMIC_GROUP:
                bits |= self.consumable(av, flags)
            elif op is _c.BRANCH:
                for alt in av[1]:
                    bits |= self.consumable(alt, flags)
            elif op is _c.GROUPREF_EXISTS:
                bits |= self.consumable(av[1], flags) | self.consumable(av[2] or [], flags)
            elif op is _c.GROUPREF:
                bits |= _ALL
        return bits

    @staticmethod
    def can_fail(seq: list) -> bool:
        for op, av in seq:
            if op in _REPEATS or op is _c.POSSESSIVE_REPEAT:
                if av[0] > 0:
                    return True
            else:
                return True
        return False

    # ---------------------------------------------------------------- walk

    def walk(self, seq: list, flags: int, cont: int, tail_fails: bool, in_loop: bool) -> None:
        """Check seq; cont = chars that may follow it, tail_fails = a later item can fail."""
        for i, (op, av) in enumerate(seq):
            if self.problem:
                return
            rest = seq[i + 1 :]
            rb, rnull = self.first(rest, flags)
            follow = rb | (cont if rnull else 0)
            rest_fails = tail_fails or self.can_fail(rest)
            if op in _REPEATS:
                lo, hi, body = av
                # exit-vs-continue (first) or split (last) is ambiguous at the loop's end
                ends = self.first(body, flags)[0] | self.last(body, flags)
                if in_loop and hi >= _BIG and ends & follow:
                    self.problem = "nested quantifiers: an unbounded repeat inside a repeated group can end in more than one place"
                    return
                if hi >= _BIG:
                    self.check_adjacent(seq, i, flags, tail_fails)
                    if self.problem:
                        return
                loops = hi >= 2
                bfirst, _ = self.first(body, flags)
                inner_cont = follow | (bfirst if loops else 0)
                self.walk(body, flags, inner_cont, rest_fails or lo > 1, in_loop or loops)
            elif op is _c.SUBPATTERN:
                self.walk(av[3], flags | av[1], follow, rest_fails, in_loop)
            elif op is _c.BRANCH:
                if in_loop:
                    self.check_branch(av[1], flags, follow)
                    if self.problem:
                        return
                for alt in av[1]:
                    self.walk(alt, flags, follow, rest_fails, in_loop)
            elif op is _c.GROUPREF_EXISTS:
                self.walk(av[1], flags, follow, rest_fails, in_loop)
                self.walk(av[2] or [], flags, follow, rest_fails, in_loop)
            elif op in (_c.ASSERT, _c.ASSERT_NOT):
                self.walk(av[1], flags, 0, False, False)
            # possessive repeats and atomic groups never backtrack: nothing to check

    def check_adjacent(self, seq: list, i: int, flags: int, tail_fails: bool) -> None:
        x_chars = self.last(seq[i][1][2], flags)
        for j in range(i + 1, len(seq)):
            op, av = seq[j]
            inner = self._unwrap_repeat(op, av)
            if inner is not None and _is_unbounded(*inner):
                y_chars = self.first(inner[1][2], flags)[0]
                if x_chars & y_chars and (tail_fails or self.can_fail(seq[j + 1 :])):
                    self.problem = "adjacent unbounded quantifiers over overlapping characters"
                    return
            _b, nullable = self.first_item(op, av, flags)
            if not nullable:
                return

    @staticmethod
    def _unwrap_repeat(op: object, av: _Av) -> tuple[object, _Av] | None:
        while op is _c.SUBPATTERN and len(av[3]) == 1:
            op, av = av[3][0]
        return (op, av) if op in _REPEATS else None

    def check_branch(self, alts: list, flags: int, follow: int) -> None:
        """Inside a loop, branches that can match the same text make splits ambiguous."""
        lines = [self._linear(alt, flags) for alt in alts]
        for a in range(len(lines)):
            for b in range(a + 1, len(lines)):
                if self._ambiguous(lines[a], lines[b], follow):
                    self.problem = "alternation inside a repeat has branches matching the same text"
                    return

    def _linear(self, alt: list, flags: int) -> tuple[list[int], bool]:
        """Leading single-character items of a branch, and whether that is all of it."""
        out: list[int] = []
        for op, av in alt:
            a = _atom(op, av, flags)
            if a is None:
                if op is _c.SUBPATTERN:
                    inner, whole = self._linear(av[3], flags | av[1])
                    out.extend(inner)
                    if whole:
                        continue
                return out, False
            out.append(a)
        return out, True

    @staticmethod
    def _ambiguous(x: tuple[list[int], bool], y: tuple[list[int], bool], follow: int) -> bool:
        (sx, wx), (sy, wy) = x, y
        if len(sx) > len(sy):
            (sx, wx), (sy, wy) = (sy, wy), (sx, wx)
        if not wx:  # shorter branch is not fully known
            return False
        if any(not (p & q) for p, q in zip(sx, sy, strict=False)):
            return False
        if len(sx) == len(sy):
            return wy
        # the longer branch's remainder could be what follows (e.g. the next iteration)
        return bool(sy[len(sx)] & follow)


def check_regex(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` or raise UnsafeRegexError saying why it is refused."""
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise UnsafeRegexError(f"pattern {pattern!r} does not compile: {e}") from None
    except (OverflowError, RecursionError) as e:  # pragma: no cover - absurd patterns
        raise UnsafeRegexError(f"pattern {pattern!r} is too complex: {e}") from None
    try:
        parsed = _p.parse(pattern)
    except Exception as e:  # pragma: no cover - compiled above, so parse succeeds
        raise UnsafeRegexError(f"pattern {pattern!r} cannot be analysed: {e}") from None
    flags = parsed.state.flags
    an = _Analyzer(flags)
    try:
        an.walk(list(parsed.data), flags, 0, False, False)
    except RecursionError:
        raise UnsafeRegexError(f"pattern {pattern!r} is nested too deeply to analyse") from None
    if an.problem:
        raise UnsafeRegexError(
            f"pattern {pattern!r} can backtrack catastrophically ({an.problem}); "
            "make repeated parts unambiguous or use a possessive quantifier (e.g. a++)"
        )
    return compiled
