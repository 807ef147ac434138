"""From policy to watch-map entries: which addresses, which server, allow or block.

* Every declared http/sse server (``mcp.servers``) is watched at the addresses
  its URL host resolves to (A and AAAA; a literal IP is used as is) plus its
  ``addresses`` (IPs or CIDRs), on the URL's port (default 80/443).
* Addresses the MCP registry knows (``mcp.server_addrs()``) are watched too.
* Undeclared ``mcp.known_endpoints`` (IP, CIDR, host, host:port) are watched,
  and blocked under ``server_policy: allowlist``.
* A server is blocked when the server policy denies it (see ``server_blocked``)
  or its TLS certificate did not match ``tls_fingerprint``.
* When two entries collide on one key, block wins.

Resolution uses an injectable ``getaddrinfo``-like callable (tests swap it);
a failed lookup keeps the host's last good addresses so a DNS hiccup never
unblocks a server.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentsh.agent.core.policy.globs import glob_match
from agentsh.agent.core.policy.schema import MCPConfig, MCPServerDeclaration, Policy
from agentsh.agent.core.vocab import MaybeServerType
from agentsh.agent.netmon.maps import (
    ACT_ALLOW,
    ACT_BLOCK,
    F_EMIT,
    TAG_DECLARED,
    TAG_KNOWN_ENDPOINT,
    TAG_REGISTRY,
    TAG_SELFTEST,
    Net,
    WatchKey,
    WatchVal,
)

GetAddrInfo = Callable[..., list[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class ServerRef:
    """What an event's ``server_idx`` stands for."""

    server_id: str
    server_type: MaybeServerType
    tag: int
    blocked: bool


def server_blocked(mcp: MCPConfig, server_id: str) -> bool:
    """Server-level policy, in the decision pipeline's order (agent/core/mcp/decision.py):
    ``denied_servers`` match → blocked; ``server_policy: allowlist`` and no
    ``allowed_servers`` match → blocked. ``enforce_policy: false`` blocks nothing."""
    if not mcp.enforce_policy:
        return False
    if any(glob_match(r.id, server_id) for r in mcp.denied_servers):
        return True
    if mcp.server_policy == "allowlist":
        return not any(glob_match(r.id, server_id) for r in mcp.allowed_servers)
    return False


def url_host_port(url: str) -> tuple[str, int]:
    p = urlsplit(url)
    port = p.port or (443 if p.scheme == "https" else 80)
    return p.hostname or "", port


def host_port_str(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_endpoint(text: str) -> tuple[str, int]:
    """``IP``, ``CIDR``, ``host``, ``host:port`` or ``[v6]:port`` → (host-or-net, port|0)."""
    t = text.strip()
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else 0
    try:
        ipaddress.ip_network(t, strict=False)
        return t, 0
    except ValueError:
        pass
    host, sep, port = t.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host, int(port)
    return t, 0


def literal_net(host: str) -> Net | None:
    try:
        return ipaddress.ip_network(host, strict=False)
    except ValueError:
        return None


def _canon(net: Net) -> Net:
    """IPv4-mapped IPv6 networks become their IPv4 form (one key per address)."""
    if net.version == 6 and net.prefixlen >= 96:
        m = net.network_address.ipv4_mapped
        if m is not None:
            return ipaddress.IPv4Network((m, net.prefixlen - 96))
    return net


@dataclass
class HostState:
    addrs: list[str] = field(default_factory=list)
    resolved_at: float | None = None
    error: str | None = None
    next_due: float = 0.0


def _wall(mono: float | None) -> float | None:
    """A time.monotonic() reading as epoch seconds (for status: one time format)."""
    return None if mono is None else time.time() - (time.monotonic() - mono)


class Resolver:
    """Caches host → addresses; resolves in a worker thread with a timeout."""

    def __init__(
        self, getaddrinfo: GetAddrInfo | None = None, timeout: float = 5.0
    ) -> None:
        self.getaddrinfo = getaddrinfo or socket.getaddrinfo
        self.timeout = timeout
        self.hosts: dict[str, HostState] = {}
        self.last_resolve: float | None = None
        self.errors = 0

    def _lookup(self, host: str) -> list[str]:
        infos = self.getaddrinfo(host, None, 0, socket.SOCK_STREAM)
        out: list[str] = []
        for info in infos:
            ip = str(info[4][0]).split("%", 1)[0]
            if ip not in out:
                out.append(ip)
        return out

    async def resolve(
        self, host: str, force: bool = False, interval: float = 300.0, retry: float = 5.0
    ) -> list[str]:
        st = self.hosts.setdefault(host, HostState())
        now = time.monotonic()
        if not force and now < st.next_due:
            return st.addrs
        try:
            addrs = await asyncio.wait_for(asyncio.to_thread(self._lookup, host), self.timeout)
            st.addrs = addrs
            st.resolved_at = now
            st.error = None
        except Exception as e:  # any resolver failure keeps the last answer
            st.error = f"{type(e).__name__}: {e}"
            self.errors += 1
        st.next_due = time.monotonic() + (retry if st.error else interval)
        self.last_resolve = time.time()
        return st.addrs

    async def resolve_all(
        self, hosts: Iterable[str], interval: float, retry: float, force: bool = False
    ) -> bool:
        """Resolve hosts due (or all with ``force``); True when any address set changed."""
        hosts = sorted(set(hosts))
        before = {h: list(self.hosts[h].addrs) for h in hosts if h in self.hosts}

        await asyncio.gather(
            *(self.resolve(h, force=force, interval=interval, retry=retry) for h in hosts)
        )
        for h in [h for h in self.hosts if h not in hosts]:
            del self.hosts[h]
        return any(before.get(h) != self.hosts[h].addrs for h in hosts)

    def addrs(self, host: str) -> list[str]:
        st = self.hosts.get(host)
        return list(st.addrs) if st else []

    def status(self) -> dict[str, Any]:
        return {
            "last_resolved_at": self.last_resolve,
            "errors_total": self.errors,
            "hosts": {
                h: {"addrs": st.addrs, "error": st.error, "resolved_at": _wall(st.resolved_at)}
                for h, st in self.hosts.items()
            },
        }


def network_servers(policy: Policy) -> list[MCPServerDeclaration]:
    return [s for s in policy.mcp.servers if s.type in ("http", "sse") and s.url]


def hosts_to_resolve(policy: Policy, registry_addrs: dict[str, str]) -> set[str]:
    hosts: set[str] = set()
    for s in network_servers(policy):
        h, _ = url_host_port(s.url or "")
        if literal_net(h) is None:
            hosts.add(h)
    for ep in policy.mcp.known_endpoints:
        h, _ = parse_endpoint(ep)
        if literal_net(h) is None:
            hosts.add(h)
    for addr in registry_addrs:
        h, _ = parse_endpoint(addr)
        if h and literal_net(h) is None:
            hosts.add(h)
    return hosts


@dataclass
class Watchlist:
    entries: dict[WatchKey, WatchVal]
    servers: list[ServerRef]
    """Index → server; index 0 is reserved for "no server" (trace records)."""
    watched: dict[str, list[str]]
    """server_id → the keys it is watched at (for status)."""


def build_watchlist(
    policy: Policy,
    resolver: Resolver,
    registry_addrs: dict[str, str] | None = None,
    tls_blocked: set[str] | None = None,
    canaries: dict[str, str] | None = None,
) -> Watchlist:
    """``canaries``: server id → ``ip:port`` of temporary selftest entries
    (agentshctl selftest), blocked like a denied server while they last."""
    net = policy.network
    mcp = policy.mcp
    tls_blocked = tls_blocked or set()
    servers: list[ServerRef] = [ServerRef("", "", 0, False)]
    index: dict[tuple[str, int], int] = {}
    entries: dict[WatchKey, WatchVal] = {}
    watched: dict[str, list[str]] = {}
    flags = F_EMIT if net.tracing else 0

    def ref(server_id: str, server_type: MaybeServerType, tag: int, blocked: bool) -> int:
        k = (server_id, tag)
        if k not in index:
            index[k] = len(servers)
            servers.append(ServerRef(server_id, server_type, tag, blocked))
        return index[k]

    def add(nets: Iterable[Net], port: int, idx: int, blocked: bool, tag: int) -> None:
        action = ACT_BLOCK if (blocked and net.blocking) else ACT_ALLOW
        for n in nets:
            key = WatchKey(_canon(n), port)
            val = WatchVal(idx, tag, action, flags)
            old = entries.get(key)
            if old is None or (old.action == ACT_ALLOW and action == ACT_BLOCK):
                entries[key] = val
            watched.setdefault(servers[idx].server_id, []).append(str(key))

    def nets_for(host: str) -> list[Net]:
        lit = literal_net(host)
        if lit is not None:
            return [lit]
        out: list[Net] = []
        for a in resolver.addrs(host):
            n = literal_net(a)
            if n is not None:
                out.append(n)
        return out

    declared: dict[str, MCPServerDeclaration] = {}
    for s in network_servers(policy):
        declared[s.id] = s
        blocked = server_blocked(mcp, s.id) or s.id in tls_blocked
        idx = ref(s.id, s.type, TAG_DECLARED, blocked)
        host, port = url_host_port(s.url or "")
        nets = nets_for(host)
        nets += [ipaddress.ip_network(a, strict=False) for a in s.addresses]
        add(nets, port, idx, blocked, TAG_DECLARED)

    for addr, sid in (registry_addrs or {}).items():
        host, port = parse_endpoint(addr)
        if not host:
            continue
        decl = declared.get(sid)
        stype = decl.type if decl else "http"
        blocked = server_blocked(mcp, sid) or sid in tls_blocked
        idx = ref(sid, stype, TAG_REGISTRY, blocked)
        add(nets_for(host), port, idx, blocked, TAG_REGISTRY)

    allowlist = mcp.server_policy == "allowlist" and mcp.enforce_policy
    for ep in mcp.known_endpoints:
        host, port = parse_endpoint(ep)
        idx = ref(ep, "", TAG_KNOWN_ENDPOINT, allowlist)
        add(nets_for(host), port, idx, allowlist, TAG_KNOWN_ENDPOINT)

    for sid, ep in (canaries or {}).items():
        host, port = parse_endpoint(ep)
        idx = ref(sid, "", TAG_SELFTEST, True)
        add(nets_for(host), port, idx, True, TAG_SELFTEST)

    return Watchlist(entries, servers, watched)
