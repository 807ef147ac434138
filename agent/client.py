"""Client for the daemon's control API (HTTP over the Unix socket).

Used by agentshctl, the shim and the LLM proxy. One keep-alive connection
pool per client; JSON both ways with orjson.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

import aiohttp
import orjson

DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"


def channel_path(control_socket: Path | str) -> Path:
    """The decision channel's socket, next to the control socket."""
    p = Path(control_socket)
    return p.with_name(p.stem + "-decide.sock")


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
        self._channel: _DecisionLink | None = None

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

    async def decide(self, request: dict[str, Any]) -> dict[str, Any]:
        """One tool-call decision (DecisionRequest JSON → Decision JSON).

        Uses the decision channel (agent/daemon/decide_channel.py); falls back
        to ``POST /v1/mcp/decide`` when the channel socket is absent.
        """
        if self._channel is None:
            self._channel = _DecisionLink(channel_path(self.socket_path), self.socket_path)
        try:
            return await self._channel.decide(request)
        except _NoChannel:
            return await self.post("/v1/mcp/decide", request)

    async def get(self, path: str) -> Any:
        return await self.request("GET", path)

    async def post(self, path: str, payload: Any = None) -> Any:
        return await self.request("POST", path, payload if payload is not None else {})

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ControlClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _NoChannel(Exception):
    pass


class _DecisionLink:
    """A pipelined connection to the decision channel (one reader task
    dispatching answers by id), reconnected on demand."""

    def __init__(self, path: Path, control_socket: str) -> None:
        self.path = path
        self.control_socket = control_socket
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._task: asyncio.Task | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()

    async def _connect(self) -> None:
        async with self._connecting:
            if self._writer is not None and not self._writer.is_closing():
                return
            if not self.path.exists():
                if os.path.exists(self.control_socket):
                    raise _NoChannel()
                raise DaemonUnavailable(self.control_socket, "no socket")
            try:
                self._reader, self._writer = await asyncio.open_unix_connection(
                    str(self.path), limit=16 * 1024 * 1024
                )
            except OSError as e:
                raise DaemonUnavailable(self.control_socket, f"cannot connect: {e.__class__.__name__}") from e
            self._task = asyncio.create_task(self._read_loop(self._reader))

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        err: Exception = DaemonUnavailable(self.control_socket, "connection closed")
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                msg = orjson.loads(line)
                fut = self._pending.pop(msg.get("id"), None) if isinstance(msg.get("id"), int) else None
                if fut is None:
                    if msg.get("error"):  # connection-level refusal (e.g. forbidden)
                        err = ControlError(403, msg)
                    continue
                if fut.done():
                    continue
                if "error" in msg:
                    fut.set_exception(ControlError(400, msg))
                else:
                    fut.set_result(msg["decision"])
        except (ConnectionError, orjson.JSONDecodeError, ValueError) as e:
            err = DaemonUnavailable(self.control_socket, f"connection lost: {e.__class__.__name__}")
        finally:
            pending, self._pending = self._pending, {}
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(err)
            if self._writer is not None:
                self._writer.close()
            self._writer = None

    async def decide(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._writer is None or self._writer.is_closing():
            await self._connect()
        assert self._writer is not None
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            self._writer.write(orjson.dumps({**request, "id": rid}) + b"\n")
        except (ConnectionError, RuntimeError) as e:
            self._pending.pop(rid, None)
            raise DaemonUnavailable(self.control_socket, f"connection lost: {e.__class__.__name__}") from e
        return await fut

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass


class SyncDecisionClient:
    """Blocking client of the decision channel, one connection per thread.

    For callers that wait for a decision on a thread of their own (the shim's
    relay threads): one write and one line read per decision, no event loop.
    Raises DaemonUnavailable (no channel, connection lost, timeout) or
    ControlError (the daemon refused the request).
    """

    def __init__(self, control_socket: str) -> None:
        import threading

        self.control_socket = control_socket
        self.path = channel_path(control_socket)
        self._local = threading.local()

    def _conn(self, timeout: float) -> tuple[Any, Any]:
        import socket as _socket

        conn = getattr(self._local, "conn", None)
        if conn is None:
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            s.settimeout(timeout)
            try:
                s.connect(str(self.path))
            except OSError as e:
                s.close()
                why = "no socket" if not self.path.exists() else f"cannot connect: {e.__class__.__name__}"
                raise DaemonUnavailable(self.control_socket, why) from e
            conn = (s, s.makefile("rb"))
            self._local.conn = conn
        conn[0].settimeout(timeout)
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn[1].close()
            conn[0].close()
            self._local.conn = None

    def decide(self, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        line = orjson.dumps({**request, "id": 1}) + b"\n"
        for attempt in (0, 1):
            sock, rfile = self._conn(timeout)
            try:
                sock.sendall(line)
                answer = rfile.readline()
                if not answer:
                    raise ConnectionResetError("channel closed")
            except (BrokenPipeError, ConnectionResetError) as e:
                self.close()
                if attempt == 0:
                    continue  # the daemon restarted since this connection was made
                raise DaemonUnavailable(self.control_socket, "connection lost") from e
            except OSError as e:  # incl. timeouts
                self.close()
                raise DaemonUnavailable(self.control_socket, f"{e.__class__.__name__}") from e
            msg = orjson.loads(answer)
            if "error" in msg:
                if msg.get("id") is None:
                    self.close()
                    raise ControlError(403, msg)
                raise ControlError(400, msg)
            return msg["decision"]
        raise DaemonUnavailable(self.control_socket, "connection lost")  # pragma: no cover


def call(socket_path: str | None, method: str, path: str, payload: Any = None) -> Any:
    """Synchronous one-shot call (for CLIs)."""

    async def go() -> Any:
        async with ControlClient(socket_path) as c:
            return await c.request(method, path, payload)

    return asyncio.run(go())
