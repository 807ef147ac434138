"""Content fingerprints for flow tracking (docs/flow.md "Matching").

Three tiers, all computed once per recorded response and looked up per
checked argument:

* **exact** — SHA-256 truncated to 128 bits of the whole response and
  of every string field of at least ``hash_min_length`` characters, raw and
  normalized (lowercase, whitespace collapsed); shorter strings are never
  hashed;
* **sensitive** — values the shared :class:`SensitiveDetector` finds in the
  response, kept (normalized) for a substring test against every decoded view
  of an argument, so a secret is found at any position and in any supported
  encoding;
* **window** — winnowed fingerprints of ``k``-character grams of the
  normalized text (punctuation read as spaces) starting at token boundaries
  (``k = hash_min_length``).
  Every gram of an argument is looked up, so a shared run of text is found
  inside longer arguments. Keyed by Python's per-process keyed SipHash of the
  gram (64 bits): an attacker cannot aim collisions at it and the chance of an
  accidental one is ~ n/2^64.

An argument is decoded before lookup (:func:`views`): URL percent-encoding,
HTML entities, JSON / C backslash escapes, base64 / base64url runs at any
alignment, hex runs, recursively to depth 2 and within a size budget.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import re
import string
from collections.abc import Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import orjson

__all__ = [
    "digest",
    "grams",
    "is_strong_gram",
    "leaves",
    "normalize",
    "views",
    "winnow",
]


def digest(text: str) -> bytes:
    """SHA-256 truncated to 128 bits (docs/flow.md "Matching")."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def normalize(text: str) -> str:
    """Lowercase, whitespace runs collapsed to one space, trimmed (docs/flow.md "Matching")."""
    return " ".join(text.split()).lower()


@lru_cache(maxsize=64)
def _gram_rx(k: int) -> re.Pattern[str]:
    # a literal first character lets sre jump from space to space (memchr speed)
    return re.compile(" (?=([^ ].{%d}))" % (k - 1), re.S)  # noqa: UP031


# ASCII punctuation → space: every token start is then "a space, then not a space"
_PUNCT = {c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")}


def grams(norm: str, k: int) -> list[str]:
    """All ``k``-character grams of ``norm`` starting at a token boundary, with
    ASCII punctuation read as a space (so ``?k=VALUE`` anchors at ``VALUE``)."""
    if len(norm) < k:
        return []
    return _gram_rx(k).findall(" " + norm.translate(_PUNCT))


def is_strong_gram(g: str) -> bool:
    """Identifier-like (≥ 4 digits, ≥ 4 letters, ≤ 2 separators): keys, ids, hashes."""
    if g.count(" ") > 2:
        return False
    d = a = 0
    for ch in g:
        if ch.isdigit():
            d += 1
        elif ch.isalpha():
            a += 1
    return d >= 4 and a >= 4


def winnow(hashes: list[int], w: int) -> set[int]:
    """Winnowing (Schleimer et al. 2003): the minimum of every window of ``w``
    consecutive hashes. Any run of ``w`` consecutive grams keeps at least one."""
    n = len(hashes)
    if w <= 1 or n <= w:
        return set(hashes) if w <= 1 else {min(hashes)} if hashes else set()
    out: set[int] = set()
    last = -1
    for i in range(n - w + 1):
        if last >= i:
            # previous minimum still in the window: only the new element can beat it
            h = hashes[i + w - 1]
            if h <= hashes[last]:
                last = i + w - 1
                out.add(h)
            continue
        win = hashes[i : i + w]
        m = min(win)
        last = i + (w - 1 - win[::-1].index(m))  # rightmost minimum
        out.add(m)
    return out


# ----------------------------------------------------------------- JSON leaves


def leaves(obj: Any, budget: int, out: list[str] | None = None, depth: int = 0) -> list[str]:
    """String leaves of a JSON value (keys excluded), within ``budget`` characters.

    A string that is itself a JSON object or array (MCP ``text`` content often
    is) contributes its own leaves as well.
    """
    if out is None:
        out = []
    stack: list[tuple[Any, int]] = [(obj, depth)]
    used = 0
    while stack and used < budget:
        o, d = stack.pop()
        if isinstance(o, str):
            if used + len(o) > budget:
                o = o[: budget - used]
            out.append(o)
            used += len(o)
            if d < 2 and len(o) >= 2 and o[0] in "{[" and o[-1] in "}]":
                try:
                    inner = orjson.loads(o)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(inner, (dict, list)):
                    stack.append((inner, d + 1))
        elif isinstance(o, dict):
            stack.extend((v, d) for v in reversed(list(o.values())))
        elif isinstance(o, (list, tuple)):
            stack.extend((v, d) for v in reversed(o))
        elif isinstance(o, (int, float)) and not isinstance(o, bool):
            s = repr(o)
            out.append(s)
            used += len(s)
    return out


# ----------------------------------------------------------------- decoding

_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX_TAIL = re.compile(r"[0-9A-Fa-f]{16,}")
# base64-alphabet characters → "a", everything else (ASCII) → " "
_B64_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/_-=")
_B64_MASK = {c: ("a" if chr(c) in _B64_ALPHABET else " ") for c in range(128)}
_BACKSLASH = re.compile(r"\\(u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|[0-7]{1,3}|.)", re.S)
_SIMPLE_ESC = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "0": "\0",
    "a": "\a",
    "e": "\x1b",
}
_MAX_VIEWS = 48
_MAX_B64_RUNS = 64
_MAX_GLUE_CUTS = 4  # '/' or '+' inside a base64 run after which it is read again


def _unbackslash(m: re.Match[str]) -> str:
    e = m.group(1)
    c = e[0]
    if c == "u":
        return chr(int(e[1:], 16))
    if c == "x":
        return chr(int(e[1:], 16))
    if c.isdigit() and c in "01234567" and len(e) > 1:
        return chr(int(e, 8) & 0xFF)
    return _SIMPLE_ESC.get(e, e)


_GARBAGE = {c: " " for c in range(32) if chr(c) not in "\t\r\n"}
_GARBAGE[0xFFFD] = " "
_MIN_CLEAN_RUN = 8


def _utf8(b: bytes) -> str | None:
    """Decoded text with undecodable bytes and control characters read as spaces,
    or None when no printable run of ``_MIN_CLEAN_RUN`` characters is left
    (decoded garbage). Base64 glued to other text (``…cTlm/40A00``) decodes
    to the secret plus stray bytes: the secret must stay a token of its own."""
    s = b.decode("utf-8", "replace").translate(_GARBAGE)
    if max(map(len, s.split()), default=0) < _MIN_CLEAN_RUN:
        return None
    return s


def _b64_candidates(run: str) -> Iterator[str]:
    run = run.rstrip("=")
    alt = "-" in run or "_" in run
    std = "+" in run or "/" in run
    if alt and std:
        # text glued to standard base64 ("token_QUtJ…+…"): try what follows the glue
        cut = max(run.rfind("-"), run.rfind("_"))
        run, alt = run[cut + 1 :], False
    starts = [0]
    if not alt:
        # text glued to standard base64 by a character of its alphabet ("0se/eG53…", "path/QUtJ…"):
        # the prefix decodes to stray bytes that can read as letters stuck to the secret, so the
        # run is also read from just after each of its first few '/' and '+'
        starts += [i + 1 for i, ch in enumerate(run[: len(run) - 8]) if ch in "/+"][:_MAX_GLUE_CUTS]
    for start in starts:
        for off in range(4):
            body = run[start + off :]
            if len(body) % 4 == 1:
                body = body[:-1]
            if len(body) < 8:
                break
            padded = body + "=" * (-len(body) % 4)
            try:
                raw = (
                    base64.urlsafe_b64decode(padded) if alt else base64.b64decode(padded, validate=True)
                )
            except (binascii.Error, ValueError):
                continue
            s = _utf8(raw)
            if s is not None:
                yield s


def views(text: str, min_len: int, depth: int = 2) -> list[str]:
    """``text`` and each plausible decoding of it (or of runs inside it)."""
    out: list[str] = [text]
    seen = {text}
    budget = 4 * len(text) + 4096
    frontier = [text]
    for _ in range(depth):
        nxt: list[str] = []
        for t in frontier:
            for v in _decode_once(t, min_len):
                if v in seen or len(v) < min_len // 2:
                    continue
                budget -= len(v)
                if budget < 0 or len(out) >= _MAX_VIEWS:
                    return out
                seen.add(v)
                out.append(v)
                nxt.append(v)
        if not nxt:
            break
        frontier = nxt
    return out


def _decode_once(t: str, min_len: int) -> Iterator[str]:
    if "%" in t:
        u = unquote(t, errors="surrogateescape")
        if u != t:
            yield u
        if "+" in t:
            yield unquote(t.replace("+", " "))
    if "&" in t and ";" in t:
        h = html.unescape(t)
        if h != t:
            yield h
    if "\\" in t:
        try:
            b = _BACKSLASH.sub(_unbackslash, t)
        except (ValueError, OverflowError):
            b = t
        if b != t:
            yield b
    if len(t) >= 12 and max(map(len, t.translate(_B64_MASK).split())) >= 12:
        # the C-level mask above skips prose (no run of 12 base64 characters);
        # one scan: hex is a subset of the base64 alphabet, so hex runs are
        # found inside base64-alphabet runs
        for n, m in enumerate(_B64_RUN.finditer(t)):
            if n >= _MAX_B64_RUNS:
                break
            run = m.group()
            yield from _b64_candidates(run)
            if len(run) >= 16:
                for hm in _HEX_TAIL.finditer(run):
                    yield from _hex_candidates(hm.group())


def _hex_candidates(run: str) -> Iterator[str]:
    for off in (0, 1):
        body = run[off:]
        body = body[: len(body) - (len(body) % 2)]
        try:
            s = _utf8(bytes.fromhex(body))
        except ValueError:
            s = None
        if s is not None:
            yield s
            return
