"""agentshd: wiring of the hub's parts, start-up and shutdown order.

Start: policy → event writer → MCP service → control socket → BPF layer →
children (LLM proxy) → READY=1. Stop (SIGTERM): stop children → stop the BPF
userspace (programs and pinned maps stay, so enforcement survives) → close the
socket → drain the event queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import psutil
from aiohttp import web
from pydantic import ValidationError

from agentsh.agent.client import channel_path
from agentsh.agent.daemon import api_mcp
from agentsh.agent.daemon.api import build_app, shim_gone
from agentsh.agent.daemon.context import DaemonContext, RuntimePaths
from agentsh.agent.daemon.decide_channel import DecisionChannel
from agentsh.agent.daemon.sdnotify import Notifier
from agentsh.agent.daemon.shims import ShimTable
from agentsh.agent.daemon.supervisor import ChildSpec, Supervisor
from agentsh.agent.events.models import (
    DaemonStarted,
    DaemonStopping,
    PolicyLoaded,
    PolicyRejected,
    parse_event,
    vouch,
)
from agentsh.agent.events.writer import EventWriter
from agentsh.agent.mcp.service import MCPService
from agentsh.agent.netmon.api import routes as bpf_routes
from agentsh.agent.policy.loader import LoadedPolicy
from agentsh.agent.policy.schema import DaemonConfig
from agentsh.agent.policy.store import PolicyStore
from agentsh.agent.version import __version__

log = logging.getLogger("agentsh.daemon")


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
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        gid = None
    if gid is not None and os.geteuid() == 0:
        os.chown(path, 0, gid)
    os.chmod(path, 0o660)


def _complete_spool_files(spool: Path) -> list[Path]:
    out = sorted(spool.glob("*.jsonl"))
    for f in sorted(spool.glob("*.jsonl.tmp")):
        parts = f.name.split("-")
        if len(parts) >= 3 and parts[1].isdigit() and not psutil.pid_exists(int(parts[1])):
            out.append(f)
    return out


class Daemon:
    def __init__(self, ov: Overrides) -> None:
        self.ov = ov
        self.notifier = Notifier()
        self._stop = asyncio.Event()
        self._stop_reason = "signal"
        self._tasks: list[asyncio.Task] = []
        self._runner: web.AppRunner | None = None
        self._channel: DecisionChannel | None = None

    # ------------------------------------------------------------------ start

    async def run(self) -> int:
        # Where a last good policy may be saved: known before the policy only
        # from --state-dir or the schema default.
        store = PolicyStore(self.ov.config_dir, Path(self.ov.state_dir or DaemonConfig().state_dir))
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

        ctx = DaemonContext(
            paths=paths,
            store=store,
            events=writer,
            supervisor=Supervisor(emit=writer.emit),
            shims=ShimTable(lp.policy.daemon.shim_heartbeat_timeout_seconds),
        )
        self.ctx = ctx
        # From here on SIGTERM drains the event queue (BPF compilation below takes a while).
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.request_stop, "SIGTERM")
        loop.add_signal_handler(signal.SIGINT, self.request_stop, "SIGINT")

        if start_errors:
            writer.emit(
                PolicyRejected(errors=start_errors, files=lp.files, trigger="start", kept_hash=lp.hash)
            )
        writer.emit(PolicyLoaded(hash=lp.hash, files=lp.files, trigger="start"))

        extra_routes = self._start_mcp(ctx) + bpf_routes(ctx)
        self._prepare_spool(ctx)

        _prepare_socket_path(paths.socket)
        app = build_app(ctx, extra_routes)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.UnixSite(self._runner, str(paths.socket))
        await site.start()
        _secure_socket(paths.socket, lp.policy.daemon.group)
        chan_path = channel_path(paths.socket)
        _prepare_socket_path(chan_path)
        self._channel = DecisionChannel(ctx, lp.policy.daemon.group)
        await self._channel.start(chan_path)
        _secure_socket(chan_path, lp.policy.daemon.group)
        log.info("control API listening on %s (decisions: %s)", paths.socket, chan_path)

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

    def _start_mcp(self, ctx: DaemonContext) -> list[web.RouteDef]:
        ctx.mcp = MCPService(ctx.store.policy, ctx.paths.state_dir, ctx.events.emit)
        return api_mcp.routes(ctx)

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
            "agentsh.proxy",
            "--socket",
            str(ctx.paths.socket),
            "--state-dir",
            str(ctx.paths.state_dir),
            "--user",
            p.daemon.user,
        ]
        return ChildSpec(name="llm-proxy", argv=argv)

    def _start_proxy(self, ctx: DaemonContext) -> None:
        if ctx.store.policy.proxy.mode == "disabled":
            return
        ctx.supervisor.add(self._proxy_spec(ctx))
        ctx.supervisor.start("llm-proxy")

    async def _on_policy(self, lp: LoadedPolicy) -> None:
        ctx = self.ctx
        # rotation, fsync and queue settings apply at once; the path needs a restart
        ctx.events.reconfigure(lp.policy.events.model_copy(update={"path": str(ctx.paths.events_path)}))
        if ctx.mcp is not None:
            ctx.mcp.update_policy(lp.policy)
        if ctx.netmon is not None:
            await ctx.netmon.update_policy(lp.policy)
        ctx.shims.heartbeat_timeout = lp.policy.daemon.shim_heartbeat_timeout_seconds
        # the proxy: start/stop on mode changes, otherwise tell it to re-fetch
        have = ctx.supervisor.get("llm-proxy")
        if lp.policy.proxy.mode == "disabled":
            if have is not None:
                await ctx.supervisor.remove("llm-proxy")
        elif have is None:
            self._start_proxy(ctx)
        else:
            ctx.supervisor.signal("llm-proxy", signal.SIGHUP)
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

    # ------------------------------------------------------------------ periodic

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

    def ingest_spool(self, ctx: DaemonContext) -> int:
        """Emit events that shims and the proxy spooled while the daemon was away.

        Files ``*.jsonl`` in the spool dir are complete (writers use
        ``*.jsonl.tmp`` until they close them); the ``.tmp`` of a writer that
        died (``<kind>-<pid>-….jsonl.tmp`` with that pid gone) is complete up to
        its last newline. Each valid line is emitted; invalid lines are counted
        and reported; the file is removed after ingestion.
        """
        n = 0
        for f in _complete_spool_files(ctx.paths.spool_dir):
            try:
                st = f.stat()
                data = f.read_bytes()
            except OSError:
                continue
            bad = 0
            for line in data.splitlines():
                if not line.strip():
                    continue
                try:
                    ev = parse_event(orjson.loads(line))
                except (orjson.JSONDecodeError, ValidationError, TypeError):
                    bad += 1
                    continue
                if not vouch(ev, st.st_uid):  # the file's owner speaks for its events
                    bad += 1
                    continue
                ctx.events.emit(ev)
                n += 1
            if bad:
                log.warning("spool %s: %d invalid lines skipped", f, bad)
            with contextlib.suppress(OSError):
                f.unlink()
        return n

    async def _housekeeping(self, ctx: DaemonContext) -> None:
        while True:
            try:
                n = await asyncio.to_thread(self.ingest_spool, ctx)
                if n:
                    log.info("ingested %d spooled events", n)
                for s in ctx.shims.expire():
                    shim_gone(ctx, s, "daemon")
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
        if self._runner is not None:
            await self._runner.cleanup()
        if self._channel is not None:
            await self._channel.stop()
        for p in (ctx.paths.socket, channel_path(ctx.paths.socket)):
            with contextlib.suppress(OSError):
                p.unlink()
        # last: events from the steps above must reach the log
        await asyncio.to_thread(self.ingest_spool, ctx)
        if ctx.mcp is not None:
            ctx.mcp.close()
        await ctx.events.stop()
