"""agentshd: wiring of the hub's parts, start-up and shutdown order.

Start: policy → event writer → MCP service → sockets (agent-side control
socket, agent channel, admin socket; each admits peers by role and per-uid
limits before a byte is parsed) → BPF layer → children (LLM proxy, handed a
connected channel) → READY=1. Stop (SIGTERM): stop children → stop the BPF
userspace (programs and pinned maps stay, so enforcement survives) → close
the sockets → ingest the spool → drain the event queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import grp
import logging
import os
import pwd
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiohttp import web

from agentsh.agent.core.events.models import (
    DaemonStarted,
    DaemonStopping,
    PolicyLoaded,
    PolicyRejected,
)
from agentsh.agent.core.events.writer import EventWriter
from agentsh.agent.core.flow.engine import FlowEngine
from agentsh.agent.core.mcp.service import MCPService
from agentsh.agent.core.policy.loader import LoadedPolicy
from agentsh.agent.core.policy.schema import DaemonConfig
from agentsh.agent.core.policy.store import PolicyStore
from agentsh.agent.core.version import __version__
from agentsh.agent.daemon import api_mcp, selftest, spool_ingest
from agentsh.agent.daemon.api import build_app, core_routes, shim_gone
from agentsh.agent.daemon.api_bpf import routes as bpf_routes
from agentsh.agent.daemon.channel import AgentChannel
from agentsh.agent.daemon.context import DaemonContext, RuntimePaths
from agentsh.agent.daemon.hooks import HookService, write_hooks_conf
from agentsh.agent.daemon.intake import admit, hand_in
from agentsh.agent.daemon.jsonhttp import RouteSet
from agentsh.agent.daemon.metrics import MetricsServer
from agentsh.agent.daemon.peercred import ConnectionGuard, GuardedProtocol, Role, raise_fd_limit
from agentsh.agent.daemon.sdnotify import Notifier
from agentsh.agent.daemon.shims import ShimTable
from agentsh.agent.daemon.supervisor import ChildSpec, Supervisor, reclaim_stale
from agentsh.proxy.dialects import check_policy  # the one module of the proxy the daemon may import

log = logging.getLogger("agentsh.daemon")

PROXY = "llm-proxy"
PROXY_MARKER = "agentsh.proxy"
USER_SPOOLS_FILE = "user-spools.json"
HOME_SPOOL_SCAN_SECONDS = 30.0
MAX_USER_SPOOLS = 4096


@dataclass
class Overrides:
    config_dir: Path
    socket: str | None = None
    events: str | None = None
    state_dir: str | None = None


def resolve_paths(lp: LoadedPolicy, ov: Overrides) -> RuntimePaths:
    p = lp.policy
    sock = Path(ov.socket or p.daemon.socket)
    return RuntimePaths(
        config_dir=ov.config_dir,
        state_dir=Path(ov.state_dir or p.daemon.state_dir),
        run_dir=sock.parent,
        socket=sock,
        events_path=Path(ov.events or p.events.path),
    )


def _prepare_socket_path(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # stale socket from a dead daemon
        else:
            raise SystemExit(f"agentshd: another daemon is listening on {path}")
        finally:
            probe.close()


def _secure_socket(path: Path, group: str) -> None:
    """0660, group ``group`` (root only when the group does not exist)."""
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        gid = 0
    if os.geteuid() == 0:
        os.chown(path, 0, gid)
    os.chmod(path, 0o660)


class Daemon:
    def __init__(self, ov: Overrides) -> None:
        self.ov = ov
        self.notifier = Notifier()
        self._stop = asyncio.Event()
        self._stop_reason = "signal"
        self._tasks: list[asyncio.Task[None]] = []
        self._runners: list[web.AppRunner] = []
        self._servers: list[asyncio.base_events.Server] = []
        self._channel: AgentChannel | None = None
        self._spool_ledger: dict[str, set[str]] = {}
        self._home_scan_at = float("-inf")
        self._home_spool_cache: dict[int, Path] = {}
        """Per spool dir: files ingested but not removable (read-only homes)."""
        self.ctx: DaemonContext

    # ------------------------------------------------------------------ start

    async def run(self) -> int:
        raise_fd_limit()
        # Where a last good policy may be saved: known before the policy only
        # from --state-dir or the schema default.
        store = PolicyStore(
            self.ov.config_dir,
            Path(self.ov.state_dir or DaemonConfig().state_dir),
            checks=(check_policy,),  # proxy.providers keys: the dialect registry knows them
        )
        lp, start_errors = store.load_initial()  # raises PolicyError when nothing usable
        paths = resolve_paths(lp, self.ov)
        store.state_dir = paths.state_dir
        paths.state_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
        if start_errors is None:
            store.save_last_good()  # in the state dir the policy names

        ev_cfg = lp.policy.events.model_copy(update={"path": str(paths.events_path)})
        writer = EventWriter(ev_cfg)
        await writer.start()
        store.set_emitter(writer.emit)
        # From here on SIGTERM drains the event queue (BPF compilation below takes a while).
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.request_stop, "SIGTERM")
        loop.add_signal_handler(signal.SIGINT, self.request_stop, "SIGINT")

        ctx = DaemonContext(
            paths=paths,
            store=store,
            events=writer,
            supervisor=Supervisor(emit=writer.emit),
            shims=ShimTable(lp.policy.daemon.shim_heartbeat_timeout_seconds),
            # one flow engine for every layer (docs/flow.md), step 8 of the decision pipeline
            mcp=MCPService(store.policy, paths.state_dir, writer.emit, flow=FlowEngine(store.policy)),
        )
        self.ctx = ctx
        ctx.user_spools_add = self._add_user_spool
        self._load_user_spools(ctx)

        if start_errors:
            writer.emit(
                PolicyRejected(errors=start_errors, files=lp.files, trigger="start", kept_hash=lp.hash)
            )
        writer.emit(PolicyLoaded(hash=lp.hash, files=lp.files, trigger="start"))

        ctx.hooks = HookService(ctx)
        ctx.selftests = selftest.Selftests(ctx)
        routes = core_routes(ctx) + api_mcp.routes(ctx) + bpf_routes(ctx) + selftest.routes(ctx)
        self._prepare_spool(ctx)
        await self._start_sockets(ctx, routes)
        write_hooks_conf(ctx.paths.socket, ctx.store.policy.flow.hooks.fail_open)  # beside the sockets
        ctx.metrics = MetricsServer(ctx, self._channel)  # metrics.enabled: /metrics and /healthz
        await ctx.metrics.apply(ctx.store.policy)

        if not self._stop.is_set():
            await self._start_netmon(ctx)
        if not self._stop.is_set():
            self._start_proxy(ctx)
        store.subscribe(self._on_policy)

        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)

        self._tasks.append(
            asyncio.create_task(
                store.watch(
                    lambda: store.policy.daemon.watch_interval_seconds,
                    lambda: store.policy.daemon.watch_config,
                )
            )
        )
        self._tasks.append(asyncio.create_task(self._housekeeping(ctx)))
        interval = Notifier.watchdog_interval()
        if interval:
            self._tasks.append(asyncio.create_task(self._watchdog(interval)))

        writer.emit(
            DaemonStarted(
                version=__version__,
                config_dir=str(paths.config_dir),
                socket=str(paths.socket),
                events_path=str(paths.events_path),
                pid=os.getpid(),
            )
        )
        self.notifier.ready(self._status_line(ctx))
        log.info("agentshd %s ready (pid %d), policy %s", __version__, os.getpid(), lp.hash[:19])

        await self._stop.wait()
        await self._shutdown(ctx)
        return 0

    async def _start_sockets(self, ctx: DaemonContext, routes: RouteSet) -> None:
        d = ctx.store.policy.daemon

        def per_uid() -> int:
            return ctx.store.policy.daemon.max_connections_per_uid

        agent_role = Role("agent", lambda: ctx.store.policy.daemon.group)
        ctx.guards = {
            "agent": ConnectionGuard(agent_role, per_uid),
            "channel": ConnectionGuard(agent_role, per_uid),
            "admin": ConnectionGuard(Role("admin", lambda: ctx.store.policy.daemon.admin_group), per_uid),
        }
        loop = asyncio.get_running_loop()
        for role, path, group in (
            ("agent", ctx.paths.socket, d.group),
            ("admin", ctx.paths.admin_socket, d.admin_group),
        ):
            _prepare_socket_path(path)
            runner = web.AppRunner(build_app(routes, role), access_log=None, handle_signals=False)
            await runner.setup()
            self._runners.append(runner)
            factory = runner.server
            assert factory is not None
            guard = ctx.guards[role]
            srv = await loop.create_unix_server(
                functools.partial(GuardedProtocol, factory, guard), path=str(path), backlog=256
            )
            self._servers.append(srv)
            _secure_socket(path, group)
        chan = ctx.paths.channel_socket
        _prepare_socket_path(chan)
        self._channel = AgentChannel(ctx, ctx.guards["channel"])
        await self._channel.start(chan)
        _secure_socket(chan, d.group)
        log.info(
            "listening: %s (agent, group %s), %s (channel), %s (admin, group %s)",
            ctx.paths.socket, d.group, chan, ctx.paths.admin_socket, d.admin_group,
        )

    async def _start_netmon(self, ctx: DaemonContext) -> None:
        policy = ctx.store.policy
        if not policy.network.enabled:
            return
        try:
            from agentsh.agent.netmon.monitor import NetworkMonitor
        except Exception as e:  # BCC missing or broken: keep running the other layers
            ctx.netmon_error = f"cannot load the BPF layer: {e}"
            log.error("%s", ctx.netmon_error)
            return
        ctx.netmon = NetworkMonitor(policy, ctx.events.emit, ctx.paths.state_dir, mcp=ctx.mcp)
        await ctx.netmon.start()
        st = ctx.netmon.status()
        log.info("bpf: %s %s", st.get("state"), st.get("reason") or "")

    def _proxy_spec(self, ctx: DaemonContext) -> ChildSpec:
        p = ctx.store.policy
        argv = [
            sys.executable,
            "-m",
            PROXY_MARKER,
            "--state-dir",
            str(ctx.paths.state_dir),
            "--user",
            p.daemon.user,
            "--parent-pid",
            str(os.getpid()),
        ]
        assert self._channel is not None
        chan = self._channel
        return ChildSpec(
            name=PROXY,
            argv=argv,
            channel=lambda pid_of: chan.serve_child(PROXY, pid_of),
            pidfile=ctx.paths.state_dir / f"{PROXY}.pid",
        )

    def _start_proxy(self, ctx: DaemonContext) -> None:
        if ctx.store.policy.proxy.mode == "disabled":
            return
        ended = reclaim_stale(ctx.paths.state_dir / f"{PROXY}.pid", PROXY_MARKER, str(ctx.paths.state_dir))
        if ended:
            log.warning("ended %d stale LLM proxy process(es) of a previous daemon: %s", len(ended), ended)
        ctx.supervisor.add(self._proxy_spec(ctx))
        ctx.supervisor.start(PROXY)

    async def _on_policy(self, lp: LoadedPolicy) -> None:
        ctx = self.ctx
        # rotation, fsync and queue settings apply at once; the path needs a restart
        ctx.events.reconfigure(lp.policy.events.model_copy(update={"path": str(ctx.paths.events_path)}))
        ctx.mcp.update_policy(lp.policy)  # and its flow engine
        write_hooks_conf(ctx.paths.socket, lp.policy.flow.hooks.fail_open)
        if ctx.netmon is not None:
            await ctx.netmon.update_policy(lp.policy)
        ctx.shims.heartbeat_timeout = lp.policy.daemon.shim_heartbeat_timeout_seconds
        if ctx.metrics is not None:
            await ctx.metrics.apply(lp.policy)
        d = lp.policy.daemon  # the groups apply to the next connection; the files follow
        for path, group in (
            (ctx.paths.socket, d.group),
            (ctx.paths.channel_socket, d.group),
            (ctx.paths.admin_socket, d.admin_group),
        ):
            with contextlib.suppress(OSError):
                _secure_socket(path, group)
        # the proxy: start/stop on mode changes, otherwise tell it to re-fetch
        have = ctx.supervisor.get(PROXY)
        if lp.policy.proxy.mode == "disabled":
            if have is not None:
                await ctx.supervisor.remove(PROXY)
        elif have is None:
            self._start_proxy(ctx)
        else:
            ctx.supervisor.signal(PROXY, signal.SIGHUP)
        self.notifier.status(self._status_line(ctx))

    # ------------------------------------------------------------------ signals

    def request_stop(self, reason: str = "request") -> None:
        self._stop_reason = reason
        self._stop.set()

    def _on_sighup(self) -> None:
        async def go() -> None:
            self.notifier.reloading()
            await self.ctx.store.reload("sighup")
            self.ctx.events.request_reopen()
            self.notifier.ready(self._status_line(self.ctx))

        asyncio.get_running_loop().create_task(go())

    # ------------------------------------------------------------------ spools

    def _prepare_spool(self, ctx: DaemonContext) -> None:
        spool = ctx.paths.spool_dir
        spool.mkdir(parents=True, exist_ok=True)
        # group members (shims, the proxy) may drop files; sticky: only owners remove
        try:
            gid = grp.getgrnam(ctx.store.policy.daemon.group).gr_gid
            if os.geteuid() == 0:
                os.chown(spool, 0, gid)
            os.chmod(spool, 0o1770)
        except (KeyError, OSError):
            os.chmod(spool, 0o1777 if os.geteuid() == 0 else 0o700)

    def _load_user_spools(self, ctx: DaemonContext) -> None:
        try:
            raw = orjson.loads((ctx.paths.state_dir / USER_SPOOLS_FILE).read_bytes())
            ctx.user_spools = {int(k): Path(v) for k, v in raw.items()}
        except (OSError, orjson.JSONDecodeError, ValueError, AttributeError):
            ctx.user_spools = {}

    def _add_user_spool(self, uid: int, path: str) -> None:
        """A shim announced where it spools (a per-user directory when it cannot
        write the shared one): remember it so its events are ingested even if
        that shim never reaches the daemon again."""
        ctx = self.ctx
        p = Path(path)
        if not p.is_absolute() or p == ctx.paths.spool_dir or ctx.user_spools.get(uid) == p:
            return
        if len(ctx.user_spools) >= MAX_USER_SPOOLS and uid not in ctx.user_spools:
            log.warning("not recording spool %s of uid %d: %d per-user spools known", p, uid, MAX_USER_SPOOLS)
            return
        ctx.user_spools[uid] = p
        tmp = ctx.paths.state_dir / (USER_SPOOLS_FILE + ".tmp")
        try:
            tmp.write_bytes(orjson.dumps({str(k): str(v) for k, v in ctx.user_spools.items()}))
            os.replace(tmp, ctx.paths.state_dir / USER_SPOOLS_FILE)
        except OSError as e:
            log.warning("cannot save the per-user spool list: %s", e)

    def _home_spools(self) -> dict[int, Path]:
        """Per-user spools in home directories (``~/.local/state/agentsh/spool``):
        users outside the daemon's group cannot announce theirs. Looked up every
        ``HOME_SPOOL_SCAN_SECONDS``; only existing directories are kept."""
        now = time.monotonic()
        if now - self._home_scan_at < HOME_SPOOL_SCAN_SECONDS:
            return self._home_spool_cache
        self._home_scan_at = now
        found: dict[int, Path] = {}
        try:
            users = pwd.getpwall()
        except OSError:
            users = []
        for pw in users:
            if pw.pw_uid == 0 or not pw.pw_dir or not pw.pw_dir.startswith("/"):
                continue
            p = Path(pw.pw_dir) / ".local" / "state" / "agentsh" / "spool"
            with contextlib.suppress(OSError):
                if p.is_dir():
                    found[pw.pw_uid] = p
        self._home_spool_cache = found
        log.debug("per-user spools in home directories: %s", {u: str(p) for u, p in found.items()})
        return found

    async def ingest_spool(self, ctx: DaemonContext) -> int:
        """Hand in the events shims and the proxy spooled (agent/daemon/spool_ingest.py):
        the shared spool directory and every announced per-user one. Files are
        removed once their events are written."""
        dirs: list[tuple[str, int | None]] = [(str(ctx.paths.spool_dir), None)]
        users = dict(self._home_spools())
        users.update(ctx.user_spools)  # an announced directory wins for its uid
        dirs += [(str(p), uid) for uid, p in users.items()]
        n = 0
        for path, owner in dirs:
            dfd = await asyncio.to_thread(spool_ingest.open_dir, path, owner)
            if dfd is None:
                continue
            seen = self._spool_ledger.setdefault(path, set())
            try:
                found = await asyncio.to_thread(spool_ingest.scan, dfd, path, owner, frozenset(seen))
                if found.files or found.refused:
                    log.debug("spool %s: %d file(s) to ingest, %d refused", path, len(found.files), len(found.refused))
                for why in found.refused:
                    log.warning("spool file refused: %s", why)
                for f in found.files:
                    items, bad = spool_ingest.parse_lines(f.lines)
                    adm = admit(items, f.uid)  # the file's owner speaks for its events
                    n += await hand_in(ctx.events, adm.events)
                    if bad or adm.rejected:
                        log.warning(
                            "spool %s/%s: %d invalid lines, %d events refused (%s)",
                            path, f.name, bad, adm.rejected, "; ".join(adm.errors[:3]),
                        )
                    if not await asyncio.to_thread(spool_ingest.remove, dfd, f):
                        seen.add(f.key)  # read-only (a protected home): never twice
                        if len(seen) > 100_000:
                            seen.clear()
            finally:
                os.close(dfd)
        return n

    # ------------------------------------------------------------------ periodic

    async def _housekeeping(self, ctx: DaemonContext) -> None:
        while True:
            try:
                n = await self.ingest_spool(ctx)
                if n:
                    log.info("ingested %d spooled events", n)
                for s in ctx.shims.expire():
                    shim_gone(ctx, s, "daemon")
                ctx.selftests.expire()
                ctx.hooks.expire()  # flow sessions idle past the timeout → flow_summary
                if ctx.metrics is not None:
                    await ctx.metrics.retry()  # a metrics.listen that was in use
            except Exception:
                log.exception("housekeeping failed")
            await asyncio.sleep(2.0)

    async def _watchdog(self, interval: float) -> None:
        while True:
            self.notifier.watchdog()
            await asyncio.sleep(interval)

    def _status_line(self, ctx: DaemonContext) -> str:
        st = ctx.events.stats()
        return (
            f"policy {ctx.store.current.hash[7:19]}, {len(ctx.shims)} shims, "
            f"{st.get('written', 0)} events written, {st.get('dropped', 0)} dropped"
        )

    # ------------------------------------------------------------------ stop

    async def _shutdown(self, ctx: DaemonContext) -> None:
        ctx.stopping = True
        self.notifier.stopping()
        log.info("stopping (%s)", self._stop_reason)
        with contextlib.suppress(Exception):  # flow state is not kept across restarts: summarise it
            ctx.hooks.expire(everything=True)
        ctx.events.emit(
            DaemonStopping(reason=self._stop_reason, uptime_seconds=round(time.time() - ctx.started_at, 3))
        )
        for t in self._tasks:
            t.cancel()
        await ctx.supervisor.stop_all()
        if ctx.netmon is not None:
            try:
                await ctx.netmon.stop()
            except Exception:
                log.exception("stopping the BPF layer failed")
        if ctx.metrics is not None:
            await ctx.metrics.stop()
        for srv in self._servers:
            srv.close()
        for runner in self._runners:
            await runner.cleanup()
        if self._channel is not None:
            await self._channel.stop()
        for p in (ctx.paths.socket, ctx.paths.channel_socket, ctx.paths.admin_socket):
            with contextlib.suppress(OSError):
                p.unlink()
        # last: events from the steps above must reach the log
        with contextlib.suppress(Exception):
            await self.ingest_spool(ctx)
        ctx.mcp.close()
        await ctx.events.stop()
