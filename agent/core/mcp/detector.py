"""MCP tool-poisoning detector, built around orders (docs/mcp.md "Tool poisoning").

``Detector.inspect(tool, peers)`` parses a raw MCP tool definition once
(detect_parse: every string with its role, the tool's purpose, parameters,
peers and siblings) and runs the checks (agent/core/mcp/checks/) over it:

* ``directives``    orders addressed to the model, judged by their object
                    (command, credential or persistence file, URL, another
                    server's tool, a parameter fixed regardless of the user,
                    what to hide from the user) and by the tool's purpose;
* ``schema_values`` defaults and consts that act as orders, parameters that ask
                    for a credential file's contents, ``../`` traversal;
* ``peers``         names impersonating or colliding with other servers' tools;
* ``chars``         invisible characters, ANSI escapes, homoglyphs; smuggled
                    text decoded and read again;
* ``encoded``       base64 / hex / escapes / percent / HTML entities / ROT13,
                    decoded and read again;
* ``secrets``       credentials written into the definition;
* ``custom``        the policy's own patterns.

Findings are grouped per (pattern, field) into DetectionResults (the registry
and the events store them) with a one-line ``why``. ``Detector.scan_result``
applies the same order analysis to text a tool returned (indirect prompt
injection, agent/core/mcp/detect_results.py). docs/mcp.md "Tool poisoning".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from agentsh.agent.core.events.models import DetectionMatch, DetectionResult
from agentsh.agent.core.mcp.checks import RANK, SEVERITIES, CheckContext, Finding, default_checks
from agentsh.agent.core.mcp.checks.directives import DirectiveCheck
from agentsh.agent.core.mcp.detect_parse import MAX_DEPTH, MAX_STRINGS, ParsedTool, parse_tool
from agentsh.agent.core.mcp.detect_score import load_model, scored_findings
from agentsh.agent.core.policy.schema import DetectionConfig

log = logging.getLogger(__name__)

__all__ = [
    "MAX_DEPTH",
    "MAX_STRINGS",
    "Detector",
    "clear_caches",
    "inspection_failed",
    "max_severity",
    "reaches",
    "results_from_findings",
]

MAX_MATCHES_PER_RESULT = 10
_TOGGLED = frozenset(
    ("credential_theft", "exfiltration", "hidden_instructions", "shell_injection",
     "path_traversal", "invisible_unicode", "ansi_escape", "encoded_payload", "model_directives",
     "shadowing", "embedded_secrets")
)  # fmt: skip


def clear_caches() -> None:
    """Forget everything memoised per text, word or character (sentence bounds, gates,
    word scores, stems, folded characters, classified command lines): the state of a
    daemon that has never seen any tool. bench/detector.py measures a first-seen
    tools/list from here."""
    from agentsh.agent.core.mcp import detect_parse, detect_score, detect_shell, detect_text

    detect_text.clear_text_memos()
    for fn in (detect_parse.stem, detect_score._stem, detect_shell.classify,
               detect_text._plain_lower, detect_text._fold_char):  # fmt: skip
        fn.cache_clear()


def inspection_failed(field: str, err: BaseException) -> DetectionResult:
    """What a definition or result that made the detector fail is: not vouched for. A
    crafted input that crashes the analysis must not pass as clean (fail closed: the
    policy's threshold and action apply as to any critical finding)."""
    return DetectionResult(pattern="inspection_failed", category="model_directives", severity="critical",
                           matches=[], field=field,
                           why=f"the detector failed on this input ({type(err).__name__}); "
                               "it is treated as poisoned, not as clean")  # fmt: skip


def max_severity(results: Iterable[DetectionResult]) -> str | None:
    best: str | None = None
    for r in results:
        if best is None or RANK[r.severity] > RANK[best]:
            best = r.severity
    return best


def reaches(severity: str | None, threshold: str) -> bool:
    return severity is not None and RANK[severity] >= RANK[threshold]


def results_from_findings(findings: Iterable[Finding]) -> list[DetectionResult]:
    """Group findings by (pattern, field), most severe first; ``why`` of the worst."""
    grouped: dict[tuple[str, str], DetectionResult] = {}
    for f in findings:
        key = (f.pattern, f.field)
        r = grouped.get(key)
        if r is not None and len(r.matches) >= MAX_MATCHES_PER_RESULT and \
                RANK[f.severity] <= RANK[r.severity]:  # fmt: skip
            continue
        m = DetectionMatch(text=f.text, position=f.position, context=f.context)
        if r is None:
            grouped[key] = DetectionResult(pattern=f.pattern, category=f.category,
                                           severity=f.severity, matches=[m], field=f.field,  # type: ignore[arg-type]
                                           why=f.why)  # fmt: skip
            continue
        if RANK[f.severity] > RANK[r.severity]:  # results are frozen: a copy (same matches list)
            r = grouped[key] = r.model_copy(
                update={"severity": f.severity, "category": f.category, "why": f.why})
        if len(r.matches) < MAX_MATCHES_PER_RESULT and m not in r.matches:
            r.matches.append(m)
    return sorted(grouped.values(), key=lambda r: -RANK[r.severity])


class Detector:
    """Inspects MCP tool definitions; see module docstring."""

    def __init__(self, cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.threshold = cfg.alert_threshold
        b = cfg.builtin
        self._off = frozenset(c for c in _TOGGLED if not getattr(b, c))
        self._checks = default_checks(cfg)
        self._directives = next(c for c in self._checks if isinstance(c, DirectiveCheck))
        self._ctx = CheckContext(cfg, self._rescan)
        self._results: Any = None
        self.scorer = load_model() if cfg.builtin.model_directives else None
        """The learned sentence scorer (detect_score); None: the rules alone."""

    # ------------------------------------------------------------ public API

    def inspect(
        self,
        tool: dict[str, Any],
        peers: Iterable[dict[str, Any]] = (),
        *,
        siblings: Iterable[str] = (),
        server: str | None = None,
    ) -> list[DetectionResult]:
        """Detections for one tool. ``peers``: other servers' tools (``{"server", "tool"}``
        or plain tool dicts); ``siblings``: names of this server's other tools;
        ``server``: this server's id (never taken from the definition itself)."""
        if not isinstance(tool, dict):
            return []
        try:
            parsed = parse_tool(tool, peers, siblings, server)
            if not parsed.fields:
                return []
            return results_from_findings(self.findings(parsed))
        except Exception as e:  # never raises on hostile input, never passes it as clean
            log.exception("detector failed on tool %r; reported as inspection_failed", tool.get("name"))
            return [inspection_failed("definition", e)]

    def findings(self, parsed: ParsedTool) -> list[Finding]:
        out: list[Finding] = []
        off = self._off
        for check in self._checks:
            try:
                for f in check.run(parsed, self._ctx):
                    if f.category not in off:
                        out.append(f)
            except RecursionError:  # pathological nesting: report what the others found
                continue
        if self.scorer is not None:
            out.extend(scored_findings(self.scorer, parsed, out))
        return out

    def alerts(self, results: Iterable[DetectionResult]) -> bool:
        return reaches(max_severity(results), self.threshold)

    def scan_result(
        self, text: str, *, tool_name: str | None = None, max_bytes: int = 65536
    ) -> list[DetectionResult]:
        """Indirect prompt injection in a tool's result text (see detect_results)."""
        if self._results is None:
            from agentsh.agent.core.mcp.detect_results import ResultScanner

            self._results = ResultScanner(self)
        try:
            return self._results.scan(text, tool_name=tool_name, max_bytes=max_bytes)
        except Exception as e:  # never raises on hostile input, never passes it as clean
            log.exception("detector failed on a result of %r; reported as inspection_failed", tool_name)
            return [inspection_failed("result", e)]

    # ------------------------------------------------------------ internals

    def _rescan(self, text: str, tool: ParsedTool) -> list[Finding]:
        """Decoded hidden text, read as a description of the same tool."""
        if self._directives is None:
            return []
        return [f for f in self._directives.analyze_text(text, tool) if f.category not in self._off]


SEVERITY_NAMES = SEVERITIES
