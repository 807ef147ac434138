"""Core control-API routes: status, policy, events, shims.

Feature modules contribute their own routes (agent/daemon/api_mcp.py,
agent/netmon/api.py); ``build_app`` collects them. Every non-GET request goes
through the SO_PEERCRED middleware (agent/daemon/peercred.py).
"""

from __future__ import annotations

import os
import time
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from agentsh.agent.daemon.context import DaemonContext
from agentsh.agent.daemon.jsonhttp import BadInput, bad_input_middleware, json_response, read_json
from agentsh.agent.daemon.peercred import make_middleware
from agentsh.agent.daemon.shims import ShimInfo
from agentsh.agent.events.models import ShimExited, ShimRegistered, parse_event, vouch
from agentsh.agent.version import __version__

MAX_EVENTS_PER_POST = 10_000


def shim_gone(ctx: DaemonContext, info: ShimInfo, source: str, exit_code: int | None = None) -> None:
    """A shim unregistered or stopped heartbeating: record it, and when it was
    the last shim of its server, that server's tools stop being current (pins
    stay). Two sessions may run the same server, hence "last"."""
    if ctx.mcp is not None and not ctx.shims.serves(info.server_id):
        ctx.mcp.remove_server(info.server_id)
    ctx.events.emit(
        ShimExited(
            source=source,  # type: ignore[arg-type]
            server_id=info.server_id,
            pid=info.pid,
            exit_code=exit_code,
            calls=info.calls,
            blocks=info.blocks,
            session_id=info.session_id,
        )
    )


def status_payload(ctx: DaemonContext) -> dict[str, Any]:
    now = time.time()
    lp = ctx.store.current
    policy = lp.policy
    degraded: list[str] = []
    for name in ctx.supervisor.failed():
        degraded.append(f"component {name} failed (restart budget used)")
    if ctx.store.last_error:
        degraded.append("last policy reload was rejected; previous policy in force")
    ev = ctx.events.stats()
    if ev.get("last_error"):
        degraded.append(f"event log: {ev['last_error']}")
    if ctx.netmon is not None:
        bpf = ctx.netmon.status()
    elif policy.network.enabled:
        bpf = {"state": "unavailable", "reason": ctx.netmon_error or "not started"}
    else:
        bpf = {"state": "disabled", "reason": "network.enabled is false"}
    if policy.network.enabled and bpf.get("state") != "active":
        degraded.append(f"bpf: {bpf.get('state')} ({bpf.get('reason')})")
    hooks_active = False
    out: dict[str, Any] = {
        "version": __version__,
        "pid": os.getpid(),
        "uptime_seconds": round(now - ctx.started_at, 3),
        "started_at": ctx.started_at,
        "socket": str(ctx.paths.socket),
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
        "events": ev,
        "shims": ctx.shims.list(),
        "bpf": bpf,
        "mcp": ctx.mcp.stats() if ctx.mcp is not None else None,
        "security_coverage": {
            "llm_proxy": policy.proxy.mode != "disabled",
            "stdio_shims": len(ctx.shims),
            "network": bpf.get("state") == "active",
            "hooks_active": hooks_active,
            "level": "full" if hooks_active else "proxy_only",
        },
    }
    for name, fn in ctx.status_sections.items():
        try:
            out[name] = fn()
        except Exception as e:
            out[name] = {"error": str(e)}
    out["healthy"] = not degraded
    out["degraded_reasons"] = degraded
    return out


def core_routes(ctx: DaemonContext) -> list[web.RouteDef]:
    async def status(request: web.Request) -> web.Response:
        return json_response(status_payload(ctx))

    async def get_policy(request: web.Request) -> web.Response:
        lp = ctx.store.current
        return json_response(
            {
                "hash": lp.hash,
                "files": lp.files,
                "loaded_at": ctx.store.loaded_at,
                "policy": lp.policy.model_dump(mode="json"),
            }
        )

    async def reload_policy(request: web.Request) -> web.Response:
        ok, res = await ctx.store.reload("api")
        if ok:
            return json_response({"ok": True, "hash": res.hash, "files": res.files})  # type: ignore[union-attr]
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
        peer = request.get("peer")
        accepted, rejected, errors = 0, 0, []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                rejected += 1
                errors.append(f"events[{i}]: not an object")
                continue
            try:
                ev = parse_event(item)
            except ValidationError as e:
                rejected += 1
                if len(errors) < 20:
                    first = e.errors(include_url=False)[0]
                    loc = ".".join(str(p) for p in first["loc"])
                    errors.append(f"events[{i}]: {loc}: {first['msg']}")
                continue
            if peer is None or not vouch(ev, peer.uid):
                rejected += 1
                errors.append(f"events[{i}]: source {ev.source!r} may only be posted by root")
                continue
            if ev.pid is None:
                ev.pid = peer.pid
            if ctx.events.emit(ev):
                accepted += 1
        return json_response({"accepted": accepted, "rejected": rejected, "errors": errors})

    async def reopen(request: web.Request) -> web.Response:
        ctx.events.request_reopen()
        return json_response({"ok": True})

    async def shim_register(request: web.Request) -> web.Response:
        body = await read_json(request)
        server_id = body.get("server_id")
        pid = body.get("pid")
        command = body.get("command") or []
        if not isinstance(server_id, str) or not server_id:
            raise BadInput("server_id (string) is required")
        if not isinstance(pid, int):
            raise BadInput("pid (int) is required")
        if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
            raise BadInput("command must be a list of strings")
        peer = request.get("peer")
        info = ctx.shims.register(
            server_id, pid, command, body.get("session_id"), peer.uid if peer else None
        )
        ctx.events.emit(
            ShimRegistered(
                source="shim",
                server_id=server_id,
                command=command,
                pid=pid,
                uid=info.uid,
                session_id=info.session_id,
            )
        )
        return json_response({"shim_id": info.shim_id, "policy_hash": ctx.store.current.hash})

    async def shim_heartbeat(request: web.Request) -> web.Response:
        body = await read_json(request)
        ok = ctx.shims.heartbeat(
            request.match_info["shim_id"], body.get("tools"), body.get("calls"), body.get("blocks")
        )
        if not ok:
            return json_response({"error": "unknown shim (re-register)"}, status=404)
        return json_response({"ok": True, "policy_hash": ctx.store.current.hash})

    async def shim_unregister(request: web.Request) -> web.Response:
        body = await read_json(request)
        info = ctx.shims.unregister(request.match_info["shim_id"])
        if info is None:
            return json_response({"error": "unknown shim"}, status=404)
        code = body.get("exit_code")
        shim_gone(ctx, info, "shim", code if isinstance(code, int) else None)
        return json_response({"ok": True})

    async def shims(request: web.Request) -> web.Response:
        return json_response({"shims": ctx.shims.list()})

    async def components(request: web.Request) -> web.Response:
        return json_response({"components": ctx.supervisor.status()})

    return [
        web.get("/v1/status", status),
        web.get("/v1/policy", get_policy),
        web.post("/v1/policy/reload", reload_policy),
        web.post("/v1/events", post_events),
        web.post("/v1/events/reopen", reopen),
        web.get("/v1/shims", shims),
        web.post("/v1/shims/register", shim_register),
        web.post("/v1/shims/{shim_id}/heartbeat", shim_heartbeat),
        web.post("/v1/shims/{shim_id}/unregister", shim_unregister),
        web.get("/v1/components", components),
    ]


def build_app(ctx: DaemonContext, extra_routes: list[web.RouteDef]) -> web.Application:
    app = web.Application(
        middlewares=[make_middleware(ctx.store.policy.daemon.group), bad_input_middleware],
        client_max_size=64 * 1024 * 1024,
    )
    app.add_routes(core_routes(ctx))
    app.add_routes(extra_routes)

    async def not_found(request: web.Request) -> web.Response:
        return json_response({"error": f"no such endpoint: {request.method} {request.path}"}, status=404)

    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
