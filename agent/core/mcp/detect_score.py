"""A learned sentence scorer on top of the structural analysis (docs/mcp.md "The learned scorer").

Phrase rules stop at the phrases a development set happened to hold. What
poisoned definitions share is structure: a sentence addressed to the model
whose object lies outside the tool's stated job. The scorer reads every
sentence of a definition (description, parameter texts, schema values) and
gives it a probability of being such a payload, from sparse binary features:

* its words and word pairs (so "bcc … whatever the user asks" and "the
  correct value is" weigh by what 1,749 real tools and the attack sets say,
  not by a hand list);
* where it sits: the field kind (description, parameter description, default,
  enum …), the first description sentence (the tool's own job) or later;
* objects, found without phrase lists: URLs, hosts, IPs, e-mail addresses,
  home and system paths, backticked commands, identifiers that look like tools
  and are neither this tool, its parameters nor its siblings, this tool's
  parameters, a peer's name;
* purpose mismatch: how many of its content words are outside the tool's
  name and first sentence;
* the rule checks' findings on the same sentence (an order with an object of
  low severity becomes evidence, not a verdict).

The weights are a logistic regression trained by ``bench/train_detector.py``
(deterministic) and shipped as ``detector_weights.json``; inference is a dict
lookup per feature and one sum per sentence.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.agent.core.mcp.detect_lex import (
    GUARD_RE,
    PROTECTIVE_RE,
    SELF_SUBJECT,
    consent_bypass,
)
from agentsh.agent.core.mcp.detect_parse import Field, ParsedTool, split_sentences, stem
from agentsh.agent.core.mcp.detect_text import KeyMemo, TextMemo

if TYPE_CHECKING:
    from agentsh.agent.core.mcp.checks import Finding

WEIGHTS_PATH = Path(__file__).with_name("detector_weights.json")

_WORD_RE = re.compile(r"[^\W_]+")
_DIGIT_RE = re.compile(r"[0-9]")
_NUMBER_RE = re.compile(r"(?<![A-Za-z0-9])[0-9]+(?![A-Za-z0-9])")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_URL_RE = re.compile(r"\b(?:https?|ftp|wss?)://|\bwww\.")
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b")
_HOST_RE = re.compile(r"(?<![\w@/.-])(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|xyz|app|co|cc|sh|ai|me|"
                      r"info|biz|pro|site|online|cloud|tech|link|live|top|ru|cn|tk|pw|example|"
                      r"us|uk|de|eu|gg|to|ly|tv|click|store|zone|run|page|host|space)\b(?!\.\w)")  # fmt: skip
_IP_RE = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_HOME_RE = re.compile(r"~/|\$home|/home/|/root\b|%userprofile%|%appdata%")
_SYS_RE = re.compile(r"/(?:etc|var|tmp|usr|proc|dev|opt|library)/")
_DOT_RE = re.compile(r"(?<![\w])\.[a-z][\w-]*(?:/|\b)")
_TICK_RE = re.compile(r"`([^`\n]{1,200})`")
_IDENT_RE = re.compile(r"(?<![\w./@$-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/@-])")
_CALLISH_RE = re.compile(r"\b[a-z][a-z0-9_]*\(")
_QUOTE_RE = re.compile(r"[\"“”«»]")
_BLANKS = "\n\n\n\n\n"
_FRAME_RE = re.compile(r"<!--|<[a-z_-]{3,30}>|\[\[|\[//\]|<\|")

STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "for", "in", "on", "with", "from", "by", "as", "at", "is", "are", "be", "this", "that", "it", "its", "if", "when", "then"])  # fmt: skip


@lru_cache(maxsize=65536)
def _stem(w: str) -> str:
    return stem(w)


@dataclass(slots=True)
class Unit:
    """One sentence of a definition, with its features."""

    field: Field
    start: int
    end: int
    feats: list[str]
    first: bool


def _word_feats(text: str) -> list[str]:
    toks = [w for w in _WORD_RE.findall(text)]
    out: list[str] = []
    prev = "^"
    for w in toks:
        if _CJK_RE.search(w):
            # no spaces in CJK: character pairs stand in for words
            for i in range(len(w) - 1):
                out.append("c:" + w[i : i + 2])
            prev = "^"
            continue
        if w.isdigit():
            w = "0"
        out.append("w:" + w)
        out.append("b:" + prev + " " + w)
        prev = w
    return out


def _text_objects(t: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What ``_object_feats`` reads from the text alone: the features before the identifiers,
    the identifiers, the words, the features after them (memoised per sentence text)."""
    out: list[str] = []
    if _URL_RE.search(t):
        out.append("o:url")
    if "@" in t and _EMAIL_RE.search(t):
        out.append("o:email")
    elif "." in t and _HOST_RE.search(t):
        out.append("o:host")
    if _IP_RE.search(t):
        out.append("o:ip")
    if _HOME_RE.search(t):
        out.append("o:home_path")
    if "/" in t and _SYS_RE.search(t):
        out.append("o:sys_path")
    if _DOT_RE.search(t):
        out.append("o:dotfile")
    if "`" in t:
        for m in _TICK_RE.finditer(t):
            s = m.group(1).strip()
            if " " in s or "|" in s or "/" in s:
                out.append("o:tick_cmd")
            else:
                out.append("o:tick_word")
    if _CALLISH_RE.search(t):
        out.append("o:call_syntax")
    after: list[str] = []
    if _QUOTE_RE.search(t):
        after.append("o:quote")
    if _FRAME_RE.search(t):
        after.append("o:frame")
    idents = tuple(m.group(0) for m in _IDENT_RE.finditer(t))
    return tuple(out), idents, tuple(_WORD_RE.findall(t)), tuple(after)


_TEXT_OBJECTS = TextMemo(_text_objects)


_WORD_FEATS: TextMemo[tuple[str, ...]] = TextMemo(lambda t: tuple(_word_feats(t)))


def _object_feats(t: str, tool: ParsedTool, peer_hits: Iterable[str]) -> list[str]:
    before, idents, words, after = _TEXT_OBJECTS(t)
    out = list(before)
    own = tool.name.lower()
    foreign = own_param = sibling = False
    for w in idents:
        if w == own:
            out.append("o:self")
        elif w in tool.params:
            own_param = True
        elif w in tool.siblings:
            sibling = True
        elif w in tool.peers:
            out.append("o:peer")
        else:
            foreign = True
    if not own_param and tool.params:
        for w in words:
            if w in tool.params and len(w) > 2:
                own_param = True
                break
    if foreign:
        out.append("o:foreign_ident")
    if own_param:
        out.append("o:own_param")
    if sibling:
        out.append("o:sibling")
    for _ in peer_hits:
        out.append("o:peer_name")
        break
    out.extend(after)
    return out


def _content_stems(t: str) -> tuple[str, ...]:
    """The stems of a sentence's content words, one per word (memoised per text)."""
    return tuple(_stem(w) for w in _WORD_RE.findall(t) if len(w) > 2 and w not in STOP and w.isascii())


_CONTENT_STEMS = TextMemo(_content_stems)


def _purpose_feats(t: str, tool: ParsedTool) -> list[str]:
    words = _CONTENT_STEMS(t)
    if len(words) < 4:
        return ["p:short"]
    purpose = tool.purpose
    inside = sum(1 for w in words if w in purpose)
    frac = inside / len(words)
    if frac == 0:
        return ["p:none"]
    if frac < 0.15:
        return ["p:low"]
    return ["p:some"]


_EPS = 1e-9  # pruning margin: a sum in another order may differ in its last bits


def units(tool: ParsedTool, findings: Iterable[Finding] = (), max_chars: int = 256 * 1024,
          prune: Model | None = None) -> Iterator[Unit]:  # fmt: skip
    """Every sentence of the definition's prose with its features. With ``prune``, only
    the sentences whose score can reach that model's ``threshold_medium`` (the only ones
    ``scored_findings`` can report), decided before the features are built:

    1. its words, position and kind counted exactly at C speed (``Model.word_logit``),
       its objects, purpose and framing at the most they could add given the characters
       the field, then the sentence, holds (``Model.rest_bound``): most sentences of real
       manuals end here;
    2. else its objects and purpose found and the logit summed exactly.
    """
    by_field: dict[str, list[Finding]] = {}
    for fd in findings:
        by_field.setdefault(fd.field, []).append(fd)
    budget = max_chars
    peers = [p for p in tool.peers if len(p) >= 3]
    first_desc = True
    floor = prune.floor - _EPS if prune is not None else 0.0
    for f in tool.prose:
        text = f.lower
        if budget <= 0:
            return
        if len(text) > budget:
            text = text[:budget]
        budget -= len(text)
        fl = by_field.get(f.path, ())
        is_desc = f.path == "description"
        folded = f.prep is not None and f.prep.folded
        first0 = first_desc  # only the description's first sentence is "first"
        # step 1 of a field that no rule marked, nothing folded and no peer's name occurs in
        # depends on its text alone: the sentences it keeps are memoised per (text, kind,
        # parameter or not, description, first); a repeated parameter text costs one lookup
        key = None
        kept = None
        if prune is not None and not fl and not folded and text is f.lower and \
                not (peers and any(p in text for p in peers)):  # fmt: skip
            key = (text, f.kind, f.param is not None, is_desc, first0)
            hit = prune._kept.get(key)
            if hit is not None:
                kept, any_sentence = hit
                if not kept:
                    first_desc = first_desc and not (is_desc and any_sentence)
                    continue
        # the rule findings' positions in the normalised text, once per field
        marks = [(fd.position if f.prep is None else _lower_pos(f, fd.position), fd) for fd in fl]
        kind = "k:" + f.kind
        bounds = split_sentences(text)
        last = len(bounds) - 1
        first_desc = first_desc and not (is_desc and bounds)
        todo: Iterable[int] = range(len(bounds))
        checked = False  # step 1 already passed every sentence of ``todo``
        if kept is not None:
            todo, checked = kept, True
        if prune is not None:
            field_rest = prune.rest_bound(text, _BLANKS in text, peers)
            pw = prune.weights.get
            w_field = pw(kind, 0.0) + (pw("pos:param", 0.0) if f.param is not None else 0.0)
            w_pos = pw("pos:desc_later" if is_desc else "pos:schema", 0.0)
            if key is not None and kept is None:
                todo = kept = prune.step1_kept(text, bounds, is_desc and first0, is_desc, last,
                                               field_rest, w_field, w_pos, peers)  # fmt: skip
                prune._kept.put(key, (kept, bool(bounds)))
                checked = True
                if not kept:
                    continue
        for i in todo:
            a, z = bounds[i]
            t = text[a:z]
            first = is_desc and first0 and i == 0
            rule = []
            for pos, fd in marks:
                if a <= pos < z:
                    rule.append("r:" + fd.pattern)
                    rule.append("rs:" + fd.severity)
            fast = prune.word_logit(t) if prune is not None else None
            if fast is not None and not rule and not folded and not checked:
                # step 1: the fixed features are distinct strings, summed one by one
                assert prune is not None
                n = len(t)
                known = fast + w_field + (pw("pos:first", 0.0) if first else w_pos) + \
                    pw("len:s" if n < 40 else "len:m" if n < 160 else "len:l", 0.0)  # fmt: skip
                if i == last and is_desc and not first:
                    known += pw("pos:desc_last", 0.0)  # (``fast`` is ASCII-only: no s:nonascii)
                if known + field_rest < floor or known + prune.rest_bound(
                        t, _BLANKS in text[max(0, a - 40) : a + 1], peers) < floor:  # fmt: skip
                    continue
            n = len(t)
            fixed = [
                kind,
                "pos:first" if first else ("pos:desc_later" if is_desc else "pos:schema"),
            ]
            if i == last and is_desc and not first:
                fixed.append("pos:desc_last")
            if f.param is not None:
                fixed.append("pos:param")
            fixed.append("len:" + ("s" if n < 40 else "m" if n < 160 else "l"))
            if not t.isascii():
                fixed.append("s:nonascii")
            hits = [p for p in peers if p in t]
            rest = _object_feats(t, tool, hits)
            rest.extend(_purpose_feats(t, tool))
            if folded:
                rest.append("s:folded")
            if _BLANKS in text[max(0, a - 40) : a + 1]:
                rest.append("s:below_blanks")
            words: list[str] | None = None
            if prune is not None:
                if fast is None:
                    words = list(_WORD_FEATS(t))  # a copy: the unit's features are extended
                    z_ = prune.logit([*words, *fixed, *rule, *rest])
                else:
                    z_ = fast + prune.fixed_logit([*fixed, *rule, *rest])
                if z_ < floor:
                    continue
            feats = words if words is not None else list(_WORD_FEATS(t))
            feats.extend(fixed)
            feats.extend(rule)
            feats.extend(rest)
            yield Unit(f, a, z, feats, first)


def _lower_pos(f: Field, orig: int) -> int:
    """Map an original-character position back to the normalised text: the first
    normalised character whose original position is at or after ``orig`` (the index is
    non-decreasing, so a bisection)."""
    prep = f.prep
    if prep is None:
        return orig
    n = len(f.lower)
    idx = prep.index
    if idx is None:
        return max(0, min(orig, n))
    if not idx:
        return n if orig > 0 else 0
    m = min(n, len(idx))
    # past the index's end orig_span repeats its last entry, which is below ``orig`` here
    return bisect_left(idx, orig, 0, m) if m and idx[m - 1] >= orig else n


@dataclass(slots=True)
class Model:
    bias: float
    weights: dict[str, float]
    threshold_high: float
    threshold_medium: float
    meta: dict[str, object]
    rest_max: float = 0.0  # the most the object/purpose/framing features can add
    floor: float = 0.0  # threshold_medium as a logit

    _uni: dict[str, float] = dc_field(default_factory=dict, repr=False)  # "w:x" as "x"
    _bi: dict[str, float] = dc_field(default_factory=dict, repr=False)  # "b:x y" as "x y"
    _gain: dict[str, float] = dc_field(default_factory=dict, repr=False)  # o:/p:/s: weights above 0
    _purpose_max: float = 0.0
    _words: TextMemo[float | None] = dc_field(init=False, repr=False)
    _kept: KeyMemo[tuple[tuple[int, ...], bool]] = dc_field(init=False, repr=False)

    def __post_init__(self) -> None:
        w = self.weights
        pos = lambda prefix: [v for k, v in w.items() if k.startswith(prefix) and v > 0]  # noqa: E731
        self.rest_max = sum(pos("o:")) + max(pos("p:"), default=0.0) + \
            sum(v for k, v in w.items() if k in ("s:below_blanks",) and v > 0)  # fmt: skip
        t = min(max(self.threshold_medium, 1e-6), 1 - 1e-6)
        self.floor = math.log(t / (1 - t))
        self._uni = {k[2:]: v for k, v in w.items() if k.startswith("w:")}
        self._bi = {k[2:]: v for k, v in w.items() if k.startswith("b:")}
        self._gain = {k: v for k, v in w.items() if k[:2] in ("o:", "p:", "s:") and v > 0}
        # a sentence has one purpose feature
        self._purpose_max = max(
            (v for k, v in self._gain.items() if k.startswith("p:")), default=0.0
        )
        self._words = TextMemo(self._word_logit)
        self._kept = KeyMemo()

    def step1_kept(self, text: str, bounds: tuple[tuple[int, int], ...], first0: bool, is_desc: bool,
                   last: int, field_rest: float, w_field: float, w_pos: float,
                   peers: list[str]) -> tuple[int, ...]:  # fmt: skip
        """The sentences of a field without rule marks or folding that step 1 of ``units``
        does not prune (the same sums in the same order, so the same decisions)."""
        pw = self.weights.get
        floor = self.floor - _EPS
        kept: list[int] = []
        for i, (a, z) in enumerate(bounds):
            t = text[a:z]
            fast = self.word_logit(t)
            if fast is None:
                kept.append(i)
                continue
            first = first0 and i == 0
            n = len(t)
            known = fast + w_field + (pw("pos:first", 0.0) if first else w_pos) + \
                pw("len:s" if n < 40 else "len:m" if n < 160 else "len:l", 0.0)  # fmt: skip
            if i == last and is_desc and not first:
                known += pw("pos:desc_last", 0.0)
            if known + field_rest < floor or known + self.rest_bound(
                    t, _BLANKS in text[max(0, a - 40) : a + 1], peers) < floor:  # fmt: skip
                continue
            kept.append(i)
        return tuple(kept)

    def word_logit(self, t: str) -> float | None:
        """``bias`` plus the weights of the word and word-pair features ``_word_feats``
        gives an ASCII sentence, each counted once, in C-level loops; None for other text
        (CJK character pairs: the caller builds the features). Memoised per text."""
        return self._words(t)

    def _word_logit(self, t: str) -> float | None:
        if not t.isascii():
            return None
        if _DIGIT_RE.search(t) is not None:
            t = _NUMBER_RE.sub("0", t)  # a number is the word "0" (``str.isdigit`` on ASCII)
        toks = _WORD_RE.findall(t)
        if not toks:
            return self.bias
        pairs = map(" ".join, zip(["^", *toks], toks, strict=False))  # one pair per word
        return self.bias + sum(map(self._uni.get, set(toks), repeat(0.0))) + \
            sum(map(self._bi.get, set(pairs), repeat(0.0)))  # fmt: skip

    def fixed_logit(self, feats: Iterable[str]) -> float:
        w = self.weights
        return sum(w.get(x, 0.0) for x in set(feats))

    def rest_bound(self, t: str, blanks: bool, peers: Iterable[str]) -> float:
        """The most the object, purpose and framing features can add to a sentence within
        ``t`` (``blanks``: it may sit below a run of blank lines): each positive weight
        counted only when the characters its detector needs occur in ``t``
        (``_object_feats``: a URL needs "://" or "www.", an identifier "_", a path "/" …).
        Never below what they really add."""
        g = self._gain
        r = self._purpose_max
        if "://" in t or "www." in t:
            r += g.get("o:url", 0.0)
        if "@" in t:
            r += g.get("o:email", 0.0)
        if "." in t:
            r += g.get("o:host", 0.0) + g.get("o:ip", 0.0) + g.get("o:dotfile", 0.0)
        if "~/" in t or "$home" in t or "/" in t or "%" in t:
            r += g.get("o:home_path", 0.0)
        if "/" in t:
            r += g.get("o:sys_path", 0.0)
        if "`" in t:
            r += g.get("o:tick_cmd", 0.0) + g.get("o:tick_word", 0.0)
        if "(" in t:
            r += g.get("o:call_syntax", 0.0)
        if "_" in t:
            r += g.get("o:self", 0.0) + g.get("o:peer", 0.0) + g.get("o:foreign_ident", 0.0) + \
                g.get("o:sibling", 0.0)  # fmt: skip
        if any(p in t for p in peers):
            r += g.get("o:peer_name", 0.0)
        # a parameter named as a plain word, a quotation mark: anywhere
        r += g.get("o:own_param", 0.0) + g.get("o:quote", 0.0)
        if "<" in t or "[" in t:
            r += g.get("o:frame", 0.0)
        if blanks:
            r += g.get("s:below_blanks", 0.0)
        return r

    def logit(self, feats: Iterable[str]) -> float:
        w = self.weights
        return self.bias + sum(w.get(x, 0.0) for x in set(feats))

    def score(self, feats: Iterable[str]) -> float:
        z = self.logit(feats)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def top_terms(self, feats: Iterable[str], n: int = 3) -> list[tuple[str, float]]:
        w = self.weights
        items = [(x, w[x]) for x in set(feats) if w.get(x, 0.0) > 0]
        items.sort(key=lambda kv: (-kv[1], kv[0]))  # ties by name: the same why in every process
        return items[:n]

    def to_json(self) -> dict[str, object]:
        return {
            "bias": round(self.bias, 6),
            "threshold_high": self.threshold_high,
            "threshold_medium": self.threshold_medium,
            "meta": self.meta,
            "weights": {k: round(v, 6) for k, v in sorted(self.weights.items())},
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Model:
        """``doc`` is the parsed JSON of a model file (:meth:`to_json`)."""
        w = doc["weights"]
        assert isinstance(w, dict)
        return cls(
            float(doc["bias"]),
            {str(k): float(v) for k, v in w.items()},
            float(doc["threshold_high"]),
            float(doc["threshold_medium"]),
            dict(doc.get("meta") or {}),
        )


_MODEL: Model | None = None


def load_model(path: Path | None = None) -> Model | None:
    """The shipped model (None when the weights file is missing: the rules still run)."""
    global _MODEL
    if path is None and _MODEL is not None:
        return _MODEL
    p = path or WEIGHTS_PATH
    try:
        m = Model.from_json(json.loads(p.read_text()))
    except (OSError, ValueError, KeyError, AssertionError):
        return None
    if path is None:
        _MODEL = m
    return m


def pretty(feat: str) -> str:
    """A feature as an operator reads it: 'whatever the', 'object: e-mail address'."""
    kind, _, v = feat.partition(":")
    if kind in ("w", "c"):
        return f"'{v}'"
    if kind == "b":
        return "'" + v.replace("^ ", "") + "'"
    if kind == "o":
        return "object: " + v.replace("_", " ")
    if kind == "r":
        return "rule: " + v
    if kind == "p":
        return "purpose overlap: " + v
    return feat


def scored_findings(model: Model, tool: ParsedTool, findings: list[Finding]) -> list[Finding]:
    """A finding for the best-scoring sentence at or above ``threshold_medium`` (one per tool:
    the scorer says "this definition carries a payload, here", the rules say what it does)."""
    best: tuple[float, Unit] | None = None
    for u in units(tool, findings, prune=model):
        p = model.score(u.feats)
        if best is None or p > best[0]:
            best = (p, u)
    if best is None or best[0] < model.threshold_medium:
        return []
    from agentsh.agent.core.mcp.checks import RANK, finding_at  # (only when there is a finding)

    p, u = best
    sev = "high" if p >= model.threshold_high else "medium"
    if sev == "high" and u.field.kind in ("description", "param_desc", "param_title") and \
            len(u.field.lower[u.start : u.end].strip()) < _MIN_CHARS:  # fmt: skip
        sev = "medium"  # "Contact ID or email": too little text to carry an order and its object
    own_only = _own_objects_only(tool, u)
    if sev == "high" and own_only:
        sev = "medium"  # the order's only object is this server's own workflow
    protective = _protective(u) or _attribution(tool, u) or _job_host_only(tool, u) or \
        _own_login_file_only(tool, u) or _param_usage(u) or _own_output_shown(u) or _secrets_kept(u) or \
        _shown_then_confirmed(u)
    if sev == "high" and protective:
        sev = "medium"  # the order keeps the user in control ("get an explicit 'yes' first")
    why = why_line(model, tool, u, p)
    if sev == "medium" and not own_only and not protective:
        # two independent readers, each unsure: the rules' own medium finding on this
        # definition corroborates the scorer's (and nothing else reached an alert)
        rule = next((f for f in findings if f.severity == "medium" and f.pattern not in _NO_OBJECT
                     and (f.pattern not in _RELATABLE or "unrelated to" in f.why)), None)
        if rule is not None and not any(RANK[f.severity] >= RANK["high"] for f in findings):
            sev = "high"
            why += f"; corroborated by {rule.pattern} ({rule.why[:80]})"
    return [finding_at(u.field, u.start, u.end, "model_directives", sev, "learned_payload", why)]


_OUTSIDE = frozenset(
    (
        "o:foreign_ident",
        "o:url",
        "o:email",
        "o:host",
        "o:ip",
        "o:home_path",
        "o:sys_path",
        "o:dotfile",
        "o:tick_cmd",
        "o:call_syntax",
        "o:frame",
    )
)


_MIN_CHARS = 32
# findings whose object is judged against the tool's job: an object that is the job (a .env
# lister reading .env, a cron manager writing the crontab) corroborates nothing
_RELATABLE = frozenset(("order_read_credentials", "order_write_persistence", "order_network_request",
                        "order_shell_command", "claims_reading_credentials", "order_sensitive_path"))
# findings that say only that the model is addressed, not what it is told to act on
_NO_OBJECT = frozenset(("framed_directive", "learned_payload"))


def _protective(u: Unit) -> bool:
    """Is the sentence's order to obtain the user's confirmation before acting, with no object
    outside the tool? Honest tools that move money, unlock doors or delete data say so; the
    scorer, reading words, cannot tell "must get the user's explicit 'yes'" from an order.
    An order to skip that confirmation ("no need to ask") is never protective."""
    if set(u.feats) & _OUTSIDE:
        return False
    t = u.field.lower[u.start : u.end]
    return PROTECTIVE_RE.search(t) is not None and not consent_bypass(t)


def _shown_then_confirmed(u: Unit) -> bool:
    """Does the next sentence have the command shown to the user and run only once they agree
    ("For bun this is `curl … | bash`. Show the command to the user and run it only once they
    approve.")? An installer that names its vendor's command leaves the decision to the user."""
    low = u.field.lower
    nxt = low[u.end : u.end + 240].split(". ", 1)[0]
    return _SHOW_COMMAND.match(nxt) is not None and GUARD_RE.search(nxt) is not None and not consent_bypass(nxt)


_SHOW_COMMAND = re.compile(r"\s*(?:then\s+)?(?:always\s+)?(?:show|display|present|print)\s+(?:the\s+|this\s+)?"
                           r"(?:exact\s+|full\s+)?(?:command|script|it)\b")


# "API tokens and signing keys must not be disclosed to anyone": a prohibition that protects secrets
_MUST_NOT_BE = re.compile(r"\b(?:must|should|shall|may|will|can|are\s+to|is\s+to)\s*(?:not|never|n't)\s+be\s+"
                          r"(?:disclosed|shared|logged|printed|shown|revealed|exposed|sent|leaked|displayed|echoed|"
                          r"copied|stored|written|committed)\b")
_TO_THE_USER = re.compile(r"[^.;]{0,40}?\b(?:to|with|from)\s+(?:the\s+)?(?:\w+\s+)?(?:user|customer|requester|reviewer|"
                          r"holder|owner|client|patient|member|caller|employee)s?\b")
_SECRET_SUBJECT = re.compile(r"\b(?:tokens?|keys?|secrets?|passwords?|passphrases?|credentials?|pins?|otps?|cvvs?)\b")


def _secrets_kept(u: Unit) -> bool:
    """Is the sentence a prohibition that protects secrets ("API tokens and
    signing keys must not be disclosed to anyone"), naming nothing outside the tool? Not when
    what must not be disclosed is the text's own rule ("this note must not be disclosed") or
    when it is kept from the user ("… must not be shown to the user")."""
    if set(u.feats) & _OUTSIDE:
        return False
    t = u.field.lower[u.start : u.end]
    m = _MUST_NOT_BE.search(t)
    if m is None or _TO_THE_USER.match(t, m.end()) is not None:
        return False
    a = max(0, m.start() - 60)
    return _SECRET_SUBJECT.search(t, a, m.start()) is not None and SELF_SUBJECT.search(t, a, m.start()) is None


# "paste the returned Markdown into your answer unchanged": the tool's own output shown as it is
_OWN_OUTPUT_SHOWN = re.compile(r"\b(?:paste|include|insert|show|display|render|embed|copy|put)\s+(?:the\s+|its\s+)?"
                               r"(?:returned|resulting|generated|rendered|tool'?s)\s+(?:[\w-]+\s+){0,2}?(?:in|into)\s+"
                               r"(?:your|the)\s+(?:answer|reply|response|message)\b"
                               # "present the numbers as a Markdown table": the output's layout
                               r"|\b(?:present|show|display|render|format)\s+(?:the|its|these|all)\s+(?:numbers|results|"
                               r"figures|rows|values|totals|data|output|records|entries)\s+as\s+(?:an?\s+)?(?:markdown\s+)?"
                               r"(?:table|list|chart|bulleted\s+list|numbered\s+list)\b")
# a field of the tool's own output: "the report's `as_of` timestamp", "its `next_cursor`"
_OUTPUT_FIELD = re.compile(r"\b(?:(?:the\s+)?(?:report|result|response|output|record|row|entry|item|page)'s|its)\s+`?"
                           r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?")


def _own_output_shown(u: Unit) -> bool:
    """Is the order only to show the tool's own output to the user as it came ("paste the
    returned Markdown into your answer unchanged so the chart shows up"), naming nothing outside
    the tool and none of the user's data? Formatting advice for the tool's result, not a payload."""
    t = u.field.lower[u.start : u.end]
    outside = set(u.feats) & _OUTSIDE
    if outside == {"o:foreign_ident"}:
        from agentsh.agent.core.mcp.detect_objects import IDENT_RE

        fields = {m.group(1) for m in _OUTPUT_FIELD.finditer(t)}
        if fields and set(IDENT_RE.findall(t)) <= fields:
            outside = set()  # (only fields of the output it shows)
    if outside:
        return False
    return _OWN_OUTPUT_SHOWN.search(t) is not None and _DATA_HINT.search(t) is None


_QUOTED = re.compile(r"[\"“«]([^\"”»]{4,160})[\"”»]")
_CREDIT = re.compile(r"©|\(c\)|\blicen[cs]|\bcontributors\b|\battribution\b|\bpowered\s+by\b|"
                     r"\bcourtesy\s+of\b|\bdata\s+(?:by|from)\b|\bsource:")


def _attribution(tool: ParsedTool, u: Unit) -> bool:
    """Is the sentence's message for the user a credit line for the tool's own data source
    ("include the attribution "Data © OpenStreetMap contributors"" of a tool that searches
    OpenStreetMap)? Data licences require it; it names nothing outside the tool's job."""
    if set(u.feats) & _OUTSIDE:
        return False
    t = u.field.lower[u.start : u.end]
    for m in _QUOTED.finditer(t):
        q = m.group(1)
        if _CREDIT.search(q) and {stem(w) for w in _WORD_RE.findall(q)} & (tool.purpose - STOP):
            return True
    return False


_DATA_HINT = re.compile(r"\b(?:conversation|chat|history|messages?|files?|contents?|clipboard|secrets?|tokens?|"
                        r"keys?|passwords?|credentials?|cookies?|env|environment|personal|private|user'?s)\b")


def _job_host_only(tool: ParsedTool, u: Unit) -> bool:
    """Are the sentence's only outside objects hosts that the tool's job names ("Geocodes with
    Nominatim. Queries are sent to nominatim.openstreetmap.org"), with nothing of the user's
    said to go there? The rules judge such a sentence by its data flow; the scorer, reading
    words, does not raise it alone."""
    outside = set(u.feats) & _OUTSIDE
    if not outside or not outside <= {"o:host", "o:url"}:
        return False
    t = u.field.lower[u.start : u.end]
    if _DATA_HINT.search(t):
        return False
    purpose = tool.purpose - tool.server_stems - STOP
    hosts = [m.group(0) for m in _HOST_RE.finditer(t)] + [m.group(0) for m in re.finditer(r"https?://[^\s/]+", t)]
    return bool(hosts) and all({stem(x) for x in re.split(r"[./:-]", h) if len(x) > 2} & purpose for h in hosts)


_MOVES = re.compile(r"\b(?:read|cat|open|send|paste|upload|copy|post|forward|contents?|include|attach|print|show)\b")
_PATH_IN_TEXT = re.compile(r"(?:~|\$home|%\w+%)?[\w./-]*/\.?[\w.-]+|(?<![\w/])\.[a-z][\w.-]+")


def _own_login_file_only(tool: ParsedTool, u: Unit) -> bool:
    """Are the sentence's only outside objects files of the tool's own service, named in one of
    its parameters' texts with nothing read out or sent ("Password. Better: leave empty and use
    ~/.pgpass" of a PostgreSQL tool)? The rules lower such a file as the tool's own; the scorer,
    reading words, does not raise it alone."""
    outside = set(u.feats) & _OUTSIDE
    if u.field.param is None or not outside or not outside <= {"o:home_path", "o:dotfile", "o:sys_path"}:
        return False
    t = u.field.lower[u.start : u.end]
    if _MOVES.search(t) is not None:
        return False
    from agentsh.agent.core.mcp.detect_objects import path_topic

    purpose = (tool.purpose | tool.name_stems) - tool.server_stems - STOP
    paths = [m.group(0) for m in _PATH_IN_TEXT.finditer(t) if "/" in m.group(0) or m.group(0).startswith(".")]
    return bool(paths) and all(path_topic(p) & purpose for p in paths)


_OMIT_PARAM = re.compile(r"\b(?:omit|leave\s+(?:it\s+|this\s+)?(?:empty|blank|out|unset))\s+(?:it\s+|this\s+)?"
                         r"(?:for|to|if|when)\b")


def _param_usage(u: Unit) -> bool:
    """Is the sentence a parameter's own usage note ("Amount in cents; omit for full refund."),
    with nothing outside the tool? "Omit" there is about the parameter, not about what the user is
    told."""
    feats = set(u.feats)
    if feats & _OUTSIDE:
        return False
    t = u.field.lower[u.start : u.end]
    if u.field.param is not None and _OMIT_PARAM.search(t) is not None:
        return True
    # "Always pass an idempotency_key so a retried call cannot refund twice": the only object is
    # one of this tool's parameters, supplied for a stated reason, with nothing of the user's in it
    objects = {f for f in feats if f.startswith("o:")}
    return objects == {"o:own_param"} and _PASS_OWN_PARAM.search(t) is not None and _DATA_HINT.search(t) is None


# a parameter of this tool supplied for a reason: "always pass an idempotency_key so …"
_PASS_OWN_PARAM = re.compile(r"\b(?:pass|include|provide|supply|send)\s+(?:an?\s+|the\s+|a\s+unique\s+)?`?[a-z][a-z0-9_]*`?"
                             r"\s+(?:so|because|since)\b(?![^.;]{0,80}\b(?:regardless|no\s+matter|even\s+if|ignore|whatever)\b)")


def _own_objects_only(tool: ParsedTool, u: Unit) -> bool:
    """Does the sentence name only tools of this server, or other servers' tools that only
    read ("call `list_tables` first", "call `describe_schema` first")? Such an order is a
    workflow: the scorer alone does not raise it to an alert (the rules still may)."""
    from agentsh.agent.core.mcp.checks.directives import _LOOKUP_NAME, _own_server_scope, _peer_acts
    from agentsh.agent.core.mcp.detect_lex import ARG_ASSIGNED_RE, INVOKE_ALWAYS_RE, REDIRECT_RE
    from agentsh.agent.core.mcp.detect_objects import IDENT_RE

    feats = set(u.feats)
    t = u.field.lower[u.start : u.end]
    outside = feats & _OUTSIDE
    if {f for f in feats if f.startswith(("o:", "r:"))} == {"o:foreign_ident"} and not tool.peers and \
            _DATA_HINT.search(t) is None:  # fmt: skip
        # "请先调用 list_notes 确认" ("call list_notes first to check"): one identifier that only
        # looks something up, the sentence's only object, no rule's finding, and no other
        # server's tools listed: a workflow step
        idents = IDENT_RE.findall(t)
        return len(idents) == 1 and _LOOKUP_NAME.match(idents[0]) is not None
    if outside:
        return False
    named = [p for p in tool.peers if len(p) >= 3 and p in t]
    if any(_peer_acts(tool, p) for p in named):
        return False
    if named and REDIRECT_RE.search(t) is not None:
        return False  # "deprecated in favour of `apply_manifest` on cluster-ops": the work sent to another server
    if named and (_PERSONAL_DATA.search(t) is not None or ARG_ASSIGNED_RE.search(t) is not None):
        # "call `lookup_person` on enrich-io with the contact's email, phone number and postal address",
        # "… `invia_ordine` del server ordini con fornitore="forn-7781"": the user's data, or arguments
        # the text chose, handed to another server's tool is no workflow step
        return False
    if _SELF_CALL.search(t) and not named and _DATA_HINT.search(t) is None:
        return True  # "call this tool with the customer's email address and the amount": its usage
    if (m := INVOKE_ALWAYS_RE.search(t)) is not None and _own_server_scope(t, m.end(), tool):
        return True  # "must be called before every other tool of this server": a session opener
    return "o:sibling" in feats or bool(named)


# the user's personal data or a secret, as a tool's argument (English and the languages the sets hold)
_PERSONAL_DATA = re.compile(r"\b(?:e-?mails?(?:\s+address(?:es)?)?|phone(?:\s+numbers?)?|postal\s+address|home\s+address|"
                            r"account\s+number|card\s+number|pin|cvv|ssn|social\s+security|date\s+of\s+birth|passport|"
                            r"tel[eé]fono|n[uú]mero\s+de\s+(?:cuenta|tarjeta|tel[eé]fono)|tarjeta|direcci[oó]n|"
                            r"telefone|cart[aã]o|endere[cç]o|indirizzo|telefono|carta\s+di\s+credito|"
                            r"t[eé]l[eé]phone|adresse|carte\s+bancaire|telefonnummer|kontonummer)\b")
# an order about calling this very tool (how to use it), not another one
_SELF_CALL = re.compile(r"\b(?:call|use|invoke|run)\s+this\s+(?:tool|function|endpoint|method)\s+"
                        r"(?:with|for|on|to|when|once|after|before)\b")


def why_line(model: Model, tool: ParsedTool, u: Unit, p: float) -> str:
    """'score 0.97: order 'always send' → object: e-mail address (terms 'bcc', 'whatever the user')'."""
    from agentsh.agent.core.mcp.checks.directives import find_cues, tokens_of

    t = u.field.lower[u.start : u.end]
    try:
        c = find_cues(t, tokens_of(t), u.first, not t.isascii())
        directive = c.directive or c.address or c.conceal or c.override or ""
    except Exception:  # the explanation must never cost the verdict
        directive = ""
    objs = [pretty(x) for x in u.feats if x.startswith("o:") and model.weights.get(x, 0.0) > 0]
    terms = [
        pretty(x)
        for x, _ in model.top_terms([x for x in u.feats if x[:2] in ("w:", "b:", "c:")], 3)
    ]
    why = f"learned score {p:.2f}: "
    why += f"order '{directive}'" if directive else "sentence"
    if objs:
        why += " → " + ", ".join(objs[:2])
    if terms:
        why += " (weighed: " + ", ".join(terms[:3]) + ")"
    if u.field.path != "description":
        why += f" in {u.field.path}"
    return why
