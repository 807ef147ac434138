"""agentshctl: operate agentsh (status, policy, events, mcp, proxy, bpf, doctor)."""

from __future__ import annotations

import click

from agentsh.agent.client import default_socket
from agentsh.agent.ctl.bpf import bpf
from agentsh.agent.ctl.doctor import doctor
from agentsh.agent.ctl.events_cmd import events
from agentsh.agent.ctl.mcp import mcp
from agentsh.agent.ctl.mcp_inspect import inspect
from agentsh.agent.ctl.mcp_wrap import unwrap, wrap
from agentsh.agent.ctl.policy_cmd import policy
from agentsh.agent.ctl.proxy import proxy
from agentsh.agent.ctl.service import install_service
from agentsh.agent.ctl.status import status
from agentsh.agent.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--socket",
    "socket_path",
    default=None,
    help="Control socket of agentshd (default: $AGENTSH_SOCKET or /run/agentsh/agentsh.sock).",
)
@click.version_option(__version__, prog_name="agentshctl")
@click.pass_context
def cli(ctx: click.Context, socket_path: str | None) -> None:
    """Operate the agentsh host security agent."""
    ctx.ensure_object(dict)
    ctx.obj["socket"] = socket_path or default_socket()


cli.add_command(status)
cli.add_command(policy)
cli.add_command(events)
cli.add_command(install_service)
mcp.add_command(wrap)
mcp.add_command(unwrap)
mcp.add_command(inspect)
cli.add_command(mcp)
cli.add_command(proxy)
cli.add_command(bpf)
cli.add_command(doctor)


def main() -> None:
    cli(prog_name="agentshctl")


if __name__ == "__main__":
    main()
