"""Real MCP servers through the real agentsh-shim, driven by the mcp SDK's stdio
client, with the real agentshd deciding (or, daemon down, the shim itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import BASE_TEST_POLICY, NPM_MODULES, SHIM, DaemonProc, wait_for

POISONED = str(Path(__file__).parent / "mcp_servers" / "poisoned.py")
EVERYTHING = NPM_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = NPM_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
needs_npm = pytest.mark.skipif(
    not EVERYTHING.exists() or not FILESYSTEM.exists(), reason="npm servers not installed (make setup)"
)


def policy(extra: str) -> str:
    return BASE_TEST_POLICY + extra


@asynccontextmanager
async def shim_session(
    d: DaemonProc,
    server: list[str],
    server_id: str | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    args = ["--socket", str(d.socket), "--config-dir", str(d.config_dir),
            "--state-dir", str(d.state_dir)]
    if server_id:
        args += ["--server-id", server_id]
    params = StdioServerParameters(command=SHIM, args=[*args, "--", *server], env=env or {})
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield s


def poisoned(record: Path | None = None, variant: str = "v1", tools: str | None = None) -> tuple[list[str], dict[str, str]]:
    env = {"POISON_VARIANT": variant}
    if record is not None:
        env["POISON_RECORD"] = str(record)
    if tools is not None:
        env["POISON_TOOLS"] = tools
    return [sys.executable, POISONED], env


def received(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [orjson.loads(x) for x in record.read_bytes().splitlines() if x.strip()]


def blocked_error(e: MCPError) -> str:
    return str(e.error.message if hasattr(e, "error") else e)


# --------------------------------------------------------------------------- reference servers


@needs_npm
async def test_everything_server_lists_and_calls_through_shim(daemon: DaemonProc) -> None:
    async with shim_session(d := daemon, ["node", str(EVERYTHING), "stdio"]) as s:
        tools = await s.list_tools()
        names = {t.name for t in tools.tools}
        assert {"echo", "get-sum"} <= names
        r = await s.call_tool("echo", {"message": "through the shim"})
        assert r.content[0].text == "Echo: through the shim"
        r = await s.call_tool("get-sum", {"a": 2, "b": 3})
        assert "5" in r.content[0].text
        shims = d.ctl("status", "--json")  # exit 1 = "degraded": this daemon runs without BPF/proxy
        assert shims.returncode in (0, 1) and "server-everything" in shims.stdout
    seen = d.wait_event("mcp_tool_seen", lambda e: e["tool_name"] == "echo")
    assert seen["server_id"] == "server-everything" and seen["source"] == "shim"
    called = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "get-sum")
    assert called["action"] == "allow" and called["input"] == {"a": 2, "b": 3}
    assert called["server_id"] == "server-everything" and called["tool_hash"].startswith("sha256:")
    d.wait_event("shim_exited", lambda e: e["server_id"] == "server-everything")


@needs_npm
async def test_filesystem_server_reads_files_through_shim(daemon: DaemonProc, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    async with shim_session(daemon, ["node", str(FILESYSTEM), str(tmp_path)]) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        assert "read_text_file" in names or "read_file" in names
        tool = "read_text_file" if "read_text_file" in names else "read_file"
        r = await s.call_tool(tool, {"path": str(tmp_path / "hello.txt")})
        assert "hello from disk" in r.content[0].text
    daemon.wait_event("mcp_tool_called", lambda e: e["tool_name"] == tool and e["action"] == "allow")


# --------------------------------------------------------------------------- enforcement


async def test_denied_tool_gets_jsonrpc_error_and_server_never_sees_it(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy("""
mcp:
  denied_tools:
    - server: "*"
      tool: fetch_data
"""))
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, tools="read_notes,fetch_data")
    async with shim_session(d, cmd, "poison", env) as s:
        await s.list_tools()
        with pytest.raises(MCPError) as ei:
            await s.call_tool("fetch_data", {"url": "https://example.org"})
        assert blocked_error(ei.value) == "[agentsh] Tool 'fetch_data' blocked by policy: tool denied"
        assert ei.value.error.code == -32001
        r = await s.call_tool("read_notes", {"topic": "after the block"})
        assert r.content[0].text == "notes about after the block"
    assert [c["tool"] for c in received(rec)] == ["read_notes"]
    ev = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "fetch_data")
    assert ev["action"] == "block" and ev["reason"] == "tool denied"


async def test_fail_closed_blocks_a_tool_the_server_never_listed(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy("mcp:\n  fail_closed: true\n"))
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, tools="read_notes")
    async with shim_session(d, cmd, "poison", env) as s:
        await s.list_tools()
        assert (await s.call_tool("read_notes", {"topic": "t"})).content[0].text == "notes about t"
        with pytest.raises(MCPError) as ei:
            await s.call_tool("secret_unlisted_tool", {})
        assert "unknown tool, fail closed" in blocked_error(ei.value)
    assert [c["tool"] for c in received(rec)] == ["read_notes"]


async def test_rate_limit_exhaustion_blocks_further_calls(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy("""
mcp:
  rate_limits:
    enabled: true
    per_server:
      poison:
        calls_per_minute: 1
        burst: 2
"""))
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, tools="read_notes")
    async with shim_session(d, cmd, "poison", env) as s:
        await s.list_tools()
        await s.call_tool("read_notes", {"topic": "1"})
        await s.call_tool("read_notes", {"topic": "2"})
        with pytest.raises(MCPError) as ei:
            await s.call_tool("read_notes", {"topic": "3"})
        assert 'rate limit exceeded for server "poison"' in blocked_error(ei.value)
    assert [c["arguments"]["topic"] for c in received(rec)] == ["1", "2"]


@pytest.mark.parametrize("mode", ["alert", "block"])
async def test_rug_pull_between_runs(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path, mode: str
) -> None:
    # Detection would also flag v2; keep it in alert mode so the pin alone decides.
    d = daemon_factory(policy(f"""
mcp:
  version_pinning:
    on_change: {mode}
"""))
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, variant="v1", tools="read_notes,fetch_data")
    async with shim_session(d, cmd, "rug", env) as s:
        assert "fetch_data" in {t.name for t in (await s.list_tools()).tools}
        await s.call_tool("fetch_data", {"url": "u1"})
    cmd, env = poisoned(rec, variant="v2", tools="read_notes,fetch_data")
    async with shim_session(d, cmd, "rug", env) as s:
        listed = {t.name for t in (await s.list_tools()).tools}
        changed = d.wait_event("mcp_tool_changed", lambda e: e["tool_name"] == "fetch_data")
        assert changed["server_id"] == "rug"
        assert any(c["field"] == "description" for c in changed["changes"])
        if mode == "alert":
            assert "fetch_data" in listed
            await s.call_tool("fetch_data", {"url": "u2"})
        else:
            assert listed == {"read_notes"}
            with pytest.raises(MCPError) as ei:
                await s.call_tool("fetch_data", {"url": "u2"})
            assert 'tool "fetch_data" hash changed' in blocked_error(ei.value)
    urls = [c["arguments"]["url"] for c in received(rec) if c["tool"] == "fetch_data"]
    assert urls == (["u1", "u2"] if mode == "alert" else ["u1"])


async def test_poisoned_definitions_are_flagged_and_hidden_in_block_mode(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy("""
mcp:
  inspection:
    on_detection:
      action: block
"""))
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, tools="read_notes,helper,shadow")
    async with shim_session(d, cmd, "poison", env) as s:
        listed = {t.name for t in (await s.list_tools()).tools}
        assert listed == {"read_notes"}, "zero-width and shadowing tools must be hidden"
        with pytest.raises(MCPError) as ei:
            await s.call_tool("helper", {"text": "x"})
        assert "tool definition flagged" in blocked_error(ei.value)
        await s.call_tool("read_notes", {"topic": "ok"})
    assert [c["tool"] for c in received(rec)] == ["read_notes"]
    flagged = {e["tool_name"] for e in d.events("mcp_detection")}
    assert {"helper", "audit_tool"} <= flagged
    seen = {e["tool_name"]: e for e in d.events("mcp_tool_seen")}
    assert seen["helper"]["blocked"] and not seen["read_notes"]["blocked"]


@needs_npm
async def test_same_tool_name_on_two_servers_is_a_shadow_finding(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    async with shim_session(daemon, ["node", str(EVERYTHING), "stdio"]) as s1:
        await s1.list_tools()
        cmd, env = poisoned(tools="echo")
        async with shim_session(daemon, cmd, "poison", env) as s2:
            await s2.list_tools()
            ev = daemon.wait_event("mcp_tool_shadowed", lambda e: e["tool_name"] == "echo")
    assert {ev["server_id"], *ev["other_server_ids"]} == {"server-everything", "poison"}


# --------------------------------------------------------------------------- daemon down


async def test_daemon_down_decides_locally_spools_and_daemon_ingests_later(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy("""
mcp:
  denied_tools:
    - server: poison
      tool: fetch_data
"""), start=False)
    rec = tmp_path / "calls.jsonl"
    cmd, env = poisoned(rec, tools="read_notes,fetch_data")
    async with shim_session(d, cmd, "poison", env) as s:
        await s.list_tools()
        with pytest.raises(MCPError) as ei:
            await s.call_tool("fetch_data", {"url": "x"})
        assert "tool denied" in blocked_error(ei.value)
        await s.call_tool("read_notes", {"topic": "offline"})
    assert [c["tool"] for c in received(rec)] == ["read_notes"]
    spooled = list((d.state_dir / "spool").glob("shim-*.jsonl"))
    assert spooled, "events must be spooled while the daemon is down"
    types = [orjson.loads(x)["type"] for f in spooled for x in f.read_bytes().splitlines()]
    assert {"mcp_tool_seen", "mcp_tool_called", "shim_exited"} <= set(types)
    d.start()
    blocked = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "fetch_data")
    assert blocked["action"] == "block" and blocked["source"] == "shim"
    d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "read_notes")
    wait_for(lambda: not list((d.state_dir / "spool").glob("shim-*.jsonl")), what="spool ingested")


async def test_shim_reconnects_when_the_daemon_comes_back(
    daemon_factory: Callable[..., DaemonProc], tmp_path: Path
) -> None:
    d = daemon_factory(policy(""), start=False)
    cmd, env = poisoned(tools="read_notes")
    async with shim_session(d, cmd, "poison", env) as s:
        await s.list_tools()
        await s.call_tool("read_notes", {"topic": "while down"})
        d.start()
        # the daemon learns about the shim and its tools without a new tools/list
        wait_for(lambda: '"poison"' in d.ctl("status", "--json").stdout, what="shim re-registered")
        await s.call_tool("read_notes", {"topic": "after reconnect"})
        ev = d.wait_event(
            "mcp_tool_called", lambda e: (e.get("input") or {}).get("topic") == "after reconnect"
        )
        assert ev["action"] == "allow" and ev["tool_hash"], "decided by the daemon's registry"
        # the calls it decided alone are not forgotten: status is degraded and names the shim
        def offline_reasons() -> list[str]:
            st = orjson.loads(d.ctl("status", "--json").stdout)
            return [r for r in st["degraded_reasons"] if r.startswith("shim poison") and "offline" in r]

        reasons = wait_for(offline_reasons, 30, what="the shim's offline decisions in status")
        assert "decided 1 calls offline" in reasons[0], reasons
        assert d.ctl("status").returncode == 1
    d.wait_event("mcp_tool_called", lambda e: (e.get("input") or {}).get("topic") == "while down")


def test_shim_without_daemon_or_policy_still_relays(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTSH_SOCKET": str(tmp_path / "none.sock"),
           "AGENTSH_STATE_DIR": str(tmp_path / "st"), "AGENTSH_CONFIG_DIR": str(tmp_path / "etc")}
    r = subprocess.run([SHIM, "--", "cat"], input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
                       capture_output=True, env=env, timeout=30)
    assert r.returncode == 0 and r.stdout == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
