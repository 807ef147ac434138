"""DLP for request bodies (embedded mode): redact sensitive values before they
leave the host.

Walks the JSON string values of a request body with the shared
``SensitiveDetector``. Binary payloads (base64 image/audio/document data and
``data:`` URLs) are skipped: a redaction there would corrupt the file and a
random base64 run is not a secret. The body is re-serialised only when
something was redacted, so clean requests go upstream byte-identical.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentsh.agent.policy.schema import DLPConfig
from agentsh.agent.sensitive import SensitiveDetector


class BodyRedactor:
    def __init__(self, cfg: DLPConfig) -> None:
        self.enabled = cfg.mode == "redact"
        self.detector = SensitiveDetector(
            cfg.types, [(p.name, p.pattern) for p in cfg.custom_patterns]
        )

    def redact_body(self, body: bytes) -> tuple[bytes, dict[str, int]]:
        """(body to send, counts per type); the original object when nothing matched."""
        if not self.enabled or not body:
            return body, {}
        # One scan of the raw JSON first: clean bodies (the common case) are never
        # parsed or rebuilt. JSON escapes only touch quotes, backslashes, control
        # characters and (with ensure_ascii) non-ASCII, none of which the
        # detector's types are made of, so a secret in a value is also a match
        # in the raw text.
        if not self.detector.find(body.decode("utf-8", "replace")):
            return body, {}
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return body, {}
        counts: dict[str, int] = {}
        new = self._walk(doc, counts, None)
        if not counts:
            return body, {}
        return orjson.dumps(new), counts

    def _walk(self, v: Any, counts: dict[str, int], parent: dict[str, Any] | None) -> Any:
        if isinstance(v, str):
            text, c = self.detector.redact(v)
            if c:
                for k, n in c.items():
                    counts[k] = counts.get(k, 0) + n
            return text
        if isinstance(v, dict):
            binary = v.get("type") == "base64" or ("format" in v and "data" in v)
            out: dict[str, Any] = {}
            for k, x in v.items():
                if isinstance(x, str) and (
                    (binary and k == "data") or (k in ("url", "image_url", "file_data") and x.startswith("data:"))
                ):
                    out[k] = x
                else:
                    out[k] = self._walk(x, counts, v)
            return out
        if isinstance(v, list):
            return [self._walk(x, counts, parent) for x in v]
        return v
