"""Request bodies of the daemon's HTTP endpoints that are off the hot path
(shim registration and heartbeats, admin acts), as pydantic models: defined
once, validated by the daemon, built with by the clients.

Hot paths are not here: decisions, hook evaluations and flow records travel
on the line channel, checked by hand on orjson-decoded dicts (no model
construction per call); ``POST /v1/events`` checks each event against its
event model (agent/daemon/intake.py). See docs/architecture.md "Sockets and
roles".

Every model forbids unknown fields (the shim and the daemon ship together: a
field the daemon does not know is a bug or a forgery, never data to drop) and
is strict (``"5"`` is not a pid, ``1`` is not ``true``). A body that does not
validate is a 400 whose message names the field (``parse``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "ApiBody",
    "BodyError",
    "BpfDetach",
    "EventsReopen",
    "McpApprove",
    "PolicyReload",
    "ShimHeartbeat",
    "ShimRegister",
    "ShimUnregister",
    "parse",
]

_COUNTER = Field(default=None, ge=0, lt=1 << 53)


class ApiBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def body(self) -> dict[str, Any]:
        """The JSON body a client sends (unset optional fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)


class ShimRegister(ApiBody):
    """``POST /v1/shims/register``. The pid and uid recorded are the caller's
    own, from the kernel (``pid`` here is informational)."""

    server_id: str = Field(min_length=1, max_length=256)
    command: list[str] | None = None
    session_id: str | None = Field(default=None, max_length=256)
    pid: int | None = None
    spool_dir: str | None = Field(default=None, max_length=4096)


class ShimHeartbeat(ApiBody):
    """``POST /v1/shims/{id}/heartbeat``: the shim's cumulative counters."""

    tools: int | None = _COUNTER
    calls: int | None = _COUNTER
    blocks: int | None = _COUNTER
    offline_decisions: int | None = _COUNTER
    spooled: int | None = _COUNTER
    hidden: int | None = _COUNTER
    refused: int | None = _COUNTER
    last_offline_at: float | None = Field(default=None, ge=0)


class ShimUnregister(ShimHeartbeat):
    """``POST /v1/shims/{id}/unregister``: the final counters and how the server exited."""

    exit_code: int | None = None


class McpApprove(ApiBody):
    """``POST /v1/mcp/approve`` (admin socket): one tool, or every tool of a server."""

    server: str = Field(min_length=1)
    tool: str | None = Field(default=None, min_length=1)
    all: bool = False

    @model_validator(mode="before")
    @classmethod
    def _no_approver(cls, data: Any) -> Any:
        if isinstance(data, dict) and "approved_by" in data:
            raise ValueError("approved_by is taken from the caller's credentials, not the request")
        return data

    @model_validator(mode="after")
    def _one_target(self) -> McpApprove:
        if self.all == (self.tool is not None):
            raise ValueError("give exactly one of tool (string) and all: true")
        return self


class PolicyReload(ApiBody):
    """``POST /v1/policy/reload`` (admin socket): no fields (the daemon re-reads its files)."""


class EventsReopen(ApiBody):
    """``POST /v1/events/reopen`` (admin socket): no fields."""


class BpfDetach(ApiBody):
    """``POST /v1/bpf/detach`` (admin socket): no fields."""


class BodyError(ValueError):
    """A request body that does not validate; the message names the field(s)."""


M = TypeVar("M", bound=ApiBody)


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse(model: type[M], doc: Any) -> M:
    """``doc`` (decoded JSON) as ``model``; BodyError naming each bad field."""
    if not isinstance(doc, dict):
        raise BodyError("expected a JSON object")
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        parts = []
        for err in e.errors(include_url=False, include_input=False):
            where = _where(tuple(err["loc"]))
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f"{where}: {msg}" if where else msg)
        raise BodyError("; ".join(parts)) from None
