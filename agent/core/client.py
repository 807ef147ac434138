"""Clients of the daemon's sockets.

Three sockets sit side by side (docs/architecture.md "Sockets and roles"):

* ``<dir>/agentsh.sock`` — agent-side control API (HTTP): registration,
  events, read-only status. ``ControlClient``.
* ``<dir>/agentsh-decide.sock`` — agent-side channel: one JSON object per
  line each way, for the hot path (decisions) and the few other things a
  layer needs (events with a durable acknowledgement, the policy, the
  decision snapshot). ``ChannelClient`` (asyncio) and ``SyncChannelClient``
  (blocking, one connection per thread). The daemon's children get an
  already-connected channel (a socketpair end) at spawn instead of a path.
* ``<dir>/agentsh-admin.sock`` — admin API (HTTP): approve, reload, detach,
  reopen. ``ControlClient(admin_socket_path(...))``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

# Paths, errors and the blocking one-shot ``call`` live in agent/core/sockets.py
# (importable without asyncio/aiohttp, for agentshctl's start-up); re-exported.
from agentsh.agent.core.sockets import (
    DEFAULT_SOCKET,
    ControlError,
    DaemonUnavailable,
    admin_socket_path,
    call,
    channel_path,
    default_socket,
)

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "DEFAULT_SOCKET",
    "MAX_DECISION_ARGS_BYTES",
    "ChannelClient",
    "ControlClient",
    "ControlError",
    "DaemonUnavailable",
    "SyncChannelClient",
    "SyncDecisionClient",
    "admin_socket_path",
    "call",
    "cap_decision_request",
    "channel_path",
    "default_socket",
]

MAX_DECISION_ARGS_BYTES = 1 << 20
"""Arguments of a decision request beyond this size travel clipped (a 50 MB
tools/call is decided on its name, server and a bounded copy of its input;
``arguments_truncated`` says so in the event)."""


def cap_decision_request(req: dict[str, Any]) -> dict[str, Any]:
    """``req`` with its arguments clipped when they are too big to ship."""
    args = req.get("arguments")
    if args is None or isinstance(args, int | float | bool):
        return req
    try:
        size = len(orjson.dumps(args))
    except (TypeError, orjson.JSONEncodeError):
        size = MAX_DECISION_ARGS_BYTES + 1  # not encodable as is: clip it
    if size <= MAX_DECISION_ARGS_BYTES:
        return req
    from agentsh.agent.core.lenient_json import clip

    # ever smaller copies until one fits: per-container limits alone do not bound
    # the total (200 items at each of 16 levels), the encoded size does
    for depth, items, chars in ((16, 200, 16384), (8, 64, 4096), (4, 16, 1024), (2, 8, 256)):
        small = clip(args, max_depth=depth, max_items=items, max_str=chars)
        try:
            if len(orjson.dumps(small)) <= MAX_DECISION_ARGS_BYTES:
                return {**req, "arguments": small, "arguments_truncated": True}
        except (TypeError, orjson.JSONEncodeError):
            continue
    return {**req, "arguments": f"<arguments of {size} bytes, too large to ship>", "arguments_truncated": True}


# --------------------------------------------------------------------------- HTTP


class ControlClient:
    """HTTP over a Unix socket (the control API or the admin API)."""

    def __init__(self, socket_path: str | None = None, timeout: float = 10.0) -> None:
        # aiohttp is imported when the first request is made, not here and not
        # at module level: agentshctl never needs it (agent/core/sockets.py).
        self.socket_path = socket_path or default_socket()
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _sess(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            conn = aiohttp.UnixConnector(path=self.socket_path, limit=16, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=conn, timeout=aiohttp.ClientTimeout(total=self._timeout)
            )
        return self._session

    async def request(self, method: str, path: str, payload: Any = None) -> Any:
        import aiohttp

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
        except PermissionError as e:
            raise DaemonUnavailable(self.socket_path, "permission denied") from e
        except aiohttp.ServerDisconnectedError as e:
            raise DaemonUnavailable(self.socket_path, "connection closed") from e
        except aiohttp.ClientOSError as e:
            raise DaemonUnavailable(self.socket_path, f"connection failed: {e.strerror or e}") from e
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


# --------------------------------------------------------------------------- the channel


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
                    sock=self._sock, limit=64 * 1024 * 1024
                )
            else:
                assert self.path is not None
                if not os.path.exists(self.path):
                    raise DaemonUnavailable(self.path, "no socket")
                try:
                    self._reader, self._writer = await asyncio.open_unix_connection(
                        self.path, limit=64 * 1024 * 1024
                    )
                except OSError as e:
                    raise DaemonUnavailable(self.path, f"cannot connect: {e.__class__.__name__}") from e
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
                    if "error" in msg:
                        fut.set_exception(ControlError(400, msg))
                    else:
                        fut.set_result(msg)
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
        """Send one request; the answer line (without raising on ``ok``)."""
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
        return res["decision"]  # type: ignore[no-any-return]

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


class SyncChannelClient:
    """Blocking client of the channel, one connection per thread.

    For callers that wait on a thread of their own (the shim's relay threads,
    the hook command): one write and one line read per request, no event loop.
    Raises DaemonUnavailable (no channel, connection lost, timeout) or
    ControlError (the daemon refused the request).
    """

    def __init__(self, control_socket: str) -> None:
        self.control_socket = control_socket
        self.path = channel_path(control_socket)
        self._local = threading.local()

    def _conn(self, timeout: float) -> tuple[socket.socket, Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
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
        return conn  # type: ignore[no-any-return]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn[1].close()
            conn[0].close()
            self._local.conn = None

    def request(self, msg: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        line = orjson.dumps({**msg, "id": 1}) + b"\n"
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
            msg_in: dict[str, Any] = orjson.loads(answer)
            if "error" in msg_in:
                if msg_in.get("id") is None:
                    self.close()
                    raise ControlError(403, msg_in)
                raise ControlError(400, msg_in)
            return msg_in
        raise DaemonUnavailable(self.control_socket, "connection lost")  # pragma: no cover

    def decide(self, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        msg = {**cap_decision_request(request), "op": "decide", "deadline": time.time() + timeout}
        res = self.request(msg, timeout)
        return res["decision"]  # type: ignore[no-any-return]


SyncDecisionClient = SyncChannelClient
"""Former name (the shim's daemon link uses it)."""
