"""agentshctl status: is the daemon healthy, and what is it doing?"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

import click

from agentsh.agent.core.timefmt import epoch, seconds_since
from agentsh.agent.ctl.common import ago, api, print_json, table


def _ts(v: Any) -> str:
    """An RFC 3339 time of the status JSON, for people."""
    t = epoch(v)
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(st: dict[str, Any]) -> str:
    out: list[str] = []
    health = "healthy" if st["healthy"] else "DEGRADED"
    out.append(f"agentshd {st['version']}  pid {st['pid']}  up {ago(st['uptime_seconds'])}  [{health}]")
    for r in st.get("degraded_reasons", []):
        out.append(f"  ! {r}")
    out.append(f"socket   {st['socket']}")
    p = st["policy"]
    out.append("")
    out.append(f"Policy   {p['hash']}  loaded {_ts(p['loaded_at'])}")
    for f in p["files"]:
        out.append(f"  {f}")
    if p.get("last_error"):
        out.append("  last reload rejected:")
        out.extend(f"    {e}" for e in p["last_error"])
    out.append("")
    comps = st.get("components") or []
    out.append("Components")
    if comps:
        rows = [
            [
                c["name"],
                c["state"],
                str(c["pid"] or "-"),
                str(c["restarts"]),
                ago(c["uptime_seconds"]),
                _last_exit(c.get("last_exit")),
            ]
            for c in comps
        ]
        out.append(_indent(table(rows, ["NAME", "STATE", "PID", "RESTARTS", "UPTIME", "LAST EXIT"])))
    else:
        out.append("  (none)")
    ev = st["events"]
    out.append("")
    out.append(
        f"Events   {ev.get('path')}  written {ev.get('written', 0)}  dropped {ev.get('dropped', 0)}"
        f"  queued {ev.get('queue_depth', 0)}"
    )
    out.append("")
    shims = st.get("shims") or []
    out.append(f"Shims    {len(shims)} live")
    if shims:
        rows = [
            [
                s["server_id"],
                str(s["pid"]),
                " ".join(s["command"])[:48],
                str(s["tools"]),
                str(s["calls"]),
                str(s["blocks"]),
            ]
            for s in shims
        ]
        out.append(_indent(table(rows, ["SERVER", "PID", "COMMAND", "TOOLS", "CALLS", "BLOCKS"])))
    mcp = st.get("mcp")
    if mcp:
        out.append("")
        out.append("MCP      " + "  ".join(f"{k} {v}" for k, v in mcp.items() if not isinstance(v, dict | list)))
    bpf = st.get("bpf") or {}
    out.append("")
    line = f"BPF      {bpf.get('state', 'unknown')}"
    if bpf.get("reason"):
        line += f" ({bpf['reason']})"
    out.append(line)
    if bpf.get("fix"):
        out.append(f"  fix: {bpf['fix']}")
    if bpf.get("programs"):
        hooks = ", ".join(f"{p['attach_type']}#{p['prog_id']}" for p in bpf["programs"])
        out.append(f"  attached to {bpf.get('cgroup_path') or '?'}: {hooks}")
        mode = [m for m in ("tracing", "blocking", "trace_all") if bpf.get(m)]
        out.append(f"  mode: {', '.join(mode) or 'watch only'}; maps pinned at {bpf.get('pin_dir')}")
    watched = bpf.get("watched_servers") or {}
    if watched:
        blocked = set(bpf.get("blocked_servers") or [])
        for sid, addrs in sorted(watched.items()):
            flag = "BLOCKED" if sid in blocked else "watched"
            out.append(f"  {flag:7s} {sid}: {', '.join(addrs)}")
    if "events_seen" in bpf:
        out.append(
            f"  events seen {bpf.get('events_seen', 0)}, blocked {bpf.get('blocked_total', 0)}, "
            f"lost {bpf.get('lost_events', 0)}"
        )
    res = (bpf.get("resolve") or {}).get("last_resolved_at")
    if res:
        out.append(f"  last resolve {_ts(res)}")
    cov = st.get("security_coverage") or {}
    out.append("")
    out.append(
        f"Coverage {cov.get('level', 'proxy_only')}: "
        + f"llm-proxy {'on' if cov.get('llm_proxy') else 'off'}, "
        + f"stdio shims {cov.get('stdio_shims', 0)}, "
        + f"network {'on' if cov.get('network') else 'off'}, "
        + f"hooks {'on' if cov.get('hooks_active') else 'off'}"
    )
    if cov.get("hooks_active"):
        last = cov.get("last_hook_evaluation_at")
        out.append(
            f"  {cov.get('hook_sessions', 0)} active hook session(s)"
            + (f", last evaluation {ago(seconds_since(last))} ago" if last else "")
        )
    elif cov.get("hooks_enabled") is False:
        out.append("  agent hooks disabled by policy (flow.hooks.enabled: false)")
    else:
        out.append("  no agent hooks seen: `agentshctl hook install --agent claude-code` adds "
                   "Read/Bash/WebFetch data-flow checks (docs/flow.md)")
    return "\n".join(out)


def _indent(s: str) -> str:
    return "\n".join("  " + line for line in s.splitlines())


def _last_exit(le: dict[str, Any] | None) -> str:
    if not le:
        return "-"
    what = le.get("signal") or f"code {le.get('code')}"
    return f"{what} {ago(seconds_since(le.get('at')))} ago"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Daemon health: policy, components, events, shims, BPF, coverage.

    Exit 0 when healthy, 1 when degraded, 2 when the daemon is unreachable.
    """
    st = api(ctx, "GET", "/v1/status")
    if as_json:
        print_json(st)
    else:
        click.echo(render(st))
    sys.exit(0 if st.get("healthy") else 1)
