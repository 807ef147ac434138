"""NetworkMonitor: the daemon-facing object of the BPF network layer.

start():  prerequisites → mounts → compile (maps reused from pins) → resolve →
          fill the watch map → attach (atomically replacing a predecessor) →
          ring-buffer thread → existing connections → resolve/discovery tasks.
          Never raises for "BPF cannot work here": status becomes
          ``unavailable`` with the reason and the daemon runs on.
update_policy(): recompute the watch map and sync it in place (no reattach).
stop():   by default leaves programs attached and maps pinned, so enforcement
          continues while no daemon runs; ``detach=True`` removes everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentsh.agent.core.events.models import Event, MCPNetworkConnection
from agentsh.agent.core.policy.schema import Policy
from agentsh.agent.netmon import cgroup as cg
from agentsh.agent.netmon.consumer import Consumer
from agentsh.agent.netmon.discovery import Discovery
from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.existing import scan
from agentsh.agent.netmon.layout import EVENTS_RING_BYTES, MAP_WATCH, WATCH_MAX_ENTRIES
from agentsh.agent.netmon.maps import ACT_BLOCK, TAG_NAMES, WatchMap
from agentsh.agent.netmon.procinfo import ProcCache
from agentsh.agent.netmon.programs import Programs, check_prerequisites, detach_all
from agentsh.agent.netmon.resolver import (
    GetAddrInfo,
    Resolver,
    Watchlist,
    build_watchlist,
    hosts_to_resolve,
    network_servers,
)

log = logging.getLogger("agentsh.netmon")

__all__ = ["NetworkMonitor", "detach_all"]


class NetworkMonitor:
    def __init__(
        self,
        policy: Policy,
        emit: Callable[[Event], bool],
        state_dir: Path,
        mcp: Any = None,
        *,
        getaddrinfo: GetAddrInfo | None = None,
        report_existing: bool = True,
    ) -> None:
        self.policy = policy
        self.emit = emit
        self.state_dir = Path(state_dir)
        self.mcp = mcp
        self.resolver = Resolver(getaddrinfo)
        self.report_existing = report_existing
        self.state = "stopped"
        self.reason: str | None = None
        self.fix: str | None = None
        self.programs: Programs | None = None
        self.watch: WatchMap | None = None
        self.consumer: Consumer | None = None
        self.watchlist: Watchlist | None = None
        self.discovery: Discovery | None = None
        self.tls_blocked: set[str] = set()
        self.canaries: dict[str, str] = {}
        """Temporary selftest entries: server id → ip:port (always blocked)."""
        self.cgroup_dir: str | None = None
        self.existing_reported = 0
        self.last_sync: dict[str, Any] = {}
        self.started_at: float | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._registry_addrs: dict[str, str] = {}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        net = self.policy.network
        if not net.enabled:
            self.state, self.reason = "disabled", "network.enabled is false"
            return
        try:
            await self._start_bpf()
        except BPFUnavailable as e:
            self._unavailable(e)
            return
        except Exception as e:
            log.exception("BPF layer failed to start")
            self._unavailable(BPFUnavailable(f"{type(e).__name__}: {e}"))
            return
        self.state = "active"
        self.started_at = time.time()
        if self.report_existing:
            await self._report_existing()
        self._tasks.append(asyncio.create_task(self._resolve_loop(), name="agentsh-netmon-resolve"))
        await self._update_discovery()

    def _unavailable(self, e: BPFUnavailable) -> None:
        self.state, self.reason, self.fix = "unavailable", e.reason, e.fix or None
        log.warning("bpf: unavailable (%s)", e)
        if self.programs is not None:
            self.programs.close()
            self.programs = None

    async def _start_bpf(self) -> None:
        net = self.policy.network
        check_prerequisites()
        self.cgroup_dir = cg.resolve_cgroup(net.cgroup_path)
        cg.ensure_bpffs(net.pin_dir)
        self.programs = Programs(net.pin_dir, self.cgroup_dir)
        await asyncio.to_thread(self.programs.compile)
        self.watch = WatchMap(self.programs.table(MAP_WATCH))
        # Fill the (possibly inherited) map before the new programs take over.
        await self._resolve(force=True)
        self._sync()
        await asyncio.to_thread(self.programs.attach)
        if net.trace_all:
            self.programs.attach_trace()
        self.consumer = Consumer(self.programs, self.emit, ProcCache())
        self.consumer.servers = self.watchlist.servers if self.watchlist else self.consumer.servers
        self.consumer.start()

    async def stop(self, detach: bool = False) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        if self.discovery is not None:
            await self.discovery.stop()
            self.discovery = None
        if self.consumer is not None:
            await asyncio.to_thread(self.consumer.stop)
        if self.programs is not None:
            self.programs.close()
            self.programs = None
        if detach:
            net = self.policy.network
            with contextlib.suppress(Exception):
                cgdir = self.cgroup_dir or cg.resolve_cgroup(net.cgroup_path)
                detach_all(net.pin_dir, cgdir)
        if self.state == "active":
            self.state = "stopped"

    # ------------------------------------------------------------------ policy

    async def update_policy(self, policy: Policy) -> None:
        old = self.policy
        self.policy = policy
        if self.state in ("unavailable", "disabled", "stopped") or self.programs is None:
            if policy.network.enabled and self.state in ("disabled", "unavailable"):
                self.state, self.reason = "stopped", None
                await self.start()
            return
        onet, nnet = old.network, policy.network
        if not nnet.enabled:
            await self.stop(detach=True)
            self.state, self.reason = "disabled", "network.enabled is false"
            return
        if (onet.pin_dir, onet.cgroup_path) != (nnet.pin_dir, nnet.cgroup_path):
            # new place: a fresh start re-attaches (old location detached once the new one holds)
            await self.stop()
            self.state = "stopped"
            await self.start()
            return
        async with self._lock:
            self._sync()  # immediately, with cached resolutions
        if nnet.trace_all and not onet.trace_all:
            self.programs.attach_trace()
        elif onet.trace_all and not nnet.trace_all:
            self.programs.detach_trace()
        await self._resolve()  # new hosts, if any
        async with self._lock:
            self._sync()
        await self._update_discovery()

    # ------------------------------------------------------------------ maps

    def _registry(self) -> dict[str, str]:
        if self.mcp is None:
            return {}
        try:
            return dict(self.mcp.server_addrs())
        except Exception:
            return {}

    async def _resolve(self, force: bool = False) -> bool:
        net = self.policy.network
        self._registry_addrs = self._registry()
        hosts = hosts_to_resolve(self.policy, self._registry_addrs)
        return await self.resolver.resolve_all(
            hosts, net.resolve_interval_seconds, net.min_resolve_interval_seconds, force=force
        )

    def _sync(self) -> None:
        if self.watch is None:
            return
        t0 = time.monotonic()
        wl = build_watchlist(
            self.policy, self.resolver, self._registry_addrs, self.tls_blocked, self.canaries
        )
        # servers first: a new index is known before the kernel can report it
        if self.consumer is not None:
            self.consumer.servers = wl.servers
        updated, deleted = self.watch.sync(wl.entries)
        self.watchlist = wl
        self.last_sync = {
            "at": time.time(),
            "updated": updated,
            "deleted": deleted,
            "entries": len(self.watch),
            "seconds": round(time.monotonic() - t0, 6),
        }

    async def _resolve_loop(self) -> None:
        while True:
            net = self.policy.network
            await asyncio.sleep(min(net.min_resolve_interval_seconds, net.resolve_interval_seconds))
            try:
                reg = self._registry()
                changed = await self._resolve()
                if changed or reg != self._registry_addrs:
                    self._registry_addrs = reg
                    async with self._lock:
                        self._sync()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("re-resolve failed")

    async def set_canary(self, server_id: str, endpoint: str | None) -> None:
        """Add (or with ``endpoint=None`` remove) a temporary blocked selftest address."""
        if endpoint is None:
            self.canaries.pop(server_id, None)
        else:
            self.canaries[server_id] = endpoint
        async with self._lock:
            self._sync()

    async def refresh(self) -> None:
        """Re-resolve everything now and sync (tests, `bpf status --refresh`)."""
        await self._resolve(force=True)
        async with self._lock:
            self._sync()

    # ------------------------------------------------------------------ discovery

    async def _update_discovery(self) -> None:
        net = self.policy.network
        servers = network_servers(self.policy) if net.discovery and self.mcp is not None else []
        if not servers and self.discovery is None:
            return
        if self.discovery is None:
            self.discovery = Discovery(self._register, self.emit, self._on_tls)
        await self.discovery.update(servers, net.discovery_interval_seconds)

    def _register(self, server_id: str, server_type: str, addr: str, tools: list[dict]) -> Any:
        return self.mcp.register_tools(server_id, server_type, addr, tools, source="daemon")

    async def _on_tls(self, server_id: str, mismatch: bool) -> None:
        changed = (server_id in self.tls_blocked) != mismatch
        if mismatch:
            self.tls_blocked.add(server_id)
        else:
            self.tls_blocked.discard(server_id)
        if changed:
            async with self._lock:
                self._sync()

    # ------------------------------------------------------------------ existing

    async def _report_existing(self) -> None:
        if not self.watch or not self.watchlist or not self.policy.network.tracing:
            return
        entries = dict(self.watch.current)
        found = await asyncio.to_thread(scan, entries)
        servers = self.watchlist.servers
        proc = self.consumer.proc if self.consumer else ProcCache()
        for c in found:
            ref = servers[c.val.server_idx] if c.val.server_idx < len(servers) else None
            facts = proc.get(c.pid, "", 0) if c.pid else None
            host = c.remote_ip if ":" not in c.remote_ip else f"[{c.remote_ip}]"
            mapped = c.remote_ip.startswith("::ffff:") and "." in c.remote_ip
            if mapped:
                host = c.remote_ip[7:]
            self.emit(
                MCPNetworkConnection(
                    source="bpf",
                    remote_addr=f"{host}:{c.remote_port}",
                    server_id=ref.server_id if ref else "",
                    server_type=(ref.server_type if ref else ""),
                    action="block" if c.val.action == ACT_BLOCK else "allow",
                    family=c.family,
                    phase="existing",
                    tag=TAG_NAMES.get(c.val.tag),
                    pid=c.pid,
                    exe=facts.exe if facts else None,
                    cmdline=facts.cmdline if facts else None,
                    ppid=facts.ppid if facts else None,
                )
            )
            self.existing_reported += 1

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        net = self.policy.network
        out: dict[str, Any] = {
            "state": self.state,
            "reason": self.reason,
            "fix": self.fix,
            "pin_dir": net.pin_dir,
            "cgroup_path": self.cgroup_dir or net.cgroup_path,
            "tracing": net.tracing,
            "blocking": net.blocking,
            "trace_all": net.trace_all,
        }
        if self.programs is not None:
            out["programs"] = self.programs.query()
            out["trace_attached"] = self.programs.trace_attached
            out["compile_seconds"] = round(self.programs.compile_seconds, 3)
        if self.watch is not None:
            blocked = sum(1 for v in self.watch.current.values() if v.action == ACT_BLOCK)
            out["maps"] = {
                "watch_v1": {
                    "max_entries": WATCH_MAX_ENTRIES,
                    "entries": len(self.watch),
                    "blocked": blocked,
                },
                "events_v1": {"bytes": EVENTS_RING_BYTES},
            }
        if self.watchlist is not None:
            out["watched_servers"] = {
                sid: sorted(set(keys)) for sid, keys in self.watchlist.watched.items()
            }
            out["blocked_servers"] = sorted(
                {s.server_id for s in self.watchlist.servers if s.blocked and s.server_id}
            )
        if self.consumer is not None:
            out.update(self.consumer.status())
        out["existing_reported"] = self.existing_reported
        out["last_sync"] = self.last_sync
        out["resolve"] = self.resolver.status()
        out["tls_blocked"] = sorted(self.tls_blocked)
        out["discovery"] = self.discovery.status() if self.discovery else {}
        out["pid"] = os.getpid()
        return out
