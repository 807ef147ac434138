"""Stdio relay between an MCP client and the server the shim spawned.

Why threads and raw fds: the byte path must add microseconds, not an event
loop hop. Each direction is one thread doing ``os.read`` (1 MiB) → ``os.write``
on raw fds (both release the GIL); backpressure is natural (a blocked write
stops the reads of that direction) and a held message naturally holds
everything behind it, which is exactly the ordering rule we want.

Both directions forward COMPLETE lines only, each after the inspector has
decided on it (docs/shim.md "Refused messages"): forwarded unchanged (the
bytes are never re-serialised), replaced (a filtered tools/list, an error
for a refused message) or dropped. A line longer than ``max_line`` is never
buffered whole: it is dropped through its newline and its sender gets an
error when its request id can be read from its head. Memory per direction is
bounded by ``max_line`` plus one read.

Client → server (``pump_client``): each complete line is handed to
``Inspector.client_line`` (a tools/call must be decided before the server
sees it, and its method can be anywhere in the object). Forwardable lines of
one read are written with one syscall.

Server → client (``pump_server``): each chunk is cut into lines; the bytes
after the last newline wait in user space for the rest of their line. So a
server that never ends its line holds back only itself: agentsh's own lines
(``Output.inject``) always find a line boundary, and every line a client can
act on has been decided.

Why tee(2)+splice(2) on that direction: a read+write relay copies every byte
twice through user space, which costs a 1 MB result about half of the direct
throughput. When the client's stdout is a pipe or a socket, each chunk is
duplicated into a private pipe with ``tee`` (page references, no copy; it
also waits for the data like a read would) and that copy is read for the
decisions; then the lines forwarded unchanged are ``splice``d from the
server's pipe straight to stdout (exactly up to a line end), everything else
is spliced to /dev/null. Elsewhere (a tty, a file) it falls back to
read+write.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import select
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ClientVerdict", "Inspector", "Output", "RelayStats", "pump_client", "pump_server"]

READ_SIZE = 1 << 20
MAX_LINE = 64 * 1024 * 1024
"""Longest line that is buffered for a decision, either direction; longer ones are refused."""
EDGE = 4096
"""Bytes kept of a refused oversized line (its request id is read from there)."""
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)
HOLD_SIZE = 4 * READ_SIZE
"""Asked-for size of the hold pipe (the kernel may grant less: pipe-max-size)."""


_tee_fn: Callable[[int, int, int, int], int] | None
try:
    _tee_c = ctypes.CDLL(None, use_errno=True).tee  # not wrapped by the os module
    _tee_c.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    _tee_c.restype = ctypes.c_ssize_t
    _tee_fn = _tee_c
except (OSError, AttributeError):  # pragma: no cover - not glibc/musl Linux
    _tee_fn = None


def tee(fd_in: int, fd_out: int, size: int) -> int:
    """tee(2): duplicate up to ``size`` bytes of pipe ``fd_in`` into pipe ``fd_out``
    without consuming them; blocks until ``fd_in`` has data; 0 at end of file."""
    if _tee_fn is None:  # pragma: no cover - callers check ``_tee_fn`` first
        raise OSError(errno.ENOSYS, "tee(2) is not available")
    while True:
        n = _tee_fn(fd_in, fd_out, size, 0)
        if n >= 0:
            return n
        err = ctypes.get_errno()
        if err != errno.EINTR:
            raise OSError(err, os.strerror(err))


class _Splicer:
    """The private pipe that receives the tee'd copy, the hold pipe where the
    start of an unfinished line waits (moved, not copied), and /dev/null."""

    def __init__(self) -> None:
        self.side_r, self.side_w = os.pipe()
        grow_pipe(self.side_w, READ_SIZE)
        self.hold_r, self.hold_w = os.pipe()
        grow_pipe(self.hold_w, HOLD_SIZE)
        try:
            self.hold_cap = fcntl.fcntl(self.hold_w, F_GETPIPE_SZ)
        except OSError:
            self.hold_cap = 0
        self.null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)

    @classmethod
    def open(cls, out_fd: int) -> _Splicer | None:
        """Only when stdout can take a splice (a pipe or a socket) and tee exists."""
        if _tee_fn is None:
            return None
        try:
            mode = os.fstat(out_fd).st_mode
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                return None
            return cls()
        except OSError:
            return None

    def read_side(self, buf: bytearray | memoryview, n: int) -> None:
        """The tee'd copy of the current chunk into ``buf[:n]``."""
        mv = memoryview(buf)
        got = 0
        while got < n:
            k = os.readv(self.side_r, [mv[got:n]])
            if not k:  # cannot happen: the bytes are in our own pipe
                raise OSError(errno.EIO, "side pipe closed")
            got += k

    def hold(self, src: int, n: int) -> None:
        """Move ``n`` bytes of pipe ``src`` into the hold pipe (the caller checked the room)."""
        while n > 0:
            k = os.splice(src, self.hold_w, n)
            if not k:
                raise OSError(errno.EIO, "server pipe ended inside tee'd data")
            n -= k

    def discard(self, src: int, n: int) -> None:
        """Consume ``n`` bytes of pipe ``src`` without copying them to user space."""
        while n > 0:
            k = os.splice(src, self.null, n)
            if not k:
                return
            n -= k

    def close(self) -> None:
        for fd in (self.side_r, self.side_w, self.hold_r, self.hold_w, self.null):
            try:
                os.close(fd)
            except OSError:
                pass


def grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Bigger pipe buffers mean fewer context switches for large messages.
    Tries ``size``, then the system's pipe-max-size, then 256 KiB."""
    sizes = [size]
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            sizes.append(min(size, int(f.read())))
    except (OSError, ValueError):
        pass
    for sz in (*sizes, 256 * 1024):
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, sz)
            return
        except OSError:
            continue


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    mv = memoryview(data)
    while mv:
        try:
            n = os.write(fd, mv)
        except BlockingIOError:  # a peer made the shared file description non-blocking
            wait_fd(fd)
            continue
        mv = mv[n:]


def wait_fd(fd: int, events: int = select.POLLOUT) -> None:
    """Block until ``fd`` is ready: the client may hand the shim a non-blocking
    stdin/stdout (a file description it shares), where reads/writes fail with EAGAIN."""
    p = select.poll()
    p.register(fd, events)
    p.poll()


@dataclass(slots=True)
class ClientVerdict:
    """What to do with one client line instead of forwarding it as is."""

    to_server: bytes | None = None
    """Bytes to forward instead (None: forward nothing)."""
    to_client: bytes | None = None
    """A reply agentsh sends back to the client (e.g. the blocked-call error)."""


class Inspector(Protocol):
    def client_line(self, line: bytes) -> ClientVerdict | None:
        """Each complete client line before it is forwarded; None = forward it."""

    def client_oversized(self, head: bytes, size: int) -> bytes | None:
        """A client line over ``max_line`` (dropped); the reply to send back, if any."""

    def server_line(self, data: bytes | bytearray, start: int, end: int) -> bytes | None:
        """Each complete server line ``data[start:end]`` before it is forwarded:
        None = forward it; bytes = write these instead (b"" = drop). ``data`` is a
        reused buffer: do not keep a reference."""

    def server_oversized(self, head: bytes, size: int) -> bytes:
        """A server line over ``max_line`` (dropped); what to write instead."""


class NullInspector:
    """Pure relay (tests, benchmarks): forwards every complete line, decides nothing."""

    def client_line(self, line: bytes) -> ClientVerdict | None:
        return None

    def client_oversized(self, head: bytes, size: int) -> bytes | None:
        return None

    def server_line(self, data: bytes | bytearray, start: int, end: int) -> bytes | None:
        return None

    def server_oversized(self, head: bytes, size: int) -> bytes:
        return b""


@dataclass
class RelayStats:
    client_bytes: int = 0
    server_bytes: int = 0
    client_lines: int = 0
    server_lines: int = 0
    oversized: int = 0
    client_gone: bool = False
    server_gone: bool = False


class Output:
    """The client-facing stdout: the server's lines plus agentsh's own injected lines.

    The server pump writes whole lines only, so an injected line can always go
    out at once; the lock keeps the two writers from interleaving."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.RLock()
        self.mid_line = False  # only after a last server line without newline
        self.broken = False
        self.spliced = False

    def stream(self, data: bytes | bytearray | memoryview) -> None:
        """Server lines, in order (called by the server pump only)."""
        if not data:
            return
        with self._lock:
            self._write(data)
            self.mid_line = data[-1] != 0x0A

    def splice_from(self, src: int, n: int, discard: Callable[[int, int], None]) -> bool:
        """Move ``n`` server bytes (whole lines) from pipe ``src`` to the client
        with splice(2). False (nothing moved) when stdout refuses splice; the
        caller then writes its copy instead."""
        with self._lock:
            moved = 0
            if not self.broken:
                try:
                    while moved < n:
                        try:
                            k = os.splice(src, self.fd, n - moved)
                        except BlockingIOError:
                            wait_fd(self.fd)
                            continue
                        if not k:
                            break
                        moved += k
                except OSError as e:
                    if e.errno == errno.EINVAL and moved == 0 and not self.spliced:
                        return False
                    if e.errno not in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                        raise
                    self.broken = True  # client went away: keep draining the server
            self.spliced = True
            self.mid_line = False
            if moved < n:
                discard(src, n - moved)
            return True

    def inject(self, line: bytes) -> None:
        """A whole line of agentsh's own (an error reply)."""
        with self._lock:
            if self.mid_line:
                self._write(b"\n")
                self.mid_line = False
            self._write(line)

    def atomic(self) -> threading.RLock:
        """Hold this while writing the pieces of one line (hold pipe, then the
        rest): an injected line must not land between them."""
        return self._lock

    def finish(self) -> None:
        """Server stream ended."""

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        if self.broken:
            return
        try:
            write_all(self.fd, data)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                raise
            self.broken = True  # client went away: keep draining the server, drop output


def pump_client(
    src: int,
    dst: int,
    out: Output,
    insp: Inspector,
    stats: RelayStats,
    on_eof: Callable[[], None],
    max_line: int = MAX_LINE,
) -> None:
    """Client stdin → server stdin (see module docstring)."""
    buf = bytearray(READ_SIZE)  # reused: no 1 MiB allocation per read
    partial = bytearray()
    skip_head: bytes | None = None  # inside an oversized line: its head, dropped until newline
    skip_size = 0
    dst_ok = True

    def send(data: bytes | bytearray | memoryview) -> None:
        nonlocal dst_ok
        if not dst_ok or not data:
            return
        try:
            write_all(dst, data)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.EBADF):
                raise
            dst_ok = False  # server gone; keep reading so the client is not blocked

    def refuse_oversized() -> None:
        nonlocal skip_head
        assert skip_head is not None
        stats.oversized += 1
        reply = insp.client_oversized(skip_head, skip_size)
        if reply:
            out.inject(reply)
        skip_head = None

    try:
        while True:
            try:
                n = os.readv(src, [buf])
            except BlockingIOError:  # stdin shared with a peer that made it non-blocking
                wait_fd(src, select.POLLIN)
                continue
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                break
            if not n:
                break
            stats.client_bytes += n
            mv = memoryview(buf)[:n]
            pos = 0
            if skip_head is not None:
                nl = buf.find(b"\n", 0, n)
                if nl < 0:
                    skip_size += n
                    continue
                skip_size += nl + 1
                stats.client_lines += 1
                refuse_oversized()
                pos = nl + 1
            batch_start = pos  # forwardable bytes [batch_start, pos) not yet written
            while pos < n:
                nl = buf.find(b"\n", pos, n)
                if nl < 0:
                    break
                stats.client_lines += 1
                if partial:
                    if len(partial) + (nl + 1 - pos) > max_line:
                        skip_head, skip_size = bytes(partial[:EDGE]), len(partial) + (nl + 1 - pos)
                        partial = bytearray()
                        refuse_oversized()
                    else:
                        partial += mv[pos : nl + 1]
                        line = bytes(partial)
                        partial = bytearray()
                        v = insp.client_line(line)
                        if v is None:
                            send(line)
                        else:
                            _apply(v, send, out)
                    pos = nl + 1
                    batch_start = pos
                    continue
                if nl + 1 - pos > max_line:
                    send(mv[batch_start:pos])
                    skip_head, skip_size = bytes(mv[pos : pos + EDGE]), nl + 1 - pos
                    refuse_oversized()
                    batch_start = nl + 1
                else:
                    line = bytes(mv[pos : nl + 1])
                    v = insp.client_line(line)
                    if v is not None:
                        send(mv[batch_start:pos])
                        _apply(v, send, out)
                        batch_start = nl + 1
                pos = nl + 1
            send(mv[batch_start:pos])
            if pos < n:
                if len(partial) + (n - pos) > max_line:
                    # too long to hold for a decision: refused, dropped through its newline
                    skip_head = bytes(partial[:EDGE]) + bytes(mv[pos : pos + max(0, EDGE - len(partial))])
                    skip_size = len(partial) + (n - pos)
                    partial = bytearray()
                else:
                    partial += mv[pos:]
            mv.release()
        if skip_head is not None:
            refuse_oversized()
        elif partial:  # a last line without newline: the Python SDK reads it too
            line = bytes(partial)
            v = insp.client_line(line)
            if v is None:
                send(line)
            else:
                _apply(v, send, out)
    finally:
        stats.client_gone = True
        on_eof()


def _apply(v: ClientVerdict, send: Callable[[bytes], None], out: Output) -> None:
    if v.to_server:
        send(v.to_server)
    if v.to_client:
        out.inject(v.to_client)


_FWD, _DROP, _WRITE, _HOLD, _UNHOLD, _UNHOLD_DROP = range(6)
_Op = tuple[int, int, int, bytes]
"""(op, a, b, data): FWD/DROP/HOLD consume ``b - a`` bytes of the server pipe
(``line[a:b]`` is their copy), UNHOLD/UNHOLD_DROP the same from the hold
pipe, WRITE writes ``data``."""
FLUSH_OPS = 16
"""Decisions carried out in one go; a chunk of many small lines is forwarded
in batches so the client can read while the rest is decided."""


def pump_server(
    src: int,
    out: Output,
    insp: Inspector,
    stats: RelayStats,
    max_line: int = MAX_LINE,
) -> None:
    """Server stdout → client stdout (see module docstring)."""
    # One buffer: the unfinished line stays at its start and the next read lands
    # right behind it, so a complete line is always contiguous without copying.
    # It grows with a long line (up to max_line plus one read) and shrinks after.
    line = bytearray(2 * READ_SIZE)
    fill = 0  # line[0:fill]: the unfinished line (not yet forwarded)
    held = False  # line[0:fill] also waits in the hold pipe (splice mode)
    skip_head: bytes | None = None  # inside an oversized line: its head, dropped until newline
    skip_size = 0
    sp = _Splicer.open(out.fd)
    try:
        while True:
            if fill + READ_SIZE > len(line):
                line.extend(bytes(min(len(line), max_line + READ_SIZE - len(line))))
            elif fill <= READ_SIZE < len(line) // 4:
                del line[2 * READ_SIZE :]  # a long line is gone: give the memory back
            dst = memoryview(line)[fill : fill + READ_SIZE]
            try:
                if sp is not None:
                    n = tee(src, sp.side_w, READ_SIZE)
                    if n:
                        sp.read_side(dst, n)  # the copy; the original is still in src
                else:
                    n = os.readv(src, [dst])
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                if sp is not None and e.errno == errno.EINVAL:
                    _drop_hold(sp, fill if held else 0)
                    sp.close()
                    sp, held = None, False
                    continue
                break
            finally:
                dst.release()
            if not n:
                break
            stats.server_bytes += n
            total = fill + n
            # ---- decide on every complete line, then move the bytes accordingly
            ops: list[_Op] = []
            splice_ok = True
            pos = fill  # the carried part holds no newline
            start = 0
            if skip_head is not None:
                nl = line.find(b"\n", 0, total)
                if nl < 0:
                    skip_size += n
                    ops.append((_DROP, 0, n, b""))
                    pos = start = total
                else:
                    skip_size += nl + 1
                    stats.server_lines += 1
                    stats.oversized += 1
                    ops.append((_DROP, 0, nl + 1, b""))
                    ops.append((_WRITE, 0, 0, insp.server_oversized(skip_head, skip_size)))
                    skip_head = None
                    pos = start = nl + 1
            while pos < total:
                nl = line.find(b"\n", pos, total)
                if nl < 0:
                    break
                end = nl + 1
                stats.server_lines += 1
                carried = fill if start == 0 else 0  # bytes of this line from earlier chunks
                if end - start > max_line:
                    stats.oversized += 1
                    rep: bytes | None = insp.server_oversized(bytes(line[start : start + EDGE]), end - start)
                else:
                    rep = insp.server_line(line, start, end)
                if carried and held:
                    if rep is None:
                        ops.append((_UNHOLD, 0, carried, b""))
                    else:
                        ops.append((_UNHOLD_DROP, 0, carried, b""))
                if rep is None and (not carried or held):
                    ops.append((_FWD, start + carried, end, b""))
                else:
                    ops.append((_DROP, start + carried, end, b""))
                    ops.append((_WRITE, 0, 0, bytes(line[start:end]) if rep is None else rep))
                start = pos = end
                if carried:
                    fill, held = 0, False
                if len(ops) >= FLUSH_OPS:  # let the client read while the rest is decided
                    splice_ok = _move(ops, src, out, line, sp, splice_ok)
                    ops = []
            if start < total:  # an unfinished line: wait for the rest of it
                carried = fill if start == 0 else 0
                k = total - start - carried  # its new bytes, now in src
                if total - start > max_line:
                    if carried and held:
                        ops.append((_UNHOLD_DROP, 0, carried, b""))
                    ops.append((_DROP, start + carried, total, b""))
                    skip_head = bytes(line[start : start + EDGE])
                    skip_size = total - start
                    fill, held = 0, False
                else:
                    if sp is not None and (held or not carried) and carried + k <= sp.hold_cap:
                        ops.append((_HOLD, start + carried, total, b""))
                        held = True
                    else:
                        if carried and held:
                            ops.append((_UNHOLD_DROP, 0, carried, b""))
                        ops.append((_DROP, start + carried, total, b""))
                        held = False
                    fill = total - start
            else:
                fill, held = 0, False
            splice_ok = _move(ops, src, out, line, sp, splice_ok)
            if fill and start:  # the unfinished line to the front (after the writes above)
                line[0:fill] = line[start : start + fill]
            if not splice_ok:
                assert sp is not None
                _drop_hold(sp, fill if held else 0)  # the copy in ``line`` goes out by write
                sp.close()  # stdout refused splice: read+write from now on
                sp, held = None, False
        if skip_head is not None:
            stats.oversized += 1
            out.stream(insp.server_oversized(skip_head, skip_size))
        elif fill:  # a last line without newline: decided like any other
            rep = insp.server_line(line, 0, fill)
            if rep is None and held and sp is not None:
                _move([(_UNHOLD, 0, fill, b"")], src, out, line, sp, True)
                out.mid_line = True
            else:
                out.stream(bytes(line[:fill]) if rep is None else rep)
    finally:
        if sp is not None:
            sp.close()
        stats.server_gone = True
        out.finish()


def _drop_hold(sp: _Splicer, n: int) -> None:
    if n:
        sp.discard(sp.hold_r, n)


def _move(ops: list[_Op], src: int, out: Output, line: bytearray, sp: _Splicer | None, splice_ok: bool) -> bool:
    """Carry out decisions on one chunk, in order; False once stdout refused splice
    (the bytes then go out by write)."""
    with out.atomic():
        return _move_locked(ops, src, out, line, sp, splice_ok)


def _move_locked(ops: list[_Op], src: int, out: Output, line: bytearray, sp: _Splicer | None,
                 splice_ok: bool) -> bool:
    i, count = 0, len(ops)
    while i < count:
        op, a, b, data = ops[i]
        i += 1
        if op == _WRITE:
            if data:
                out.stream(data)
            continue
        while i < count and ops[i][0] == op and ops[i][1] == b and op in (_FWD, _DROP):  # adjacent ranges
            b = ops[i][2]
            i += 1
        if sp is None:
            if op == _FWD:
                out.stream(memoryview(line)[a:b])
        elif op == _DROP:
            sp.discard(src, b - a)
        elif op == _HOLD:
            sp.hold(src, b - a)
        elif op == _UNHOLD_DROP:
            sp.discard(sp.hold_r, b - a)
        elif op == _UNHOLD:
            if not (splice_ok and out.splice_from(sp.hold_r, b - a, sp.discard)):
                splice_ok = False
                sp.discard(sp.hold_r, b - a)
                out.stream(memoryview(line)[a:b])
        elif not (splice_ok and out.splice_from(src, b - a, sp.discard)):
            splice_ok = False
            sp.discard(src, b - a)
            out.stream(memoryview(line)[a:b])
    return splice_ok
