"""``agentshctl completion bash|zsh|fish``: the shell completion script.

click generates it; the script calls ``agentshctl`` back with
``_AGENTSHCTL_COMPLETE`` set, and the lazy command table (agent/ctl/main.py)
answers command names without importing every command.
"""

from __future__ import annotations

import click

PROG = "agentshctl"
COMPLETE_VAR = "_AGENTSHCTL_COMPLETE"
SHELLS = ("bash", "zsh", "fish")

# Where install-service puts each script (the shells' own search paths for
# completions of locally installed programs).
INSTALL_PATHS = {
    "bash": "/usr/local/share/bash-completion/completions/agentshctl",
    "zsh": "/usr/local/share/zsh/site-functions/_agentshctl",
    "fish": "/usr/local/share/fish/vendor_completions.d/agentshctl.fish",
}


def script(shell: str) -> str:
    """The completion script for ``shell``."""
    from click.shell_completion import get_completion_class

    from agentsh.agent.ctl.main import cli

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - SHELLS are all supported by click
        raise click.ClickException(f"no completion support for {shell}")
    return cls(cli, {}, PROG, COMPLETE_VAR).source()


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    \b
    bash: eval "$(agentshctl completion bash)"    (or install-service installs it)
    zsh:  eval "$(agentshctl completion zsh)"
    fish: agentshctl completion fish | source
    """
    click.echo(script(shell), nl=False)
