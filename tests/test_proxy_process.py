"""The proxy as its own process: privilege drop, serving, spooling, SIGHUP, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import orjson
import pytest
from click.testing import CliRunner
from fake_llm_upstream import FakeUpstream

from agentsh.agent.ctl.proxy import base_urls, proxy


@pytest.fixture(scope="module")
def fake() -> Any:
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    f = FakeUpstream()
    asyncio.run_coroutine_threadsafe(f.start(), loop).result(10)
    yield f
    asyncio.run_coroutine_threadsafe(f.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)


def _uids(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError("no Uid line")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop privileges")
def test_proxy_process_drops_to_nobody_serves_and_spools(fake: FakeUpstream) -> None:
    base = Path(tempfile.mkdtemp(prefix="agentsh-proxy-"))
    os.chmod(base, 0o755)  # the dropped process must be able to reach its state dir
    state = base / "state"
    conf = base / "conf"
    conf.mkdir()
    (conf / "agentsh.yaml").write_text(
        f"version: 1\ndaemon:\n  state_dir: {state}\n"
        f"proxy:\n  providers:\n    anthropic: {{base_url: '{fake.url}'}}\n    openai: {{base_url: '{fake.url}'}}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsh.proxy", "--socket", str(base / "no-daemon.sock"), "--user", "nobody", "--listen", "127.0.0.1:0", "--policy-dir", str(conf)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = None
        deadline = time.monotonic() + 20
        assert proc.stderr is not None
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                port = int(m.group(1))
            assert line or proc.poll() is None, "proxy exited early"
        assert port, "proxy did not report its port"
        nobody = pwd.getpwnam("nobody").pw_uid
        assert _uids(proc.pid) == [nobody] * 4  # real, effective, saved, fs
        ac = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0)
        msg = ac.messages.create(model="p", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert msg.content[0].text == "Hello from the fake upstream."
        proc.send_signal(signal.SIGHUP)  # re-fetch: daemon unreachable, keeps serving
        msg = ac.messages.create(model="p", max_tokens=5, messages=[{"role": "user", "content": "again"}])
        assert msg.stop_reason == "end_turn"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        spooled = [orjson.loads(x) for p in (state / "spool").glob("proxy-*.jsonl.tmp") for x in p.read_bytes().splitlines()]
        reqs = [e for e in spooled if e["type"] == "llm_request"]
        assert len(reqs) == 2 and all(e["status"] == 200 for e in reqs)  # no event lost with the daemon down
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_proxy_env_prints_sdk_base_urls() -> None:
    r = CliRunner().invoke(proxy, ["env", "--listen", "127.0.0.1:9999"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:9999",
        "export OPENAI_BASE_URL=http://127.0.0.1:9999/v1",
        "export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9999",
    ]
    assert base_urls("[::1]:8765")["OPENAI_BASE_URL"] == "http://[::1]:8765/v1"
    assert base_urls("0.0.0.0:8765")["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8765"


def test_proxy_env_without_daemon_says_what_to_do(tmp_path: Path) -> None:
    r = CliRunner().invoke(proxy, ["env", "--socket", str(tmp_path / "none.sock")])
    assert r.exit_code != 0
    assert "--listen" in r.output
