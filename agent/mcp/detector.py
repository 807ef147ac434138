"""MCP tool-definition detector (seed 001 "Pattern Detector", extended).

``Detector.inspect(tool, peers)`` scans every string of a raw MCP tool
definition (name, title, description, input/output schema incl. property
names, annotations, any other field) and returns DetectionResults grouped per
(rule, field). Pipeline per tool:

1. collect strings with their field paths; normalise each (detect_text);
2. join the normalised texts with NUL separators and run every built-in rule
   whose keywords occur — one regex pass per rule per tool, not per string;
3. character-level checks on non-ASCII strings (detect_chars); smuggled text
   (tag characters, variation selectors) is decoded and rescanned;
4. encoded runs (base64, hex, \\x / \\u escapes, %-encoding) are decoded and
   rescanned; the decoded text is reported;
5. embedded secrets (agent.sensitive), peer-tool shadowing, custom patterns.

A rule match that only exists after normalisation (homoglyphs, zero-width
splitting) is escalated: the obfuscation is itself evidence of intent.
Everything is compiled once in __init__; a typical tool costs tens of µs.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any

from agentsh.agent.events.models import DetectionMatch, DetectionResult
from agentsh.agent.mcp.detect_chars import scan_chars
from agentsh.agent.mcp.detect_rules import (
    MENTION_BEFORE,
    MENTION_LABEL,
    RANK,
    RULES,
    SEVERITIES,
    Rule,
    words_of,
)
from agentsh.agent.mcp.detect_text import Prepared, prepare
from agentsh.agent.policy.regex_safety import check_regex
from agentsh.agent.policy.schema import DetectionConfig
from agentsh.agent.sensitive import SensitiveDetector

__all__ = ["Detector", "max_severity", "reaches"]

CONTEXT = 50
MAX_MATCHES_PER_RESULT = 10
MAX_STRINGS = 4000
MAX_DEPTH = 32
MAX_DECODE_DEPTH = 2

# secret-shaped values; PII types (email, phone) are ordinary in descriptions
SECRET_TYPES = (
    "private_key",
    "jwt",
    "anthropic_api_key",
    "openai_api_key",
    "github_token",
    "slack_token",
    "stripe_key",
    "aws_access_key",
    "aws_secret_key",
)
_PLACEHOLDER = re.compile(
    r"example|sample|dummy|placeholder|fake|x{6,}|0{8,}|\.\.\.|your[_-]|<|\*{3}", re.I
)

# schema keys whose string values are machine syntax, not prose for the model
_SYNTAX_KEYS = frozenset(("$schema", "$ref", "$id", "type", "format", "pattern", "contentEncoding"))
# schema keys whose children are user-chosen names (scanned as text too)
_NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_NAME_MAP_SUFFIXES = (*("." + k for k in _NAME_MAPS), *_NAME_MAPS)
_FIRST_KEYS = ("name", "title", "description")

_B64_RE = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/]{20,}={0,2}|(?<![A-Za-z0-9+/_-])[A-Za-z0-9_-]{20,}={0,2}"
)
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_ESC_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){6,}|(?:\\u[0-9A-Fa-f]{4}){6,}|(?:\\[0-7]{3}){6,}")
_PCT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2}[^\s%\x00]{0,3}){4,}")
_LONG_TOKEN = 20
_CONTROL_NO_NUL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")

_ORDER_WORDS = re.compile(
    r"\b(?:always|must|should|never|instead|before|after|when|whenever|first|also|bcc|cc|redirect|"
    r"replace|override|do not|don'?t|send|forward|include|add|ignore|only|prefer|route|change|call|"
    r"invoke|run|use|execute|trigger|need to|have to|make sure|ensure)\b"
)
_EXTERNAL_HINT = re.compile(r"https?://|[\w.+-]+@[\w-]+\.[\w.-]+|\bwebhook")
_SENT_END = re.compile(r"[.!?](?:\s|$)|\n|\x00")


def _rank(sev: str | None) -> int:
    return -1 if sev is None else RANK[sev]


def max_severity(results: Iterable[DetectionResult]) -> str | None:
    best: str | None = None
    for r in results:
        if best is None or RANK[r.severity] > RANK[best]:
            best = r.severity
    return best


def reaches(severity: str | None, threshold: str) -> bool:
    return severity is not None and RANK[severity] >= RANK[threshold]


def _bump(sev: str, floor: str = "high") -> str:
    return SEVERITIES[min(len(SEVERITIES) - 1, max(RANK[sev] + 1, RANK[floor]))]


class _Field:
    __slots__ = ("path", "prep", "syntax")

    def __init__(self, path: str, prep: Prepared, syntax: bool) -> None:
        self.path = path
        self.prep = prep
        self.syntax = syntax


class _Collector:
    """Groups matches into DetectionResults keyed by (pattern, field)."""

    def __init__(self) -> None:
        self.results: dict[tuple[str, str], DetectionResult] = {}

    def add(
        self,
        pattern: str,
        category: str,
        severity: str,
        field: str,
        text: str,
        pos: int,
        context: str,
    ) -> None:
        key = (pattern, field)
        r = self.results.get(key)
        m = DetectionMatch(text=text, position=pos, context=context)
        if r is None:
            self.results[key] = DetectionResult(
                pattern=pattern, category=category, severity=severity, matches=[m], field=field
            )
            return
        if RANK[severity] > RANK[r.severity]:
            r.severity = severity  # type: ignore[assignment]
        if len(r.matches) < MAX_MATCHES_PER_RESULT:
            r.matches.append(m)

    def sorted(self) -> list[DetectionResult]:
        return sorted(self.results.values(), key=lambda r: -RANK[r.severity])


def _context(text: str, start: int, end: int) -> str:
    return text[max(0, start - CONTEXT) : min(len(text), end + CONTEXT)]


class Detector:
    """Inspects MCP tool definitions; see module docstring."""

    def __init__(self, cfg: DetectionConfig) -> None:
        b = cfg.builtin
        self.threshold = cfg.alert_threshold
        self._rules: tuple[Rule, ...] = tuple(r for r in RULES if getattr(b, r.category))
        self._invisible = b.invisible_unicode
        self._ansi = b.ansi_escape
        self._encoded = b.encoded_payload
        self._shadowing = b.shadowing
        self._secrets = SensitiveDetector(types=SECRET_TYPES) if b.embedded_secrets else None
        self._custom = tuple(
            (cp.name, cp.category, cp.severity, check_regex(cp.pattern))
            for cp in cfg.custom_patterns
        )

    # ------------------------------------------------------------ public API

    def inspect(
        self, tool: dict[str, Any], peers: Iterable[dict[str, Any]] = ()
    ) -> list[DetectionResult]:
        if not isinstance(tool, dict):
            return []
        raw_fields = self._collect(tool)
        if not raw_fields:
            return []
        out = _Collector()
        raws = [r for _p, r, _s in raw_fields]
        joined_raw = "\x00".join(raws)
        clean = (
            joined_raw.isascii()
            and joined_raw.count("\x00") == len(raws) - 1
            and _CONTROL_NO_NUL.search(joined_raw) is None
        )
        if clean:  # nearly every real tool: no per-string normalisation at all
            fields = [
                _Field(p, Prepared(r, r.lower(), None, [], False), sy) for p, r, sy in raw_fields
            ]
            joined = joined_raw.lower()
        else:
            fields = [_Field(p, prepare(r), sy) for p, r, sy in raw_fields]
            joined = "\x00".join(f.prep.lower for f in fields)
        starts: list[int] = []
        pos = 0
        for f in fields:
            starts.append(pos)
            pos += len(f.prep.lower) + 1
        words = words_of(joined)
        # 2. text rules over all fields at once
        for rule, s, e in self._run_rules(joined, words):
            i = bisect.bisect_right(starts, s) - 1
            f = fields[i]
            if f.syntax:
                continue
            lo = f.prep.lower
            ls, le = s - starts[i], min(e - starts[i], len(lo))
            os_, oe = f.prep.orig_span(ls, le)
            orig = f.prep.original
            sev = rule.severity
            name = rule.name
            if rule.mention_aware and _is_mention(lo, ls, le):
                sev, name = "low", f"{rule.name}_mentioned"
            elif f.prep.folded and orig[os_:oe].lower() != lo[ls:le]:
                sev = _bump(sev)  # matched only after de-obfuscation
            out.add(name, rule.category, sev, f.path, orig[os_:oe], os_, _context(orig, os_, oe))
        if self._shadowing:
            self._peer_shadowing(tool, peers, out)
        # 3. character level (only strings that are not plain ASCII)
        if not clean and (self._invisible or self._ansi):
            for f in fields:
                if f.prep.index is not None:
                    self._char_checks(f, out)
        # 4. encoded payloads
        if self._encoded and (
            "%" in joined_raw or "\\" in joined_raw or _has_long_token(joined_raw)
        ):
            for f in fields:
                t = f.prep.original
                if not f.syntax and len(t) >= 12 and ("%" in t or "\\" in t or _has_long_token(t)):
                    self._encoded_checks(f, out, 0)
        # 5. embedded secrets, one pass over all strings
        if self._secrets is not None:
            raw_starts: list[int] = []
            pos = 0
            for r in raws:
                raw_starts.append(pos)
                pos += len(r) + 1
            for m in self._secrets.find(joined_raw):
                if _PLACEHOLDER.search(m.text) or len(set(m.text)) < 8:
                    continue
                i = bisect.bisect_right(raw_starts, m.start) - 1
                text = raws[i]
                st, en = m.start - raw_starts[i], m.end - raw_starts[i]
                out.add(
                    f"embedded_{m.type}",
                    "embedded_secrets",
                    "high",
                    fields[i].path,
                    m.text,
                    st,
                    _context(text, st, en),
                )
        # 6. custom patterns
        for name, category, severity, rx in self._custom:
            for f in fields:
                text = f.prep.original
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        out.add(
                            name,
                            category,
                            severity,
                            f.path,
                            m.group(0),
                            m.start(),
                            _context(text, m.start(), m.end()),
                        )
                if f.prep.folded and rx.flags & re.IGNORECASE:
                    for m in rx.finditer(f.prep.lower):
                        if m.end() > m.start():
                            os_, oe = f.prep.orig_span(m.start(), m.end())
                            out.add(
                                name,
                                category,
                                severity,
                                f.path,
                                text[os_:oe],
                                os_,
                                _context(text, os_, oe),
                            )
        return out.sorted()

    def alerts(self, results: Iterable[DetectionResult]) -> bool:
        return reaches(max_severity(results), self.threshold)

    # ------------------------------------------------------------ internals

    @staticmethod
    def _collect(tool: dict[str, Any]) -> list[tuple[str, str, bool]]:
        """(field path, string, is-syntax) for every string in the tool, in a stable order."""
        out: list[tuple[str, str, bool]] = []
        append = out.append

        def walk(node: Any, path: str, depth: int, syntax: bool) -> None:
            if len(out) >= MAX_STRINGS or depth > MAX_DEPTH:
                return
            if type(node) is dict:
                names = path.endswith(_NAME_MAP_SUFFIXES)
                for k, v in node.items():
                    if type(k) is not str:
                        k = str(k)
                    sub = path + "." + k
                    if names and k:
                        append((sub, k, False))
                    tv = type(v)
                    if tv is str:
                        if v:
                            append((sub, v, k in _SYNTAX_KEYS))
                    elif tv is dict or tv is list:
                        walk(v, sub, depth + 1, k in _SYNTAX_KEYS)
            elif type(node) is list:
                for i, v in enumerate(node):
                    tv = type(v)
                    if tv is str:
                        if v:
                            append((f"{path}[{i}]", v, syntax))
                    elif tv is dict or tv is list:
                        walk(v, f"{path}[{i}]", depth + 1, syntax)
            elif isinstance(node, str) and node:  # str subclasses
                append((path, str(node), syntax))

        for k in _FIRST_KEYS:
            v = tool.get(k)
            if type(v) is str:
                if v:
                    append((k, v, False))
            elif v is not None:
                walk(v, k, 0, False)
        for k, v in tool.items():
            if k in _FIRST_KEYS:
                continue
            k = str(k)
            if type(v) is str:
                if v:
                    append((k, v, False))
            else:
                walk(v, k, 0, False)
        return out

    def _run_rules(self, lower: str, words: set[bytes]) -> Iterator[tuple[Rule, int, int]]:
        for rule in self._rules:
            ok = True
            for g in rule.gate:
                if g.isdisjoint(words):
                    ok = False
                    break
            if not ok:
                continue
            if rule.needles:
                for k in rule.needles:
                    if k in lower:
                        break
                else:
                    continue
            check = rule.start_ok
            if rule.anchors is None:
                for m in rule.regex.finditer(lower):
                    s, e = m.span()
                    if e > s and (check is None or check(lower, s)):
                        yield rule, s, e
                continue
            # anchored: try the regex only where one of its literal prefixes occurs
            spans: list[tuple[int, int]] = []
            match = rule.regex.match
            for word, prefix in rule.anchors:
                if word and word not in words:
                    continue
                i = lower.find(prefix)
                while i >= 0:
                    if i == 0 or not lower[i - 1].isalnum() or not prefix[0].isalnum():
                        m = match(lower, i)
                        if m is not None and m.end() > i and (check is None or check(lower, i)):
                            spans.append(m.span())
                    i = lower.find(prefix, i + 1)
            if len(spans) > 1:
                spans.sort()
            last = -1
            for s, e in spans:
                if s >= last:
                    yield rule, s, e
                    last = e

    def _rescan(self, hidden: str) -> list[tuple[Rule, str]]:
        prep = prepare(hidden)
        lo = prep.lower
        return [
            (rule, lo[s:e])
            for rule, s, e in self._run_rules(lo, words_of(lo))
            if not (rule.mention_aware and _is_mention(lo, s, e))
        ]

    def _char_checks(self, f: _Field, out: _Collector) -> None:
        text = f.prep.original
        for hit in scan_chars(text, invisible=self._invisible, ansi=self._ansi):
            sev = hit.severity
            inner: list[tuple[Rule, str]] = []
            if hit.hidden:
                inner = self._rescan(hit.hidden)
                if inner:
                    sev = "critical"
            out.add(
                hit.name,
                hit.category,
                sev,
                f.path,
                hit.text,
                hit.start,
                _context(text, hit.start, hit.end),
            )
            for rule, mt in inner:
                out.add(
                    hit.name,
                    hit.category,
                    sev,
                    f.path,
                    f"{rule.name}: {mt}",
                    hit.start,
                    hit.text[:200],
                )

    def _encoded_checks(self, f: _Field, out: _Collector, depth: int) -> None:
        text = f.prep.original
        for kind, start, end, decoded in _decoded_runs(text):
            inner = self._rescan(decoded)
            words = len(re.findall(r"[A-Za-z]{2,}", decoded))
            if inner:
                worst = max((r.severity for r, _ in inner), key=RANK.__getitem__)
                sev = _bump(worst)
            elif words >= 3 and kind != "percent":
                sev = "medium"  # readable prose hidden in an encoding
            else:
                continue
            shown = decoded if len(decoded) <= 300 else decoded[:297] + "..."
            out.add(
                f"{kind}_payload",
                "encoded_payload",
                sev,
                f.path,
                shown,
                start,
                _context(text, start, end),
            )
            for rule, mt in inner:
                out.add(
                    f"{kind}_payload",
                    "encoded_payload",
                    sev,
                    f.path,
                    f"{rule.name}: {mt}",
                    start,
                    shown[:200],
                )
            if depth + 1 < MAX_DECODE_DEPTH and len(decoded) >= _LONG_TOKEN:
                for kind2, _s2, _e2, decoded2 in _decoded_runs(decoded):
                    inner2 = self._rescan(decoded2)
                    if inner2:
                        worst = max((r.severity for r, _ in inner2), key=RANK.__getitem__)
                        out.add(
                            f"{kind}_{kind2}_payload",
                            "encoded_payload",
                            _bump(worst),
                            f.path,
                            decoded2[:300],
                            start,
                            shown[:200],
                        )

    def _peer_shadowing(
        self, tool: dict[str, Any], peers: Iterable[dict[str, Any]], out: _Collector
    ) -> None:
        """Orders about other servers' tools, and impersonation of their names."""
        own = tool.get("name")
        own = own if isinstance(own, str) else ""
        own_l = own.lower()
        own_folded = prepare(own).lower if own else ""
        desc = tool.get("description")
        desc_text = desc if isinstance(desc, str) else ""
        desc_lower = prepare(desc_text).lower if desc_text else ""
        desc_plain = desc_text.isascii() and len(desc_lower) == len(desc_text)
        own_server = tool.get("server")
        seen: set[str] = set()
        for p in peers:
            if not isinstance(p, dict):
                continue
            if own_server is not None and p.get("server") == own_server:
                continue  # same server: referring to a sibling tool is ordinary
            if isinstance(p.get("tool"), dict) and "name" not in p:
                p = p["tool"]  # {"server": ..., "tool": {...}} form
            pname = p.get("name")
            if not isinstance(pname, str) or not pname:
                continue
            pl = pname.lower()
            if pl in seen:
                continue
            seen.add(pl)
            if own and pl == own_folded and own_l != pl:
                out.add(
                    "impersonates_peer_tool",
                    "shadowing",
                    "critical",
                    "name",
                    own,
                    0,
                    f"{own} ~ {pname}",
                )
                continue
            if own and pl == own_l:
                pdesc = p.get("description")
                sim = (
                    _similarity(desc_lower, prepare(pdesc).lower) if isinstance(pdesc, str) else 0.0
                )
                # same name on another server: a copy of the description is impersonation
                sev = "high" if sim >= 0.5 else "medium"
                out.add(
                    "peer_name_collision",
                    "shadowing",
                    sev,
                    "name",
                    own,
                    0,
                    f"{own} (description similarity {sim:.2f})",
                )
                continue
            if len(pl) < 3 or not desc_lower or pl not in desc_lower:
                continue
            generic = re.fullmatch(r"[a-z]+", pl) is not None
            for m in re.finditer(r"(?<![\w-])" + re.escape(pl) + r"(?![\w-])", desc_lower):
                s, e = m.start(), m.end()
                a = max((x.end() for x in _SENT_END.finditer(desc_lower, 0, s)), default=0)
                z_m = _SENT_END.search(desc_lower, e)
                z = z_m.start() if z_m else len(desc_lower)
                sentence = desc_lower[a:z]
                if generic:
                    near = desc_lower[max(0, s - 12) : e + 12]
                    if not re.search(r"[`'\"]|\btool\b|\bfunction\b", near):
                        continue
                if _ORDER_WORDS.search(sentence):
                    sev = "critical" if _EXTERNAL_HINT.search(sentence) else "high"
                    name = "peer_tool_order"
                else:
                    sev, name = "low", "peer_tool_reference"
                os_, oe = (s, e) if desc_plain else (0, len(desc_text))
                out.add(
                    name,
                    "shadowing",
                    sev,
                    "description",
                    desc_text[os_:oe],
                    os_,
                    _context(desc_text, os_, oe),
                )
                break


_SIM_WORDS = re.compile(r"[a-z0-9]+")


def _similarity(a: str, b: str) -> float:
    wa, wb = set(_SIM_WORDS.findall(a)), set(_SIM_WORDS.findall(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def _is_mention(lower: str, s: int, e: int) -> bool:
    """Is lower[s:e] quoted, exemplified or analysed rather than said?"""
    a = max(0, s - 80)
    for sep in ("\x00", "\n", ". ", "! ", "? "):
        k = lower.rfind(sep, a, s)
        if k >= 0:
            a = max(a, k + len(sep))
    before = lower[a:s]
    if MENTION_LABEL.match(before):
        return True
    m = MENTION_BEFORE.search(before)
    if m is None:
        return False
    if m.group(0).strip()[:1] in "\"'`\u201c\u2018":
        # an opening quote counts only if it closes soon after the phrase
        tail = lower[e : e + 60]
        return any(q in tail for q in ('"', "'", "`", "\u201d", "\u2019"))
    return True


def _readable(data: bytes) -> str | None:
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) < 8:
        return None
    good = sum(1 for c in s if c.isprintable() or c in "\n\t\r")
    if good / len(s) < 0.9 or sum(c.isalpha() for c in s) < len(s) * 0.2:
        return None
    if not any(c in " /.:|;&=" for c in s):
        return None  # one long "word": an identifier or noise, not a payload
    return s


def _decoded_runs(text: str) -> Iterator[tuple[str, int, int, str]]:
    """(kind, start, end, decoded text) for encoded runs that decode to readable text."""
    if "%" in text:
        for m in _PCT_RE.finditer(text):
            decoded = urllib.parse.unquote(m.group(0))
            if decoded != m.group(0):
                yield "percent", m.start(), m.end(), decoded
    if "\\" in text:
        for m in _ESC_RE.finditer(text):
            raw = m.group(0)
            try:
                decoded = raw.encode("latin-1").decode("unicode_escape")
            except (UnicodeDecodeError, UnicodeEncodeError):
                continue
            r = _readable(decoded.encode("utf-8", "replace"))
            if r:
                yield "escaped", m.start(), m.end(), r
    # only long tokens can hold a payload: cheap split first, regexes on those
    for tok_m in re.finditer(r"[^\s\x00]{20,}", text) if _has_long_token(text) else ():
        tok, base = tok_m.group(0), tok_m.start()
        for m in _HEX_RE.finditer(tok):
            try:
                r = _readable(binascii.unhexlify(m.group(0)))
            except (binascii.Error, ValueError):
                continue
            if r:
                yield "hex", base + m.start(), base + m.end(), r
        for m in _B64_RE.finditer(tok):
            raw = m.group(0)
            core = raw.rstrip("=")
            if core.isalpha() and (core.islower() or core.isupper()):
                continue  # a long word, not base64
            padded = core + "=" * (-len(core) % 4)
            try:
                data = (
                    base64.urlsafe_b64decode(padded)
                    if ("-" in core or "_" in core)
                    else base64.b64decode(padded, validate=True)
                )
            except (binascii.Error, ValueError):
                continue
            r = _readable(data)
            if r:
                yield "base64", base + m.start(), base + m.end(), r


def _has_long_token(text: str) -> bool:
    return max(map(len, text.split()), default=0) >= _LONG_TOKEN
