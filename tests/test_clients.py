"""One way to the daemon (docs/architecture.md "Sockets and roles"): the
blocking clients (agent/core/client_sync.py) and the asyncio clients
(agent/core/client_async.py) raise the same error classes for the same
failure, the non-hot HTTP endpoints validate their bodies with the pydantic
models of agent/core/api_models.py (a 400 naming the field), and no module
outside the two client modules opens the daemon's sockets itself. Against a
real agentshd, as root and as `nobody` (setpriv)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentsh.agent.core.client_sync import ControlError, call
from tests.conftest import DaemonProc, short_tmpdir

REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- pydantic bodies

# (socket, path, body, what the 400 must name)
MALFORMED: list[tuple[str, str, Any, str]] = [
    ("agent", "/v1/shims/register", {"server_id": 7}, "server_id: Input should be a valid string"),
    ("agent", "/v1/shims/register", {}, "server_id: Field required"),
    ("agent", "/v1/shims/register", {"server_id": "fs", "command": ["npx", 3]}, "command[1]: Input should be a valid string"),
    ("agent", "/v1/shims/register", {"server_id": "fs", "pid": "12"}, "pid: Input should be a valid integer"),
    ("agent", "/v1/shims/register", {"server_id": "fs", "sesion_id": "typo"}, "sesion_id: Extra inputs are not permitted"),
    ("agent", "/v1/shims/register", [1, 2], "expected a JSON object"),
    ("agent", "/v1/shims/{shim}/heartbeat", {"calls": True}, "calls: Input should be a valid integer"),
    ("agent", "/v1/shims/{shim}/heartbeat", {"blocks": -1}, "blocks: Input should be greater than or equal to 0"),
    ("agent", "/v1/shims/{shim}/unregister", {"exit_code": "0"}, "exit_code: Input should be a valid integer"),
    ("admin", "/v1/mcp/approve", {"server": "fs", "tool": 5}, "tool: Input should be a valid string"),
    ("admin", "/v1/mcp/approve", {"server": "fs"}, "give exactly one of tool (string) and all: true"),
    ("admin", "/v1/mcp/approve", {"server": "fs", "all": True, "approved_by": "alice"}, "approved_by is taken from the caller's credentials"),
    ("admin", "/v1/policy/reload", {"force": True}, "force: Extra inputs are not permitted"),
    ("admin", "/v1/events/reopen", {"path": "/etc/shadow"}, "path: Extra inputs are not permitted"),
    ("admin", "/v1/bpf/detach", {"all": "yes"}, "all: Extra inputs are not permitted"),
]


def test_malformed_bodies_on_non_hot_endpoints_are_400s_naming_the_field(daemon: DaemonProc) -> None:
    sock = {"agent": str(daemon.socket), "admin": str(daemon.admin_socket)}
    reg = call(sock["agent"], "POST", "/v1/shims/register",
               {"server_id": "fs", "command": ["npx", "fs"], "pid": 1, "session_id": "s1"})
    shim = reg["shim_id"]
    for where, path, body, named in MALFORMED:
        with pytest.raises(ControlError) as ei:
            call(sock[where], "POST", path.format(shim=shim), body)
        assert ei.value.status == 400, (path, body, ei.value)
        assert named in ei.value.body["error"], (path, body, ei.value.body)
    # the refused heartbeats changed nothing; well-formed bodies are taken
    [listed] = [s for s in call(sock["agent"], "GET", "/v1/shims")["shims"] if s["shim_id"] == shim]
    assert listed["calls"] == 0 and listed["blocks"] == 0
    assert call(sock["agent"], "POST", f"/v1/shims/{shim}/heartbeat", {"calls": 4, "blocks": 1})["ok"]
    [listed] = [s for s in call(sock["agent"], "GET", "/v1/shims")["shims"] if s["shim_id"] == shim]
    assert (listed["calls"], listed["blocks"]) == (4, 1)
    assert call(sock["admin"], "POST", "/v1/policy/reload")["ok"]
    assert call(sock["agent"], "POST", f"/v1/shims/{shim}/unregister", {"calls": 5, "exit_code": 0})["ok"]
    gone = daemon.wait_event("shim_exited", lambda e: e["server_id"] == "fs")
    assert (gone["exit_code"], gone["calls"]) == (0, 5)


# --------------------------------------------------------------------------- same errors

OUTCOMES_SRC = '''
import asyncio
from agentsh.agent.core.client_async import ChannelClient, ControlClient
from agentsh.agent.core.client_sync import (
    ControlError, DaemonUnavailable, SyncChannelClient, SyncControlClient, call, channel_path)


def _what(e):
    if isinstance(e, ControlError):
        return ["ControlError", e.status]
    if isinstance(e, DaemonUnavailable):
        return ["DaemonUnavailable", e.why]
    return [type(e).__name__, str(e)]


def outcomes(control, method, path, chan_msg):
    """How each client fails on the same request: {client: [class, status or why]}."""
    out = {}

    def sync(name, fn):
        try:
            fn()
            out[name] = ["ok"]
        except Exception as e:
            out[name] = _what(e)

    async def run_async():
        async def one(name, coro_fn):
            try:
                await coro_fn()
                out[name] = ["ok"]
            except Exception as e:
                out[name] = _what(e)
        if path is not None:
            c = ControlClient(control, timeout=5)
            await one("ControlClient", lambda: c.request(method, path, {} if method == "POST" else None))
            await c.close()
        ch = ChannelClient(channel_path(control))
        await one("ChannelClient", lambda: ch.request(chan_msg))
        await ch.close()

    if path is not None:
        sync("call", lambda: call(control, method, path, {} if method == "POST" else None, timeout=5))
        sc = SyncControlClient(control, timeout=5)
        sync("SyncControlClient", lambda: sc.request(method, path, {} if method == "POST" else None))
        sc.close()
    scc = SyncChannelClient(control)
    sync("SyncChannelClient", lambda: scc.request(chan_msg, 5))
    scc.close()
    asyncio.run(run_async())
    return out
'''

HTTP_CLIENTS = ("call", "SyncControlClient", "ControlClient")
CHANNEL_CLIENTS = ("SyncChannelClient", "ChannelClient")


def _outcomes_here(control: str, method: str, path: str | None, chan_msg: dict[str, Any]) -> dict[str, list[Any]]:
    ns: dict[str, Any] = {}
    exec(OUTCOMES_SRC, ns)
    return ns["outcomes"](control, method, path, chan_msg)  # type: ignore[no-any-return]


def _outcomes_as_nobody(control: str, method: str, path: str | None, chan_msg: dict[str, Any]) -> dict[str, list[Any]]:
    code = OUTCOMES_SRC + f"\nimport json\nprint(json.dumps(outcomes({control!r}, {method!r}, {path!r}, {chan_msg!r})))\n"
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_sync_and_async_clients_raise_the_same_errors_for_the_same_failure(daemon: DaemonProc) -> None:
    ping = {"op": "policy"}
    # no daemon at the path: every client, the same class and reason
    missing = str(short_tmpdir() / "agentsh.sock")
    res = _outcomes_here(missing, "GET", "/v1/status", ping)
    assert res == {k: ["DaemonUnavailable", "no socket"] for k in HTTP_CLIENTS + CHANNEL_CLIENTS}
    # root on its own sockets: the same answers (the ok path of every client)
    res = _outcomes_here(str(daemon.socket), "GET", "/v1/status", ping)
    assert res == {k: ["ok"] for k in HTTP_CLIENTS + CHANNEL_CLIENTS}
    # an admin act on the agent socket, an unknown op on the channel: refused the same way
    res = _outcomes_here(str(daemon.socket), "POST", "/v1/policy/reload", {"op": "no-such-op"})
    assert {k: res[k] for k in HTTP_CLIENTS} == {k: ["ControlError", 403] for k in HTTP_CLIENTS}
    assert {k: res[k] for k in CHANNEL_CLIENTS} == {k: ["ControlError", 400] for k in CHANNEL_CLIENTS}

    # `nobody` (not in the agent group) where the socket mode lets it connect: the
    # daemon refuses the connection itself, a 403 from every client
    os.chmod(daemon.root, 0o755)
    os.chmod(daemon.socket.parent, 0o755)
    for p in (daemon.socket, daemon.socket.with_name(daemon.socket.stem + "-decide.sock")):
        os.chmod(p, 0o666)
    res = _outcomes_as_nobody(str(daemon.socket), "GET", "/v1/status", ping)
    assert res == {k: ["ControlError", 403] for k in HTTP_CLIENTS + CHANNEL_CLIENTS}
    # ... and where the mode does not let it connect (the admin socket, 0660): permission denied
    assert (daemon.admin_socket.stat().st_mode & 0o777) == 0o660
    res = _outcomes_as_nobody(str(daemon.admin_socket), "GET", "/v1/status", ping)
    assert {k: res[k] for k in HTTP_CLIENTS} == {k: ["DaemonUnavailable", "permission denied"] for k in HTTP_CLIENTS}


# --------------------------------------------------------------------------- one way to the daemon

SOCKET_NAMES = frozenset({
    "AF_UNIX", "socketpair", "UnixConnector", "open_unix_connection", "create_unix_connection",
    "start_unix_server", "create_unix_server", "UnixSite", "HTTPConnection",
})

ALLOWED = {
    # the two client modules: the one way to the daemon
    "agent/core/client_sync.py",
    "agent/core/client_async.py",
    # server side: serves the channel socket and hands children a socketpair end
    "agent/daemon/channel.py",
    # server side: probes whether a socket file left behind still has a live daemon before binding
    "agent/daemon/app.py",
    # server side: checks that an accepted connection is a Unix one before reading SO_PEERCRED
    "agent/daemon/peercred.py",
    # not the daemon's socket: systemd's notify socket (READY=1, WATCHDOG=1)
    "agent/daemon/sdnotify.py",
    # the agent hook command runs on every tool call of the agent and imports nothing
    # beyond the stdlib (start-up time; docs/hooks.md): it speaks the channel itself
    "agent/hook_cmd.py",
}


def _uses(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SOCKET_NAMES:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in SOCKET_NAMES:
            found.add(node.id)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("http.client"))
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").startswith("http.client") or (
                node.module == "http" and any(a.name == "client" for a in node.names)
            ):
                found.add("http.client")
            found.update(a.name for a in node.names if a.name in SOCKET_NAMES)
    return found


def test_no_module_outside_the_client_modules_opens_the_daemon_sockets() -> None:
    offenders: dict[str, set[str]] = {}
    scanned = 0
    for top in ("agent", "proxy", "shim", "bench"):
        for f in sorted((REPO / top).rglob("*.py")):
            rel = f.relative_to(REPO).as_posix()
            scanned += 1
            used = _uses(ast.parse(f.read_text(), rel))
            if used and rel not in ALLOWED:
                offenders[rel] = used
    assert scanned > 50
    assert not offenders, f"open the daemon's sockets through agent/core/client_sync.py or client_async.py: {offenders}"
    # the check sees what it looks for (the allowed modules do use these names)
    assert _uses(ast.parse((REPO / "agent/core/client_async.py").read_text())) >= {"UnixConnector", "open_unix_connection"}
    assert "http.client" in _uses(ast.parse("import http.client\nfrom http import client\n"))
