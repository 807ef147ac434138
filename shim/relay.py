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

Messages agentsh writes itself (error responses for blocked calls) go to the
client through ``Output.inject``, which writes only at a line boundary of the
server's stream, so they never split a server message.
"""

from __future__ import annotations

import errno
import fcntl
import os
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
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


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
        n = os.write(fd, mv)
        mv = mv[n:]


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

    def stream(self, data: bytes | bytearray | memoryview) -> None:
        """Server bytes, in order (called by the server pump only)."""
        if not data:
            return
        with self._lock:
            self._write(data)
            self.mid_line = data[-1] != 0x0A
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
    side = bytearray()  # pass-through: copy of the current forwarded line, while short
    big = False  # the current forwarded line outgrew SIDE_FULL: keep only its edges
    head = b""
    tail = bytearray()
    size = 0
    streaming_line = False  # a line whose first bytes were already forwarded
    try:
        while True:
            try:
                n = os.readv(src, [buf])
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                break
            if not n:
                break
            stats.server_bytes += n
            mv = memoryview(buf)[:n]
            pos = 0
            if not held and (streaming_line or not insp.server_hold_needed()):
                # ---- pass-through: forward first, look afterwards
                out.stream(mv)
                while True:
                    nl = buf.find(b"\n", pos, n)
                    if nl < 0:
                        break
                    stats.server_lines += 1
                    piece = mv[pos : nl + 1]
                    if big:
                        size += len(piece)
                        tail += piece[-EDGE:]
                        insp.server_big_line(head, bytes(tail[-EDGE:]), size)
                        big, head, size = False, b"", 0
                        tail.clear()
                    elif side:
                        side += piece
                        insp.server_line_seen(side)
                        side.clear()
                    else:
                        insp.server_line_seen(piece)
                    pos = nl + 1
                streaming_line = pos < n
                if pos < n:
                    piece = mv[pos:]
                    if big:
                        size += len(piece)
                        tail += piece[-EDGE:]
                        del tail[:-EDGE]
                    elif len(side) + len(piece) > SIDE_FULL:
                        head = bytes(side[:EDGE]) + bytes(piece[: max(0, EDGE - len(side))])
                        size = len(side) + len(piece)
                        tail = bytearray(side[-EDGE:])
                        tail += piece[-EDGE:]
                        del tail[:-EDGE]
                        side.clear()
                        big = True
                    else:
                        side += piece
                continue
            # ---- held mode: whole lines first, then forward (maybe rewritten)
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
                    big, head, size = True, bytes(held[:EDGE]), len(held) + (n - pos)
                    tail = bytearray(bytes(held[-EDGE:]) + bytes(mv[pos:][-EDGE:]))
                    del tail[:-EDGE]
                    held.clear()
                    streaming_line = True
                else:
                    held += mv[pos:]
        if held:
            rep = insp.server_line(bytes(held))
            out.stream(bytes(held) if rep is None else rep)
        elif big:
            insp.server_big_line(head, bytes(tail), size)
        elif side:
            insp.server_line_seen(side)
    finally:
        stats.server_gone = True
        out.finish()
