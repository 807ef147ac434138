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
from agentsh.agent.mcp.detect_rules import RANK, RULES, SEVERITIES, Rule
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
_PLACEHOLDER = re.compile(r"example|sample|dummy|placeholder|fake|x{6,}|0{8,}|\.\.\.|your[_-]|<|\*{3}", re.I)

# schema keys whose string values are machine syntax, not prose for the model
_SYNTAX_KEYS = frozenset(("$schema", "$ref", "$id", "type", "format", "pattern", "contentEncoding"))
# schema keys whose children are user-chosen names (scanned as text too)
_NAME_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))

_B64_RE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/]{20,}={0,2}|(?<![A-Za-z0-9+/_-])[A-Za-z0-9_-]{20,}={0,2}")
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_ESC_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){6,}|(?:\\u[0-9A-Fa-f]{4}){6,}|(?:\\[0-7]{3}){6,}")
_PCT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2}[^\s%\x00]{0,3}){4,}")
_LONG_TOKEN = 20

_ORDER_WORDS = re.compile(
    r"\b(?:always|must|should|never|instead|before|after|when|whenever|first|also|bcc|cc|redirect|"
    r"replace|override|do not|don'?t|send|forward|include|add|ignore|only|prefer|route|change)\b"
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

    def add(self, pattern: str, category: str, severity: str, field: str, text: str, pos: int, context: str) -> None:
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
            (cp.name, cp.category, cp.severity, check_regex(cp.pattern)) for cp in cfg.custom_patterns
        )

    # ------------------------------------------------------------ public API

    def inspect(self, tool: dict[str, Any], peers: Iterable[dict[str, Any]] = ()) -> list[DetectionResult]:
        out = _Collector()
        if not isinstance(tool, dict):
            return []
        fields = list(self._fields(tool))
        if not fields:
            return []
        # 2. text rules over all prose fields at once
        prose = [f for f in fields if not f.syntax]
        if prose:
            joined = "\x00".join(f.prep.lower for f in prose)
            starts: list[int] = []
            pos = 0
            for f in prose:
                starts.append(pos)
                pos += len(f.prep.lower) + 1
            for rule, s, e in self._run_rules(joined):
                i = bisect.bisect_right(starts, s) - 1
                f = prose[i]
                ls, le = s - starts[i], min(e - starts[i], len(f.prep.lower))
                os_, oe = f.prep.orig_span(ls, le)
                orig = f.prep.original
                sev = rule.severity
                if f.prep.folded and orig[os_:oe].lower() != f.prep.lower[ls:le]:
                    sev = _bump(sev)  # matched only after de-obfuscation
                out.add(rule.name, rule.category, sev, f.path, orig[os_:oe], os_, _context(orig, os_, oe))
            if self._shadowing:
                self._peer_shadowing(tool, joined, peers, out)
        # 3-5. per-field checks
        for f in fields:
            text = f.prep.original
            if f.prep.index is not None and (self._invisible or self._ansi):
                self._char_checks(f, out)
            if self._encoded and not f.syntax and len(text) >= _LONG_TOKEN:
                self._encoded_checks(f, out, 0)
            if self._secrets is not None:
                for m in self._secrets.find(text):
                    if _PLACEHOLDER.search(m.text) or len(set(m.text)) < 8:
                        continue
                    out.add(
                        f"embedded_{m.type}",
                        "embedded_secrets",
                        "high",
                        f.path,
                        m.text,
                        m.start,
                        _context(text, m.start, m.end),
                    )
            for name, category, severity, rx in self._custom:
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        out.add(name, category, severity, f.path, m.group(0), m.start(), _context(text, m.start(), m.end()))
                if f.prep.folded and rx.flags & re.IGNORECASE:
                    for m in rx.finditer(f.prep.lower):
                        os_, oe = f.prep.orig_span(m.start(), m.end())
                        out.add(name, category, severity, f.path, text[os_:oe], os_, _context(text, os_, oe))
        return out.sorted()

    def alerts(self, results: Iterable[DetectionResult]) -> bool:
        return reaches(max_severity(results), self.threshold)

    # ------------------------------------------------------------ internals

    def _fields(self, tool: dict[str, Any]) -> Iterator[_Field]:
        count = 0

        def walk(node: Any, path: str, depth: int, syntax: bool) -> Iterator[_Field]:
            nonlocal count
            if count >= MAX_STRINGS or depth > MAX_DEPTH:
                return
            if isinstance(node, str):
                if node:
                    count += 1
                    yield _Field(path, prepare(node), syntax)
            elif isinstance(node, dict):
                names = path.rsplit(".", 1)[-1] in _NAME_MAPS
                for k, v in node.items():
                    ks = str(k)
                    sub = f"{path}.{ks}" if path else ks
                    if names and ks:
                        count += 1
                        yield _Field(sub, prepare(ks), False)
                    yield from walk(v, sub, depth + 1, ks in _SYNTAX_KEYS)
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    yield from walk(v, f"{path}[{i}]", depth + 1, syntax)

        # stable, meaningful order: name, title, description, then the rest
        order = ["name", "title", "description"]
        keys = [k for k in order if k in tool] + [k for k in tool if k not in order]
        for k in keys:
            yield from walk(tool[k], str(k), 0, False)

    def _run_rules(self, lower: str) -> Iterator[tuple[Rule, int, int]]:
        for rule in self._rules:
            kws = rule.keywords
            if kws:
                for k in kws:
                    if k in lower:
                        break
                else:
                    continue
            for m in rule.regex.finditer(lower):
                if m.end() > m.start():
                    yield rule, m.start(), m.end()

    def _rescan(self, hidden: str) -> list[tuple[Rule, str]]:
        prep = prepare(hidden)
        return [(rule, prep.lower[s:e]) for rule, s, e in self._run_rules(prep.lower)]

    def _char_checks(self, f: _Field, out: _Collector) -> None:
        text = f.prep.original
        for hit in scan_chars(text, invisible=self._invisible, ansi=self._ansi):
            sev = hit.severity
            inner: list[tuple[Rule, str]] = []
            if hit.hidden:
                inner = self._rescan(hit.hidden)
                if inner:
                    sev = "critical"
            out.add(hit.name, hit.category, sev, f.path, hit.text, hit.start, _context(text, hit.start, hit.end))
            for rule, mt in inner:
                out.add(hit.name, hit.category, sev, f.path, f"{rule.name}: {mt}", hit.start, hit.text[:200])

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
            out.add(f"{kind}_payload", "encoded_payload", sev, f.path, shown, start, _context(text, start, end))
            for rule, mt in inner:
                out.add(f"{kind}_payload", "encoded_payload", sev, f.path, f"{rule.name}: {mt}", start, shown[:200])
            if depth + 1 < MAX_DECODE_DEPTH and len(decoded) >= _LONG_TOKEN:
                for kind2, _s2, _e2, decoded2 in _decoded_runs(decoded):
                    inner2 = self._rescan(decoded2)
                    if inner2:
                        worst = max((r.severity for r, _ in inner2), key=RANK.__getitem__)
                        out.add(f"{kind}_{kind2}_payload", "encoded_payload", _bump(worst), f.path, decoded2[:300], start, shown[:200])

    def _peer_shadowing(
        self, tool: dict[str, Any], lower: str, peers: Iterable[dict[str, Any]], out: _Collector
    ) -> None:
        own = str(tool.get("name") or "")
        own_l = own.lower()
        own_folded = prepare(own).lower if own else ""
        desc = tool.get("description")
        desc_text = desc if isinstance(desc, str) else ""
        desc_lower = prepare(desc_text).lower if desc_text else ""
        seen: set[str] = set()
        for p in peers:
            if not isinstance(p, dict):
                continue
            pname = p.get("name")
            if not isinstance(pname, str) or not pname:
                continue
            pl = pname.lower()
            if pl in seen:
                continue
            seen.add(pl)
            if own and pl == own_folded and own_l != pl:
                out.add("impersonates_peer_tool", "shadowing", "critical", "name", own, 0, own)
                continue
            if pl == own_l:
                out.add("peer_name_collision", "shadowing", "low", "name", own, 0, own)
                continue
            if len(pl) < 3 or not desc_lower or pl not in desc_lower:
                continue
            generic = re.fullmatch(r"[a-z]+", pl) is not None
            for m in re.finditer(r"(?<![\w-])" + re.escape(pl) + r"(?![\w-])", desc_lower):
                s, e = m.start(), m.end()
                # sentence around the mention
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
                out.add(name, "shadowing", sev, "description", desc_text[s:e], s, _context(desc_text, s, e))
                break


def _readable(data: bytes) -> str | None:
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) < 8:
        return None
    good = sum(1 for c in s if c.isprintable() or c in "\n\t\r")
    if good / len(s) < 0.85 or sum(c.isalpha() for c in s) < len(s) * 0.4:
        return None
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
    for tok_m in re.finditer(r"\S{20,}", text) if _has_long_token(text) else ():
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
    return any(len(t) >= _LONG_TOKEN for t in text.split())
