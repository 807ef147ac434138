"""The decision channel: tool-call decisions over a lean line protocol.

Shims and the proxy ask the daemon about every tool call. Over the HTTP
control API each round trip costs several hundred microseconds of HTTP
machinery in two Python processes; this channel (a second Unix socket next to
the control socket, same mode and group) carries one JSON object per line
each way and checks the peer's credentials once per connection instead of per
request:

    → {"id": 7, "tool_name": "read_file", "server_id": "fs", "source": "shim", ...}
    ← {"id": 7, "decision": {"action": "allow", ...}}
    ← {"id": 8, "error": "tool_name (non-empty string) is required"}

Requests on one connection are answered in order. The HTTP endpoint
``POST /v1/mcp/decide`` stays for scripts and as the fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import orjson

from agentsh.agent.client import channel_path
from agentsh.agent.daemon.api_mcp import parse_decision_request
from agentsh.agent.daemon.jsonhttp import BadInput
from agentsh.agent.daemon.peercred import may_mutate, peer_of_socket

log = logging.getLogger("agentsh.decide")
MAX_LINE = 16 * 1024 * 1024


__all__ = ["DecisionChannel", "channel_path"]


class DecisionChannel:
    def __init__(self, ctx: Any, group: str) -> None:
        self.ctx = ctx
        self.group = group
        self.server: asyncio.base_events.Server | None = None
        self.connections = 0
        self.requests = 0

    async def start(self, path: Path) -> None:
        self.server = await asyncio.start_unix_server(self._client, path=str(path), limit=MAX_LINE)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = peer_of_socket(writer.get_extra_info("socket"))
        if not may_mutate(peer, self.group):
            who = f"uid {peer.uid}" if peer else "unknown peer"
            writer.write(orjson.dumps({"id": None, "error": f"forbidden: {who} is neither root nor in group {self.group!r}"}) + b"\n")
            # Read what the client already sent before closing: closing with
            # unread input would reset the connection and lose the error line.
            with contextlib.suppress(Exception):
                await writer.drain()
                await asyncio.wait_for(reader.read(1 << 16), 1.0)
            writer.close()
            return
        self.connections += 1
        decide = self.ctx.mcp.decide
        try:
            while True:
                try:
                    line = await reader.readline()
                except (asyncio.LimitOverrunError, ValueError):
                    writer.write(b'{"id":null,"error":"line too long"}\n')
                    break
                if not line:
                    break
                self.requests += 1
                rid = None
                try:
                    d = orjson.loads(line)
                    if not isinstance(d, dict):
                        raise BadInput("expected a JSON object")
                    rid = d.pop("id", None)
                    res = {"id": rid, "decision": decide(parse_decision_request(d)).to_json()}
                except (orjson.JSONDecodeError, BadInput) as e:
                    res = {"id": rid, "error": str(e)}
                except Exception as e:  # never take the channel down for one request
                    log.exception("decision failed")
                    res = {"id": rid, "error": f"internal error: {e.__class__.__name__}"}
                writer.write(orjson.dumps(res) + b"\n")
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.connections -= 1
            writer.close()
