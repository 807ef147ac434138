"""Character-level checks of the tool-definition detector.

These look at the *original* string: characters and escape sequences that a
human reviewer does not see but the model reads (or a terminal interprets).
Payloads smuggled in Unicode tag characters or variation selectors are decoded
here so the caller can rescan the hidden text with the ordinary rules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from agentsh.agent.core.mcp.detect_text import ANSI_RE, non_ascii_words


@dataclass(frozen=True, slots=True)
class CharHit:
    name: str
    category: str
    severity: str
    start: int
    end: int
    text: str  # what to report (the decoded text for smuggled payloads)
    hidden: str | None = None  # decoded hidden text to rescan


_BIDI_OVERRIDE = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BIDI_MARK = frozenset("\u200e\u200f\u061c")
_ZERO_WIDTH_HARD = frozenset("\u200b\u2060\u180e\u2061\u2062\u2063\u2064\ufeff")
_JOINERS = frozenset("\u200c\u200d")
_CONFUSABLE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "LISU", "COPTIC")

# ANSI sequences that hide, move over or rewrite text, or smuggle links
_ANSI_HIDING = re.compile(
    r"\x1b\[[0-9;]*8m"  # conceal
    r"|\x1b\[\d*[ABCDEFGHJKSTf]|\x1b\[\d*;\d*[Hf]"  # cursor moves, erase display/line
    r"|\x1b\[[0-9;]*[JK]|\x1b\[\?25l|\x1b\[\?1049h"  # erase, hide cursor, alt screen
    r"|\x1b\]8;|\x1b\]0;|\x1b\]2;|\x1b\]52;"  # hyperlink, window title, clipboard
    r"|\x1b\[(?:3|9)0;(?:4|10)0m|\x1b\[(?:37|97);(?:47|107)m"  # same fg/bg colour
)
_ANSI_LITERAL = re.compile(r"(?:\\x1b|\\u001b|\\033|\\e|\\x9b)\[[0-9;?]*[a-z]", re.I)


def _is_emoji(ch: str) -> bool:
    if len(ch) != 1:
        return False  # no neighbour (a joiner at either end of the text)
    o = ord(ch)
    return (
        0x1F000 <= o <= 0x1FAFF
        or 0x2600 <= o <= 0x27BF
        or 0x2B00 <= o <= 0x2BFF
        or o in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
        or 0x1F3FB <= o <= 0x1F3FF
    )


def _is_tag_flag(text: str, i: int, j: int) -> bool:
    """Tag run text[i:j] is an emoji subdivision flag (U+1F3F4, 2-7 tag letters/digits,
    U+E007F CANCEL TAG), e.g. the flags of Scotland or Wales: legitimate tag use."""
    if i == 0 or text[i - 1] != "\U0001f3f4" or text[j - 1] != "\U000e007f":
        return False
    body = text[i : j - 1]
    return 2 <= len(body) <= 7 and all(
        0xE0030 <= ord(c) <= 0xE0039 or 0xE0061 <= ord(c) <= 0xE007A for c in body
    )


# isolate/embedding openers and their closers; overrides (LRO/RLO) are never exempt
_BIDI_OPEN = {"\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069",
              "\u202a": "\u202c", "\u202b": "\u202c"}  # fmt: skip


def _is_rtl_letter(c: str) -> bool:
    return unicodedata.bidirectional(c) in ("R", "AL")


def _balanced_rtl_controls(text: str) -> frozenset[int]:
    """Positions of bidi isolates/embeddings that are properly paired, wrap right-to-left
    script (Hebrew, Arabic, ...) and occur in a text without overrides. That is how
    genuine RTL text is marked up; reordering attacks need overrides or unpaired controls
    that flip Latin text."""
    if "\u202d" in text or "\u202e" in text:
        return frozenset()
    rtl_text = any(_is_rtl_letter(x) for x in text if x.isalpha() and not x.isascii())
    ok: set[int] = set()
    stack: list[int] = []
    for k, c in enumerate(text):
        if c in _BIDI_OPEN:
            stack.append(k)
        elif c in ("\u2069", "\u202c"):
            if not stack or _BIDI_OPEN[text[stack[-1]]] != c:
                return frozenset(ok)  # unbalanced from here on: stop exempting
            a = stack.pop()
            inner = text[a + 1 : k]
            letters = [x for x in inner if x.isalpha()]
            if letters and all(_is_rtl_letter(x) for x in letters):
                ok.update((a, k))
            elif rtl_text and text[a] in "\u2066\u2068":
                ok.update((a, k))  # LTR/first-strong isolate (e.g. a Latin name) in RTL text
    return frozenset(ok)


def _decode_tags(run: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def _decode_variation_selectors(run: str) -> str:
    data = bytearray()
    for c in run:
        o = ord(c)
        if 0xFE00 <= o <= 0xFE0F:
            data.append(o - 0xFE00)
        elif 0xE0100 <= o <= 0xE01EF:
            data.append(o - 0xE0100 + 16)
    text = data.decode("utf-8", "replace")
    return text


# what the per-character loop has to look at: controls, DEL, CR, anything non-ASCII
_SPECIAL = re.compile(r"[^\t\n\x20-\x7e]")
_ZW_BITS = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def _decode_zw_bits(run: str) -> str | None:
    """Zero-width steganography: two characters as bits, a third as separator (or none)."""
    for zero, one in (("\u200b", "\u200c"), ("\u200c", "\u200b"), ("\u200b", "\u200d"),
                      ("\u200c", "\u200d")):  # fmt: skip
        seps = set(run) - {zero, one}
        body = run
        if len(seps) == 1:
            # (a separator that only brackets the bits, "\u2060…bits…\u2060", frames them: 8 bits a byte inside)
            body = run.strip(next(iter(seps)))
            seps = set(body) - {zero, one}
        groups = body.split(next(iter(seps))) if len(seps) == 1 else [
            body[k : k + 8] for k in range(0, len(body), 8)]  # fmt: skip
        bits = ["".join("1" if c == one else "0" for c in g if c in (zero, one)) for g in groups]
        if not bits or any(len(b) > 8 or not b for b in bits if b != bits[-1]):
            continue
        try:
            out = bytes(int(b, 2) for b in bits if b).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        if len(out) >= 4 and _printable_ratio(out) > 0.9 and sum(c.isalpha() for c in out) > len(out) / 2:
            return out
    return None


def _printable_ratio(s: str) -> float:
    if not s:
        return 0.0
    good = sum(1 for c in s if c.isprintable() or c in "\n\t\r")
    return good / len(s)


def scan_chars(text: str, *, invisible: bool, ansi: bool) -> Iterator[CharHit]:
    """Character-level findings in one original string (non-ASCII or with controls)."""
    n = len(text)
    if ansi and ("\x1b" in text or "\x9b" in text):
        for m in ANSI_RE.finditer(text):
            seq = m.group(0)
            hiding = _ANSI_HIDING.match(seq) is not None
            yield CharHit(
                "ansi_hiding_sequence" if hiding else "ansi_escape_sequence",
                "ansi_escape",
                "critical" if hiding else "high",
                m.start(),
                m.end(),
                seq,
            )
    if ansi and "\\" in text:
        for m in _ANSI_LITERAL.finditer(text):
            yield CharHit(
                "ansi_escape_literal", "ansi_escape", "medium", m.start(), m.end(), m.group(0)
            )
    if not invisible:
        return
    balanced_rtl: frozenset[int] | None = None
    i = 0
    while i < n:
        ch = text[i]
        if "\x1f" < ch < "\x7f" or ch in "\t\n":  # plain ASCII: jump to the next special
            special = _SPECIAL.search(text, i)
            if special is None:
                break
            i = special.start()
            ch = text[i]
        o = ord(ch)
        if ch in _ZW_BITS:
            j = i
            while j < n and text[j] in _ZW_BITS:
                j += 1
            if j - i >= 16:  # a long run of invisible characters: bits, not typography
                decoded = _decode_zw_bits(text[i:j])
                yield CharHit("zero_width_sequence", "invisible_unicode",
                              "critical" if decoded else "high", i, j,
                              decoded or f"{j - i} zero-width characters", decoded)  # fmt: skip
                i = j
                continue
        if o < 0x80:
            if (o < 0x20 and ch not in "\t\n\r\x1b") or o == 0x7F:
                sev = "high" if ch in "\x08\x00" else "medium"
                yield CharHit("control_character", "invisible_unicode", sev, i, i + 1, repr(ch))
            elif ch == "\r" and i + 1 < n and text[i + 1] != "\n" and i > 0 and text[i - 1] != "\n":
                yield CharHit(
                    "carriage_return_overwrite", "invisible_unicode", "medium", i, i + 1, "\\r"
                )
            i += 1
            continue
        if 0xE0000 <= o <= 0xE007F:
            j = i
            while j < n and 0xE0000 <= ord(text[j]) <= 0xE007F:
                j += 1
            if _is_tag_flag(text, i, j):
                i = j  # emoji subdivision flag: black flag + tag letters + CANCEL TAG
                continue
            decoded = _decode_tags(text[i:j])
            yield CharHit(
                "unicode_tag_smuggling",
                "invisible_unicode",
                "critical" if decoded.strip() else "high",
                i,
                j,
                decoded or text[i:j].encode("unicode_escape").decode(),
                decoded or None,
            )
            i = j
            continue
        if 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF:
            j = i
            while j < n and (
                0xFE00 <= ord(text[j]) <= 0xFE0F or 0xE0100 <= ord(text[j]) <= 0xE01EF
            ):
                j += 1
            if j - i >= 3:  # a single selector after an emoji is ordinary
                decoded = _decode_variation_selectors(text[i:j])
                readable = _printable_ratio(decoded) > 0.8 and any(c.isalpha() for c in decoded)
                yield CharHit(
                    "variation_selector_smuggling",
                    "invisible_unicode",
                    "critical" if readable else "high",
                    i,
                    j,
                    decoded if readable else f"{j - i} variation selectors",
                    decoded if readable else None,
                )
            i = j
            continue
        if ch in _BIDI_OVERRIDE:
            if balanced_rtl is None:
                balanced_rtl = _balanced_rtl_controls(text)
            if i in balanced_rtl:
                yield CharHit("bidi_isolate", "invisible_unicode", "low", i, i + 1, f"U+{o:04X}")
            elif ch == "\u202e":
                # a right-to-left override shows Latin text backwards: ".resu eht llet ton od"
                # reads as "do not tell the user." on screen, and the model may read it either way
                end = min((k for k in (text.find("\u202c", i + 1), text.find("\u2069", i + 1),
                                       text.find("\n", i + 1)) if k > i), default=n)
                inner = text[i + 1 : end]
                latin = sum(1 for c in inner if c.isascii() and c.isalpha())
                shown = inner[::-1] if latin >= 8 else None
                yield CharHit("bidi_control", "invisible_unicode", "high", i, i + 1,
                              f"U+{o:04X}" + (f" (shows: {shown[:80]})" if shown else ""), shown)
            else:
                yield CharHit("bidi_control", "invisible_unicode", "high", i, i + 1, f"U+{o:04X}")
        elif ch in _BIDI_MARK:
            yield CharHit("bidi_mark", "invisible_unicode", "low", i, i + 1, f"U+{o:04X}")
        elif ch in _ZERO_WIDTH_HARD:
            if not (ch == "\ufeff" and i == 0):
                # inside a word it splits what a reader (or a filter) sees; beside a space or
                # punctuation it is a stray copy-paste character
                a, b = i - 1, i + 1
                while a >= 0 and text[a] in _ZERO_WIDTH_HARD:
                    a -= 1
                while b < n and text[b] in _ZERO_WIDTH_HARD:
                    b += 1
                inside = a >= 0 and b < n and text[a].isalnum() and text[b].isalnum()
                yield CharHit(
                    "zero_width_character", "invisible_unicode", "high" if inside else "low", i,
                    i + 1, f"U+{o:04X}"
                )
        elif ch in _JOINERS:
            prev = text[i - 1] if i > 0 else ""
            nxt = text[i + 1] if i + 1 < n else ""
            ascii_side = (prev.isascii() and prev.strip() != "") or (
                nxt.isascii() and nxt.strip() != ""
            )
            if prev and (_is_emoji(prev) or _is_emoji(nxt) or 0xFE00 <= ord(prev) <= 0xFE0F):
                pass  # emoji sequences
            elif ascii_side or not prev or not nxt:
                yield CharHit(
                    "zero_width_character", "invisible_unicode", "high", i, i + 1, f"U+{o:04X}"
                )
        elif ch == "\u00ad":
            yield CharHit("soft_hyphen", "invisible_unicode", "medium", i, i + 1, "U+00AD")
        elif 0x80 <= o <= 0x9F:
            yield CharHit("c1_control", "invisible_unicode", "high", i, i + 1, f"U+{o:04X}")
        elif 0xE000 <= o <= 0xF8FF or o >= 0xF0000:
            j = i
            while j < n and (0xE000 <= ord(text[j]) <= 0xF8FF or ord(text[j]) >= 0xF0000):
                j += 1
            yield CharHit(
                "private_use_characters",
                "invisible_unicode",
                "high",
                i,
                j,
                text[i:j].encode("unicode_escape").decode(),
            )
            i = j
            continue
        else:
            cat = unicodedata.category(ch)
            if cat == "Cf":
                yield CharHit(
                    "format_character", "invisible_unicode", "high", i, i + 1, f"U+{o:04X}"
                )
            elif cat == "Cn":
                yield CharHit(
                    "unassigned_character", "invisible_unicode", "medium", i, i + 1, f"U+{o:04X}"
                )
        i += 1
    yield from _mixed_script(text)


_EXPLAINED = re.compile(r"(?i)\b(?:cyrillic|greek|homoglyphs?|look-?alikes?|confusables?|u\+[0-9a-f]{4,5})\b")


def _mixed_script(text: str) -> Iterator[CharHit]:
    """Words mixing Latin letters with look-alike letters of other scripts (only the words that
    hold a letter beyond ASCII are read)."""
    for start, w in non_ascii_words(text):
        if len(w) < 2:
            continue
        end = start + len(w)
        has_latin = False
        has_other = False
        fullwidth = False
        for c in w:
            if c.isascii():
                has_latin = True
                continue
            o = ord(c)
            if 0xFF01 <= o <= 0xFF5E or 0x1D400 <= o <= 0x1D7FF:
                fullwidth = True
                continue
            name = unicodedata.name(c, "")
            if name.startswith(_CONFUSABLE_SCRIPTS):
                has_other = True
            elif name.startswith("LATIN"):
                has_latin = True
        if has_latin and has_other:
            # a look-alike the text itself points out ("e.g. 'p\u0430ypal.com' where the 'a' is
            # Cyrillic U+0430"): shown to the reader, not hidden from it
            shown = _EXPLAINED.search(text, max(0, start - 160), end + 160) is not None and \
                start > 0 and text[start - 1] in "'\"\u2018\u201c`"
            yield CharHit(
                "homoglyph_mixed_script", "invisible_unicode", "medium" if shown else "high",
                start, end, w
            )
        elif fullwidth:
            yield CharHit(
                "fullwidth_or_math_letters", "invisible_unicode", "medium", start, end, w
            )
