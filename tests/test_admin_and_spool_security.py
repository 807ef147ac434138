"""Only an administrator can lower enforcement; what other users hand in is
vouched for by the kernel, never by what it says about itself; files the root
daemon reads on others' behalf cannot be swapped under it (issue: enforcement
integrity §3 and §4). Real agentshd, real sockets, real unprivileged users
(`nobody` via setpriv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import DaemonProc, wait_for

NOBODY = 65534


def as_nobody(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=timeout,
    )


def open_up(d: DaemonProc, *paths: Path) -> None:
    """Let `nobody` connect at all (as a member of daemon.group could): the
    daemon's own checks are what must hold."""
    os.chmod(d.root, 0o755)
    os.chmod(d.socket.parent, 0o755)
    for p in paths:
        os.chmod(p, 0o666)


def group_policy(d: DaemonProc, extra: str = "") -> None:
    """Make `nogroup` (gid 65534) the agent group: `nobody` is then a member,
    like a user whose AI agent is guarded."""
    d.write_policy(
        "network: {enabled: false}\nproxy: {mode: disabled}\n"
        "daemon: {group: nogroup, watch_interval_seconds: 0.2, max_connections_per_uid: 16}\n" + extra
    )


def test_a_member_of_the_agent_group_cannot_post_privileged_event_types_under_any_source(daemon_factory: Any) -> None:
    d: DaemonProc = daemon_factory(None, start=False)
    group_policy(d)
    d.start()
    open_up(d, d.socket)
    code = f"""
import asyncio, json
from agentsh.agent.core.client_async import ControlClient
async def go():
    async with ControlClient({str(d.socket)!r}) as c:
        evs = [
            {{"type": "policy_loaded", "source": "shim", "hash": "sha256:forged", "files": []}},
            {{"type": "bpf_lost_events", "source": "proxy", "lost_total": 1, "lost_since_last": 1}},
            {{"type": "admin_action", "source": "ctl", "action": "bpf_detach"}},
            {{"type": "protocol_error", "source": "shim", "layer": "shim", "detail": "honest",
              "id": "dup-id", "host": "forged-host", "timestamp": "1999-01-01T00:00:00Z", "uid": 0}},
        ]
        print(json.dumps(await c.post("/v1/events", {{"events": evs}})))
asyncio.run(go())
"""
    r = as_nobody(code)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert (res["accepted"], res["rejected"]) == (1, 3), res
    ev = d.wait_event("protocol_error", lambda e: e["detail"] == "honest")
    assert ev["uid"] == NOBODY and ev["host"] != "forged-host" and ev["id"] != "dup-id"
    assert ev["timestamp"] != "1999-01-01T00:00:00Z" and ev["sender_timestamp"] == "1999-01-01T00:00:00Z"
    assert not [e for e in d.events("policy_loaded") if e.get("hash") == "sha256:forged"]
    assert not d.events("admin_action") and not d.events("bpf_lost_events")


def test_a_member_cannot_use_the_admin_socket_and_an_admin_group_member_can(daemon_factory: Any) -> None:
    d: DaemonProc = daemon_factory(None, start=False)
    group_policy(d)
    d.start()
    open_up(d, d.socket, d.admin_socket)
    reload_code = f"""
from agentsh.agent.core.client_sync import call, ControlError
try:
    call({str(d.admin_socket)!r}, "POST", "/v1/policy/reload", {{}})
    print("RELOADED")
except ControlError as e:
    print(e.status, e)
"""
    r = as_nobody(reload_code)
    assert r.stdout.startswith("403") and "admin socket" in r.stdout, r.stdout + r.stderr
    # make nogroup the admin group as well: now nobody may, and it is audited as nobody
    d.write_policy(
        "network: {enabled: false}\nproxy: {mode: disabled}\n"
        "daemon: {group: nogroup, admin_group: nogroup, watch_interval_seconds: 0.2}\n"
    )
    wait_for(lambda: json.loads(d.ctl("policy", "show", "--json").stdout)["policy"]["daemon"]["admin_group"] == "nogroup",
             what="policy picked up")
    r = as_nobody(reload_code)
    assert r.stdout.strip() == "RELOADED", r.stdout + r.stderr
    ev = d.wait_event("admin_action", lambda e: e["action"] == "policy_reload" and e["uid"] == NOBODY)
    assert ev["outcome"] == "ok" and ev["pid"] and ev["exe"] and ev["exe"].endswith("python3.11")


def test_one_uid_holding_many_connections_cannot_lock_root_out(daemon_factory: Any) -> None:
    d: DaemonProc = daemon_factory(None, start=False)
    group_policy(d)  # max_connections_per_uid: 16
    d.start()
    open_up(d, d.socket, d.socket.with_name(d.socket.stem + "-decide.sock"))
    hold = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", f"""
import socket, sys, time
held = []
for path in ({str(d.socket)!r}, {str(d.socket.with_name(d.socket.stem + "-decide.sock"))!r}):
    for i in range(200):
        s = socket.socket(socket.AF_UNIX); s.connect(path)
        s.send(b"POST /v1/events HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 1000000\\r\\n")  # half-sent forever
        held.append(s)
print("holding", flush=True)
time.sleep(60)
"""],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert hold.stdout is not None and hold.stdout.readline().strip() == "holding"
        st = json.loads(d.ctl("status", "--json").stdout)  # root is never limited
        assert st["sockets"]["agent"]["refused_limit"] > 0 and st["sockets"]["channel"]["refused_limit"] > 0
        assert st["sockets"]["agent"]["connections"] <= 16 + 1
        # a refused connection got a clear answer
        r = as_nobody(f"""
from agentsh.agent.core.client_sync import call, ControlError
try:
    call({str(d.socket)!r}, "GET", "/v1/status")
except ControlError as e:
    print(e.status, e)
""")
        assert r.stdout.startswith("429") and "too many connections" in r.stdout, r.stdout + r.stderr
    finally:
        hold.kill()
        hold.wait()


# --------------------------------------------------------------------------- spool files


def spool(d: DaemonProc) -> Path:
    return d.state_dir / "spool"


def event_line(detail: str, **kw: Any) -> bytes:
    return orjson.dumps({"type": "protocol_error", "source": "shim", "layer": "shim", "detail": detail, **kw}) + b"\n"


def test_a_symlink_in_the_spool_is_never_followed(daemon: DaemonProc) -> None:
    # A member points a spool name at the root-owned event log (replay it) and at /etc/shadow.
    (spool(daemon) / "shim-1-a.jsonl").symlink_to(daemon.events_path)
    (spool(daemon) / "shim-1-b.jsonl").symlink_to("/etc/shadow")
    marker = spool(daemon) / "shim-1-c.jsonl"
    marker.write_bytes(event_line("after-the-links"))
    os.chown(marker, NOBODY, NOBODY)
    daemon.wait_event("protocol_error", lambda e: e["detail"] == "after-the-links")
    wait_for(lambda: not list(spool(daemon).iterdir()), what="spool emptied")
    ids = [e["id"] for e in daemon.events()]
    assert len(ids) == len(set(ids))  # nothing replayed
    assert not [e for e in daemon.events() if e["type"] == "daemon_started"][1:]
    assert "spool file refused" in daemon.log() and "shim-1-a.jsonl" in daemon.log()


def test_hard_links_fifos_and_oversized_files_are_refused(daemon: DaemonProc) -> None:
    target = daemon.root / "outside.jsonl"
    target.write_bytes(event_line("hard-linked"))
    os.chown(target, NOBODY, NOBODY)
    os.link(target, spool(daemon) / "shim-2-a.jsonl")
    os.mkfifo(spool(daemon) / "shim-2-b.jsonl")  # must not block the daemon
    big = spool(daemon) / "shim-2-c.jsonl"
    with open(big, "wb") as f:
        f.truncate(65 * 1024 * 1024)
    ok = spool(daemon) / "shim-2-d.jsonl"
    ok.write_bytes(event_line("plain-file"))
    daemon.wait_event("protocol_error", lambda e: e["detail"] == "plain-file")
    time.sleep(2.5)  # another housekeeping round
    assert not daemon.events("protocol_error")[1:]  # only the plain file's event
    log = daemon.log()
    assert "shim-2-a.jsonl: has 2 links" in log and "shim-2-b.jsonl: not a regular file" in log
    assert "shim-2-c.jsonl: 68157440 bytes" in log
    assert json.loads(daemon.ctl("status", "--json").stdout)["pid"]  # still answering


def test_a_per_user_spool_announced_by_a_shim_is_ingested_with_that_users_authority(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d: DaemonProc = daemon_factory(None, start=False)
    group_policy(d)
    d.start()
    open_up(d, d.socket)
    home = tmp_path / "home"
    user_spool = home / ".local" / "state" / "agentsh" / "spool"
    user_spool.mkdir(parents=True)
    for p in (tmp_path, home, home / ".local", home / ".local" / "state", user_spool.parent, user_spool):
        os.chown(p, NOBODY, NOBODY)
        os.chmod(p, 0o755)
    r = as_nobody(f"""
import asyncio
from agentsh.agent.core.client_async import ControlClient
async def go():
    async with ControlClient({str(d.socket)!r}) as c:
        await c.post("/v1/shims/register", {{"server_id": "s", "command": ["x"], "spool_dir": {str(user_spool)!r}}})
asyncio.run(go())
""")
    assert r.returncode == 0, r.stderr
    good = user_spool / "shim-4-a.jsonl"
    good.write_bytes(event_line("from-the-user-spool") + orjson.dumps(
        {"type": "policy_loaded", "source": "daemon", "hash": "sha256:forged", "files": []}) + b"\n")
    os.chown(good, NOBODY, NOBODY)
    foreign = user_spool / "shim-4-b.jsonl"  # a file of someone else (root) in that dir: not theirs to hand in
    foreign.write_bytes(event_line("root-file-in-user-spool"))
    ev = d.wait_event("protocol_error", lambda e: e["detail"] == "from-the-user-spool")
    assert ev["uid"] == NOBODY
    wait_for(lambda: not good.exists(), what="user spool file ingested")
    time.sleep(2.5)
    assert foreign.exists()  # left alone, never read as anyone's
    assert not [e for e in d.events() if e.get("detail") == "root-file-in-user-spool"]
    assert not [e for e in d.events("policy_loaded") if e["hash"] == "sha256:forged"]



def test_a_read_only_per_user_spool_is_ingested_once_not_every_round(daemon_factory: Any, tmp_path: Path) -> None:
    """Under systemd the daemon sees home directories read-only (ProtectHome):
    it cannot remove what it ingested there, and must not ingest it again."""
    d: DaemonProc = daemon_factory(None, start=False)
    group_policy(d)
    d.start()
    open_up(d, d.socket)
    user_spool = tmp_path / "spool"
    user_spool.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chown(user_spool, NOBODY, NOBODY)
    os.chmod(user_spool, 0o700)
    f = user_spool / "shim-5-a.jsonl"
    f.write_bytes(event_line("read-only-once"))
    os.chown(f, NOBODY, NOBODY)
    subprocess.run(["mount", "--bind", str(user_spool), str(user_spool)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(user_spool)], check=True)
        r = as_nobody(f"""
import asyncio
from agentsh.agent.core.client_async import ControlClient
async def go():
    async with ControlClient({str(d.socket)!r}) as c:
        await c.post("/v1/shims/register", {{"server_id": "s", "command": ["x"], "spool_dir": {str(user_spool)!r}}})
asyncio.run(go())
""")
        assert r.returncode == 0, r.stderr
        d.wait_event("protocol_error", lambda e: e["detail"] == "read-only-once")
        time.sleep(4.5)  # two more housekeeping rounds
        assert f.exists()
        assert len([e for e in d.events("protocol_error") if e["detail"] == "read-only-once"]) == 1
    finally:
        subprocess.run(["umount", str(user_spool)], check=False)


@pytest.mark.serial  # every daemon on the host scans the home directories and would take this spool
def test_the_spool_of_a_user_outside_the_group_is_found_in_their_home_and_ingested(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """A user outside daemon.group cannot reach the daemon to announce a spool:
    the daemon looks in home directories itself."""
    import uuid

    name = f"agsh-{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", str(home), name], check=True)
    try:
        import pwd

        uid = pwd.getpwnam(name).pw_uid
        spool_dir = home / ".local" / "state" / "agentsh" / "spool"
        spool_dir.mkdir(parents=True)
        for p in (home, home / ".local", home / ".local" / "state", spool_dir.parent, spool_dir):
            os.chown(p, uid, uid)
        os.chmod(tmp_path, 0o755)
        os.chmod(spool_dir, 0o700)
        f = spool_dir / "shim-6-a.jsonl"
        f.write_bytes(event_line("from-a-home-spool"))
        os.chown(f, uid, uid)
        d: DaemonProc = daemon_factory()
        try:
            ev = d.wait_event("protocol_error", lambda e: e["detail"] == "from-a-home-spool", timeout=20)
        except AssertionError:
            raise AssertionError(d.log()[-3000:]) from None
        assert ev["uid"] == uid
        wait_for(lambda: not f.exists(), what="home spool file ingested")
    finally:
        subprocess.run(["userdel", name], check=False)
