"""The LLM proxy's HTTP server: one handler for every path.

Per request: route it (``dialects.route``: the path in any spelling), decode
and redact the body (embedded mode: dialect paths and JSON bodies), send it
upstream over a pooled keep-alive connection (``upstream.UpstreamPool``), then
inspect a 2xx dialect response: decode every content-coding (capped), and
either relay the SSE stream through the interceptor or decide the buffered
body, reading it the way the SDKs would (JSON or event stream, whatever the
Content-Type says); what cannot be read and decided is refused, never passed
on (docs/proxy.md "Parse the way the receivers do, or refuse"). Finally one
``llm_request`` summary. Other paths and statuses are relayed unchanged
(compressed bytes untouched).

The server is aiohttp's low-level ``web.Server`` (one handler for every path:
no router, no middleware chain), and the per-request path does no work it can
skip: headers go from the client's raw bytes straight into the upstream's
header block, a response that cannot hold a tool call is never parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import orjson
from aiohttp import HttpVersion11, web

from agentsh.agent.core.histogram import DURATION_BUCKETS, Buckets
from agentsh.agent.core.mcp.types import Decision
from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.bodystore import BodyStore, bodies_path
from agentsh.proxy.decider import Decider, NameGate, ToolJudge
from agentsh.proxy.dialects import Dialect, Route, media_type, route, usage_scan
from agentsh.proxy.dlp import BodyRedactor
from agentsh.proxy.encoding import DecodeError, Decoder, codings, decode_all
from agentsh.proxy.flow_feed import (
    FlowFeed,
    RequestFlow,
    parse_request,
    session_key,
)
from agentsh.proxy.headers import (
    SERVER_DECODED_ENCODINGS,
    client_response_headers,
    upstream_header_block,
)
from agentsh.proxy.result_scan import ToolResultInspector
from agentsh.proxy.rewrite import Refused, rewrite
from agentsh.proxy.sse import Counters, SSERelay
from agentsh.proxy.upstream import BodyTooLarge, UpstreamError, UpstreamPool, UpstreamResponse

log = logging.getLogger("agentsh.proxy")

MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Cap on an inspected non-streaming response body, as received and as decoded."""
MAX_STREAM_DECODED_BYTES = 512 * 1024 * 1024
"""Cap on the decoded bytes of one compressed stream (memory is bounded by the decoder's pieces)."""
MAX_STORED_STREAM_BYTES = 16 * 1024 * 1024
HEALTH_PATH = "/_agentsh/health"
_SSE_FIELD = re.compile(rb"(?:\A|[\r\n])(?:data|event)(?::|\r|\n|\Z)")


class _ClientGone(Exception):
    pass


class _StreamResponse(web.StreamResponse):
    """Its head goes out with the first body bytes, in one packet (as ``web.Response`` does).

    The proxy prepares a stream once it has the first upstream bytes, so a head
    sent on its own would cost the client one more wake-up right before the
    first event (about a millisecond of time to first byte on a busy host).
    """

    _send_headers_immediately = False


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
    return enc is not None and enc.isascii() and enc.lower() in SERVER_DECODED_ENCODINGS


def _json_start(head: bytes) -> bool:
    """Could a JSON reader (``json.loads`` on bytes) take this body for a document?"""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head[:4]:
        return True  # UTF-16/32
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return head[:1] in (b"{", b"[")


def _is_json(content_type: str | None) -> bool:
    mt = media_type(content_type or "")
    return mt == "application/json" or mt.endswith("+json")


class ProxyServer:
    def __init__(
        self,
        policy: Policy,
        *,
        decider: Decider,
        gate: NameGate | None = None,
        sink: Any,
        state_dir: str | Path | None = None,
        flow: FlowFeed | None = None,
    ) -> None:
        self.gate = gate if gate is not None else NameGate(None, policy.mcp.fail_closed)
        self.sink = sink
        self._tasks: set[asyncio.Task[Any]] = set()
        self.results: ToolResultInspector
        self.judge = ToolJudge(decider, self.gate, sink.emit)
        self.flow = flow
        """Data-flow records and checks (proxy/flow_feed.py); None: no flow step."""
        self.selftests: dict[str, str] = {}
        """agentshctl selftest: request token → its loopback upstream (from the daemon's snapshot)."""
        self.state_dir = Path(state_dir) if state_dir is not None else Path(policy.daemon.state_dir)
        self.pool: UpstreamPool | None = None
        self._runner: web.ServerRunner | None = None
        self.bodystore: BodyStore | None = None
        self.redactor: BodyRedactor | None = None
        self._rid_prefix = secrets.token_hex(8)  # unique per process; a counter within it
        self._seq = 0
        self.counts = {"requests": 0, "streams": 0, "tool_calls": 0, "blocked": 0, "errors": 0, "malformed": 0}
        self.added = Buckets()
        """Per request, the time the proxy itself held it (before upstream, decisions): /metrics."""
        self.duration = Buckets(DURATION_BUCKETS)
        self.max_response_bytes = MAX_RESPONSE_BYTES
        self.max_stream_decoded = MAX_STREAM_DECODED_BYTES
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
        if self.flow is not None:
            self.flow.update_policy(policy)
        if not hasattr(self, "results"):
            self.results = ToolResultInspector(policy, self.sink.emit)
        else:
            self.results.update_policy(policy)
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

    def _background(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _scan_results(self, dialect: Dialect, session: str, body: bytes) -> None:
        try:
            doc = parse_request(body)
            if isinstance(doc, dict):
                self.results.scan(dialect, doc, session)
        except Exception:  # an alert scan must never affect the request
            log.exception("scanning tool results failed")

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
            "flow": self.flow.stats() if self.flow is not None else None,
            **self.results.stats(),
        }

    # ------------------------------------------------------------------ request path

    def _error(self, rt: Route, status: int, message: str) -> web.Response:
        return web.Response(
            status=status, body=rt.provider.error_body(status, message), content_type="application/json"
        )

    def _refuse(self, rt: Route, st: _ReqState, reason: str) -> web.Response:
        """A response the proxy could not read and decide: never passed on (docs/proxy.md)."""
        st.status, st.error = 502, f"refused: {reason}"
        return self._error(rt, 502, f"agentsh proxy refused the upstream response: {reason}")

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        method = request.method
        if request.path == HEALTH_PATH and method == "GET":
            h = self.judge.health()  # ok only while it decides with the daemon
            return web.json_response({"ok": not h["offline"], **self.stats(), **h})
        t0 = time.perf_counter()
        self._seq += 1
        rid = f"req_{self._rid_prefix}{self._seq:08x}"
        self.counts["requests"] += 1
        headers = request.headers
        if "Expect" in headers:  # the low-level server has no router to answer it (curl sends it for big bodies)
            await _expect(request, headers["Expect"])
        body = await request.read()
        target = request.raw_path
        if not target.startswith("/"):  # absolute-form request target
            target = request.rel_url.raw_path_qs
        rt = route(method, target, headers, self.cfg)
        st = _ReqState()
        st.usage = usage_scan(rt.dialect)
        if self.selftests and rt.dialect is not None:  # agentshctl selftest: its loopback upstream
            selftest_up = self.selftests.get(headers.get("x-agentsh-selftest", ""))
            if selftest_up is not None:
                rt = dataclasses.replace(rt, base_url=selftest_up)
        path = request.path
        send_body: bytes = body
        redactions: dict[str, int] = {}
        try:
            # Request body: DLP reads what the upstream will read, so every
            # content-coding the server did not undo is undone here and the
            # body goes upstream decoded (docs/proxy.md "DLP").
            body_decoded = _decoded_by_server(headers)
            dlp = self.redactor is not None and bool(body) and (rt.dialect is not None or _is_json(headers.get("Content-Type")))
            if body and (dlp or rt.dialect is not None):
                left = codings(*headers.getall("Content-Encoding", ()))
                if body_decoded:
                    left = left[:-1]
                if left:
                    try:
                        send_body = body = decode_all(body, left, MAX_REQUEST_BYTES)
                    except DecodeError as e:
                        st.status, st.error = 415, f"request body: {e}"
                        return self._error(rt, 415, f"agentsh proxy: cannot decode the request body ({e})")
                    body_decoded = True
            if self.flow is not None and rt.dialect is not None:
                # tool results become data origins (records run while the request goes upstream)
                st.flow = self.flow.begin(rt.dialect, headers, body)
            ri = self.results
            if ri.enabled and rt.dialect is not None and body and rt.dialect.may_carry_tool_result(body):
                # indirect prompt injection in tool results (proxy/result_scan.py)
                if ri.block:
                    doc = parse_request(body)
                    if isinstance(doc, dict):
                        found = ri.scan(rt.dialect, doc, session_key(headers))
                        if found and ri.withhold(rt.dialect, doc, found):
                            send_body = body = orjson.dumps(doc)
                else:
                    self._background(self._scan_results(rt.dialect, session_key(headers), body))
            if dlp:
                assert self.redactor is not None
                send_body, redactions = self.redactor.redact_body(body)
            pool = self.pool
            assert pool is not None
            try:
                header_block = upstream_header_block(
                    request.raw_headers, identity=rt.dialect is not None, body_decoded=body_decoded
                )
                st.sent_at = time.perf_counter()
                up = await pool.request(pool.origin(rt.base_url), method, rt.target, header_block, send_body)
            except TimeoutError:
                st.status, st.error = 504, "upstream timed out"
                return self._error(rt, 504, f"agentsh proxy: upstream {rt.provider.name} timed out")
            except (UpstreamError, ValueError) as e:
                st.status, st.error = 502, f"upstream unreachable: {e}"
                return self._error(rt, 502, f"agentsh proxy: upstream {rt.provider.name} unreachable ({e})")
            except asyncio.CancelledError:
                st.error = "client disconnected"
                raise
            st.status = up.status
            try:
                streaming = media_type(up.get("content-type")) == "text/event-stream"
                inspect = rt.dialect is not None and (
                    not self.gate.plain_copy or (st.flow is not None and st.flow.active)
                )
                if inspect and 300 <= up.status < 400:
                    up.close()  # a redirect would send the client past the proxy
                    return self._refuse(rt, st, f"upstream redirect ({up.status}) on an inspected path")
                if inspect and 200 <= up.status < 300:
                    if streaming:
                        st.streaming = True
                        self.counts["streams"] += 1
                    return await self._relay_inspected(request, rt, up, rid, st, streaming)
                if streaming:
                    st.streaming = True
                    self.counts["streams"] += 1
                    return await self._relay_stream(request, up, st, None, None)
                return await self._relay_buffered(up, st)
            except asyncio.CancelledError:  # the client went away (handler cancellation)
                st.error = st.error or "client disconnected"
                up.close()
                raise
            finally:
                up.release()
        finally:
            self._finish(path, rt, rid, t0, body, send_body, redactions, st)

    def _judge(self, rid: str, dialect: Dialect, st: _ReqState) -> Any:
        """The per-request decision callback (built only when a tool call may be judged)."""
        tj = self.judge
        name = dialect.name

        async def judge(tool: str, call_id: str, args: Any) -> Decision | None:
            t = time.perf_counter()
            try:
                return await tj.judge(
                    name=tool, call_id=call_id, arguments=args, request_id=rid, dialect=name, flow=st.flow
                )
            finally:
                st.waited += time.perf_counter() - t

        return judge

    # ------------------------------------------------------------------ pass-through

    async def _relay_buffered(self, up: UpstreamResponse, st: _ReqState) -> web.Response:
        """Not inspected (pass-through path, error status, nothing blockable): bytes as received."""
        try:
            raw = await up.read()
        except (TimeoutError, UpstreamError) as e:
            st.status, st.error = 502, f"upstream read failed: {e.__class__.__name__}"
            return web.Response(status=502, text=f"agentsh proxy: upstream failed mid-response ({e.__class__.__name__})")
        enc = up.get("content-encoding").strip().lower()
        if not enc or enc == "identity":
            st.usage.scan(raw)
        st.response_bytes = len(raw)
        if self.bodystore is not None:
            st.stored = [raw]
        return web.Response(
            status=up.status,
            reason=up.reason or None,
            body=raw,
            headers=client_response_headers(up.headers, up.get("connection"), drop_encoding=False),
        )

    # ------------------------------------------------------------------ inspected (dialect path, 2xx)

    async def _relay_inspected(
        self, request: web.BaseRequest, rt: Route, up: UpstreamResponse, rid: str, st: _ReqState, streaming: bool
    ) -> web.StreamResponse:
        """A response that may carry a tool call: decoded, parsed the way the SDKs parse it, decided.

        The SDKs read a body as JSON or as SSE by what they asked for, not by
        Content-Type, so both readings are covered: an event stream whose
        first bytes could start a JSON document is read as JSON, a buffered
        body that is an event stream is intercepted as one.
        """
        assert rt.dialect is not None
        applied = codings(up.get("content-encoding"))
        try:
            decoder = Decoder(applied, self.max_stream_decoded if streaming else self.max_response_bytes)
        except DecodeError as e:
            up.close()
            return self._refuse(rt, st, str(e))
        if not streaming:
            try:
                raw = await up.read(self.max_response_bytes)
                body = b"".join(decoder.feed(raw))
                with contextlib.suppress(DecodeError):
                    decoder.finish()  # truncated: what was decoded is all any reader gets, and is parsed
            except (TimeoutError, UpstreamError, DecodeError) as e:
                up.close()
                if isinstance(e, (DecodeError, BodyTooLarge)):
                    return self._refuse(rt, st, str(e))
                st.status, st.error = 502, f"upstream read failed: {e.__class__.__name__}"
                return self._error(rt, 502, f"agentsh proxy: upstream {rt.provider.name} failed mid-response")
            return await self._inspected_body(rt, up, rid, st, body, bool(applied))
        # SSE: look at the first bytes before deciding how the body reads
        chunks = up.iter_chunks()
        head = bytearray()
        try:
            async for chunk in chunks:
                for piece in decoder.feed(chunk):
                    head += piece
                if head.lstrip(b" \t\r\n"):
                    break
                if len(head) > self.cfg.max_sse_line_bytes:
                    up.close()
                    return self._refuse(rt, st, "event stream starts with over max_sse_line_bytes of whitespace")
            if _json_start(bytes(head)):
                st.streaming = False
                async for chunk in chunks:
                    for piece in decoder.feed(chunk):
                        head += piece
                    if len(head) > self.max_response_bytes:
                        raise DecodeError(f"decoded body larger than {self.max_response_bytes} bytes")
                with contextlib.suppress(DecodeError):
                    decoder.finish()
                return await self._inspected_body(rt, up, rid, st, bytes(head), bool(applied))
        except (TimeoutError, UpstreamError, DecodeError) as e:
            up.close()
            if isinstance(e, DecodeError):
                return self._refuse(rt, st, str(e))
            if not head:
                st.status, st.error = 502, f"upstream read failed: {e.__class__.__name__}"
                return self._error(rt, 502, f"agentsh proxy: upstream {rt.provider.name} failed mid-response")
            chunks = _empty()
        interceptor = rt.dialect.interceptor(self._judge(rid, rt.dialect, st), st.c)
        return await self._relay_stream(
            request, up, st, interceptor, decoder if decoder.stages else None, bytes(head), chunks
        )

    async def _inspected_body(
        self, rt: Route, up: UpstreamResponse, rid: str, st: _ReqState, body: bytes, decoded: bool
    ) -> web.StreamResponse:
        assert rt.dialect is not None
        st.usage.scan(body)
        out = body
        if rt.dialect.may_carry_tool_call(body):
            try:
                out = await self._decide_body(rt, rid, st, body)
            except Refused as e:
                return self._refuse(rt, st, str(e))
            except Exception as e:  # a bug must not pass an undecided call
                log.exception("deciding a response failed; refusing it")
                return self._refuse(rt, st, f"internal error ({e.__class__.__name__})")
        st.response_bytes = len(out)
        if self.bodystore is not None:
            st.stored = [out]
        return web.Response(
            status=up.status,
            reason=up.reason or None,
            body=out,
            headers=client_response_headers(up.headers, up.get("connection"), drop_encoding=decoded),
        )

    async def _decide_body(self, rt: Route, rid: str, st: _ReqState, body: bytes) -> bytes:
        """The body to send (rewritten or as is); Refused when it cannot be read unambiguously."""
        assert rt.dialect is not None
        sse = _SSE_FIELD.search(body) is not None
        try:
            res = await rewrite(rt.dialect, body, self._judge(rid, rt.dialect, st))
        except Refused:
            if not sse:
                raise
            # an event stream sent as a plain body: intercept it whole
            out: list[bytes] = []

            async def collect(b: bytes) -> None:
                out.append(b)

            relay = SSERelay(rt.dialect.interceptor(self._judge(rid, rt.dialect, st), st.c), collect, self.cfg.max_sse_line_bytes)
            await relay.feed(body)
            await relay.finish()
            if relay.refused is not None:
                raise Refused(relay.refused) from None
            st.rewritten = st.c.blocked > 0
            return b"".join(out)
        if not res.strict and sse:
            raise Refused("body reads both as (lenient) JSON and as an event stream")
        st.c.tool_calls += res.tool_calls
        st.c.blocked += res.blocked
        if res.body is not None:
            st.rewritten = True
            return res.body
        return body

    # ------------------------------------------------------------------ streams

    async def _relay_stream(
        self,
        request: web.BaseRequest,
        up: UpstreamResponse,
        st: _ReqState,
        interceptor: Any,
        decoder: Decoder | None,
        head: bytes = b"",
        chunks: Any = None,
    ) -> web.StreamResponse:
        """Relay an event stream: intercepted (``interceptor``) or a plain copy."""
        resp = _StreamResponse(
            status=up.status,
            reason=up.reason or None,
            headers=client_response_headers(up.headers, up.get("connection"), drop_encoding=decoder is not None),
        )
        await resp.prepare(request)  # the head goes out with the first body bytes, in one packet
        stored: list[bytes] | None = [] if self.bodystore is not None else None
        st.stored = stored

        async def write(b: bytes) -> None:
            try:
                await resp.write(b)
            except (ConnectionError, RuntimeError) as e:  # client went away
                raise _ClientGone() from e
            st.response_bytes += len(b)
            if stored is not None and st.response_bytes <= MAX_STORED_STREAM_BYTES:
                stored.append(b)

        relay = SSERelay(interceptor, write, self.cfg.max_sse_line_bytes, st.usage)
        if chunks is None:
            chunks = up.iter_chunks()
        try:
            try:
                if head:
                    await relay.feed(head)
                async for chunk in chunks:
                    if relay.refused is not None:
                        break
                    if decoder is None:
                        await relay.feed(chunk)
                        continue
                    for piece in decoder.feed(chunk):
                        await relay.feed(piece)
                if decoder is not None and relay.refused is None:
                    try:
                        decoder.finish()
                    except DecodeError as e:  # what arrived was decoded and is decided like any early end
                        st.error = f"upstream stream ended early: {e}"
                await relay.finish()
            except DecodeError as e:
                await relay.refuse(str(e))
            except (TimeoutError, UpstreamError) as e:
                # upstream dropped mid-stream: pass what can be decided, end the client stream cleanly
                st.error = f"upstream stream ended early: {e.__class__.__name__}"
                await relay.finish()
            if relay.refused is not None:
                st.error = f"refused: {relay.refused}"
                up.close()
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        except _ClientGone:
            st.error = "client disconnected"
            up.close()  # stop generating (and paying for) tokens nobody reads
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
        took = time.perf_counter() - t0
        self.duration.observe(took)
        self.added.observe((took if st.sent_at is None else st.sent_at - t0) + st.waited)
        self.counts["tool_calls"] += c.tool_calls
        self.counts["blocked"] += c.blocked
        self.counts["malformed"] += c.malformed
        if st.error:
            self.counts["errors"] += 1
        self.sink.emit(
            {
                "type": "llm_request",
                "request_id": rid,
                "provider": rt.provider.name,
                "dialect": rt.dialect.name if rt.dialect is not None else None,
                "model": st.usage.model,
                "path": path,
                "status": st.status,
                "streaming": st.streaming,
                "input_tokens": st.usage.input,
                "output_tokens": st.usage.output,
                "latency_ms": round(took * 1000, 3),
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
                provider=rt.provider.name,
                path=path,
                status=st.status,
                request=sent,
                response=b"".join(st.stored),
                rewritten=st.rewritten or c.blocked > 0,
            )


async def _empty() -> Any:
    return
    yield


class _ReqState:
    __slots__ = (
        "c", "error", "flow", "response_bytes", "rewritten", "sent_at", "status", "stored", "streaming", "usage", "waited"
    )

    def __init__(self) -> None:
        self.c = Counters()
        self.flow: RequestFlow | None = None
        """The request's data-flow view (None: flow tracking off, or not a dialect path)."""
        self.usage = usage_scan(None)
        self.status = 0
        self.streaming = False
        self.error: str | None = None
        self.response_bytes = 0
        self.rewritten = False
        self.stored: list[bytes] | None = None
        self.sent_at: float | None = None
        """When the request went upstream (perf_counter)."""
        self.waited = 0.0
        """Seconds tool calls of this exchange waited for their decisions."""
