"""agentshctl policy validate|show|reload."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentsh.agent.ctl.common import api, print_json

# The loader (pydantic models) and yaml are imported by the commands that use
# them: `policy reload` and every --help start without them.


@click.group()
def policy() -> None:
    """Check, show and reload the policy."""


@policy.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="Print errors only.")
def validate(paths: tuple[Path, ...], quiet: bool) -> None:
    """Check policy files or a config directory offline (no daemon needed).

    With a directory: its agentsh.yaml and policy.d/*.yaml, merged as the
    daemon would. With files: those files merged in the order given. With
    nothing: /etc/agentsh. Exit 1 on any error.
    """
    from agentsh.agent.core.policy.loader import PolicyError, load_dir, load_paths
    from agentsh.proxy.dialects import check_policy  # proxy.providers keys (the dialect registry)

    targets = list(paths) or [Path("/etc/agentsh")]
    dirs = [p for p in targets if p.is_dir()]
    files = [p for p in targets if not p.is_dir()]
    failed = False
    for d in dirs:
        try:
            lp = load_dir(d, (check_policy,))
            if not quiet:
                click.echo(f"{d}: OK ({len(lp.files)} file(s), {lp.hash})")
        except PolicyError as e:
            failed = True
            for line in e.errors:
                click.echo(line, err=True)
    if files:
        missing = [f for f in files if not f.exists()]
        for f in missing:
            click.echo(f"{f}: no such file or directory", err=True)
            failed = True
        present = [f for f in files if f.exists()]
        if present:
            try:
                lp = load_paths(present, (check_policy,))
                if not quiet:
                    click.echo(f"{', '.join(map(str, present))}: OK ({lp.hash})")
            except PolicyError as e:
                failed = True
                for line in e.errors:
                    click.echo(line, err=True)
    sys.exit(1 if failed else 0)


@policy.command()
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--config-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Show the policy a directory would give, offline, instead of asking the daemon.",
)
@click.pass_context
def show(ctx: click.Context, as_json: bool, config_dir: Path | None) -> None:
    """Print the effective merged policy and its content hash."""
    import yaml

    if config_dir is not None:
        from agentsh.agent.core.policy.loader import PolicyError, load_dir
        from agentsh.proxy.dialects import check_policy

        try:
            lp = load_dir(config_dir, (check_policy,))
        except PolicyError as e:
            for line in e.errors:
                click.echo(line, err=True)
            sys.exit(1)
        data = {"hash": lp.hash, "files": lp.files, "policy": lp.policy.model_dump(mode="json")}
    else:
        data = api(ctx, "GET", "/v1/policy")
    if as_json:
        print_json(data)
        return
    click.echo(f"# hash: {data['hash']}")
    for f in data["files"]:
        click.echo(f"# file: {f}")
    click.echo(yaml.safe_dump(data["policy"], sort_keys=False, default_flow_style=False), nl=False)


@policy.command()
@click.pass_context
def reload(ctx: click.Context) -> None:
    """Ask the daemon to reload; a bad policy is rejected and the old one kept."""
    res = api(ctx, "POST", "/v1/policy/reload", admin=True)
    click.echo(f"policy loaded: {res['hash']}")
