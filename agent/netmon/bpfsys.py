"""The few raw bpf(2) commands BCC's Python bindings do not expose.

BCC 0.26 has ``bpf_prog_attach`` without ``replace_bpf_fd``, and nothing for
BPF_PROG_QUERY / BPF_PROG_GET_FD_BY_ID / BPF_OBJ_GET_INFO_BY_FD. Atomic
replacement of an attached cgroup program (BPF_F_ALLOW_MULTI|BPF_F_REPLACE) and
re-adoption after a restart need them, so they are called here through
``syscall(2)`` with hand-packed ``union bpf_attr`` prefixes (stable UAPI).
"""

from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

NR_BPF = 321  # x86_64

BPF_OBJ_PIN = 6
BPF_OBJ_GET = 7
BPF_PROG_ATTACH = 8
BPF_PROG_DETACH = 9
BPF_PROG_GET_FD_BY_ID = 13
BPF_MAP_GET_FD_BY_ID = 14
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_PROG_QUERY = 16

BPF_F_ALLOW_OVERRIDE = 1 << 0
BPF_F_ALLOW_MULTI = 1 << 1
BPF_F_REPLACE = 1 << 2

# attach types (enum bpf_attach_type)
CGROUP_INET4_CONNECT = 10
CGROUP_INET6_CONNECT = 11
CGROUP_UDP4_SENDMSG = 14
CGROUP_UDP6_SENDMSG = 15

ATTACH_NAMES = {
    CGROUP_INET4_CONNECT: "connect4",
    CGROUP_INET6_CONNECT: "connect6",
    CGROUP_UDP4_SENDMSG: "sendmsg4",
    CGROUP_UDP6_SENDMSG: "sendmsg6",
}

_ATTR_SIZE = 144


class BPFSysError(OSError):
    pass


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    r = _libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise BPFSysError(e, f"bpf(cmd={cmd}): {os.strerror(e)}")
    return int(r)


def _attr(fmt: str, *vals: object) -> ctypes.Array:
    buf = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into(fmt, buf, 0, *vals)
    return buf


def prog_attach(
    prog_fd: int, target_fd: int, attach_type: int, flags: int, replace_fd: int = 0
) -> None:
    _bpf(BPF_PROG_ATTACH, _attr("=IIIII", target_fd, prog_fd, attach_type, flags, replace_fd))


def prog_detach(prog_fd: int, target_fd: int, attach_type: int) -> None:
    _bpf(BPF_PROG_DETACH, _attr("=III", target_fd, prog_fd, attach_type))


def prog_query(target_fd: int, attach_type: int) -> tuple[int, list[int]]:
    """(attach_flags, prog ids) directly attached to a cgroup for one attach type."""
    cnt = 64
    ids = (ctypes.c_uint32 * cnt)()
    buf = _attr("=IIIIQI", target_fd, attach_type, 0, 0, ctypes.addressof(ids), cnt)
    _bpf(BPF_PROG_QUERY, buf)
    _, _, _, flags, _, n = struct.unpack_from("=IIIIQI", buf, 0)
    return flags, [ids[i] for i in range(min(n, cnt))]


def prog_fd_by_id(prog_id: int) -> int:
    return _bpf(BPF_PROG_GET_FD_BY_ID, _attr("=I", prog_id))


def obj_pin(fd: int, path: str) -> None:
    p = ctypes.create_string_buffer(path.encode())
    _bpf(BPF_OBJ_PIN, _attr("=QI", ctypes.addressof(p), fd))


def obj_get(path: str) -> int:
    p = ctypes.create_string_buffer(path.encode())
    return _bpf(BPF_OBJ_GET, _attr("=QII", ctypes.addressof(p), 0, 0))


@dataclass(frozen=True, slots=True)
class ProgInfo:
    id: int
    type: int
    name: str
    tag: str


def prog_info(fd: int) -> ProgInfo:
    info = ctypes.create_string_buffer(88)
    _bpf(BPF_OBJ_GET_INFO_BY_FD, _attr("=IIQ", fd, 88, ctypes.addressof(info)))
    ptype, pid = struct.unpack_from("=II", info, 0)
    tag = info.raw[8:16].hex()
    name = info.raw[64:80].split(b"\0", 1)[0].decode(errors="replace")
    return ProgInfo(id=pid, type=ptype, name=name, tag=tag)


@dataclass(frozen=True, slots=True)
class MapInfo:
    id: int
    type: int
    key_size: int
    value_size: int
    max_entries: int
    name: str


def map_info(fd: int) -> MapInfo:
    info = ctypes.create_string_buffer(80)
    _bpf(BPF_OBJ_GET_INFO_BY_FD, _attr("=IIQ", fd, 80, ctypes.addressof(info)))
    mtype, mid, ks, vs, me, _flags = struct.unpack_from("=IIIIII", info, 0)
    name = info.raw[24:40].split(b"\0", 1)[0].decode(errors="replace")
    return MapInfo(id=mid, type=mtype, key_size=ks, value_size=vs, max_entries=me, name=name)


def prog_info_by_id(prog_id: int) -> ProgInfo | None:
    try:
        fd = prog_fd_by_id(prog_id)
    except BPFSysError:
        return None
    try:
        return prog_info(fd)
    finally:
        os.close(fd)
