"""Control-API routes of the BPF layer: GET /v1/bpf, POST /v1/bpf/detach."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from agentsh.agent.netmon.cgroup import resolve_cgroup
from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.programs import detach_all


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(data, default=str), status=status, content_type="application/json"
    )


def routes(ctx: Any) -> list[web.RouteDef]:
    """``ctx.netmon`` is the daemon's NetworkMonitor (or None)."""

    async def status(request: web.Request) -> web.Response:
        mon = ctx.netmon
        if mon is None:
            return _json(
                {"state": "unavailable", "reason": getattr(ctx, "netmon_error", None) or "not started"}
            )
        return _json(mon.status())

    async def detach(request: web.Request) -> web.Response:
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
        return _json({"removed": removed})

    return [web.get("/v1/bpf", status), web.post("/v1/bpf/detach", detach)]
