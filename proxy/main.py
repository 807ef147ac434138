"""``python -m agentsh.proxy``: the LLM proxy process (started by agentshd).

Order matters: arm the parent-death signal, get the policy over the channel
the daemon handed us (``--channel-fd``), bind the listen socket, prepare the
spool/body directories, drop root (and re-arm the parent-death signal, which
a credential change clears), and only then start serving and report
``ready``. SIGHUP re-fetches the policy (the daemon sends it after a reload);
SIGTERM stops gracefully, handing in (or spooling) every pending event.

Exit codes: 0 stopped; 78 (EX_CONFIG) cannot run with this configuration —
the port cannot be bound — after reporting the one-line reason to the daemon,
so its status shows it instead of a crash loop.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import click

from agentsh.agent.core.client_async import (
    ChannelClient,
    DaemonUnavailable,
    channel_path,
    default_socket,
)
from agentsh.agent.core.mcp.offline import SnapshotDecider
from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.bodystore import bodies_path
from agentsh.proxy.decider import DaemonDecider, NameGate, SnapshotPoller
from agentsh.proxy.flow_feed import ChannelFlowSink, FlowFeed
from agentsh.proxy.privileges import drop_privileges, prepare_dir, prepare_file, resolve_account
from agentsh.proxy.reporter import EventReporter
from agentsh.proxy.server import ProxyServer
from agentsh.proxy.upstream import tls_context as upstream_tls_context

log = logging.getLogger("agentsh.proxy")

EX_CONFIG = 78
REPORT_SECONDS = 2.0
_PR_SET_PDEATHSIG = 1


def arm_parent_death(parent_pid: int | None) -> None:
    """Die with the daemon (kill -9 of the daemon must not leave an orphan
    holding the port). Re-armed after the privilege drop: a credential change
    clears it. If the parent is already gone, exit now."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # pragma: no cover - not Linux/glibc
        return
    if parent_pid is not None and os.getppid() != parent_pid:
        log.info("agentshd is gone; exiting")
        os._exit(0)


async def fetch_policy(chan: ChannelClient | None, policy_dir: str | None, attempts: int = 20) -> Policy:
    last: Exception | None = None
    if chan is not None:
        for _ in range(attempts):
            try:
                doc = await asyncio.wait_for(chan.policy(), 5.0)
                return Policy.model_validate(doc["policy"])
            except (DaemonUnavailable, TimeoutError) as e:
                last = e
                if policy_dir or chan.closed_for_good:
                    break
                await asyncio.sleep(0.5)
    if policy_dir:
        from agentsh.agent.core.policy.loader import load_dir
        from agentsh.proxy.dialects import check_policy

        log.warning("daemon unavailable (%s); using policy from %s", last, policy_dir)
        return load_dir(Path(policy_dir), (check_policy,)).policy
    raise SystemExit(f"agentsh-proxy: cannot get the policy from agentshd: {last}")


def bind(listen: str) -> socket.socket:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        s.listen(1024)
    except BaseException:
        s.close()
        raise
    s.setblocking(False)
    return s


async def run(
    channel_fd: int | None,
    socket_path: str | None,
    user: str | None,
    listen: str | None,
    policy_dir: str | None,
    state_dir_arg: str | None,
    parent_pid: int | None,
) -> int:
    arm_parent_death(parent_pid)
    chan: ChannelClient | None
    if channel_fd is not None:
        chan = ChannelClient.from_fd(channel_fd)
    elif socket_path is not None or policy_dir is None:
        chan = ChannelClient(channel_path(socket_path or default_socket()))
    else:
        chan = None
    policy = await fetch_policy(chan, policy_dir)
    if policy.proxy.mode == "disabled":
        log.info("proxy.mode is disabled; exiting")
        return 0
    listen = listen or policy.proxy.listen
    try:
        sock = bind(listen)
    except OSError as e:
        msg = f"cannot listen on {listen}: {e.strerror or e}"
        log.error("%s", msg)
        if chan is not None:
            try:
                await asyncio.wait_for(chan.report({"ready": False, "error": msg}), 2.0)
            except Exception:
                pass
        return EX_CONFIG
    state_dir = Path(state_dir_arg or policy.daemon.state_dir)
    acct = resolve_account(user or policy.daemon.user, policy.daemon.group)
    spool_dir = state_dir / "spool"
    prepare_dir(spool_dir, acct, 0o770, take_over=False)
    prepare_dir(bodies_path(state_dir).parent, acct, 0o700, take_over=True)
    reporter = EventReporter(chan, spool_dir)
    prepare_file(reporter.spool_path, acct)
    # Load the CA store while still root: a bundle given by SSL_CERT_FILE may be
    # readable by root only, and the dropped user must still verify upstreams.
    upstream_tls_context()
    drop_privileges(acct)
    arm_parent_death(parent_pid)

    gate = NameGate(None, policy.mcp.fail_closed)
    offline = SnapshotDecider(policy)
    server = ProxyServer(
        policy,
        decider=DaemonDecider(chan) if chan is not None else _NoDaemon(),
        gate=gate,
        sink=reporter,
        state_dir=state_dir,
    )
    server.judge.offline = offline
    # data flow: tool results to the daemon as origins, the offline engine while it is away
    server.flow = FlowFeed(
        policy,
        ChannelFlowSink(chan) if chan is not None else None,
        local=offline.flow,
        is_offline=lambda: server.judge.is_offline,
        on_failure=server.judge.daemon_failed,
    )
    poller = SnapshotPoller(chan, gate, offline, on_ok=server.judge.daemon_answered, selftests=server.selftests)
    if chan is not None:
        await poller.refresh()
        poller.start()
    reporter.start()
    port = await server.start(sock=sock)
    host = listen.rpartition(":")[0]
    log.info("listening on %s:%s mode=%s", host, port, policy.proxy.mode)

    def state() -> dict[str, Any]:
        return {
            "ready": True,
            "listen": f"{host}:{port}",
            "uid": os.getuid(),
            "mode": server.cfg.mode,
            "snapshot_version": poller.version,
            "events": reporter.stats(),
            "events_dropped": reporter.dropped,
            "requests": server.counts.get("requests", 0),
            "flow": server.flow.stats() if server.flow is not None else None,
            **server.judge.health(),
            "metrics": metrics(),
        }

    def metrics() -> dict[str, Any]:
        """Cumulative counters and histograms for the daemon's /metrics (agent/daemon/metrics.py)."""
        judge = server.judge
        return {
            **server.counts,
            "events_spooled": reporter.spooled,
            "events_dropped": reporter.dropped,
            "offline_decisions": judge.offline_decisions,
            "fail_open": judge.fail_open,
            "added_latency": server.added.to_json(),
            "duration": server.duration.to_json(),
        }

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    tasks: set[asyncio.Task[Any]] = set()

    async def report_loop() -> None:
        while chan is not None:
            try:
                await asyncio.wait_for(chan.report(state()), 2.0)
                server.judge.daemon_answered()
            except Exception:
                if chan.closed_for_good:
                    log.error("the channel to agentshd is closed; exiting")
                    stop.set()
                    return
            await asyncio.sleep(REPORT_SECONDS)

    async def reload() -> None:
        try:
            p = await fetch_policy(chan, None, attempts=1)
        except SystemExit as e:
            log.warning("SIGHUP: %s; keeping the current policy", e)
            return
        if p.proxy.listen != policy.proxy.listen:
            log.warning("proxy.listen changed; it takes effect when the proxy restarts")
        server.update_policy(p)
        offline.update_policy(p)
        await poller.refresh()
        log.info("policy reloaded")

    def on_hup() -> None:
        t = loop.create_task(reload())
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    rep_task = loop.create_task(report_loop())
    loop.add_signal_handler(signal.SIGHUP, on_hup)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    rep_task.cancel()
    await server.stop()
    await poller.stop()
    await reporter.stop()
    if chan is not None:
        await chan.close()
    return 0


class _NoDaemon:
    """Standalone run without a daemon (``--policy-dir`` only): every decision is offline."""

    async def decide(self, req: Any) -> Any:
        raise DaemonUnavailable("-", "running without agentshd")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--channel-fd", type=int, default=None, help="Connected channel to agentshd (given by the daemon).")
@click.option("--socket", "socket_path", default=None, help="agentshd control socket (standalone runs; its -decide.sock is used).")
@click.option("--user", default=None, help="Account to drop to (default: policy daemon.user, else nobody).")
@click.option("--listen", default=None, help="HOST:PORT (default: policy proxy.listen).")
@click.option("--policy-dir", default=None, help="Policy directory to use when the daemon is unreachable.")
@click.option("--state-dir", default=None, help="The daemon's state dir (spool, bodies); default: policy daemon.state_dir.")
@click.option("--parent-pid", type=int, default=None, help="The daemon's pid (exit when it is gone).")
@click.option("--log-level", default="INFO", show_default=True)
def main(
    channel_fd: int | None,
    socket_path: str | None,
    user: str | None,
    listen: str | None,
    policy_dir: str | None,
    state_dir: str | None,
    parent_pid: int | None,
    log_level: str,
) -> None:
    """The agentsh LLM proxy."""
    from agentsh.agent.core.logfmt import setup as setup_logging
    from agentsh.agent.core.policy.loader import PolicyError

    setup_logging("agentsh-proxy", log_level)
    try:
        sys.exit(asyncio.run(run(channel_fd, socket_path, user, listen, policy_dir, state_dir, parent_pid)))
    except PolicyError as e:  # --policy-dir with a bad policy: its errors, one line each
        for line in e.errors:
            log.error("policy error: %s", line)
        sys.exit(EX_CONFIG)
    except SystemExit as e:
        if isinstance(e.code, str):  # a reason to stop, in the log format
            log.error("%s", e.code.removeprefix("agentsh-proxy: "))
            sys.exit(1)
        raise
