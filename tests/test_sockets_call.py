"""The blocking HTTP clients (agent/core/client_sync.py): the one-shot ``call``
agentshctl uses and the keep-alive ``SyncControlClient`` of the shim's relay
threads, against a real aiohttp server on a Unix socket: JSON, chunked and
text bodies, errors as ControlError, a server that closes early or never
answers as DaemonUnavailable (one line each), a kept-alive connection reused
and replaced when the server closed it."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from agentsh.agent.core.client_sync import ControlError, DaemonUnavailable, SyncControlClient, call
from tests.conftest import short_tmpdir


@pytest.fixture
def server() -> Iterator[str]:
    path = str(short_tmpdir() / "s.sock")
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def json_ok(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        return web.json_response({"method": request.method, "got": body})

    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        resp.content_type = "application/json"
        await resp.prepare(request)
        for part in (b'{"items": [', b"1, 2, ", b"3]}"):
            await resp.write(part)
        await resp.write_eof()
        return resp

    async def text(request: web.Request) -> web.Response:
        return web.Response(text="plain words", status=200)

    async def missing(request: web.Request) -> web.Response:
        return web.json_response({"error": "no such tool"}, status=404)

    seen: list[object] = []  # every connection's protocol, kept (so no id is ever reused)

    async def conn(request: web.Request) -> web.Response:
        for i, p in enumerate(seen):
            if p is request.protocol:
                return web.json_response({"conn": i})
        seen.append(request.protocol)
        return web.json_response({"conn": len(seen) - 1})

    async def start() -> web.AppRunner:
        app = web.Application()
        app.router.add_route("*", "/json", json_ok)
        app.router.add_get("/chunked", chunked)
        app.router.add_get("/text", text)
        app.router.add_get("/missing", missing)
        app.router.add_get("/conn", conn)
        runner = web.AppRunner(app, keepalive_timeout=0.5)
        await runner.setup()
        await web.UnixSite(runner, path).start()
        return runner

    def run() -> None:
        asyncio.set_event_loop(loop)
        runner = loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    ready.wait(10)
    yield path
    loop.call_soon_threadsafe(loop.stop)
    t.join(10)


def test_json_get_and_post_round_trip(server: str) -> None:
    assert call(server, "GET", "/json") == {"method": "GET", "got": None}
    assert call(server, "POST", "/json", {"a": [1, "é"]}) == {"method": "POST", "got": {"a": [1, "é"]}}


def test_chunked_and_text_bodies(server: str) -> None:
    assert call(server, "GET", "/chunked") == {"items": [1, 2, 3]}
    assert call(server, "GET", "/text") == "plain words"


def test_an_error_status_is_a_control_error_with_the_body(server: str) -> None:
    with pytest.raises(ControlError) as e:
        call(server, "GET", "/missing")
    assert e.value.status == 404 and str(e.value) == "HTTP 404: no such tool"


def test_no_socket_and_early_close_and_silence_are_daemon_unavailable(tmp_path: Path) -> None:
    with pytest.raises(DaemonUnavailable, match=r"^agentshd is not running \(no socket at "):
        call(str(tmp_path / "none.sock"), "GET", "/v1/status")
    path = str(short_tmpdir() / "mute.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)

    def close_at_once() -> None:
        c, _ = srv.accept()
        c.recv(4096)
        c.close()

    t = threading.Thread(target=close_at_once, daemon=True)
    t.start()
    with pytest.raises(DaemonUnavailable, match="connection closed"):
        call(path, "GET", "/v1/status")
    t.join(5)
    with pytest.raises(DaemonUnavailable, match="timed out"):  # accepted by the backlog, never answered
        call(path, "GET", "/v1/status", timeout=0.5)
    srv.close()


def test_keep_alive_client_reuses_its_connection_and_replaces_one_the_server_closed(server: str) -> None:
    c = SyncControlClient(server, timeout=5)
    first = c.get("/conn")["conn"]
    assert c.get("/conn")["conn"] == first  # the same connection
    assert c.get("/chunked") == {"items": [1, 2, 3]} and c.get("/conn")["conn"] == first
    with pytest.raises(ControlError) as e:
        c.get("/missing")
    assert e.value.status == 404 and c.get("/conn")["conn"] == first  # an error answer keeps it too
    time.sleep(1.0)  # past the server's keep-alive: it closes the idle connection
    assert c.get("/conn")["conn"] != first  # one retry on a fresh connection, transparent
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(c.get("/conn")["conn"]))
    t.start()
    t.join(10)
    assert seen and seen[0] != c.get("/conn")["conn"]  # one connection per thread
    c.close()


def test_keep_alive_client_errors_match_the_one_shot_call(tmp_path: Path) -> None:
    with pytest.raises(DaemonUnavailable, match=r"^agentshd is not running \(no socket at "):
        SyncControlClient(str(tmp_path / "none.sock")).get("/v1/status")
