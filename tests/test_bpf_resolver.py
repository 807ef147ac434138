"""Policy → watch entries, and re-resolution that re-watches a moved hostname."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from netns import CgroupClient, child_cgroup

from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.netmon.maps import ACT_ALLOW, ACT_BLOCK, WatchKey
from agentsh.agent.netmon.monitor import NetworkMonitor, detach_all
from agentsh.agent.netmon.resolver import (
    Resolver,
    build_watchlist,
    parse_endpoint,
    server_blocked,
)


def _pol(**mcp: Any) -> Policy:
    return Policy.model_validate({"mcp": mcp})


def _keys(wl: Any) -> dict[str, int]:
    return {str(k): v.action for k, v in wl.entries.items()}


def test_endpoint_forms_parse() -> None:
    assert parse_endpoint("10.0.0.1") == ("10.0.0.1", 0)
    assert parse_endpoint("10.0.0.0/8") == ("10.0.0.0/8", 0)
    assert parse_endpoint("mcp.example.com:8443") == ("mcp.example.com", 8443)
    assert parse_endpoint("[2001:db8::1]:443") == ("2001:db8::1", 443)
    assert parse_endpoint("2001:db8::/32") == ("2001:db8::/32", 0)
    assert parse_endpoint("mcp.example.com") == ("mcp.example.com", 0)


def test_server_policy_matches_the_decision_pipeline_order() -> None:
    m = _pol(server_policy="allowlist", allowed_servers=[{"id": "ok-*"}]).mcp
    assert not server_blocked(m, "ok-1") and server_blocked(m, "other")
    m = _pol(denied_servers=[{"id": "bad*"}]).mcp
    assert server_blocked(m, "bad1") and not server_blocked(m, "good")
    m = _pol(denied_servers=[{"id": "*"}], enforce_policy=False).mcp
    assert not server_blocked(m, "x")


def test_watchlist_ports_cidrs_known_endpoints_and_block_precedence() -> None:
    pol = _pol(
        servers=[
            {"id": "a", "type": "http", "url": "https://192.0.2.1/mcp", "addresses": ["198.51.100.0/24"]},
            {"id": "b", "type": "sse", "url": "http://[2001:db8::5]:8080/sse"},
            {"id": "c", "type": "http", "url": "http://192.0.2.1:443/"},
        ],
        denied_servers=[{"id": "c"}],
        server_policy="allowlist",
        allowed_servers=[{"id": "a"}, {"id": "b"}, {"id": "c"}],
        known_endpoints=["203.0.113.7", "203.0.113.0/24:9000"],
    )
    wl = build_watchlist(pol, Resolver())
    k = _keys(wl)
    assert k["192.0.2.1:443"] == ACT_BLOCK  # a and c share it: block wins
    assert k["198.51.100.0/24:443"] == ACT_ALLOW
    assert k["[2001:db8::5]:8080"] == ACT_ALLOW
    assert k["203.0.113.7:*"] == ACT_BLOCK  # known endpoint under allowlist
    assert k["203.0.113.0/24:9000"] == ACT_BLOCK  # CIDR:port form
    ref = wl.servers[wl.entries[WatchKey.decode(next(
        kk.encode() for kk in wl.entries if str(kk) == "[2001:db8::5]:8080"
    ))].server_idx]
    assert (ref.server_id, ref.server_type) == ("b", "sse")


def test_blocking_disabled_watches_without_blocking() -> None:
    pol = Policy.model_validate(
        {
            "mcp": {"servers": [{"id": "x", "type": "http", "url": "http://192.0.2.9/"}],
                    "denied_servers": [{"id": "x"}]},
            "network": {"blocking": False},
        }
    )
    assert _keys(build_watchlist(pol, Resolver())) == {"192.0.2.9:80": ACT_ALLOW}


async def test_resolver_keeps_last_good_answer_when_lookup_fails() -> None:
    answers: dict[str, Any] = {"h.test": ["192.0.2.1"]}

    def gai(host: str, *a: Any) -> list[Any]:
        v = answers[host]
        if isinstance(v, Exception):
            raise v
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 0)) for ip in v]

    r = Resolver(gai)
    assert await r.resolve("h.test") == ["192.0.2.1"]
    answers["h.test"] = socket.gaierror("temporary failure")
    assert await r.resolve("h.test", force=True) == ["192.0.2.1"]
    assert r.hosts["h.test"].error


async def test_real_resolver_resolves_localhost() -> None:
    addrs = await Resolver().resolve("localhost")
    assert set(addrs) & {"127.0.0.1", "::1"}


# ------------------------------------------------------------------ in the kernel


@pytest.mark.bpf
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_hostname_that_moves_to_a_new_address_is_rewatched(tmp_path: Path) -> None:
    answer = {"ip": "127.0.0.21"}

    def gai(host: str, *a: Any) -> list[Any]:
        if host == "mcp.moving.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer["ip"], 0))]
        return socket.getaddrinfo(host, *a)

    port = 7301
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        pol = Policy.model_validate(
            {
                "mcp": {
                    "servers": [
                        {"id": "moving", "type": "http", "url": f"http://mcp.moving.test:{port}/"},
                        {"id": "local", "type": "http", "url": f"http://localhost:{port + 1}/"},
                    ],
                    "denied_servers": [{"id": "moving"}, {"id": "local"}],
                },
                "network": {
                    "cgroup_path": cgdir, "pin_dir": pin, "discovery": False,
                    "resolve_interval_seconds": 0.2, "min_resolve_interval_seconds": 0.1,
                },
            }
        )
        mon = NetworkMonitor(pol, lambda e: True, tmp_path, getaddrinfo=gai, report_existing=False)
        loop = asyncio.new_event_loop()
        t = threading.Thread(target=loop.run_forever, daemon=True)
        t.start()

        def run(c: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(c, loop).result(30)

        try:
            run(mon.start())
            assert mon.status()["state"] == "active", mon.status()
            with CgroupClient(cgdir) as c:
                assert c.tcp("127.0.0.21", port) == "EPERM"
                assert c.tcp("127.0.0.1", port + 1) == "EPERM"  # real resolver: localhost
                answer["ip"] = "127.0.0.22"
                # the periodic re-resolve picks it up without any call from us
                import time

                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    keys = mon.status()["watched_servers"].get("moving", [])
                    if f"127.0.0.22:{port}" in keys:
                        break
                    time.sleep(0.05)
                assert mon.status()["watched_servers"]["moving"] == [f"127.0.0.22:{port}"]
                assert c.tcp("127.0.0.22", port) == "EPERM"
                assert c.tcp("127.0.0.21", port) == "ECONNREFUSED"  # no longer watched
        finally:
            run(mon.stop(detach=True))
            detach_all(pin, cgdir)
            loop.call_soon_threadsafe(loop.stop)
            t.join(5)
