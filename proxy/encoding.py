"""Content-Encoding decoding with a size cap (docs/proxy.md "Encodings").

The proxy inspects decoded bytes and forwards them decoded, so what the client
(or the upstream, for request bodies) reads is exactly what was inspected.
Every coding listed in Content-Encoding is undone, last applied first
(RFC 9110 §8.4): ``gzip`` / ``x-gzip`` (every member), ``deflate`` (zlib, or
raw deflate as some servers send it), ``br``, ``identity``. Anything else, a
corrupt or truncated stream, or more output than the cap is an error: the
caller refuses the message instead of passing bytes it could not read.

Output is produced in pieces of at most ``PIECE`` bytes per step, so a
decompression bomb never costs more memory than the cap (buffered bodies) or
than one piece (streams), whatever its ratio.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import brotli

PIECE = 256 * 1024
KNOWN = frozenset({"gzip", "x-gzip", "deflate", "br", "identity"})


class DecodeError(ValueError):
    """The body cannot be decoded (unsupported coding, corrupt data, over the cap)."""


def codings(*values: str) -> list[str]:
    """The content-codings named by one or more Content-Encoding values, in the order applied."""
    out: list[str] = []
    for v in values:
        for tok in v.split(","):
            t = tok.strip().lower()
            if t and t != "identity":
                out.append(t)
    return out


class _Stage:
    """One coding's incremental decoder, producing at most ``limit`` bytes per call."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._br: brotli.Decompressor | None = None
        self._z: zlib._Decompress | None = None
        self._pending = b""  # input not yet handed to the decompressor
        self._sniffed = coding != "deflate"
        self.done = False
        self.fed = False
        if coding == "br":
            self._br = brotli.Decompressor()
        elif coding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding != "deflate":
            raise DecodeError(f"unsupported content-encoding {coding!r}")

    def feed(self, data: bytes) -> Iterator[bytes]:
        if data:
            self.fed = True
        try:
            yield from (self._feed_br(data) if self._br is not None else self._feed_z(data))
        except (zlib.error, brotli.error) as e:
            raise DecodeError(f"corrupt {self.coding} data ({e})") from None

    def _feed_z(self, data: bytes) -> Iterator[bytes]:
        if not self._sniffed:
            data = self._pending + data
            if len(data) < 2:
                self._pending = data
                return
            self._sniffed = True
            self._pending = b""
            # RFC 1950 header (CM=8, header checksum) or else raw deflate, as clients accept both
            zlib_header = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._z = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        z = self._z
        assert z is not None
        buf = data
        while True:
            if self.done:
                if not buf.strip(b"\x00"):
                    return  # zero padding after the last member (gzip accepts it)
                if self.coding == "deflate" or not buf.startswith(b"\x1f\x8b"):
                    raise DecodeError(f"data after the end of the {self.coding} stream")
                z = self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next gzip member
                self.done = False
            out = z.decompress(buf, PIECE)
            if out:
                yield out
            if z.eof:
                self.done = True
                buf = z.unused_data
                if not buf:
                    return
                continue
            buf = z.unconsumed_tail
            if not buf and len(out) < PIECE:
                return

    def _feed_br(self, data: bytes) -> Iterator[bytes]:
        d = self._br
        assert d is not None
        if d.is_finished():
            if data:
                raise DecodeError("data after the end of the br stream")
            return
        out = d.process(data, output_buffer_limit=PIECE)
        # a call stops once its output reaches the limit (it may overshoot by one
        # internal block); more output is pending exactly when the limit was reached
        while True:
            if out:
                yield out
            if len(out) < PIECE or d.is_finished():
                break
            out = d.process(b"", output_buffer_limit=PIECE)
        self.done = d.is_finished()

    def finish(self) -> None:
        if not self.fed:
            return  # empty body
        if not self.done:
            raise DecodeError(f"truncated {self.coding} data")


class Decoder:
    """Undo a list of content-codings (as applied, first to last) incrementally, with a cap.

    ``feed`` yields decoded pieces of at most ``PIECE`` bytes; ``finish``
    checks that every stage reached its end. ``produced`` counts decoded
    bytes; going over ``cap`` raises DecodeError at once (the bytes beyond it
    are never produced).
    """

    def __init__(self, applied: list[str], cap: int) -> None:
        for c in applied:
            if c not in KNOWN:
                raise DecodeError(f"unsupported content-encoding {c!r}")
        self.stages = [_Stage(c) for c in reversed(applied) if c != "identity"]
        self.cap = cap
        self.produced = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self.stages:
            if data:
                yield from self._count(data)
            return
        yield from self._run(0, data)

    def _run(self, i: int, data: bytes) -> Iterator[bytes]:
        stage = self.stages[i]
        last = i == len(self.stages) - 1
        for piece in stage.feed(data):
            if last:
                yield from self._count(piece)
            else:
                yield from self._run(i + 1, piece)

    def _count(self, piece: bytes) -> Iterator[bytes]:
        self.produced += len(piece)
        if self.produced > self.cap:
            raise DecodeError(f"decoded body larger than {self.cap} bytes")
        yield piece

    def finish(self) -> None:
        for s in self.stages:
            s.finish()


def decode_all(body: bytes, applied: list[str], cap: int) -> bytes:
    """The whole decoded body; DecodeError when it cannot be decoded or exceeds ``cap``."""
    if not applied:
        if len(body) > cap:
            raise DecodeError(f"body larger than {cap} bytes")
        return body
    d = Decoder(applied, cap)
    out = b"".join(d.feed(body))
    d.finish()
    return out
