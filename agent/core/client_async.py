"""asyncio clients of the daemon's sockets: ``ControlClient`` (HTTP over the
control or admin socket, aiohttp) and ``ChannelClient`` (the line channel,
the one transport for decisions; docs/architecture.md "Sockets and roles").

Paths and errors are those of ``agentsh.agent.core.client_sync`` (re-exported
here): a daemon failure raises the same class whichever client met it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from agentsh.agent.core.client_sync import (
    DEFAULT_SOCKET,
    MAX_DECISION_ARGS_BYTES,
    ControlError,
    DaemonUnavailable,
    _connect_error,
    admin_socket_path,
    cap_decision_request,
    channel_answer,
    channel_path,
    decode_body,
    default_socket,
)

__all__ = [
    "DEFAULT_SOCKET",
    "MAX_DECISION_ARGS_BYTES",
    "ChannelClient",
    "ControlClient",
    "ControlError",
    "DaemonUnavailable",
    "admin_socket_path",
    "cap_decision_request",
    "channel_path",
    "default_socket",
]

CHANNEL_LINE_LIMIT = 64 * 1024 * 1024


class ControlClient:
    """HTTP over a Unix socket (the control API or the admin API), one
    aiohttp session with kept-alive connections."""

    def __init__(self, socket_path: str | None = None, timeout: float = 10.0) -> None:
        self.socket_path = socket_path or default_socket()
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            conn = aiohttp.UnixConnector(path=self.socket_path, limit=16, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=conn, timeout=aiohttp.ClientTimeout(total=self._timeout)
            )
        return self._session

    async def request(self, method: str, path: str, payload: Any = None) -> Any:
        sp = self.socket_path
        if not os.path.exists(sp):
            raise DaemonUnavailable(sp, "no socket")
        data = orjson.dumps(payload) if payload is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        try:
            async with self._sess().request(method, "http://agentshd" + path, data=data, headers=headers) as resp:
                body = decode_body(await resp.read())
                if resp.status >= 300:
                    raise ControlError(resp.status, body)
                return body
        except aiohttp.ClientConnectorError as e:
            raise _connect_error(sp, e.os_error) from e
        except (ConnectionRefusedError, FileNotFoundError, PermissionError) as e:
            raise _connect_error(sp, e) from e
        except aiohttp.ServerDisconnectedError as e:
            raise DaemonUnavailable(sp, "connection closed") from e
        except aiohttp.ClientOSError as e:
            raise DaemonUnavailable(sp, f"connection failed: {e.strerror or e}") from e
        except aiohttp.ClientPayloadError as e:
            raise DaemonUnavailable(sp, "malformed HTTP response") from e
        except TimeoutError as e:
            raise DaemonUnavailable(sp, "timed out") from e

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


class ChannelClient:
    """The line channel from asyncio code: requests pipelined on one
    connection, answers dispatched by id by one reader task.

    Either connects to ``path`` (reconnecting on demand) or uses ``sock``, a
    connection handed over at spawn (then a lost connection stays lost: the
    daemon that made it is gone).
    """

    def __init__(self, path: Path | str | None = None, *, sock: socket.socket | None = None) -> None:
        if (path is None) == (sock is None):
            raise ValueError("give exactly one of path and sock")
        self.path = str(path) if path is not None else None
        self._sock = sock
        self.label = self.path or "inherited channel"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self.closed_for_good = False

    @classmethod
    def from_fd(cls, fd: int) -> ChannelClient:
        return cls(sock=socket.socket(fileno=fd))

    async def _connect(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._writer is not None and not self._writer.is_closing():
                return
            if self._sock is not None:
                if self.closed_for_good:
                    raise DaemonUnavailable(self.label, "channel closed")
                self._reader, self._writer = await asyncio.open_unix_connection(
                    sock=self._sock, limit=CHANNEL_LINE_LIMIT
                )
            else:
                assert self.path is not None
                try:
                    self._reader, self._writer = await asyncio.open_unix_connection(
                        self.path, limit=CHANNEL_LINE_LIMIT
                    )
                except OSError as e:
                    raise _connect_error(self.path, e) from e
            self._task = asyncio.get_running_loop().create_task(self._read_loop(self._reader))

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        err: Exception = DaemonUnavailable(self.label, "connection closed")
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                msg = orjson.loads(line)
                rid = msg.get("id")
                fut = self._pending.pop(rid, None) if isinstance(rid, int) else None
                if fut is None:
                    if msg.get("error"):  # connection-level refusal (e.g. forbidden)
                        err = ControlError(403, msg)
                    continue
                if not fut.done():
                    try:
                        fut.set_result(channel_answer(msg))
                    except ControlError as e:
                        fut.set_exception(e)
        except (ConnectionError, orjson.JSONDecodeError, ValueError) as e:
            err = DaemonUnavailable(self.label, f"connection lost: {e.__class__.__name__}")
        finally:
            pending, self._pending = self._pending, {}
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(err)
            if self._writer is not None:
                self._writer.close()
            self._writer = None
            if self._sock is not None:
                self.closed_for_good = True

    async def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its answer line. Raises ControlError for an error line."""
        if self._writer is None or self._writer.is_closing():
            await self._connect()
        assert self._writer is not None
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            self._writer.write(orjson.dumps({**msg, "id": rid}) + b"\n")
        except (ConnectionError, RuntimeError) as e:
            self._pending.pop(rid, None)
            raise DaemonUnavailable(self.label, f"connection lost: {e.__class__.__name__}") from e
        try:
            return await fut
        finally:
            self._pending.pop(rid, None)

    async def decide(self, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """One tool-call decision (DecisionRequest JSON → Decision JSON).

        The request carries its deadline: a daemon that gets to it later (it was
        stopped, or overloaded) drops it instead of deciding and logging a
        decision the caller no longer waits for (the caller decided offline)."""
        msg = {**cap_decision_request(request), "op": "decide", "deadline": time.time() + timeout}
        res = await asyncio.wait_for(self.request(msg), timeout)
        return res["decision"]

    async def events(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """Hand in events; answered once they are written (durable against a daemon crash)."""
        return await self.request({"op": "events", "events": events})

    async def policy(self) -> dict[str, Any]:
        return await self.request({"op": "policy"})

    async def snapshot(self, since: int | None = None) -> dict[str, Any]:
        return await self.request({"op": "snapshot", "since": since})

    async def report(self, state: dict[str, Any]) -> None:
        await self.request({"op": "report", "state": state})

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
