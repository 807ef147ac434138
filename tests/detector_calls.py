"""Counting the real detector's inspections behind an MCPService (which definitions it was
actually run on, as against answered from a cache)."""

from __future__ import annotations

from agentsh.agent.core.mcp.service import MCPService


def count_inspections(svc: MCPService) -> list[str]:
    """The names of the tools the service's detector inspects from now on, in order."""
    calls: list[str] = []
    real = svc._inspector.detector.inspect

    def counting(tool, peers=(), **kw):
        calls.append(tool["name"])
        return real(tool, peers=peers, **kw)

    svc._inspector.detector.inspect = counting
    return calls
