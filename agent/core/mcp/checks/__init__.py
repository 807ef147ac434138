"""The detector's checks: one concern per module, one protocol (docs/mcp.md "Tool poisoning").

A check receives the parsed tool (``detect_parse.ParsedTool``: its strings
with their roles, its purpose, its parameters, peers and siblings) and
returns :class:`Finding` objects: category, severity, the matched text and a
one-line *why* an operator can judge without reading code ("order 'must run'
→ shell command `sudo -l` (privilege), unrelated to geocode_address").

A new non-regex category is a new module with a class that has ``name`` and
``run(tool, ctx)``, added to :func:`default_checks`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentsh.agent.core.mcp.detect_parse import Field, ParsedTool
from agentsh.agent.core.vocab import SEVERITIES, SEVERITY_RANK

if TYPE_CHECKING:
    from agentsh.agent.core.policy.schema import DetectionConfig

RANK = SEVERITY_RANK  # the name the checks use
CONTEXT = 50


@dataclass(slots=True)
class Finding:
    category: str
    severity: str
    pattern: str
    field: str
    text: str  # what is really in the definition (original characters)
    position: int  # in the original string of ``field``
    context: str
    why: str = ""


class Check(Protocol):
    """One kind of evidence. ``run`` must not raise on hostile input."""

    name: str

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterable[Finding]: ...


@dataclass(slots=True)
class CheckContext:
    """What checks share: the configuration, and the directive analysis for text
    that another check decoded (hidden tag characters, base64) so it is read the
    way the model reads it."""

    cfg: DetectionConfig
    rescan: object = None  # callable(text, tool) -> list[Finding]; set by the Detector


def level(sev: str) -> int:
    return RANK[sev]


def sev_of(lvl: int) -> str:
    return SEVERITIES[max(0, min(len(SEVERITIES) - 1, lvl))]


def context_of(text: str, start: int, end: int) -> str:
    return text[max(0, start - CONTEXT) : min(len(text), end + CONTEXT)]


def finding_at(
    f: Field, start: int, end: int, category: str, severity: str, pattern: str, why: str
) -> Finding:
    """A finding for ``f.lower[start:end]``, reported at the original characters."""
    os_, oe = f.orig_span(start, end)
    return Finding(category, severity, pattern, f.path, f.raw[os_:oe], os_,
                   context_of(f.raw, os_, oe), why)  # fmt: skip


def default_checks(cfg: DetectionConfig) -> list[Check]:
    from agentsh.agent.core.mcp.checks.chars import CharCheck
    from agentsh.agent.core.mcp.checks.custom import CustomPatternCheck
    from agentsh.agent.core.mcp.checks.directives import DirectiveCheck
    from agentsh.agent.core.mcp.checks.encoded import EncodedCheck
    from agentsh.agent.core.mcp.checks.peers import PeerCheck
    from agentsh.agent.core.mcp.checks.schema_values import SchemaValueCheck
    from agentsh.agent.core.mcp.checks.secrets import SecretCheck

    b = cfg.builtin
    checks: list[Check] = [DirectiveCheck(), SchemaValueCheck()]
    if b.shadowing:
        checks.append(PeerCheck())
    if b.invisible_unicode or b.ansi_escape:
        checks.append(CharCheck(invisible=b.invisible_unicode, ansi=b.ansi_escape))
    if b.encoded_payload:
        checks.append(EncodedCheck())
    if b.embedded_secrets:
        checks.append(SecretCheck())
    if cfg.custom_patterns:
        checks.append(CustomPatternCheck(cfg))
    return checks
