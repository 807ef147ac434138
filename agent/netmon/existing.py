"""Connections to watched servers that were open before the daemon started.

The connect hooks only see new connects, so at start the monitor lists the
host's established TCP sockets (psutil: /proc/net/tcp{,6} plus the owning pid)
and reports those whose remote end is watched, as ``phase: existing``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import psutil

from agentsh.agent.netmon.maps import WatchKey, WatchVal


@dataclass(frozen=True, slots=True)
class Existing:
    pid: int | None
    remote_ip: str
    remote_port: int
    family: Literal["ipv4", "ipv6"]
    key: WatchKey
    val: WatchVal


def match(entries: dict[WatchKey, WatchVal], ip: str, port: int) -> tuple[WatchKey, WatchVal] | None:
    """Longest-prefix match with the kernel's order: exact port first, then port 0."""
    try:
        a = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return None
    if a.version == 6 and a.ipv4_mapped is not None:
        a = a.ipv4_mapped
    for want_port in (port, 0):
        best: tuple[WatchKey, WatchVal] | None = None
        for k, v in entries.items():
            if k.port == want_port and k.net.version == a.version and a in k.net and (
                best is None or k.net.prefixlen > best[0].net.prefixlen
            ):
                best = (k, v)
        if best is not None:
            return best
    return None


def scan(entries: dict[WatchKey, WatchVal], pids: Iterable[int] | None = None) -> list[Existing]:
    if not entries:
        return []
    only = set(pids) if pids is not None else None
    out: list[Existing] = []
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, OSError):
        return out
    for c in conns:
        if not c.raddr or c.status not in (psutil.CONN_ESTABLISHED, psutil.CONN_SYN_SENT):
            continue
        if only is not None and c.pid not in only:
            continue
        m = match(entries, c.raddr.ip, c.raddr.port)
        if m is None:
            continue
        fam: Literal["ipv4", "ipv6"] = "ipv6" if c.family.name == "AF_INET6" else "ipv4"
        out.append(Existing(c.pid, c.raddr.ip, c.raddr.port, fam, m[0], m[1]))
    return out
