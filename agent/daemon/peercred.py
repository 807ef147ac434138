"""Who is on the other end of the control socket (SO_PEERCRED).

Mutating endpoints (every non-GET) are allowed for root and for members of the
daemon's group (primary or supplementary, read from /proc/<pid>/status).
"""

from __future__ import annotations

import grp
import socket
import struct
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True)
class PeerCred:
    pid: int
    uid: int
    gid: int

    def groups(self) -> set[int]:
        out = {self.gid}
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("Groups:"):
                        out.update(int(g) for g in line.split()[1:])
                        break
        except OSError:
            pass
        return out


def peer_of_socket(sock: socket.socket | None) -> PeerCred | None:
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return PeerCred(pid, uid, gid)


def peer_of(request: web.Request) -> PeerCred | None:
    transport = request.transport
    return peer_of_socket(transport.get_extra_info("socket") if transport else None)


def may_mutate(peer: PeerCred | None, group_name: str) -> bool:
    """Root, or a member of the daemon's group."""
    if peer is None:
        return False
    if peer.uid == 0:
        return True
    gid = group_id(group_name)
    return gid is not None and gid in peer.groups()


def group_id(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def make_middleware(group_name: str):
    @web.middleware
    async def peercred_middleware(request: web.Request, handler):
        peer = peer_of(request)
        request["peer"] = peer
        if request.method not in ("GET", "HEAD", "OPTIONS") and not may_mutate(peer, group_name):
            who = f"uid {peer.uid}" if peer else "unknown peer"
            return web.json_response(
                {"error": f"forbidden: {who} is neither root nor in group {group_name!r}"},
                status=403,
            )
        return await handler(request)

    return peercred_middleware
