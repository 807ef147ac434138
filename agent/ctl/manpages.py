"""Man pages generated from the click commands (``agentshctl man --out DIR``,
``make man``; install-service installs them).

Dependency-free on purpose: the generator walks the lazy command table
(agent/ctl/main.py), which generic generators that read ``group.commands``
would miss, and roff for a handful of sections is a few lines. One page per
command: ``agentshctl(1)``, ``agentshctl-<command>[-<sub>](1)``,
``agentsh-shim(1)`` and ``agentshd(8)``.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Iterator
from pathlib import Path

import click

from agentsh.agent.core.version import __version__

MANUAL = "agentsh manual"


def _esc(text: str) -> str:
    """Text for roff: backslashes and hyphens escaped, no line starting a request."""
    out = []
    for line in text.replace("\\", "\\e").replace("-", "\\-").splitlines():
        out.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(out)


def _paragraphs(help_text: str) -> Iterator[tuple[bool, str]]:
    """(verbatim, text) per paragraph; click's ``\\b`` marks a verbatim one."""
    for para in inspect.cleandoc(help_text).split("\n\n"):
        if para.startswith("\b"):
            yield True, para[1:].strip("\n")
        elif para.strip():
            yield False, " ".join(para.split())


def _date() -> str:
    """The page date: SOURCE_DATE_EPOCH when set (reproducible builds), else today."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return time.strftime("%Y-%m-%d", time.gmtime(int(epoch) if epoch else None))


def _subcommands(cmd: click.Command, ctx: click.Context) -> list[tuple[str, click.Command]]:
    if not isinstance(cmd, click.Group):
        return []
    subs = []
    for name in cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            subs.append((name, sub))
    return subs


def render(cmd: click.Command, ctx: click.Context, section: int) -> str:
    """One page for ``cmd`` (its full name is ``ctx.command_path``)."""
    full = ctx.command_path
    page = full.replace(" ", "-")
    lines = [
        f'.TH "{_esc(page.upper())}" "{section}" "{_date()}" "agentsh {__version__}" "{MANUAL}"',
        ".SH NAME",
        f"{_esc(page)} \\- {_esc(cmd.get_short_help_str(limit=200))}",
        ".SH SYNOPSIS",
        f".B {_esc(full)}",
        _esc(" ".join(cmd.collect_usage_pieces(ctx))),
    ]
    if cmd.help:
        lines.append(".SH DESCRIPTION")
        first = True
        for verbatim, text in _paragraphs(cmd.help):
            if not first:
                lines.append(".PP")
            first = False
            lines.extend([".nf", _esc(text), ".fi"] if verbatim else [_esc(text)])
    opts = [r for p in cmd.get_params(ctx) if (r := p.get_help_record(ctx)) is not None]
    if opts:
        lines.append(".SH OPTIONS")
        for names, text in opts:
            lines.extend([".TP", f"\\fB{_esc(names)}\\fR", _esc(text) if text else ""])
    subs = _subcommands(cmd, ctx)
    if subs:
        lines.append(".SH COMMANDS")
        for name, sub in subs:
            lines.extend([
                ".TP",
                f"\\fB{_esc(name)}\\fR",
                f"{_esc(sub.get_short_help_str(limit=200))} See \\fB{_esc(page)}\\-{_esc(name)}\\fR(1).",
            ])
    see = [] if " " not in full else [full.rsplit(" ", 1)[0].replace(" ", "-")]
    see += [f"{page}-{name}" for name, _ in subs]
    if see:
        lines.append(".SH SEE ALSO")
        lines.append(", ".join(f"\\fB{_esc(s)}\\fR(1)" for s in see))
    return "\n".join(lines) + "\n"


def pages(cmd: click.Command, name: str, section: int, parent: click.Context | None = None) -> Iterator[tuple[str, str]]:
    """(file name, roff) for ``cmd`` and every command below it."""
    ctx = click.Context(cmd, info_name=name, parent=parent)
    yield f"{ctx.command_path.replace(' ', '-')}.{section}", render(cmd, ctx, section)
    for sub_name, sub in _subcommands(cmd, ctx):
        yield from pages(sub, sub_name, section, ctx)


def all_pages() -> Iterator[tuple[str, str]]:
    """Every page agentsh ships."""
    # The commands are found through the console scripts the distribution
    # declares: the CLI does not import the shim or the daemon
    # (docs/architecture.md "Code layout").
    from importlib.metadata import entry_points

    from agentsh.agent.ctl.main import cli

    yield from pages(cli, "agentshctl", 1)
    found = {ep.name: ep for ep in entry_points(group="console_scripts") if ep.value.startswith("agentsh.")}
    for name, section in (("agentsh-shim", 1), ("agentshd", 8)):
        cmd = found[name].load() if name in found else None
        if not isinstance(cmd, click.Command):
            raise click.ClickException(f"console script {name} is not an installed click command (pip install agentsh)")
        yield from pages(cmd, name, section)


def write_pages(out: Path) -> list[Path]:
    """Write every page into ``out/man1`` and ``out/man8``; the paths written."""
    written = []
    for fname, text in all_pages():
        dest = out / f"man{fname.rsplit('.', 1)[1]}" / fname
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        written.append(dest)
    return written


@click.command("man")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write man1/ and man8/ into (e.g. /usr/local/share/man).")
def man(out: Path) -> None:
    """Write man pages for agentshctl, agentshd and agentsh-shim.

    One page per command, generated from the commands' own help:
    agentshctl(1), agentshctl-COMMAND(1), agentsh-shim(1), agentshd(8).
    """
    paths = write_pages(out)
    click.echo(f"wrote {len(paths)} man pages under {out}")
