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
    return {"ANTHROPIC_BASE_URL": root, "OPENAI_BASE_URL": root + "/v1"}


def _policy_listen(socket_path: str | None) -> str:
    from agentsh.agent.client import DaemonUnavailable, call

    try:
        doc = call(socket_path, "GET", "/v1/policy")
    except DaemonUnavailable as e:
        raise click.ClickException(f"{e}; pass --listen HOST:PORT to print the exports anyway") from e
    return str(((doc.get("policy") or {}).get("proxy") or {}).get("listen") or "127.0.0.1:8765")


@click.group("proxy")
def proxy() -> None:
    """The LLM API proxy."""


@proxy.command("env")
@click.option("--listen", default=None, help="HOST:PORT of the proxy (default: the policy's proxy.listen).")
@click.option("--socket", "socket_path", default=None, envvar="AGENTSH_SOCKET", help="agentshd control socket.")
@click.option("--shell", type=click.Choice(["sh", "fish"]), default="sh", show_default=True)
def env(listen: str | None, socket_path: str | None, shell: str) -> None:
    """Print the exports that send an agent's LLM traffic through the proxy."""
    urls = base_urls(listen or _policy_listen(socket_path))
    for k, v in urls.items():
        click.echo(f"set -gx {k} {v}" if shell == "fish" else f"export {k}={v}")
