"""The SSE interceptor on its own: chunking, malformed input, byte identity.

Decisions come from the real pipeline (MCPService) through the proxy's own
ToolJudge; the upstream bytes are the fake upstream's documented formats.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from fake_llm_upstream import Scenario, anthropic_events, chat_chunks, response_events, text, tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsh.agent.core.mcp.service import MCPService
from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.decider import LocalDecider, NameGate, ToolJudge
from agentsh.proxy.sse import INTERCEPTORS, Counters, SSERelay

TOOLS = [
    {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object"}},
    {"name": "delete_file", "description": "Delete.", "inputSchema": {"type": "object"}},
]
GEN = {"anthropic": anthropic_events, "openai": lambda sc, m: chat_chunks(sc, m, True), "openai-responses": response_events}


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pol = Policy.model_validate(
        {"mcp": {"denied_tools": [{"tool": "delete_*"}], "inspection": {"registry": {"persistent": False}}}}
    )
    svc = MCPService(pol, tmp_path_factory.mktemp("sse"), lambda ev: True)
    svc.register_tools("files", "stdio", None, TOOLS)
    j = ToolJudge(LocalDecider(svc), NameGate(None, False), lambda ev: None)

    async def fn(name: str, call_id: str, args: Any) -> Any:
        return await j.judge(name=name, call_id=call_id, arguments=args, request_id="r", dialect="anthropic")

    return fn


def relay_run(dialect: str, judge: Any, chunks: list[bytes], max_bytes: int = 1 << 20) -> tuple[bytes, Counters, SSERelay]:
    out: list[bytes] = []
    c = Counters()

    async def write(b: bytes) -> None:
        out.append(b)

    async def go() -> SSERelay:
        r = SSERelay(INTERCEPTORS[dialect](judge, c), write, max_bytes)
        for ch in chunks:
            await r.feed(ch)
        await r.finish()
        return r

    r = asyncio.run(go())
    return b"".join(out), c, r


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    pts = sorted({min(max(x, 0), len(data)) for x in cuts})
    out, prev = [], 0
    for p in pts:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return [x for x in out if x]


MIXED = Scenario([text("Let me do two things."), tool("delete_file", "call_1", {"path": "/tmp/a b"}), tool("get_weather", "call_2", {"city": "Zürich"})], split_text=3)


@pytest.mark.parametrize("dialect", list(GEN))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=40))
def test_any_chunk_split_gives_the_same_client_output(judge: Any, dialect: str, cuts: list[int]) -> None:
    data = b"".join(GEN[dialect](MIXED, "m"))
    whole, c1, _ = relay_run(dialect, judge, [data])
    parts, c2, _ = relay_run(dialect, judge, split(data, cuts))
    assert parts == whole
    assert (c1.tool_calls, c1.blocked) == (c2.tool_calls, c2.blocked) == (2, 1)
    assert b"delete_file" in whole and b"[agentsh] Tool 'delete_file' blocked by policy" in whole


@pytest.mark.parametrize("dialect", list(GEN))
def test_crlf_framing_is_kept_for_synthetic_events(judge: Any, dialect: str) -> None:
    data = b"".join(GEN[dialect](MIXED, "m")).replace(b"\n", b"\r\n")
    out, c, _ = relay_run(dialect, judge, [data])
    assert c.blocked == 1
    assert b"\n" not in out.replace(b"\r\n", b"")  # every line ending is still CRLF


TEXTS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@pytest.mark.parametrize("dialect", list(GEN))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS | st.sampled_from(["tool_use", '"tool_calls"', "function_call", "data: x\n\n"]), min_size=1, max_size=8), cuts=st.lists(st.integers(0, 4000), max_size=10))
def test_stream_without_tool_calls_is_byte_identical(judge: Any, dialect: str, texts: list[str], cuts: list[int]) -> None:
    sc = Scenario([text(t) for t in texts if t] or [text("x")], split_text=5)
    data = b"".join(GEN[dialect](sc, "m"))
    out, c, _ = relay_run(dialect, judge, split(data, cuts))
    assert out == data
    assert c.tool_calls == 0


HARMLESS = [
    b": keep-alive comment\n\n",
    b"retry: 100\n\n",
    b'event: weird\ndata: {"plain": "words"}\n\n',  # the OpenAI SDKs parse every data line: JSON
]
CANDIDATES = [  # could carry a tool call (a type or key name of every dialect) but cannot be read
    b'event: content_block_start\ndata: {"type":"content_block_start","content_block":{"type":"tool_use","tool_calls":1,"function_call":2\n\n',
    b"event: message_start\ndata: message_start tool_calls function_call not json\n\n",
    b"event: content_block_start\ndata: \xff\xfe content_block_start tool_calls function_call\n\n",
]


def _error_end(dialect: str, out: bytes) -> bool:
    last = out.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    return out.endswith(b"\n\n") and b"agentsh proxy refused the response" in last


@pytest.mark.parametrize("dialect", list(GEN))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_harmless_junk_passes_and_unreadable_candidates_refuse_the_stream(judge: Any, dialect: str, data: Any) -> None:
    events = GEN[dialect](MIXED, "m")
    junk = data.draw(st.lists(st.tuples(st.integers(0, len(events)), st.sampled_from(HARMLESS + CANDIDATES)), max_size=4))
    seq = list(events)
    for pos, g in sorted(junk, key=lambda x: -x[0]):
        seq.insert(pos, g)
    cuts = data.draw(st.lists(st.integers(0, 8000), max_size=10))
    out, c, r = relay_run(dialect, judge, split(b"".join(seq), cuts))
    if any(g in CANDIDATES for _, g in junk):
        assert r.refused is not None
        assert _error_end(dialect, out)
        first = min(pos for pos, g in junk if g in CANDIDATES)
        if events[first:]:
            assert b"".join(events[first:]) not in out  # nothing after the unreadable event went out
    else:
        assert r.refused is None
        for _, g in junk:
            assert g in out  # forwarded unchanged
        assert c.blocked == 1 and c.malformed == 0


def test_over_long_event_refuses_the_stream(judge: Any) -> None:
    big = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + b"a" * 5000 + b'"}}\n\n'
    events = anthropic_events(MIXED, "m")
    data = events[0] + big + b"".join(events[1:])
    out, c, r = relay_run("anthropic", judge, [data[i : i + 700] for i in range(0, len(data), 700)], max_bytes=1024)
    assert r.refused is not None and "max_sse_line_bytes" in r.refused
    assert out.startswith(events[0]) and b"a" * 5000 not in out
    assert out.endswith(b"\n\n") and b"event: error" in out
    assert c.tool_calls == 0  # nothing after the over-long event was looked at or passed


def test_anthropic_blocked_block_keeps_index_and_drops_deltas(judge: Any) -> None:
    out, _c, _ = relay_run("anthropic", judge, [b"".join(anthropic_events(MIXED, "m"))])
    evs = [orjson.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ")]
    starts = [(e["index"], e["content_block"]["type"]) for e in evs if e["type"] == "content_block_start"]
    assert starts == [(0, "text"), (1, "text"), (2, "tool_use")]
    assert not any(e.get("index") == 1 and e.get("delta", {}).get("type") == "input_json_delta" for e in evs)
    assert sum(1 for e in evs if e["type"] == "content_block_stop" and e["index"] == 1) == 1
    assert [e["delta"]["stop_reason"] for e in evs if e["type"] == "message_delta"] == ["tool_use"]


def test_openai_partial_block_renumbers_allowed_tool_index(judge: Any) -> None:
    out, _, _ = relay_run("openai", judge, [b"".join(chat_chunks(MIXED, "m", False))])
    idx = set()
    for line in out.split(b"\n"):
        if line.startswith(b"data: {"):
            for ch in orjson.loads(line[6:])["choices"]:
                for tc in ch["delta"].get("tool_calls") or []:
                    idx.add(tc["index"])
                    assert tc.get("id", "call_2") == "call_2"
    assert idx == {0}


def test_responses_sequence_numbers_stay_contiguous(judge: Any) -> None:
    out, c, _ = relay_run("openai-responses", judge, [b"".join(response_events(MIXED, "m"))])
    seqs = [orjson.loads(line[6:])["sequence_number"] for line in out.split(b"\n") if line.startswith(b"data: ")]
    assert seqs == list(range(len(seqs)))
    assert c.blocked == 1
    done = next(orjson.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ") and b"response.completed" in line)
    assert [i["type"] for i in done["response"]["output"]] == ["message", "message", "function_call"]


ALLOWED = Scenario([text("Checking the weather."), tool("get_weather", "call_9", {"city": "Oslo", "days": 3})], split_text=3)


@pytest.mark.parametrize("dialect", list(GEN))
def test_allowed_held_tool_call_is_released_byte_identical(judge: Any, dialect: str) -> None:
    data = b"".join(GEN[dialect](ALLOWED, "m"))
    out, c, r = relay_run(dialect, judge, split(data, list(range(0, len(data), 13))))
    assert out == data
    assert (c.tool_calls, c.blocked, r.refused) == (1, 0, None)


@pytest.mark.parametrize("dialect", list(GEN))
def test_text_before_a_tool_call_is_written_before_the_decision(dialect: str) -> None:
    events = GEN[dialect](ALLOWED, "m")
    data = b"".join(events)
    written: list[bytes] = []
    seen_at_decision: list[bytes] = []

    async def slow_judge(name: str, call_id: str, args: Any) -> Any:
        seen_at_decision.append(b"".join(written))
        await asyncio.sleep(0.01)
        return None

    async def write(b: bytes) -> None:
        written.append(b)

    async def go() -> None:
        r = SSERelay(INTERCEPTORS[dialect](slow_judge, Counters()), write, 1 << 20)
        await r.feed(data)
        await r.finish()

    asyncio.run(go())
    first_call = next(i for i, e in enumerate(events) if b"get_weather" in e)
    assert seen_at_decision and seen_at_decision[0].startswith(b"".join(events[:first_call]))
    assert b"get_weather" not in seen_at_decision[0]  # the call itself was held until decided
    assert b"".join(written) == data
