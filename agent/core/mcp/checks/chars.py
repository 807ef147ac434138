"""Characters a reviewer does not see but the model reads (detect_chars), with the
smuggled text decoded and read again as the model would read it."""

from __future__ import annotations

from collections.abc import Iterator

from agentsh.agent.core.mcp.checks import RANK, CheckContext, Finding, context_of
from agentsh.agent.core.mcp.detect_chars import CharHit, scan_chars
from agentsh.agent.core.mcp.detect_parse import ParsedTool, stem
from agentsh.agent.core.mcp.detect_text import TextMemo

_CHAR_TOOLS = frozenset(map(stem, ["invisible", "unicode", "zero", "width", "strip", "sanitize", "sanitise",
                                    "normalize", "normalise", "character", "characters", "homoglyph"]))


class CharCheck:
    name = "chars"

    def __init__(self, *, invisible: bool, ansi: bool) -> None:
        self.invisible = invisible
        self.ansi = ansi
        # the hits of one text (frozen): a text repeated across a server's tools is scanned once
        self._hits: TextMemo[tuple[CharHit, ...]] = TextMemo(
            lambda raw: tuple(scan_chars(raw, invisible=invisible, ansi=ansi)))

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        if tool.plain:
            return
        for f in tool.fields:
            if f.prep is None or f.prep.index is None:
                continue  # plain ASCII without controls
            per_name: dict[str, int] = {}
            for hit in self._hits(f.raw):
                k = per_name[hit.name] = per_name.get(hit.name, 0) + 1
                if k > 20 and not hit.hidden:
                    continue  # the same character again: the first ones say it
                sev = hit.severity
                if hit.name == "zero_width_character" and not hit.hidden and tool.purpose & _CHAR_TOOLS:
                    sev = "low"  # a tool that strips or shows invisible characters documents one
                inner: list[Finding] = []
                if hit.hidden and callable(ctx.rescan):
                    inner = [x for x in ctx.rescan(hit.hidden, tool) if RANK[x.severity] >= 1]
                    if inner:
                        sev = "critical"
                why = f"{hit.name.replace('_', ' ')} ({hit.text[:60]!r})"
                if inner:
                    why = f"hidden text read by the model: {inner[0].why}"
                yield Finding(hit.category, sev, hit.name, f.path, hit.text, hit.start,
                              context_of(f.raw, hit.start, hit.end), why)
                for x in inner:
                    yield Finding(hit.category, sev, hit.name, f.path, f"{x.pattern}: {x.text}",
                                  hit.start, hit.text[:200], why)
