"""The proxy talks TLS to real providers: certificates are verified against
the system trust store, and an upstream with an untrusted certificate is a
502 in the provider's error shape, not a silent downgrade."""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anthropic
import orjson
import pytest
from aiohttp import web


def make_ca_and_cert(d: Path) -> tuple[Path, Path, Path]:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=agentsh test CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "srv.key", "-out", "srv.csr")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "ext.cnf", "-out", "srv.pem")
    return d / "ca.pem", d / "srv.pem", d / "srv.key"


MESSAGE = {
    "id": "msg_tls", "type": "message", "role": "assistant", "model": "claude-test",
    "content": [{"type": "text", "text": "over TLS"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}


@pytest.fixture(scope="module")
def tls_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    d = tmp_path_factory.mktemp("tls")
    ca, cert, key = make_ca_and_cert(d)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    async def start() -> tuple[web.AppRunner, int]:
        async def messages(request: web.Request) -> web.Response:
            await request.read()
            return web.json_response(MESSAGE)

        app = web.Application()
        app.router.add_post("/v1/messages", messages)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        return runner, runner.addresses[0][1]

    runner, port = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    yield port, ca
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)


def start_proxy(tmp: Path, port: int, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    conf = tmp / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "agentsh.yaml").write_text(
        f"daemon: {{state_dir: {tmp / 'state'}}}\n"
        f"proxy:\n  providers:\n    anthropic: {{base_url: 'https://localhost:{port}'}}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsh.proxy", "--socket", str(tmp / "none.sock"), "--listen", "127.0.0.1:0",
         "--policy-dir", str(conf), "--state-dir", str(tmp / "state")],
        stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
    )
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        assert line, "proxy exited before listening"
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        if m:
            return proc, int(m.group(1))


@pytest.mark.parametrize("trusted", [True, False])
def test_upstream_tls_certificate_is_verified(tls_upstream, tmp_path: Path, trusted: bool) -> None:
    port, ca = tls_upstream
    env = {"SSL_CERT_FILE": str(ca)} if trusted else {"SSL_CERT_FILE": "/nonexistent-ca.pem"}
    proc, pport = start_proxy(tmp_path, port, env)
    try:
        client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{pport}", api_key="k", max_retries=0)
        if trusted:
            msg = client.messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
            assert msg.content[0].text == "over TLS"
        else:
            with pytest.raises(anthropic.APIStatusError) as ei:
                client.messages.create(model="claude-test", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
            assert ei.value.status_code == 502
            body = orjson.loads(ei.value.response.content)
            assert body["type"] == "error" and body["error"]["type"] == "api_error"
    finally:
        proc.terminate()
        proc.wait(10)
