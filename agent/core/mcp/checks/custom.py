"""The operator's own patterns (``mcp.inspection.detection.custom_patterns``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentsh.agent.core.mcp.checks import CheckContext, Finding, context_of
from agentsh.agent.core.mcp.detect_parse import ParsedTool
from agentsh.agent.core.policy.regex_safety import check_regex
from agentsh.agent.core.policy.schema import DetectionConfig


class CustomPatternCheck:
    name = "custom"

    def __init__(self, cfg: DetectionConfig) -> None:
        self._pats = tuple(
            (cp.name, cp.category, cp.severity, check_regex(cp.pattern)) for cp in cfg.custom_patterns
        )

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        for name, category, severity, rx in self._pats:
            why = f"matches the policy's custom pattern {name!r}"
            for _i, f in tool.text_fields():
                text = f.raw
                spans = set()
                for m in rx.finditer(text):
                    if m.end() > m.start():
                        spans.add((m.start(), m.end()))
                        yield Finding(category, severity, name, f.path, m.group(0), m.start(),
                                      context_of(text, m.start(), m.end()), why)
                if f.folded and rx.flags & re.IGNORECASE:
                    for m in rx.finditer(f.lower):
                        if m.end() > m.start():
                            os_, oe = f.orig_span(m.start(), m.end())
                            if (os_, oe) not in spans:
                                yield Finding(category, severity, name, f.path, text[os_:oe], os_,
                                              context_of(text, os_, oe), why)
