"""``agentshctl proxy``: point an AI agent at the LLM proxy.

``eval "$(agentshctl proxy env)"`` sets the base URLs the official SDKs (and
Claude Code, Codex, ...) read, so their API traffic goes through the proxy.
"""

from __future__ import annotations

import click


def base_urls(listen: str) -> dict[str, str]:
    """The env vars for a proxy listening on ``listen`` (HOST:PORT)."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    root = f"http://{host}:{port}"
    from agentsh.proxy.dialects import client_env

    return client_env(root)  # each provider's SDK variable (the dialect registry)


def _policy_listen(socket_path: str | None) -> str:
    from agentsh.agent.core.client_sync import DaemonUnavailable, call
    from agentsh.agent.ctl.common import die

    try:
        doc = call(socket_path, "GET", "/v1/policy")
    except DaemonUnavailable as e:
        die(f"{e}; pass --listen HOST:PORT to print the exports anyway", 2)
    return str(((doc.get("policy") or {}).get("proxy") or {}).get("listen") or "127.0.0.1:7390")


@click.group("proxy")
def proxy() -> None:
    """The LLM API proxy."""


@proxy.command("env")
@click.option("--listen", default=None, help="HOST:PORT of the proxy (default: the policy's proxy.listen).")
@click.option("--socket", "socket_path", default=None,
              help="agentshd control socket (default: agentshctl --socket, $AGENTSH_SOCKET, /run/agentsh/agentsh.sock).")
@click.option("--shell", type=click.Choice(["sh", "fish"]), default="sh", show_default=True)
@click.pass_context
def env(ctx: click.Context, listen: str | None, socket_path: str | None, shell: str) -> None:
    """Print the exports that send an agent's LLM traffic through the proxy."""
    if listen is None:
        from agentsh.agent.ctl.common import socket_of

        listen = _policy_listen(socket_path or socket_of(ctx))
    urls = base_urls(listen)
    for k, v in urls.items():
        click.echo(f"set -gx {k} {v}" if shell == "fish" else f"export {k}={v}")
