"""agentshctl bpf: show and remove the BPF network layer."""

from __future__ import annotations

from typing import Any

import click

from agentsh.agent.core.client_sync import ControlError, DaemonUnavailable, call
from agentsh.agent.ctl.common import api, die, print_json, socket_of


def render(st: dict[str, Any]) -> str:
    out = [f"bpf: {st.get('state')}" + (f" ({st['reason']})" if st.get("reason") else "")]
    if st.get("fix"):
        out.append(f"  fix: {st['fix']}")
    if st.get("state") != "active":
        return "\n".join(out)
    out.append(f"  cgroup   {st.get('cgroup_path')}")
    out.append(f"  pins     {st.get('pin_dir')}")
    progs = ", ".join(f"{p['attach_type']}#{p['prog_id']}" for p in st.get("programs", []))
    out.append(f"  programs {progs or '-'}" + ("  +trace_all" if st.get("trace_attached") else ""))
    w = st.get("maps", {}).get("watch_v1", {})
    out.append(f"  watch    {w.get('entries', 0)} entries ({w.get('blocked', 0)} blocked) of {w.get('max_entries')}")
    out.append(
        f"  events   seen {st.get('events_seen', 0)}  lost {st.get('lost_events', 0)}"
        f"  blocked {st.get('blocked_total', 0)}"
    )
    for sid, keys in sorted(st.get("watched_servers", {}).items()):
        mark = " BLOCKED" if sid in st.get("blocked_servers", []) else ""
        out.append(f"  server {sid or '-'}{mark}: {', '.join(keys)}")
    for sid, d in sorted(st.get("discovery", {}).items()):
        out.append(f"  discovery {sid}: {d.get('tools')} tools" + (f", error: {d['error']}" if d.get("error") else ""))
    return "\n".join(out)


@click.group()
def bpf() -> None:
    """The BPF network layer (connect tracing and blocking)."""


@bpf.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the raw status as JSON.")
@click.pass_context
def bpf_status(ctx: click.Context, as_json: bool) -> None:
    """Programs attached, maps, watched servers, events, lost events."""
    st = api(ctx, "GET", "/v1/bpf")
    if as_json:
        print_json(st)
    else:
        click.echo(render(st))


@bpf.command("detach")
@click.option(
    "--local",
    is_flag=True,
    help="Do it without the daemon (reads pin_dir/cgroup_path from the options below).",
)
@click.option("--pin-dir", default="/sys/fs/bpf/agentsh", show_default=True)
@click.option("--cgroup-path", default="", help="Default: the cgroup2 root.")
@click.pass_context
def bpf_detach(ctx: click.Context, local: bool, pin_dir: str, cgroup_path: str) -> None:
    """Detach every agentsh program and remove the pinned maps (stops enforcement).

    Asks the daemon; when it is not running, does it locally (the programs and
    pinned maps outlive the daemon by design, so this is how to remove them).
    """
    if not local:
        try:
            removed = call(socket_of(ctx, admin=True), "POST", "/v1/bpf/detach", {})["removed"]
        except DaemonUnavailable as e:
            if e.why == "permission denied":
                die(f"{e.socket_path}: permission denied (bpf detach needs root or group agentsh-admin)")
            click.echo(f"{e}; detaching locally", err=True)
            local = True
        except ControlError as e:
            die(str(e))
    if local:
        from agentsh.agent.netmon.cgroup import resolve_cgroup
        from agentsh.agent.netmon.programs import detach_all

        removed = detach_all(pin_dir, resolve_cgroup(cgroup_path))
    for r in removed:
        click.echo(r)
    if not removed:
        click.echo("nothing attached")
