"""Mounts the BPF layer needs (cgroup2, bpffs, tracefs) and cgroup helpers.

Every mount is done only when missing, so calling these repeatedly is safe.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from pathlib import Path

from agentsh.agent.netmon.errors import BPFUnavailable

CGROUP2_DEFAULT = "/sys/fs/cgroup/unified"
BPFFS_DEFAULT = "/sys/fs/bpf"
TRACEFS_DEFAULT = "/sys/kernel/tracing"

_libc = ctypes.CDLL(None, use_errno=True)


def mounts() -> list[tuple[str, str]]:
    """(mountpoint, fstype) pairs from /proc/self/mounts."""
    out: list[tuple[str, str]] = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                out.append((parts[1].replace("\\040", " "), parts[2]))
    return out


def find_mount(fstype: str) -> str | None:
    for mp, ft in mounts():
        if ft == fstype:
            return mp
    return None


def _mount(fstype: str, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    r = _libc.mount(fstype.encode(), target.encode(), fstype.encode(), 0, None)
    if r != 0:
        e = ctypes.get_errno()
        if e == errno.EBUSY and _is_mounted(target, fstype):
            return
        raise OSError(e, f"mount -t {fstype} {target}: {os.strerror(e)}")


def _is_mounted(target: str, fstype: str) -> bool:
    t = os.path.realpath(target)
    return any(mp == t and ft == fstype for mp, ft in mounts())


def ensure_cgroup2() -> str:
    """The cgroup2 mountpoint, mounting it at /sys/fs/cgroup/unified if missing."""
    mp = find_mount("cgroup2")
    if mp:
        return mp
    try:
        _mount("cgroup2", CGROUP2_DEFAULT)
    except OSError as e:
        raise BPFUnavailable(
            f"no cgroup2 hierarchy and mounting one failed: {e}",
            "run `make setup` (mounts cgroup2 at /sys/fs/cgroup/unified) or "
            "`mount -t cgroup2 none /sys/fs/cgroup/unified` as root",
        ) from e
    return CGROUP2_DEFAULT


def ensure_bpffs(pin_dir: str) -> None:
    """Make sure ``pin_dir`` lives on a bpffs (mounting /sys/fs/bpf if needed) and exists."""
    p = os.path.realpath(pin_dir)
    on_bpffs = any(
        ft == "bpf" and (p == mp or p.startswith(mp.rstrip("/") + "/")) for mp, ft in mounts()
    )
    if not on_bpffs:
        target = BPFFS_DEFAULT if p.startswith(BPFFS_DEFAULT + "/") or p == BPFFS_DEFAULT else None
        if target is None:
            raise BPFUnavailable(
                f"pin_dir {pin_dir} is not on a bpf filesystem",
                "set network.pin_dir under /sys/fs/bpf",
            )
        try:
            _mount("bpf", target)
        except OSError as e:
            raise BPFUnavailable(
                f"bpffs is not mounted and mounting it failed: {e}",
                "run `make setup` or `mount -t bpf bpf /sys/fs/bpf` as root",
            ) from e
    os.makedirs(pin_dir, exist_ok=True)


def ensure_tracefs() -> str:
    mp = find_mount("tracefs")
    if mp:
        return mp
    try:
        _mount("tracefs", TRACEFS_DEFAULT)
    except OSError as e:
        raise BPFUnavailable(
            f"tracefs is not mounted and mounting it failed: {e}",
            "run `make setup` or `mount -t tracefs nodev /sys/kernel/tracing`",
        ) from e
    return TRACEFS_DEFAULT


def resolve_cgroup(cgroup_path: str) -> str:
    """The directory to attach to: ``cgroup_path`` or the cgroup2 root when empty.

    A relative path is taken inside the cgroup2 mount.
    """
    root = ensure_cgroup2()
    if not cgroup_path:
        return root
    path = cgroup_path if os.path.isabs(cgroup_path) else os.path.join(root, cgroup_path)
    if not os.path.isdir(path):
        raise BPFUnavailable(
            f"network.cgroup_path {path} does not exist", "create it or fix network.cgroup_path"
        )
    if not any(
        ft == "cgroup2" and (path == mp or path.startswith(mp.rstrip("/") + "/"))
        for mp, ft in mounts()
    ):
        raise BPFUnavailable(
            f"network.cgroup_path {path} is not inside a cgroup2 mount",
            "point network.cgroup_path at a directory under the cgroup2 mount",
        )
    return path


def cgroup_id(path: str) -> int:
    """cgroup2 ids are the directory's inode number (what bpf_get_current_cgroup_id returns)."""
    return os.stat(path).st_ino


def open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def move_pid(cgroup_dir: str | Path, pid: int) -> None:
    with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def remove_cgroup(cgroup_dir: str | Path) -> None:
    """Move leftover processes to the parent and rmdir (test cleanup)."""
    parent = os.path.dirname(str(cgroup_dir).rstrip("/"))
    with contextlib.suppress(OSError):
        with open(os.path.join(cgroup_dir, "cgroup.procs")) as f:
            pids = [int(x) for x in f.read().split()]
        for pid in pids:
            with contextlib.suppress(OSError):
                move_pid(parent, pid)
    with contextlib.suppress(OSError):
        os.rmdir(cgroup_dir)
