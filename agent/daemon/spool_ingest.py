"""Reading spool files that other users write, as root, without being fooled.

Shims and the LLM proxy spool events when they cannot hand them in: into the
daemon's spool directory (``<state_dir>/spool``, root-owned, mode 1770, group
``daemon.group``) or, for users outside that group, a per-user directory they
announce when they register (``~/.local/state/agentsh/spool``). The daemon,
running as root, reads them back. Everything in them is hostile:

* a file is opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to the directory's
  own descriptor (no symlink is followed, a FIFO cannot block us), and vouched
  for by ``fstat`` of the OPEN descriptor — a regular file, one link, the
  expected owner (any owner in the shared spool; the announcing uid in a
  per-user one), at most ``MAX_FILE_BYTES`` — so a stat/read race cannot
  swap in ``/etc/shadow`` or the root-owned event log;
* each line is an event validated and vouched for by the file's owner
  (agent/daemon/intake.py): a non-root owner speaks only for the
  unprivileged layers' event types, and the daemon assigns the envelope;
* the file is removed only after its events are written, and only if the
  name still refers to the file that was read. What is refused is removed
  (symlinks, FIFOs, foreign files) or left alone (files of another owner in
  a per-user directory) and counted.

A writer uses ``*.jsonl.tmp`` while it writes and renames to ``*.jsonl`` when
done; the ``.tmp`` of a writer whose pid is gone is complete up to its last
newline and is ingested too.

Under systemd the daemon sees home directories read-only (``ProtectHome``):
a per-user spool file it cannot remove is remembered in a ledger by device,
inode, size and mtime (a finished spool file never changes), so it is
ingested once, not on every round.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from dataclasses import dataclass, field

import orjson
import psutil

log = logging.getLogger("agentsh.daemon")

MAX_FILE_BYTES = 64 * 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class SpoolFile:
    name: str
    uid: int
    lines: list[bytes]
    ino: int
    dev: int
    size: int = 0
    mtime_ns: int = 0

    @property
    def key(self) -> str:
        return f"{self.dev}:{self.ino}:{self.size}:{self.mtime_ns}"


@dataclass
class SpoolScan:
    files: list[SpoolFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _complete(name: str) -> bool:
    if name.endswith(".jsonl"):
        return True
    if not name.endswith(".jsonl.tmp"):
        return False
    parts = name.split("-")
    return len(parts) >= 3 and parts[1].isdigit() and not psutil.pid_exists(int(parts[1]))


def open_dir(path: str, owner: int | None) -> int | None:
    """A descriptor of spool directory ``path`` (not a symlink; owned by
    ``owner`` and writable only by it, when given), else None."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    st = os.fstat(fd)
    if owner is not None and (st.st_uid != owner or st.st_mode & 0o022):
        os.close(fd)
        log.warning("spool %s refused: not a private directory of uid %d", path, owner)
        return None
    return fd


def scan(dir_fd: int, label: str, owner: int | None, seen: set[str] | frozenset[str] = frozenset()) -> SpoolScan:
    """Read every complete spool file under ``dir_fd`` that passes the checks
    (and whose ledger key is not in ``seen``: ingested before, not removable)."""
    out = SpoolScan()
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return out
    for name in names:
        if not _complete(name):
            continue
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as e:
            out.refused.append(f"{label}/{name}: cannot open ({e.strerror})")
            _remove_if(dir_fd, name, None, owner)
            continue
        try:
            st = os.fstat(fd)
            why = None
            if not stat.S_ISREG(st.st_mode):
                why = "not a regular file"
            elif st.st_nlink != 1:
                why = f"has {st.st_nlink} links"
            elif owner is not None and st.st_uid != owner:
                why = f"owned by uid {st.st_uid}, not {owner}"
            elif st.st_size > MAX_FILE_BYTES:
                why = f"{st.st_size} bytes (limit {MAX_FILE_BYTES})"
            if why is not None:
                out.refused.append(f"{label}/{name}: {why}")
                if owner is None or st.st_uid == owner:
                    _remove_if(dir_fd, name, st, owner)
                continue
            if f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}" in seen:
                continue
            chunks = []
            left = MAX_FILE_BYTES + 1
            while left > 0:
                b = os.read(fd, min(left, 1 << 20))
                if not b:
                    break
                chunks.append(b)
                left -= len(b)
            data = b"".join(chunks)
        except OSError as e:
            out.refused.append(f"{label}/{name}: {e.strerror}")
            continue
        finally:
            os.close(fd)
        end = data.rfind(b"\n")  # a .tmp of a dead writer: complete up to its last newline
        lines = [ln for ln in data[: end + 1].split(b"\n") if ln.strip()] if end >= 0 else []
        out.files.append(SpoolFile(name, st.st_uid, lines, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns))
    return out


def parse_lines(lines: list[bytes]) -> tuple[list[object], int]:
    items: list[object] = []
    bad = 0
    for line in lines:
        try:
            items.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            bad += 1
    return items, bad


def remove(dir_fd: int, f: SpoolFile) -> bool:
    """Unlink ``f`` if the name still refers to the file that was read; False
    when it is still there (a read-only home: the caller keeps it in a ledger)."""
    try:
        st = os.stat(f.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if st.st_ino != f.ino or st.st_dev != f.dev:
        return True  # someone replaced it: what we read is gone
    try:
        os.unlink(f.name, dir_fd=dir_fd)
        return True
    except OSError:
        return False


def _remove_if(dir_fd: int, name: str, st: os.stat_result | None, owner: int | None) -> None:
    with contextlib.suppress(OSError):
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if st is not None and (now.st_ino != st.st_ino or now.st_dev != st.st_dev):
            return
        if owner is not None and now.st_uid != owner:
            return
        os.unlink(name, dir_fd=dir_fd)
