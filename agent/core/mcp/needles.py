"""Where each of a fixed set of literal needles occurs in a text, found in one pass.

The result scanner asks of every tool result where any of some seventy words occurs: the
words that address the model, claim authority over its instructions, or anchor the
address forms only results use. ``str.find`` per word costs ~10 µs per 16 KB of text on
CPython, about half a millisecond per result in all, spent mostly on results that hold
none of them. Hyperscan (Intel's multi-pattern matcher, the ``hyperscan`` package) finds
every occurrence of all of them in one pass of ~20 µs.

Without Hyperscan (not installed, a CPU it does not support, a text that is not ASCII,
whose byte offsets are not character offsets, or a text with more occurrences than
``MAX_HITS``) ``find`` returns None and the caller reads the text with ``str.find`` as
before: both readings give the same answers, and tests/test_needles.py holds them to it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

MAX_HITS = 4096
"""Occurrences collected per text in the one pass; past this (a text built of needles) the
``str.find`` reading answers instead, so hostile input costs what it cost before."""

_hs: Any
try:
    import hyperscan

    _hs = hyperscan
except Exception:  # ImportError, or a library that does not load on this CPU
    _hs = None


class NeedleSet:
    """A fixed set of needles (lower-case literals), compiled once."""

    def __init__(self, needles: Iterable[str]) -> None:
        self.needles: tuple[str, ...] = tuple(dict.fromkeys(needles))
        self._db: Any = None
        self._local = threading.local()  # a Hyperscan scratch is used by one thread at a time
        if _hs is not None and self.needles and all(n.isascii() and n for n in self.needles):
            try:
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                db.compile(expressions=[re.escape(n).encode() for n in self.needles],
                           ids=list(range(len(self.needles))), elements=len(self.needles),
                           flags=[0] * len(self.needles))  # fmt: skip
                self._db = db
            except Exception as e:  # the str.find reading answers instead
                log.warning("hyperscan could not compile the needle set (%s); using str.find", e)
        self._lens = tuple(len(n) for n in self.needles)

    @property
    def one_pass(self) -> bool:
        """Does this set find its needles in one pass (Hyperscan loaded and compiled)?"""
        return self._db is not None

    def find(self, low: str) -> dict[str, list[int]] | None:
        """needle → the start of each of its occurrences in ``low``, ascending (overlapping ones
        included; a needle that does not occur has no key). None: read ``low`` with ``str.find``."""
        if self._db is None or not low.isascii():
            return None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hs.Scratch(self._db)
        ends: list[tuple[int, int]] = []
        add = ends.append

        def on_match(ident: int, _start: int, end: int, _flags: int, _ctx: object) -> bool:
            add((ident, end))
            return len(ends) > MAX_HITS

        try:
            self._db.scan(low.encode("ascii"), match_event_handler=on_match, scratch=scratch)
        except _hs.ScanTerminated:
            return None
        at: dict[str, list[int]] = {}
        needles, lens = self.needles, self._lens
        for ident, end in ends:  # (reported in order of their end: starts of one needle ascend)
            n = needles[ident]
            got = at.get(n)
            if got is None:
                at[n] = [end - lens[ident]]
            else:
                got.append(end - lens[ident])
        return at


def one_pass_available() -> bool:
    """Is Hyperscan loaded? (tests/test_needles.py compares the two readings only where it is)"""
    return _hs is not None
