"""Where the daemon's sockets are, the errors its clients raise, and a
blocking one-shot HTTP call over its Unix sockets.

Importable without asyncio or aiohttp: ``agentshctl`` makes one request per
command, and an event loop plus aiohttp's client cost more start-up time than
the whole command may take (docs/operations.md "CLI start-up"). The async
clients (``agentsh.agent.core.client``) re-export everything here, so an error
raised by either is the same class.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import orjson

DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"
MAX_RESPONSE_BYTES = 256 << 20
"""A response larger than this is refused (the daemon's largest answers, the
registry and status, are far below it)."""


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
    """The daemon answered with an error (HTTP non-2xx, or an error line)."""

    def __init__(self, status: int, body: Any) -> None:
        msg = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {msg}")
        self.status = status
        self.body = body


class _Deadline:
    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock = sock
        self.end = time.monotonic() + seconds

    def arm(self) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)


def _read_response(sock: socket.socket, dl: _Deadline) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response (Content-Length, chunked, or
    up to EOF). Raises ConnectionError when the peer closed before a whole
    response arrived."""
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
                return status, bytes(body)
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
        return status, bytes(buf[:n])
    while fill():
        pass
    return status, bytes(buf)


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
    body = orjson.dumps(payload) if payload is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: agentshd\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n"
        + ("Content-Type: application/json\r\n" if payload is not None else "")
        + "\r\n"
    ).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dl = _Deadline(sock, timeout)
    try:
        dl.arm()
        try:
            sock.connect(sp)
        except PermissionError as e:
            raise DaemonUnavailable(sp, "permission denied") from e
        except (ConnectionRefusedError, FileNotFoundError) as e:
            raise DaemonUnavailable(sp, f"cannot connect: {e.__class__.__name__}") from e
        try:
            dl.arm()
            sock.sendall(head + body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a refused peer is answered before its request is read: read that answer
        status, raw = _read_response(sock, dl)
    except TimeoutError as e:
        raise DaemonUnavailable(sp, "timed out") from e
    except ConnectionError as e:
        raise DaemonUnavailable(sp, str(e) or "connection closed") from e
    except ValueError as e:  # a length or chunk size that is not a number
        raise DaemonUnavailable(sp, "malformed HTTP response") from e
    except OSError as e:
        raise DaemonUnavailable(sp, f"connection failed: {e.strerror or e}") from e
    finally:
        sock.close()
    try:
        doc: Any = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        doc = raw.decode("utf-8", "replace")
    if status >= 300:
        raise ControlError(status, doc)
    return doc
