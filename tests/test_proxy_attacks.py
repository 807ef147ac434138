"""Hostile upstream responses that once carried a denied tool call past the proxy.

Each attack is replayed by the local stand-in upstream, read through the real
proxy by the official ``anthropic`` / ``openai`` SDKs, and the test checks
what the SDK hands to the agent: the denied call never appears in the final
message / completion / response, and either the replacement text or a clean
SDK error does. Decisions come from the daemon's real pipeline (MCPService).
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from collections.abc import Callable
from typing import Any

import anthropic
import brotli
import openai
import orjson
import pytest
from fake_llm_upstream import (
    ProxyHarness,
    Raw,
    Scenario,
    anthropic_events,
    anthropic_message,
    chat_chunks,
    chat_completion,
    response_events,
    response_object,
    text,
    tool,
)

from agentsh.proxy.server import MAX_RESPONSE_BYTES

TOOLS = [
    {"name": n, "description": n, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "city": {"type": "string"}}}}
    for n in ("get_weather", "delete_file", "delete_all")
]
DENY = {"denied_tools": [{"server": "*", "tool": "delete_*"}]}
BLOCKED = "[agentsh] Tool 'delete_file' blocked by policy"
SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Any:
    h = ProxyHarness()
    h.start(tmp_path_factory.mktemp("attacks"))
    yield h
    h.stop()


@pytest.fixture
def h(harness: ProxyHarness, tmp_path: Any) -> ProxyHarness:
    harness.configure(tmp_path, {"files": TOOLS}, **DENY)
    return harness


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


def intercepts(h: ProxyHarness) -> list[Any]:
    return [e for e in h.decisions if e.type == "mcp_tool_call_intercepted"]


def last_request(h: ProxyHarness) -> dict[str, Any]:
    wait_until(lambda: bool(h.sink.of_type("llm_request")))
    return h.sink.of_type("llm_request")[-1]


# ------------------------------------------------------------------ the SDKs, as an agent uses them

MSGS = [{"role": "user", "content": "clean up"}]


def _tools(dialect: str) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": False}
    names = ["delete_file", "get_weather"]
    if dialect == "anthropic":
        return [{"name": n, "description": n, "input_schema": schema} for n in names]
    if dialect == "openai":
        return [{"type": "function", "function": {"name": n, "description": n, "parameters": schema}} for n in names]
    return [{"type": "function", "name": n, "description": n, "parameters": schema, "strict": False} for n in names]


def agent_view(h: ProxyHarness, dialect: str, model: str, stream: bool) -> dict[str, Any]:
    """What the agent gets: texts and (name, arguments) tool calls, via the SDK's own accumulator."""
    if dialect == "anthropic":
        ac = anthropic.Anthropic(base_url=h.url, api_key="k", max_retries=0)
        kw: dict[str, Any] = {"model": model, "max_tokens": 64, "messages": MSGS, "tools": _tools(dialect)}
        if stream:
            with ac.messages.stream(**kw) as s:
                m = s.get_final_message()
        else:
            m = ac.messages.create(**kw)
        return {
            "texts": [b.text for b in m.content if b.type == "text"],
            "tools": [(b.name, b.input) for b in m.content if b.type == "tool_use"],
        }
    oc = openai.OpenAI(base_url=h.url + "/v1", api_key="k", max_retries=0)
    if dialect == "openai":
        if stream:
            with oc.chat.completions.stream(model=model, messages=MSGS, tools=_tools(dialect)) as s:  # type: ignore[arg-type]
                c = s.get_final_completion()
        else:
            c = oc.chat.completions.create(model=model, messages=MSGS, tools=_tools(dialect))  # type: ignore[arg-type]
        texts, tools = [], []
        for ch in c.choices:
            if ch.message.content:
                texts.append(ch.message.content)
            for t in ch.message.tool_calls or []:
                fn = getattr(t, "function", None)
                cu = getattr(t, "custom", None)
                tools.append((fn.name, json.loads(fn.arguments)) if fn is not None else (cu.name, cu.input))
        return {"texts": texts, "tools": tools}
    if stream:
        with oc.responses.stream(model=model, input="x", tools=_tools(dialect)) as s:  # type: ignore[arg-type]
            r = s.get_final_response()
    else:
        r = oc.responses.create(model=model, input="x", tools=_tools(dialect))  # type: ignore[arg-type]
    texts, tools = [], []
    for item in r.output:
        if item.type == "message":
            texts.extend(c.text for c in item.content if c.type == "output_text")
        elif item.type == "function_call":
            tools.append((item.name, json.loads(item.arguments)))
        elif item.type == "custom_tool_call":
            tools.append((item.name, item.input))
    return {"texts": texts, "tools": tools}


async def agent_view_async(h: ProxyHarness, dialect: str, model: str, stream: bool) -> dict[str, Any]:
    """``agent_view`` with the async clients."""
    if dialect == "anthropic":
        ac = anthropic.AsyncAnthropic(base_url=h.url, api_key="k", max_retries=0)
        kw: dict[str, Any] = {"model": model, "max_tokens": 64, "messages": MSGS, "tools": _tools(dialect)}
        if stream:
            async with ac.messages.stream(**kw) as s:
                m = await s.get_final_message()
        else:
            m = await ac.messages.create(**kw)
        return {"texts": [b.text for b in m.content if b.type == "text"], "tools": [(b.name, b.input) for b in m.content if b.type == "tool_use"]}
    oc = openai.AsyncOpenAI(base_url=h.url + "/v1", api_key="k", max_retries=0)
    texts, tools = [], []
    if dialect == "openai":
        if stream:
            async with oc.chat.completions.stream(model=model, messages=MSGS, tools=_tools(dialect)) as s:  # type: ignore[arg-type]
                c = await s.get_final_completion()
        else:
            c = await oc.chat.completions.create(model=model, messages=MSGS, tools=_tools(dialect))  # type: ignore[arg-type]
        for ch in c.choices:
            texts += [ch.message.content] if ch.message.content else []
            tools += [(t.function.name, json.loads(t.function.arguments)) for t in ch.message.tool_calls or []]
        return {"texts": texts, "tools": tools}
    if stream:
        async with oc.responses.stream(model=model, input="x", tools=_tools(dialect)) as s:  # type: ignore[arg-type]
            r = await s.get_final_response()
    else:
        r = await oc.responses.create(model=model, input="x", tools=_tools(dialect))  # type: ignore[arg-type]
    for item in r.output:
        if item.type == "message":
            texts += [c.text for c in item.content if c.type == "output_text"]
        elif item.type == "function_call":
            tools.append((item.name, json.loads(item.arguments)))
    return {"texts": texts, "tools": tools}


def assert_replaced(view: dict[str, Any], name: str = "delete_file") -> None:
    assert all(t[0] != name for t in view["tools"]), view
    assert any(f"[agentsh] Tool '{name}' blocked by policy" in t for t in view["texts"]), view


def assert_refused(h: ProxyHarness, dialect: str, model: str, stream: bool) -> None:
    err = anthropic.APIError if dialect == "anthropic" else openai.APIError
    with pytest.raises(err) as ei:
        agent_view(h, dialect, model, stream)
    assert "agentsh proxy refused" in str(ei.value)


# ------------------------------------------------------------------ hostile bytes

DELETE = Scenario([text("Cleaning."), tool("delete_file", "call_del1", {"path": "/etc/passwd"})], split_text=5)
GEN = {
    "anthropic": lambda sc: anthropic_events(sc, "m"),
    "openai": lambda sc: chat_chunks(sc, "m", False),
    "responses": lambda sc: response_events(sc, "m"),
}
BODY = {"anthropic": lambda sc: anthropic_message(sc, "m"), "openai": lambda sc: chat_completion(sc, "m"), "responses": lambda sc: response_object(sc, "m")}
DIALECTS = list(GEN)


def sse_event(name: str | None, data: dict[str, Any], eol: bytes = b"\n") -> bytes:
    head = b"event: " + name.encode() + eol if name else b""
    return head + b"data: " + orjson.dumps(data) + eol + eol


# ------------------------------------------------------------------ framing and escapes


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cr_only_line_endings_do_not_hide_a_tool_call(h: ProxyHarness, dialect: str) -> None:
    h.fake.add("cr", Scenario(raw=Raw([e.replace(b"\n", b"\r") for e in GEN[dialect](DELETE)], SSE)))
    view = agent_view(h, dialect, "cr", True)
    assert_replaced(view)
    ev = intercepts(h)
    assert [(e.tool_name, e.action, e.input) for e in ev] == [("delete_file", "block", {"path": "/etc/passwd"})]


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_json_escaped_type_and_name_are_decoded_before_matching(h: ProxyHarness, dialect: str, stream: bool) -> None:
    def esc(b: bytes) -> bytes:
        return (
            b.replace(b'"tool_use"', b'"tool\\u005fuse"')
            .replace(b'"tool_calls"', b'"tool\\u005fcalls"')
            .replace(b'"function_call"', b'"function\\u005fcall"')
            .replace(b'"delete_file"', b'"delete\\u005ffile"')
        )

    chunks = [esc(e) for e in GEN[dialect](DELETE)] if stream else [esc(orjson.dumps(BODY[dialect](DELETE)))]
    assert b"tool_use" not in b"".join(chunks) and b"delete_file" not in b"".join(chunks)
    h.fake.add("esc", Scenario(raw=Raw(chunks, SSE if stream else JSON)))
    assert_replaced(agent_view(h, dialect, "esc", stream))
    assert [e.tool_name for e in intercepts(h)] == ["delete_file"]


def test_tool_use_inside_message_start_is_decided(h: ProxyHarness) -> None:
    msg = {**anthropic_message(DELETE, "m"), "stop_reason": None}
    events = [
        sse_event("message_start", {"type": "message_start", "message": msg}),
        sse_event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 3}}),
        sse_event("message_stop", {"type": "message_stop"}),
    ]
    h.fake.add("ms", Scenario(raw=Raw(events, SSE)))
    view = agent_view(h, "anthropic", "ms", True)
    assert_replaced(view)
    assert [(e.tool_name, e.input) for e in intercepts(h)] == [("delete_file", {"path": "/etc/passwd"})]


# ------------------------------------------------------------------ encodings, media types, statuses


def _encode(body: bytes, encoding: str) -> bytes:
    for c in [t.strip() for t in encoding.split(",")]:
        if c in ("gzip", "x-gzip"):
            body = gzip.compress(body)
        elif c == "br":
            body = brotli.compress(body)
        elif c == "deflate":
            body = zlib.compress(body)
    return body


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("encoding", ["br", "gzip, gzip", "x-gzip", "gzip, br", "deflate"])
def test_every_content_coding_is_decoded_and_decided(h: ProxyHarness, encoding: str, stream: bool) -> None:
    plain = b"".join(GEN["anthropic"](DELETE)) if stream else orjson.dumps(BODY["anthropic"](DELETE))
    body = _encode(plain, encoding)
    h.fake.add("enc", Scenario(raw=Raw([body[:100], body[100:]], {**(SSE if stream else JSON), "Content-Encoding": encoding})))
    assert_replaced(agent_view(h, "anthropic", "enc", stream))


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_undecodable_content_coding_is_refused(h: ProxyHarness, stream: bool) -> None:
    plain = b"".join(GEN["anthropic"](DELETE)) if stream else orjson.dumps(BODY["anthropic"](DELETE))
    h.fake.add("zstd", Scenario(raw=Raw([plain], {**(SSE if stream else JSON), "Content-Encoding": "zstd"})))
    assert_refused(h, "anthropic", "zstd", stream)
    assert "unsupported content-encoding" in (last_request(h)["error"] or "")


@pytest.mark.parametrize("content_type", ["TEXT/EVENT-STREAM", "Text/Event-Stream; charset=UTF-8", " text/event-stream "])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_media_type_is_matched_case_insensitively(h: ProxyHarness, dialect: str, content_type: str) -> None:
    h.fake.add("ct", Scenario(raw=Raw(GEN[dialect](DELETE), {"Content-Type": content_type})))
    assert_replaced(agent_view(h, dialect, "ct", True))


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("status", [201, 203, 299])
def test_every_2xx_status_is_inspected(h: ProxyHarness, status: int, stream: bool) -> None:
    body = GEN["openai"](DELETE) if stream else [orjson.dumps(BODY["openai"](DELETE))]
    h.fake.add("st", Scenario(raw=Raw(body, SSE if stream else JSON, status=status)))
    assert_replaced(agent_view(h, "openai", "st", stream))


def test_event_stream_sent_as_json_to_a_streaming_client_is_intercepted(h: ProxyHarness) -> None:
    h.fake.add("sseasjson", Scenario(raw=Raw(GEN["anthropic"](DELETE), JSON)))
    assert_replaced(agent_view(h, "anthropic", "sseasjson", True))


def test_json_sent_as_event_stream_to_a_plain_client_is_decided(h: ProxyHarness) -> None:
    h.fake.add("jsonassse", Scenario(raw=Raw([b"\n  " + orjson.dumps(BODY["anthropic"](DELETE))], SSE)))
    assert_replaced(agent_view(h, "anthropic", "jsonassse", False))


def test_utf16_json_body_is_read_like_json_loads_reads_it(h: ProxyHarness) -> None:
    body = json.dumps(BODY["openai"](DELETE)).encode("utf-16-le")
    h.fake.add("u16", Scenario(raw=Raw([body], JSON)))
    assert_replaced(agent_view(h, "openai", "u16", False))


def test_redirect_on_an_inspected_path_is_refused(h: ProxyHarness) -> None:
    h.fake.add("redir", Scenario(raw=Raw([b""], {"Location": "http://127.0.0.1:9/v1/messages", "Content-Length": "0"}, status=307)))
    with pytest.raises(anthropic.APIStatusError) as ei:
        agent_view(h, "anthropic", "redir", False)
    assert ei.value.status_code == 502 and "redirect" in str(ei.value)


# ------------------------------------------------------------------ how the SDKs assemble calls


def test_openai_tool_name_split_across_chunks_is_decided_whole(h: ProxyHarness) -> None:
    base = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return b"data: " + orjson.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + b"\n\n"

    chunks = [
        chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": "call_s", "type": "function", "function": {"name": "delete_", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "file"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"/etc/passwd"}'}}]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]
    h.fake.add("split", Scenario(raw=Raw(chunks, SSE)))
    view = agent_view(h, "openai", "split", True)
    assert_replaced(view)
    assert [(e.tool_name, e.tool_call_id, e.input) for e in intercepts(h)] == [("delete_file", "call_s", {"path": "/etc/passwd"})]


def _responses_call(name_added: str, name_done: str, kind: str = "function_call") -> list[bytes]:
    argkey = "arguments" if kind == "function_call" else "input"
    item = {"id": "fc_1", "type": kind, "status": "in_progress", argkey: "", "call_id": "call_r1", "name": name_added}
    args = '{"path":"/etc/passwd"}' if kind == "function_call" else "rm -rf /etc"
    delta_t = "response.function_call_arguments.delta" if kind == "function_call" else "response.custom_tool_call_input.delta"
    done_item = {**item, "status": "completed", argkey: args, "name": name_done}
    sc = Scenario([])
    seq = iter(range(100))
    evs = [
        {"type": "response.created", "response": response_object(sc, "m", "in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": delta_t, "item_id": "fc_1", "output_index": 0, "delta": args},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": response_object(sc, "m", "completed", [done_item])},
    ]
    return [sse_event(e["type"], {**e, "sequence_number": next(seq)}) for e in evs]


def test_responses_item_renamed_between_added_and_done_is_refused(h: ProxyHarness) -> None:
    h.fake.add("rename", Scenario(raw=Raw(_responses_call("get_weather", "delete_file"), SSE)))
    assert_refused(h, "responses", "rename", True)
    assert "changed between output_item.added and output_item.done" in (last_request(h)["error"] or "")


def test_responses_call_only_in_response_completed_is_decided(h: ProxyHarness) -> None:
    events = response_events(Scenario([text("Done.")]), "m")
    call = {"id": "fc_9", "type": "function_call", "status": "completed", "arguments": '{"path":"/etc/passwd"}', "call_id": "call_only", "name": "delete_file"}
    last = orjson.loads(events[-1].split(b"data: ", 1)[1])
    last["response"]["output"].append(call)
    events[-1] = sse_event("response.completed", last)
    h.fake.add("onlydone", Scenario(raw=Raw(events, SSE)))
    view = agent_view(h, "responses", "onlydone", True)
    assert_replaced(view)
    assert [(e.tool_name, e.input) for e in intercepts(h)] == [("delete_file", {"path": "/etc/passwd"})]


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_responses_custom_tool_call_is_decided(h: ProxyHarness, stream: bool) -> None:
    if stream:
        chunks = _responses_call("delete_file", "delete_file", "custom_tool_call")
    else:
        item = {"id": "ctc_1", "type": "custom_tool_call", "status": "completed", "input": "rm -rf /etc", "call_id": "call_c", "name": "delete_file"}
        chunks = [orjson.dumps(response_object(Scenario([]), "m", "completed", [item]))]
    h.fake.add("custom", Scenario(raw=Raw(chunks, SSE if stream else JSON)))
    assert_replaced(agent_view(h, "responses", "custom", stream))
    assert [(e.tool_name, e.input) for e in intercepts(h)] == [("delete_file", "rm -rf /etc")]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_streamed_tool_call_is_judged_on_its_complete_arguments(h: ProxyHarness, dialect: str) -> None:
    sc = Scenario([text("Sure."), tool("get_weather", "call_w", {"city": "Zürich", "days": [1, 2, 3]})], split_text=2)
    h.fake.add("args", sc)
    view = agent_view(h, dialect, "args", True)
    assert view["tools"] == [("get_weather", {"city": "Zürich", "days": [1, 2, 3]})]
    assert [(e.tool_name, e.action, e.input) for e in intercepts(h)] == [("get_weather", "allow", {"city": "Zürich", "days": [1, 2, 3]})]


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("dialect", DIALECTS)
async def test_async_clients_get_the_same_protection(h: ProxyHarness, dialect: str, stream: bool) -> None:
    if stream:
        chunks = [e.replace(b"\n", b"\r").replace(b'"delete_file"', b'"delete\\u005ffile"') for e in GEN[dialect](DELETE)]
    else:
        chunks = [orjson.dumps(BODY[dialect](DELETE)).replace(b'"delete_file"', b'"delete\\u005ffile"')]
    body = _encode(b"".join(chunks), "br")
    h.fake.add("async", Scenario(raw=Raw([body], {**(SSE if stream else JSON), "Content-Type": "Text/Event-Stream" if stream else "application/json", "Content-Encoding": "br"}, status=201)))
    assert_replaced(await agent_view_async(h, dialect, "async", stream))


# ------------------------------------------------------------------ size caps


def _bomb(total: int) -> bytes:
    member = gzip.compress(b"\0" * (16 << 20))  # 16 MiB of zeros in ~16 KiB; members concatenate
    return member * (total // (16 << 20))


def test_gzip_bomb_is_refused_at_the_decode_cap(h: ProxyHarness) -> None:
    bomb = _bomb(1 << 30)  # ~1 MB on the wire, 1 GiB decoded
    assert len(bomb) < 1_100_000
    h.fake.add("bomb", Scenario(raw=Raw([bomb], {**JSON, "Content-Encoding": "gzip"})))
    with pytest.raises(anthropic.APIStatusError) as ei:
        agent_view(h, "anthropic", "bomb", False)
    assert ei.value.status_code == 502
    assert f"decoded body larger than {MAX_RESPONSE_BYTES} bytes" in str(ei.value)


def test_gzip_bomb_stream_is_refused_within_the_event_limit(h: ProxyHarness) -> None:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    stream = z.compress(b'event: ping\ndata: {"type":"ping"}\n\n') + z.compress(b"\0" * (256 << 20)) + z.flush()
    assert len(stream) < 300_000
    h.fake.add("sbomb", Scenario(raw=Raw([stream], {**SSE, "Content-Encoding": "gzip"})))
    assert_refused(h, "anthropic", "sbomb", True)
    # decoded in bounded pieces: refused as soon as one event outgrew its limit, not after 256 MiB
    assert "max_sse_line_bytes" in (last_request(h)["error"] or "")


# ------------------------------------------------------------------ paths


@pytest.mark.parametrize(
    ("path", "dialect"),
    [
        ("//v1/messages", "anthropic"),
        ("/v1//messages", "anthropic"),
        ("/v1/./messages", "anthropic"),
        ("/V1/messages", "anthropic"),
        ("/v1/%6Dessages", "anthropic"),
        ("/v1/x/../messages/", "anthropic"),
        ("/v1/messages?beta=true", "anthropic"),
        ("/V1/CHAT//completions", "openai"),
        ("/v1/./responses;x=1", "responses"),
    ],
)
def test_dialect_path_variants_are_routed_intercepted_and_redacted(h: ProxyHarness, path: str, dialect: str) -> None:
    import http.client

    h.fake.add("pathv", Scenario([text("Ok."), tool("delete_file", "call_p", {"path": "/"})]))
    body = orjson.dumps({"model": "pathv", "max_tokens": 5, "messages": [{"role": "user", "content": "mail jane.doe@example.com"}], "input": "x"})
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=10)
    conn.request("POST", path, body=body, headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    assert r.status == 200
    assert BLOCKED.encode() in data and b'"delete_file"' not in data.replace(BLOCKED.encode(), b"")
    sent = h.fake.requests[-1]
    canonical = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "responses": "/v1/responses"}[dialect]
    query = path.partition("?")[2]
    assert sent["path"] == canonical + (f"?{query}" if query else "")  # upstream serves exactly what was inspected
    assert b"jane.doe@example.com" not in sent["raw"] and b"[REDACTED:email]" in sent["raw"]
    assert last_request(h)["dialect"] == {"responses": "openai-responses"}.get(dialect, dialect)
