"""agentshctl: operate agentsh (status, policy, events, mcp, proxy, bpf, doctor)."""

from __future__ import annotations

import os

import click

from agentsh.agent.client import admin_socket_path, default_socket
from agentsh.agent.ctl.bpf import bpf
from agentsh.agent.ctl.doctor import doctor
from agentsh.agent.ctl.events_cmd import events
from agentsh.agent.ctl.mcp import mcp
from agentsh.agent.ctl.mcp_inspect import inspect
from agentsh.agent.ctl.mcp_wrap import unwrap, wrap
from agentsh.agent.ctl.policy_cmd import policy
from agentsh.agent.ctl.proxy import proxy
from agentsh.agent.ctl.selftest import selftest
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
@click.option(
    "--admin-socket",
    "admin_socket",
    default=None,
    help="Admin socket (default: $AGENTSH_ADMIN_SOCKET or <socket stem>-admin.sock beside the control socket).",
)
@click.version_option(__version__, prog_name="agentshctl")
@click.pass_context
def cli(ctx: click.Context, socket_path: str | None, admin_socket: str | None) -> None:
    """Operate the agentsh host security agent.

    Read-only commands use the agent-side control socket (members of group
    agentsh); commands that change what is enforced (policy reload, mcp
    approve, bpf detach, events reopen) use the admin socket (root and group
    agentsh-admin) and are audited as admin_action events.
    """
    ctx.ensure_object(dict)
    ctx.obj["socket"] = socket_path or default_socket()
    ctx.obj["admin_socket"] = (
        admin_socket or os.environ.get("AGENTSH_ADMIN_SOCKET") or str(admin_socket_path(ctx.obj["socket"]))
    )


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
cli.add_command(selftest)


def main() -> None:
    cli(prog_name="agentshctl")


if __name__ == "__main__":
    main()
