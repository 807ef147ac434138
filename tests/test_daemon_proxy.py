"""The daemon supervises the LLM proxy: started as a child that drops root,
restarted when killed, told to re-read the policy on reload."""

from __future__ import annotations

import json
import os
import signal
import socket

import psutil

from tests.conftest import DaemonProc, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proxy_state(d: DaemonProc) -> dict:
    st = json.loads(d.ctl("status", "--json").stdout)
    return next(c for c in st["components"] if c["name"] == "llm-proxy")


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_proxy_child_drops_root_and_is_restarted_when_killed(daemon_factory) -> None:
    port = free_port()
    d: DaemonProc = daemon_factory(
        f"""
network: {{enabled: false}}
proxy:
  mode: embedded
  listen: 127.0.0.1:{port}
daemon:
  user: nobody
"""
    )
    first = wait_for(lambda: (p := proxy_state(d))["state"] == "running" and p["pid"] and listening(port) and p, 30)
    pid = first["pid"]
    # The port is bound while still root; nothing is read from it before the drop.
    wait_for(lambda: 0 not in psutil.Process(pid).uids(), 30, what="proxy dropped root")
    os.kill(pid, signal.SIGKILL)
    ev = d.wait_event("component_exited", lambda e: e["component"] == "llm-proxy")
    assert ev["signal"] == "SIGKILL" and ev["will_restart"] is True
    second = wait_for(
        lambda: (p := proxy_state(d))["state"] == "running" and p["pid"] not in (None, pid) and listening(port) and p,
        30,
    )
    assert second["restarts"] == 1
    # disabling the proxy in the policy stops it
    d.write_policy(f"network: {{enabled: false}}\nproxy: {{mode: disabled, listen: 127.0.0.1:{port}}}\n")
    assert d.ctl("policy", "reload").returncode == 0
    wait_for(lambda: not listening(port), 15, what="proxy stopped")
    st = json.loads(d.ctl("status", "--json").stdout)
    assert all(c["name"] != "llm-proxy" for c in st["components"])
