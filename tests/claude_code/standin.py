"""A scripted local stand-in for the Anthropic Messages API, for driving the real
Claude Code binary offline (the model is the one thing that cannot run here).

A :class:`Scenario` is the list of assistant turns the "model" plays, in order.
Each request of the *main conversation* gets the next turn; once the script is
exhausted every further main request gets ``final_text``. Claude Code also sends
*auxiliary* requests (e.g. WebFetch's digest of a fetched page); those are
answered separately and never consume a turn. How the two are told apart is in
``tests/claude_code/README.md`` ("Main vs auxiliary requests").

Both wire forms are served: a JSON message when the request has no
``"stream": true``, else the Anthropic SSE event sequence (``message_start``,
``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta``) / ``content_block_stop`` per block, ``message_delta`` with
the stop reason, ``message_stop``).

Every request is recorded (path, headers, parsed body, how it was classified
and which turn answered it), so a test reads what Claude Code sent back, e.g.
the ``tool_result`` of a Read or a hook's deny reason.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

# ------------------------------------------------------------------ scenario


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str | None = None
    """``tool_use`` id; generated (``toolu_standin_<n>``) when None."""


Block = Text | ToolUse


def text(s: str) -> Text:
    return Text(s)


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> ToolUse:
    return ToolUse(name, dict(input), id)


@dataclass
class Turn:
    blocks: list[Block]
    break_stream: bool = False
    """Answer this turn's first *streaming* request with an SSE body that has no
    events. Claude Code treats that as a broken stream and retries the same
    request without ``stream`` (its non-streaming fallback); the retry gets the
    turn as a JSON message. The broken attempt consumes nothing."""


@dataclass
class Scenario:
    turns: list[Turn] = field(default_factory=list)
    final_text: str = "Done."
    aux_text: str = "standin auxiliary answer"
    """What every auxiliary request (small-model side calls) gets."""

    @classmethod
    def of(cls, *turns: Sequence[Block] | Turn, final_text: str = "Done.") -> Scenario:
        return cls([t if isinstance(t, Turn) else Turn(list(t)) for t in turns], final_text)


# ------------------------------------------------------------------ records

Kind = Literal["main", "aux", "count_tokens", "models", "probe", "page", "unknown"]
"""``main``: a request of the scripted conversation; ``aux``: a side call to the
model (never consumes a turn); ``probe``: the ``/api/hello`` connectivity check;
``page``: a GET of one of ``StandIn.pages``; ``unknown``: anything else (404)."""


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    kind: Kind
    turn: int | None = None
    """Index of the scenario turn that answered (None: final text, aux, other)."""
    streamed: bool = False
    broken_stream: bool = False

    def _since_last_assistant(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        out: list[dict[str, Any]] = []
        for m in reversed(msgs or []):
            if not isinstance(m, dict) or m.get("role") == "assistant":
                break
            out.append(m)
        return out[::-1]

    def tool_results(self) -> list[dict[str, Any]]:
        """``tool_result`` blocks Claude Code sends back for the previous turn's
        tool calls (user messages after the last assistant message)."""
        return [
            b
            for m in self._since_last_assistant()
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]

    def trailing_texts(self, role: str = "system") -> list[str]:
        """Texts of ``role`` messages after the last assistant message. Claude Code
        puts hook feedback (PostToolUse block reasons, ``additionalContext``) in a
        ``"role": "system"`` message right after the tool results."""
        out: list[str] = []
        for m in self._since_last_assistant():
            if m.get("role") != role:
                continue
            c = m.get("content")
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, list):
                out += [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
        return out


def tool_result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (string content or text parts joined)."""
    c = block.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


# ------------------------------------------------------------------ wire forms

STANDIN_MODEL = "claude-opus-5-5"
_USAGE = {"input_tokens": 25, "output_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _dumps(o: Any) -> str:
    return json.dumps(o, separators=(",", ":"))


def _content(blocks: Iterable[Block], ids: Iterator[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if isinstance(b, Text):
            out.append({"type": "text", "text": b.text})
        else:
            out.append({"type": "tool_use", "id": b.id or next(ids), "name": b.name, "input": b.input})
    return out


def message_json(content: list[dict[str, Any]], model: str, msg_id: str) -> dict[str, Any]:
    has_tool = any(c["type"] == "tool_use" for c in content)
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if has_tool else "end_turn",
        "stop_sequence": None,
        "usage": dict(_USAGE),
    }


def message_events(content: list[dict[str, Any]], model: str, msg_id: str, piece: int = 16) -> list[bytes]:
    """The SSE events of one message, text and tool input split into pieces."""

    def ev(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()

    msg = message_json(content, model, msg_id)
    start = {**msg, "content": [], "stop_reason": None, "usage": {**_USAGE, "output_tokens": 1}}
    out = [ev("message_start", {"type": "message_start", "message": start})]
    for i, c in enumerate(content):
        if c["type"] == "text":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            s = c["text"]
            for k in range(0, max(len(s), 1), piece):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": s[k : k + piece]}}))
        else:
            head = {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": head}))
            s = _dumps(c["input"])
            for k in range(0, len(s), piece):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": s[k : k + piece]}}))
        out.append(ev("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": _USAGE["output_tokens"]}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return out


# ------------------------------------------------------------------ classification


def _first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
            return ""
    return ""


def is_main_conversation(body: dict[str, Any], prompt: str | None) -> bool:
    """A request of the main agent loop carries the session's tool set and, as
    its first user message, the prompt ``claude -p`` was given. Side calls
    (WebFetch's summary, titles, ...) carry no tools or another first message.
    See README "Main vs auxiliary requests"."""
    if not body.get("tools"):
        return False
    if prompt is None:
        return True
    return prompt in _first_user_text(body)


# ------------------------------------------------------------------ server


def make_tls_files(d: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for localhost / 127.0.0.1
    (openssl CLI). Returns (ca.pem, srv.pem, srv.key)."""

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=agentsh claude-code test CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "srv.key", "-out", "srv.csr")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "ext.cnf", "-out", "srv.pem")
    return d / "ca.pem", d / "srv.pem", d / "srv.key"


class StandIn:
    """The stand-in server, run on its own event loop in a daemon thread.

    With ``tls=True`` the same routes are also served over HTTPS (``https_url``)
    with a throw-away CA (``ca_file``; the harness hands it to Claude Code as
    ``NODE_EXTRA_CA_CERTS``): WebFetch upgrades every ``http://`` URL to
    ``https://``, so pages for it must be served over TLS.
    """

    def __init__(self, scenario: Scenario | None = None, prompt: str | None = None, *, tls: bool = False) -> None:
        self.scenario = scenario or Scenario()
        self.prompt = prompt
        """The ``claude -p`` prompt: how main-conversation requests are recognised."""
        self.requests: list[Recorded] = []
        self.pages: dict[str, tuple[str, str]] = {}
        """Extra GET routes (path -> (content type, body)): pages for WebFetch."""
        self.tls = tls
        self.tls_port = 0
        self.ca_file: Path | None = None
        self._tls_dir: Path | None = None
        self._next_turn = 0
        self._broken: set[int] = set()
        self._ids = (f"toolu_standin_{n:04d}" for n in itertools.count(1))
        self._msg_ids = (f"msg_standin_{n:04d}" for n in itertools.count(1))
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def https_url(self) -> str:
        if not self.tls_port:
            raise RuntimeError("stand-in started without tls=True")
        return f"https://127.0.0.1:{self.tls_port}"

    def start(self) -> StandIn:
        ready = threading.Event()
        err: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start())
            except BaseException as e:  # pragma: no cover - reported to start()
                err.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name="claude-standin", daemon=True)
        self._thread.start()
        ready.wait(10)
        if err:
            raise err[0]
        if not self.port:
            raise RuntimeError("stand-in did not start")
        return self

    async def _start(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = _bound_port(site)
        if self.tls:
            self._tls_dir = Path(tempfile.mkdtemp(prefix="cc-standin-tls-"))
            ca, cert, key = make_tls_files(self._tls_dir)
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(cert, key)
            tls_site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
            await tls_site.start()
            self.tls_port = _bound_port(tls_site)
            self.ca_file = ca

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None
        if self._tls_dir is not None:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_scenario(self, scenario: Scenario, prompt: str | None) -> None:
        """Play ``scenario`` from its first turn for conversations started by ``prompt``."""
        with self._lock:
            self.scenario, self.prompt = scenario, prompt
            self._next_turn = 0
            self._broken.clear()

    # -- views for tests

    def main_requests(self) -> list[Recorded]:
        """Main-conversation requests that were answered (not broken streams)."""
        with self._lock:
            return [r for r in self.requests if r.kind == "main" and not r.broken_stream]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block Claude Code sent back, in order."""
        return [b for r in self.main_requests() for b in r.tool_results()]

    def tool_result_for(self, tool_use_id: str) -> dict[str, Any]:
        for b in self.tool_results():
            if b.get("tool_use_id") == tool_use_id:
                return b
        raise KeyError(f"no tool_result for {tool_use_id}; got {[b.get('tool_use_id') for b in self.tool_results()]}")

    # -- handling

    def _record(self, rec: Recorded) -> Recorded:
        with self._lock:
            self.requests.append(rec)
        return rec

    async def _handle(self, req: web.Request) -> web.StreamResponse:
        raw = await req.read()
        body: Any
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rec = Recorded(req.method, req.path, dict(req.query), dict(req.headers), body, "unknown")
        path = req.path.rstrip("/")
        if req.method == "GET" and req.path in self.pages:
            rec.kind = "page"
            self._record(rec)
            ctype, page = self.pages[req.path]
            return web.Response(text=page, content_type=ctype)
        if req.method in ("GET", "HEAD") and path == "/api/hello":
            # Connectivity probe Claude Code sends to the base URL when
            # CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is not set.
            rec.kind = "probe"
            self._record(rec)
            return web.Response(status=200)
        if req.method == "POST" and path == "/v1/messages/count_tokens":
            rec.kind = "count_tokens"
            self._record(rec)
            return web.json_response({"input_tokens": 42})
        if req.method == "GET" and path == "/v1/models":
            rec.kind = "models"
            self._record(rec)
            model = {"type": "model", "id": STANDIN_MODEL, "display_name": "Stand-in", "created_at": "2026-01-01T00:00:00Z"}
            return web.json_response({"data": [model], "has_more": False, "first_id": STANDIN_MODEL, "last_id": STANDIN_MODEL})
        if req.method == "POST" and path == "/v1/messages" and isinstance(body, dict):
            return await self._messages(req, rec, body)
        self._record(rec)
        return web.json_response(
            {"type": "error", "error": {"type": "not_found_error", "message": f"stand-in: no route {req.method} {req.path}"}},
            status=404,
        )

    async def _messages(self, req: web.Request, rec: Recorded, body: dict[str, Any]) -> web.StreamResponse:
        model = str(body.get("model", STANDIN_MODEL))
        stream = body.get("stream") is True
        rec.streamed = stream
        if is_main_conversation(body, self.prompt):
            rec.kind = "main"
            with self._lock:
                i = self._next_turn
                turn = self.scenario.turns[i] if i < len(self.scenario.turns) else None
                if turn is not None and turn.break_stream and stream and i not in self._broken:
                    self._broken.add(i)
                    rec.turn, rec.broken_stream = i, True
                    self.requests.append(rec)
                    broken = True
                else:
                    broken = False
                    if turn is not None:
                        self._next_turn += 1
                        rec.turn = i
                    self.requests.append(rec)
                    content = (
                        _content(turn.blocks, self._ids) if turn is not None else [{"type": "text", "text": self.scenario.final_text}]
                    )
            if broken:
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
                await resp.prepare(req)
                await resp.write_eof()
                return resp
        else:
            rec.kind = "aux"
            self._record(rec)
            content = [{"type": "text", "text": self.scenario.aux_text}]
        msg_id = next(self._msg_ids)
        if not stream:
            return web.json_response(message_json(content, model, msg_id))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(req)
        await resp.write(b"".join(message_events(content, model, msg_id)))
        await resp.write_eof()
        return resp


def _bound_port(site: web.TCPSite) -> int:
    server = site._server  # aiohttp keeps the asyncio server here
    assert server is not None and server.sockets
    return int(server.sockets[0].getsockname()[1])
