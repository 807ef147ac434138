"""Indirect prompt injection in tool results on their way up to the model
(``mcp.inspection.results``; docs/mcp.md "Tool results", docs/proxy.md).

Every tool result an agent sends to the model passes the proxy, for any tool
(Claude Code's WebFetch and Read as much as MCP tools): the main real-world
vector of injection (a web page, an issue body, a file). Requests that may
carry a tool result (the substring test of proxy/flow_feed.py) are parsed and
each result is scanned with the one detector (agent/core/mcp/detect_results.py
``check_result``), at most ``results.max_bytes`` of it:

* ``action: alert`` (default) — off the request's path (a task while the
  request goes upstream); an ``mcp_result_injection`` event per finding, once
  per call id and session (the conversation is re-sent every turn);
* ``action: block`` — before the request goes upstream: a flagged result's
  content is replaced by a text the model sees (``[agentsh] tool result
  withheld …``), on every turn the client re-sends it. Verdicts are cached by
  content digest, so a re-sent result is not scanned again.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.dialects import Dialect, dialect_of
from agentsh.proxy.flow_feed import ToolResult, extract_results

log = logging.getLogger("agentsh.proxy")

_CACHE = 4096
_SEEN_PER_SESSION = 4096
_SESSIONS = 1024


def withheld_text(tool: str | None, why: str) -> str:
    return f"[agentsh] tool result of '{tool or 'unknown tool'}' withheld: possible prompt injection ({why})"


class ToolResultInspector:
    def __init__(self, policy: Policy, emit: Callable[[dict[str, Any]], None]) -> None:
        self._emit = emit
        self._detector: Any = None
        self._verdicts: OrderedDict[bytes, Any] = OrderedDict()
        self._alerted: OrderedDict[str, set[str]] = OrderedDict()
        self.scanned = 0
        self.flagged = 0
        self.update_policy(policy)

    def update_policy(self, policy: Policy) -> None:
        insp = policy.mcp.inspection
        self.cfg = insp.results
        self.enabled = insp.enabled and insp.results.enabled
        self.block = self.enabled and insp.results.action == "block"
        self.threshold = insp.detection.alert_threshold
        self._detection = insp.detection
        self._detector = None  # rebuilt lazily with the new detection settings
        self._verdicts.clear()

    def _verdict(self, r: ToolResult) -> Any:
        from agentsh.agent.core.mcp.detect_results import check_result

        text = "\n".join(r.content)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        hit = self._verdicts.get(key)
        if hit is not None:
            self._verdicts.move_to_end(key)
            return hit
        if self._detector is None:
            from agentsh.agent.core.mcp.detector import Detector

            self._detector = Detector(self._detection)
        self.scanned += 1
        v = check_result(
            self._detector, text, server_id=None, tool_name=r.tool_name or "", cfg=self.cfg,
            call_id=r.call_id, source="proxy", threshold=self.threshold,
        )
        self._verdicts[key] = v
        if len(self._verdicts) > _CACHE:
            self._verdicts.popitem(last=False)
        return v

    def scan(self, dialect: Dialect | str, doc: Any, session: str) -> list[tuple[ToolResult, Any]]:
        """Findings of a parsed request (each result scanned, cached by content);
        emits the event of a finding once per call id and session."""
        out: list[tuple[ToolResult, Any]] = []
        for r in extract_results(dialect, doc, self.cfg.max_bytes):
            v = self._verdict(r)
            if v.event is None:
                continue
            out.append((r, v))
            seen = self._alerted.setdefault(session, set())
            self._alerted.move_to_end(session)
            if len(self._alerted) > _SESSIONS:
                self._alerted.popitem(last=False)
            if r.call_id in seen:
                continue
            if len(seen) >= _SEEN_PER_SESSION:
                seen.clear()
            seen.add(r.call_id)
            self.flagged += 1
            ev = v.event.model_copy(update={"session_id": session})
            self._emit(ev.model_dump(mode="json", exclude_none=True))
        return out

    def withhold(self, dialect: Dialect | str, doc: dict[str, Any], found: list[tuple[ToolResult, Any]]) -> int:
        """Replace the content of the flagged results in ``doc``; returns how many."""
        d = dialect_of(dialect)
        if d is None:
            return 0
        return d.withhold(doc, {r.call_id: withheld_text(r.tool_name, _reason(v)) for r, v in found})

    def stats(self) -> dict[str, Any]:
        return {"results_scanned": self.scanned, "results_flagged": self.flagged}


def _reason(v: Any) -> str:
    """Categories only: the model must not read the attacker's words in our
    replacement (the event carries the full why for the operator)."""
    cats = sorted({d.category for d in v.detections if d.severity in ("high", "critical")}) or sorted(
        {d.category for d in v.detections}
    )
    return ", ".join(cats)[:200]
