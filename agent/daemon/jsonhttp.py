"""JSON in and out of the control API: one response helper, one body reader,
and a middleware that turns ``BadInput`` into a 400 with the message."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from aiohttp import web

from agentsh.agent.core.api_models import ApiBody, BodyError, parse

M = TypeVar("M", bound=ApiBody)


class BadInput(ValueError):
    """A request the API cannot act on; answered with 400 and the message."""


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(data, default=str), status=status, content_type="application/json"
    )


async def read_json(request: web.Request) -> Any:
    """The request body as JSON ({} when empty); BadInput when it is not JSON."""
    raw = await request.read()
    if not raw:
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadInput(f"invalid JSON: {e}") from None


async def read_model(request: web.Request, model: type[M]) -> M:
    """The body validated by its pydantic model (the non-hot endpoints:
    agent/core/api_models.py); BadInput naming the field when it does not fit."""
    try:
        return parse(model, await read_json(request))
    except BodyError as e:
        raise BadInput(str(e)) from None


@web.middleware
async def bad_input_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadInput as e:
        return json_response({"error": str(e)}, status=400)


class RouteSet:
    """A feature's routes by who may call them (agent/daemon/peercred.py roles):
    ``read`` on both sockets, ``agent`` on the agent-side control socket only,
    ``admin`` on the admin socket only."""

    def __init__(
        self,
        read: list[web.RouteDef] | None = None,
        agent: list[web.RouteDef] | None = None,
        admin: list[web.RouteDef] | None = None,
    ) -> None:
        self.read = read or []
        self.agent = agent or []
        self.admin = admin or []

    def __add__(self, other: RouteSet) -> RouteSet:
        return RouteSet(self.read + other.read, self.agent + other.agent, self.admin + other.admin)
