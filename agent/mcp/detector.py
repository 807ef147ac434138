"""MCP tool-definition detector (seed 001 "Pattern Detector", extended).

``Detector.inspect(tool, peers)`` scans every string of a raw MCP tool
definition (name, title, description, input/output schema incl. property
names, annotations, any other field) and returns DetectionResults grouped per
(rule, field). Pipeline per tool:

1. collect strings with their field paths; normalise each (detect_text);
2. join the normalised texts with NUL separators; one word split of that text,
   intersected with the gate vocabulary of all rules (one word → bitmask
   table), picks the few rules whose keywords all occur; those run once per
   tool, anchored rules only where a literal prefix starts a word;
3. character-level checks on non-ASCII strings (detect_chars); smuggled text
   (tag characters, variation selectors) is decoded and rescanned;
4. encoded runs (base64, hex, \\x / \\u escapes, %-encoding) are decoded and
   rescanned; the decoded text is reported;
5. embedded secrets (agent.sensitive), peer-tool shadowing, custom patterns.

A rule match that only exists after normalisation (homoglyphs, zero-width
splitting) is escalated: the obfuscation is itself evidence of intent.
Everything is compiled once in __init__. Plain-ASCII tools (nearly all) skip
normalisation; encoded-payload and rule prechecks are C-speed bytes passes.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import urllib.parse
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Any

from agentsh.agent.events.models import DetectionMatch, DetectionResult
from agentsh.agent.mcp.detect_chars import scan_chars
from agentsh.agent.mcp.detect_rules import (
    _TOKEN_TABLE,
    MENTION_BEFORE,
    MENTION_LABEL,
    RANK,
    RULES,
    SEVERITIES,
    Rule,
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
# hex bytes written with separators: "63 61 74", "0x63,0x61", "63:61:74"
_SPACED_HEX_RE = re.compile(
    r"(?<![\w:])(?:(?:0x)?[0-9A-Fa-f]{2}(?:[ ,:]\s?|\s)){11,}(?:0x)?[0-9A-Fa-f]{2}(?![\w:])"
)
# hex digit → 1, separator → 2: twelve "hex hex sep" triples in a row is a spaced-hex run
_HEX_SEP = bytes(
    1 if chr(b) in "0123456789abcdefABCDEF" else 2 if chr(b) in " ,:" else 0 for b in range(256)
)
_HEX_TRIPLES = b"\x01\x01\x02" * 11
_ESC_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){6,}|(?:\\u[0-9A-Fa-f]{4}){6,}|(?:\\[0-7]{3}){6,}")
_PCT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2}[^\s%\x00]{0,3}){4,}")
_LONG_TOKEN = 20
_TOKEN_RE = re.compile(r"[^\s\x00]{20,}")

# words that change how a peer tool is used (its arguments, recipients, URLs, whether it
# is trusted); sequencing words alone ("call X first", "used before X") are workflow hints
_ORDER_WORDS = re.compile(
    r"\b(?:always|must|never|instead|whenever|bcc|cc|redirect\w*|rewrit\w+|replac\w+|"
    r"overrid\w+|do not|don'?t|send|forward|include|add|ignore|prefer|route[sd]?|routing|"
    r"change|proxy|proxied|intercept\w*|set|append|prepend|prefix|suffix|wrap|modify|alter|"
    r"inject|unreliable|deprecated|broken|need to|have to|make sure|ensure)\b"
)
# an order to invoke a peer ("call X before ...", "should invoke X") matters when the peer
# acts (writes, sends, deploys, runs); pointing at a read-only lister is a workflow hint
_INVOKE_WORDS = re.compile(r"\b(?:call|invoke|run|use|execute|trigger)\b")
_PEER_ACTS = re.compile(
    r"\b(?:runs?|execut\w*|deploy\w*|delet\w*|remov\w*|send\w*|push\w*|writ\w*|transfer\w*|"
    r"pay\w*|updat\w*|modif\w*|install\w*|production|drop\w*|commit\w*|merg\w*|publish\w*|"
    r"upload\w*|email\w*|charg\w*|purchas\w*|kill\w*|restart\w*|shell|commands?|sql|"
    r"quer(?:y|ies))\b"
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
        if not self.results:
            return []
        return sorted(self.results.values(), key=lambda r: -RANK[r.severity])


def _context(text: str, start: int, end: int) -> str:
    return text[max(0, start - CONTEXT) : min(len(text), end + CONTEXT)]


def _starts(lengths: Iterable[int]) -> list[int]:
    """Offsets of NUL-joined pieces of the given lengths."""
    out = [0]
    out += accumulate(n + 1 for n in lengths)
    return out


# bytes that may appear in a plain field: deleting them from the NUL-joined ASCII
# text leaves only the separators when no string holds a control character
_PLAIN_ASCII = bytes((9, 10, 13, *range(0x20, 0x7F)))
# base64 (standard / URL-safe alphabet) → 1, else 0: a payload run is 20 ones in a row
_B64_STD = bytes(
    1 if (chr(b).isascii() and chr(b).isalnum()) or chr(b) in "+/" else 0 for b in range(256)
)
_B64_URL = bytes(
    1 if (chr(b).isascii() and chr(b).isalnum()) or chr(b) in "_-" else 0 for b in range(256)
)
_RUN = b"\x01" * _LONG_TOKEN


def _b64_run(data: bytes) -> bool:
    """Is there a base64/base64url run of >= 20 characters (hex runs are such runs too)?"""
    return _RUN in data.translate(_B64_STD) or _RUN in data.translate(_B64_URL)


def _spaced_hex(data: bytes) -> bool:
    if b"0x" in data:
        data = data.replace(b"0x", b"")
    return _HEX_TRIPLES in data.translate(_HEX_SEP)


def _may_hold_payload(text: str) -> bool:
    """Necessary condition for _decoded_runs to yield anything; a few C-speed passes."""
    if "%" in text or "\\" in text:
        return True
    data = text.encode("utf-8", "surrogatepass")
    return _b64_run(data) or _spaced_hex(data)


def _collect(tool: dict[str, Any]) -> tuple[list[str], list[str], list[bool]]:
    """(field paths, strings, is-syntax flags) for every string in the tool, in a stable order."""
    paths: list[str] = []
    raws: list[str] = []
    syntax: list[bool] = []
    add_path, add_raw, add_syn = paths.append, raws.append, syntax.append
    syntax_keys = _SYNTAX_KEYS
    idents: list[tuple[str, str]] = []  # property names and list items: identifier candidates

    def walk(node: Any, path: str, depth: int, syn: bool) -> None:
        if len(raws) >= MAX_STRINGS or depth > MAX_DEPTH:
            return
        if type(node) is dict:
            names = path.endswith(_NAME_MAP_SUFFIXES)
            for k, v in node.items():
                if type(k) is not str:
                    k = str(k)
                tv = type(v)
                if names and k:
                    sub = f"{path}.{k}"
                    add_path(sub)
                    add_raw(k)
                    add_syn(False)
                    if len(k) >= 16:
                        idents.append((sub, k))
                    if tv is str:
                        if v:
                            add_path(sub)
                            add_raw(v)
                            add_syn(k in syntax_keys)
                    elif tv is dict or tv is list:
                        walk(v, sub, depth + 1, k in syntax_keys)
                elif tv is str:
                    if v:
                        add_path(f"{path}.{k}")
                        add_raw(v)
                        add_syn(k in syntax_keys)
                elif tv is dict or tv is list:
                    walk(v, f"{path}.{k}", depth + 1, k in syntax_keys)
        elif type(node) is list:
            for i, v in enumerate(node):
                tv = type(v)
                if tv is str:
                    if v:
                        add_path(f"{path}[{i}]")
                        add_raw(v)
                        add_syn(syn)
                        if len(v) >= 16 and not syn:
                            idents.append((f"{path}[{i}]", v))
                elif tv is dict or tv is list:
                    walk(v, f"{path}[{i}]", depth + 1, syn)
        elif isinstance(node, str) and node:  # str subclasses
            add_path(path)
            add_raw(str(node))
            add_syn(syn)

    for k in _FIRST_KEYS:
        v = tool.get(k)
        if type(v) is str:
            if v:
                add_path(k)
                add_raw(v)
                add_syn(False)
                if k == "name" and len(v) >= 16:
                    idents.append((k, v))
        elif v is not None:
            walk(v, k, 0, False)
    for k, v in tool.items():
        if k in _FIRST_KEYS:
            continue
        k = str(k)
        if type(v) is str:
            if v:
                add_path(k)
                add_raw(v)
                add_syn(False)
        else:
            walk(v, k, 0, False)
    # prose spelled as an identifier ("content_from_reading_ssh_id_rsa", an enum value
    # "csv_and_also_upload_...") is read by the model as words: scan a spaced copy too
    for path, r in idents:
        if " " not in r:
            if r.count("_") >= 3:
                add_path(path)
                add_raw(r.replace("_", " "))
                add_syn(False)
            elif r.count("-") >= 3:
                add_path(path)
                add_raw(r.replace("-", " "))
                add_syn(False)
    return paths, raws, syntax


def _word_starts(lower: str, prefix: str, whole: bool) -> list[int]:
    """Positions where prefix starts a word (and, if whole, also ends one)."""
    out = []
    n = len(prefix)
    i = lower.find(prefix)
    while i >= 0:
        if (i == 0 or not lower[i - 1].isalnum()) and not (
            whole and i + n < len(lower) and lower[i + n].isalnum()
        ):
            out.append(i)
        i = lower.find(prefix, i + 1)
    return out


_COMMON_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789 .,:;/-_()'\"\n")


def _needle_plan(needles: tuple[str, ...]) -> tuple[tuple[str | None, str], ...]:
    """Each needle with a rare character it contains ('%', '\\', '<', ...): that
    single-character test (memchr speed) rules most needles out cheaply."""
    return tuple((next((c for c in k if c not in _COMMON_CHARS), None), k) for k in needles)


class _RuleIndex:
    """All enabled rules' gates folded into one word → bitmask table.

    The tool's words are intersected once with the gate vocabulary; a rule runs
    only if every one of its gate groups has a bit set. Anchored rules then try
    their regex only at the literal prefixes whose first word occurs.
    """

    __slots__ = ("always", "entries", "keyed", "masks", "vocab")

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        masks: dict[bytes, int] = {}
        entries = []
        bit = 0
        for rule in rules:
            req = 0
            for group in rule.gate:
                req |= 1 << bit
                for w in group:
                    masks[w] = masks.get(w, 0) | (1 << bit)
                bit += 1
            # (prefix, whole): a prefix that is one whole word after which the regex
            # needs a word end ("you" can never match in "your")
            by_word: dict[bytes, list[tuple[str, bool]]] = {}
            free: list[tuple[str, bool]] = []
            for word, prefix in rule.anchors or ():
                if word:
                    by_word.setdefault(word, []).append((prefix, word.decode() == prefix))
                    masks.setdefault(word, 0)
                else:
                    free.append((prefix, False))
            entries.append(
                (
                    req,
                    (
                        rule,
                        _needle_plan(rule.needles),
                        frozenset(by_word),
                        {w: tuple(ps) for w, ps in by_word.items()},
                        tuple(free),
                    ),
                )
            )
        self.masks = masks
        self.vocab = frozenset(masks)
        self.entries = tuple(entries)
        # candidates come from the words present: each gated rule is listed under the
        # words of its smallest gate group, so most rules are never even looked at
        keyed: dict[bytes, list[int]] = {}
        always: list[int] = []
        for i, rule in enumerate(rules):
            if not rule.gate:
                always.append(i)
                continue
            for w in min(rule.gate, key=len):
                keyed.setdefault(w, []).append(i)
        self.keyed = {w: tuple(ix) for w, ix in keyed.items()}
        self.always = frozenset(always)

    def hits(self, lower: str) -> frozenset[bytes]:
        """The gate/anchor words that occur in lower ([a-z0-9]+ runs)."""
        return self.vocab.intersection(
            lower.encode("utf-8", "ignore").translate(_TOKEN_TABLE).split()
        )

    def scan(self, lower: str, hits: frozenset[bytes]) -> list[tuple[Rule, int, int]]:
        """(rule, start, end) of every rule match in lower, rule by rule in order."""
        m = 0
        masks = self.masks
        keyed = self.keyed
        cand = set(self.always)
        for w in hits:
            m |= masks[w]
            ix = keyed.get(w)
            if ix is not None:
                cand.update(ix)
        entries = self.entries
        out: list[tuple[Rule, int, int]] = []
        # prefix → its word-start positions (rules share them)
        where: dict[tuple[str, bool], list[int]] = {}
        for i in sorted(cand):
            req, (rule, needles, anchor_words, by_word, free) = entries[i]
            if m & req != req:
                continue
            if needles:
                for guard, k in needles:
                    if (guard is None or guard in lower) and k in lower:
                        break
                else:
                    continue
            check = rule.start_ok
            if rule.anchors is None:
                for mt in rule.regex.finditer(lower):
                    s, e = mt.span()
                    if e > s and (check is None or check(lower, s)):
                        out.append((rule, s, e))
                continue
            # anchored: try the regex only where one of its literal prefixes occurs
            prefixes: tuple[tuple[str, bool], ...] = free
            for w in anchor_words.intersection(hits):
                prefixes += by_word[w]
            spans: list[tuple[int, int]] = []
            match = rule.regex.match
            for prefix in prefixes:
                pos = where.get(prefix)
                if pos is None:
                    pos = where[prefix] = _word_starts(lower, *prefix)
                for i in pos:
                    mt = match(lower, i)
                    if mt is not None and mt.end() > i and (check is None or check(lower, i)):
                        spans.append(mt.span())
            if len(spans) > 1:
                spans.sort()
            last = -1
            for s, e in spans:
                if s >= last:
                    out.append((rule, s, e))
                    last = e
        return out


class Detector:
    """Inspects MCP tool definitions; see module docstring."""

    def __init__(self, cfg: DetectionConfig) -> None:
        b = cfg.builtin
        self.threshold = cfg.alert_threshold
        self._rules: tuple[Rule, ...] = tuple(r for r in RULES if getattr(b, r.category))
        self._index = _RuleIndex(self._rules)
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
        paths, raws, syntax = _collect(tool)
        if not raws:
            return []
        out = _Collector()
        joined_raw = "\x00".join(raws)
        raw_bytes = joined_raw.encode("utf-8", "surrogatepass")
        # nearly every real tool is plain ASCII without control characters: then the
        # normalised text is the lower-cased original and no per-string work is done
        clean = (
            len(raw_bytes) == len(joined_raw)
            and len(raw_bytes.translate(None, _PLAIN_ASCII)) == len(raws) - 1
        )
        preps: list[Prepared] | None
        if clean:
            preps = None
            joined = joined_raw.lower()
        else:
            preps = [prepare(r) for r in raws]
            joined = "\x00".join(p.lower for p in preps)
        # 2. text rules over all fields at once
        matches = self._index.scan(joined, self._index.hits(joined))
        if matches:
            starts = (
                _starts(len(r) for r in raws)
                if preps is None
                else _starts(len(p.lower) for p in preps)
            )
            for rule, s, e in matches:
                if joined[s] == "\x00":
                    s += 1  # a match anchored at a field start belongs to that field
                i = bisect.bisect_right(starts, s) - 1
                if syntax[i]:
                    continue
                orig = raws[i]
                prep = None if preps is None else preps[i]
                lo = orig.lower() if prep is None else prep.lower
                ls, le = s - starts[i], min(e - starts[i], len(lo))
                os_, oe = (ls, le) if prep is None else prep.orig_span(ls, le)
                sev = rule.severity
                name = rule.name
                if rule.where is not None and not rule.where(paths[i]):
                    continue
                if rule.mention_aware and _is_mention(lo, ls, le, rule.mention_cue_only):
                    sev, name = "low", f"{rule.name}_mentioned"
                elif prep is not None and prep.folded and orig[os_:oe].lower() != lo[ls:le]:
                    sev = _bump(sev)  # matched only after de-obfuscation
                out.add(
                    name, rule.category, sev, paths[i], orig[os_:oe], os_, _context(orig, os_, oe)
                )
        if self._shadowing:
            self._peer_shadowing(tool, peers, out)
        # 3. character level (only strings that are not plain ASCII)
        if preps is not None and (self._invisible or self._ansi):
            for i, p in enumerate(preps):
                if p.index is not None:
                    self._char_checks(paths[i], p.original, out)
        # 4. encoded payloads
        if self._encoded and (
            "%" in joined_raw or "\\" in joined_raw or _b64_run(raw_bytes) or _spaced_hex(raw_bytes)
        ):
            for i, t in enumerate(raws):
                if not syntax[i] and len(t) >= 12 and _may_hold_payload(t):
                    self._encoded_checks(paths[i], t, out, 0)
        # 5. embedded secrets, one pass over all strings
        if self._secrets is not None:
            found = self._secrets.find(joined_raw)
            if found:
                raw_starts = _starts(len(r) for r in raws)
                for m in found:
                    if _PLACEHOLDER.search(m.text) or len(set(m.text)) < 8:
                        continue
                    if _documentation_secret(m.type, m.text, joined_raw, m.start):
                        continue
                    i = bisect.bisect_right(raw_starts, m.start) - 1
                    text = raws[i]
                    st, en = m.start - raw_starts[i], m.end - raw_starts[i]
                    out.add(
                        f"embedded_{m.type}",
                        "embedded_secrets",
                        "high",
                        paths[i],
                        m.text,
                        st,
                        _context(text, st, en),
                    )
        # 6. custom patterns
        for name, category, severity, rx in self._custom:
            for i, text in enumerate(raws):
                path = paths[i]
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        out.add(
                            name,
                            category,
                            severity,
                            path,
                            m.group(0),
                            m.start(),
                            _context(text, m.start(), m.end()),
                        )
                prep = None if preps is None else preps[i]
                if prep is not None and prep.folded and rx.flags & re.IGNORECASE:
                    for m in rx.finditer(prep.lower):
                        if m.end() > m.start():
                            os_, oe = prep.orig_span(m.start(), m.end())
                            out.add(
                                name,
                                category,
                                severity,
                                path,
                                text[os_:oe],
                                os_,
                                _context(text, os_, oe),
                            )
        return out.sorted()

    def alerts(self, results: Iterable[DetectionResult]) -> bool:
        return reaches(max_severity(results), self.threshold)

    # ------------------------------------------------------------ internals

    def _rescan(self, hidden: str) -> list[tuple[Rule, str]]:
        prep = prepare(hidden)
        lo = prep.lower
        return [
            (rule, lo[s:e])
            for rule, s, e in self._index.scan(lo, self._index.hits(lo))
            if not (rule.mention_aware and _is_mention(lo, s, e, rule.mention_cue_only))
        ]

    def _char_checks(self, path: str, text: str, out: _Collector) -> None:
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
                path,
                hit.text,
                hit.start,
                _context(text, hit.start, hit.end),
            )
            for rule, mt in inner:
                out.add(
                    hit.name,
                    hit.category,
                    sev,
                    path,
                    f"{rule.name}: {mt}",
                    hit.start,
                    hit.text[:200],
                )

    def _encoded_checks(self, path: str, text: str, out: _Collector, depth: int) -> None:
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
                path,
                shown,
                start,
                _context(text, start, end),
            )
            for rule, mt in inner:
                out.add(
                    f"{kind}_payload",
                    "encoded_payload",
                    sev,
                    path,
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
                            path,
                            decoded2[:300],
                            start,
                            shown[:200],
                        )

    def _peer_shadowing(
        self, tool: dict[str, Any], peers: Iterable[dict[str, Any]], out: _Collector
    ) -> None:
        """Orders about other servers' tools, and impersonation of their names."""
        if not peers:
            return
        own_server = tool.get("server")
        seen: set[str] = set()
        ready = False
        for p in peers:
            if not isinstance(p, dict):
                continue
            if not ready:  # normalise own name and description once, only if there are peers
                ready = True
                own = tool.get("name")
                own = own if isinstance(own, str) else ""
                own_l = own.lower()
                own_folded = prepare(own).lower if own else ""
                desc = tool.get("description")
                desc_text = desc if isinstance(desc, str) else ""
                desc_lower = prepare(desc_text).lower if desc_text else ""
                desc_plain = desc_text.isascii() and len(desc_lower) == len(desc_text)
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
            named = False  # a generic name ("fetch") counts once it was named as a tool
            peer_acts: bool | None = None
            worst: tuple[str, str, int, int] | None = None
            for m in re.finditer(r"(?<![\w-])" + re.escape(pl) + r"(?![\w-])", desc_lower):
                s, e = m.start(), m.end()
                a = max((x.end() for x in _SENT_END.finditer(desc_lower, 0, s)), default=0)
                z_m = _SENT_END.search(desc_lower, e)
                z = z_m.start() if z_m else len(desc_lower)
                sentence = desc_lower[a:z]
                if generic and not named:
                    near = desc_lower[max(0, s - 12) : e + 12]
                    if not re.search(r"[`'\"]|\btool\b|\bfunction\b", near):
                        continue
                    named = True
                if _ORDER_WORDS.search(sentence):
                    sev = "critical" if _EXTERNAL_HINT.search(sentence) else "high"
                    worst = (sev, "peer_tool_order", s, e)
                    break
                if peer_acts is None:
                    pdesc = p.get("description")
                    peer_acts = isinstance(pdesc, str) and bool(_PEER_ACTS.search(pdesc.lower()))
                if peer_acts and _INVOKE_WORDS.search(sentence):
                    worst = ("high", "peer_tool_invocation", s, e)
                    break
                if worst is None:
                    worst = ("low", "peer_tool_reference", s, e)
            if worst is not None:
                sev, name, s, e = worst
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


_SIM_WORDS = re.compile(r"[a-z0-9]+")


def _similarity(a: str, b: str) -> float:
    wa, wb = set(_SIM_WORDS.findall(a)), set(_SIM_WORDS.findall(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


_ABBREV = ("e.g", "i.e", "etc", "vs", "eg", "ie", "cf")


def _is_mention(lower: str, s: int, e: int, cue_only: bool = False) -> bool:
    """Is lower[s:e] quoted, exemplified or analysed rather than said? (cue_only: a bare
    quote is not enough, a word must say so)"""
    a = max(0, s - 80)
    for sep in ("\x00", "\n", ". ", "! ", "? "):
        k = lower.rfind(sep, a, s)
        while k >= 0 and sep == ". " and lower.endswith(_ABBREV, a, k):
            k = lower.rfind(sep, a, k)  # "e.g. ", "i.e. " do not end the sentence
        if k >= 0:
            a = max(a, k + len(sep))
    k = s
    while k > a and (lower[k - 1].isalnum() or lower[k - 1] in "./\\~_-"):
        k -= 1  # a match inside a path ("../../etc/shadow") is judged from the path's start
    before = lower[a:k]
    if MENTION_LABEL.match(before):
        return True
    m = MENTION_BEFORE.search(before)
    if m is None:
        return False
    if m.group(0).strip()[:1] in "\"'`\u201c\u2018":
        if cue_only:
            return False
        # an opening quote counts only if it closes soon after the phrase
        tail = lower[e : e + 60]
        return any(q in tail for q in ('"', "'", "`", "\u201d", "\u2019"))
    return True


# a secret-shaped value introduced as an example in the same sentence is documentation
_EXAMPLE_CUE = re.compile(
    r"\b(?:examples?|sample|e\.g\.?|for instance|such as|demo|dummy|placeholder|fake|"
    r"illustrat\w*|looks like|format)\b[^.!?\n\x00]*$",
    re.I,
)
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]{40}")
# claims of the token every JWT tutorial uses (jwt.io): a sample, not a credential
_JWT_SAMPLE_CLAIMS = ('"john doe"', '"1234567890"')


def _documentation_secret(kind: str, text: str, joined: str, start: int) -> bool:
    """Is this secret-shaped match documentation rather than a leaked credential?"""
    if kind == "private_key":
        # a PEM header alone (scanners and docs name the format) holds no key material
        return _PEM_BODY.search(text.replace("\n", "").replace("\r", "")) is None
    if _EXAMPLE_CUE.search(joined, max(0, start - 80), start):
        return True
    if kind == "jwt":
        parts = text.split(".")
        if len(parts) >= 2:
            try:
                claims = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
            except (binascii.Error, ValueError):
                return False
            low = claims.decode("utf-8", "replace").lower().replace(" :", ":").replace(": ", ":")
            return all(c in low for c in _JWT_SAMPLE_CLAIMS)
    return False


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
    if _spaced_hex(text.encode("utf-8", "surrogatepass")):
        for m in _SPACED_HEX_RE.finditer(text):
            digits = re.sub(r"0x|[^0-9A-Fa-f]", "", m.group(0))
            try:
                r = _readable(binascii.unhexlify(digits))
            except (binascii.Error, ValueError):
                continue
            if r:
                yield "hex", m.start(), m.end(), r
    # only long tokens can hold a payload: cheap split first, regexes on those
    for tok_m in (
        _TOKEN_RE.finditer(text) if _b64_run(text.encode("utf-8", "surrogatepass")) else ()
    ):
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
