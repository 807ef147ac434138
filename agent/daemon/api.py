"""Core control-API routes: status, policy, events, shims.

Routes come in three kinds (``RouteSet``): ``read`` (served on both the
agent-side control socket and the admin socket), ``agent`` (the guarded
layers' writes: events, shim registration — agent socket only) and ``admin``
(anything that changes what is enforced — admin socket only, each act
audited). Feature modules contribute their own sets (agent/daemon/api_mcp.py,
agent/daemon/api_bpf.py); ``build_app`` makes the app of one socket. Who may
connect at all is decided per connection before a byte is parsed
(agent/daemon/peercred.py ConnectionGuard).
"""

from __future__ import annotations

import os
import time
from typing import Any

from aiohttp import web

from agentsh.agent.core.api_models import (
    EventsReopen,
    PolicyReload,
    ShimHeartbeat,
    ShimRegister,
    ShimUnregister,
)
from agentsh.agent.core.events.models import ShimExited, ShimRegistered
from agentsh.agent.core.timefmt import rfc3339, rfc3339_times
from agentsh.agent.core.version import __version__
from agentsh.agent.daemon.audit import audit
from agentsh.agent.daemon.context import DaemonContext
from agentsh.agent.daemon.health import assess
from agentsh.agent.daemon.intake import MAX_EVENTS_PER_BATCH, admit, hand_in
from agentsh.agent.daemon.jsonhttp import (
    BadInput,
    RouteSet,
    bad_input_middleware,
    json_response,
    read_json,
    read_model,
)
from agentsh.agent.daemon.peercred import peer_of
from agentsh.agent.daemon.shims import ShimInfo

MAX_EVENTS_PER_POST = MAX_EVENTS_PER_BATCH


def shim_gone(ctx: DaemonContext, info: ShimInfo, source: str, exit_code: int | None = None) -> None:
    """A shim unregistered or stopped heartbeating: record it, and when it was
    the last shim of its server, that server's tools stop being current (pins
    stay). Two sessions may run the same server, hence "last"."""
    canary = ctx.selftests is not None and ctx.selftests.owns(info.server_id)
    if ctx.mcp is not None and not ctx.shims.serves(info.server_id) and not canary:
        ctx.mcp.remove_server(info.server_id)
    ctx.events.emit(
        ShimExited(
            source=source,  # type: ignore[arg-type]
            server_id=info.server_id,
            pid=info.pid,
            uid=info.uid,
            exit_code=exit_code,
            calls=info.calls,
            blocks=info.blocks,
            session_id=info.session_id,
        )
    )


def bpf_status(ctx: DaemonContext) -> dict[str, Any]:
    policy = ctx.store.policy
    if ctx.netmon is not None:
        return ctx.netmon.status()
    if policy.network.enabled:
        return {"state": "unavailable", "reason": ctx.netmon_error or "not started"}
    return {"state": "disabled", "reason": "network.enabled is false"}


def health_answer(ctx: DaemonContext) -> tuple[bool, dict[str, Any]]:
    """``GET /v1/health`` and the metrics listener's ``/healthz``: exactly the
    ``healthy`` of status (agent/daemon/health.py ``assess``)."""
    reasons = assess(ctx, bpf_status(ctx))
    if not reasons:
        return True, {"healthy": True}
    return False, {"healthy": False, "degraded_reasons": reasons}


def status_payload(ctx: DaemonContext) -> dict[str, Any]:
    now = time.time()
    lp = ctx.store.current
    policy = lp.policy
    bpf = bpf_status(ctx)
    degraded = assess(ctx, bpf)
    hooks = ctx.hooks.coverage() if ctx.hooks is not None else {}
    hooks_active = bool(hooks.get("hooks_active"))
    out: dict[str, Any] = {
        "version": __version__,
        "pid": os.getpid(),
        "uptime_seconds": round(now - ctx.started_at, 3),
        "started_at": ctx.started_at,
        "socket": str(ctx.paths.socket),
        "admin_socket": str(ctx.paths.admin_socket),
        "config_dir": str(ctx.paths.config_dir),
        "state_dir": str(ctx.paths.state_dir),
        "policy": {
            "files": lp.files,
            "hash": lp.hash,
            "loaded_at": ctx.store.loaded_at,
            "reloads": ctx.store.reloads,
            "rejections": ctx.store.rejections,
            "last_error": ctx.store.last_error,
        },
        "components": ctx.supervisor.status(),
        "events": ctx.events.stats(),
        "shims": ctx.shims.list(),
        "bpf": bpf,
        "mcp": {**ctx.mcp.stats(), "snapshot_version": ctx.mcp.snapshot_version(lp.hash)}
        if ctx.mcp is not None
        else None,
        "sockets": {name: g.stats() for name, g in ctx.guards.items()},
        "metrics": ctx.metrics.status() if ctx.metrics is not None else {"enabled": False},
        "security_coverage": {
            "llm_proxy": policy.proxy.mode != "disabled",
            "stdio_shims": len(ctx.shims),
            "network": bpf.get("state") == "active",
            **hooks,
            "hooks_active": hooks_active,
            "level": "full" if hooks_active else "proxy_only",
        },
        "hooks_active": hooks_active,
    }
    for name, fn in ctx.status_sections.items():
        try:
            out[name] = fn()
        except Exception as e:
            out[name] = {"error": str(e)}
    out["healthy"] = not degraded
    out["degraded_reasons"] = degraded
    return rfc3339_times(out)  # one time format: RFC 3339 UTC, as in the event log


def core_routes(ctx: DaemonContext) -> RouteSet:
    async def status(request: web.Request) -> web.Response:
        return json_response(status_payload(ctx))

    async def health(request: web.Request) -> web.Response:
        healthy, body = health_answer(ctx)
        return json_response(body, status=200 if healthy else 503)

    async def get_policy(request: web.Request) -> web.Response:
        lp = ctx.store.current
        return json_response(
            {
                "hash": lp.hash,
                "files": lp.files,
                "loaded_at": rfc3339(ctx.store.loaded_at),
                "policy": lp.policy.model_dump(mode="json"),
            }
        )

    async def reload_policy(request: web.Request) -> web.Response:
        await read_model(request, PolicyReload)
        before = ctx.store.current.hash
        ok, res = await ctx.store.reload("api")
        if ok:
            audit(ctx, request, "policy_reload", previous_hash=before, hash=res.hash, files=res.files)  # type: ignore[union-attr]
            return json_response({"ok": True, "hash": res.hash, "files": res.files})  # type: ignore[union-attr]
        audit(ctx, request, "policy_reload", "rejected", kept_hash=before, errors=res)
        return json_response(
            {"ok": False, "errors": res, "kept_hash": ctx.store.current.hash}, status=422
        )

    async def post_events(request: web.Request) -> web.Response:
        body = await read_json(request)
        items = body.get("events") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise BadInput("expected {\"events\": [...]}")
        if len(items) > MAX_EVENTS_PER_POST:
            raise BadInput(f"at most {MAX_EVENTS_PER_POST} events per request")
        peer = request["peer"]
        adm = admit(items, peer.uid, pid=peer.pid)
        accepted = await hand_in(ctx.events, adm.events)
        return json_response(
            {
                "accepted": accepted,
                "rejected": adm.rejected,
                "dropped": len(adm.events) - accepted,
                "errors": adm.errors,
            }
        )

    async def reopen(request: web.Request) -> web.Response:
        await read_model(request, EventsReopen)
        ctx.events.request_reopen()
        audit(ctx, request, "events_reopen", path=str(ctx.paths.events_path))
        return json_response({"ok": True})

    async def shim_register(request: web.Request) -> web.Response:
        body = await read_model(request, ShimRegister)
        server_id, command, session_id = body.server_id, body.command or [], body.session_id
        peer = request["peer"]
        # The kernel says who registers: the pid and uid are the caller's own.
        info = ctx.shims.register(server_id, peer.pid, command, session_id, peer.uid)
        spool = body.spool_dir
        if spool and ctx.user_spools_add is not None:
            ctx.user_spools_add(peer.uid, spool)
        ctx.events.emit(
            ShimRegistered(
                source="shim",
                server_id=server_id,
                command=command,
                pid=peer.pid,
                uid=peer.uid,
                session_id=info.session_id,
            )
        )
        return json_response({"shim_id": info.shim_id, "policy_hash": ctx.store.current.hash})

    def own_shim(request: web.Request) -> ShimInfo | None:
        info = ctx.shims.get(request.match_info["shim_id"])
        peer = request["peer"]
        if info is not None and peer.uid != 0 and info.uid != peer.uid:
            raise web.HTTPForbidden(
                text='{"error": "not your shim"}', content_type="application/json"
            )
        return info

    async def shim_heartbeat(request: web.Request) -> web.Response:
        body = await read_model(request, ShimHeartbeat)
        if own_shim(request) is None or not ctx.shims.heartbeat(request.match_info["shim_id"], body.body()):
            return json_response({"error": "unknown shim (re-register)"}, status=404)
        return json_response({"ok": True, "policy_hash": ctx.store.current.hash})

    async def shim_unregister(request: web.Request) -> web.Response:
        body = await read_model(request, ShimUnregister)
        if own_shim(request) is None:
            return json_response({"error": "unknown shim"}, status=404)
        info = ctx.shims.unregister(request.match_info["shim_id"], body.body())
        if info is None:
            return json_response({"error": "unknown shim"}, status=404)
        shim_gone(ctx, info, "shim", body.exit_code)
        return json_response({"ok": True})

    async def shims(request: web.Request) -> web.Response:
        return json_response({"shims": rfc3339_times(ctx.shims.list())})

    async def components(request: web.Request) -> web.Response:
        return json_response({"components": rfc3339_times(ctx.supervisor.status())})

    return RouteSet(
        read=[
            web.get("/v1/status", status),
            web.get("/v1/health", health),
            web.get("/v1/policy", get_policy),
            web.get("/v1/shims", shims),
            web.get("/v1/components", components),
        ],
        agent=[
            web.post("/v1/events", post_events),
            web.post("/v1/shims/register", shim_register),
            web.post("/v1/shims/{shim_id}/heartbeat", shim_heartbeat),
            web.post("/v1/shims/{shim_id}/unregister", shim_unregister),
        ],
        admin=[
            web.post("/v1/policy/reload", reload_policy),
            web.post("/v1/events/reopen", reopen),
        ],
    )


@web.middleware
async def _peer_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """The connection was admitted by the socket's guard; record who it is."""
    peer = peer_of(request)
    if peer is None:
        return json_response({"error": "forbidden: no peer credentials"}, status=403)
    request["peer"] = peer
    return await handler(request)


def build_app(routes: RouteSet, role: str) -> web.Application:
    """The app of one socket: ``role`` is ``agent`` or ``admin``."""
    app = web.Application(
        middlewares=[_peer_middleware, bad_input_middleware],
        client_max_size=64 * 1024 * 1024,
    )
    app.add_routes(routes.read)
    own = routes.agent if role == "agent" else routes.admin
    other = routes.admin if role == "agent" else routes.agent
    app.add_routes(own)
    where = "admin socket" if role == "agent" else "agent-side control socket"
    for r in other:
        msg = f"{r.method} {r.path} is only served on the {where}"

        async def elsewhere(request: web.Request, msg: str = msg) -> web.Response:
            return json_response({"error": msg}, status=403)

        app.router.add_route(r.method, r.path, elsewhere)

    async def not_found(request: web.Request) -> web.Response:
        return json_response({"error": f"no such endpoint: {request.method} {request.path}"}, status=404)

    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
