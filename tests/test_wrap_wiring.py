"""`agentshctl mcp wrap` wires the shims to the daemon that is running: its
socket, and its policy and state directories for offline decisions and spool
(a shim wrapped without them decides on the embedded default, where a denied
tool runs, and spools where the daemon never reads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import AGENTSHCTL, BASE_TEST_POLICY, DaemonProc

POISONED = str(Path(__file__).parent / "mcp_servers" / "poisoned.py")

POLICY = BASE_TEST_POLICY + """
mcp:
  denied_tools:
    - {server: "*", tool: echo}
"""


def wrapped_entry(d: DaemonProc, tmp: Path) -> dict[str, Any]:
    cfg = tmp / ".claude.json"
    cfg.write_text(json.dumps({"mcpServers": {"poisoned": {"command": sys.executable, "args": [POISONED]}}}))
    r = subprocess.run(
        [AGENTSHCTL, "--socket", str(d.socket), "mcp", "wrap", "--client", "claude-code", "--config", str(cfg)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in r.stderr, r.stderr
    return json.loads(cfg.read_text())["mcpServers"]["poisoned"]  # type: ignore[no-any-return]


async def call_echo(entry: dict[str, Any], record: Path) -> str:
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"],
        env={"POISON_RECORD": str(record), "PATH": os.environ["PATH"]},
    )
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.list_tools()
        try:
            res = await s.call_tool("echo", {"text": "hi"})
        except MCPError as e:
            return str(e)
        return f"ran: {res}"


async def test_wrap_records_the_running_daemons_socket_policy_and_state(daemon_factory: Any, tmp_path: Path) -> None:
    d: DaemonProc = daemon_factory(POLICY)
    entry = wrapped_entry(d, tmp_path)
    args = entry["args"]
    assert args[: args.index("--")] == [
        "--server-id", "poisoned",
        "--socket", str(d.socket),
        "--config-dir", str(d.config_dir),
        "--state-dir", str(d.state_dir),
    ]
    record = tmp_path / "calls.jsonl"
    out = await call_echo(entry, record)
    assert "blocked by policy" in out and "tool denied" in out
    assert not record.exists() or "echo" not in record.read_text()
    ev = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "echo")
    assert ev["action"] == "block"


async def test_a_wrapped_shim_with_the_daemon_down_decides_on_the_daemons_policy_and_spools_for_it(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d: DaemonProc = daemon_factory(POLICY)
    entry = wrapped_entry(d, tmp_path)
    d.stop()
    record = tmp_path / "calls.jsonl"
    out = await call_echo(entry, record)
    assert "blocked by policy" in out  # the daemon's denied_tools, not the embedded default
    assert not record.exists() or "echo" not in record.read_text()
    d.start()
    ev = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == "echo", timeout=30)
    assert ev["action"] == "block" and ev["source"] == "shim"


def test_wrap_rewires_an_entry_wrapped_for_another_daemon(daemon_factory: Any, tmp_path: Path) -> None:
    d: DaemonProc = daemon_factory(POLICY)
    cfg = tmp_path / ".claude.json"
    old = {"command": str(Path(sys.executable).parent / "agentsh-shim"),
           "args": ["--server-id", "x", "--socket", "/old/agentsh.sock", "--", "mcp-server-x"]}
    cfg.write_text(json.dumps({"mcpServers": {"x": old}}))
    r = subprocess.run(
        [AGENTSHCTL, "--socket", str(d.socket), "mcp", "wrap", "--client", "claude-code", "--config", str(cfg)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0 and "x (rewired)" in r.stdout, r.stdout + r.stderr
    args = json.loads(cfg.read_text())["mcpServers"]["x"]["args"]
    assert args[args.index("--socket") + 1] == str(d.socket) and args[-2:] == ["--", "mcp-server-x"]


def test_wrap_without_a_daemon_warns_what_the_shims_will_use(tmp_path: Path) -> None:
    cfg = tmp_path / ".claude.json"
    cfg.write_text(json.dumps({"mcpServers": {"s": {"command": "mcp-server-s"}}}))
    r = subprocess.run(
        [AGENTSHCTL, "--socket", str(tmp_path / "none.sock"), "mcp", "wrap", "--client", "claude-code",
         "--config", str(cfg)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0
    assert "warning" in r.stderr and "recording --socket only" in r.stderr
