"""A local stand-in for the Anthropic and OpenAI APIs (the one thing that cannot run here).

Responses and SSE streams are generated from the providers' documented wire
formats: Anthropic Messages (``message_start`` / ``content_block_*`` /
``message_delta`` / ``message_stop`` with ``event:`` lines), OpenAI Chat
Completions chunks (``tool_calls`` deltas keyed by ``index``, ``[DONE]``), and
the OpenAI Responses API's semantic events (``response.output_item.added``,
``response.function_call_arguments.delta``/``.done``, ...,
``response.completed``) with contiguous ``sequence_number``.

A request picks its scenario through its ``model`` field (the proxy forwards
the body, so the test decides what the "model" answers). Every request that
arrives is recorded (headers and body) so tests can check what left the host.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Block = tuple[Any, ...]  # ("text", str) | ("tool", name, call_id, input_dict)


def text(s: str) -> Block:
    return ("text", s)


def tool(name: str, call_id: str, args: dict[str, Any]) -> Block:
    return ("tool", name, call_id, args)


@dataclass
class Scenario:
    blocks: list[Block] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    gzip_body: bool = False
    gzip_stream: bool = False
    raw_chunks: list[bytes] | None = None
    """Replay these exact bytes as the SSE body, one write per item."""
    drop_after_events: int | None = None
    """Close the connection abruptly after this many SSE events."""
    event_delay: float = 0.0
    pause_after_first: float = 0.0
    """Seconds to wait after the first event (a model's first token, then the rest)."""
    pace: bool = False
    """Yield to the event loop after each event (a generating model, not a blast)."""
    split_text: int = 6
    """Text and JSON arguments are streamed in pieces of this many characters."""
    stop_reason: str | None = None
    set_cookie: str | None = None
    raw: Raw | None = None
    """Answer with exactly this status, these headers and these body writes (a hostile upstream)."""


@dataclass
class Raw:
    """A response sent as given: no Content-Type or encoding added, one write per chunk."""

    chunks: list[bytes]
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    status: int = 200


def _pieces(s: str, n: int) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


def _dumps(o: Any) -> str:
    return json.dumps(o, separators=(",", ":"))


# ---------------------------------------------------------------- Anthropic


def anthropic_message(sc: Scenario, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for b in sc.blocks:
        if b[0] == "text":
            content.append({"type": "text", "text": b[1]})
        else:
            content.append({"type": "tool_use", "id": b[2], "name": b[1], "input": b[3]})
    has_tool = any(b[0] == "tool" for b in sc.blocks)
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": sc.stop_reason or ("tool_use" if has_tool else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 57},
    }


def anthropic_events(sc: Scenario, model: str) -> list[bytes]:
    def ev(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()

    msg = anthropic_message(sc, model)
    start = {**msg, "content": [], "stop_reason": None, "usage": {"input_tokens": 412, "output_tokens": 1}}
    out = [ev("message_start", {"type": "message_start", "message": start})]
    for i, b in enumerate(sc.blocks):
        if b[0] == "text":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            if i == 0:
                out.append(ev("ping", {"type": "ping"}))
            for p in _pieces(b[1], sc.split_text):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": p}}))
        else:
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b[2], "name": b[1], "input": {}}}))
            out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": ""}}))
            for p in _pieces(_dumps(b[3]), sc.split_text):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}}))
        out.append(ev("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 57}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return out


# ---------------------------------------------------------------- OpenAI chat


def chat_completion(sc: Scenario, model: str) -> dict[str, Any]:
    texts = "".join(b[1] for b in sc.blocks if b[0] == "text")
    calls = [
        {"id": b[2], "type": "function", "function": {"name": b[1], "arguments": _dumps(b[3])}}
        for b in sc.blocks
        if b[0] == "tool"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": texts or None, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741570283,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": sc.stop_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


def chat_chunks(sc: Scenario, model: str, include_usage: bool) -> list[bytes]:
    base = {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk", "created": 1741570283, "model": model, "service_tier": "default", "system_fingerprint": "fp_fc9f1d7035"}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        d = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}
        return f"data: {_dumps(d)}\n\n".encode()

    out: list[bytes] = []
    first = True
    texts = [b for b in sc.blocks if b[0] == "text"]
    tools = [b for b in sc.blocks if b[0] == "tool"]
    if texts:
        out.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        first = False
        for b in texts:
            for p in _pieces(b[1], sc.split_text):
                out.append(chunk({"content": p}))
    for i, b in enumerate(tools):
        head = {"index": i, "id": b[2], "type": "function", "function": {"name": b[1], "arguments": ""}}
        if first:
            out.append(chunk({"role": "assistant", "content": None, "tool_calls": [head], "refusal": None}))
            first = False
        else:
            out.append(chunk({"tool_calls": [head]}))
        for p in _pieces(_dumps(b[3]), sc.split_text):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
    out.append(chunk({}, sc.stop_reason or ("tool_calls" if tools else "stop")))
    if include_usage:
        d = {**base, "choices": [], "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}}
        out.append(f"data: {_dumps(d)}\n\n".encode())
    out.append(b"data: [DONE]\n\n")
    return out


# ---------------------------------------------------------------- OpenAI Responses


def _resp_items(sc: Scenario) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for k, b in enumerate(sc.blocks):
        if b[0] == "text":
            items.append({"id": f"msg_67ccd3acc8d48190a77525dc6de64b4{k}", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": b[1], "annotations": [], "logprobs": []}]})
        else:
            items.append({"id": f"fc_67ccd3acc8d48190a77525dc6de64b4{k}", "type": "function_call", "status": "completed", "arguments": _dumps(b[3]), "call_id": b[2], "name": b[1]})
    return items


def response_object(sc: Scenario, model: str, status: str = "completed", output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": "resp_67ccd3a9da748190baa7f1570fe91ac6",
        "object": "response",
        "created_at": 1741476777,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": _resp_items(sc) if output is None else output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {"input_tokens": 291, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 23, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 314} if status == "completed" else None,
        "user": None,
        "metadata": {},
    }


def response_events(sc: Scenario, model: str) -> list[bytes]:
    seq = itertools.count()
    out: list[bytes] = []

    def ev(d: dict[str, Any]) -> None:
        d = {"type": d["type"], "sequence_number": next(seq), **{k: v for k, v in d.items() if k != "type"}}
        out.append(f"event: {d['type']}\ndata: {_dumps(d)}\n\n".encode())

    ev({"type": "response.created", "response": response_object(sc, model, "in_progress", [])})
    ev({"type": "response.in_progress", "response": response_object(sc, model, "in_progress", [])})
    for oi, item in enumerate(_resp_items(sc)):
        if item["type"] == "message":
            t = item["content"][0]["text"]
            ev({"type": "response.output_item.added", "output_index": oi, "item": {**item, "status": "in_progress", "content": []}})
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            ev({"type": "response.content_part.added", "item_id": item["id"], "output_index": oi, "content_index": 0, "part": part})
            for p in _pieces(t, sc.split_text):
                ev({"type": "response.output_text.delta", "item_id": item["id"], "output_index": oi, "content_index": 0, "delta": p, "logprobs": []})
            ev({"type": "response.output_text.done", "item_id": item["id"], "output_index": oi, "content_index": 0, "text": t, "logprobs": []})
            ev({"type": "response.content_part.done", "item_id": item["id"], "output_index": oi, "content_index": 0, "part": {**part, "text": t}})
        else:
            ev({"type": "response.output_item.added", "output_index": oi, "item": {**item, "status": "in_progress", "arguments": ""}})
            for p in _pieces(item["arguments"], sc.split_text):
                ev({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": oi, "delta": p})
            ev({"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": oi, "name": item["name"], "arguments": item["arguments"]})
        ev({"type": "response.output_item.done", "output_index": oi, "item": item})
    ev({"type": "response.completed", "response": response_object(sc, model)})
    return out


# ---------------------------------------------------------------- server


class FakeUpstream:
    def __init__(self) -> None:
        self.scenarios: dict[str, Scenario] = {}
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, key: str, sc: Scenario) -> str:
        self.scenarios[key] = sc
        return key

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Scenario]:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        self.requests.append({"path": request.path_qs, "method": request.method, "headers": dict(request.headers), "raw": raw, "body": body})
        sc = self.scenarios.get(str(body.get("model")), Scenario(blocks=[text("Hello from the fake upstream.")]))
        return body, sc

    def _error_response(self, sc: Scenario) -> web.Response:
        return web.json_response(sc.error or {}, status=sc.status)

    async def _json(self, request: web.Request, sc: Scenario, obj: dict[str, Any]) -> web.Response:
        raw = _dumps(obj).encode()
        headers = {"request-id": "req_fake_1"}
        if sc.set_cookie:
            headers["Set-Cookie"] = sc.set_cookie
        if sc.gzip_body:
            return web.Response(body=gzip.compress(raw), content_type="application/json", headers={**headers, "Content-Encoding": "gzip"})
        return web.Response(body=raw, content_type="application/json", headers=headers)

    def _events(self, kind: str, sc: Scenario, model: str, gen: Any) -> list[bytes]:
        """Generated once per scenario (so a benchmark's TTFB is not the fake's JSON work)."""
        cache: dict[tuple[str, str], list[bytes]] = sc.__dict__.setdefault("_event_cache", {})
        ev = cache.get((kind, model))
        if ev is None:
            ev = cache[(kind, model)] = gen()
        return ev

    async def _stream(self, request: web.Request, sc: Scenario, events: list[bytes]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
        chunks = sc.raw_chunks if sc.raw_chunks is not None else events
        comp = None
        if sc.gzip_stream:
            import zlib

            resp.headers["Content-Encoding"] = "gzip"
            comp = zlib.compressobj(wbits=31)
        await resp.prepare(request)
        try:
            for n, c in enumerate(chunks):
                if sc.drop_after_events is not None and n >= sc.drop_after_events:
                    assert request.transport is not None
                    request.transport.close()
                    return resp
                if sc.event_delay:
                    await asyncio.sleep(sc.event_delay)
                elif sc.pace:
                    await asyncio.sleep(0)
                if comp is not None:
                    c = comp.compress(c) + comp.flush(2)  # Z_SYNC_FLUSH: each event decodable at once
                await resp.write(c)
                if n == 0 and sc.pause_after_first:
                    await asyncio.sleep(sc.pause_after_first)
            if comp is not None:
                await resp.write(comp.flush())
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            self.disconnects += 1
        return resp

    async def _raw(self, request: web.Request, raw: Raw) -> web.StreamResponse:
        resp = web.StreamResponse(status=raw.status, headers=raw.headers)
        if len(raw.chunks) == 1:
            resp.content_length = len(raw.chunks[0])
        await resp.prepare(request)
        try:
            for c in raw.chunks:
                await resp.write(c)
                await asyncio.sleep(0)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            self.disconnects += 1
        return resp

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body, sc = await self._record(request)
        if sc.raw is not None:
            return await self._raw(request, sc.raw)
        if sc.status != 200:
            return self._error_response(sc)
        model = str(body.get("model", "claude-sonnet-4-5"))
        if body.get("stream"):
            return await self._stream(request, sc, self._events("a", sc, model, lambda: anthropic_events(sc, model)))
        return await self._json(request, sc, anthropic_message(sc, model))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, sc = await self._record(request)
        if sc.raw is not None:
            return await self._raw(request, sc.raw)
        if sc.status != 200:
            return self._error_response(sc)
        model = str(body.get("model", "gpt-4o"))
        if body.get("stream"):
            inc = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, sc, self._events(f"c{inc}", sc, model, lambda: chat_chunks(sc, model, inc)))
        return await self._json(request, sc, chat_completion(sc, model))

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, sc = await self._record(request)
        if sc.raw is not None:
            return await self._raw(request, sc.raw)
        if sc.status != 200:
            return self._error_response(sc)
        model = str(body.get("model", "gpt-4.1"))
        if body.get("stream"):
            return await self._stream(request, sc, self._events("r", sc, model, lambda: response_events(sc, model)))
        return await self._json(request, sc, response_object(sc, model))

    async def _other(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        if request.path == "/v1/models":
            return web.json_response({"object": "list", "data": [{"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"}]})
        if request.path == "/v1/gzipped":
            return web.Response(body=gzip.compress(b'{"ok":true}'), content_type="application/json", headers={"Content-Encoding": "gzip"})
        return web.json_response({"error": {"message": "not found", "type": "invalid_request_error"}}, status=404)


# ---------------------------------------------------------------- proxy harness (tests, bench)


class ProxyHarness:
    """The real proxy (in-process, own event loop in a thread) in front of a FakeUpstream.

    A thread, because the official SDKs' sync clients block the caller's loop.
    Decisions go through the daemon's real pipeline (``MCPService``) via
    ``LocalDecider``; its ``mcp_tool_call_intercepted`` events land in
    ``decisions``, the proxy's own events in ``sink``.
    """

    def __init__(self) -> None:
        import threading

        from agentsh.proxy.reporter import ListSink

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxy-harness", daemon=True)
        self.fake = FakeUpstream()
        self.sink = ListSink()
        self.decisions: list[Any] = []
        self.server: Any = None
        self.service: Any = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def policy(self, state_dir: Any, *, mode: str = "embedded", proxy: dict[str, Any] | None = None, **mcp: Any) -> Any:
        from agentsh.agent.core.policy.schema import Policy

        mcp.setdefault("inspection", {"registry": {"persistent": False}})
        return Policy.model_validate(
            {
                "daemon": {"state_dir": str(state_dir)},
                "proxy": {
                    "mode": mode,
                    "providers": {"anthropic": {"base_url": self.fake.url}, "openai": {"base_url": self.fake.url}},
                    **(proxy or {}),
                },
                "mcp": mcp,
            }
        )

    def start(self, state_dir: Any) -> None:
        from agentsh.proxy.decider import LocalDecider, NameGate
        from agentsh.proxy.server import ProxyServer

        self.thread.start()

        async def go() -> None:
            await self.fake.start()
            pol = self.policy(state_dir)
            self.server = ProxyServer(pol, decider=LocalDecider(None), gate=NameGate(None, False), sink=self.sink, state_dir=state_dir)
            self.port = await self.server.start()

        self.run(go())

    def configure(self, state_dir: Any, tools: dict[str, list[dict[str, Any]]] | None = None, *, gate_names: list[str] | None = None, **kw: Any) -> Any:
        """Fresh policy + fresh decision pipeline (+ registered tools) for one test."""
        from agentsh.agent.core.mcp.service import MCPService
        from agentsh.proxy.decider import LocalDecider

        pol = self.policy(state_dir, **kw)

        def emit(ev: Any) -> bool:
            self.decisions.append(ev)
            return True

        service = MCPService(pol, state_dir, emit)
        for sid, defs in (tools or {}).items():
            service.register_tools(sid, "stdio", None, defs)

        async def apply() -> None:
            self.server.state_dir = __import__("pathlib").Path(state_dir)
            self.server.gate.names = frozenset(gate_names) if gate_names is not None else None
            self.server.gate.version = None
            self.server.update_policy(pol)
            self.server.judge.decider = LocalDecider(service)
            self.server.judge.daemon_answered()  # a previous test's unreachable daemon is forgotten
            self.sink.events.clear()
            self.decisions.clear()
            self.fake.requests.clear()

        self.run(apply())
        self.service = service
        return service

    def stop(self) -> None:
        async def go() -> None:
            await self.server.stop()
            await self.fake.stop()

        self.run(go())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
