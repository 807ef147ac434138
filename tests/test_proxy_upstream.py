"""The hop to upstream: the proxy's own HTTP/1.1 client and what the server hands it.

The client is checked against a real asyncio TCP server on loopback that
records the request bytes it receives and answers with exact bytes (split into
the TCP writes a test chooses), so framing, keep-alive reuse and error handling
are checked on the wire, not through another HTTP library. The last tests go
through the whole proxy (fake upstream) for request-side details the
low-level server now handles itself (Expect, compressed request bodies).
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import itertools
import zlib
from collections.abc import Callable
from typing import Any

import brotli
import pytest
from fake_llm_upstream import ProxyHarness
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.proxy.encoding import PIECE, DecodeError, Decoder, codings, decode_all
from agentsh.proxy.upstream import BodyTooLarge, UpstreamError, UpstreamPool

Reply = Callable[[bytes], list[bytes]]  # request bytes -> response writes


class RawServer:
    def __init__(self, reply: Reply, close_after: bool = False) -> None:
        self.reply = reply
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()

    async def _conn(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                req = head + (await r.readexactly(n) if n else b"")
                self.requests.append(req)
                for part in self.reply(req):
                    w.write(part)
                    await w.drain()
                    await asyncio.sleep(0)
                if self.close_after:
                    w.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()


def fixed(*writes: bytes) -> Reply:
    return lambda req: list(writes)


async def get(pool: UpstreamPool, port: int, method: str = "POST", body: bytes = b"{}", stream: bool = False) -> tuple[int, dict[str, str], bytes]:
    resp = await pool.request(pool.origin(f"http://127.0.0.1:{port}"), method, "/v1/x?a=1", b"X-Test: 1\r\n", body)
    try:
        data = b"".join([c async for c in resp.iter_chunks()]) if stream else await resp.read()
        return resp.status, resp.hmap, data
    finally:
        resp.release()


async def test_request_bytes_and_keepalive_reuse() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nX-A: 2\r\n\r\nhello")) as srv:
        pool = UpstreamPool()
        for _ in range(3):
            status, h, body = await get(pool, srv.port)
            assert (status, body, h["x-a"]) == (200, b"hello", "1, 2")
        assert srv.connections == 1  # one pooled keep-alive connection
        assert srv.requests[0] == (
            b"POST /v1/x?a=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Test: 1\r\nContent-Length: 2\r\n\r\n{}" % srv.port
        )
        await pool.close()


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=12), ext=st.booleans())
def test_chunked_body_decodes_the_same_for_any_tcp_split(cuts: list[int], ext: bool) -> None:
    payload = [b"data: one\n\n", b"x" * 40, b"", b"data: two\n\n"]
    wire = b"".join(b"%x%s\r\n%s\r\n" % (len(p), b";e=1" if ext else b"", p) for p in payload if p) + b"0\r\nTrailer: t\r\n\r\n"
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + wire
    points = sorted({c for c in cuts if c < len(raw)} | {0, len(raw)})
    writes = [raw[a:b] for a, b in itertools.pairwise(points)]

    async def run() -> None:
        async with RawServer(fixed(*writes)) as srv:
            pool = UpstreamPool()
            for stream in (False, True):
                status, _, body = await get(pool, srv.port, stream=stream)
                assert (status, body) == (200, b"".join(payload))
            assert srv.connections == 1
            await pool.close()

    asyncio.run(run())


async def test_close_delimited_body_and_connection_close_are_not_reused() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close"), close_after=True) as srv:
        pool = UpstreamPool()
        assert (await get(pool, srv.port))[2] == b"until close"
        assert (await get(pool, srv.port))[2] == b"until close"
        assert srv.connections == 2
        await pool.close()
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"), close_after=True) as srv:
        pool = UpstreamPool()
        await get(pool, srv.port)
        await get(pool, srv.port)
        assert srv.connections == 2
        await pool.close()


async def test_interim_responses_are_skipped_and_head_has_no_body() -> None:
    async with RawServer(fixed(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n", b"HTTP/1.1 204 No Content\r\nX-B: y\r\n\r\n")) as srv:
        pool = UpstreamPool()
        status, h, body = await get(pool, srv.port)
        assert (status, body, h.get("link"), h["x-b"]) == (204, b"", None, "y")
        await pool.close()
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n")) as srv:
        pool = UpstreamPool()
        assert (await get(pool, srv.port, method="HEAD", body=b""))[2] == b""
        assert (await get(pool, srv.port, method="HEAD", body=b""))[2] == b""
        assert srv.connections == 1
        assert b"Content-Length" not in srv.requests[0]
        await pool.close()


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\nInjected: 1\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx",
        b"NOTHTTP 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
async def test_malformed_responses_raise_upstream_error(raw: bytes) -> None:
    async with RawServer(fixed(raw)) as srv:
        pool = UpstreamPool()
        with pytest.raises(UpstreamError):
            await get(pool, srv.port)
        await pool.close()


async def test_truncated_bodies_raise_and_stale_pooled_connections_are_replaced() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), close_after=True) as srv:
        pool = UpstreamPool()
        with pytest.raises(UpstreamError):
            await get(pool, srv.port)
        await pool.close()
    # the upstream closes an idle keep-alive connection: the next request opens a new one
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), close_after=True) as srv:
        pool = UpstreamPool()
        await get(pool, srv.port)
        await asyncio.sleep(0.05)
        assert (await get(pool, srv.port))[2] == b"ok"
        assert srv.connections == 2
        await pool.close()


async def test_read_timeout_and_unreachable() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")) as srv:
        pool = UpstreamPool(read_timeout=0.2)
        with pytest.raises(TimeoutError):
            await get(pool, srv.port)
        await pool.close()
    pool = UpstreamPool()
    with pytest.raises(UpstreamError):
        await get(pool, srv.port)  # the server is gone: connection refused
    await pool.close()


async def test_connection_limit_reuses_idle_slots_across_origins() -> None:
    ok = fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    async with RawServer(ok) as a, RawServer(ok) as b:
        pool = UpstreamPool(limit=1)
        for _ in range(2):
            assert (await asyncio.wait_for(get(pool, a.port), 5))[2] == b"ok"
            assert (await asyncio.wait_for(get(pool, b.port), 5))[2] == b"ok"  # A's idle connection gives way
        # concurrent requests beyond the limit wait for a slot instead of failing
        got = await asyncio.wait_for(asyncio.gather(*[get(pool, a.port) for _ in range(5)]), 5)
        assert [g[2] for g in got] == [b"ok"] * 5
        assert pool._open <= 1
        await pool.close()


async def test_idle_connection_closed_by_upstream_leaves_the_pool() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), close_after=True) as srv:
        pool = UpstreamPool()
        await get(pool, srv.port)
        await asyncio.sleep(0.05)
        assert sum(len(v) for v in pool._idle.values()) == 0 and pool._open == 0
        await pool.close()


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Any:
    h = ProxyHarness()
    h.start(tmp_path_factory.mktemp("proxyup"))
    yield h
    h.stop()


def test_expect_100_continue_is_answered(harness: ProxyHarness) -> None:
    body = b'{"model":"x","max_tokens":5,"messages":[]}'
    conn = http.client.HTTPConnection("127.0.0.1", harness.port, timeout=5)
    conn.putrequest("POST", "/v1/messages")
    for k, v in (("Content-Type", "application/json"), ("anthropic-version", "2023-06-01"), ("Expect", "100-continue"), ("Content-Length", str(len(body)))):
        conn.putheader(k, v)
    conn.endheaders()
    assert conn.sock is not None
    assert conn.sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")  # before any body byte was sent
    conn.send(body)
    r = conn.getresponse()
    assert r.status == 200 and r.read()
    assert "Expect" not in harness.fake.requests[-1]["headers"]


def test_compressed_request_body_is_redacted_and_sent_decoded(harness: ProxyHarness, tmp_path: Any) -> None:
    harness.configure(tmp_path, {})
    body = b'{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"mail alice@example.com"}]}'
    conn = http.client.HTTPConnection("127.0.0.1", harness.port, timeout=5)
    conn.request("POST", "/v1/messages", body=gzip.compress(body), headers={"Content-Type": "application/json", "Content-Encoding": "gzip", "anthropic-version": "2023-06-01"})
    r = conn.getresponse()
    assert r.status == 200 and r.read()
    sent = harness.fake.requests[-1]
    assert {k.lower() for k in sent["headers"]}.isdisjoint({"content-encoding"})  # the bytes sent are not gzip
    assert b"alice@example.com" not in sent["raw"] and b"[REDACTED:email]" in sent["raw"]


# ------------------------------------------------------------------ bodies: limits, transfer-codings, content-codings


async def test_read_limit_stops_before_buffering_an_oversized_body() -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000)) as srv:
        pool = UpstreamPool()
        resp = await pool.request(pool.origin(f"http://127.0.0.1:{srv.port}"), "POST", "/", b"", b"{}")
        with pytest.raises(BodyTooLarge):
            await resp.read(limit=1000)  # refused from the Content-Length, nothing read
        resp.close()
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"400\r\n" + b"y" * 1024 + b"\r\n" * 1
    async with RawServer(fixed(chunked + (b"400\r\n" + b"y" * 1024 + b"\r\n") * 3 + b"0\r\n\r\n")) as srv:
        resp = await pool.request(pool.origin(f"http://127.0.0.1:{srv.port}"), "POST", "/", b"", b"{}")
        with pytest.raises(BodyTooLarge):
            await resp.read(limit=2048)
        resp.close()
        await pool.close()


@pytest.mark.parametrize("te", ["gzip, chunked", "chunked, chunked", "compress"])
async def test_transfer_codings_other_than_chunked_are_refused(te: str) -> None:
    async with RawServer(fixed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: %s\r\n\r\n0\r\n\r\n" % te.encode())) as srv:
        pool = UpstreamPool()
        with pytest.raises(UpstreamError, match="transfer-encoding"):
            await get(pool, srv.port)
        await pool.close()


def test_decoder_stops_at_the_cap_in_bounded_pieces() -> None:
    member = gzip.compress(b"\0" * (16 << 20))
    bomb = member * 64  # 1 GiB decoded from about 1 MB
    for coding, data in (("gzip", bomb), ("br", brotli.compress(b"\0" * (256 << 20)))):
        d = Decoder([coding], cap=8 << 20)
        largest = 0
        with pytest.raises(DecodeError, match="larger than"):
            for piece in d.feed(data):
                largest = max(largest, len(piece))
        assert d.produced <= (8 << 20) + 2 * PIECE  # it stopped at the cap ...
        assert largest <= 2 * PIECE  # ... producing one bounded piece at a time


@settings(max_examples=20, deadline=None)
@given(chain=st.lists(st.sampled_from(["gzip", "x-gzip", "deflate", "br", "identity"]), min_size=1, max_size=3), step=st.integers(1, 5000))
def test_decoder_undoes_every_coding_in_order_for_any_split(chain: list[str], step: int) -> None:
    plain = b"data: " + bytes(range(256)) * 40 + b"\n\n"
    body = plain
    for c in chain:  # applied first to last, as Content-Encoding lists them
        body = {"gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress, "identity": bytes}[c](body)
    d = Decoder(codings(", ".join(chain)), cap=1 << 20)
    out = b"".join(p for i in range(0, len(body), step) for p in d.feed(body[i : i + step]))
    d.finish()
    assert out == plain


@pytest.mark.parametrize("bad", [b"not gzip at all", gzip.compress(b"x" * 100, mtime=0)[:-12], gzip.compress(b"x", mtime=0) + b"trailing junk"],
                         ids=["not-gzip", "truncated", "trailing-junk"])  # (ids the same in every xdist worker)
def test_corrupt_or_trailing_data_is_a_decode_error(bad: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_all(bad, ["gzip"], 1 << 20)
    with pytest.raises(DecodeError, match="unsupported"):
        Decoder(["zstd"], 1 << 20)
