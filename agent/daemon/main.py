"""agentshd: the privileged hub. Runs in the foreground (systemd Type=notify)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import click

from agentsh.agent.core.logfmt import setup as setup_logging
from agentsh.agent.core.policy.loader import PolicyError
from agentsh.agent.core.version import __version__

log = logging.getLogger("agentsh.daemon")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="/etc/agentsh",
    show_default=True,
    help="Policy directory: agentsh.yaml + policy.d/*.yaml (embedded default when empty).",
)
@click.option("--socket", "socket_path", help="Control socket (default: daemon.socket of the policy).")
@click.option("--events", "events_path", help="Event log path (default: events.path of the policy).")
@click.option("--state-dir", help="State directory (default: daemon.state_dir of the policy).")
@click.option("--foreground", is_flag=True, help="Accepted for clarity; agentshd always runs in the foreground.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@click.version_option(__version__, prog_name="agentshd")
def main(
    config_dir: Path,
    socket_path: str | None,
    events_path: str | None,
    state_dir: str | None,
    foreground: bool,
    log_level: str,
) -> None:
    """Run the agentsh daemon."""
    setup_logging("agentshd", log_level)
    from agentsh.agent.daemon.app import Daemon, Overrides

    ov = Overrides(
        config_dir=config_dir.absolute(),
        socket=socket_path,
        events=events_path,
        state_dir=state_dir,
    )
    try:
        rc = asyncio.run(Daemon(ov).run())
    except PolicyError as e:
        for line in e.errors:
            log.error("policy error: %s", line)
        log.error("no usable policy (and no last good policy saved); not starting")
        sys.exit(78)  # EX_CONFIG
    except SystemExit as e:
        if isinstance(e.code, str):  # a reason not to start (another daemon on the socket, ...)
            log.error("%s", e.code.removeprefix("agentshd: "))
            sys.exit(1)
        raise
    except OSError as e:  # a directory or socket it cannot create: one line, not a traceback
        where = f": {e.filename}" if e.filename else ""
        hint = " (agentshd runs as root)" if os.geteuid() != 0 else ""
        log.error("cannot start: %s%s%s", e.strerror or e, where, hint)
        sys.exit(73)  # EX_CANTCREAT
    sys.exit(rc)


if __name__ == "__main__":
    main()
