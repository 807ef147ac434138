"""agentshctl: operate agentsh (status, policy, events, mcp, proxy, bpf, doctor).

Commands are loaded lazily: ``agentshctl --help`` and completion of command
names read the static table below, and running a command imports only its
module, so every command starts fast (docs/operations.md "CLI start-up";
measured by bench/cli.py). To add a command, add one line to ``COMMANDS``;
tests/test_cli_startup_contract.py checks that each line's help text matches
the command it names and that no command module imports aiohttp or pydantic
just to be listed.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import click

from agentsh.agent.core.version import __version__

# "name" or "group sub": ("module:attribute", one-line help as the command's
# docstring gives it). A "group sub" line adds a command from another module to
# a group when the group is loaded.
COMMANDS: dict[str, tuple[str, str]] = {
    "status": ("agentsh.agent.ctl.status:status", "Daemon health: policy, components, events, shims, BPF, coverage."),
    "policy": ("agentsh.agent.ctl.policy_cmd:policy", "Check, show and reload the policy."),
    "events": ("agentsh.agent.ctl.events_cmd:events", "Read the event log."),
    "mcp": ("agentsh.agent.ctl.mcp:mcp", "MCP tool registry, approvals, events and calls."),
    "mcp wrap": ("agentsh.agent.ctl.mcp_wrap:wrap", ""),
    "mcp unwrap": ("agentsh.agent.ctl.mcp_wrap:unwrap", ""),
    "mcp inspect": ("agentsh.agent.ctl.mcp_inspect:inspect", ""),
    "proxy": ("agentsh.agent.ctl.proxy:proxy", "The LLM API proxy."),
    "bpf": ("agentsh.agent.ctl.bpf:bpf", "The BPF network layer (connect tracing and blocking)."),
    "doctor": ("agentsh.agent.ctl.doctor:doctor", "Check this host for what agentsh's BPF layer needs, and explain fixes."),
    "selftest": ("agentsh.agent.ctl.selftest:selftest", "Check live, with canaries, that every enabled layer enforces."),
    "hook": ("agentsh.agent.ctl.hook:hook", "Install, remove and check agent hooks (Claude Code) and evaluate one."),
    "install-service": ("agentsh.agent.ctl.service:install_service", "Install agentsh as a systemd service: commands on PATH, unit, /etc/agentsh, logrotate, man pages, completion, accounts."),
    "completion": ("agentsh.agent.ctl.completion:completion", "Print the shell completion script for bash, zsh or fish."),
    "man": ("agentsh.agent.ctl.manpages:man", "Write man pages for agentshctl, agentshd and agentsh-shim."),
}


def load(name: str) -> click.Command:
    """The command a ``COMMANDS`` line names (imports its module)."""
    target = COMMANDS[name][0]
    module, _, attr = target.partition(":")
    cmd = getattr(importlib.import_module(module), attr)
    if not isinstance(cmd, click.Command):  # pragma: no cover - a wrong table line
        raise TypeError(f"{target} is not a click command")
    if isinstance(cmd, click.Group):
        for sub in COMMANDS:
            parent, _, child = sub.partition(" ")
            if parent == name and child and child not in cmd.commands:
                cmd.add_command(load(sub), child)
    return cmd


class LazyGroup(click.Group):
    """A group whose commands come from ``COMMANDS``, imported on use."""

    def _top(self) -> list[str]:
        return [n for n in COMMANDS if " " not in n]

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self._top()) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS and " " not in cmd_name:
            self.commands[cmd_name] = load(cmd_name)
        return self.commands.get(cmd_name)

    def _stand_in(self, name: str) -> click.Command:
        """A command carrying only the table's help text (for listings)."""
        return self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, self._stand_in(n).get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        items = [
            CompletionItem(n, help=self._stand_in(n).get_short_help_str())
            for n in self.list_commands(ctx)
            if n.startswith(incomplete)
        ]
        # Options of the group itself (--socket, ...), without listing commands again.
        items.extend(click.Command.shell_complete(self, ctx, incomplete))
        return items

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if self.get_command(ctx, name) is None and not ctx.resilient_parsing and not name.startswith("-"):
            raise click.exceptions.NoSuchCommand(name, possibilities=self.list_commands(ctx), ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    from agentsh.agent.core.client_sync import admin_socket_path, default_socket

    ctx.ensure_object(dict)
    ctx.obj["socket"] = socket_path or default_socket()
    ctx.obj["admin_socket"] = (
        admin_socket or os.environ.get("AGENTSH_ADMIN_SOCKET") or str(admin_socket_path(ctx.obj["socket"]))
    )


def main() -> None:
    # pydantic scans every installed distribution's entry points for plugins on
    # first model build; agentsh uses none, and a root CLI should not load what a
    # third-party package registers there (docs/operations.md "CLI start-up").
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    cli(prog_name="agentshctl")


if __name__ == "__main__":
    main()
