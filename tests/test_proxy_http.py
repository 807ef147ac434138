"""The proxy as an HTTP intermediary: DLP, errors, encodings, headers, disconnects, storage, failure modes."""

from __future__ import annotations

import gzip
import http.client
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest
from fake_llm_upstream import ProxyHarness, Scenario, anthropic_events, text, tool

from agentsh.agent.core.client_async import ControlClient
from agentsh.proxy.decider import DaemonDecider
from agentsh.proxy.reporter import EventReporter

TOOLS = [
    {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object"}},
    {"name": "delete_file", "description": "Delete.", "inputSchema": {"type": "object"}},
]
DENY = {"denied_tools": [{"tool": "delete_*"}]}

SECRETS = {
    "email": "jane.doe@example.com",
    "phone": "(415) 555-2671",
    "credit_card": "4111 1111 1111 1111",
    "us_ssn": "123-45-6789",
    "aws_access_key": "AKIAIOSFODNN7EXAMPL1",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "openai_api_key": "sk-proj-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7f",
    "anthropic_api_key": "sk-ant-api03-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9j",
    "slack_token": "xoxb-1234567890-abcdefghij",
    "stripe_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def _secret_text(typ: str, value: str) -> str:
    return f"aws_secret_access_key = {value}" if typ == "aws_secret_key" else f"here: {value} ."


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Any:
    h = ProxyHarness()
    h.start(tmp_path_factory.mktemp("proxyhttp"))
    yield h
    h.stop()


def wait_until(cond: Any, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


def last_llm_request(h: ProxyHarness) -> dict[str, Any]:
    wait_until(lambda: h.sink.of_type("llm_request"))
    return h.sink.of_type("llm_request")[-1]


def post(h: ProxyHarness, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=10)
    conn.request("POST", path, body=body, headers={"content-type": "application/json", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


# ------------------------------------------------------------------ DLP


@pytest.mark.parametrize("typ", sorted(SECRETS))
def test_dlp_redacts_each_type_before_it_reaches_upstream(harness: ProxyHarness, tmp_path: Path, typ: str) -> None:
    harness.configure(tmp_path, {})
    secret = SECRETS[typ]
    ac = anthropic.Anthropic(base_url=harness.url, api_key="sk-ant-test", max_retries=0)
    ac.messages.create(model="dlp", max_tokens=10, messages=[{"role": "user", "content": _secret_text(typ, secret)}])
    arrived = harness.fake.requests[-1]
    assert secret.encode() not in arrived["raw"]
    assert f"[REDACTED:{typ}]" in arrived["body"]["messages"][0]["content"]
    assert last_llm_request(harness)["redactions"] == {typ: 1}


def test_dlp_custom_pattern_and_nested_values(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {}, proxy={"dlp": {"custom_patterns": [{"name": "ticket", "pattern": r"TICKET-\d{6}"}]}})
    oc = openai.OpenAI(base_url=harness.url + "/v1", api_key="sk-test", max_retries=0)
    oc.chat.completions.create(
        model="dlp2",
        messages=[{"role": "user", "content": [{"type": "text", "text": "see TICKET-123456 and bob@corp.example.org"}]}],
    )
    body = harness.fake.requests[-1]["body"]
    assert body["messages"][0]["content"][0]["text"] == "see [REDACTED:ticket] and [REDACTED:email]"
    assert last_llm_request(harness)["redactions"] == {"ticket": 1, "email": 1}


def test_clean_request_goes_upstream_byte_identical(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    raw = b'{ "model" : "clean",\n  "max_tokens": 5, "messages": [{"role":"user","content":"hello"}]}'
    status, _, _ = post(harness, "/v1/messages", raw, {"anthropic-version": "2023-06-01"})
    assert status == 200
    assert harness.fake.requests[-1]["raw"] == raw
    assert last_llm_request(harness)["redactions"] == {}


def test_dlp_skips_base64_image_data(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    data = "AKIAIOSFODNN7EXAMPL1" * 3  # would look like a key if it were text
    body = {"model": "img", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}]}
    post(harness, "/v1/messages", orjson.dumps(body), {"anthropic-version": "2023-06-01"})
    assert harness.fake.requests[-1]["body"]["messages"][0]["content"][0]["source"]["data"] == data


def test_dlp_disabled_mode_forwards_secrets(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {}, proxy={"dlp": {"mode": "disabled"}})
    post(harness, "/v1/messages", orjson.dumps({"model": "x", "messages": [{"role": "user", "content": SECRETS["email"]}]}), {"anthropic-version": "2023-06-01"})
    assert SECRETS["email"].encode() in harness.fake.requests[-1]["raw"]


# ------------------------------------------------------------------ mcp-only: bodies stored, DLP off


def test_mcp_only_stores_bodies_separately_and_skips_dlp(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {"files": TOOLS}, mode="mcp-only", **DENY)
    harness.fake.add("store", Scenario([text("ok"), tool("delete_file", "toolu_s", {"path": "/"})]))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="sk-ant-secret-key-never-stored", max_retries=0)
    msg = ac.messages.create(model="store", max_tokens=10, messages=[{"role": "user", "content": f"mail {SECRETS['email']}"}])
    with ac.messages.stream(model="store", max_tokens=10, messages=[{"role": "user", "content": "again"}]) as s:
        s.get_final_message()
    assert msg.content[-1].text.startswith("[agentsh] Tool 'delete_file' blocked")
    assert SECRETS["email"].encode() in harness.fake.requests[0]["raw"]  # no DLP in mcp-only
    path = tmp_path / "llm-bodies" / "llm-bodies.jsonl"
    wait_until(lambda: path.exists() and len(path.read_bytes().splitlines()) == 2)
    recs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert SECRETS["email"] in recs[0]["request"]["text"]
    assert "[agentsh] Tool 'delete_file' blocked" in recs[0]["response"]["text"]
    assert recs[0]["rewritten"] is True
    assert "event: message_stop" in recs[1]["response"]["text"]
    assert b"sk-ant-secret-key-never-stored" not in path.read_bytes()
    # events carry summaries only
    for ev in harness.sink.events:
        assert SECRETS["email"] not in orjson.dumps(ev).decode()


def test_body_storage_rotates(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {}, mode="mcp-only", proxy={"body_storage": {"max_bytes": 2000, "backups": 2}})
    for i in range(8):
        post(harness, "/v1/messages", orjson.dumps({"model": "rot", "messages": [{"role": "user", "content": "x" * 600 + str(i)}]}), {"anthropic-version": "2023-06-01"})
    d = tmp_path / "llm-bodies"
    wait_until(lambda: (d / "llm-bodies.jsonl.2").exists())
    assert not (d / "llm-bodies.jsonl.3").exists()
    assert all(p.stat().st_size <= 2000 for p in d.iterdir())


# ------------------------------------------------------------------ errors, encodings, headers


def test_upstream_unreachable_returns_provider_error_shapes(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    pol = harness.policy(tmp_path)
    pol.proxy.providers["anthropic"].base_url = dead
    pol.proxy.providers["openai"].base_url = dead
    harness.run(_apply(harness, pol))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as ei:
        ac.messages.create(model="x", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert ei.value.status_code == 502
    assert ei.value.body["type"] == "error" and ei.value.body["error"]["type"] == "api_error"
    oc = openai.OpenAI(base_url=harness.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as eo:
        oc.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    assert eo.value.status_code == 502
    assert "unreachable" in eo.value.body["message"]
    assert last_llm_request(harness)["status"] == 502


async def _apply(h: ProxyHarness, pol: Any) -> None:
    h.server.update_policy(pol)


def test_upstream_error_status_and_body_pass_through(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    err = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}
    harness.fake.add("429", Scenario(status=429, error=err))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as ei:
        ac.messages.create(model="429", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert ei.value.body == err


@pytest.mark.parametrize("stream", [False, True])
def test_gzip_from_upstream_is_decoded_and_rewritten(harness: ProxyHarness, tmp_path: Path, stream: bool) -> None:
    harness.configure(tmp_path, {"files": TOOLS}, **DENY)
    harness.fake.add("gz", Scenario([text("hi"), tool("delete_file", "toolu_g", {"path": "/"})], gzip_body=True, gzip_stream=True))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="k", max_retries=0)
    kw: dict[str, Any] = {"model": "gz", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        with ac.messages.stream(**kw) as s:
            msg = s.get_final_message()
    else:
        msg = ac.messages.create(**kw)
    assert [b.type for b in msg.content] == ["text", "text"]
    assert msg.content[1].text.startswith("[agentsh] Tool 'delete_file' blocked")
    assert harness.fake.requests[-1]["headers"]["Accept-Encoding"] == "identity"


def test_unknown_paths_pass_through_untouched(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    oc = openai.OpenAI(base_url=harness.url + "/v1", api_key="k", max_retries=0)
    assert [m.id for m in oc.models.list()] == ["gpt-4o"]
    conn = http.client.HTTPConnection("127.0.0.1", harness.port, timeout=5)
    conn.request("GET", "/v1/gzipped?x=1", headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    raw = r.read()
    assert r.getheader("Content-Encoding") == "gzip" and gzip.decompress(raw) == b'{"ok":true}'
    assert harness.fake.requests[-1]["path"] == "/v1/gzipped?x=1"
    assert last_llm_request(harness)["dialect"] is None


def test_hop_by_hop_headers_dropped_auth_forwarded_never_logged(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    key = "sk-ant-api03-SUPERSECRETKEYVALUE000000000000"
    post(harness, "/v1/messages", b'{"model":"h","messages":[]}', {"anthropic-version": "2023-06-01", "x-api-key": key, "Connection": "X-Private", "X-Private": "1", "Keep-Alive": "timeout=5", "X-Custom": "kept"})
    got = {k.lower(): v for k, v in harness.fake.requests[-1]["headers"].items()}
    assert got["x-api-key"] == key and got["x-custom"] == "kept"
    assert "x-private" not in got and "keep-alive" not in got
    assert key not in orjson.dumps(harness.sink.events).decode()


def test_upstream_cookies_are_not_shared_between_clients(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    harness.fake.add("cookie", Scenario([text("x")], set_cookie="session=abc; Path=/"))
    post(harness, "/v1/messages", b'{"model":"cookie","messages":[]}', {"anthropic-version": "2023-06-01"})
    post(harness, "/v1/messages", b'{"model":"other","messages":[]}', {"anthropic-version": "2023-06-01"})
    assert "Cookie" not in harness.fake.requests[-1]["headers"]


# ------------------------------------------------------------------ stream lifecycle


def test_upstream_disconnect_ends_client_stream_cleanly(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {"files": TOOLS}, **DENY)
    sc = harness.fake.add("drop", Scenario([text("partial answer here")], drop_after_events=4))
    status, _, data = post(harness, "/v1/messages", b'{"model":"drop","stream":true,"messages":[]}', {"anthropic-version": "2023-06-01"})
    assert status == 200
    assert data == b"".join(anthropic_events(harness.fake.scenarios[sc], "drop")[:4])  # clean chunked end, no IncompleteRead
    wait_until(lambda: (last_llm_request(harness).get("error") or "").startswith("upstream stream ended early"))


def test_client_disconnect_closes_upstream(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {"files": TOOLS}, **DENY)
    harness.fake.add("slow", Scenario([text("y" * 2000)], split_text=1, event_delay=0.005))
    before = harness.fake.disconnects
    s = socket.create_connection(("127.0.0.1", harness.port))
    body = b'{"model":"slow","stream":true,"messages":[]}'
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    assert b"200" in s.recv(4096)
    s.close()
    wait_until(lambda: harness.fake.disconnects > before, timeout=10)
    wait_until(lambda: last_llm_request(harness).get("error") == "client disconnected")


def test_unreadable_candidate_event_refuses_the_stream_with_an_sdk_error(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {"files": TOOLS}, **DENY)
    good = anthropic_events(Scenario([tool("delete_file", "toolu_m", {"path": "/"})]), "mal")
    bad = b'event: content_block_start\ndata: {"type":"content_block_start","content_block":{"type":"tool_use",\n\n'
    harness.fake.add("mal", Scenario(raw_chunks=[good[0], bad, *good[1:]]))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as ei, ac.messages.stream(model="mal", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
        s.get_final_message()
    assert "agentsh proxy refused the response" in str(ei.value)
    _, _, data = post(harness, "/v1/messages", b'{"model":"mal","stream":true,"messages":[]}', {"anthropic-version": "2023-06-01"})
    assert bad not in data and b"delete_file" not in data  # nothing after the unreadable event
    ev = last_llm_request(harness)
    assert ev["malformed_lines"] == 1 and (ev["error"] or "").startswith("refused: unparseable JSON")


# ------------------------------------------------------------------ daemon unreachable


@pytest.mark.parametrize("fail_closed", [True, False])
def test_daemon_unreachable_follows_fail_closed(harness: ProxyHarness, tmp_path: Path, fail_closed: bool) -> None:
    harness.configure(tmp_path, {}, fail_closed=fail_closed)
    client = ControlClient(str(tmp_path / "no-daemon.sock"))

    async def swap() -> None:
        harness.server.judge.decider = DaemonDecider(client)

    harness.run(swap())
    harness.fake.add("down", Scenario([tool("some_tool", "toolu_d", {"path": "/"})]))
    ac = anthropic.Anthropic(base_url=harness.url, api_key="k", max_retries=0)
    with ac.messages.stream(model="down", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
        msg = s.get_final_message()
    local = harness.sink.of_type("mcp_tool_call_intercepted")
    if fail_closed:
        assert msg.content[0].type == "text" and "agentshd unavailable" in msg.content[0].text
        assert msg.stop_reason == "end_turn"
        assert [(e["tool_name"], e["action"]) for e in local] == [("some_tool", "block")]
    else:
        assert msg.content[0].type == "tool_use" and msg.stop_reason == "tool_use"
        # the proxy records the fail-open decision itself (the daemon could not)
        assert [(e["tool_name"], e["action"]) for e in local] == [("some_tool", "allow")]


async def test_reporter_spools_when_daemon_is_down(tmp_path: Path) -> None:
    rep = EventReporter(ControlClient(str(tmp_path / "none.sock")), tmp_path, flush_interval=0.05)
    rep.start()
    for i in range(3):
        rep.emit({"type": "llm_request", "request_id": f"r{i}"})
    await rep.stop()
    lines = [orjson.loads(x) for x in rep.spool_path.read_bytes().splitlines()]
    assert [x["request_id"] for x in lines] == ["r0", "r1", "r2"]
    assert all(x["source"] == "proxy" and x["timestamp"].endswith("Z") for x in lines)
    assert rep.stats()["spooled"] == 3 and rep.stats()["dropped"] == 0


def test_health_endpoint_reports_counters(harness: ProxyHarness, tmp_path: Path) -> None:
    harness.configure(tmp_path, {})
    with urllib.request.urlopen(harness.url + "/_agentsh/health") as r:
        doc = orjson.loads(r.read())
    assert doc["ok"] is True and doc["mode"] == "embedded" and "requests" in doc
