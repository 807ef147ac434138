"""A lean HTTP/1.1 client for the proxy's upstream hop, with a keep-alive pool.

Why not ``aiohttp.ClientSession``: profiled under load it was a third of the
proxy's CPU per request (URL objects, request/response objects, tracing,
cookie and timeout machinery, a header multidict copied twice). The proxy
needs much less: send bytes it already has to one of two configured origins,
read a status line, headers and a Content-Length / chunked / until-close
body, and hand the body over whole or as it arrives. One ``asyncio.Protocol``
per connection, one buffer, one waiter, no task per request.

Semantics kept from the aiohttp setup it replaces: connections are pooled and
kept alive (idle ones older than ``keepalive_timeout`` are not reused), no
cookie jar, no proxy environment variables, no redirects followed, a connect
timeout and a per-read timeout, TLS with the system's default verification.
Bodies are never decompressed here (the server decides what to decode).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

_MAX_HEAD = 64 * 1024
_MAX_CHUNK_LINE = 4096
_HIGH_WATER = 1024 * 1024  # pause reading the upstream socket above this much unread data
_SSL_CONTEXT: ssl.SSLContext | None = None


class UpstreamError(Exception):
    """The upstream could not be reached, or broke the protocol/connection."""


class BodyTooLarge(UpstreamError):
    """A response body longer than the reader's limit (nothing beyond the limit is buffered)."""


def tls_context() -> ssl.SSLContext:
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = ssl.create_default_context()
    return _SSL_CONTEXT


class Origin:
    """scheme://host:port of an upstream, parsed once per base URL."""

    __slots__ = ("host", "host_header", "key", "port", "prefix", "tls")

    def __init__(self, base_url: str) -> None:
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"unsupported upstream URL {base_url!r}")
        self.tls = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.tls else 80)
        default = 443 if self.tls else 80
        hh = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = (hh if self.port == default else f"{hh}:{self.port}").encode("ascii", "strict")
        self.prefix = u.path.rstrip("/")
        self.key = (self.tls, self.host, self.port)


class _Conn(asyncio.Protocol):
    """One upstream connection: a byte buffer filled by the transport, one waiter."""

    def __init__(self, loop: asyncio.AbstractEventLoop, key: tuple[bool, str, int]) -> None:
        self.loop = loop
        self.key = key
        self.counted = True  # in the pool's open-connection count
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[None] | None = None
        self.eof = False
        self.exc: BaseException | None = None
        self.paused = False
        self.idle_since = 0.0
        self.reused = False
        self.on_lost: Callable[[_Conn], None] | None = None
        """Set while the connection sits idle in the pool (so a dead one leaves it at once)."""

    # transport callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.paused and len(self.buf) > _HIGH_WATER and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.exc = exc
        self._wake()
        if self.on_lost is not None:
            self.on_lost(self)

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    # used by the response reader
    @property
    def usable(self) -> bool:
        t = self.transport
        return not self.eof and t is not None and not t.is_closing() and not self.buf

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def consumed(self) -> None:
        """The reader took data out of ``buf``: resume a paused socket when it is low again."""
        if self.paused and len(self.buf) < _HIGH_WATER // 4 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    async def more(self, timeout: float) -> None:
        """Wait for more bytes (or EOF); TimeoutError after ``timeout`` seconds of silence."""
        if self.eof:
            raise UpstreamError(f"connection closed by upstream{f' ({self.exc.__class__.__name__})' if self.exc else ''}")
        if self.paused and self.transport is not None:  # the reader needs more than is buffered
            self.paused = False
            self.transport.resume_reading()
        fut = self.loop.create_future()
        self.waiter = fut
        h = self.loop.call_later(timeout, _expire, fut)
        try:
            await fut
        finally:
            h.cancel()
            self.waiter = None

    def close(self) -> None:
        t = self.transport
        if t is not None and not t.is_closing():
            t.close()
        self.eof = True


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class UpstreamResponse:
    """Status, headers and a body to read whole (``read``) or as it arrives (``iter_chunks``)."""

    __slots__ = (
        "_chunk_left", "_conn", "_done", "_http11", "_left", "_mode", "_pool", "_timeout",
        "headers", "hmap", "keep_alive", "reason", "status",
    )

    def __init__(self, pool: UpstreamPool, conn: _Conn, timeout: float) -> None:
        self._pool = pool
        self._conn = conn
        self._timeout = timeout
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[str, str]] = []
        """In upstream order, names as sent."""
        self.hmap: dict[str, str] = {}
        """Lower-case name -> value (repeated headers joined with ', ')."""
        self._mode = "none"
        self._left = 0
        self._chunk_left = -1
        self._done = False
        self._http11 = True
        self.keep_alive = False

    def get(self, name: str, default: str = "") -> str:
        return self.hmap.get(name, default)

    async def _start(self, head_request: bool) -> None:
        c = self._conn
        while True:
            buf = c.buf
            i = buf.find(b"\r\n\r\n")
            while i < 0:
                if len(buf) > _MAX_HEAD:
                    raise UpstreamError("response head too large")
                seen = len(buf)
                await c.more(self._timeout)
                i = buf.find(b"\r\n\r\n", max(0, seen - 3))
            head = bytes(buf[:i])
            del buf[: i + 4]
            self._parse_head(head)
            if 100 <= self.status < 200 and self.status != 101:
                self.headers, self.hmap = [], {}
                continue  # interim (100 Continue, 103 Early Hints): the real head follows
            break
        h = self.hmap
        conn_tokens = {t.strip().lower() for t in h.get("connection", "").split(",")}
        self.keep_alive = self._http11 and "close" not in conn_tokens and self.status != 101
        te = h.get("transfer-encoding")
        cl = h.get("content-length")
        if head_request or self.status in (204, 304) or 100 <= self.status < 200:
            self._mode = "none"
        elif te is not None:
            codings = [t.strip().lower() for t in te.split(",") if t.strip()]
            if any(c not in ("chunked", "identity") for c in codings) or codings.count("chunked") > 1:
                # a transfer-coding (gzip, ...) the proxy would forward still encoded
                # and unlabelled; no provider sends one
                raise UpstreamError(f"unsupported transfer-encoding {te!r} from upstream")
            if codings and codings[-1] == "chunked":
                self._mode, self._chunk_left = "chunked", -1
            else:
                self._mode, self.keep_alive = "close", False
            if cl is not None:
                self.keep_alive = False  # both framings: never reuse this connection
        elif cl is not None:
            vals = {v.strip() for v in cl.split(",")}
            if len(vals) != 1 or not (v := vals.pop()).isdigit():
                raise UpstreamError("invalid Content-Length from upstream")
            self._mode, self._left = "length", int(v)
        else:
            self._mode, self.keep_alive = "close", False
        if self._mode == "none" or (self._mode == "length" and self._left == 0):
            self._done = True
        c.consumed()

    def _parse_head(self, head: bytes) -> None:
        text = head.decode("utf-8", "surrogateescape")  # as aiohttp decodes header values
        n = text.count("\r\n")
        if text.count("\r") != n or text.count("\n") != n:
            raise UpstreamError("malformed response head from upstream (bare CR/LF)")  # header splitting
        lines = text.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
            raise UpstreamError("malformed status line from upstream")
        self._http11 = parts[0] != "HTTP/1.0"
        self.status = int(parts[1])
        self.reason = parts[2] if len(parts) > 2 else ""
        headers = self.headers
        hmap = self.hmap
        for i in range(1, len(lines)):
            k, sep, v = lines[i].partition(":")
            if not sep or not k or " " in k or "\t" in k:
                raise UpstreamError("malformed header line from upstream")
            v = v.strip(" \t")
            headers.append((k, v))
            lk = k.lower()
            prev = hmap.get(lk)
            hmap[lk] = v if prev is None else prev + ", " + v

    async def read(self, limit: int | None = None) -> bytes:
        """The whole body; BodyTooLarge when it is longer than ``limit``."""
        if self._mode == "length":
            if limit is not None and self._left > limit:
                raise BodyTooLarge(f"response body of {self._left} bytes is over the {limit}-byte limit")
            c = self._conn
            while len(c.buf) < self._left:
                await c.more(self._timeout)
            n = self._left
            if len(c.buf) == n:
                out = bytes(c.buf)
                c.buf.clear()
            else:
                out = bytes(c.buf[:n])
                del c.buf[:n]
            self._left = 0
            self._done = True
            c.consumed()
            return out
        parts: list[bytes] = []
        size = 0
        async for chunk in self.iter_chunks():
            size += len(chunk)
            if limit is not None and size > limit:
                raise BodyTooLarge(f"response body over the {limit}-byte limit")
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (de-chunked; content-encoding untouched)."""
        c = self._conn
        mode = self._mode
        if self._done or mode == "none":
            self._done = True
            return
        if mode == "length":
            while self._left:
                if not c.buf:
                    await c.more(self._timeout)
                    continue
                n = min(self._left, len(c.buf))
                out = bytes(c.buf[:n])
                del c.buf[:n]
                self._left -= n
                c.consumed()
                yield out
            self._done = True
            return
        if mode == "close":
            while True:
                if c.buf:
                    out = bytes(c.buf)
                    c.buf.clear()
                    c.consumed()
                    yield out
                    continue
                if c.eof:
                    if c.exc is not None:
                        raise UpstreamError(f"connection lost ({c.exc.__class__.__name__})")
                    self._done = True
                    return
                await c.more(self._timeout)
        # chunked
        while not self._done:
            out = self._dechunk()
            if out:
                yield out
            elif not self._done:
                await c.more(self._timeout)

    def _dechunk(self) -> bytes:
        """Decode every complete piece in the buffer; b"" when more input is needed."""
        buf = self._conn.buf
        out: list[bytes] = []
        pos = 0
        n = len(buf)
        while True:
            left = self._chunk_left
            if left > 0:
                take = min(left, n - pos)
                if take <= 0:
                    break
                out.append(bytes(buf[pos : pos + take]))
                pos += take
                self._chunk_left = left - take
                if self._chunk_left == 0:
                    self._chunk_left = -2  # the CRLF after the data
                continue
            if left == -2:
                if n - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise UpstreamError("malformed chunked body from upstream")
                pos += 2
                self._chunk_left = -1
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                if n - pos > _MAX_CHUNK_LINE:
                    raise UpstreamError("malformed chunked body from upstream")
                break
            line = bytes(buf[pos:eol])
            if left == -3:  # trailers until an empty line
                pos = eol + 2
                if not line:
                    self._done = True
                    break
                continue
            size_s = line.split(b";", 1)[0].strip()
            try:
                if not size_s or size_s.startswith((b"-", b"+", b"0x", b"0X")):
                    raise ValueError
                size = int(size_s, 16)
            except ValueError:
                raise UpstreamError("malformed chunk size from upstream") from None
            pos = eol + 2
            self._chunk_left = size if size else -3
        if pos:
            del buf[:pos]
            self._conn.consumed()
        if not out and not self._done and self._conn.eof:
            raise UpstreamError("upstream closed mid-body")
        return out[0] if len(out) == 1 else b"".join(out)

    def release(self) -> None:
        """Give the connection back to the pool if the body was fully read, else close it."""
        c = self._conn
        if c is None:
            return
        self._conn = None  # type: ignore[assignment]
        if self._done and self.keep_alive and c.usable:
            self._pool._put(c)
        else:
            self._pool._discard(c)

    def close(self) -> None:
        """Drop the connection (client went away: stop the upstream generating)."""
        c = self._conn
        if c is None:
            return
        self._conn = None  # type: ignore[assignment]
        self._pool._discard(c)


class UpstreamPool:
    """Keep-alive connections per origin; at most ``limit`` open at once."""

    def __init__(self, *, limit: int = 512, keepalive_timeout: float = 60.0, connect_timeout: float = 30.0, read_timeout: float = 600.0) -> None:
        self.limit = limit
        self.keepalive_timeout = keepalive_timeout
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._idle: dict[tuple[bool, str, int], list[_Conn]] = {}
        self._origins: dict[str, Origin] = {}
        self._open = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False

    def origin(self, base_url: str) -> Origin:
        o = self._origins.get(base_url)
        if o is None:
            o = self._origins[base_url] = Origin(base_url)
        return o

    async def request(
        self, origin: Origin, method: str, target: str, header_block: bytes, body: bytes
    ) -> UpstreamResponse:
        """Send one request; returns once the response head has arrived.

        ``header_block``: the encoded header lines (each ending CRLF) without
        Host and Content-Length, which are added here. Raises UpstreamError
        (unreachable, protocol error) or TimeoutError.
        """
        conn = await self._acquire(origin)
        try:
            head = b"%s %s HTTP/1.1\r\nHost: %s\r\n%s" % (
                method.encode("ascii"),
                (origin.prefix + target).encode("utf-8", "surrogateescape"),
                origin.host_header,
                header_block,
            )
            if body or method not in ("GET", "HEAD", "OPTIONS", "DELETE", "TRACE"):
                head += b"Content-Length: %d\r\n" % len(body)
            head += b"\r\n"
            if len(body) <= 65536:
                conn.write(head + body if body else head)
            else:
                conn.write(head)
                conn.write(body)
            resp = UpstreamResponse(self, conn, self.read_timeout)
            await resp._start(method == "HEAD")
            return resp
        except BaseException as e:
            self._discard(conn)
            if isinstance(e, OSError):
                raise UpstreamError(e.__class__.__name__) from e
            raise

    async def _acquire(self, origin: Origin) -> _Conn:
        idle = self._idle.get(origin.key)
        if idle:
            now = time.monotonic()
            while idle:
                c = idle.pop()
                c.on_lost = None
                if c.usable and now - c.idle_since < self.keepalive_timeout:
                    c.reused = True
                    return c
                self._discard(c)
        if self._closed:
            raise UpstreamError("proxy shutting down")
        while self._open >= self.limit:
            if self._close_oldest_idle():  # an idle connection (of any origin) gives up its slot
                continue
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
            idle = self._idle.get(origin.key)
            if idle:
                return await self._acquire(origin)
        self._open += 1
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    lambda: _Conn(loop, origin.key),
                    origin.host,
                    origin.port,
                    ssl=tls_context() if origin.tls else None,
                    server_hostname=origin.host if origin.tls else None,
                )
        except BaseException as e:
            self._open -= 1
            self._wake_one()
            if isinstance(e, OSError):  # includes ssl.SSLError, ConnectionRefusedError, gaierror
                raise UpstreamError(e.__class__.__name__) from e
            raise
        return proto

    def _put(self, c: _Conn) -> None:
        if self._closed:
            self._discard(c)
            return
        c.idle_since = time.monotonic()
        c.on_lost = self._lost_idle
        self._idle.setdefault(c.key, []).append(c)
        if self._waiters:
            self._wake_one()

    def _lost_idle(self, c: _Conn) -> None:
        c.on_lost = None
        idle = self._idle.get(c.key)
        if idle is not None and c in idle:
            idle.remove(c)
        self._discard(c)

    def _close_oldest_idle(self) -> bool:
        oldest: _Conn | None = None
        for conns in self._idle.values():
            if conns and (oldest is None or conns[0].idle_since < oldest.idle_since):
                oldest = conns[0]
        if oldest is None:
            return False
        self._idle[oldest.key].pop(0)
        oldest.on_lost = None
        self._discard(oldest)
        return True

    def _discard(self, c: _Conn) -> None:
        if c.counted:
            c.counted = False
            self._open -= 1
        c.close()
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            f = self._waiters.pop(0)
            if not f.done():
                f.set_result(None)
                return

    async def close(self) -> None:
        self._closed = True
        for conns in self._idle.values():
            for c in conns:
                c.on_lost = None
                self._discard(c)
        self._idle.clear()
