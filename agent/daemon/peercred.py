"""Who is on the other end of a daemon socket, and whether they may be there.

Two roles, two sockets (docs/architecture.md "Sockets and roles"):

* **agent** — the control socket and the decision channel: decisions,
  registration, events from shims/hooks/the proxy, read-only status. Root and
  members of ``daemon.group`` (the users whose AI agents are guarded).
* **admin** — the admin socket: everything that lowers enforcement or changes
  state (approve, reload, detach, reopen). Root and members of
  ``daemon.admin_group`` only; every act is audited (``admin_action``).

Credentials come from the kernel at connect time: SO_PEERCRED (pid, uid,
gid) and SO_PEERGROUPS (supplementary groups), never from anything the peer
sends. The socket file mode is a first fence; this check is the real one.

``ConnectionGuard`` also bounds how many connections one uid may hold open on
a socket (a member holding thousands of half-sent requests must not exhaust
the daemon's descriptors and lock root out); root is never limited.
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
from aiohttp import web

log = logging.getLogger("agentsh.daemon")

SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)
_NGROUPS_MAX = 65536


@dataclass(frozen=True)
class PeerCred:
    pid: int
    uid: int
    gid: int
    supplementary: frozenset[int] = field(default_factory=frozenset)

    def groups(self) -> set[int]:
        return {self.gid, *self.supplementary}

    def exe(self) -> str | None:
        try:
            return os.readlink(f"/proc/{self.pid}/exe")
        except OSError:
            return None


def _peer_groups(sock: socket.socket) -> frozenset[int]:
    size = 4 * 64
    while size <= 4 * _NGROUPS_MAX:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, SO_PEERGROUPS, size)
        except OSError as e:
            if e.errno == 34:  # ERANGE: more groups than the buffer holds
                size *= 4
                continue
            return frozenset()
        n = len(raw) // 4
        return frozenset(struct.unpack(f"{n}I", raw[: 4 * n]))
    return frozenset()


def peer_of_socket(sock: socket.socket | None) -> PeerCred | None:
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    pid, uid, gid = struct.unpack("3i", raw)
    return PeerCred(pid, uid, gid, _peer_groups(sock))


def peer_of(request: web.BaseRequest) -> PeerCred | None:
    transport = request.transport
    return peer_of_socket(transport.get_extra_info("socket") if transport else None)


def group_id(name: str | None) -> int | None:
    if not name:
        return None
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


@dataclass(frozen=True)
class Role:
    """Who may use one socket: root, plus the members of ``group`` if it exists.

    ``group`` may be a callable (read at each connection), so a policy reload
    that changes the group applies to the next connection."""

    name: str
    group_of: str | Callable[[], str | None] | None

    @property
    def group(self) -> str | None:
        g = self.group_of
        return g() if callable(g) else g

    def admits(self, peer: PeerCred | None) -> bool:
        if peer is None:
            return False
        if peer.uid == 0:
            return True
        gid = group_id(self.group)
        return gid is not None and gid in peer.groups()

    def refusal(self, peer: PeerCred | None) -> str:
        who = f"uid {peer.uid}" if peer else "unknown peer"
        group = self.group
        if group and group_id(group) is not None:
            return f"forbidden: {who} is neither root nor in group {group!r} ({self.name} socket)"
        return f"forbidden: {who} is not root ({self.name} socket; group {group!r} does not exist)"


class ConnectionGuard:
    """Admission for one listening socket: role check and per-uid connection cap."""

    def __init__(self, role: Role, per_uid: Callable[[], int]) -> None:
        self.role = role
        self._per_uid = per_uid
        self.open: dict[int, int] = {}
        self.refused_role = 0
        self.refused_limit = 0

    def admit(self, sock: socket.socket | None) -> tuple[PeerCred | None, str | None]:
        """(peer, None) when admitted (then call ``release``), else (peer, reason)."""
        peer = peer_of_socket(sock)
        if not self.role.admits(peer):
            self.refused_role += 1
            return peer, self.role.refusal(peer)
        assert peer is not None
        if peer.uid != 0:
            n = self.open.get(peer.uid, 0)
            limit = self._per_uid()
            if n >= limit:
                self.refused_limit += 1
                return peer, f"too many connections: uid {peer.uid} holds {n} (limit {limit})"
        self.open[peer.uid] = self.open.get(peer.uid, 0) + 1
        return peer, None

    def release(self, peer: PeerCred) -> None:
        n = self.open.get(peer.uid, 0) - 1
        if n > 0:
            self.open[peer.uid] = n
        else:
            self.open.pop(peer.uid, None)

    def stats(self) -> dict[str, Any]:
        return {
            "connections": sum(self.open.values()),
            "refused_role": self.refused_role,
            "refused_limit": self.refused_limit,
        }


class GuardedProtocol(asyncio.Protocol):
    """Wraps the protocol of an HTTP server (aiohttp's request handler): the
    connection reaches it only when the guard admits the peer. A refused peer
    gets one short HTTP error and is disconnected without a byte being parsed
    (once its request head has arrived, so it can read the answer instead of
    failing to write into a closed socket)."""

    REFUSED_GRACE_SECONDS = 1.0

    def __init__(self, factory: Callable[[], asyncio.Protocol], guard: ConnectionGuard) -> None:
        self._factory = factory
        self._guard = guard
        self._inner: asyncio.Protocol | None = None
        self._peer: PeerCred | None = None
        self._refused: asyncio.BaseTransport | None = None  # the transport of a refused connection
        self._seen = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer, why = self._guard.admit(transport.get_extra_info("socket"))
        if why is not None:
            status = "403 Forbidden" if "forbidden" in why else "429 Too Many Requests"
            body = orjson.dumps({"error": why})
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            # a stream socket's transport (create_unix_server): it writes
            cast(asyncio.WriteTransport, transport).write(head + body)
            self._refused = transport
            asyncio.get_running_loop().call_later(self.REFUSED_GRACE_SECONDS, transport.close)
            return
        self._peer = peer
        self._inner = inner = self._factory()
        inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)
        elif self._refused is not None:
            self._seen += len(data)
            if b"\r\n\r\n" in data or self._seen > 65536:
                self._refused.close()

    def eof_received(self) -> bool | None:
        if self._inner is not None:
            return self._inner.eof_received()
        return None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._inner is None:
            return
        assert self._peer is not None
        self._guard.release(self._peer)
        self._inner.connection_lost(exc)


def raise_fd_limit() -> None:
    """The daemon holds a descriptor per connection: take the hard limit."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, OSError, ValueError) as e:  # pragma: no cover
        log.warning("cannot raise the descriptor limit: %s", e)
