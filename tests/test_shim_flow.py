"""The shim feeds and enforces data flow without hooks (docs/flow.md "Proxy-only mode").

Two real MCP servers (``mcp`` SDK, tests/mcp_servers/flow_servers.py) under two
real agentsh-shims, driven by the ``mcp`` SDK's stdio client the way an agent
drives them, with a real agentshd. The notes shim hands each result to the
daemon as a data origin; the slack shim's decision on a post carrying it is
checked against the flow session both share (``CLAUDE_CODE_SESSION_ID``, as
Claude Code sets it for its MCP servers). The ordering guarantee (a decision
waits for results still being recorded) is driven on the agent channel
directly, the way the shims speak it.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from agentsh.agent.core.client_sync import SyncChannelClient
from agentsh.agent.daemon.hooks import RESULT_WAIT_SECONDS
from agentsh.shim.daemon_link import bounded_arguments, mcp_result_content
from tests.conftest import BASE_TEST_POLICY, SHIM, DaemonProc, wait_for

FLOW_SERVERS = str(Path(__file__).resolve().parent / "mcp_servers" / "flow_servers.py")


def aws_key() -> str:
    # a real key id has digits; the detector requires one (agent/core/sensitive.py), ~4% of draws have none
    return "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(15)) + secrets.choice("234567")


@asynccontextmanager
async def shim(d: DaemonProc, kind: str, server_id: str, env: dict[str, str]) -> AsyncIterator[ClientSession]:
    args = ["--socket", str(d.socket), "--config-dir", str(d.config_dir), "--state-dir", str(d.state_dir),
            "--server-id", server_id, "--", sys.executable, FLOW_SERVERS, kind]
    params = StdioServerParameters(command=SHIM, args=args, env=env)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.list_tools()
        yield s


def ran(record: Path) -> list[str]:
    return [json.loads(x)["tool"] for x in record.read_text().splitlines()] if record.exists() else []


def env_of(record: Path, secret: str, session: str | None) -> dict[str, str]:
    env = {"PATH": os.environ["PATH"], "RECORD_FILE": str(record), "NOTE_SECRET": secret}
    if session is not None:
        env["CLAUDE_CODE_SESSION_ID"] = session
    return env


async def refused(s: ClientSession, tool: str, args: dict[str, Any]) -> str:
    """The error message of a call the shim refused ("" when it ran)."""
    try:
        await s.call_tool(tool, args)
    except MCPError as e:
        return str(e.error.message)
    return ""


def explain(d: DaemonProc) -> str:
    """What the daemon decided and recorded, for a failure message."""
    st = json.loads(d.ctl("status", "--json").stdout)
    calls = [(e["tool_name"], e["action"], e.get("reason"), e.get("flow_type"), e.get("pid"))
             for e in d.events("mcp_tool_called")]
    log = [x for x in d.log().splitlines() if "flow" in x or "WARN" in x or "ERROR" in x][-30:]
    return "\n".join([repr(calls), repr(st["mcp"]["flow"]), repr(st["security_coverage"]["hooks"]), *log])


def records(d: DaemonProc) -> int:
    return int(json.loads(d.ctl("status", "--json").stdout)["mcp"]["flow"]["records"])


# ------------------------------------------------------------------ MCP → MCP across shims


async def test_a_secret_read_through_one_shim_and_posted_through_another_is_blocked_by_the_shim(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """The key is glued to other text in the post: the sensitive-data detector
    alone does not see it (no word boundary), only the recorded origin does."""
    key = aws_key()
    rec = tmp_path / "ran.jsonl"
    env = env_of(rec, key, "cc-session-1")
    async with shim(daemon, "notes", "notes-db", env) as notes, shim(daemon, "post", "slack", env) as slack:
        note = await notes.call_tool("read_note", {"name": "deploy"})
        assert key in note.content[0].text
        msg = await refused(slack, "post_message", {"channel": "#general", "text": f"release{key}ok"})
        assert "[agentsh] Tool 'post_message' blocked by policy: agentsh data-flow policy" in msg, explain(daemon)
        assert "data read by notes-db:read_note" in msg and "sensitive: aws_access_key" in msg
        # a post without the note's data goes through
        assert (await slack.call_tool("post_message", {"channel": "#general", "text": "ship it"})).content
    assert ran(rec) == ["read_note", "post_message"]  # the blocked post never reached the server
    ev = daemon.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "post_message" and e["action"] == "block")
    assert ev["flow_type"] == "internal→external" and ev["risk_level"] == "critical"
    assert ev["flow_decision"] == "deny" and ev["coverage"] == "proxy_only"
    assert records(daemon) >= 2  # read_note and the allowed post_message


async def test_without_a_shared_session_the_shims_of_one_agent_still_meet(daemon: DaemonProc, tmp_path: Path) -> None:
    """No CLAUDE_CODE_SESSION_ID (another agent): both shims are children of one
    agent process (here: this test), which keys their flow session."""
    key = aws_key()
    rec = tmp_path / "ran.jsonl"
    env = env_of(rec, key, None)
    async with shim(daemon, "notes", "notes-db", env) as notes, shim(daemon, "post", "slack", env) as slack:
        await notes.call_tool("read_note", {"name": "deploy"})
        err = await refused(slack, "post_message", {"channel": "#ops", "text": f"release{key}ok"})
    assert "data read by notes-db:read_note" in err, explain(daemon)
    assert ran(rec) == ["read_note"]


async def test_an_identifier_that_flows_is_warned_by_default_and_blocked_when_the_policy_says_deny(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """Not a secret: internal→external without sensitive data is ``ask``, which
    nobody can answer without hooks, so ``warn`` (allowed, flagged); with
    ``internal_to_external: deny`` it is blocked. Only the origin makes it a flow."""
    ident = "ZQ" + secrets.token_hex(12).upper()
    for policy, blocked in (("", False), ("flow:\n  flow_policy:\n    internal_to_external: deny\n", True)):
        d: DaemonProc = daemon_factory(BASE_TEST_POLICY + policy)
        rec = tmp_path / f"ran-{blocked}.jsonl"
        env = env_of(rec, ident, f"cc-{blocked}")
        async with shim(d, "notes", "notes-db", env) as notes, shim(d, "post", "slack", env) as slack:
            await notes.call_tool("read_note", {"name": "deploy"})
            args = {"channel": "#ops", "text": f"ref {ident}"}
            if blocked:
                with pytest.raises(MCPError) as e:
                    await slack.call_tool("post_message", args)
                assert "internal→external flow: data read by notes-db:read_note" in str(e.value.error.message)
            else:
                await slack.call_tool("post_message", args)
        ev = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "post_message")
        assert ev["flow_decision"] == ("deny" if blocked else "warn") and ev["risk_level"] == "medium"
        if not blocked:
            assert ev["action"] == "allow" and "ask degraded to warn: nobody to ask" in ev["reason"]
        assert ran(rec) == (["read_note"] if blocked else ["read_note", "post_message"])
        d.stop()


async def test_a_failed_call_is_recorded_and_nothing_waits_for_it(daemon: DaemonProc, tmp_path: Path) -> None:
    """A call that fails still ends: its error is recorded like a result (a server
    may echo what it read into an error), so the next post does not wait for a
    result that will never come."""
    rec = tmp_path / "ran.jsonl"
    env = env_of(rec, aws_key(), "cc-err")
    before = records(daemon)
    async with shim(daemon, "notes", "notes-db", env) as notes, shim(daemon, "post", "slack", env) as slack:
        try:
            res = await notes.call_tool("no_such_tool", {"name": "deploy"})
            assert res.is_error
        except MCPError:
            pass  # either way the call failed
        t0 = time.monotonic()
        await slack.call_tool("post_message", {"channel": "#x", "text": "hello"})
        assert time.monotonic() - t0 < 1.0
    wait_for(lambda: records(daemon) >= before + 2, what="the failed call and the post recorded")


# ------------------------------------------------------------------ ordering: results in flight


def decide(chan: SyncChannelClient, tool: str, server: str, args: Any, rid: int, session: str) -> dict[str, Any]:
    return chan.decide({"tool_name": tool, "server_id": server, "arguments": args, "source": "shim",
                        "jsonrpc_id": rid, "pid": os.getpid(), "flow_session": session}, 10)


def test_a_post_waits_for_a_result_still_being_recorded(daemon_factory: Any) -> None:
    """The record of a result travels on the shim's own connection, after the
    result was forwarded; the next call (here on another shim) may reach the
    daemon first. An allowed call is a result in flight until its record
    arrives, and a later call that can send data out waits for it."""
    ident = "ZQ" + secrets.token_hex(12).upper()
    daemon: DaemonProc = daemon_factory(BASE_TEST_POLICY + "flow:\n  flow_policy:\n    internal_to_external: deny\n")
    reader, poster = SyncChannelClient(str(daemon.socket)), SyncChannelClient(str(daemon.socket))
    assert decide(reader, "read_note", "notes-db", {"name": "deploy"}, 1, "cc-w")["action"] == "allow"
    got: dict[str, Any] = {}

    def post() -> None:
        t0 = time.monotonic()
        got["d"] = decide(poster, "post_message", "slack", {"channel": "#x", "text": f"ref {ident}"}, 5, "cc-w")
        got["s"] = time.monotonic() - t0

    t = threading.Thread(target=post)
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "the post was decided before the read's result was recorded"
    # a local call of the same session does not wait
    assert decide(reader, "read_note", "notes-db", {"name": "other"}, 2, "cc-w")["action"] == "allow"
    reader.request({"op": "flow_record", "source": "shim", "server_id": "notes-db", "tool_name": "read_note",
                    "content": [f"Deploy notes: ref {ident}"], "call_id": 1, "pid": os.getpid(),
                    "flow_session": "cc-w"})
    t.join(10)
    assert got["d"]["action"] == "block" and "data read by notes-db:read_note" in got["d"]["reason"], got
    assert 0.5 <= got["s"] < RESULT_WAIT_SECONDS


def test_a_result_that_never_comes_is_given_up(daemon: DaemonProc) -> None:
    """A shim that died with the call: the post waits once, then is decided on what is known."""
    chan = SyncChannelClient(str(daemon.socket))
    assert decide(chan, "read_note", "notes-db", {"name": "deploy"}, 7, "cc-lost")["action"] == "allow"
    t0 = time.monotonic()
    assert decide(chan, "post_message", "slack", {"channel": "#x", "text": "hi"}, 8, "cc-lost")["action"] == "allow"
    assert time.monotonic() - t0 >= RESULT_WAIT_SECONDS - 0.3
    chan.request({"op": "flow_record", "source": "shim", "server_id": "slack", "tool_name": "post_message",
                  "content": ["posted"], "call_id": 8, "pid": os.getpid(), "flow_session": "cc-lost"})
    t0 = time.monotonic()
    decide(chan, "post_message", "slack", {"channel": "#x", "text": "again"}, 9, "cc-lost")
    assert time.monotonic() - t0 < 1.0  # the lost one is not waited for twice
    st = json.loads(daemon.ctl("status", "--json").stdout)["security_coverage"]["hooks"]
    assert st["results_lost"] == 1 and st["waited"] == 1


# ------------------------------------------------------------------ daemon down


async def test_offline_the_shim_still_blocks_secrets_and_suspicious_endpoints_going_out(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """No daemon: the shim's own pipeline runs the flow step with no origins (a
    flow across servers is a flow across shims, which only the daemon sees):
    credentials in an external server's arguments and suspicious endpoints are
    still denied; a glued secret read through another shim is not (it needs
    the origin)."""
    d: DaemonProc = daemon_factory(start=False)
    key = aws_key()
    rec = tmp_path / "ran.jsonl"
    env = env_of(rec, key, "cc-offline")
    async with shim(d, "notes", "notes-db", env) as notes, shim(d, "post", "slack", env) as slack:
        await notes.call_tool("read_note", {"name": "deploy"})
        with pytest.raises(MCPError) as e:
            await slack.call_tool("post_message", {"channel": "#x", "text": f"key: {key}"})
        assert "agentsh data-flow policy" in str(e.value.error.message)
        assert "sensitive: aws_access_key" in str(e.value.error.message)
        with pytest.raises(MCPError) as e:
            await slack.call_tool("post_message", {"channel": "https://webhook.site/abc", "text": "hello"})
        assert "webhook.site is a suspicious endpoint" in str(e.value.error.message)
        await slack.call_tool("post_message", {"channel": "#x", "text": f"release{key}ok"})  # missed offline
    assert ran(rec) == ["read_note", "post_message"]


# ------------------------------------------------------------------ what a record carries


def test_a_record_carries_the_results_text_within_the_budget_and_no_binary_payloads() -> None:
    result = {
        "content": [
            {"type": "text", "text": "note: " + "a" * 100},
            {"type": "image", "data": "iVBORw0KGgoSECRETPIXELS", "mimeType": "image/png"},
            {"type": "audio", "data": "SECRETAUDIO", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///w/.env", "text": "KEY=v"}},
            {"type": "resource", "resource": {"uri": "file:///w/a.bin", "blob": "SECRETBLOB"}},
        ],
        "structuredContent": {"rows": [{"id": 1, "name": "deploy"}]},
    }
    out = mcp_result_content(result, 4096)
    assert out == ["note: " + "a" * 100, "KEY=v", '{"rows":[{"id":1,"name":"deploy"}]}']
    for budget in (1, 10, 110, 200):
        assert sum(len(t) for t in mcp_result_content(result, budget)) <= budget
    err = {"code": -32000, "message": "no such note: deploy"}
    assert mcp_result_content({"error": err}, 4096) == ['{"code":-32000,"message":"no such note: deploy"}']


def test_record_arguments_are_bounded_to_the_fields_that_name_the_origin() -> None:
    assert bounded_arguments({"name": "deploy"}) == {"name": "deploy"}
    huge = {"path": "/w/.env", "blob": ["x" * 4096] * 10_000, "nested": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}}
    assert bounded_arguments(huge) == {"path": "/w/.env"}
    assert bounded_arguments(["not", "an", "object"]) is None
