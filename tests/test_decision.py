"""The MCP decision pipeline: each step, each reason string, step interactions,
and the one event per decision."""

from __future__ import annotations

from typing import Any

import pytest

from agentsh.agent.core.events.models import (
    DetectionResult,
    Event,
    MCPToolCalled,
    MCPToolCallIntercepted,
)
from agentsh.agent.core.mcp.decision import DecisionEngine
from agentsh.agent.core.mcp.hashing import tool_hash
from agentsh.agent.core.mcp.registry import ToolRegistry
from agentsh.agent.core.mcp.types import DecisionRequest
from agentsh.agent.core.policy.schema import Policy


class Clock:
    """A clock the test advances, so rate-limit tests do not depend on timing."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def tool(name: str, desc: str = "does things") -> dict[str, Any]:
    return {"name": name, "description": desc, "inputSchema": {"type": "object"}}


def det(category: str, severity: str) -> DetectionResult:
    return DetectionResult.model_validate(
        {"pattern": category, "category": category, "severity": severity,
         "matches": [{"text": "x", "position": 0, "context": ""}], "field": "description"})


class Rig:
    def __init__(self, mcp: dict[str, Any] | None = None) -> None:
        self.events: list[Event] = []
        self.clock = Clock()
        self.reg = ToolRegistry(None)
        self.engine = DecisionEngine(
            self.reg, Policy.model_validate({"mcp": mcp or {}}), self.events.append, self.clock
        )

    def policy(self, mcp: dict[str, Any]) -> None:
        self.engine.update_policy(Policy.model_validate({"mcp": mcp}))

    def shim(self, name: str, server: str = "fs", **kw: Any):
        return self.engine.decide(DecisionRequest(name, server_id=server, jsonrpc_id=7, **kw))

    def proxy(self, name: str, **kw: Any):
        return self.engine.decide(
            DecisionRequest(name, source="proxy", dialect="anthropic", request_id="req_1",
                            tool_call_id="toolu_1", arguments={"q": 1}, **kw)
        )


@pytest.fixture
def rig() -> Rig:
    r = Rig()
    r.reg.register("fs", "stdio", "", [tool("read_file"), tool("delete_file")])
    r.reg.register("weather", "http", "127.0.0.1:8080", [tool("get_weather")])
    return r


# ------------------------------------------------------------------ allow + events


def test_known_tool_is_allowed_with_shim_event_fields(rig: Rig) -> None:
    d = rig.shim("read_file", arguments={"path": "/tmp/x"}, session_id="s1")
    assert (d.action, d.reason, d.known, d.server_id, d.tool_name) == (
        "allow", "", True, "fs", "read_file")
    assert d.tool_hash == tool_hash(tool("read_file"))
    [ev] = rig.events
    assert isinstance(ev, MCPToolCalled)
    assert (ev.server_id, ev.tool_name, ev.jsonrpc_id, ev.input, ev.action, ev.reason) == (
        "fs", "read_file", 7, {"path": "/tmp/x"}, "allow", None)
    assert (ev.server_type, ev.tool_hash, ev.session_id, ev.source) == (
        "stdio", d.tool_hash, "s1", "shim")


def test_proxy_decision_emits_intercepted_event_with_registry_fields(rig: Rig) -> None:
    d = rig.proxy("mcp__weather__get_weather")
    assert (d.action, d.server_id, d.server_type, d.server_addr, d.tool_name) == (
        "allow", "weather", "http", "127.0.0.1:8080", "get_weather")
    [ev] = rig.events
    assert isinstance(ev, MCPToolCallIntercepted)
    assert (ev.request_id, ev.dialect, ev.tool_name, ev.tool_call_id, ev.input) == (
        "req_1", "anthropic", "mcp__weather__get_weather", "toolu_1", {"q": 1})
    assert (ev.server_id, ev.server_type, ev.server_addr, ev.tool_hash, ev.action) == (
        "weather", "http", "127.0.0.1:8080", d.tool_hash, "allow")


def test_emit_false_suppresses_the_event(rig: Rig) -> None:
    assert rig.shim("read_file", emit=False).action == "allow"
    assert rig.proxy("nope", emit=False).action == "allow"
    assert rig.events == []


# ------------------------------------------------------------------ unknown tools


def test_unknown_tool_from_proxy_is_allowed_silently_when_fail_open(rig: Rig) -> None:
    d = rig.proxy("Bash")
    assert (d.action, d.known, d.reason) == ("allow", False, "")
    assert rig.events == []


def test_unknown_tool_is_blocked_when_fail_closed(rig: Rig) -> None:
    rig.policy({"fail_closed": True})
    d = rig.proxy("Bash")
    assert (d.action, d.reason, d.known) == ("block", "unknown tool, fail closed", False)
    [ev] = rig.events
    assert (ev.action, ev.reason, ev.server_id, ev.tool_hash) == (
        "block", "unknown tool, fail closed", "", "")


def test_shim_call_of_unlisted_tool_on_known_server(rig: Rig) -> None:
    d = rig.shim("secret_tool")
    assert (d.action, d.known, d.server_id, d.server_type) == ("allow", False, "fs", "stdio")
    assert rig.events[-1].action == "allow"  # every shim call is an event
    rig.policy({"fail_closed": True})
    d = rig.shim("secret_tool")
    assert (d.action, d.reason) == ("block", "unknown tool, fail closed")


def test_shim_lookup_is_by_its_own_server_only(rig: Rig) -> None:
    rig.policy({"fail_closed": True})
    assert rig.shim("get_weather", server="fs").reason == "unknown tool, fail closed"
    assert rig.shim("get_weather", server="weather").action == "allow"


def test_tool_the_server_stopped_listing_is_unknown(rig: Rig) -> None:
    rig.reg.register("fs", "stdio", "", [tool("read_file")])
    rig.policy({"fail_closed": True})
    assert rig.shim("delete_file").reason == "unknown tool, fail closed"
    assert rig.proxy("delete_file").reason == "unknown tool, fail closed"


# ------------------------------------------------------------------ server and tool policy


def test_server_denied_by_glob(rig: Rig) -> None:
    rig.policy({"denied_servers": [{"id": "weath*"}]})
    d = rig.proxy("get_weather")
    assert (d.action, d.reason, d.server_id) == ("block", "server denied", "weather")
    assert rig.events[-1].reason == "server denied"
    assert rig.proxy("read_file").action == "allow"


def test_server_allowlist(rig: Rig) -> None:
    rig.policy({"server_policy": "allowlist", "allowed_servers": [{"id": "fs"}]})
    assert rig.proxy("get_weather").reason == "server not in allowlist"
    assert rig.proxy("read_file").action == "allow"


def test_server_check_comes_before_tool_check(rig: Rig) -> None:
    rig.policy({"denied_servers": [{"id": "fs"}], "denied_tools": [{"tool": "delete_*"}]})
    assert rig.shim("delete_file").reason == "server denied"


def test_tool_denied_by_server_and_tool_globs(rig: Rig) -> None:
    rig.policy({"denied_tools": [{"server": "f?", "tool": "delete_*"}]})
    assert rig.shim("delete_file").reason == "tool denied"
    assert rig.shim("read_file").action == "allow"
    rig.policy({"denied_tools": [{"server": "weather", "tool": "delete_*"}]})
    assert rig.shim("delete_file").action == "allow"


def test_tool_rule_with_hash_matches_only_that_definition(rig: Rig) -> None:
    h = tool_hash(tool("read_file"))
    rig.policy({"denied_tools": [{"tool": "read_file", "hash": h.removeprefix("sha256:")}]})
    assert rig.shim("read_file").reason == "tool denied"
    rig.policy({"denied_tools": [{"tool": "read_file", "hash": "sha256:" + "0" * 64}]})
    assert rig.shim("read_file").action == "allow"


def test_tool_allowlist(rig: Rig) -> None:
    rig.policy({"tool_policy": "allowlist", "allowed_tools": [{"server": "fs", "tool": "read_*"}]})
    assert rig.shim("read_file").action == "allow"
    assert rig.shim("delete_file").reason == "tool not in allowlist"
    assert rig.proxy("get_weather").reason == "tool not in allowlist"


def test_denied_server_applies_to_unlisted_shim_tools(rig: Rig) -> None:
    rig.policy({"denied_servers": [{"id": "fs"}]})
    d = rig.shim("never_listed")
    assert (d.action, d.reason, d.known) == ("block", "server denied", False)


# ------------------------------------------------------------------ rate limits


def test_rate_limit_burst_then_block_then_refill(rig: Rig) -> None:
    rig.policy({"rate_limits": {"enabled": True, "per_server": {
        "fs": {"calls_per_minute": 6, "burst": 2}}}})
    assert [rig.shim("read_file").action for _ in range(3)] == ["allow", "allow", "block"]
    assert rig.events[-1].reason == 'rate limit exceeded for server "fs"'
    rig.clock.t += 10.0  # 6/min = one token per 10 s
    assert rig.shim("read_file").action == "allow"
    assert rig.shim("read_file").action == "block"


def test_blocked_calls_do_not_consume_tokens(rig: Rig) -> None:
    rig.policy({"rate_limits": {"enabled": True, "per_server": {
        "fs": {"calls_per_minute": 6, "burst": 1}}}})
    assert rig.shim("read_file").action == "allow"
    for _ in range(20):  # rate-limited calls: no token left to take
        assert rig.shim("read_file").action == "block"
    rig.clock.t += 10.0
    assert rig.shim("read_file").action == "allow"


def test_denied_tool_does_not_consume_a_token(rig: Rig) -> None:
    rig.policy({"denied_tools": [{"tool": "delete_file"}], "rate_limits": {
        "enabled": True, "per_server": {"fs": {"calls_per_minute": 6, "burst": 1}}}})
    for _ in range(5):
        assert rig.shim("delete_file").reason == "tool denied"
    assert rig.shim("read_file").action == "allow"


def test_default_rpm_applies_per_server_and_burst_defaults_to_rpm(rig: Rig) -> None:
    rig.policy({"rate_limits": {"enabled": True, "default_rpm": 3}})
    assert [rig.shim("read_file").action for _ in range(4)] == [
        "allow", "allow", "allow", "block"]
    # another server has its own bucket
    assert rig.proxy("get_weather").action == "allow"
    rig.policy({"rate_limits": {"enabled": False, "default_rpm": 3}})
    assert rig.shim("read_file").action == "allow"


def test_rate_limit_comes_before_pin_check(rig: Rig) -> None:
    rig.reg.register("fs", "stdio", "", [tool("read_file", "changed"), tool("delete_file")])
    rig.policy({"version_pinning": {"on_change": "block"}, "rate_limits": {
        "enabled": True, "per_server": {"fs": {"calls_per_minute": 6, "burst": 1}}}})
    assert rig.shim("read_file").reason.startswith('tool "read_file" hash changed')
    assert rig.shim("read_file").reason == 'rate limit exceeded for server "fs"'


# ------------------------------------------------------------------ version pins


def test_pin_change_blocks_with_both_hashes(rig: Rig) -> None:
    old = tool_hash(tool("read_file"))
    rig.reg.register("fs", "stdio", "", [tool("read_file", "evil"), tool("delete_file")])
    new = tool_hash(tool("read_file", "evil"))
    rig.policy({"version_pinning": {"on_change": "block"}})
    d = rig.proxy("read_file")
    assert d.action == "block"
    assert d.reason == f'tool "read_file" hash changed (pinned: {old}, current: {new})'
    assert rig.events[-1].reason == d.reason and rig.events[-1].tool_hash == new


def test_pin_change_alert_allows_with_alert_reason(rig: Rig) -> None:
    rig.reg.register("fs", "stdio", "", [tool("read_file", "evil"), tool("delete_file")])
    rig.policy({"version_pinning": {"on_change": "alert"}})
    d = rig.shim("read_file")
    assert d.action == "allow"
    assert d.alerts == ['tool "read_file" hash changed (alert only)']
    assert rig.events[-1].reason == 'tool "read_file" hash changed (alert only)'
    assert rig.events[-1].action == "allow"


@pytest.mark.parametrize("mcp", [
    {"version_pinning": {"on_change": "allow"}},
    {"version_pinning": {"enabled": False, "on_change": "block"}},
])
def test_pin_change_ignored_when_allow_or_disabled(rig: Rig, mcp: dict[str, Any]) -> None:
    rig.reg.register("fs", "stdio", "", [tool("read_file", "evil"), tool("delete_file")])
    rig.policy(mcp)
    d = rig.shim("read_file")
    assert (d.action, d.reason, d.alerts) == ("allow", "", [])


def test_approval_lifts_pin_block(rig: Rig) -> None:
    rig.reg.register("fs", "stdio", "", [tool("read_file", "new"), tool("delete_file")])
    rig.policy({"version_pinning": {"on_change": "block"}})
    assert rig.shim("read_file").action == "block"
    rig.reg.approve("fs", "read_file", "admin")
    assert rig.shim("read_file").action == "allow"


# ------------------------------------------------------------------ detections


def test_detection_block_reaching_threshold(rig: Rig) -> None:
    rig.reg.register("bad", "stdio", "", [tool("helper")],
                     {"helper": [det("shell_injection", "medium"), det("credential_theft", "critical")]})
    rig.policy({"inspection": {"on_detection": {"action": "block"}}})
    d = rig.proxy("helper")
    assert (d.action, d.reason) == ("block", "tool definition flagged: credential_theft (critical)")
    rig.policy({"inspection": {"on_detection": {"action": "alert"}}})
    assert rig.proxy("helper").action == "allow"


def test_detection_below_threshold_does_not_block(rig: Rig) -> None:
    rig.reg.register("meh", "stdio", "", [tool("helper")], {"helper": [det("path_traversal", "medium")]})
    rig.policy({"inspection": {"on_detection": {"action": "block"}}})
    assert rig.proxy("helper").action == "allow"
    rig.policy({"inspection": {"on_detection": {"action": "block"},
                               "detection": {"alert_threshold": "medium"}}})
    assert rig.proxy("helper").reason == "tool definition flagged: path_traversal (medium)"


def test_approval_lifts_detection_block_until_hash_changes(rig: Rig) -> None:
    dets = {"helper": [det("exfiltration", "high")]}
    rig.reg.register("bad", "stdio", "", [tool("helper")], dets)
    rig.policy({"inspection": {"on_detection": {"action": "block"}}})
    rig.reg.approve("bad", "helper", "admin")
    assert rig.proxy("helper").action == "allow"
    rig.reg.register("bad", "stdio", "", [tool("helper", "v2")], dets)
    assert rig.proxy("helper").reason == "tool definition flagged: exfiltration (high)"


# ------------------------------------------------------------------ enforce_policy, names


def test_enforce_policy_false_reports_would_block(rig: Rig) -> None:
    rig.policy({"enforce_policy": False, "denied_tools": [{"tool": "delete_file"}],
                "fail_closed": True})
    d = rig.shim("delete_file")
    assert (d.action, d.reason) == ("allow", "would block: tool denied")
    assert (rig.events[-1].action, rig.events[-1].reason) == ("allow", "would block: tool denied")
    d = rig.proxy("Bash")
    assert (d.action, d.reason) == ("allow", "would block: unknown tool, fail closed")
    assert rig.engine.stats()["would_block"] == 2 and rig.engine.stats()["block"] == 0


def test_ambiguous_bare_name_blocks_if_any_candidate_blocks(rig: Rig) -> None:
    rig.reg.register("other", "stdio", "", [tool("read_file", "other impl")])
    rig.policy({"denied_servers": [{"id": "other"}]})
    d = rig.proxy("read_file")
    assert (d.action, d.reason, d.server_id) == ("block", "server denied", "other")
    # the prefixed name picks the server: allowed
    assert rig.proxy("mcp__fs__read_file").action == "allow"
    rig.policy({})
    d = rig.proxy("read_file")
    assert d.action == "allow"
    assert d.alerts == ['ambiguous tool name "read_file": provided by servers "fs", "other"']


def test_ambiguous_name_rate_limit_is_all_or_nothing(rig: Rig) -> None:
    rig.reg.register("other", "stdio", "", [tool("read_file")])
    rig.policy({"rate_limits": {"enabled": True, "per_server": {
        "fs": {"calls_per_minute": 60, "burst": 5}, "other": {"calls_per_minute": 6, "burst": 1}}}})
    assert rig.proxy("read_file").action == "allow"
    assert rig.proxy("read_file").reason == 'rate limit exceeded for server "other"'
    # fs kept its tokens: 4 left after the one allowed call
    assert [rig.shim("read_file").action for _ in range(5)] == ["allow"] * 4 + ["block"]


def test_policy_reload_replaces_cached_rule_results(rig: Rig) -> None:
    assert rig.shim("delete_file").action == "allow"
    rig.policy({"denied_tools": [{"tool": "delete_file"}]})
    assert rig.shim("delete_file").reason == "tool denied"
    rig.policy({})
    assert rig.shim("delete_file").action == "allow"


def test_decision_counts(rig: Rig) -> None:
    rig.policy({"denied_tools": [{"tool": "delete_file"}]})
    rig.shim("read_file")
    rig.shim("delete_file")
    rig.proxy("Bash")
    st = rig.engine.stats()
    assert (st["allow"], st["block"], st["unknown"]) == (2, 1, 1)
