"""Sensitive-data detection shared by DLP redaction, data-flow tracking and the
MCP tool-definition detector.

One implementation so that "what counts as a secret" is the same everywhere.
DLP runs this on every string of every LLM request body, so each built-in type
has a cheap trigger (a literal substring or a digit test) and its regex only
runs when the trigger is present; plain prose costs a handful of substring
scans. Validators (Luhn, SSN ranges, NANP rules, E.164 length) run after the
regex so the regexes stay simple and linear.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from agentsh.agent.core.policy.regex_safety import check_regex

__all__ = ["BUILTIN_TYPES", "SensitiveDetector", "SensitiveMatch"]


@dataclass(frozen=True, slots=True)
class SensitiveMatch:
    type: str
    start: int
    end: int
    text: str


# ----------------------------------------------------------------- validators


def _luhn_ok(digits: str) -> bool:
    total = 0
    parity = len(digits) % 2
    for i, ch in enumerate(digits):
        d = ord(ch) - 48
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_ok(m: re.Match[str]) -> bool:
    raw = m.group(0)
    # one separator style only ("4111 1111-1111 1111" is not how cards are written)
    if " " in raw and "-" in raw:
        return False
    digits = raw.replace(" ", "").replace("-", "")
    n = len(digits)
    if not 13 <= n <= 19 or len(set(digits)) < 2:
        return False
    # issuer prefixes: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro
    if not (
        digits[0] == "4"
        or ("51" <= digits[:2] <= "55")
        or ("2221" <= digits[:4] <= "2720")
        or digits[:2] in ("34", "37", "36", "38", "30", "35", "62", "65", "64")
        or digits[:4] == "6011"
        or digits[:2] in ("50", "56", "57", "58", "67")
    ):
        return False
    return _luhn_ok(digits)


def _ssn_ok(m: re.Match[str]) -> bool:
    area, group, serial = m.group("a"), m.group("g"), m.group("s")
    if area == "000" or area == "666" or area[0] == "9":
        return False
    return group != "00" and serial != "0000"


def _has_digit(m: re.Match[str]) -> bool:
    body = m.group(0)
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)


def _openai_ok(m: re.Match[str]) -> bool:
    body = m.group(0)[3:]
    # real keys mix digits and letters (and usually case); hyphenated words do not
    return (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and any(c.islower() for c in body)
    )


# ----------------------------------------------------------------- built-ins


def _phone_ok(m: re.Match[str]) -> bool:
    pa = m.group("pa") or m.group("pa2")
    if pa is None:  # international form
        digits = sum(c.isdigit() for c in m.group(0))
        return 8 <= digits <= 15
    pe = m.group("pe")
    # NANP: area and exchange start 2-9; N11 area codes are service codes
    if pa[0] < "2" or pe[0] < "2" or pa[1:] == "11":
        return False
    sep = m.group("ps")
    # "555-234.5678" mixes separators: a version or id, not a phone number
    return sep is None or sep == m.string[m.end("pe")]


@dataclass(frozen=True, slots=True)
class _Rule:
    type: str
    regex: re.Pattern[str]
    triggers: tuple[str, ...]  # run only if one literal is present; () → always
    validate: Callable[[re.Match[str]], bool] | None = None
    group: int | str = 0  # which group is the sensitive span
    priority: int = 50  # higher wins when spans overlap
    boundary: bool = True  # match must not continue a preceding word


# Regexes start with a literal so sre's fast literal search applies; a leading
# lookbehind would disable it (35 MB/s vs 2 GB/s), so the token-start check is
# done in Python on the few hits (``boundary``).
_TAIL = r"(?![A-Za-z0-9_-])"
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _aws_secret_ok(m: re.Match[str]) -> bool:
    text, s = m.string, m.start()
    if s == 0 or text[s - 1] not in "sS":
        return False
    before = text[max(0, s - 5) : s - 1].lower()
    named = before.endswith(("aws_", "aws-", "aws.", "aws")) or "access" in m.group("rest").lower()
    key = m.group("k")
    return named and any(c.isdigit() for c in key) and any(c.isalpha() for c in key)


_LITERAL_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"|[A-Za-z0-9+/=\s\\:,-]*)",
            re.S,
        ),
        ("PRIVATE KEY",),
        priority=100,
        boundary=False,
    ),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _TAIL),
        ("eyJ",),
        priority=90,
    ),
    _Rule(
        "anthropic_api_key",
        re.compile(r"sk-ant-(?:[a-z]+\d{2}-)?[A-Za-z0-9_-]{20,}" + _TAIL),
        ("sk-ant-",),
        priority=85,
    ),
    _Rule(
        "openai_api_key",
        re.compile(r"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,}" + _TAIL),
        ("sk-",),
        validate=_openai_ok,
        priority=80,
    ),
    _Rule(
        "github_token",
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}" + _TAIL),
        ("gh",),
        priority=80,
    ),
    _Rule(
        "github_token",
        re.compile(r"github_pat_[A-Za-z0-9_]{22,255}" + _TAIL),
        ("github_pat_",),
        priority=80,
    ),
    _Rule(
        "slack_token",
        re.compile(r"xox[baprse]-[A-Za-z0-9-]{10,250}" + _TAIL),
        ("xox",),
        priority=80,
    ),
    _Rule(
        "slack_token", re.compile(r"xapp-\d-[A-Za-z0-9-]{10,250}" + _TAIL), ("xapp-",), priority=80
    ),
    _Rule(
        "slack_token",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,}"),
        ("hooks.slack.com",),
        priority=80,
        boundary=False,
    ),
    _Rule(
        "stripe_key",
        re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,99}" + _TAIL),
        ("k_live_", "k_test_"),
        priority=80,
    ),
    _Rule(
        "aws_access_key",
        re.compile(
            r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        (),  # the regex starts with a literal: cheaper than twelve substring tests
        validate=lambda m: any(c.isdigit() for c in m.group(0)[4:]),
        priority=80,
    ),
    *(
        _Rule(
            "aws_secret_key",
            # literal first ("ecret"/"ECRET"); the 's' and the aws/access naming are validated
            re.compile(
                lit + r"(?P<rest>[A-Za-z_.-]{0,20})"
                r"[\"'\s]{0,3}[:=]{1,2}>?[\s\"']{0,3}(?P<k>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
            ),
            (lit,),
            validate=_aws_secret_ok,
            group="k",
            priority=75,
            boundary=False,
        )
        for lit in ("ecret", "ECRET")
    ),
)

# Digit-shaped types run only inside candidate runs of digits and separators.
# Every such value has three consecutive digits; for ASCII text those are found
# with bytes.translate + bytes.find (C speed) instead of a regex that would try
# every position of the text.
_DIGIT_RUN = re.compile(r"\d[\d ().-]{6,}\d")
_DIGIT_TABLE = bytes(1 if 48 <= b <= 57 else 0 for b in range(256))
_DDD = b"\x01\x01\x01"


def _digit_windows(text: str) -> Iterator[tuple[int, int]]:
    """(lo, hi) slices around each digit run; lookarounds get 3 chars of context."""
    n = len(text)
    if not text.isascii():
        for found in _DIGIT_RUN.finditer(text):
            yield max(0, found.start() - 3), min(n, found.end() + 3)
        return
    marks = text.encode("ascii").translate(_DIGIT_TABLE)
    p = marks.find(_DDD)
    while p >= 0:
        run = _DIGIT_RUN.search(text, max(0, p - 16), min(n, p + 64))
        if run is None:
            p = marks.find(_DDD, p + 3)
            continue
        if run.end() == min(n, p + 64):  # window cut the run short: take all of it
            run = _DIGIT_RUN.match(text, run.start()) or run
        yield max(0, run.start() - 3), min(n, run.end() + 3)
        p = marks.find(_DDD, max(run.end(), p + 3))


_DIGIT_RULES: tuple[_Rule, ...] = (
    _Rule(
        "credit_card",
        re.compile(r"(?<![\d.,/:-])\d(?:[ -]?\d){12,18}(?![\d.,]\d|[\d-])"),
        (),
        validate=_card_ok,
        priority=60,
        boundary=False,
    ),
    _Rule(
        "us_ssn",
        re.compile(
            r"(?<![\d.:/-])(?P<a>\d{3})(?P<sep>[- ])(?P<g>\d{2})(?P=sep)(?P<s>\d{4})(?![\d-]|\.\d)"
        ),
        (),
        validate=_ssn_ok,
        priority=55,
        boundary=False,
    ),
    _Rule(
        "phone",
        re.compile(
            # US/NANP: (555) 234-5678, 555-234-5678, 555.234.5678, +1 555 234 5678
            r"(?<![\w.+/:-])(?:(?:\+?1[ .-]?)?(?:\((?P<pa>\d{3})\)[ .-]?|(?P<pa2>\d{3})(?P<ps>[ .-]))"
            r"(?P<pe>\d{3})[ .-]\d{4}"
            # international: +44 20 7946 0958, +49-30-901820
            r"|\+[1-9]\d{0,2}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){2,6})"
            r"(?![\w-]|\.\d)"
        ),
        (),
        validate=_phone_ok,
        priority=50,
        boundary=False,
    ),
)

# Email is found from its '@' outwards: a leading character class would make
# every position of the text a match attempt.
_EMAIL_AT = re.compile(r"@[A-Za-z0-9]")
_EMAIL_DOMAIN = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
_EMAIL_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")

BUILTIN_TYPES: tuple[str, ...] = (
    *dict.fromkeys(r.type for r in _LITERAL_RULES),
    *dict.fromkeys(r.type for r in _DIGIT_RULES),
    "email",
)


class SensitiveDetector:
    """Finds and redacts sensitive values in text.

    ``types`` restricts the built-in types (None → all); ``custom`` adds
    ``(name, regex)`` pairs, each checked by regex_safety so a policy pattern
    can never hang the proxy.
    """

    __slots__ = ("_custom", "_digit_rules", "_email", "_literal_rules")

    def __init__(
        self, types: Iterable[str] | None = None, custom: Iterable[tuple[str, str]] = ()
    ) -> None:
        wanted = set(BUILTIN_TYPES) if types is None else set(types)
        unknown = wanted - set(BUILTIN_TYPES)
        if unknown:
            raise ValueError(
                f"unknown sensitive types: {', '.join(sorted(unknown))}"
                f" (known: {', '.join(BUILTIN_TYPES)})"
            )
        self._literal_rules = tuple(r for r in _LITERAL_RULES if r.type in wanted)
        self._digit_rules = tuple(r for r in _DIGIT_RULES if r.type in wanted)
        self._email = "email" in wanted
        custom_list: list[tuple[str, re.Pattern[str]]] = []
        for name, pattern in custom:
            if not name:
                raise ValueError("custom sensitive pattern needs a name")
            custom_list.append((name, check_regex(pattern)))
        self._custom = tuple(custom_list)

    def find(self, text: str) -> list[SensitiveMatch]:
        """All matches, non-overlapping, sorted by start (most specific, then longest wins)."""
        cands: list[tuple[int, int, int, str]] = []  # (start, -priority, -end, type)
        n = len(text)
        for rule in self._literal_rules:
            if rule.triggers:
                for t in rule.triggers:
                    if t in text:
                        break
                else:
                    continue
            _collect(rule, text, 0, n, cands)
        if self._digit_rules:
            for lo, hi in _digit_windows(text):
                for rule in self._digit_rules:
                    _collect(rule, text, lo, hi, cands)
        if self._email and "@" in text:
            _find_emails(text, cands)
        for name, rx in self._custom:
            for m in rx.finditer(text):
                if m.end() > m.start():
                    cands.append((m.start(), -200, -m.end(), name))
        if not cands:
            return []
        cands.sort()
        out: list[SensitiveMatch] = []
        last_end = -1
        for start, _prio, neg_end, typ in cands:
            if start < last_end:
                continue
            out.append(SensitiveMatch(typ, start, -neg_end, text[start:-neg_end]))
            last_end = -neg_end
        return out

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """Replace every match with ``[REDACTED:<type>]``; return counts per type."""
        matches = self.find(text)
        if not matches:
            return text, {}
        parts: list[str] = []
        counts: dict[str, int] = {}
        pos = 0
        for m in matches:
            parts.append(text[pos : m.start])
            parts.append(f"[REDACTED:{m.type}]")
            counts[m.type] = counts.get(m.type, 0) + 1
            pos = m.end
        parts.append(text[pos:])
        return "".join(parts), counts


def _collect(
    rule: _Rule, text: str, lo: int, hi: int, cands: list[tuple[int, int, int, str]]
) -> None:
    validate = rule.validate
    g = rule.group
    boundary = rule.boundary
    for m in rule.regex.finditer(text, lo, hi):
        if boundary:
            s = m.start()
            if s > 0 and text[s - 1] in _WORD_CHARS:
                continue
        if validate is not None and not validate(m):
            continue
        s, e = m.span(g)
        if e > s:
            cands.append((s, -rule.priority, -e, rule.type))


def _find_emails(text: str, cands: list[tuple[int, int, int, str]]) -> None:
    last = 0
    for at in _EMAIL_AT.finditer(text):
        a = at.start()
        if a < last:
            continue
        i = a
        floor = max(0, a - 64)
        while i > floor and text[i - 1] in _EMAIL_LOCAL:
            i -= 1
        if i == a or (i > 0 and text[i - 1] in _EMAIL_LOCAL):
            continue  # empty local part, or longer than 64 characters
        dm = _EMAIL_DOMAIN.match(text, a + 1)
        if dm is None:
            continue
        cands.append((i, -40, -dm.end(), "email"))
        last = dm.end()
