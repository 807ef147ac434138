"""At start the BPF layer reports connections to watched servers that were
already open (the connect hooks only see new connects)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from pathlib import Path

import pytest
from netns import child_cgroup

from agentsh.agent.core.events.models import Event, MCPNetworkConnection
from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.netmon.monitor import NetworkMonitor, detach_all

pytestmark = [pytest.mark.bpf, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


class HoldingListener:
    """Accepts connections and keeps them open (ESTABLISHED on both ends)."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []

    def connect(self) -> socket.socket:
        c = socket.create_connection(self.sock.getsockname())
        self.accepted.append(self.sock.accept()[0])
        return c

    def close(self) -> None:
        for a in self.accepted:
            a.close()
        self.sock.close()


def test_connections_open_before_start_are_reported_as_existing(tmp_path: Path) -> None:
    target = HoldingListener("127.0.0.9")
    other = HoldingListener("127.0.0.10")
    held = target.connect()
    unrelated = other.connect()
    events: list[Event] = []
    pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
    try:
        with child_cgroup() as cgdir:
            pol = Policy.model_validate(
                {
                    "mcp": {"servers": [{"id": "docs", "type": "http", "url": f"http://127.0.0.9:{target.port}/mcp"}]},
                    "network": {"cgroup_path": cgdir, "pin_dir": pin, "discovery": False},
                }
            )

            async def run() -> dict:
                mon = NetworkMonitor(pol, lambda e: events.append(e) or True, tmp_path)
                await mon.start()
                st = mon.status()
                await mon.stop(detach=True)
                return st

            st = asyncio.run(run())
            assert st["state"] == "active", st
    finally:
        held.close()
        unrelated.close()
        target.close()
        other.close()
        detach_all(pin, None)
    existing = [e for e in events if isinstance(e, MCPNetworkConnection) and e.phase == "existing"]
    assert len(existing) == 1, existing
    ev = existing[0]
    assert ev.server_id == "docs" and ev.remote_addr == f"127.0.0.9:{target.port}"
    assert ev.pid == os.getpid() and ev.action == "allow"
    assert st["existing_reported"] == 1
