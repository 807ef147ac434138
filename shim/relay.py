"""Byte-exact stdio relay between an MCP client and the server the shim spawned.

Why threads and raw fds: the byte path must add microseconds, not an event
loop hop. Each direction is one thread doing ``os.read`` (1 MiB) → ``os.write``
on raw fds (both release the GIL); backpressure is natural (a blocked write
stops the reads of that direction) and a held message naturally holds
everything behind it, which is exactly the ordering rule we want.

Client → server (``pump_client``): lines are cut and each COMPLETE line is
handed to ``Inspector.client_line`` before any byte of it is forwarded (a
tools/call must be decided before the server sees it, and its method can be
anywhere in the object). Lines are buffered only up to ``max_line``; a longer
line is forwarded uninspected and counted. Forwardable lines of one read are
written with one syscall.

Server → client (``pump_server``): while no tools/list request is pending,
every chunk is written through immediately and lines are cut on the side for
inspection/counting (``Inspector.server_line_seen``). While a tools/list
request is pending, complete lines are collected first so that its response
can be held until the verdict arrives and rewritten if tools must be hidden.

Why tee(2)+splice(2) on that direction: a read+write relay copies every byte
twice through user space before the client sees it, which costs a 1 MB result
about half of the direct throughput. When the client's stdout is a pipe or a
socket, each chunk is instead duplicated into a private pipe with ``tee``
(page references, no copy; it also waits for the data like a read would),
the server's pipe is ``splice``d straight to stdout, and only then the
duplicate is read for inspection, after the client already has the bytes.
In held mode the server's copy is spliced to /dev/null and the duplicate is
handled like a read. Elsewhere (a tty, a file) it falls back to read+write.

Messages agentsh writes itself (error responses for blocked calls) go to the
client through ``Output.inject``, which writes only at a line boundary of the
server's stream, so they never split a server message.
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
"""Longest line that is buffered for inspection (client side) or held (server side)."""
SIDE_FULL = 64 * 1024
"""Forwarded server lines longer than this are not copied aside whole: only their
first and last EDGE bytes are kept for the framing check (Inspector.server_big_line)."""
EDGE = 4096
SCAN_PIECE = 128 * 1024
"""Spliced bytes are read back for inspection in pieces this big: the copy then
lands in cache-hot memory instead of streaming through a 1 MiB buffer."""
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


try:
    _tee_fn = ctypes.CDLL(None, use_errno=True).tee  # not wrapped by the os module
    _tee_fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    _tee_fn.restype = ctypes.c_ssize_t
except (OSError, AttributeError):  # pragma: no cover - not glibc/musl Linux
    _tee_fn = None


def tee(fd_in: int, fd_out: int, size: int) -> int:
    """tee(2): duplicate up to ``size`` bytes of pipe ``fd_in`` into pipe ``fd_out``
    without consuming them; blocks until ``fd_in`` has data; 0 at end of file."""
    while True:
        n: int = _tee_fn(fd_in, fd_out, size, 0)
        if n >= 0:
            return n
        err = ctypes.get_errno()
        if err != errno.EINTR:
            raise OSError(err, os.strerror(err))


class _Splicer:
    """The private pipe that receives the tee'd copy, and /dev/null to drop bytes."""

    def __init__(self) -> None:
        self.side_r, self.side_w = os.pipe()
        grow_pipe(self.side_w, READ_SIZE)
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

    def read_side(self, buf: bytearray, n: int) -> None:
        """The tee'd copy of the current chunk into ``buf[:n]``."""
        mv = memoryview(buf)
        got = 0
        while got < n:
            k = os.readv(self.side_r, [mv[got:n]])
            if not k:  # cannot happen: the bytes are in our own pipe
                raise OSError(errno.EIO, "side pipe closed")
            got += k

    def read_some(self, buf: bytearray, n: int) -> int:
        """Up to ``n`` bytes of the tee'd copy into the start of ``buf``."""
        k = os.readv(self.side_r, [memoryview(buf)[:n]])
        if not k:  # cannot happen: the bytes are in our own pipe
            raise OSError(errno.EIO, "side pipe closed")
        return k

    def discard(self, src: int, n: int) -> None:
        """Consume ``n`` bytes of pipe ``src`` without copying them to user space."""
        while n > 0:
            k = os.splice(src, self.null, n)
            if not k:
                return
            n -= k

    def close(self) -> None:
        for fd in (self.side_r, self.side_w, self.null):
            try:
                os.close(fd)
            except OSError:
                pass


def grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Bigger pipe buffers mean fewer context switches for large messages."""
    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)
    except OSError:
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, 256 * 1024)
        except OSError:
            pass


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
        """Called for each complete client line before it is forwarded; None = forward."""

    def server_hold_needed(self) -> bool:
        """True while a server response may have to be held/rewritten (pending tools/list)."""

    def server_line(self, line: bytes) -> bytes | None:
        """Held mode: a complete server line; return replacement bytes or None to forward."""

    def server_line_seen(self, line: bytes | bytearray | memoryview) -> None:
        """Pass-through mode: a complete server line that was already forwarded
        (the buffer is reused afterwards: do not keep a reference)."""

    def server_big_line(self, head: bytes, tail: bytes, size: int) -> None:
        """Pass-through mode: a forwarded line longer than SIDE_FULL, by its edges."""

    def oversized(self, direction: str, size: int) -> None:
        """A line too long to inspect was forwarded unchanged."""


class NullInspector:
    """Pure relay (tests, benchmarks): forwards everything, inspects nothing."""

    def client_line(self, line: bytes) -> ClientVerdict | None:
        return None

    def server_hold_needed(self) -> bool:
        return False

    def server_line(self, line: bytes) -> bytes | None:
        return None

    def server_line_seen(self, line: bytes | bytearray | memoryview) -> None:
        return None

    def server_big_line(self, head: bytes, tail: bytes, size: int) -> None:
        return None

    def oversized(self, direction: str, size: int) -> None:
        return None


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
    """The client-facing stdout: the server stream plus agentsh's own injected lines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()
        self.mid_line = False
        self._pending: list[bytes] = []
        self.broken = False
        self.spliced = False

    def stream(self, data: bytes | bytearray | memoryview) -> None:
        """Server bytes, in order (called by the server pump only)."""
        if not data:
            return
        with self._lock:
            self._write(data)
            self.mid_line = data[-1] != 0x0A
            if not self.mid_line and self._pending:
                self._flush_pending()

    def splice_from(self, src: int, n: int, discard: Callable[[int, int], None]) -> bool:
        """Move ``n`` server bytes from pipe ``src`` to the client with splice(2).

        False (nothing moved) when stdout refuses splice; the caller falls back to
        writes. Until ``end_chunk`` the stream counts as mid-line, so injected
        lines wait for the boundary the chunk may end on."""
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
            self.mid_line = True
            if moved < n:
                discard(src, n - moved)
            return True

    def end_chunk(self, last: int) -> None:
        """The last byte of what ``splice_from`` moved, once the copy has been read."""
        with self._lock:
            self.mid_line = last != 0x0A
            if not self.mid_line and self._pending:
                self._flush_pending()

    def inject(self, line: bytes) -> None:
        """A whole line of agentsh's own; written at the next line boundary."""
        with self._lock:
            if self.mid_line:
                self._pending.append(line)
            else:
                self._write(line)

    def finish(self) -> None:
        """Server stream ended: anything still pending goes out (on its own line)."""
        with self._lock:
            if self._pending:
                if self.mid_line:
                    self._write(b"\n")
                    self.mid_line = False
                self._flush_pending()

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        self._write(b"".join(pending))

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
    passthrough = False  # inside an oversized line: forward until its newline
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
            if passthrough:
                nl = buf.find(b"\n", 0, n)
                if nl < 0:
                    send(mv)
                    continue
                send(mv[: nl + 1])
                passthrough = False
                pos = nl + 1
            batch_start = pos  # forwardable bytes [batch_start, pos) not yet written
            while pos < n:
                nl = buf.find(b"\n", pos, n)
                if nl < 0:
                    break
                stats.client_lines += 1
                if partial:
                    partial += mv[pos : nl + 1]
                    line = bytes(partial)
                    partial.clear()
                    v = insp.client_line(line)
                    if v is None:
                        send(line)
                    else:
                        _apply(v, send, out)
                    pos = nl + 1
                    batch_start = pos
                    continue
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
                    # Too long to hold: forward what we have, the rest streams through.
                    stats.oversized += 1
                    insp.oversized("client", len(partial) + (n - pos))
                    send(partial)
                    partial.clear()
                    send(mv[pos:])
                    passthrough = True
                else:
                    partial += mv[pos:]
        if partial:  # a last line without newline: inspect it like any other
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


class _SeenLines:
    """Pass-through mode: cuts forwarded server bytes into lines for the inspector.

    Short lines are handed over whole; a line that outgrows SIDE_FULL is only
    remembered by its first and last EDGE bytes and its size."""

    __slots__ = ("big", "head", "insp", "side", "size", "stats", "tail")

    def __init__(self, insp: Inspector, stats: RelayStats) -> None:
        self.insp = insp
        self.stats = stats
        self.side = bytearray()  # copy of the current line while it is short
        self.big = False
        self.head = b""
        self.tail = bytearray()
        self.size = 0

    def start_big(self, head: bytes, tail: bytes, size: int) -> None:
        """The current line (already forwarded in part) continues as a big line."""
        self.big, self.head, self.size = True, head, size
        self.tail = bytearray(tail[-EDGE:])

    def feed(self, buf: bytearray, n: int) -> bool:
        """Lines in ``buf[:n]``; True when it ends inside a line."""
        insp = self.insp
        mv = memoryview(buf)[:n]
        pos = 0
        while True:
            nl = buf.find(b"\n", pos, n)
            if nl < 0:
                break
            self.stats.server_lines += 1
            piece = mv[pos : nl + 1]
            if self.big:
                self.size += len(piece)
                self.tail += piece[-EDGE:]
                insp.server_big_line(self.head, bytes(self.tail[-EDGE:]), self.size)
                self.big, self.head, self.size = False, b"", 0
                self.tail.clear()
            elif self.side:
                self.side += piece
                insp.server_line_seen(self.side)
                self.side.clear()
            else:
                insp.server_line_seen(piece)
            pos = nl + 1
        if pos >= n:
            return False
        piece = mv[pos:]
        side = self.side
        if self.big:
            self.size += len(piece)
            self.tail += piece[-EDGE:]
            del self.tail[:-EDGE]
        elif len(side) + len(piece) > SIDE_FULL:
            self.head = bytes(side[:EDGE]) + bytes(piece[: max(0, EDGE - len(side))])
            self.size = len(side) + len(piece)
            self.tail = bytearray(side[-EDGE:])
            self.tail += piece[-EDGE:]
            del self.tail[:-EDGE]
            side.clear()
            self.big = True
        else:
            side += piece
        return True

    def finish(self) -> None:
        """End of the stream inside a line (a last line without newline)."""
        if self.big:
            self.insp.server_big_line(self.head, bytes(self.tail), self.size)
        elif self.side:
            self.insp.server_line_seen(self.side)


def pump_server(
    src: int,
    out: Output,
    insp: Inspector,
    stats: RelayStats,
    max_line: int = MAX_LINE,
) -> None:
    """Server stdout → client stdout (see module docstring)."""
    buf = bytearray(READ_SIZE)  # reused: no 1 MiB allocation (and page faults) per read
    held = bytearray()  # held mode: the current incomplete line (not yet forwarded)
    seen = _SeenLines(insp, stats)
    streaming_line = False  # a line whose first bytes were already forwarded
    sp = _Splicer.open(out.fd)
    try:
        while True:
            try:
                # tee waits for data like read, so the hold check below still
                # happens after the bytes arrived (never before a tools/list
                # request the client pump noted meanwhile)
                n = tee(src, sp.side_w, READ_SIZE) if sp is not None else os.readv(src, [buf])
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                if sp is not None and e.errno == errno.EINVAL:
                    sp.close()
                    sp = None
                    continue
                break
            if not n:
                break
            stats.server_bytes += n
            passthrough = not held and (streaming_line or not insp.server_hold_needed())
            if sp is not None:
                if passthrough and out.splice_from(src, n, sp.discard):
                    # the client already has these bytes; look at them piecewise
                    # through a cache-sized window of buf
                    left = n
                    while left:
                        m = sp.read_some(buf, min(left, SCAN_PIECE))
                        left -= m
                        streaming_line = seen.feed(buf, m)
                    out.end_chunk(buf[m - 1])
                    continue
                sp.discard(src, n)
                sp.read_side(buf, n)
                if passthrough:  # stdout refused splice: read+write from now on
                    sp.close()
                    sp = None
            if passthrough:
                out.stream(memoryview(buf)[:n])
                streaming_line = seen.feed(buf, n)
                continue
            # ---- held mode: whole lines first, then forward (maybe rewritten)
            mv = memoryview(buf)[:n]
            pos = 0
            out_batch_start = 0
            while pos < n:
                nl = buf.find(b"\n", pos, n)
                if nl < 0:
                    break
                stats.server_lines += 1
                if held:
                    held += mv[pos : nl + 1]
                    line = bytes(held)
                    held.clear()
                    rep = insp.server_line(line)
                    out.stream(line if rep is None else rep)
                    pos = nl + 1
                    out_batch_start = pos
                    continue
                rep = insp.server_line(bytes(mv[pos : nl + 1]))
                if rep is not None:
                    out.stream(mv[out_batch_start:pos])
                    out.stream(rep)
                    out_batch_start = nl + 1
                pos = nl + 1
            out.stream(mv[out_batch_start:pos])
            if pos < n:
                if len(held) + (n - pos) > max_line:
                    stats.oversized += 1
                    insp.oversized("server", len(held) + (n - pos))
                    out.stream(held)
                    out.stream(mv[pos:])
                    # the rest of this line streams through, checked by its edges
                    seen.start_big(bytes(held[:EDGE]), bytes(held[-EDGE:]) + bytes(mv[pos:][-EDGE:]),
                                   len(held) + (n - pos))
                    held.clear()
                    streaming_line = True
                else:
                    held += mv[pos:]
        if held:
            rep = insp.server_line(bytes(held))
            out.stream(bytes(held) if rep is None else rep)
        else:
            seen.finish()
    finally:
        if sp is not None:
            sp.close()
        stats.server_gone = True
        out.finish()
