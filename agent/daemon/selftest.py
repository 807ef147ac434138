"""The daemon's side of ``agentshctl selftest``: temporary canaries.

A selftest proves each enabled layer enforces, end to end, on the running
daemon, without touching the operator's policy. ``begin`` (admin socket,
audited) installs, for ``TTL_SECONDS`` at most:

* a canary MCP server + tool, registered like any tool and denied by the
  decision pipeline like a ``denied_tools`` rule (agent/core/mcp/decision.py
  ``canaries``), so the shim and the LLM proxy must refuse it;
* a canary address on loopback (``127.x.y.z:port``, nothing listens there)
  blocked in the BPF map, so a connect to it must fail with EPERM, not
  ECONNREFUSED;
* for the LLM proxy, the URL of a loopback upstream the selftest runs: requests
  carrying the selftest token (header ``x-agentsh-selftest``) go there, so a
  canary tool call can come back through the proxy's normal path without a
  real provider. The token and URL reach only the daemon's own children (in
  their decision snapshot).

``end`` removes them and reports the decisions the pipeline took on the
canary (by source and action), so the selftest sees that each layer really
asked the daemon. Canaries that are never ended expire.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiohttp import web

from agentsh.agent.daemon.audit import audit
from agentsh.agent.daemon.jsonhttp import BadInput, RouteSet, json_response, read_json
from agentsh.agent.selftest_canary import canary_tool

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext

TTL_SECONDS = 120.0


@dataclass
class Selftest:
    token: str
    server_id: str
    tool: str
    started: float
    bpf_endpoint: str | None = None
    upstream: str | None = None
    decisions: list[tuple[str, str]] = field(default_factory=list)


class Selftests:
    def __init__(self, ctx: DaemonContext) -> None:
        self.ctx = ctx
        self.active: dict[str, Selftest] = {}

    def owns(self, server_id: str) -> bool:
        """A selftest's canary server (kept listed until the selftest ends)."""
        return any(t.server_id == server_id for t in self.active.values())

    def proxy_view(self) -> list[dict[str, str]]:
        """What the daemon's children get in their snapshot (token → upstream)."""
        self.expire()
        return [{"token": t.token, "upstream": t.upstream} for t in self.active.values() if t.upstream]

    def expire(self) -> None:
        now = time.monotonic()
        for t in [t for t in self.active.values() if now - t.started > TTL_SECONDS]:
            asyncio.get_running_loop().create_task(self._remove(t))

    async def begin(self, upstream: str | None) -> Selftest:
        ctx = self.ctx
        token = secrets.token_hex(16)
        tag = token[:10]
        t = Selftest(token, f"agentsh-selftest-{tag}", f"agentsh_selftest_canary_{tag}", time.monotonic(), upstream=upstream)
        await asyncio.to_thread(
            ctx.mcp.register_tools, t.server_id, "stdio", None, [canary_tool(t.tool)], None, "daemon"
        )
        ctx.mcp.engine.canaries[(t.server_id, t.tool)] = t.started + TTL_SECONDS
        mon = ctx.netmon
        if mon is not None and mon.state == "active":
            b = secrets.token_bytes(3)
            t.bpf_endpoint = f"127.{b[0]}.{b[1]}.{max(b[2], 1)}:{40000 + secrets.randbelow(20000)}"
            await mon.set_canary(t.server_id, t.bpf_endpoint)
        self.active[token] = t
        return t

    async def _remove(self, t: Selftest) -> None:
        ctx = self.ctx
        self.active.pop(t.token, None)
        engine = ctx.mcp.engine
        engine.canaries.pop((t.server_id, t.tool), None)
        t.decisions = engine.canary_decisions.pop((t.server_id, t.tool), [])
        ctx.mcp.remove_server(t.server_id)
        if t.bpf_endpoint and ctx.netmon is not None:
            await ctx.netmon.set_canary(t.server_id, None)

    async def end(self, token: str) -> Selftest | None:
        t = self.active.get(token)
        if t is None:
            return None
        await self._remove(t)
        return t


def routes(ctx: DaemonContext) -> RouteSet:
    tests = ctx.selftests

    async def begin(request: web.Request) -> web.Response:
        body = await read_json(request)
        upstream = body.get("upstream") if isinstance(body, dict) else None
        if upstream is not None and (not isinstance(upstream, str) or not upstream.startswith("http://127.")):
            raise BadInput("upstream must be an http://127.x.y.z URL (a loopback canary upstream)")
        t = await tests.begin(upstream)
        audit(ctx, request, "selftest", phase="begin", server_id=t.server_id, tool=t.tool,
              bpf_endpoint=t.bpf_endpoint)
        mon = ctx.netmon
        return json_response(
            {
                "token": t.token,
                "server_id": t.server_id,
                "tool": t.tool,
                "ttl_seconds": TTL_SECONDS,
                "bpf": {"endpoint": t.bpf_endpoint, "cgroup_path": mon.cgroup_dir}
                if t.bpf_endpoint and mon is not None
                else None,
                "snapshot_version": ctx.mcp.snapshot_version(ctx.store.current.hash),
            }
        )

    async def end(request: web.Request) -> web.Response:
        body = await read_json(request)
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str):
            raise BadInput("token (string) is required")
        t = await tests.end(token)
        if t is None:
            return json_response({"error": "no such selftest (ended or expired)"}, status=404)
        audit(ctx, request, "selftest", phase="end", server_id=t.server_id,
              decisions=[list(d) for d in t.decisions])
        return json_response({"decisions": [{"source": s, "action": a} for s, a in t.decisions]})

    return RouteSet(admin=[web.post("/v1/selftest/begin", begin), web.post("/v1/selftest/end", end)])
