"""Credentials written into a definition (a leaked key is a finding on its own)."""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterator
from itertools import accumulate

from agentsh.agent.core.mcp.checks import CheckContext, Finding, context_of
from agentsh.agent.core.mcp.detect_parse import ParsedTool
from agentsh.agent.core.sensitive import SensitiveDetector

# secret-shaped values; PII types (email, phone) are ordinary in descriptions
SECRET_TYPES = ("private_key", "jwt", "anthropic_api_key", "openai_api_key", "github_token",
                "slack_token", "stripe_key", "aws_access_key", "aws_secret_key")  # fmt: skip
_PLACEHOLDER = re.compile(
    r"example|sample|dummy|placeholder|fake|x{4,}|0{8,}|\.\.\.|your[_-]|<|\*{3}|(?:^|/)t0{3,}/b0{3,}/", re.I
)
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
    if kind == "private_key":
        # a PEM header alone (scanners and docs name the format) holds no key material
        return _PEM_BODY.search(text.replace("\n", "").replace("\r", "")) is None
    if _EXAMPLE_CUE.search(joined, max(0, start - 80), start):
        return True
    if kind == "jwt":
        parts = text.split(".")
        if len(parts) == 3 and len(parts[2]) < 16:
            return True  # "eyJ….eyJ….sig": a made-up signature, an example of the format
        if len(parts) >= 2:
            try:
                claims = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
            except (binascii.Error, ValueError):
                return False
            low = claims.decode("utf-8", "replace").lower().replace(" :", ":").replace(": ", ":")
            return all(c in low for c in _JWT_SAMPLE_CLAIMS)
    return False


class SecretCheck:
    name = "secrets"

    def __init__(self) -> None:
        self._sd = SensitiveDetector(types=SECRET_TYPES)

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        fields = tool.texts
        if not fields:
            return
        raws = [f.raw for f in fields]
        joined = tool.joined_raw
        found = self._sd.find(joined)
        if not found:
            return
        starts = [0, *accumulate(len(r) + 1 for r in raws)]
        for m in found:
            if _PLACEHOLDER.search(m.text) or len(set(m.text)) < 8:
                continue
            if _documentation_secret(m.type, m.text, joined, m.start):
                continue
            i = bisect.bisect_right(starts, m.start) - 1
            f = fields[i]
            st, en = m.start - starts[i], m.end - starts[i]
            # a schema's `examples` document the value's form (JSON Schema: annotations, not
            # defaults): a token shaped like one there is worth a look, not an alert
            sev = "medium" if f.kind == "example" else "high"
            yield Finding("embedded_secrets", sev, f"embedded_{m.type}", f.path, m.text, st,
                          context_of(f.raw, st, en), f"a {m.type.replace('_', ' ')} written into "
                          "the definition")  # fmt: skip
