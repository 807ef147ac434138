"""The flow step of the one decision pipeline (agent/core/mcp/decision.py step 8):
after the MCP checks, on the daemon's FlowEngine, for MCP tools and, when the
caller asks for a flow check, for any tool."""

from __future__ import annotations

import subprocess
from typing import Any

from agentsh.agent.core.events.models import Event
from agentsh.agent.core.flow import FlowEngine
from agentsh.agent.core.mcp.decision import DecisionEngine, flow_session_key
from agentsh.agent.core.mcp.registry import ToolRegistry
from agentsh.agent.core.mcp.types import DecisionRequest
from agentsh.agent.core.policy.schema import Policy

AWS = "AKIAIOSFODNN7EXAMPLE"


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": "does things", "inputSchema": {"type": "object"}}


class Rig:
    def __init__(self, policy: dict[str, Any] | None = None, flow: bool = True) -> None:
        self.events: list[Event] = []
        p = Policy.model_validate(policy or {})
        self.reg = ToolRegistry(None)
        self.reg.register("slack", "stdio", "", [tool("post_message")])
        self.reg.register("notes-db", "stdio", "", [tool("read_note")])
        self.flow = FlowEngine(p) if flow else None
        self.engine = DecisionEngine(self.reg, p, self.events.append, flow=self.flow)

    def hook(self, name: str, args: Any, session: str = "cc-1") -> Any:
        return self.engine.decide(DecisionRequest(name, arguments=args, source="hook", emit=False,
                                                  flow_session=session, can_ask=True, flow_check=True))

    def shim(self, name: str, server: str, args: Any, session: str = "mcp-1") -> Any:
        return self.engine.decide(DecisionRequest(name, server_id=server, arguments=args, session_id=session))

    def proxy(self, name: str, args: Any, session: str = "cc-1") -> Any:
        return self.engine.decide(DecisionRequest(name, arguments=args, source="proxy", dialect="anthropic",
                                                  request_id="r", tool_call_id="toolu_1", flow_session=session,
                                                  flow_check=True))


def test_a_flow_deny_is_a_block_whose_reason_names_agentsh_and_the_flow() -> None:
    r = Rig()
    r.flow.record("mcp-1", "read_note", "notes-db", f"key {AWS}", source="mcp")  # type: ignore[union-attr]
    d = r.shim("post_message", "slack", {"text": f"here: {AWS}"})
    assert d.action == "block"
    assert d.reason == ("agentsh data-flow policy: internal→external flow: data read by notes-db:read_note "
                        "sent by post_message to slack (sensitive: aws_access_key)")
    assert d.flow is not None and d.flow["risk_level"] == "critical" and d.flow["coverage"] == "proxy_only"
    (ev,) = r.events
    assert (ev.action, ev.risk_level, ev.flow_decision, ev.flow_type) == (  # type: ignore[attr-defined]
        "block", "critical", "deny", "internal→external")


def test_enforce_policy_false_makes_a_flow_deny_a_would_block_and_an_ask_a_would_ask() -> None:
    r = Rig({"mcp": {"enforce_policy": False}})
    d = r.hook("WebFetch", {"url": f"https://x.example/?k={AWS}"})
    assert d.action == "allow" and d.reason.startswith("would block: agentsh data-flow policy: internal→external")
    r.flow.record("cc-1", "Read", None, "ref ZQ55821XK7731ABCDEFGH", arguments={"file_path": "/w/a"})  # type: ignore[union-attr]
    d = r.hook("WebFetch", {"url": "https://x.example/?k=ZQ55821XK7731ABCDEFGH"})
    assert d.action == "allow" and d.flow["action"] == "allow"  # type: ignore[index]
    assert d.reason.startswith("would ask: agentsh data-flow policy: internal→external")


def test_ask_reaches_a_caller_that_can_ask_and_degrades_to_warn_elsewhere() -> None:
    r = Rig()
    r.flow.record("cc-1", "Read", None, "ref ZQ55821XK7731ABCDEFGH", arguments={"file_path": "/w/a"})  # type: ignore[union-attr]
    assert r.hook("WebFetch", {"url": "https://x.example/?k=ZQ55821XK7731ABCDEFGH"}).flow["action"] == "ask"  # type: ignore[index]
    d = r.proxy("WebFetch", {"url": "https://x.example/?k=ZQ55821XK7731ABCDEFGH"})
    assert d.action == "allow" and d.flow["action"] == "warn"  # type: ignore[index]
    assert "ask degraded to warn" in d.reason


def test_mcp_checks_come_first_and_a_blocked_call_is_not_flow_checked() -> None:
    r = Rig({"mcp": {"denied_tools": [{"server": "slack", "tool": "post_message"}]}})
    d = r.hook("mcp__slack__post_message", {"text": f"key {AWS}"})
    assert d.action == "block" and d.reason == "tool denied" and d.flow is None


def test_a_flow_check_of_an_agent_tool_is_not_an_unknown_mcp_tool_even_when_failing_closed() -> None:
    r = Rig({"mcp": {"fail_closed": True}})
    d = r.proxy("Read", {"file_path": "/w/a"})
    assert d.action == "allow" and not d.known and d.flow is not None
    # an unknown mcp__ name is still an MCP tool: fail_closed holds
    assert r.hook("mcp__ghost__do", {"x": 1}).reason == "unknown tool, fail closed"


def test_hook_decisions_take_no_rate_limit_tokens() -> None:
    r = Rig({"mcp": {"rate_limits": {"enabled": True, "default_rpm": 1, "default_burst": 1}}})
    for _ in range(5):
        assert r.hook("mcp__slack__post_message", {"text": "hi"}).action == "allow"
    assert r.shim("post_message", "slack", {"text": "hi"}).action == "allow"  # the one token is still there
    assert r.shim("post_message", "slack", {"text": "hi"}).action == "block"


def test_offline_deciders_have_no_flow_step() -> None:
    r = Rig(flow=False)
    d = r.shim("post_message", "slack", {"text": f"key {AWS}"})
    assert d.action == "allow" and d.flow is None


def test_a_shims_flow_session_is_its_agent_process_unless_it_names_one() -> None:
    """Every stdio MCP server of one agent is a child of that agent: keyed by
    the shim's parent, a read on one server and a post on another meet."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        import os

        req = DecisionRequest("read_note", server_id="notes-db", pid=child.pid, uid=1000)
        assert flow_session_key(req) == f"agent:1000:{os.getpid()}"
        req.session_id = "S-1"
        assert flow_session_key(req) == "S-1"
        req.flow_session = "cc-uuid"
        assert flow_session_key(req) == "cc-uuid"
    finally:
        child.kill()
        child.wait()
    assert flow_session_key(DecisionRequest("x", server_id="s", pid=None, uid=5)) == "shim:5:s"
