"""Control-API routes of the BPF layer: GET /v1/bpf, POST /v1/bpf/detach."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from agentsh.agent.core.api_models import BpfDetach
from agentsh.agent.core.timefmt import rfc3339_times
from agentsh.agent.daemon.audit import audit
from agentsh.agent.daemon.jsonhttp import RouteSet, json_response, read_model
from agentsh.agent.netmon.cgroup import resolve_cgroup
from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.programs import detach_all

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext


def routes(ctx: DaemonContext) -> RouteSet:
    """``ctx.netmon`` is the daemon's NetworkMonitor (or None)."""

    async def status(request: web.Request) -> web.Response:
        mon = ctx.netmon
        if mon is None:
            return json_response(
                {"state": "unavailable", "reason": getattr(ctx, "netmon_error", None) or "not started"}
            )
        return json_response(rfc3339_times(mon.status()))

    async def detach(request: web.Request) -> web.Response:
        await read_model(request, BpfDetach)
        mon = ctx.netmon
        if mon is not None:
            net = mon.policy.network
            cgdir = mon.cgroup_dir
            await mon.stop(detach=True)
            mon.state, mon.reason = "disabled", "detached by agentshctl bpf detach"
        else:
            net = ctx.store.policy.network
            cgdir = None
        try:
            cgdir = cgdir or resolve_cgroup(net.cgroup_path)
        except BPFUnavailable:
            cgdir = None
        removed = detach_all(net.pin_dir, cgdir)
        audit(ctx, request, "bpf_detach", removed=removed, cgroup=str(cgdir) if cgdir else None)
        return json_response({"removed": removed})

    return RouteSet(read=[web.get("/v1/bpf", status)], admin=[web.post("/v1/bpf/detach", detach)])
