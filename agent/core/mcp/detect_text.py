# ruff: noqa: RUF001, RUF002, RUF003  (the confusables table is made of look-alike characters on purpose)
"""Text preparation for the tool-definition detector.

Attackers hide instructions from humans (invisible characters, ANSI escapes,
homoglyphs, fullwidth forms) while the model still reads them. Rules therefore
match a *normalised* copy: escapes and invisible characters removed, NFKC and
combining marks folded, confusable letters mapped to Latin, lower-cased. An
index map takes every normalised position back to the original string so
detections point at what is really there.

Plain ASCII without control characters (nearly every real tool) skips all of
this: the normalised text is the lower-cased original and positions are equal.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

_T = TypeVar("_T")

# Cyrillic / Greek / Armenian / Latin-extended letters that render like Latin
# ones. NFKC handles fullwidth and mathematical alphanumerics; these remain.
_CONFUSABLES: dict[str, str] = {
    # Cyrillic lower
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
    "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ү": "y", "ғ": "f", "ɡ": "g", "ѵ": "v", "ь": "b",
    # Cyrillic upper
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ү": "Y", "Ԛ": "Q",
    "Ԝ": "W", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Armenian and others
    "օ": "o", "ո": "n", "ս": "u", "հ": "h", "ց": "g", "ա": "w",
    "ı": "i", "ȷ": "j", "ſ": "s", "ℓ": "l", "ⅼ": "l", "ꓲ": "I", "ꓳ": "O", "ꓴ": "U",
    # dashes, quotes and slashes that NFKC keeps
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "⁄": "/", "∕": "/",
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"',
    "․": ".", "。": ".", "｡": ".",
}  # fmt: skip

# letters of other scripts that read as Latin ones (not the dashes and quotes)
CONFUSABLE_LETTERS = frozenset(k for k, v in _CONFUSABLES.items() if v.isalpha())

# ESC-introduced sequences (CSI, OSC, two-character) and the 8-bit CSI.
ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final
    r"|\x1b\][^\x07\x1b]{0,2000}(?:\x07|\x1b\\)?"  # OSC ... BEL/ST (hyperlinks, titles)
    r"|\x1b[PX^_][^\x1b]{0,2000}(?:\x1b\\)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[ -/]*[0-~]?"  # two-character escapes, lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# ASCII control characters other than tab/newline/carriage return.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _KEEP_MARKS(o: int) -> bool:
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or \
        0xF900 <= o <= 0xFAFF or 0x0900 <= o <= 0x0DFF  # fmt: skip


@lru_cache(maxsize=8192)
def _plain_lower(ch: str) -> str:
    """A letter of a word written wholly in its own script: only case is folded."""
    return ch.lower()


_WORD_RE = re.compile(r"[^\W\d_]+")


_ASCII_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_WORD_CHAR = re.compile(r"[^\W\d_]")


def non_ascii_words(text: str) -> list[tuple[int, str]]:
    """(start, word) of the words (runs of letters, as _WORD_RE reads them) that hold a letter
    beyond ASCII, found from the non-ASCII characters out rather than by reading every word."""
    out: list[tuple[int, str]] = []
    end = 0
    for m in _NON_ASCII_RUN.finditer(text):
        i = max(m.start(), end)
        while i < m.end():
            if _WORD_CHAR.match(text, i) is None:
                i += 1
                continue
            a = i
            while a > end and _WORD_CHAR.match(text, a - 1) is not None:
                a -= 1
            w = _WORD_RE.match(text, a)
            assert w is not None
            out.append((a, w.group(0)))
            i = end = w.end()
    return out


def _script_words(text: str) -> set[int]:
    """Positions of confusable letters that stand in words of their own script ("перед"):
    those are read as written. Words mixing in Latin letters ("ѕеnd") or made only of
    look-alikes ("сору" for "copy") are folded to Latin."""
    keep: set[int] = set()
    words = non_ascii_words(text)  # (a 64 KB changelog holds ten thousand words, a handful of them not ASCII)
    other = sum(len(w) for _, w in words)
    ascii_bytes = text.encode("ascii", "ignore")
    ascii_letters = len(ascii_bytes) - len(ascii_bytes.translate(None, _ASCII_LETTERS))
    latin = ascii_letters - sum(1 for _, w in words for c in w if c.isascii())  # (the letters of ASCII words)
    mostly_other = other > latin  # Russian or Greek text, not look-alikes in English
    for start, w in words:
        if any(c.isascii() for c in w):
            continue  # mixed words are folded: that is the homoglyph trick
        if not any(0x0370 <= ord(c) <= 0x058F for c in w):
            continue  # only Greek, Cyrillic and Armenian words are kept (fullwidth Latin is folded)
        if all(c in _CONFUSABLES for c in w) and not mostly_other:
            continue  # "сору" standing for "copy" in English text
        keep.update(range(start, start + len(w)))
    return keep


@lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    """One character → its matching form ('' for invisible/format/marks)."""
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Co", "Cs", "Mn", "Me", "Cc") and ch not in "\t\n\r":
        return ""
    if 0xFE00 <= ord(ch) <= 0xFE0F:  # variation selectors are Mn; kept here for clarity
        return ""
    mapped = _CONFUSABLES.get(ch)
    if mapped is not None:
        return mapped.lower()
    if _KEEP_MARKS(ord(ch)):
        return ch  # kana, hangul, CJK: their marks are letters, not accents (ず is not す)
    n = unicodedata.normalize("NFKD", ch)
    out = []
    for c in n:
        if unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        c = _CONFUSABLES.get(c, c)
        out.append(c)
    s = unicodedata.normalize("NFKC", "".join(out)).lower()
    if len(s) > 4:  # ligature expansions are short; anything else is odd: keep as is
        s = s[:4]
    return s


@dataclass(slots=True)
class Prepared:
    """A field's text as rules see it, plus the way back to the original."""

    original: str
    lower: str  # normalised, lower-cased; what rules match
    index: list[int] | None  # lower position → original position; None means identity
    ansi_spans: list[tuple[int, int]]
    folded: bool  # normalisation changed something beyond case

    def orig_span(self, start: int, end: int) -> tuple[int, int]:
        if self.index is None:
            return start, end
        if not self.index:
            return 0, 0
        s = self.index[min(start, len(self.index) - 1)]
        e = self.index[end - 1] + 1 if end > start else s
        return s, e


# characters prepare() must look at one by one: non-ASCII and the control characters it
# drops (DEL is kept, as str.lower keeps it); everything else is copied in bulk
_SPECIAL_RUN = re.compile(r"[^\t\n\r\x20-\x7f]+")


def prepare(text: str) -> Prepared:
    if text.isascii() and CONTROL_RE.search(text) is None:
        return Prepared(text, text.lower(), None, [], False)
    ansi = [m.span() for m in ANSI_RE.finditer(text)] if ("\x1b" in text or "\x9b" in text) else []
    out: list[str] = []
    index: list[int] = []
    # segments between ANSI sequences; inside them plain ASCII runs are lower-cased
    # as a whole and only special characters are folded one at a time
    own_script = _script_words(text)
    seg_start = 0
    for seg_end, next_start in (*ansi, (len(text), len(text))):
        p = seg_start
        for m in _SPECIAL_RUN.finditer(text, seg_start, seg_end):
            a, b = m.span()
            if a > p:
                out.append(text[p:a].lower())
                index.extend(range(p, a))
            for i in range(a, b):
                ch = text[i]
                f = "" if ch < "\x80" else _plain_lower(ch) if i in own_script else _fold_char(ch)
                if f:
                    out.append(f)
                    index.extend([i] * len(f))
            p = b
        if seg_end > p:
            out.append(text[p:seg_end].lower())
            index.extend(range(p, seg_end))
        seg_start = next_start
    lower = "".join(out)
    folded = lower != text.lower()
    return Prepared(text, lower, index, ansi, folded)


# ------------------------------------------------------------------ text memos

_MISSING: object = object()
_MEMOS: weakref.WeakSet[TextMemo[object] | KeyMemo[object]] = weakref.WeakSet()


class TextMemo(Generic[_T]):
    """A bounded memo of a pure function of one string (sentence bounds, the gate, a
    sentence's word score). The tools of one server repeat their parameter texts ("The
    repository owner", "Page number"): a tools/list reads each distinct text once. Only
    texts up to ``max_len`` characters are kept and at most ``max_entries`` of them
    (oldest dropped first), so hostile input cannot grow it; results must be immutable."""

    __slots__ = ("__weakref__", "_d", "fn", "max_entries", "max_len")

    def __init__(
        self, fn: Callable[[str], _T], max_entries: int = 8192, max_len: int = 4096
    ) -> None:
        self.fn = fn
        self.max_entries = max_entries
        self.max_len = max_len
        self._d: dict[str, _T] = {}
        _MEMOS.add(self)  # type: ignore[arg-type]

    def __call__(self, text: str) -> _T:
        d = self._d
        r = d.get(text, _MISSING)  # (not try/except: a first-seen text must not pay for a raise)
        if r is not _MISSING:
            return r  # type: ignore[return-value]
        r = self.fn(text)
        if len(text) <= self.max_len:
            if len(d) >= self.max_entries:
                del d[next(iter(d))]
            d[text] = r
        return r

    def clear(self) -> None:
        self._d.clear()


def clear_text_memos() -> None:
    """Forget every memoised text (bench/detector.py measures a first-seen tools/list)."""
    for m in _MEMOS:
        m.clear()


class KeyMemo(Generic[_T]):
    """A bounded memo keyed by a tuple whose first item is a text (a field's or a
    sentence's) and whose other items are the few facts the memoised answer depends on
    (its kind, whether it documents a parameter, ...). Same bounds and clearing as
    ``TextMemo``: texts over ``max_len`` characters are not kept; at most ``max_entries``."""

    __slots__ = ("__weakref__", "_d", "max_entries", "max_len")

    def __init__(self, max_entries: int = 8192, max_len: int = 4096) -> None:
        self.max_entries = max_entries
        self.max_len = max_len
        self._d: dict[tuple[object, ...], _T] = {}
        _MEMOS.add(self)  # type: ignore[arg-type]

    def get(self, key: tuple[object, ...]) -> _T | None:
        return self._d.get(key)

    def put(self, key: tuple[object, ...], value: _T) -> None:
        text = key[0]
        if isinstance(text, str) and len(text) <= self.max_len:
            d = self._d
            if len(d) >= self.max_entries:
                del d[next(iter(d))]
            d[key] = value

    def clear(self) -> None:
        self._d.clear()
