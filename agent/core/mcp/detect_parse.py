# ruff: noqa: RUF001  (sentence ends in CJK scripts are full-width on purpose)
"""One MCP tool definition, parsed once for every check (docs/mcp.md "Tool poisoning").

A model reads every string of a definition as instructions: the description,
and in the input schema every property description, title, default, const,
enum value, example, ``$comment``, vendor key and property name. ``parse_tool``
collects them with their field path and *kind* (what role the string plays),
normalises them (detect_text.prepare: invisible characters, homoglyphs,
fullwidth forms folded), and records what the checks compare orders against:

* the tool's **purpose** - the stems of its name and first description sentence
  ("geocode", "address", "latitude"...): an order about ``.bashrc`` or ``sudo``
  in a geocoder is off-purpose;
* its **parameters** - an order that fixes one of them is parameter poisoning,
  a mention of one is ordinary;
* the **peers** (other servers' tools) and **siblings** (this server's tools):
  an order to call a peer is cross-server redirection, a sibling is a workflow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import Any

from agentsh.agent.core.mcp.detect_text import Prepared, TextMemo, prepare

_TOKEN_TABLE = bytes(b if (48 <= b <= 57 or 97 <= b <= 122) else 32 for b in range(256))
MAX_STRINGS = 4000
MAX_DEPTH = 32

# schema keys whose string values are machine syntax, not prose for the model
SYNTAX_KEYS = frozenset(("$schema", "$ref", "$id", "type", "format", "pattern", "contentEncoding",
                         "contentMediaType", "$anchor", "$dynamicRef"))  # fmt: skip
# schema keys whose children are user-chosen names (scanned as text too)
_NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_NAME_MAP_SUFFIXES = (*("." + k for k in _NAME_MAPS), *_NAME_MAPS)
_FIRST_KEYS = ("name", "title", "description")

# kinds of string, by the key that holds it
_KIND_BY_KEY = {
    "description": "param_desc",
    "title": "param_title",
    "default": "default",
    "const": "const",
    "examples": "example",
    "example": "example",
    "enum": "enum",
    "$comment": "comment",
}


@dataclass(slots=True)
class Field:
    """One string of the definition."""

    path: str
    kind: str  # name|title|description|param_desc|param_title|default|const|enum|example|
    # property|comment|vendor|annotation|other|spelled
    raw: str
    lower: str  # normalised, lower-cased: what checks read
    prep: Prepared | None  # None: plain ASCII, positions equal
    param: str | None  # the property this string belongs to (lower-case)
    syntax: bool = False

    def orig_span(self, start: int, end: int) -> tuple[int, int]:
        return (start, end) if self.prep is None else self.prep.orig_span(start, end)

    @property
    def folded(self) -> bool:
        return self.prep is not None and self.prep.folded


@dataclass(slots=True)
class Sentence:
    field: Field
    start: int
    end: int
    text: str  # field.lower[start:end]
    first: bool  # the first sentence of the tool's description
    framed: str = ""  # the hidden framing around it ("HTML comment", "system block", ...)


@dataclass(frozen=True, slots=True)
class PeerTool:
    name: str
    server: str | None
    description: str


@dataclass(slots=True)
class ParsedTool:
    name: str
    server: str | None
    fields: list[Field]
    params: frozenset[str]
    peers: dict[str, PeerTool]  # lower-case name -> peer (other servers' tools)
    siblings: frozenset[str]  # lower-case names of this server's other tools
    raw: dict[str, Any]
    _name_stems: frozenset[str] | None = None
    _purpose: frozenset[str] | None = field(default=None, repr=False)
    _first_sentence: str | None = field(default=None, repr=False)
    plain: bool = False  # every string is plain ASCII without control characters
    kinds: frozenset[str] = frozenset()
    _texts: list[Field] | None = field(default=None, repr=False)
    _joined_raw: str | None = field(default=None, repr=False)
    _joined_lower: str | None = field(default=None, repr=False)
    _prose: list[Field] | None = field(default=None, repr=False)
    _tokens: frozenset[bytes] | None = field(default=None, repr=False)
    _joined_prose: str | None = field(default=None, repr=False)
    _server_stems: frozenset[str] | None = field(default=None, repr=False)
    _param_specs: dict[str, dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def name_stems(self) -> frozenset[str]:
        if self._name_stems is None:
            self._name_stems = frozenset(stem(w) for w in name_words(self.name) if w not in _STOP)
        return self._name_stems

    def param_spec(self, param: str | None) -> dict[str, Any] | None:
        """The JSON Schema of one top-level parameter (name compared lower-case), if any."""
        if param is None:
            return None
        return self.param_specs().get(param)

    def required_params(self) -> list[str]:
        """The names the schema's ``required`` lists, as written (a hostile schema may list
        anything: non-strings are skipped)."""
        schema = self.raw.get("inputSchema") if isinstance(self.raw, dict) else None
        req = schema.get("required") if isinstance(schema, dict) else None
        return [p for p in req if isinstance(p, str)] if isinstance(req, list) else []

    def param_specs(self) -> dict[str, dict[str, Any]]:
        """Top-level parameters' schemas by lower-case name (a hostile schema may hold
        anything: non-dict entries are skipped). Built once per inspection (every sentence of a
        parameter's text asks for its schema); callers only read it."""
        if self._param_specs is not None:
            return self._param_specs
        schema = self.raw.get("inputSchema") if isinstance(self.raw, dict) else None
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict):
            self._param_specs = {}
        else:
            self._param_specs = {k.lower(): v for k, v in props.items()
                                 if isinstance(k, str) and isinstance(v, dict)}  # fmt: skip
        return self._param_specs

    @property
    def server_stems(self) -> frozenset[str]:
        """Words of this server's id (the caller's): its own domain is part of its job
        (computed once: every object of every sentence is compared with them)."""
        if self._server_stems is not None:
            return self._server_stems
        if not self.server:
            return frozenset()
        words = [w for w in re.split(r"[^a-z0-9]+", self.server.lower())
                 if w and w not in ("mcp", "server", "tools")]
        out = {stem(w) for w in words if len(w) > 2}
        if len(words) > 1:
            out.add(stem("".join(words)))  # "weather-pro" owns weatherpro.com
        self._server_stems = frozenset(out)
        return self._server_stems

    def is_this_server(self, name: str) -> bool:
        """Does ``name`` (as written in the text: "acme-erp", "billing hub") name this server?
        Compared the way ``server_stems`` holds the whole id: its words joined and stemmed."""
        words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in ("mcp", "server", "tools")]
        return bool(words) and stem("".join(words)) in self.server_stems

    @property
    def first_sentence(self) -> str:
        """The description's first sentence, lower-cased (its first 300 characters): the tool's job."""
        if self._first_sentence is None:
            first = ""
            desc = self.description
            if desc is not None:
                bounds = split_sentences(desc.lower[:600])
                if bounds:
                    a, z = bounds[0]
                    first = desc.lower[a : min(z, a + 300)]
            self._first_sentence = first
        return self._first_sentence

    @property
    def purpose(self) -> frozenset[str]:
        """Stems of the name and the first description sentence (computed when asked)."""
        if self._purpose is None:
            self._purpose = frozenset(set(self.name_stems) | stems(self.first_sentence))
        return self._purpose

    def text_fields(self) -> Iterator[tuple[int, Field]]:
        for i, f in enumerate(self.fields):
            if not f.syntax:
                yield i, f

    @property
    def texts(self) -> list[Field]:
        """The fields that are prose for the model (not schema syntax such as ``type``)."""
        if self._texts is None:
            self._texts = [f for f in self.fields if not f.syntax]
        return self._texts

    @property
    def joined_raw(self) -> str:
        """All prose fields joined by NUL: one C-speed pass answers "could anything be here?"."""
        if self._joined_raw is None:
            self._joined_raw = "\x00".join(f.raw for f in self.texts)
        return self._joined_raw

    @property
    def prose(self) -> list[Field]:
        """Fields read as sentences (not names: the tool's and its properties')."""
        if self._prose is None:
            self._prose = [f for f in self.texts if f.kind not in ("name", "property", "required")]
        return self._prose

    @property
    def joined_prose(self) -> str:
        if self._joined_prose is None:
            self._joined_prose = "\x00".join(f.lower for f in self.prose)
        return self._joined_prose

    @property
    def tokens(self) -> frozenset[bytes]:
        """Words ([a-z0-9]+ runs) of every prose field and name, as bytes (one C-speed split)."""
        if self._tokens is None:
            self._tokens = frozenset(
                self.joined_lower.encode("utf-8", "ignore").translate(_TOKEN_TABLE).split()
            )
        return self._tokens

    @property
    def joined_lower(self) -> str:
        if self._joined_lower is None:
            self._joined_lower = "\x00".join(f.lower for f in self.texts)
        return self._joined_lower

    @property
    def description(self) -> Field | None:
        for f in self.fields:
            if f.path == "description":
                return f
        return None


# ------------------------------------------------------------------ words and stems

_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "to", "for", "in", "on", "with", "from", "by", "as", "at", "is", "are", "be", "been", "this", "that", "these", "those", "it", "its", "your", "you", "user", "users", "given", "one", "all", "any", "each", "returns", "return", "get", "gets", "list", "lists", "set", "new", "using", "use", "uses", "via", "into", "tool", "tools", "server", "servers", "api", "value", "values", "result", "results", "optional", "etc", "e", "g", "i", "ie", "eg", "if", "when", "then", "than", "which", "who", "what", "how", "can", "may", "will", "would", "should", "must", "not", "no", "do", "does", "only", "also", "more", "most", "other", "some", "such", "up", "out", "over", "under", "about", "per", "both", "either", "specified", "specific", "provided", "current", "default", "based", "available", "multiple", "single", "type", "types", "data", "information", "info", "name", "names", "id", "ids", "item", "items", "string", "number", "true", "false", "null", "object", "array", "text", "content", "contents", "option", "options", "field", "fields", "parameter", "parameters", "param", "params", "input", "output", "request", "response", "query"]
)
_WORD_RE = re.compile(r"[a-z][a-z0-9]+")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """Crude English stemming: enough to match "geocoding" with "geocode", "files" with "file"."""
    w = word
    for suf in ("ations", "ation", "ings", "ing", "ers", "er", "ies", "es", "ed", "s", "e"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            w = w[: -len(suf)] + ("y" if suf == "ies" else "")
            break
    return w


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD_RE.findall(text) if w not in _STOP and len(w) > 1}


def name_words(name: str) -> list[str]:
    spaced = _CAMEL_RE.sub(" ", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


# ------------------------------------------------------------------ sentences

# a sentence ends at . ! ? followed by a space (not in "e.g. " and friends), or a newline
# (a CJK full stop ends a sentence with no space after it, also once folded to "." before the next character)
_SENT_END_RE = re.compile(r"[.!?。！？](?=\s|$)|[。！？]|[.!?](?=[\u0400-\u04ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])|"
                          r"\n|\x00")
_ABBREV = ("e.g", "i.e", "etc", "vs", "approx", " no", "cf", "eg", "ie")


def split_sentences(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence; a full stop inside "…" on the same line or after an
    abbreviation does not end one. Memoised per text (detect_text.TextMemo)."""
    return _SPLIT(text)


def _split_sentences(text: str) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    a = 0
    quotes = '"' in text or "“" in text
    for m in _SENT_END_RE.finditer(text):
        e = m.end()
        ch = m.group(0)
        if ch not in ("\n", "\x00"):
            if text.endswith(_ABBREV, max(0, e - 7), e - 1):
                continue
            if quotes and _unbalanced(text, a, e):
                continue
        if e > a and not text[a:e].isspace():
            out.append((a, e))
        a = e
    if a < len(text) and not text[a:].isspace():
        out.append((a, len(text)))
    return tuple(out)


_SPLIT = TextMemo(_split_sentences)


def _unbalanced(text: str, a: int, z: int) -> bool:
    return text.count('"', a, z) % 2 == 1 or text.count("“", a, z) > text.count("”", a, z)


# ------------------------------------------------------------------ collection


def _kind(path: str, key: str, in_list: bool) -> str:
    if path in ("name", "title", "description"):
        return path
    if path.startswith("annotations"):
        return "annotation"
    if key.startswith("x-"):
        return "vendor"
    k = _KIND_BY_KEY.get(key)
    if key == "required" and in_list:
        return "required"
    if k is not None:
        if k in ("param_desc", "param_title") and ".properties." not in path:
            return "schema_desc"
        return k
    return "other"


def _child_kind(path: str, key: str, ann: bool) -> str:
    """``_kind(path, key, False)`` for the path of a dict's child (``parent.key``, so never
    "name", "title" or "description"; ``ann``: the parent path starts with "annotations")."""
    if ann:
        return "annotation"
    if key.startswith("x-"):
        return "vendor"
    k = _KIND_BY_KEY.get(key)
    if k is not None:
        if k in ("param_desc", "param_title") and ".properties." not in path:
            return "schema_desc"
        return k
    return "other"


def collect(tool: dict[str, Any]) -> list[tuple[str, str, str, bool, str | None]]:
    """(path, kind, string, is-syntax, property) for every string of the tool, in a stable
    order; ``property`` is the (lower-case) input property the string belongs to."""
    out: list[tuple[str, str, str, bool, str | None]] = []
    add = out.append
    idents: list[tuple[str, str, str | None]] = []

    def walk(node: Any, path: str, key: str, depth: int, syn: bool, param: str | None) -> None:
        if len(out) >= MAX_STRINGS or depth > MAX_DEPTH:
            return
        if type(node) is dict:
            names = path.endswith(_NAME_MAP_SUFFIXES)
            props = names and path.endswith("properties")
            # every child path is ``path.k``: never a top-level name, under annotations iff path is
            ann = path.startswith("annotations")
            for k, v in node.items():
                if type(k) is not str:
                    k = str(k)
                sub = f"{path}.{k}"
                tv = type(v)
                if names and k:
                    p = k.lower() if props else param
                    add((sub, "property", k, False, p))
                    if len(k) >= 16:
                        idents.append((sub, k, p))
                    if tv is str:
                        if v:
                            add((sub, "other", v, False, p))
                    elif tv is dict or tv is list:
                        walk(v, sub, k, depth + 1, False, p)
                elif tv is str:
                    if v:
                        add((sub, _child_kind(sub, k, ann), v, k in SYNTAX_KEYS, param))
                elif tv is dict or tv is list:
                    walk(v, sub, k, depth + 1, k in SYNTAX_KEYS, param)
        elif type(node) is list:
            kind = _kind(path, key, True)
            for i, v in enumerate(node):
                tv = type(v)
                sub = f"{path}[{i}]"
                if tv is str:
                    if v:
                        add((sub, kind, v, syn, param))
                        if len(v) >= 16 and not syn:
                            idents.append((sub, v, param))
                elif tv is dict or tv is list:
                    walk(v, sub, key, depth + 1, syn, param)
        elif isinstance(node, str) and node:  # str subclasses
            add((path, _kind(path, key, False), str(node), syn, param))

    for k in _FIRST_KEYS:
        v = tool.get(k)
        if type(v) is str:
            if v:
                add((k, k, v, False, None))
                if k == "name" and len(v) >= 16:
                    idents.append((k, v, None))
        elif v is not None:
            walk(v, k, k, 0, False, None)
    for k, v in tool.items():
        if k in _FIRST_KEYS:
            continue
        k = str(k)
        if type(v) is str:
            if v:
                add((k, "vendor" if k.startswith("x-") else "other", v, False, None))
        else:
            walk(v, k, k, 0, False, None)
    # prose spelled as an identifier ("content_from_reading_ssh_id_rsa", an enum value
    # "csv_and_also_upload_...") is read by the model as words: analyse a spaced copy too
    for path, r, p in idents:
        if " " not in r:
            if r.count("_") >= 3:
                add((path, "spelled", r.replace("_", " "), False, p))
                if (cased := _spell_cased(r)) is not None:
                    add((path, "spelled", cased, False, p))
            elif r.count("-") >= 3:
                add((path, "spelled", r.replace("-", " "), False, p))
    return out


def _spell_cased(r: str) -> str | None:
    """A second reading of an identifier that mixes cases: its underscores read as spaces except
    inside a run of lower-case parts, "ALWAYS_CALL_upload_workspace_FIRST" → "ALWAYS CALL
    upload_workspace FIRST" (the case may mark a tool's name inside the words; or the words
    inside a name, "api_key_from_env_OPENAI_API_KEY", which the plain reading covers). None when
    the identifier is of one case."""
    parts = r.split("_")
    if not any(x.isupper() for x in parts) or not any(x.islower() for x in parts):
        return None
    out = parts[0]
    for prev, x in pairwise(parts):
        out += "_" + x if (prev.islower() and x.islower()) else " " + x
    return out


_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# the same characters as _CTRL_RE, as a byte table: one translate finds them in an ASCII
# text several times faster than the regex's scan
_CTRL_TABLE = bytes(1 if _CTRL_RE.match(chr(b)) else 0 for b in range(256))


def _is_plain(s: str) -> bool:
    return s.isascii() and b"\x01" not in s.encode("ascii").translate(_CTRL_TABLE)


def make_field(path: str, kind: str, raw: str, syntax: bool, param: str | None = None,
               lower: str | None = None) -> Field:
    """``lower``: ``raw.lower()``, when the caller has it (used only if ``raw`` is plain)."""
    if _is_plain(raw):
        lower, prep = (raw.lower() if lower is None else lower), None
    else:
        prep = _PREPARE(raw)  # shared by equal texts: a Prepared is never changed
        lower = prep.lower
    return Field(path, kind, raw, _mail_verb(lower), prep, param or _param_of(path), syntax)


def _mail_verb(lower: str) -> str:
    """The verb "e-mail" read as "email" ("e-mail the file to …"; same length: positions stay valid)."""
    return _E_MAIL.sub(" email", lower) if "e-mail" in lower else lower


_PREPARE = TextMemo(prepare)
# (a word of its own: not inside a host, an address or a path, "https://e-mail.example.org/x" stays a URL)
# (nor the noun before what it names: "e-mail addresses, IPs, bearer tokens")
_E_MAIL = re.compile(r"(?<![\w./@:%-])e-mail(?![\w.@/-])(?!\s+(?:address(?:es)?|accounts?|clients?|servers?|"
                     r"messages?|notifications?|inbox(?:es)?|aliases|domains?|headers?|lists?|templates?)\b)")


def _param_of(path: str) -> str | None:
    """The property a string belongs to: the name after the last ``.properties.``."""
    k = path.rfind(".properties.")
    if k < 0:
        return None
    rest = path[k + 12 :]
    e = len(rest)
    for sep in (".", "["):
        j = rest.find(sep)
        if 0 <= j < e:
            e = j
    return rest[:e].lower() or None


def _peer_items(peers: Iterable[Any]) -> Iterator[tuple[str, str | None, str]]:
    for p in peers:
        if not isinstance(p, dict):
            continue
        server = p.get("server") if isinstance(p.get("server"), str) else None
        wrapped = p.get("tool")
        t = wrapped if isinstance(wrapped, dict) and "name" not in p else p
        name = t.get("name")
        if isinstance(name, str) and name:
            desc = t.get("description")
            yield name, server, desc if isinstance(desc, str) else ""


def parse_tool(
    tool: dict[str, Any],
    peers: Iterable[Any] = (),
    siblings: Iterable[str] = (),
    server: str | None = None,
) -> ParsedTool:
    """``server`` is the caller's id of the tool's own server (never read from the
    definition: a server could claim a peer's id there to pass as its sibling)."""
    items = collect(tool)
    joined = "\n".join([t[2] for t in items])
    plain = _is_plain(joined)
    if plain:
        # nearly every real tool: plain ASCII, so no string needs normalising; schema
        # syntax ("string", "uri") is neither prose nor hiding anything
        fields = [Field(path, kind, raw, raw.lower(), None, param, False)
                  for path, kind, raw, syn, param in items if not syn]
        if "-mail" in joined or "-Mail" in joined or "-MAIL" in joined:
            for f in fields:
                f.lower = _mail_verb(f.lower)  # (as make_field reads it)
    else:
        fields = [make_field(path, kind, raw, syn, param) for path, kind, raw, syn, param in items
                  if not (syn and _is_plain(raw))]
    raw_name = tool.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    params: set[str] = set()
    for f in fields:
        if f.kind == "property":
            params.add(f.lower)
    peer_map: dict[str, PeerTool] = {}
    sib = {s.lower() for s in siblings if isinstance(s, str)}
    for pname, pserver, pdesc in _peer_items(peers):
        if server is not None and pserver == server:
            sib.add(pname.lower())
            continue
        peer_map.setdefault(pname.lower(), PeerTool(pname, pserver, pdesc))
    sib.discard(name.lower())
    return ParsedTool(
        name=name,
        server=server,
        fields=fields,
        params=frozenset(params),
        peers=peer_map,
        siblings=frozenset(sib),
        raw=tool,
        plain=plain,
        kinds=frozenset(f.kind for f in fields),
    )
