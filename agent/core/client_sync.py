"""Blocking clients of the daemon's sockets, and what every client shares:
where the sockets are and the errors a client raises.

Three sockets sit side by side (docs/architecture.md "Sockets and roles"):
the control API (HTTP, ``agentsh.sock``), the admin API (HTTP,
``agentsh-admin.sock``) and the line channel (``agentsh-decide.sock``), the
one transport for decisions. The asyncio clients are in
``agentsh.agent.core.client_async``; both raise the classes defined here, so a
caller handles a daemon failure the same way whichever client it uses.

Importable without asyncio, aiohttp or pydantic: ``agentshctl`` makes one
request per command, and an event loop plus aiohttp's client cost more
start-up time than the whole command may take (docs/operations.md "CLI
start-up"). The shim's relay threads and the hook path wait on a thread of
their own, where a direct request on a kept-alive socket costs a fraction of
a hop to an event loop.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "DEFAULT_SOCKET",
    "MAX_DECISION_ARGS_BYTES",
    "MAX_RESPONSE_BYTES",
    "ControlError",
    "DaemonUnavailable",
    "SyncChannelClient",
    "SyncControlClient",
    "admin_socket_path",
    "call",
    "cap_decision_request",
    "channel_path",
    "default_socket",
]

DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"
MAX_RESPONSE_BYTES = 256 << 20
"""A response larger than this is refused (the daemon's largest answers, the
registry and status, are far below it)."""

MAX_DECISION_ARGS_BYTES = 1 << 20
"""Arguments of a decision request beyond this size travel clipped (a 50 MB
tools/call is decided on its name, server and a bounded copy of its input;
``arguments_truncated`` says so in the event)."""


# --------------------------------------------------------------------------- paths


def channel_path(control_socket: Path | str) -> Path:
    """The decision channel's socket, next to the control socket."""
    p = Path(control_socket)
    return p.with_name(p.stem + "-decide.sock")


def admin_socket_path(control_socket: Path | str) -> Path:
    """The admin socket, next to the control socket."""
    p = Path(control_socket)
    return p.with_name(p.stem + "-admin.sock")


def default_socket() -> str:
    return os.environ.get("AGENTSH_SOCKET", DEFAULT_SOCKET)


# --------------------------------------------------------------------------- errors


class DaemonUnavailable(Exception):
    """The daemon is not running or does not accept connections on the socket."""

    def __init__(self, socket_path: str, why: str) -> None:
        if why == "permission denied":  # it may well be running: say what is wrong
            text = f"cannot reach agentshd: permission denied at {socket_path} (needs root or group agentsh)"
        else:
            text = f"agentshd is not running ({why} at {socket_path})"
        super().__init__(text)
        self.socket_path = socket_path
        self.why = why


class ControlError(Exception):
    """The daemon answered with an error (HTTP non-2xx, or an error line).

    An error line of the channel is a 400 (the request was refused) or a 403
    (the connection was: ``id`` null)."""

    def __init__(self, status: int, body: Any) -> None:
        msg = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {msg}")
        self.status = status
        self.body = body


def _connect_error(path: str, e: OSError) -> DaemonUnavailable:
    """The one mapping of a failed connect, for every client."""
    if isinstance(e, PermissionError):
        return DaemonUnavailable(path, "permission denied")
    if not os.path.exists(path):
        return DaemonUnavailable(path, "no socket")
    return DaemonUnavailable(path, f"cannot connect: {e.__class__.__name__}")


def _unix_connect(path: str, timeout: float) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError as e:
        s.close()
        raise _connect_error(path, e) from e
    return s


# --------------------------------------------------------------------------- decisions


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


def decode_body(raw: bytes) -> Any:
    """A response body: its JSON, text when it is not JSON, None when empty."""
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


# --------------------------------------------------------------------------- HTTP


class _Deadline:
    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock = sock
        self.end = time.monotonic() + seconds

    def arm(self) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)


def _read_response(sock: socket.socket, dl: _Deadline) -> tuple[int, bytes, bool]:
    """Status, body and whether the connection may be reused, of one HTTP/1.1
    response (Content-Length, chunked, or up to EOF). Raises ConnectionError
    when the peer closed before a whole response arrived."""
    buf = bytearray()

    def fill() -> bool:
        dl.arm()
        chunk = sock.recv(65536)
        if not chunk:
            return False
        buf.extend(chunk)
        if len(buf) > MAX_RESPONSE_BYTES:
            raise ConnectionError("response too large")
        return True

    while b"\r\n\r\n" not in buf:
        if not fill():
            raise ConnectionError("connection closed")
    end = buf.index(b"\r\n\r\n")
    head = bytes(buf[:end]).decode("latin-1").split("\r\n")
    del buf[: end + 4]
    parts = head[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ConnectionError(f"not an HTTP response: {head[0][:80]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    for line in head[1:]:
        k, sep, v = line.partition(":")
        if sep:
            headers[k.strip().lower()] = v.strip()
    keep = parts[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            while b"\r\n" not in buf:
                if not fill():
                    raise ConnectionError("connection closed")
            i = buf.index(b"\r\n")
            size = int(bytes(buf[:i]).split(b";", 1)[0].strip() or b"0", 16)
            del buf[: i + 2]
            if size == 0:
                while not buf.startswith(b"\r\n"):  # no trailers are sent; wait for the final CRLF
                    if b"\r\n\r\n" in buf or not fill():
                        return status, bytes(body), False
                return status, bytes(body), keep and len(buf) == 2
            while len(buf) < size + 2:
                if not fill():
                    raise ConnectionError("connection closed")
            body.extend(buf[:size])
            del buf[: size + 2]
            if len(body) > MAX_RESPONSE_BYTES:
                raise ConnectionError("response too large")
    if "content-length" in headers:
        n = int(headers["content-length"])
        if n > MAX_RESPONSE_BYTES:
            raise ConnectionError("response too large")
        while len(buf) < n:
            if not fill():
                raise ConnectionError("connection closed")
        return status, bytes(buf[:n]), keep and len(buf) == n
    while fill():
        pass
    return status, bytes(buf), False


def _request_bytes(method: str, path: str, payload: Any, keep_alive: bool) -> bytes:
    body = orjson.dumps(payload) if payload is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: agentshd\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
        f"Content-Length: {len(body)}\r\n"
        + ("Content-Type: application/json\r\n" if payload is not None else "")
        + "\r\n"
    ).encode()
    return head + body


def _exchange(sp: str, sock: socket.socket, data: bytes, dl: _Deadline) -> tuple[int, bytes, bool]:
    """Send one request, read its response; transport failures as DaemonUnavailable."""
    try:
        try:
            dl.arm()
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a refused peer is answered before its request is read: read that answer
        return _read_response(sock, dl)
    except TimeoutError as e:
        raise DaemonUnavailable(sp, "timed out") from e
    except ConnectionError as e:
        raise DaemonUnavailable(sp, str(e) or "connection closed") from e
    except ValueError as e:  # a length or chunk size that is not a number
        raise DaemonUnavailable(sp, "malformed HTTP response") from e
    except OSError as e:
        raise DaemonUnavailable(sp, f"connection failed: {e.strerror or e}") from e


def _answer(status: int, raw: bytes) -> Any:
    doc = decode_body(raw)
    if status >= 300:
        raise ControlError(status, doc)
    return doc


def call(
    socket_path: str | None, method: str, path: str, payload: Any = None, timeout: float = 10.0
) -> Any:
    """One blocking HTTP request to the daemon (for CLIs): the decoded JSON
    body (text when it is not JSON). Raises ``DaemonUnavailable`` when the
    socket cannot be reached or the connection breaks, ``ControlError`` for
    a non-2xx answer (including the one-line 403/429 of a refused peer)."""
    sp = socket_path or default_socket()
    if not os.path.exists(sp):
        raise DaemonUnavailable(sp, "no socket")
    sock = _unix_connect(sp, timeout)
    try:
        status, raw, _keep = _exchange(sp, sock, _request_bytes(method, path, payload, False), _Deadline(sock, timeout))
    finally:
        sock.close()
    return _answer(status, raw)


class SyncControlClient:
    """Blocking keep-alive HTTP to the control (or admin) API, one connection
    per thread: for requests made from a thread that waits for the answer
    (the shim's relay threads registering a tools/list)."""

    def __init__(self, socket_path: str | None = None, timeout: float = 10.0) -> None:
        self.socket_path = socket_path or default_socket()
        self.timeout = timeout
        self._local = threading.local()

    def close(self) -> None:
        """Close this thread's connection."""
        s: socket.socket | None = getattr(self._local, "sock", None)
        if s is not None:
            s.close()
            self._local.sock = None

    def request(self, method: str, path: str, payload: Any = None, timeout: float | None = None) -> Any:
        """As ``call``, on this thread's kept-alive connection."""
        t = self.timeout if timeout is None else timeout
        data = _request_bytes(method, path, payload, True)
        for attempt in (0, 1):
            sock: socket.socket | None = getattr(self._local, "sock", None)
            reused = sock is not None
            if sock is None:
                sock = _unix_connect(self.socket_path, t)
                self._local.sock = sock
            try:
                status, raw, keep = _exchange(self.socket_path, sock, data, _Deadline(sock, t))
            except DaemonUnavailable:
                self.close()
                if reused and attempt == 0:
                    continue  # a kept-alive connection the daemon closed meanwhile
                raise
            if not keep:
                self.close()
            return _answer(status, raw)
        raise DaemonUnavailable(self.socket_path, "connection lost")  # pragma: no cover

    def get(self, path: str, timeout: float | None = None) -> Any:
        return self.request("GET", path, None, timeout)

    def post(self, path: str, payload: Any = None, timeout: float | None = None) -> Any:
        return self.request("POST", path, payload if payload is not None else {}, timeout)


# --------------------------------------------------------------------------- the channel


def channel_answer(msg: dict[str, Any]) -> dict[str, Any]:
    """An answer line of the channel, or the ControlError it carries (shared
    by both channel clients: the same line is the same error)."""
    if "error" in msg:
        raise ControlError(403 if msg.get("id") is None else 400, msg)
    return msg


class SyncChannelClient:
    """Blocking client of the line channel, one connection per thread.

    For callers that wait on a thread of their own (the shim's relay threads,
    its flow records): one write and one line read per request, no event
    loop. Raises DaemonUnavailable (no channel, connection lost, timeout) or
    ControlError (the daemon refused the request, or the connection).
    """

    def __init__(self, control_socket: str) -> None:
        self.control_socket = control_socket
        self.path = channel_path(control_socket)
        self._local = threading.local()

    def _conn(self, timeout: float) -> tuple[socket.socket, Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            s = _unix_connect(str(self.path), timeout)
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
                raise DaemonUnavailable(str(self.path), "connection lost") from e
            except OSError as e:  # incl. timeouts
                self.close()
                raise DaemonUnavailable(str(self.path), e.__class__.__name__) from e
            try:
                msg_in: dict[str, Any] = orjson.loads(answer)
            except orjson.JSONDecodeError as e:
                self.close()
                raise DaemonUnavailable(str(self.path), "malformed answer") from e
            if msg_in.get("id") is None:
                self.close()  # the daemon refused the connection
            return channel_answer(msg_in)
        raise DaemonUnavailable(str(self.path), "connection lost")  # pragma: no cover

    def decide(self, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """One tool-call decision (DecisionRequest JSON → Decision JSON); the
        request carries its deadline (see ``ChannelClient.decide``)."""
        msg = {**cap_decision_request(request), "op": "decide", "deadline": time.time() + timeout}
        res = self.request(msg, timeout)
        return res["decision"]
