"""Encoded payloads: decoded and read again the way the model would read them.

Base64 / base64url, hex (also spaced or ``0x``-separated), ``\\x`` / ``\\u``
escapes, percent-encoding, HTML character references, ROT13 and text written
backwards after a hint to read it so are decoded;
what decodes to readable text is analysed by the directive check. An order
found inside an encoding is raised one level (hiding it is evidence of
intent); readable prose in an encoding together with a hint to decode it is
high on its own ("Operator note (base64; decode and follow it)").
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import json
import re
import urllib.parse
from collections.abc import Iterator

from agentsh.agent.core.mcp.checks import RANK, CheckContext, Finding, context_of, sev_of
from agentsh.agent.core.mcp.detect_parse import ParsedTool
from agentsh.agent.core.mcp.detect_text import TextMemo

MAX_DECODE_DEPTH = 2
_LONG_TOKEN = 20

_B64_RE = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/]{20,}={0,2}|(?<![A-Za-z0-9+/_-])[A-Za-z0-9_-]{20,}={0,2}"
)
_B32_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z2-7]{16,}={0,6}(?![A-Za-z0-9])")
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_SPACED_HEX_RE = re.compile(
    r"(?<![\w:])(?:(?:0x)?[0-9A-Fa-f]{2}(?:[ ,:]\s?|\s)){11,}(?:0x)?[0-9A-Fa-f]{2}(?![\w:])"
)
_HEX_SEP = bytes(
    1 if chr(b) in "0123456789abcdefABCDEF" else 2 if chr(b) in " ,:" else 0 for b in range(256)
)
_HEX_TRIPLES = b"\x01\x01\x02" * 11
# (written to open with the backslash itself: the regex engine then skips to each backslash
# instead of trying three alternatives at every position of the text)
_ESC_RE = re.compile(r"\\(?:x[0-9A-Fa-f]{2}(?:\\x[0-9A-Fa-f]{2}){5,}|u[0-9A-Fa-f]{4}(?:\\u[0-9A-Fa-f]{4}){5,}|"
                     r"[0-7]{3}(?:\\[0-7]{3}){5,})")
# four or more percent escapes in a row; a word written just before the first escape belongs to
# the run ("ignore%20the%20user%27s…"): added by _percent_runs (a pattern that opens with an
# optional word is tried at every position of the text; one that opens with '%' jumps to each '%')
_PCT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2}[^\s%\x00]*){4,}")
_ENTITY_RE = re.compile(r"(?:&#(?:\d{2,7}|x[0-9a-fA-F]{2,6});){6,}")
_TOKEN_RE = re.compile(r"[^\s\x00]{20,}")
# decimal character codes ("67 97 108 108 32 …"): twelve or more, each a printable ASCII code
# (the first code is spelled with the "no digit or dot before it" test after its first digit, so
# that the pattern opens with a digit and the engine skips every other character)
_DECIMAL_RE = re.compile(r"(?:3(?<![\d.].)[2-9]|[4-9](?<![\d.].)\d|1(?<![\d.].)(?:[01]\d|2[0-6]))[ ,;]\s?"
                         r"(?:(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])[ ,;]\s?){10,}"
                         r"(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])(?![\d.])")
_B64_STD = bytes(
    1 if (chr(b).isascii() and chr(b).isalnum()) or chr(b) in "+/" else 0 for b in range(256)
)
_B64_URL = bytes(
    1 if (chr(b).isascii() and chr(b).isalnum()) or chr(b) in "_-" else 0 for b in range(256)
)
# either alphabet: a run in _B64_STD or _B64_URL is a run here (one pass decides most texts)
_B64_ANY = bytes(a | b for a, b in zip(_B64_STD, _B64_URL, strict=True))
_RUN = b"\x01" * _LONG_TOKEN
# ROT13 of frequent English words: a text full of them is ROT13 English
_ROT13_WORDS = frozenset(["gur", "naq", "bs", "gb", "vf", "va", "sbe", "lbh", "lbhe", "vg", "jvgu", "guvf", "gung", "nyy", "ba", "ner"])
_DECODE_HINT = re.compile(r"\b(?:decode|decoded|decoding|base64|base-64|base32|base-32|hex|hex-encoded|rot13|"
                          r"rot-13|url-?encoded|percent-encoded|escaped|entities|encoded|encoding)\b", re.I)  # fmt: skip
# a label that names the model right before the run: "X-Agent-Config: eyJ…", "ai_hint=…"
_MODEL_LABEL = re.compile(r"\b(?:x-)?(?:ai|llm|agent|assistant|model|copilot)[\w-]{0,20}\s*[:=]\s*[\"'`]?$", re.I)
_WORD = re.compile(r"[A-Za-z]{2,}")


def _b64_run(data: bytes) -> bool:
    if _RUN not in data.translate(_B64_ANY):
        return False
    return _RUN in data.translate(_B64_STD) or _RUN in data.translate(_B64_URL)


def _spaced_hex(data: bytes) -> bool:
    if b"0x" in data:
        data = data.replace(b"0x", b"")
    return _HEX_TRIPLES in data.translate(_HEX_SEP)


_DIGITS = b"0123456789"


def _decimal_codes(text: str, data: bytes | None = None) -> bool:
    """At least 24 digits, then twelve numbers in a row: the necessary condition for decimal
    character codes (the digit count is one C-speed pass; the regex runs only past it).
    ``data``: ``text`` encoded as utf-8 (surrogatepass), when the caller has it."""
    global _last_decimal
    last = _last_decimal
    if last is not None and last[0] is text:
        return last[1]  # (a result scan asks three times of the same text)
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    r = len(data) - len(data.translate(None, _DIGITS)) >= 24 and _DECIMAL_RE.search(text) is not None
    _last_decimal = (text, r)  # (one tuple, swapped whole: safe between threads)
    return r


_last_decimal: tuple[str, bool] | None = None


def may_hold_payload(text: str, low: str | None = None) -> bool:
    """Necessary condition for decoded_runs to yield anything; a few C-speed passes.
    ``low``: ``text.lower()``, when the caller has it."""
    if "%" in text or "\\" in text or ("&" in text and "&#" in text):
        return True
    data = text.encode("utf-8", "surrogatepass")
    if _decimal_codes(text, data) or _b64_run(data) or _spaced_hex(data):
        return True
    if low is None:
        low = text.lower()
    if "rot13" in low or "rot-13" in low:
        return True
    if ("revers" in low or "backward" in low or "to left" in low or "to-left" in low or "mirrored" in low) and \
            _REVERSED_HINT.search(low) is not None:
        return True
    return (" gur " in low or " naq " in low or " lbh " in low) and \
        len(_ROT13_WORDS.intersection(low.split())) >= 2


def _readable(data: bytes) -> str | None:
    if len(data) >= 16 and data[1::2].count(0) >= len(data) // 2 * 0.9:
        data = data.decode("utf-16-le", "replace").encode("utf-8")  # PowerShell -EncodedCommand
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) < 8:
        return None
    good = sum(1 for c in s if c.isprintable() or c in "\n\t\r")
    if good / len(s) < 0.9:
        return None
    if sum(c.isalpha() for c in s) < len(s) * 0.2:
        # mostly digits: noise, unless it is hex of readable text (an order encoded twice)
        return s if len(s) >= _LONG_TOKEN and _encoded_again(s) else None
    if not any(c in " /.:|;&=" for c in s):
        # one long "word": an identifier or noise, not a payload, unless it is base64 again
        # (an order encoded twice; the caller decodes the next layer)
        return s if len(s) >= _LONG_TOKEN and _encoded_again(s) else None
    return s


def _encoded_again(s: str) -> bool:
    """Is ``s`` itself base64 or hex of readable text (one layer of a payload encoded twice)?"""
    if len(s) % 2 == 0 and len(s) >= 24 and all(c in _HEX_DIGITS for c in s):
        try:
            return _readable(binascii.unhexlify(s)) is not None  # (hex of text inside base64)
        except (binascii.Error, ValueError):
            return False
    if _B64_RE.fullmatch(s) is None:
        return False
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return _readable(raw) is not None


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _percent_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of four or more percent escapes, with the word of 2 to 20 letters
    written right before its first escape ("ignore%20the…"; not a longer word, not letters that
    end the run before)."""
    prev = 0
    for m in _PCT_RE.finditer(text):
        s = k = m.start()
        while k > prev and text[k - 1] in _LETTERS:
            k -= 1
        if 2 <= s - k <= 20 and not (k > 0 and text[k - 1] in _LETTERS):
            s = k
        prev = m.end()
        yield s, prev


# whitespace (as the regex engine's \s reads ASCII) and NUL: what ends a token
_TOKEN_END = bytes(0 if b == 0 or chr(b).isspace() else 1 for b in range(256))
_RUN16 = b"\x01" * 16
_RUN20 = b"\x01" * 20
_RUN24 = b"\x01" * 24
_HEX_ONLY = bytes(1 if chr(b) in "0123456789abcdefABCDEF" else 0 for b in range(256))
_B32_ONLY = bytes(1 if chr(b) in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" else 0 for b in range(256))


def _long_tokens(text: str, data: bytes) -> Iterator[tuple[int, str]]:
    """(start, token) of the tokens of 20 or more characters (no whitespace, no NUL) that may hold
    a hex, base32 or base64 run: those with 16 characters of either base64 alphabet in a row
    (hex needs 24 of them, base32 16, base64 20). In ASCII text such a run is found with
    ``bytes.find`` on a translated copy, and only its token is read (a changelog's thousands of
    URLs and paths are not each matched against three patterns). Other text is read the same way
    with each non-ASCII character as '?' (one byte per character: positions stay those of the
    text), and a token that holds non-ASCII whitespace is split where the regex engine splits it.
    ``data``: ``text`` encoded as utf-8."""
    ascii_text = text.isascii()
    if not ascii_text:
        data = text.encode("ascii", "replace")
    runs = data.translate(_B64_ANY)
    ends = data.translate(_TOKEN_END)
    i = runs.find(_RUN16)
    while i >= 0:
        a = ends.rfind(b"\x00", 0, i) + 1
        z = ends.find(b"\x00", i)
        if z < 0:
            z = len(ends)
        if z - a >= _LONG_TOKEN:
            tok = text[a:z]
            if ascii_text or tok.isascii() or not any(ch.isspace() for ch in tok):
                yield a, tok
            else:
                for m in _TOKEN_RE.finditer(text, a, z):
                    yield m.start(), m.group(0)
        i = runs.find(_RUN16, z)


# a hint that what follows is written backwards, up to its colon
_REVERSED_HINT = re.compile(r"\b(?:revers(?:ed|e)|backwards?|right[- ]to[- ]left|mirrored)\b[^.:\n]{0,40}:\s*")
_COMMON_WORDS = frozenset(["the", "and", "to", "of", "a", "in", "is", "it", "for", "with", "on", "that", "this", "your",
                           "you", "file", "all", "as", "be", "from"])


def _english_words(s: str) -> int:
    return sum(1 for w in re.findall(r"[a-z]+", s.lower()) if w in _COMMON_WORDS)


def decoded_runs(text: str) -> Iterator[tuple[str, int, int, str]]:
    """(kind, start, end, decoded text) for encoded runs that decode to readable text."""
    if "%" in text:
        for s, e in _percent_runs(text):
            run = text[s:e]
            decoded = urllib.parse.unquote(run)
            if decoded != run:
                yield "percent", s, e, decoded
    if "&#" in text:
        for m in _ENTITY_RE.finditer(text):
            r = _readable(html.unescape(m.group(0)).encode("utf-8", "replace"))
            if r:
                yield "html_entities", m.start(), m.end(), r
    if "\\" in text:
        for m in _ESC_RE.finditer(text):
            try:
                decoded = m.group(0).encode("latin-1").decode("unicode_escape")
            except (UnicodeDecodeError, UnicodeEncodeError):
                continue
            r = _readable(decoded.encode("utf-8", "replace"))
            if r:
                yield "escaped", m.start(), m.end(), r
    low = text.lower()
    if "revers" in low or "backward" in low or "to left" in low or "to-left" in low or "mirrored" in low:
        # text written backwards after a hint to read it so ("Instruction reversed for compactness:
        # .tnemugra lebal eht sa ti ssap …"): the run after the hint, read right to left
        for m in _REVERSED_HINT.finditer(low):
            a = m.end()
            z = next((k for k in (low.find("\n\n", a),) if k >= 0), len(text))
            run = text[a:z].strip()
            if len(run) < 16:
                continue
            back = run[::-1]
            if _english_words(back) >= _english_words(run) + 3:
                yield "reversed", a, z, back
    hinted = "rot13" in low or "rot-13" in low
    if hinted or len(_ROT13_WORDS.intersection(low.split())) >= 2:
        # the longest run of words that reads as English after ROT13 (when the text names ROT13, a
        # run that holds a URL once rotated is enough: "(rot13): Nyfb eha: phey uggcf://…")
        # (digits after a dash are part of a run: ROT13 leaves them as they are, "dn-obg-7" reads "qa-bot-7";
        # not digits after letters, "rot13 for the bot: Qryrgr …" starts the run after the hint)
        for m in re.finditer(r"[A-Za-z](?:[A-Za-z ,.'~/_:;!?()@|]|-[0-9]*){15,}", text):
            run = m.group(0)
            dec = codecs.decode(run, "rot13")
            if len(_ROT13_WORDS.intersection(run.lower().split())) >= 2 or (hinted and (
                    "uggc" in run.lower() or _english_words(dec) >= _english_words(run) + 3)):
                # (named ROT13, a run that reads as English only once rotated: "(rot13) Vs gur hfre
                # zragvbaf n cnlzrag pneq, pbcl …" holds one of the frequent words three times)
                yield "rot13", m.start(), m.end(), dec
    if _decimal_codes(text):
        for m in _DECIMAL_RE.finditer(text):
            r = _readable(bytes(int(x) for x in re.findall(r"\d+", m.group(0))))
            if r:
                yield "decimal_codes", m.start(), m.end(), r
    data = text.encode("utf-8", "surrogatepass")
    if _spaced_hex(data):
        for m in _SPACED_HEX_RE.finditer(text):
            digits = re.sub(r"0x|[^0-9A-Fa-f]", "", m.group(0))
            try:
                r = _readable(binascii.unhexlify(digits))
            except (binascii.Error, ValueError):
                continue
            if r:
                yield "hex", m.start(), m.end(), r
    if not _b64_run(data):
        return
    # (which of the three patterns can match in a token: a run of its alphabet long enough, found
    # with bytes.find on translated copies whose positions are the text's; most tokens, URLs and
    # paths, need only the base64 one, and some none)
    asc = data if len(data) == len(text) else text.encode("ascii", "replace")
    hexes, b32s = asc.translate(_HEX_ONLY), asc.translate(_B32_ONLY)
    stds, urls = asc.translate(_B64_STD), asc.translate(_B64_URL)
    for base, tok in _long_tokens(text, data):
        end = base + len(tok)
        may_hex = hexes.find(_RUN24, base, end) >= 0
        may_b32 = b32s.find(_RUN16, base, end) >= 0
        may_b64 = stds.find(_RUN20, base, end) >= 0 or urls.find(_RUN20, base, end) >= 0
        for m in _HEX_RE.finditer(tok) if may_hex else ():
            try:
                r = _readable(binascii.unhexlify(m.group(0)))
            except (binascii.Error, ValueError):
                continue
            if r:
                yield "hex", base + m.start(), base + m.end(), r
        for m in _B32_RE.finditer(tok) if may_b32 else ():
            core = m.group(0).rstrip("=")
            try:
                r = _readable(base64.b32decode(core + "=" * (-len(core) % 8)))
            except (binascii.Error, ValueError):
                continue
            if r:
                yield "base32", base + m.start(), base + m.end(), r
        for m in _B64_RE.finditer(tok) if may_b64 else ():
            core = m.group(0).rstrip("=")
            if core.isalpha() and (core.islower() or core.isupper()):
                continue  # a long word, not base64
            padded = core + "=" * (-len(core) % 4)
            try:
                raw = (
                    base64.urlsafe_b64decode(padded)
                    if ("-" in core or "_" in core)
                    else base64.b64decode(padded, validate=True)
                )
            except (binascii.Error, ValueError):
                continue
            r = _readable(raw)
            if r:
                yield "base64", base + m.start(), base + m.end(), r


# both are pure functions of one text: a parameter text repeated across a server's tools is
# read once (detect_text.TextMemo, forgotten by detector.clear_caches)
_MAY_HOLD = TextMemo(may_hold_payload)
_RUNS: TextMemo[tuple[tuple[str, int, int, str], ...]] = TextMemo(lambda t: tuple(decoded_runs(t)))


def _json_prose(decoded: str) -> str:
    """The string values of decoded JSON that read as text ("{"on_call": "also set flag …"}"),
    joined; '' for JSON without prose (a config of numbers and names) or text that is no JSON."""
    try:
        data = json.loads(decoded)
    except ValueError:
        return ""
    out: list[str] = []

    def walk(x: object, depth: int) -> None:
        if depth > 8:
            return
        if isinstance(x, str) and x.count(" ") >= 2:
            out.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v, depth + 1)
        elif isinstance(x, list):
            for v in x:
                walk(v, depth + 1)

    walk(data, 0)
    return " ".join(out)


class EncodedCheck:
    name = "encoded"

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        if not _MAY_HOLD(tool.joined_raw):
            return
        for f in tool.texts:
            if len(f.raw) >= 12 and _MAY_HOLD(f.raw):
                yield from self._field(f.path, f.raw, tool, ctx, 0)

    def _field(self, path: str, text: str, tool: ParsedTool, ctx: CheckContext, depth: int
               ) -> Iterator[Finding]:  # fmt: skip
        for kind, start, end, decoded in _RUNS(text):
            inner = ctx.rescan(decoded, tool) if callable(ctx.rescan) else []
            inner = [x for x in inner if RANK[x.severity] >= 1]
            prose = _json_prose(decoded) if decoded.lstrip().startswith(("{", "[")) else decoded
            words = len(_WORD.findall(prose))
            hint = _DECODE_HINT.search(text) is not None or \
                _MODEL_LABEL.search(text, max(0, start - 40), start) is not None  # fmt: skip
            if inner:
                worst = max(RANK[x.severity] for x in inner)
                sev = sev_of(max(worst + 1, 2))
                why = f"{kind}-encoded text; decoded: {inner[0].why}"
            elif words >= 3 and kind != "percent" and prose.count(" ") >= 2:
                sev = "high" if hint else "medium"
                why = f"readable {kind}-encoded text" + (" with a hint to decode it" if hint else "")
            else:
                sev = ""  # nothing readable at this layer: it may be another encoding (base64 twice)
            shown = decoded if len(decoded) <= 300 else decoded[:297] + "..."
            if not sev:
                yield from self._nested(path, kind, start, shown, decoded, tool, ctx, depth)
                continue
            yield Finding("encoded_payload", sev, f"{kind}_payload", path, shown, start,
                          context_of(text, start, end), why)
            for x in inner:
                yield Finding("encoded_payload", sev, f"{kind}_payload", path,
                              f"{x.pattern}: {x.text}", start, shown[:200], why)
            yield from self._nested(path, kind, start, shown, decoded, tool, ctx, depth)

    def _nested(self, path: str, kind: str, start: int, shown: str, decoded: str, tool: ParsedTool,
                ctx: CheckContext, depth: int) -> Iterator[Finding]:  # fmt: skip
        """What the decoded text holds, decoded again (base64 of base64, hex of base64 …)."""
        if depth + 1 < MAX_DECODE_DEPTH and len(decoded) >= _LONG_TOKEN and _MAY_HOLD(decoded):
            for x in self._field(path, decoded, tool, ctx, depth + 1):
                if RANK[x.severity] >= 2:
                    yield Finding(x.category, x.severity, f"{kind}_{x.pattern}", path, x.text,
                                  start, shown[:200], x.why)
