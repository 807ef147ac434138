"""``python -m agentsh.proxy``: the LLM proxy process (started by agentshd).

Order matters: fetch the policy from the daemon, bind the listen socket,
prepare the spool/body directories, drop root, and only then start serving.
SIGHUP re-fetches the policy (the daemon sends it after a reload); SIGTERM
stops gracefully, flushing (or spooling) every pending event.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import click

from agentsh.agent.client import ControlClient, DaemonUnavailable, default_socket
from agentsh.agent.policy.schema import Policy
from agentsh.proxy.bodystore import bodies_path
from agentsh.proxy.decider import DaemonDecider, NameGate, NamesPoller
from agentsh.proxy.privileges import drop_privileges, prepare_dir, prepare_file, resolve_account
from agentsh.proxy.reporter import EventReporter
from agentsh.proxy.server import ProxyServer
from agentsh.proxy.upstream import tls_context as upstream_tls_context

log = logging.getLogger("agentsh.proxy")


async def fetch_policy(client: ControlClient, policy_dir: str | None, attempts: int = 20) -> Policy:
    last: Exception | None = None
    for _ in range(attempts):
        try:
            doc = await client.get("/v1/policy")
            return Policy.model_validate(doc["policy"])
        except DaemonUnavailable as e:
            last = e
            if policy_dir:
                break
            await asyncio.sleep(0.5)
    if policy_dir:
        from agentsh.agent.policy.loader import load_dir

        log.warning("daemon unavailable (%s); using policy from %s", last, policy_dir)
        return load_dir(Path(policy_dir)).policy
    raise SystemExit(f"agentsh-proxy: cannot get the policy from agentshd: {last}")


def bind(listen: str) -> socket.socket:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(1024)
    s.setblocking(False)
    return s


async def run(
    socket_path: str, user: str | None, listen: str | None, policy_dir: str | None, state_dir_arg: str | None
) -> int:
    client = ControlClient(socket_path)
    policy = await fetch_policy(client, policy_dir)
    if policy.proxy.mode == "disabled":
        log.info("proxy.mode is disabled; exiting")
        await client.close()
        return 0
    listen = listen or policy.proxy.listen
    sock = bind(listen)
    state_dir = Path(state_dir_arg or policy.daemon.state_dir)
    acct = resolve_account(user or policy.daemon.user, policy.daemon.group)
    spool_dir = state_dir / "spool"
    prepare_dir(spool_dir, acct, 0o770, take_over=False)
    prepare_dir(bodies_path(state_dir).parent, acct, 0o700, take_over=True)
    reporter = EventReporter(client, spool_dir)
    prepare_file(reporter.spool_path, acct)
    # Load the CA store while still root: a bundle given by SSL_CERT_FILE may be
    # readable by root only, and the dropped user must still verify upstreams.
    upstream_tls_context()
    drop_privileges(acct)

    gate = NameGate(None, policy.mcp.fail_closed)
    poller = NamesPoller(client, gate)
    await poller.refresh()
    poller.start()
    reporter.start()
    server = ProxyServer(policy, decider=DaemonDecider(client), gate=gate, sink=reporter, state_dir=state_dir)
    port = await server.start(sock=sock)
    print(f"agentsh-proxy: listening on {listen.rpartition(':')[0]}:{port} mode={policy.proxy.mode}", file=sys.stderr, flush=True)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    tasks: set[asyncio.Task[Any]] = set()

    async def reload() -> None:
        try:
            p = await fetch_policy(client, None, attempts=1)
        except SystemExit as e:
            log.warning("SIGHUP: %s; keeping the current policy", e)
            return
        if p.proxy.listen != policy.proxy.listen:
            log.warning("proxy.listen changed; it takes effect when the proxy restarts")
        server.update_policy(p)
        await poller.refresh()
        log.info("policy reloaded")

    def on_hup() -> None:
        t = loop.create_task(reload())
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGHUP, on_hup)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await server.stop()
    await poller.stop()
    await reporter.stop()
    await client.close()
    return 0


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--socket", "socket_path", default=None, help="agentshd control socket.")
@click.option("--user", default=None, help="Account to drop to (default: policy daemon.user, else nobody).")
@click.option("--listen", default=None, help="HOST:PORT (default: policy proxy.listen).")
@click.option("--policy-dir", default=None, help="Policy directory to use when the daemon is unreachable.")
@click.option("--state-dir", default=None, help="The daemon's state dir (spool, bodies); default: policy daemon.state_dir.")
@click.option("--log-level", default="INFO", show_default=True)
def main(
    socket_path: str | None,
    user: str | None,
    listen: str | None,
    policy_dir: str | None,
    state_dir: str | None,
    log_level: str,
) -> None:
    """The agentsh LLM proxy."""
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sys.exit(asyncio.run(run(socket_path or default_socket(), user, listen, policy_dir, state_dir)))
