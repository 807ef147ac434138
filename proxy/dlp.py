"""DLP for request bodies (embedded mode): redact sensitive values before they
leave the host (docs/proxy.md "DLP").

The detector runs on what the upstream will read, not on the JSON text: keys
and values after JSON unescaping, plus two decoded views of a string where
the text hides what it carries: percent-encoding (URLs and query strings,
up to three levels) and ``data:`` URLs / base64 document sources with a
textual media type. A string with a match in any view is replaced by the
redacted text of that view (a ``data:`` URL stays a ``data:`` URL). Binary
payloads (images, audio, PDF) are not decoded: a redaction there would
corrupt the file and a random base64 run is not a secret.

One scan of the raw JSON text decides that a body is clean when nothing in
it can hide a secret from that scan (no ``\\u`` or ``\\/`` escape, no
percent-escape, no ``data:`` URL or base64 text source); clean bodies go
upstream byte-identical and are never parsed.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import quote, unquote

import orjson

from agentsh.agent.core.lenient_json import Unparseable, loads_ex
from agentsh.agent.core.policy.schema import DLPConfig
from agentsh.agent.core.sensitive import SensitiveDetector

_ESC_ASCII = re.compile(rb"\\u00[2-7]")  # an escaped printable ASCII character
_PCT_B = re.compile(rb"%[0-9A-Fa-f]{2}")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
# data:[<media type>][;param=value]*[;base64],<payload>, also inside longer text
_DATA_URL = re.compile(
    r"data:(?P<mt>[\w.+-]*/[\w.+-]*|)(?:;[\w.+-]+=[^;,\s\"']*)*"
    r"(?:(?P<b64>;base64),(?P<p64>[A-Za-z0-9+/=_-]*)|,(?P<pct>[^\s\"'<>()]*))",
    re.I,
)
_TEXTUAL = re.compile(
    r"(?:text/.*|application/(?:json|xml|javascript|ecmascript|x-yaml|yaml|toml|x-sh|x-httpd-php"
    r"|x-www-form-urlencoded|[\w.+-]*\+(?:json|xml))|)",
    re.I,
)
_BINARY_KEYS = frozenset({"data", "file_data", "url", "image_url"})


def _add(counts: dict[str, int], c: dict[str, int]) -> None:
    for k, n in c.items():
        counts[k] = counts.get(k, 0) + n


class BodyRedactor:
    def __init__(self, cfg: DLPConfig) -> None:
        self.enabled = cfg.mode == "redact"
        self.detector = SensitiveDetector(
            cfg.types, [(p.name, p.pattern) for p in cfg.custom_patterns]
        )
        # custom patterns may match any character, so any JSON escape can hide one
        self._any_escape = bool(cfg.custom_patterns)

    def _may_hide(self, body: bytes) -> bool:
        """Can the raw JSON text hide a secret from one scan of it?"""
        if self._any_escape:
            if b"\\" in body:
                return True
        elif b"\\/" in body or (b"\\u00" in body and _ESC_ASCII.search(body)):
            return True
        return b"data:" in body or b'"base64"' in body or (b"%" in body and _PCT_B.search(body) is not None)

    def redact_body(self, body: bytes) -> tuple[bytes, dict[str, int]]:
        """(body to send, counts per type); the original object when nothing matched."""
        if not self.enabled or not body:
            return body, {}
        text = body.decode("utf-8", "replace")
        if not self._may_hide(body) and not self.detector.find(text):
            return body, {}
        try:
            doc = loads_ex(body)[0]
        except Unparseable:
            # not JSON (the upstream will refuse it): still never send the secret
            red, found = self.redact_text(text)
            return (red.encode("utf-8") if found else body), found
        counts: dict[str, int] = {}
        new = self._walk(doc, counts)
        if not counts:
            return body, {}
        return orjson.dumps(new), counts

    # ------------------------------------------------------------------ strings

    def redact_text(self, s: str) -> tuple[str, dict[str, int]]:
        """Redact one string in every view that applies (see the module docstring)."""
        red, counts = self.detector.redact(s)
        if counts:
            s = red
        if "%" in s and _PCT.search(s):
            dec = s
            for _ in range(3):
                nxt = unquote(dec, errors="replace")
                if nxt == dec:
                    break
                dec = nxt
                red, c = self.detector.redact(dec)
                if c:
                    _add(counts, c)
                    s = red  # the decoded, redacted text is what goes upstream
                    break
        if "a:" in s or "A:" in s:
            s = _DATA_URL.sub(lambda m: self._data_url(m, counts), s)
        return s, counts

    def _data_url(self, m: re.Match[str], counts: dict[str, int]) -> str:
        """One ``data:`` URL with its textual payload redacted (re-encoded the same way)."""
        if not _TEXTUAL.fullmatch(m.group("mt")):
            return m.group(0)
        g = "p64" if m.group("b64") else "pct"
        head, payload = m.group(0)[: m.start(g) - m.start()], m.group(g)
        if m.group("b64"):
            raw = _b64(payload)
            if raw is None:
                return m.group(0)
            red, c = self.detector.redact(raw.decode("utf-8", "replace"))
            if not c:
                return m.group(0)
            _add(counts, c)
            return head + base64.b64encode(red.encode("utf-8")).decode("ascii")
        red, c = self.detector.redact(unquote(payload, errors="replace"))
        if not c:
            return m.group(0)
        _add(counts, c)
        return head + quote(red, safe="/:=&?@.,-_~+!*'")

    def _b64_text(self, s: str, counts: dict[str, int]) -> str:
        raw = _b64(s)
        if raw is None:
            return s
        red, c = self.detector.redact(raw.decode("utf-8", "replace"))
        if not c:
            return s
        _add(counts, c)
        return base64.b64encode(red.encode("utf-8")).decode("ascii")

    # ------------------------------------------------------------------ JSON

    def _walk(self, v: Any, counts: dict[str, int]) -> Any:
        if isinstance(v, str):
            text, c = self.redact_text(v)
            _add(counts, c)
            return text
        if isinstance(v, dict):
            mt = v.get("media_type") or v.get("mime_type") or ""
            textual_b64 = v.get("type") == "base64" and isinstance(mt, str) and mt and _TEXTUAL.fullmatch(mt.strip())
            binary = v.get("type") == "base64" or ("format" in v and "data" in v)
            out: dict[str, Any] = {}
            for k, x in v.items():
                if isinstance(k, str):
                    k2, c = self.redact_text(k)
                    _add(counts, c)
                    n = 2
                    while c and (k2 in out or k2 in v):  # two redacted keys stay two keys
                        k2 = f"{k2.rsplit(' #', 1)[0]} #{n}"
                        n += 1
                else:
                    k2 = k
                if isinstance(x, str) and k in _BINARY_KEYS:
                    if binary and k == "data":
                        out[k2] = self._b64_text(x, counts) if textual_b64 else x
                        continue
                    if x[:5].lower() == "data:":  # binary payloads are not scanned as text
                        out[k2] = _DATA_URL.sub(lambda m: self._data_url(m, counts), x)
                        continue
                out[k2] = self._walk(x, counts)
            return out
        if isinstance(v, list):
            return [self._walk(x, counts) for x in v]
        return v


def _b64(s: str) -> bytes | None:
    t = "".join(s.split())
    try:
        return base64.b64decode(t + "=" * (-len(t) % 4), altchars=b"-_" if ("-" in t or "_" in t) else None)
    except (binascii.Error, ValueError):
        return None
