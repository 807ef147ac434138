"""agentshd as a real subprocess: status, reload semantics, peer checks,
signals, spool ingestion, and the events CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess

import orjson
import pytest

from agentsh.agent.core.client_async import ChannelClient, ControlClient, ControlError, channel_path
from tests.conftest import AGENTSHCTL, BASE_TEST_POLICY, DaemonProc, read_events, wait_for


def test_status_says_degraded_and_names_each_layer_the_policy_turns_off(daemon: DaemonProc) -> None:
    """The test policy turns the BPF layer and the LLM proxy off: status must not
    call that healthy (it would claim protection nobody delivers)."""
    r = daemon.ctl("status", "--json")
    assert r.returncode == 1, r.stderr
    st = json.loads(r.stdout)
    assert st["healthy"] is False
    assert "LLM proxy disabled by policy (proxy.mode: disabled)" in st["degraded_reasons"]
    assert "BPF network layer disabled by policy (network.enabled: false)" in st["degraded_reasons"]
    assert st["pid"] == daemon.proc.pid
    assert st["policy"]["files"] == [str(daemon.config_dir / "agentsh.yaml")]
    assert st["policy"]["hash"].startswith("sha256:")
    assert st["events"]["path"] == str(daemon.events_path)
    assert st["bpf"]["state"] == "disabled"
    human = daemon.ctl("status")
    assert human.returncode == 1
    assert "DEGRADED" in human.stdout and str(daemon.proc.pid) in human.stdout
    assert "  ! LLM proxy disabled by policy (proxy.mode: disabled)" in human.stdout.splitlines()


def test_enforce_policy_false_is_reported_as_degraded(daemon: DaemonProc) -> None:
    daemon.write_policy(BASE_TEST_POLICY + "mcp:\n  enforce_policy: false\n")
    assert daemon.ctl("policy", "reload").returncode == 0
    st = json.loads(daemon.ctl("status", "--json").stdout)
    assert "mcp.enforce_policy is false: decisions are reported, nothing is blocked" in st["degraded_reasons"]


def test_status_when_daemon_unreachable_exits_2_with_one_line(tmp_path) -> None:
    sock = tmp_path / "nope.sock"
    r = subprocess.run([AGENTSHCTL, "--socket", str(sock), "status"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"agentshctl: agentshd is not running (no socket at {sock})"


def test_socket_is_0660(daemon: DaemonProc) -> None:
    assert (daemon.socket.stat().st_mode & 0o777) == 0o660


def test_sockets_refuse_peers_outside_their_role_even_when_the_mode_lets_them_connect(daemon: DaemonProc) -> None:
    # Loosen the socket modes so `nobody` can connect at all: the SO_PEERCRED
    # check must still refuse it, before a byte of the request is parsed.
    for p in (daemon.socket, daemon.admin_socket):
        os.chmod(p, 0o666)
    os.chmod(daemon.root, 0o755)
    os.chmod(daemon.socket.parent, 0o755)
    r = daemon.ctl("policy", "reload", user="nobody")
    assert r.returncode == 1
    assert "HTTP 403" in r.stderr and "forbidden" in r.stderr and "admin socket" in r.stderr
    r = daemon.ctl("status", "--json", user="nobody")
    assert r.returncode == 1 and "HTTP 403" in r.stderr and "agent socket" in r.stderr
    assert not daemon.events("policy_loaded")[1:]  # no reload happened
    assert not daemon.events("admin_action")


def test_admin_acts_are_refused_on_the_agent_socket_and_audited_on_the_admin_socket(daemon: DaemonProc) -> None:
    async def go() -> tuple[int, dict]:
        async with ControlClient(str(daemon.socket)) as c:
            try:
                await c.post("/v1/policy/reload")
            except ControlError as e:
                return e.status, e.body
        raise AssertionError("reload accepted on the agent socket")

    status, body = asyncio.run(go())
    assert status == 403 and "only served on the admin socket" in body["error"]
    assert daemon.ctl("policy", "reload").returncode == 0  # agentshctl uses the admin socket
    ev = daemon.wait_event("admin_action")
    assert (ev["action"], ev["outcome"], ev["uid"], ev["pid"]) == ("policy_reload", "ok", 0, ev["pid"])
    assert ev["exe"] and ev["detail"]["hash"].startswith("sha256:")
    assert (daemon.admin_socket.stat().st_mode & 0o777) == 0o660


def test_bad_reload_is_rejected_and_last_good_policy_stays(daemon: DaemonProc) -> None:
    good_hash = json.loads(daemon.ctl("status", "--json").stdout)["policy"]["hash"]
    bad = daemon.write_policy("mcp:\n  fail_closed: perhaps\n", name="20-bad.yaml")
    r = daemon.ctl("policy", "reload")
    assert r.returncode == 1
    assert f"{bad}:2:16: mcp.fail_closed:" in r.stderr
    ev = daemon.wait_event("policy_rejected")
    assert ev["kept_hash"] == good_hash
    assert any(str(bad) in e for e in ev["errors"])
    st = json.loads(daemon.ctl("status", "--json").stdout)
    assert st["policy"]["hash"] == good_hash
    rejected = "last policy reload was rejected; previous policy in force"
    assert rejected in st["degraded_reasons"]
    assert daemon.ctl("status").returncode == 1
    # fix it: the good policy loads and the rejection is no longer a reason
    bad.write_text("mcp:\n  fail_closed: true\n")
    r = daemon.ctl("policy", "reload")
    assert r.returncode == 0, r.stderr
    st = json.loads(daemon.ctl("status", "--json").stdout)
    assert st["policy"]["hash"] != good_hash and rejected not in st["degraded_reasons"]
    show = json.loads(daemon.ctl("policy", "show", "--json").stdout)
    assert show["policy"]["mcp"]["fail_closed"] is True


def test_policy_file_change_is_picked_up_by_the_watcher(daemon: DaemonProc) -> None:
    daemon.write_policy("mcp:\n  fail_closed: true\n", name="10-watch.yaml")
    ev = daemon.wait_event("policy_loaded", lambda e: e["trigger"] == "watch")
    assert str(daemon.config_dir / "policy.d" / "10-watch.yaml") in ev["files"]


def test_sighup_reloads_policy_and_reopens_log(daemon: DaemonProc) -> None:
    daemon.write_policy(BASE_TEST_POLICY.replace("0.2\nevents", "60\nevents"))  # slow watcher
    moved = daemon.events_path.with_suffix(".old")
    wait_for(lambda: daemon.events("policy_loaded")[1:] or True)
    daemon.events_path.rename(moved)
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: daemon.events_path.exists(), what="events.jsonl reopened")
    wait_for(
        lambda: any(e["type"] == "policy_loaded" and e["trigger"] in ("sighup", "watch") for e in read_events(moved) + daemon.events()),
        what="reload after SIGHUP",
    )


def test_sigterm_drains_queued_events(daemon: DaemonProc) -> None:
    async def post() -> int:
        async with ControlClient(str(daemon.socket)) as c:
            total = 0
            for batch in range(20):
                evs = [
                    {"type": "protocol_error", "source": "shim", "layer": "shim", "detail": f"b{batch}-{i}"}
                    for i in range(500)
                ]
                res = await c.post("/v1/events", {"events": evs})
                total += res["accepted"]
            return total

    accepted = asyncio.run(post())
    assert accepted == 10_000
    assert daemon.stop(signal.SIGTERM) == 0
    details = {e["detail"] for e in daemon.events("protocol_error")}
    assert len(details) == 10_000
    types = [e["type"] for e in daemon.events()]
    assert types[-1] == "daemon_stopping" or "daemon_stopping" in types


def test_posted_events_are_validated(daemon: DaemonProc) -> None:
    async def post() -> dict:
        async with ControlClient(str(daemon.socket)) as c:
            return await c.post(
                "/v1/events",
                {"events": [{"type": "no_such_type"}, {"type": "protocol_error", "layer": "shim", "detail": "x", "bogus": 1}, 5]},
            )

    res = asyncio.run(post())
    assert res["accepted"] == 0 and res["rejected"] == 3
    assert len(res["errors"]) == 3


def test_spooled_events_are_ingested(daemon: DaemonProc) -> None:
    spool = daemon.state_dir / "spool"
    line = orjson.dumps({"type": "protocol_error", "source": "shim", "layer": "shim", "detail": "from-spool"})
    (spool / "shim-1.tmp").write_bytes(line + b"\n")  # incomplete: must be left alone
    (spool / "shim-2.jsonl").write_bytes(line + b"\nnot json\n")
    ev = daemon.wait_event("protocol_error", lambda e: e["detail"] == "from-spool")
    assert ev["uid"] == 0
    wait_for(lambda: not (spool / "shim-2.jsonl").exists(), what="spool file removed")
    assert (spool / "shim-1.tmp").exists()


def test_daemon_refuses_to_start_on_bad_policy_without_last_good(daemon_factory) -> None:
    d = daemon_factory("mcp:\n  nope: 1\n", start=False)
    d.start(wait=False)
    assert d.proc.wait(30) == 78
    assert "agentsh.yaml:2:3: mcp.nope: unknown key" in d.log()


def test_daemon_restarted_on_bad_policy_keeps_last_good(daemon_factory) -> None:
    d = daemon_factory()
    good = json.loads(d.ctl("status", "--json").stdout)["policy"]["hash"]
    d.stop()
    d.write_policy("events: [\n")
    d.start()
    st = json.loads(d.ctl("status", "--json").stdout)
    assert st["policy"]["hash"] == good
    assert st["healthy"] is False
    assert d.events("policy_rejected")


def test_events_tail_filters_by_type_and_prints_json(daemon: DaemonProc) -> None:
    r = daemon.ctl("events", "tail", "--type", "daemon_started", "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["type"] == "daemon_started"
    human = daemon.ctl("events", "tail", "--since", "1h")
    assert "policy_loaded" in human.stdout and "daemon_started" in human.stdout
    bad = daemon.ctl("events", "tail", "--type", "bogus")
    assert bad.returncode == 1 and "unknown event type" in bad.stderr


def test_events_schema_prints_json_schema() -> None:
    r = subprocess.run([AGENTSHCTL, "events", "schema"], capture_output=True, text=True)
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    text = json.dumps(schema)
    for t in ("mcp_tool_call_intercepted", "mcp_network_connection", "policy_rejected", "llm_request"):
        assert t in text


@pytest.mark.parametrize("path", ["/v1/nope", "/v2/status"])
def test_unknown_endpoint_is_404_json(daemon: DaemonProc, path: str) -> None:
    async def get() -> Exception:
        async with ControlClient(str(daemon.socket)) as c:
            try:
                await c.get(path)
            except Exception as e:
                return e
        raise AssertionError("no error")

    e = asyncio.run(get())
    assert getattr(e, "status", None) == 404


def test_daemon_notifies_systemd_ready_and_watchdog(daemon_factory, tmp_path) -> None:
    import socket as s

    addr = str(tmp_path / "notify.sock")
    sock = s.socket(s.AF_UNIX, s.SOCK_DGRAM)
    sock.bind(addr)
    sock.settimeout(20)
    d = daemon_factory(start=False, env={"NOTIFY_SOCKET": addr, "WATCHDOG_USEC": "1000000"})
    d.start(wait=False)
    msgs: list[str] = []
    while not any("WATCHDOG=1" in m for m in msgs) or not any("READY=1" in m for m in msgs):
        msgs.append(sock.recv(4096).decode())
    ready = next(m for m in msgs if "READY=1" in m)
    assert f"MAINPID={d.proc.pid}" in ready and "STATUS=policy" in ready
    d.stop()
    while True:
        m = sock.recv(4096).decode()
        if "STOPPING=1" in m:
            break
    sock.close()


def test_tools_stop_being_current_when_the_last_shim_of_a_server_exits(daemon: DaemonProc) -> None:
    async def go() -> tuple[list, list, list]:
        async with ControlClient(str(daemon.socket)) as c:
            a = await c.post("/v1/shims/register", {"server_id": "srvx", "pid": os.getpid(), "command": ["x"]})
            b = await c.post("/v1/shims/register", {"server_id": "srvx", "pid": os.getpid(), "command": ["x"]})
            await c.post("/v1/mcp/tools", {"server_id": "srvx", "server_type": "stdio",
                                            "tools": [{"name": "frobnicate", "description": "Frobnicates."}]})
            before = (await c.get("/v1/mcp/names"))["names"]
            await c.post(f"/v1/shims/{a['shim_id']}/unregister", {})
            middle = (await c.get("/v1/mcp/names"))["names"]
            await c.post(f"/v1/shims/{b['shim_id']}/unregister", {})
            after = (await c.get("/v1/mcp/names"))["names"]
            return before, middle, after

    before, middle, after = asyncio.run(go())
    assert "frobnicate" in before and "frobnicate" in middle
    assert "frobnicate" not in after
    # the events are written by the writer thread, a moment after the answers
    wait_for(lambda: len(daemon.events("shim_exited")) >= 2, what="two shim_exited events")
    assert len(daemon.events("shim_exited")) == 2


def test_decision_channel_answers_pipelined_requests_in_order(daemon: DaemonProc) -> None:
    async def go() -> tuple[list[dict], Exception]:
        async with ControlClient(str(daemon.socket)) as c:
            await c.post("/v1/mcp/tools", {"server_id": "fs", "server_type": "stdio",
                                            "tools": [{"name": "read_file", "description": "Reads a file."}]})
        ch = ChannelClient(channel_path(daemon.socket))
        try:
            reqs = [{"tool_name": "read_file", "server_id": "fs", "source": "shim", "jsonrpc_id": i} for i in range(50)]
            answers = await asyncio.gather(*(ch.decide(r) for r in reqs))
            try:
                await ch.decide({"tool_name": ""})
            except ControlError as e:
                return answers, e
        finally:
            await ch.close()
        raise AssertionError("bad request accepted")

    answers, err = asyncio.run(go())
    assert all(a["action"] == "allow" and a["server_id"] == "fs" and a["tool_hash"].startswith("sha256:") for a in answers)
    assert "tool_name" in str(err)
    assert (channel_path(daemon.socket).stat().st_mode & 0o777) == 0o660
    # the events are written by the writer thread, a moment after the answers
    wait_for(lambda: len(daemon.events("mcp_tool_called")) >= 50, what="50 mcp_tool_called events")
    ids = sorted(e["jsonrpc_id"] for e in daemon.events("mcp_tool_called"))
    assert ids == list(range(50))


def test_decision_channel_refuses_unprivileged_peer(daemon: DaemonProc) -> None:
    os.chmod(channel_path(daemon.socket), 0o666)
    os.chmod(daemon.root, 0o755)
    os.chmod(daemon.socket.parent, 0o755)
    code = (
        "import asyncio,sys\n"
        "from agentsh.agent.core.client_async import ChannelClient, channel_path\n"
        "async def go():\n"
        f"    c = ChannelClient(channel_path({str(daemon.socket)!r}))\n"
        "    try:\n"
        "        await c.decide({'tool_name': 'x', 'source': 'shim', 'server_id': 's'})\n"
        "    except Exception as e:\n"
        "        print(type(e).__name__, e); return\n"
        "    print('ALLOWED')\n"
        "asyncio.run(go())\n"
    )
    import sys

    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=30)
    assert "ControlError" in r.stdout and "forbidden" in r.stdout, r.stdout + r.stderr


def test_reload_applies_new_rotation_settings_to_the_event_log(daemon: DaemonProc) -> None:
    daemon.write_policy(BASE_TEST_POLICY + "  rotate_max_bytes: 4096\n  rotate_backups: 2\n")
    assert daemon.ctl("policy", "reload").returncode == 0

    async def post() -> None:
        async with ControlClient(str(daemon.socket)) as c:
            for b in range(10):
                evs = [{"type": "protocol_error", "source": "shim", "layer": "shim", "detail": f"r{b}-{i}" + "x" * 100}
                       for i in range(20)]
                await c.post("/v1/events", {"events": evs})

    asyncio.run(post())

    def rotated_enough() -> dict | None:
        st = json.loads(daemon.ctl("status", "--json").stdout)["events"]
        return st if st["queue_depth"] == 0 and st["rotations"] >= 3 else None

    st = wait_for(rotated_enough, what="size rotations")
    assert st["path"] == str(daemon.events_path)
    def names() -> list[str]:
        return sorted(p.name for p in daemon.events_path.parent.glob("events.jsonl*"))

    # rotate_backups: 2 -> exactly two backups once the writer is idle
    wait_for(lambda: names() == ["events.jsonl", "events.jsonl.1", "events.jsonl.2"], what=f"backups {names()}")


def test_events_tail_accepts_type_globs(daemon: DaemonProc) -> None:
    r = daemon.ctl("events", "tail", "--type", "daemon_*", "--json")
    assert r.returncode == 0, r.stderr
    assert {json.loads(line)["type"] for line in r.stdout.splitlines()} == {"daemon_started"}


def test_spooled_events_from_unprivileged_owners_cannot_forge_daemon_events(daemon: DaemonProc) -> None:
    spool = daemon.state_dir / "spool"
    forged = orjson.dumps({"type": "policy_loaded", "source": "daemon", "hash": "sha256:forged", "files": []})
    claim = orjson.dumps({"type": "protocol_error", "source": "shim", "layer": "shim", "detail": "from-nobody", "uid": 0})
    f = spool / "shim-999999-1.jsonl"
    f.write_bytes(forged + b"\n" + claim + b"\n")
    os.chown(f, 65534, 65534)
    ev = daemon.wait_event("protocol_error", lambda e: e["detail"] == "from-nobody")
    assert ev["uid"] == 65534  # the file owner, not the uid the line claims
    wait_for(lambda: not f.exists(), what="spool file ingested")
    assert not [e for e in daemon.events("policy_loaded") if e["hash"] == "sha256:forged"]


@pytest.mark.parametrize("path", ["/v1/events", "/v1/shims/register", "/v1/mcp/tools"])
def test_invalid_json_body_is_a_400_with_the_reason(daemon: DaemonProc, path: str) -> None:
    import aiohttp

    async def go() -> tuple[int, dict]:
        conn = aiohttp.UnixConnector(path=str(daemon.socket))
        async with aiohttp.ClientSession(connector=conn) as s, s.post(
            "http://agentshd" + path, data=b"{not json", headers={"Content-Type": "application/json"}
        ) as r:
            return r.status, await r.json()

    status, body = asyncio.run(go())
    assert status == 400 and body["error"].startswith("invalid JSON")
