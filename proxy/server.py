"""The LLM proxy's HTTP server: one handler for every path.

Per request: read the body, redact it (embedded mode, dialect paths), send it
upstream over a pooled keep-alive connection (``upstream.UpstreamPool``), then
either relay the SSE stream through the interceptor or rewrite the buffered
JSON, and finally emit one ``llm_request`` summary. Unknown paths are relayed
unchanged (streaming-safe, compressed bytes untouched).

The server is aiohttp's low-level ``web.Server`` (one handler for every path:
no router, no middleware chain), and the per-request path does no work it can
skip: headers go from the client's raw bytes straight into the upstream's
header block, a response that cannot hold a tool call is never parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import secrets
import socket
import time
import zlib
from pathlib import Path
from typing import Any

from aiohttp import HttpVersion11, web

from agentsh.agent.mcp.types import Decision
from agentsh.agent.policy.schema import Policy
from agentsh.proxy.bodystore import BodyStore, bodies_path
from agentsh.proxy.decider import Decider, NameGate, ToolJudge
from agentsh.proxy.dialects import NEEDLES, Route, UsageScan, error_body, route
from agentsh.proxy.dlp import BodyRedactor
from agentsh.proxy.headers import (
    SERVER_DECODED_ENCODINGS,
    client_response_headers,
    upstream_header_block,
)
from agentsh.proxy.rewrite import rewrite
from agentsh.proxy.sse import INTERCEPTORS, Counters, SSERelay
from agentsh.proxy.upstream import UpstreamError, UpstreamPool, UpstreamResponse

log = logging.getLogger("agentsh.proxy")

MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_STORED_STREAM_BYTES = 16 * 1024 * 1024
HEALTH_PATH = "/_agentsh/health"


class _ClientGone(Exception):
    pass


def _decode(raw: bytes, enc: str) -> bytes | None:
    """Decompressed body, or None when the encoding is unsupported/corrupt."""
    try:
        if enc in ("", "identity"):
            return raw
        if enc in ("gzip", "x-gzip"):
            return gzip.decompress(raw)
        if enc == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)
        if enc == "br":
            import brotli  # type: ignore[import-not-found]

            return bytes(brotli.decompress(raw))
    except (OSError, zlib.error, EOFError, ImportError, Exception):
        return None
    return None


async def _expect(request: web.BaseRequest, expect: str) -> None:
    """What aiohttp's router does for ``Expect`` (RFC 9110 §10.1.1)."""
    if request.version != HttpVersion11:
        return
    if expect.lower() != "100-continue":
        raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect}")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the interim response is not part of the body


def _decoded_by_server(headers: Any) -> bool:
    enc = headers.get("Content-Encoding")
    return enc is not None and enc.lower() in SERVER_DECODED_ENCODINGS


def _stream_decoder(enc: str) -> Any:
    if enc in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # auto-detect gzip/zlib header
    return None


class ProxyServer:
    def __init__(
        self,
        policy: Policy,
        *,
        decider: Decider,
        gate: NameGate | None = None,
        sink: Any,
        state_dir: str | Path | None = None,
    ) -> None:
        self.gate = gate if gate is not None else NameGate(None, policy.mcp.fail_closed)
        self.sink = sink
        self.judge = ToolJudge(decider, self.gate, sink.emit)
        self.state_dir = Path(state_dir) if state_dir is not None else Path(policy.daemon.state_dir)
        self.pool: UpstreamPool | None = None
        self._runner: web.ServerRunner | None = None
        self.bodystore: BodyStore | None = None
        self.redactor: BodyRedactor | None = None
        self._rid_prefix = secrets.token_hex(8)  # unique per process; a counter within it
        self._seq = 0
        self.counts = {"requests": 0, "streams": 0, "tool_calls": 0, "blocked": 0, "errors": 0, "malformed": 0}
        self.update_policy(policy)

    # ------------------------------------------------------------------ policy

    def update_policy(self, policy: Policy) -> None:
        """Apply a (re)loaded policy; the listen address is fixed for the process."""
        self.policy = policy
        self.cfg = policy.proxy
        if self.pool is not None:
            self.pool.read_timeout = self.cfg.upstream_timeout_seconds
        if self.gate.version is None:  # no daemon snapshot: the policy's own setting
            self.gate.fail_closed = policy.mcp.fail_closed
        mode = self.cfg.mode
        self.redactor = BodyRedactor(self.cfg.dlp) if mode == "embedded" and self.cfg.dlp.mode == "redact" else None
        if mode == "mcp-only":
            path = bodies_path(self.state_dir)
            if self.bodystore is None or self.bodystore.path != path:
                if self.bodystore is not None:
                    self.bodystore.close()
                self.bodystore = BodyStore(path, self.cfg.body_storage)
            else:
                self.bodystore.max_bytes = self.cfg.body_storage.max_bytes
                self.bodystore.backups = self.cfg.body_storage.backups
        elif self.bodystore is not None:
            self.bodystore.close()
            self.bodystore = None

    # ------------------------------------------------------------------ lifecycle

    def make_server(self) -> web.Server:
        loop = asyncio.get_running_loop()

        def request_factory(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=MAX_REQUEST_BYTES)

        return web.Server(self.handle, request_factory=request_factory, handler_cancellation=True, access_log=None)

    def _make_pool(self) -> UpstreamPool:
        # No cookie jar (one client's cookies never reach another), no proxy env, no redirects.
        return UpstreamPool(
            limit=512, keepalive_timeout=60, connect_timeout=30, read_timeout=self.cfg.upstream_timeout_seconds
        )

    async def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> int:
        """Serve; returns the bound port."""
        self.pool = self._make_pool()
        self._runner = web.ServerRunner(self.make_server(), access_log=None)
        await self._runner.setup()
        site: web.BaseSite
        if sock is not None:
            site = web.SockSite(self._runner, sock)
        else:
            site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        srv = site._server  # the asyncio server: read back the ephemeral port
        assert srv is not None
        return int(srv.sockets[0].getsockname()[1])  # type: ignore[attr-defined]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.pool is not None:
            await self.pool.close()
            self.pool = None
        if self.bodystore is not None:
            self.bodystore.close()

    def stats(self) -> dict[str, Any]:
        return {
            **self.counts,
            "mode": self.cfg.mode,
            "daemon_failures": self.judge.daemon_failures,
            "names_known": None if self.gate.names is None else len(self.gate.names),
            "fail_closed": self.gate.fail_closed,
        }

    # ------------------------------------------------------------------ request path

    def _error(self, rt: Route, status: int, message: str) -> web.Response:
        return web.Response(
            status=status, body=error_body(rt.provider, status, message), content_type="application/json"
        )

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        method = request.method
        if path == HEALTH_PATH and method == "GET":
            return web.json_response({"ok": True, **self.stats()})
        t0 = time.perf_counter()
        self._seq += 1
        rid = f"req_{self._rid_prefix}{self._seq:08x}"
        cfg = self.cfg
        self.counts["requests"] += 1
        headers = request.headers
        if "Expect" in headers:  # the low-level server has no router to answer it (curl sends it for big bodies)
            await _expect(request, headers["Expect"])
        body = await request.read()
        target = request.raw_path
        if not target.startswith("/"):  # absolute-form request target
            target = request.rel_url.raw_path_qs
        rt = route(method, path, target, headers, cfg)
        send_body, redactions = body, {}
        if rt.dialect is not None and self.redactor is not None and body:
            send_body, redactions = self.redactor.redact_body(body)
        st = _ReqState()
        try:
            pool = self.pool
            assert pool is not None
            try:
                header_block = upstream_header_block(
                    request.raw_headers,
                    identity=rt.dialect is not None,
                    body_decoded=_decoded_by_server(headers),
                )
                up = await pool.request(pool.origin(rt.base_url), method, rt.target, header_block, send_body)
            except TimeoutError:
                st.status, st.error = 504, "upstream timed out"
                return self._error(rt, 504, f"agentsh proxy: upstream {rt.provider} timed out")
            except (UpstreamError, ValueError) as e:
                st.status, st.error = 502, f"upstream unreachable: {e}"
                return self._error(rt, 502, f"agentsh proxy: upstream {rt.provider} unreachable ({e})")
            except asyncio.CancelledError:
                st.error = "client disconnected"
                raise
            st.status = up.status
            try:
                if "text/event-stream" in up.get("content-type"):
                    st.streaming = True
                    self.counts["streams"] += 1
                    return await self._relay_stream(request, rt, up, rid, st)
                return await self._relay_buffered(rt, up, rid, st)
            except asyncio.CancelledError:  # the client went away (handler cancellation)
                st.error = st.error or "client disconnected"
                up.close()
                raise
            finally:
                up.release()
        finally:
            self._finish(path, rt, rid, t0, body, send_body, redactions, st)

    def _judge(self, rid: str, dialect: str) -> Any:
        """The per-request decision callback (built only when a tool call may be judged)."""
        tj = self.judge

        async def judge(name: str, call_id: str, args: Any) -> Decision | None:
            return await tj.judge(name=name, call_id=call_id, arguments=args, request_id=rid, dialect=dialect)

        return judge

    async def _relay_buffered(self, rt: Route, up: UpstreamResponse, rid: str, st: _ReqState) -> web.Response:
        try:
            raw = await up.read()
        except (TimeoutError, UpstreamError) as e:
            st.status, st.error = 502, f"upstream read failed: {e.__class__.__name__}"
            return self._error(rt, 502, f"agentsh proxy: upstream {rt.provider} failed mid-response")
        enc = up.get("content-encoding").strip().lower()
        out, drop_enc = raw, False
        if rt.dialect is not None and up.status == 200 and raw:
            plain = _decode(raw, enc)
            if plain is None:
                st.error = f"cannot decode content-encoding {enc!r}; passed through uninspected"
            else:
                out, drop_enc = plain, enc not in ("", "identity")
                st.usage.scan(plain)
                # a body without the dialect's marker cannot hold a tool call: never parsed
                if not self.gate.plain_copy and any(n in plain for n in NEEDLES[rt.dialect]):
                    res = await rewrite(rt.dialect, plain, self._judge(rid, rt.dialect))
                    st.c.tool_calls += res.tool_calls
                    st.c.blocked += res.blocked
                    if res.body is not None:
                        out, st.rewritten = res.body, True
        elif not enc or enc == "identity":
            st.usage.scan(raw)
        st.response_bytes = len(out)
        if self.bodystore is not None:
            st.stored = [out]
        return web.Response(
            status=up.status,
            reason=up.reason or None,
            body=out,
            headers=client_response_headers(up.headers, up.get("connection"), drop_encoding=drop_enc),
        )

    async def _relay_stream(
        self, request: web.BaseRequest, rt: Route, up: UpstreamResponse, rid: str, st: _ReqState
    ) -> web.StreamResponse:
        enc = up.get("content-encoding").strip().lower()
        decoder = _stream_decoder(enc) if rt.dialect is not None else None
        resp = web.StreamResponse(
            status=up.status,
            reason=up.reason or None,
            headers=client_response_headers(up.headers, up.get("connection"), drop_encoding=decoder is not None),
        )
        await resp.prepare(request)  # the head goes out with the first body bytes, in one packet
        stored = [] if self.bodystore is not None else None
        st.stored = stored

        async def write(b: bytes) -> None:
            try:
                await resp.write(b)
            except (ConnectionError, RuntimeError) as e:  # client went away
                raise _ClientGone() from e
            st.response_bytes += len(b)
            if stored is not None and st.response_bytes <= MAX_STORED_STREAM_BYTES:
                stored.append(b)

        inspect = (
            rt.dialect is not None
            and up.status == 200
            and not self.gate.plain_copy
            and (enc in ("", "identity") or decoder is not None)
        )
        interceptor = INTERCEPTORS[rt.dialect](self._judge(rid, rt.dialect), st.c) if inspect and rt.dialect else None
        relay = SSERelay(interceptor, write, self.cfg.max_sse_line_bytes, st.usage if rt.dialect else None)
        try:
            try:
                async for chunk in up.iter_chunks():
                    if decoder is not None:
                        chunk = decoder.decompress(chunk)
                        if not chunk:
                            continue
                    await relay.feed(chunk)
                await relay.finish()
            except (TimeoutError, UpstreamError, zlib.error) as e:
                # upstream dropped mid-stream: pass what we have, end the client stream cleanly
                st.error = f"upstream stream ended early: {e.__class__.__name__}"
                await relay.finish()
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        except _ClientGone:
            st.error = "client disconnected"
            up.close()  # stop generating (and paying for) tokens nobody reads
        if relay.overflowed:
            st.error = (st.error + "; " if st.error else "") + "SSE event over max_sse_line_bytes: copied uninspected"
        return resp

    def _finish(
        self,
        path: str,
        rt: Route,
        rid: str,
        t0: float,
        body: bytes,
        sent: bytes,
        redactions: dict[str, int],
        st: _ReqState,
    ) -> None:
        c = st.c
        self.counts["tool_calls"] += c.tool_calls
        self.counts["blocked"] += c.blocked
        self.counts["malformed"] += c.malformed
        if st.error:
            self.counts["errors"] += 1
        self.sink.emit(
            {
                "type": "llm_request",
                "request_id": rid,
                "provider": rt.provider,
                "dialect": rt.dialect,
                "model": st.usage.model,
                "path": path,
                "status": st.status,
                "streaming": st.streaming,
                "input_tokens": st.usage.input,
                "output_tokens": st.usage.output,
                "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
                "request_bytes": len(body),
                "response_bytes": st.response_bytes,
                "tool_calls": c.tool_calls,
                "tool_calls_blocked": c.blocked,
                "redactions": redactions,
                "malformed_lines": c.malformed,
                "error": st.error,
            }
        )
        if self.bodystore is not None and st.stored is not None:
            self.bodystore.write(
                request_id=rid,
                provider=rt.provider,
                path=path,
                status=st.status,
                request=sent,
                response=b"".join(st.stored),
                rewritten=st.rewritten or c.blocked > 0,
            )


class _ReqState:
    __slots__ = ("c", "error", "response_bytes", "rewritten", "status", "stored", "streaming", "usage")

    def __init__(self) -> None:
        self.c = Counters()
        self.usage = UsageScan()
        self.status = 0
        self.streaming = False
        self.error: str | None = None
        self.response_bytes = 0
        self.rewritten = False
        self.stored: list[bytes] | None = None
