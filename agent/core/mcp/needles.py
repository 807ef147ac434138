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
import time
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


# ---------------------------------------------------------------- window prefilter

# whitespace as Python's \s reads ASCII (PCRE's \s lacks the four separators \x1c-\x1f)
_WS_CLASS = r"\t-\r \x1c-\x1f"
_QUANT = re.compile(r"\{(\d*),(\d+)\}")


def hyperscan_superset(pattern: str) -> str:
    """``pattern`` (Python syntax) rewritten so that Hyperscan, in prefilter mode, matches at
    least wherever Python would in ASCII text: ``\\s``/``\\S`` spelled as Python reads them,
    every character beyond ASCII (``\\u2014``, a literal "助") turned into the byte ``\\xff``,
    which ASCII text never holds, and bounded repeats left open above (``{0,40}`` → ``{0,}``:
    a larger language, and a far smaller automaton). Raises ValueError for a construct it does
    not translate."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            e = pattern[i + 1 : i + 2]
            if e in ("u", "U"):
                width = 4 if e == "u" else 8
                out.append(r"\xff")
                i += 2 + width
                continue
            if e == "s":
                out.append(_WS_CLASS if in_class else f"[{_WS_CLASS}]")
            elif e == "S":
                if in_class:
                    raise ValueError("\\S inside a character class")
                out.append(f"[^{_WS_CLASS}]")
            elif e in ("N", "A", "Z", "g") or e.isdigit():
                raise ValueError(f"\\{e} is not translated")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if not c.isascii():
            out.append(r"\xff")
            i += 1
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                raise ValueError("a nested set")
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            j = i + 1
            if pattern[j : j + 1] == "^":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1  # (a ']' first in a set is a literal)
            out.append(pattern[i:j])
            i = j
            continue
        if c == "{":
            m = _QUANT.match(pattern, i)
            if m is not None:
                out.append("{" + (m.group(1) or "0") + ",}")
                i = m.end()
                continue
        if c == "(" and pattern.startswith("(?P", i):
            raise ValueError("named groups are not translated")
        out.append(c)
        i += 1
    return "".join(out)


class WindowPrefilter:
    """A necessary condition for ``rx`` to match in a window of a text, answered by Hyperscan.

    The result scanner tries its address patterns (a hundred alternatives) in short windows
    around anchor words; Python's engine tries every alternative at every position, a quarter
    of a millisecond per window, and a changelog holds hundreds of windows. Hyperscan, given
    the same pattern in prefilter mode (a superset: lookarounds dropped, bounded repeats
    opened, see hyperscan_superset), says in a microsecond or two whether a match is possible;
    only then does Python look. ``may_match`` answers True (Python looks) whenever it cannot
    answer exactly: the window is not ASCII (Unicode ``\\w``/``\\s`` differ), Hyperscan is
    missing or the pattern did not translate, or the database is still compiling. It is
    compiled on a background thread at first use (~0.5 s of CPU, the GIL released), so no
    result waits for it, and only once the process has asked about ``warm_after`` windows (a shim
    that relays a few short results never compiles it); both readings give the same findings
    (tests/test_needles.py)."""

    def __init__(self, rx: re.Pattern[str], warm_after: int = 32) -> None:
        self._rx = rx
        self._warm_after = warm_after  # windows asked about before the compile starts
        self._asked = 0
        self._db: Any = None
        self._state = "idle" if _hs is not None else "off"  # idle → compiling → ready | off
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def ready(self) -> bool:
        return self._db is not None

    def start(self) -> None:
        """Compile on a background thread (idempotent)."""
        with self._lock:
            if self._state != "idle":
                return
            self._state = "compiling"
        threading.Thread(target=self._compile, name="agentsh-prefilter", daemon=True).start()

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """Start and wait for the database (tests; the scanner never waits)."""
        self.start()
        deadline = time.monotonic() + timeout
        while self._state == "compiling" and time.monotonic() < deadline:
            time.sleep(0.01)
        return self._db is not None

    def _compile(self) -> None:
        try:
            flags = _hs.HS_FLAG_PREFILTER | _hs.HS_FLAG_ALLOWEMPTY | _hs.HS_FLAG_SINGLEMATCH
            if self._rx.flags & re.M:
                flags |= _hs.HS_FLAG_MULTILINE
            if self._rx.flags & re.S:
                flags |= _hs.HS_FLAG_DOTALL
            if self._rx.flags & re.I:
                flags |= _hs.HS_FLAG_CASELESS
            if self._rx.flags & re.X:
                raise ValueError("verbose patterns are not translated")
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            db.compile(expressions=[hyperscan_superset(self._rx.pattern).encode("ascii")], ids=[0],
                       elements=1, flags=[flags])  # fmt: skip
            self._db = db
            self._state = "ready"
        except Exception as e:  # Python answers every window instead
            log.warning("hyperscan could not compile a window prefilter (%s); Python reads every window", e)
            self._state = "off"

    def may_match(self, text: str, a: int, z: int) -> bool:
        """Can ``rx.finditer(text, a, z)`` find anything? False only when it certainly cannot."""
        db = self._db
        if db is None:
            if self._state == "idle":
                self._asked += 1
                if self._asked >= self._warm_after:
                    self.start()  # (a process that reads a few short results never pays for the compile)
            return True
        w = text[a - 1 if a > 0 else 0 : z]  # (the character before: what \b and ^ look at)
        if not w.isascii():
            return True
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hs.Scratch(db)
        hit = [False]

        def on_match(_ident: int, _start: int, _end: int, _flags: int, _ctx: object) -> bool:
            hit[0] = True
            return True  # (stop: one is enough)

        try:
            db.scan(w.encode("ascii"), match_event_handler=on_match, scratch=scratch)
        except _hs.ScanTerminated:
            pass
        return hit[0]
