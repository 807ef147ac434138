"""The few raw bpf(2) commands BCC's Python bindings do not expose.

BCC 0.26 has ``bpf_prog_attach`` without ``replace_bpf_fd``, and nothing for
BPF_PROG_QUERY / BPF_PROG_GET_FD_BY_ID / BPF_OBJ_GET_INFO_BY_FD. Atomic
replacement of an attached cgroup program (BPF_F_ALLOW_MULTI|BPF_F_REPLACE) and
re-adoption after a restart need them, so they are called here through
``syscall(2)``.

Numbers (docs/network.md#layout): the ``bpf`` syscall number differs per
architecture and comes from ``ARCHES`` — anything else (or a 32-bit
interpreter) is refused with BPFUnavailable, never guessed. Commands, flags
and attach types are UAPI enum values, the same on every architecture; the
``union bpf_attr`` prefixes and info structs are named Layouts.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass
from typing import Any

from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.layout import Layout

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


@dataclass(frozen=True, slots=True)
class Arch:
    machine: str
    """``platform.machine()`` (uname -m)."""
    nr_bpf: int
    """__NR_bpf in this architecture's syscall table."""


ARCHES: dict[str, Arch] = {
    "x86_64": Arch("x86_64", nr_bpf=321),
    "aarch64": Arch("aarch64", nr_bpf=280),  # the generic syscall table
}


def arch(machine: str | None = None) -> Arch:
    """This host's entry in ``ARCHES``, or BPFUnavailable saying why not."""
    m = platform.machine() if machine is None else machine
    a = ARCHES.get(m)
    if a is None:
        raise BPFUnavailable(
            f"unsupported architecture {m or 'unknown'!r} (the BPF layer supports "
            f"{', '.join(ARCHES)})",
            "run agentsh on one of those for the BPF layer; the other layers work here",
        )
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        raise BPFUnavailable(
            f"32-bit Python on {m} (the BPF layer needs a 64-bit interpreter)",
            "use the distribution's 64-bit python3",
        )
    return a


# enum bpf_cmd
BPF_MAP_LOOKUP_ELEM = 1
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

# enum bpf_attach_type
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

# union bpf_attr, the member each command reads (UAPI; 64-bit pointers as u64)
_ATTR_SIZE = 144
_ATTR_ELEM = Layout("attr_elem", [("map_fd", "I"), ("key", "Q"), ("value", "Q"), ("flags", "Q")])
_ATTR_OBJ = Layout("attr_obj", [("pathname", "Q"), ("bpf_fd", "I"), ("file_flags", "I")])
_ATTR_ATTACH = Layout(
    "attr_attach",
    [("target_fd", "I"), ("attach_bpf_fd", "I"), ("attach_type", "I"),
     ("attach_flags", "I"), ("replace_bpf_fd", "I")],
)
_ATTR_BY_ID = Layout("attr_by_id", [("prog_id", "I")])
_ATTR_INFO = Layout("attr_info", [("bpf_fd", "I"), ("info_len", "I"), ("info", "Q")])
_ATTR_QUERY = Layout(
    "attr_query",
    [("target_fd", "I"), ("attach_type", "I"), ("query_flags", "I"),
     ("attach_flags", "I"), ("prog_ids", "Q"), ("prog_cnt", "I")],
)
# struct bpf_prog_info / bpf_map_info, up to the name
_PROG_INFO = Layout(
    "bpf_prog_info",
    [("type", "I"), ("id", "I"), ("tag", "8s"), ("jited_prog_len", "I"),
     ("xlated_prog_len", "I"), ("jited_prog_insns", "Q"), ("xlated_prog_insns", "Q"),
     ("load_time", "Q"), ("created_by_uid", "I"), ("nr_map_ids", "I"), ("map_ids", "Q"),
     ("name", "16s")],
)
_MAP_INFO = Layout(
    "bpf_map_info",
    [("type", "I"), ("id", "I"), ("key_size", "I"), ("value_size", "I"),
     ("max_entries", "I"), ("map_flags", "I"), ("name", "16s")],
)


UAPI_NUMBERS: dict[str, int] = {
    "BPF_MAP_LOOKUP_ELEM": BPF_MAP_LOOKUP_ELEM,
    "BPF_OBJ_PIN": BPF_OBJ_PIN,
    "BPF_OBJ_GET": BPF_OBJ_GET,
    "BPF_PROG_ATTACH": BPF_PROG_ATTACH,
    "BPF_PROG_DETACH": BPF_PROG_DETACH,
    "BPF_PROG_GET_FD_BY_ID": BPF_PROG_GET_FD_BY_ID,
    "BPF_MAP_GET_FD_BY_ID": BPF_MAP_GET_FD_BY_ID,
    "BPF_OBJ_GET_INFO_BY_FD": BPF_OBJ_GET_INFO_BY_FD,
    "BPF_PROG_QUERY": BPF_PROG_QUERY,
    "BPF_F_ALLOW_OVERRIDE": BPF_F_ALLOW_OVERRIDE,
    "BPF_F_ALLOW_MULTI": BPF_F_ALLOW_MULTI,
    "BPF_F_REPLACE": BPF_F_REPLACE,
    "BPF_CGROUP_INET4_CONNECT": CGROUP_INET4_CONNECT,
    "BPF_CGROUP_INET6_CONNECT": CGROUP_INET6_CONNECT,
    "BPF_CGROUP_UDP4_SENDMSG": CGROUP_UDP4_SENDMSG,
    "BPF_CGROUP_UDP6_SENDMSG": CGROUP_UDP6_SENDMSG,
}
"""UAPI name -> the value used here (tests compile them against the kernel's header)."""
UAPI_LAYOUTS: tuple[tuple[str, str, Layout], ...] = (
    ("union bpf_attr", "", _ATTR_ELEM),
    ("union bpf_attr", "", _ATTR_OBJ),
    ("union bpf_attr", "", _ATTR_ATTACH),
    ("union bpf_attr", "", _ATTR_BY_ID),
    ("union bpf_attr", "info.", _ATTR_INFO),
    ("union bpf_attr", "query.", _ATTR_QUERY),
    ("struct bpf_prog_info", "", _PROG_INFO),
    ("struct bpf_map_info", "", _MAP_INFO),
)
"""(C type, member path prefix, layout) of every kernel struct packed or read here."""


class BPFSysError(OSError):
    pass


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    r = _libc.syscall(arch().nr_bpf, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise BPFSysError(e, f"bpf(cmd={cmd}): {os.strerror(e)}")
    return int(r)


def _attr(layout: Layout, **vals: int) -> ctypes.Array:
    buf = ctypes.create_string_buffer(_ATTR_SIZE)
    layout.pack_into(buf, 0, **vals)
    return buf


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def prog_attach(
    prog_fd: int, target_fd: int, attach_type: int, flags: int, replace_fd: int = 0
) -> None:
    _bpf(BPF_PROG_ATTACH, _attr(_ATTR_ATTACH, target_fd=target_fd, attach_bpf_fd=prog_fd,
                                attach_type=attach_type, attach_flags=flags,
                                replace_bpf_fd=replace_fd))


def prog_detach(prog_fd: int, target_fd: int, attach_type: int) -> None:
    _bpf(BPF_PROG_DETACH, _attr(_ATTR_ATTACH, target_fd=target_fd, attach_bpf_fd=prog_fd,
                                attach_type=attach_type))


def prog_query(target_fd: int, attach_type: int) -> tuple[int, list[int]]:
    """(attach_flags, prog ids) directly attached to a cgroup for one attach type."""
    cnt = 64
    ids = (ctypes.c_uint32 * cnt)()
    buf = _attr(_ATTR_QUERY, target_fd=target_fd, attach_type=attach_type,
                prog_ids=ctypes.addressof(ids), prog_cnt=cnt)
    _bpf(BPF_PROG_QUERY, buf)
    out = _ATTR_QUERY.unpack_from(buf)
    return out.attach_flags, [ids[i] for i in range(min(out.prog_cnt, cnt))]


def prog_fd_by_id(prog_id: int) -> int:
    return _bpf(BPF_PROG_GET_FD_BY_ID, _attr(_ATTR_BY_ID, prog_id=prog_id))


def obj_pin(fd: int, path: str) -> None:
    p = ctypes.create_string_buffer(path.encode())
    _bpf(BPF_OBJ_PIN, _attr(_ATTR_OBJ, pathname=ctypes.addressof(p), bpf_fd=fd))


def obj_get(path: str) -> int:
    p = ctypes.create_string_buffer(path.encode())
    return _bpf(BPF_OBJ_GET, _attr(_ATTR_OBJ, pathname=ctypes.addressof(p)))


def map_lookup(map_fd: int, key: bytes, value_size: int) -> bytes | None:
    """The value stored under ``key``, or None when there is none (ENOENT)."""
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value_size)
    try:
        _bpf(BPF_MAP_LOOKUP_ELEM, _attr(_ATTR_ELEM, map_fd=map_fd, key=ctypes.addressof(k),
                                        value=ctypes.addressof(v)))
    except BPFSysError as e:
        if e.errno == 2:
            return None
        raise
    return v.raw


@dataclass(frozen=True, slots=True)
class ProgInfo:
    id: int
    type: int
    name: str
    tag: str


def _info(fd: int, layout: Layout) -> Any:
    info = ctypes.create_string_buffer(layout.size)
    _bpf(BPF_OBJ_GET_INFO_BY_FD,
         _attr(_ATTR_INFO, bpf_fd=fd, info_len=layout.size, info=ctypes.addressof(info)))
    return layout.unpack(info.raw)


def prog_info(fd: int) -> ProgInfo:
    i = _info(fd, _PROG_INFO)
    return ProgInfo(id=i.id, type=i.type, name=_cstr(i.name), tag=i.tag.hex())


@dataclass(frozen=True, slots=True)
class MapInfo:
    id: int
    type: int
    key_size: int
    value_size: int
    max_entries: int
    name: str


def map_info(fd: int) -> MapInfo:
    i = _info(fd, _MAP_INFO)
    return MapInfo(id=i.id, type=i.type, key_size=i.key_size, value_size=i.value_size,
                   max_entries=i.max_entries, name=_cstr(i.name))


def prog_info_by_id(prog_id: int) -> ProgInfo | None:
    try:
        fd = prog_fd_by_id(prog_id)
    except BPFSysError:
        return None
    try:
        return prog_info(fd)
    finally:
        os.close(fd)
