"""Control-API routes of the MCP registry and decision pipeline.

Decisions are not served here: every layer asks on the line channel
(agent/daemon/channel.py; docs/architecture.md "Sockets and roles"), which
also holds a call back until its flow session's results are recorded.
``parse_decision_request`` is the channel's hand-written validation (the hot
path: no pydantic). ``POST /v1/mcp/tools`` runs detection and SQLite work in
a worker thread so a large tools/list never stalls other requests.

Errors: ``{"error": "..."}`` with 400 (bad input) or 404 (unknown server/tool).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aiohttp import web

from agentsh.agent.core.api_models import McpApprove
from agentsh.agent.core.mcp.types import DecisionRequest
from agentsh.agent.core.vocab import CALL_SOURCES, IDENT_RULE, SERVER_TYPES, is_ident
from agentsh.agent.daemon.audit import audit, peer_name
from agentsh.agent.daemon.jsonhttp import BadInput, RouteSet, json_response, read_json, read_model

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext

MAX_TOOLS_PER_REGISTRATION = 10_000
_SOURCES = frozenset(CALL_SOURCES)
_SERVER_TYPES = frozenset(SERVER_TYPES)
_STR_FIELDS = ("server_id", "session_id", "request_id", "dialect", "tool_call_id")
_REQ_FIELDS = frozenset(DecisionRequest.__dataclass_fields__) - {"uid"}


def _err(status: int, msg: str) -> web.Response:
    return json_response({"error": msg}, status=status)


def parse_decision_request(d: Any, where: str = "", peer: Any = None) -> DecisionRequest:
    """Validate one DecisionRequest JSON object by hand (the hot path).

    ``peer`` (credentials of the caller) overrides what the request says about
    who is asking: a non-root caller's pid and uid are its own."""
    if not isinstance(d, dict):
        raise BadInput(f"{where}expected a JSON object")
    unknown = d.keys() - _REQ_FIELDS
    if unknown:
        raise BadInput(f"{where}unknown field(s): {', '.join(sorted(unknown))}")
    name = d.get("tool_name")
    if not isinstance(name, str) or not name:
        raise BadInput(f"{where}tool_name (non-empty string) is required")
    for k in _STR_FIELDS:
        v = d.get(k)
        if v is not None and not isinstance(v, str):
            raise BadInput(f"{where}{k} must be a string or null")
    if d.get("server_id") == "":
        raise BadInput(f"{where}server_id must not be empty")
    source = d.get("source", "shim")
    if source not in _SOURCES:
        raise BadInput(f"{where}source must be one of {', '.join(sorted(_SOURCES))}")
    dialect = d.get("dialect")  # kept as given: which dialects exist is the proxy's business
    if dialect is None:
        if source == "proxy":
            raise BadInput(f"{where}dialect is required for source 'proxy'")
    elif not is_ident(dialect):
        raise BadInput(f"{where}dialect must be a name of {IDENT_RULE}: {str(dialect)[:40]!r}")
    pid = d.get("pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
        raise BadInput(f"{where}pid must be an integer or null")
    emit = d.get("emit", True)
    if not isinstance(emit, bool):
        raise BadInput(f"{where}emit must be a boolean")
    truncated = d.get("arguments_truncated")
    if truncated is not None and not isinstance(truncated, bool):
        raise BadInput(f"{where}arguments_truncated must be a boolean")
    flow_session = d.get("flow_session")  # data-flow step (agent/core/mcp/decision.py step 8)
    if flow_session is not None and (not isinstance(flow_session, str) or not 0 < len(flow_session) <= 256):
        raise BadInput(f"{where}flow_session must be a string of 1-256 characters or null")
    for k in ("can_ask", "flow_check"):
        if not isinstance(d.get(k, False), bool):
            raise BadInput(f"{where}{k} must be a boolean")
    if peer is not None and peer.uid != 0:
        pid = peer.pid
    return DecisionRequest(
        tool_name=name,
        server_id=d.get("server_id"),
        arguments=d.get("arguments"),
        source=source,
        session_id=d.get("session_id"),
        request_id=d.get("request_id"),
        dialect=dialect,
        tool_call_id=d.get("tool_call_id"),
        jsonrpc_id=d.get("jsonrpc_id"),
        pid=pid,
        emit=emit,
        arguments_truncated=truncated,
        uid=peer.uid if peer is not None else None,
        flow_session=flow_session,
        can_ask=d.get("can_ask", False),
        flow_check=d.get("flow_check", False),
    )


def routes(ctx: DaemonContext) -> RouteSet:
    """``ctx.mcp`` is the daemon's agentsh.agent.core.mcp.service.MCPService."""

    async def register(request: web.Request) -> web.Response:
        try:
            body = await read_json(request)
            if not isinstance(body, dict):
                raise BadInput("expected a JSON object")
            server_id = body.get("server_id")
            if not isinstance(server_id, str) or not server_id:
                raise BadInput("server_id (non-empty string) is required")
            server_type = body.get("server_type", "stdio")
            if server_type not in _SERVER_TYPES:
                raise BadInput(f"server_type must be one of {', '.join(sorted(_SERVER_TYPES))}")
            server_addr = body.get("server_addr")
            if server_addr is not None and not isinstance(server_addr, str):
                raise BadInput("server_addr must be a string or null")
            tools = body.get("tools")
            if not isinstance(tools, list):
                raise BadInput("tools (list of tool definitions) is required")
            if len(tools) > MAX_TOOLS_PER_REGISTRATION:
                raise BadInput(f"at most {MAX_TOOLS_PER_REGISTRATION} tools per registration")
            for i, t in enumerate(tools):
                if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
                    raise BadInput(f"tools[{i}]: must be an object with a non-empty string 'name'")
            session_id = body.get("session_id")
            if session_id is not None and not isinstance(session_id, str):
                raise BadInput("session_id must be a string or null")
            complete = body.get("complete", True)
            if not isinstance(complete, bool):
                raise BadInput("complete must be a boolean")
            source = body.get("source", "shim")
            if source not in ("shim", "daemon", "proxy", "ctl"):
                raise BadInput("source must be one of ctl, daemon, proxy, shim")
            pid = body.get("pid")
            if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
                raise BadInput("pid must be an integer or null")
            peer = request.get("peer")
            if peer is not None and peer.uid != 0:
                if source != "shim":
                    raise BadInput("a non-root caller registers tools as source 'shim'")
                pid = peer.pid
            verdicts = await asyncio.to_thread(
                ctx.mcp.register_tools,
                server_id,
                server_type,
                server_addr,
                tools,
                session_id,
                source,
                complete,
                pid,
            )
        except BadInput as e:
            return _err(400, str(e))
        except ValueError as e:
            return _err(400, str(e))
        return json_response({"tools": [v.to_json() for v in verdicts]})

    async def registry_list(request: web.Request) -> web.Response:
        server = request.query.get("server") or None
        return json_response({"tools": ctx.mcp.list(server)})

    async def registry_show(request: web.Request) -> web.Response:
        server, tool = request.match_info["server"], request.match_info["tool"]
        d = ctx.mcp.show(server, tool)
        if d is None:
            return _err(404, f"no tool {tool!r} from server {server!r} in the registry")
        return json_response(d)

    async def names(request: web.Request) -> web.Response:
        return json_response(ctx.mcp.names())

    async def servers(request: web.Request) -> web.Response:
        reg = ctx.mcp.registry
        return json_response(
            {
                "servers": [
                    {
                        "server_id": s.server_id,
                        "server_type": s.server_type,
                        "server_addr": s.server_addr,
                        "active": s.active,
                        "tools_listed": sum(1 for e in reg.list(s.server_id) if e.listed),
                    }
                    for s in sorted(reg.servers().values(), key=lambda s: s.server_id)
                ],
                "addrs": ctx.mcp.server_addrs(),
            }
        )

    async def approve(request: web.Request) -> web.Response:
        try:
            body = await read_model(request, McpApprove)
            server, tool, all_tools = body.server, body.tool, body.all
            by = peer_name(request.get("peer"))
            try:
                entries = ctx.mcp.approve(server, tool, all_tools, by)
            except KeyError:
                what = f"tool {tool!r} of server {server!r}" if tool else f"server {server!r}"
                audit(ctx, request, "mcp_approve", "rejected", server=server, tool=tool, all=all_tools,
                      error=f"no {what} in the registry")
                return _err(404, f"no {what} in the registry")
        except BadInput as e:
            return _err(400, str(e))
        audit(
            ctx, request, "mcp_approve", server=server, tool=tool, all=all_tools,
            approved=[{"tool": e.get("tool_name"), "hash": e.get("hash")} for e in entries],
        )
        return json_response({"approved": entries})

    return RouteSet(
        read=[
            web.get("/v1/mcp/registry", registry_list),
            web.get("/v1/mcp/registry/{server}/{tool}", registry_show),
            web.get("/v1/mcp/servers", servers),
            web.get("/v1/mcp/names", names),
        ],
        agent=[
            web.post("/v1/mcp/tools", register),
        ],
        admin=[web.post("/v1/mcp/approve", approve)],
    )
