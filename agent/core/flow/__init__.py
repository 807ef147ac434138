"""Data-flow security core (docs/flow.md): classification of tools and
MCP servers, content fingerprints of tool responses, per-session flow tracking
and the flow policy. Pure: no I/O; callers (daemon, shim, proxy, hook
endpoint) feed it responses and ask it about calls."""

from agentsh.agent.core.flow.classify import ClassificationResult, Classifier, split_mcp_name
from agentsh.agent.core.flow.engine import FlowEngine, FlowVerdict, OriginRef, RecordResult
from agentsh.agent.core.flow.shell import ShellAnalysis, analyze

__all__ = [
    "ClassificationResult",
    "Classifier",
    "FlowEngine",
    "FlowVerdict",
    "OriginRef",
    "RecordResult",
    "ShellAnalysis",
    "analyze",
    "split_mcp_name",
]
