"""Client for the daemon's control API (HTTP over the Unix socket).

Used by agentshctl, the shim and the LLM proxy. One keep-alive connection
pool per client; JSON both ways with orjson.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import aiohttp
import orjson

DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"


def default_socket() -> str:
    return os.environ.get("AGENTSH_SOCKET", DEFAULT_SOCKET)


class DaemonUnavailable(Exception):
    """The daemon is not running or does not accept connections on the socket."""

    def __init__(self, socket_path: str, why: str) -> None:
        super().__init__(f"agentshd is not running ({why} at {socket_path})")
        self.socket_path = socket_path
        self.why = why


class ControlError(Exception):
    """The daemon answered with a non-2xx status."""

    def __init__(self, status: int, body: Any) -> None:
        msg = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {msg}")
        self.status = status
        self.body = body


class ControlClient:
    def __init__(self, socket_path: str | None = None, timeout: float = 10.0) -> None:
        self.socket_path = socket_path or default_socket()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            conn = aiohttp.UnixConnector(path=self.socket_path, limit=16, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=conn,
                timeout=self._timeout,
                json_serialize=lambda o: orjson.dumps(o).decode(),
            )
        return self._session

    async def request(self, method: str, path: str, payload: Any = None) -> Any:
        if not os.path.exists(self.socket_path):
            raise DaemonUnavailable(self.socket_path, "no socket")
        data = orjson.dumps(payload) if payload is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        try:
            async with self._sess().request(
                method, "http://agentshd" + path, data=data, headers=headers
            ) as resp:
                raw = await resp.read()
                try:
                    body: Any = orjson.loads(raw) if raw else None
                except orjson.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                if resp.status >= 300:
                    raise ControlError(resp.status, body)
                return body
        except (aiohttp.ClientConnectorError, ConnectionRefusedError, FileNotFoundError) as e:
            raise DaemonUnavailable(self.socket_path, f"cannot connect: {e.__class__.__name__}") from e
        except aiohttp.ServerDisconnectedError as e:
            raise DaemonUnavailable(self.socket_path, "connection closed") from e
        except TimeoutError as e:
            raise DaemonUnavailable(self.socket_path, "timed out") from e

    async def get(self, path: str) -> Any:
        return await self.request("GET", path)

    async def post(self, path: str, payload: Any = None) -> Any:
        return await self.request("POST", path, payload if payload is not None else {})

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ControlClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def call(socket_path: str | None, method: str, path: str, payload: Any = None) -> Any:
    """Synchronous one-shot call (for CLIs)."""

    async def go() -> Any:
        async with ControlClient(socket_path) as c:
            return await c.request(method, path, payload)

    return asyncio.run(go())
