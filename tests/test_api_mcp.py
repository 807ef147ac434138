"""The MCP control-API routes and `agentshctl mcp` against a real agentshd."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from agentsh.agent.core.client_async import ChannelClient, ControlClient, ControlError, channel_path
from agentsh.agent.core.mcp.hashing import tool_hash
from agentsh.agent.ctl.mcp import mcp as mcp_cli
from tests.conftest import BASE_TEST_POLICY, DaemonProc, short_tmpdir, wait_for

POLICY = BASE_TEST_POLICY + """
mcp:
  denied_tools:
    - server: "*"
      tool: execute_command
  version_pinning:
    on_change: block
  rate_limits:
    enabled: true
    default_rpm: 1000
    per_server:
      limited:
        calls_per_minute: 6
        burst: 2
"""


def tool(name: str, desc: str = "does things") -> dict[str, Any]:
    return {"name": name, "description": desc,
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}


def _proc(root: Path) -> DaemonProc:
    d = DaemonProc(
        root=root,
        config_dir=root / "etc",
        state_dir=root / "lib",
        events_path=root / "log" / "events.jsonl",
        socket=root / "run" / "agentsh.sock",
        log_path=root / "log" / "agentshd.log",
    )
    d.config_dir.mkdir(parents=True, exist_ok=True)
    d.write_policy(POLICY)
    return d


@pytest.fixture(scope="module")
def agentshd() -> Iterator[DaemonProc]:
    root = short_tmpdir()
    d = _proc(root).start()
    yield d
    d.stop()
    shutil.rmtree(root, ignore_errors=True)


async def post(d: DaemonProc, path: str, payload: Any) -> Any:
    async with ControlClient(str(d.socket)) as c:
        return await c.post(path, payload)


async def post_admin(d: DaemonProc, path: str, payload: Any) -> Any:
    async with ControlClient(str(d.admin_socket)) as c:
        return await c.post(path, payload)


async def decide(d: DaemonProc, request: dict[str, Any]) -> Any:
    """A decision on the line channel (the one decision transport)."""
    c = ChannelClient(channel_path(d.socket))
    try:
        return await c.decide(request)
    finally:
        await c.close()


async def get(d: DaemonProc, path: str) -> Any:
    async with ControlClient(str(d.socket)) as c:
        return await c.get(path)


async def cli(d: DaemonProc, *args: str) -> Any:
    """Run `agentshctl mcp ...` (it runs its own event loop: use a thread)."""
    return await asyncio.to_thread(
        CliRunner().invoke, mcp_cli, list(args), obj={"socket": str(d.socket), "admin_socket": str(d.admin_socket)}
    )


async def test_register_then_decide_over_the_socket(agentshd: DaemonProc) -> None:
    res = await post(agentshd, "/v1/mcp/tools", {
        "server_id": "filesystem", "server_type": "stdio", "session_id": "sess-a",
        "tools": [tool("read_file"), tool("execute_command")]})
    assert [(v["name"], v["status"], v["blocked"]) for v in res["tools"]] == [
        ("read_file", "new", False), ("execute_command", "new", False)]
    assert res["tools"][0]["hash"] == tool_hash(tool("read_file"))
    seen = agentshd.wait_event("mcp_tool_seen", lambda e: e["tool_name"] == "read_file")
    assert (seen["server_id"], seen["session_id"], seen["status"]) == (
        "filesystem", "sess-a", "new")

    d = await decide(agentshd, {
        "tool_name": "read_file", "server_id": "filesystem", "jsonrpc_id": 3,
        "arguments": {"q": "x"}, "session_id": "sess-a"})
    assert (d["action"], d["known"], d["tool_hash"]) == ("allow", True, tool_hash(tool("read_file")))
    d = await decide(agentshd, {
        "tool_name": "mcp__filesystem__execute_command", "source": "proxy",
        "dialect": "anthropic", "request_id": "req_9", "tool_call_id": "toolu_9",
        "arguments": {"cmd": "id"}})
    assert (d["action"], d["reason"], d["tool_name"]) == ("block", "tool denied", "execute_command")
    ev = agentshd.wait_event("mcp_tool_call_intercepted", lambda e: e["request_id"] == "req_9")
    assert (ev["action"], ev["reason"], ev["server_id"], ev["input"]) == (
        "block", "tool denied", "filesystem", {"cmd": "id"})
    called = agentshd.wait_event("mcp_tool_called", lambda e: e.get("jsonrpc_id") == 3)
    assert (called["action"], called["tool_name"], called["input"]) == (
        "allow", "read_file", {"q": "x"})


async def test_decisions_of_unknown_and_known_tools(agentshd: DaemonProc) -> None:
    res = [await decide(agentshd, r) for r in (
        {"tool_name": "Bash", "source": "proxy", "dialect": "openai", "request_id": "r",
         "tool_call_id": "c1"},
        {"tool_name": "read_file", "source": "proxy", "dialect": "openai", "request_id": "r",
         "tool_call_id": "c2", "emit": False},
    )]
    assert [(x["action"], x["known"]) for x in res] == [("allow", False), ("allow", True)]


async def test_there_is_no_http_decision_endpoint(agentshd: DaemonProc) -> None:
    """Decisions travel on the channel only (it holds a call back until its
    flow session's results are recorded; an HTTP twin would not)."""
    with pytest.raises(ControlError) as ei:
        await post(agentshd, "/v1/mcp/decide", {"tool_name": "read_file", "server_id": "filesystem"})
    assert ei.value.status == 404


@pytest.mark.parametrize(("payload", "msg"), [
    ({}, "tool_name"),
    ({"tool_name": 5}, "tool_name"),
    ({"tool_name": "t", "bogus": 1}, "unknown field(s): bogus"),
    ({"tool_name": "t", "server_id": 7}, "server_id must be a string"),
    ({"tool_name": "t", "source": "proxy"}, "dialect is required for source 'proxy'"),
    ({"tool_name": "t", "pid": True}, "pid must be an integer"),
    ({"tool_name": "t", "emit": "no"}, "emit must be a boolean"),
])
async def test_decide_rejects_bad_input_with_400(
    agentshd: DaemonProc, payload: Any, msg: str
) -> None:
    with pytest.raises(ControlError) as ei:
        await decide(agentshd, payload)
    assert ei.value.status == 400
    assert msg in ei.value.body["error"]


async def test_invalid_json_is_400(agentshd: DaemonProc) -> None:
    import aiohttp

    conn = aiohttp.UnixConnector(path=str(agentshd.socket))
    async with aiohttp.ClientSession(connector=conn) as s, s.post(
        "http://x/v1/mcp/tools", data=b"{nope"
    ) as r:
        assert r.status == 400
        assert "invalid JSON" in (await r.json())["error"]


@pytest.mark.parametrize(("payload", "msg"), [
    ({"server_type": "stdio", "tools": []}, "server_id"),
    ({"server_id": "s", "server_type": "ftp", "tools": []}, "server_type"),
    ({"server_id": "s", "tools": [{"description": "x"}]}, "tools[0]"),
    ({"server_id": "s", "tools": {}}, "tools"),
])
async def test_register_rejects_bad_input_with_400(
    agentshd: DaemonProc, payload: Any, msg: str
) -> None:
    with pytest.raises(ControlError) as ei:
        await post(agentshd, "/v1/mcp/tools", payload)
    assert ei.value.status == 400 and msg in ei.value.body["error"]


async def test_rate_limit_over_the_socket(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "limited", "tools": [tool("ping")]})
    actions = []
    for _ in range(4):
        d = await decide(agentshd, {"tool_name": "ping", "server_id": "limited"})
        actions.append(d["action"])
    # burst 2 at 6/min: at most one token can refill during the loop
    assert actions[:2] == ["allow", "allow"] and "block" in actions[2:]
    d = await decide(agentshd, {"tool_name": "ping", "server_id": "limited"})
    if d["action"] == "block":
        assert d["reason"] == 'rate limit exceeded for server "limited"'


async def test_changed_tool_is_blocked_until_approved(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "rug", "tools": [tool("fetch", "v1")]})
    res = await post(agentshd, "/v1/mcp/tools", {"server_id": "rug", "tools": [tool("fetch", "v2")]})
    [v] = res["tools"]
    assert (v["status"], v["blocked"]) == ("changed", True)
    changed = agentshd.wait_event("mcp_tool_changed", lambda e: e["server_id"] == "rug")
    assert changed["action"] == "block" and changed["changes"][0]["field"] == "description"
    d = await decide(agentshd, {"tool_name": "fetch", "server_id": "rug"})
    assert d["action"] == "block" and d["reason"].startswith('tool "fetch" hash changed (pinned: ')

    shown = await get(agentshd, "/v1/mcp/registry/rug/fetch")
    assert (shown["status"], shown["blocked"]) == ("changed", True)
    assert shown["pinned_definition"]["description"] == "v1"

    r = await cli(agentshd, "registry", "list", "--server", "rug")
    assert r.exit_code == 0, r.output
    header, row = r.output.splitlines()
    assert header.split() == ["SERVER", "TOOL", "HASH", "STATUS", "DETECTIONS"]
    assert row.split()[:4] == ["rug", "fetch", tool_hash(tool("fetch", "v2"))[7:15], "changed!"]

    r = await cli(agentshd, "approve", "rug:fetch")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("approved rug:fetch ")
    d = await decide(agentshd, {"tool_name": "fetch", "server_id": "rug"})
    assert d["action"] == "allow"
    shown = await get(agentshd, "/v1/mcp/registry/rug/fetch")
    assert (shown["status"], shown["approved_by"]) == ("approved", "root")  # from SO_PEERCRED
    ev = agentshd.wait_event("admin_action", lambda e: e["action"] == "mcp_approve" and e["detail"]["server"] == "rug")
    assert ev["uid"] == 0 and ev["detail"]["approved"] == [{"tool": "fetch", "hash": shown["hash"]}]


async def test_approve_and_show_unknown_are_404(agentshd: DaemonProc) -> None:
    for call in (
        post_admin(agentshd, "/v1/mcp/approve", {"server": "nope", "tool": "x"}),
        post_admin(agentshd, "/v1/mcp/approve", {"server": "nope", "all": True}),
        get(agentshd, "/v1/mcp/registry/nope/x"),
    ):
        with pytest.raises(ControlError) as ei:
            await call
        assert ei.value.status == 404
    with pytest.raises(ControlError) as ei:
        await post_admin(agentshd, "/v1/mcp/approve", {"server": "rug", "tool": "x", "all": True})
    assert ei.value.status == 400


async def test_approval_cannot_name_its_approver_or_come_through_the_agent_socket(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "forge", "tools": [tool("t")]})
    with pytest.raises(ControlError) as ei:
        await post_admin(agentshd, "/v1/mcp/approve", {"server": "forge", "tool": "t", "approved_by": "root"})
    assert ei.value.status == 400 and "credentials" in ei.value.body["error"]
    with pytest.raises(ControlError) as ei:
        await post(agentshd, "/v1/mcp/approve", {"server": "forge", "tool": "t"})
    assert ei.value.status == 403 and "admin socket" in ei.value.body["error"]
    assert (await get(agentshd, "/v1/mcp/registry/forge/t"))["approved"] is False


async def test_approve_all_via_cli_and_json_listing(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "multi", "tools": [tool("a"), tool("b")]})
    r = await cli(agentshd, "approve", "--server", "multi", "--all")
    assert r.exit_code == 0, r.output
    assert len(r.output.splitlines()) == 2
    r = await cli(agentshd, "registry", "list", "--server", "multi", "--json")
    rows = orjson.loads(r.output)
    assert {(t["tool_name"], t["status"]) for t in rows} == {("a", "approved"), ("b", "approved")}
    r = await cli(agentshd, "registry", "show", "multi:a")
    assert r.exit_code == 0 and "approved:" in r.output and '"description": "does things"' in r.output
    r = await cli(agentshd, "approve", "multi")
    assert r.exit_code != 0 and "SERVER:TOOL" in r.output


async def test_servers_route_lists_network_addrs(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "weather", "server_type": "http",
                                           "server_addr": "127.0.0.1:8080",
                                           "tools": [tool("get_weather")]})
    res = await get(agentshd, "/v1/mcp/servers")
    assert res["addrs"]["127.0.0.1:8080"] == "weather"
    st = await get(agentshd, "/v1/status")
    assert st["mcp"]["tools"] >= 1 and st["mcp"]["decisions"]["block"] >= 1


async def test_calls_and_events_commands_read_the_log(agentshd: DaemonProc) -> None:
    await post(agentshd, "/v1/mcp/tools", {"server_id": "callsrv", "tools": [
        tool("ok_tool"), tool("execute_command")]})
    for name in ("ok_tool", "execute_command"):
        await decide(agentshd, {"tool_name": name, "server_id": "callsrv",
                                                "jsonrpc_id": name})
    agentshd.wait_event("mcp_tool_called", lambda e: e.get("jsonrpc_id") == "execute_command")
    r = await cli(agentshd, "calls", "--server", "callsrv", "--action", "block",
            "--events", str(agentshd.events_path))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["TIMESTAMP", "LAYER", "SERVER", "TOOL", "ACTION", "REASON"]
    assert len(lines) == 2 and "execute_command" in lines[1] and "tool denied" in lines[1]
    r = await cli(agentshd, "calls", "--server", "callsrv", "--json")  # events path from the daemon
    assert [orjson.loads(x)["tool_name"] for x in r.output.splitlines()] == [
        "ok_tool", "execute_command"]
    r = await cli(agentshd, "events", "--server", "callsrv", "--type", "mcp_tool_seen",
            "--events", str(agentshd.events_path))
    assert r.exit_code == 0 and r.output.count("tool_seen") == 2
    r = await cli(agentshd, "events", "--type", "not_a_type")
    assert r.exit_code != 0


def test_registry_survives_daemon_restart() -> None:
    root = short_tmpdir()
    d = _proc(root).start()
    try:
        asyncio.run(post(d, "/v1/mcp/tools", {"server_id": "keep", "tools": [tool("t", "v1")]}))
        d.stop()
        d.start()
        res = asyncio.run(post(d, "/v1/mcp/tools", {"server_id": "keep",
                                                    "tools": [tool("t", "v2")]}))
        assert (res["tools"][0]["status"], res["tools"][0]["blocked"]) == ("changed", True)
        shown = asyncio.run(get(d, "/v1/mcp/registry/keep/t"))
        assert shown["pinned_hash"] == tool_hash(tool("t", "v1"))
        wait_for(lambda: (root / "lib" / "registry.db").exists())
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)


async def test_names_snapshot_for_the_proxy_prefilter(agentshd: DaemonProc) -> None:
    before = await get(agentshd, "/v1/mcp/names")
    await post(agentshd, "/v1/mcp/tools", {"server_id": "my.srv", "tools": [tool("lookup")]})
    snap = await get(agentshd, "/v1/mcp/names")
    assert snap["version"] > before["version"]
    assert {"lookup", "my.srv", "my_srv", "my.srv.lookup"} <= set(snap["names"])
    assert (snap["fail_closed"], snap["enforce"]) == (False, True)
