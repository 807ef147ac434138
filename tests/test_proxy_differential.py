"""Differential tests: the proxy's stream interceptor against the official SDKs' own readers.

Hypothesis generates streams for each dialect, well-formed and hostile
(random chunk splits, every line-ending form, multi-line ``data:``, comments,
JSON escapes in type names, keys and tool names, tool names split across
chunks, interleaved choices, tool calls inside ``message_start`` or only in
``response.completed``, indexes out of order, fragments after a call was
complete, items renamed between their events, ...). The same bytes go
through the interceptor and, before and after it, through the SDKs' real
decoders and accumulators (``anthropic.Stream`` + ``MessageStream``,
``openai.Stream`` + ``ChatCompletionStream`` / ``ResponseStream``), and:

* every tool call the SDK hands to the agent after the proxy was decided:
  the judge was called with exactly that name and those arguments, and
  allowed it; a blocked call never survives;
* when the proxy did not refuse, every tool call the SDK would have built
  from the upstream bytes was decided;
* a well-formed stream is never refused, and the agent gets the same tool
  calls as without the proxy, minus the blocked ones.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
import orjson
import pytest
from anthropic.lib.streaming._messages import MessageStream
from anthropic.types import RawMessageStreamEvent
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from openai import omit
from openai.lib.streaming.chat._completions import ChatCompletionStream
from openai.lib.streaming.responses._responses import ResponseStream
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from agentsh.agent.core.mcp.types import Decision
from agentsh.proxy.rewrite import parse_args
from agentsh.proxy.sse import INTERCEPTORS, Counters, SSERelay

BLOCK = frozenset({"delete_file", "delete_all"})
NAMES = st.sampled_from(["delete_file", "get_weather", "Bash", "delete_all", "mcp__fs__delete_file"])
WORD = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
ARGS = st.dictionaries(st.sampled_from(["path", "city", "n", "tags"]), st.one_of(WORD, st.integers(-5, 10**6), st.lists(WORD, max_size=3)), max_size=3)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------ judge, relay, SDK readers


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    async def __call__(self, name: str, call_id: str, args: Any) -> Decision | None:
        self.calls.append((name, call_id, args))
        if name in BLOCK or name.endswith("__delete_file"):
            return Decision(action="block", reason="denied in test", known=True, tool_name=name)
        return None

    def judged(self) -> list[tuple[str, str]]:
        return [(n, _norm(a)) for n, _, a in self.calls]


def _norm(args: Any) -> str:
    return orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode() if not isinstance(args, str) else "s:" + args


def blocked(name: str) -> bool:
    return name in BLOCK or name.endswith("__delete_file")


def relay(dialect: str, chunks: list[bytes], judge: Recorder) -> tuple[list[bytes], SSERelay]:
    out: list[bytes] = []

    async def write(b: bytes) -> None:
        out.append(b)

    async def go() -> SSERelay:
        r = SSERelay(INTERCEPTORS[dialect](judge, Counters()), write, 1 << 20)
        for c in chunks:
            await r.feed(c)
        await r.finish()
        return r

    return out, asyncio.run(go())


AC = anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9")
OC = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")


def _response(chunks: list[bytes]) -> httpx2.Response:
    return httpx2.Response(200, content=iter(chunks), request=httpx2.Request("POST", "http://127.0.0.1:9/"))


def sdk_calls(dialect: str, chunks: list[bytes]) -> list[tuple[str, str]] | None:
    """The tool calls the SDK's accumulator hands to the agent, or None when the SDK raises."""
    try:
        if dialect == "anthropic":
            raw = anthropic.Stream(cast_to=RawMessageStreamEvent, response=_response(chunks), client=AC)
            m = MessageStream(raw, output_format=anthropic.NOT_GIVEN).get_final_message()
            return [(b.name, _norm(b.input)) for b in m.content if b.type == "tool_use"]
        if dialect == "openai":
            raw = openai.Stream(cast_to=ChatCompletionChunk, response=_response(chunks), client=OC)
            c = ChatCompletionStream(raw_stream=raw, response_format=omit, input_tools=omit).get_final_completion()
            return [
                (t.function.name, _norm(parse_args(t.function.arguments)))
                for ch in c.choices
                for t in ch.message.tool_calls or []
            ]
        raw = openai.Stream(cast_to=ResponseStreamEvent, response=_response(chunks), client=OC)
        r = ResponseStream(raw_stream=raw, text_format=omit, input_tools=omit, starting_after=None).get_final_response()
        out = []
        for item in r.output:
            if item.type == "function_call":
                out.append((item.name, _norm(parse_args(item.arguments))))
            elif item.type == "custom_tool_call":
                out.append((item.name, _norm(item.input)))
        return out
    except Exception:  # the SDK refuses the stream: the agent gets no tool call from it
        return None


# ------------------------------------------------------------------ stream building


@dataclass
class Gen:
    events: list[tuple[str | None, Any]] = field(default_factory=list)
    hostile: bool = False


def escape_some(data: bytes, draw: Any) -> bytes:
    """Spell type names, keys and tool names with JSON escapes (same JSON value)."""
    for word in (b"tool_use", b"tool_calls", b"function_call", b"custom_tool_call", b"delete_file", b"content_block_start", b"input_json_delta", b"message_start"):
        if word in data and draw(st.integers(0, 3)) == 0:
            i = draw(st.integers(0, len(word) - 1))
            data = data.replace(b'"' + word, b'"' + word[:i] + b"\\u%04x" % word[i] + word[i + 1 :])
    return data


def encode(g: Gen, draw: Any) -> bytes:
    out: list[bytes] = []
    for name, data in g.events:
        eol = draw(st.sampled_from([b"\n", b"\r", b"\r\n"]))
        if draw(st.integers(0, 9)) == 0:
            out.append(b": keep-alive" + eol + eol)
        raw = data if isinstance(data, bytes) else orjson.dumps(data)
        raw = escape_some(raw, draw)
        head = b"event: " + name.encode() + eol if name is not None else b""
        if draw(st.integers(0, 6)) == 0 and not isinstance(data, bytes):
            # the same JSON over several data: lines (the SDKs join them with LF)
            lines = json.dumps(json.loads(raw), indent=1).encode().split(b"\n")
            body = b"".join(b"data: " + ln + eol for ln in lines)
        else:
            body = b"data: " + raw + eol
        out.append(head + body + eol)
    return b"".join(out)


def split(data: bytes, draw: Any) -> list[bytes]:
    cuts = sorted(set(draw(st.lists(st.integers(0, max(len(data) - 1, 0)), max_size=25))))
    parts, prev = [], 0
    for c in cuts:
        parts.append(data[prev:c])
        prev = c
    parts.append(data[prev:])
    return [p for p in parts if p]


def pieces(s: str, draw: Any) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(s)), max_size=4))))
    out, prev = [], 0
    for c in cuts:
        out.append(s[prev:c])
        prev = c
    out.append(s[prev:])
    return out


# ------------------------------------------------------------------ Anthropic


def anthropic_gen(draw: Any) -> Gen:
    g = Gen()
    blocks = draw(st.lists(st.one_of(st.tuples(st.just("text"), WORD), st.tuples(NAMES, ARGS)), min_size=1, max_size=4))
    start_tools = draw(st.lists(st.tuples(NAMES, ARGS), max_size=1)) if draw(st.integers(0, 4)) == 0 else []
    content = [{"type": "tool_use", "id": f"toolu_s{i}", "name": n, "input": a} for i, (n, a) in enumerate(start_tools)]
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content, "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    ev = g.events
    ev.append(("message_start", {"type": "message_start", "message": msg}))
    tools = bool(start_tools)
    for i, b in enumerate(blocks):
        idx = i + len(content)
        if b[0] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}))
            for p in pieces(b[1], draw):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": p}}))
        else:
            tools = True
            name, args = b
            start_input = draw(st.sampled_from([{}, {"path": "/from-start"}]))
            ev.append(("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": start_input}}))
            # no delta, or only empty ones: the SDK keeps the start's input
            parts = pieces(json.dumps(args), draw) if draw(st.integers(0, 4)) else draw(st.sampled_from([[], [""], ["", ""]]))
            for p in parts:
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {"type": "input_json_delta", "partial_json": p}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": idx}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 9}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    mutation = draw(st.sampled_from(["late_input", "bad_index", "no_event_name", "renamed_event", "negative_index", "second_start"])) if draw(st.booleans()) else "none"
    event(f"mutation={mutation}")
    n = len(ev)
    if mutation == "late_input":
        tool_idx = [e[1]["index"] for e in ev if e[1].get("type") == "content_block_start" and e[1]["content_block"]["type"] == "tool_use"]
        if tool_idx:
            ev.insert(n - 2, ("content_block_delta", {"type": "content_block_delta", "index": tool_idx[0], "delta": {"type": "input_json_delta", "partial_json": ', "path": "/etc/shadow"}'}}))
    elif mutation == "bad_index":
        k = next(i for i, e in enumerate(ev) if e[1].get("type") == "content_block_start")
        ev[k][1]["index"] += draw(st.sampled_from([1, 5, -1]))
    elif mutation in ("no_event_name", "renamed_event"):
        k = draw(st.integers(0, n - 1))
        ev[k] = (None if mutation == "no_event_name" else draw(st.sampled_from(["ping", "content_block_delta", "foo"])), ev[k][1])
    elif mutation == "negative_index":
        ev.insert(n - 2, ("content_block_delta", {"type": "content_block_delta", "index": -1, "delta": {"type": "input_json_delta", "partial_json": "{}"}}))
    elif mutation == "second_start":
        ev.insert(draw(st.integers(1, n - 1)), ("message_start", {"type": "message_start", "message": {**msg, "content": [{"type": "tool_use", "id": "toolu_x", "name": "delete_file", "input": {"path": "/"}}]}}))
    g.hostile = mutation != "none"
    return g


# ------------------------------------------------------------------ OpenAI chat


def chat_gen(draw: Any) -> Gen:
    g = Gen()
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    nchoices = draw(st.integers(1, 2))
    per_choice: list[list[dict[str, Any]]] = []
    for ci in range(nchoices):
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for p in pieces(draw(WORD), draw):
            deltas.append({"content": p})
        calls = draw(st.lists(st.tuples(NAMES, ARGS), max_size=3))
        for t, (name, args) in enumerate(calls):
            nparts = pieces(name, draw)
            frags = [{"index": t, "id": f"call_{ci}{t}", "type": "function", "function": {"name": nparts[0], "arguments": ""}}]
            frags += [{"index": t, "function": {"name": p}} for p in nparts[1:] if p]
            if draw(st.integers(0, 4)):  # else no arguments at all: the SDK hands over ""
                frags += [{"index": t, "function": {"arguments": p}} for p in pieces(json.dumps(args), draw)]
            while frags:  # one or several fragments per chunk
                k = draw(st.integers(1, 2))
                deltas.append({"tool_calls": frags[:k]})
                frags = frags[k:]
        deltas.append({"__finish": "tool_calls" if calls else "stop"})
        per_choice.append(deltas)
    order: list[int] = [0]  # a choice first appears after the ones before it (else the SDK itself fails)
    left = [len(d) for d in per_choice]
    left[0] -= 1
    while any(left):
        ci = draw(st.sampled_from([i for i, n in enumerate(left) if n]))
        order.append(ci)
        left[ci] -= 1
    pos = [0] * nchoices
    for ci in order:
        d = per_choice[ci][pos[ci]]
        pos[ci] += 1
        fin = d.pop("__finish", None)
        g.events.append((None, {**base, "choices": [{"index": ci, "delta": d, "logprobs": None, "finish_reason": fin}]}))
    g.events.append((None, {**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}))
    g.events.append((None, b"[DONE]"))
    mutation = draw(st.sampled_from(["late_fragment", "choice_gap", "tool_gap", "not_a_chunk", "thread_event"])) if draw(st.booleans()) else "none"
    event(f"mutation={mutation}")
    ev = g.events
    n = len(ev)
    if mutation == "late_fragment":
        ev.insert(n - 2, (None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "_all", "arguments": "x"}}]}, "finish_reason": None}]}))
    elif mutation == "choice_gap":
        ev.insert(draw(st.integers(0, n - 2)), (None, {**base, "choices": [{"index": 3, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "delete_file", "arguments": "{}"}}]}, "finish_reason": None}]}))
    elif mutation == "tool_gap":
        ev.insert(draw(st.integers(0, n - 2)), (None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 7, "id": "c", "function": {"name": "delete_file", "arguments": "{}"}}]}, "finish_reason": None}]}))
    elif mutation == "not_a_chunk":
        k = draw(st.integers(0, n - 3))
        ev[k] = (None, {**ev[k][1], "object": ""})
    elif mutation == "thread_event":
        k = draw(st.integers(0, n - 3))
        ev[k] = ("thread.message.delta", ev[k][1])
    g.hostile = mutation != "none"
    return g


# ------------------------------------------------------------------ OpenAI Responses


def responses_gen(draw: Any) -> Gen:
    g = Gen()
    items = draw(st.lists(st.one_of(st.tuples(st.just("text"), WORD), st.tuples(st.sampled_from(["function_call", "custom_tool_call"]), NAMES, ARGS)), min_size=1, max_size=3))
    resp = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": [], "tools": [], "parallel_tool_calls": True, "tool_choice": "auto"}
    ev: list[dict[str, Any]] = [{"type": "response.created", "response": resp}]
    final: list[dict[str, Any]] = []
    for oi, it in enumerate(items):
        if it[0] == "text":
            mid = f"msg_{oi}"
            ev.append({"type": "response.output_item.added", "output_index": oi, "item": {"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}})
            part = {"type": "output_text", "text": "", "annotations": []}
            ev.append({"type": "response.content_part.added", "item_id": mid, "output_index": oi, "content_index": 0, "part": part})
            for p in pieces(it[1], draw):
                ev.append({"type": "response.output_text.delta", "item_id": mid, "output_index": oi, "content_index": 0, "delta": p})
            ev.append({"type": "response.output_text.done", "item_id": mid, "output_index": oi, "content_index": 0, "text": it[1]})
            ev.append({"type": "response.content_part.done", "item_id": mid, "output_index": oi, "content_index": 0, "part": {**part, "text": it[1]}})
            done = {"id": mid, "type": "message", "status": "completed", "role": "assistant", "content": [{**part, "text": it[1]}]}
        else:
            kind, name, args = it
            key = "arguments" if kind == "function_call" else "input"
            arg = json.dumps(args)
            added = {"id": f"fc_{oi}", "type": kind, "status": "in_progress", key: "", "call_id": f"call_{oi}", "name": name}
            ev.append({"type": "response.output_item.added", "output_index": oi, "item": added})
            dt = "response.function_call_arguments" if kind == "function_call" else "response.custom_tool_call_input"
            for p in pieces(arg, draw):
                ev.append({"type": dt + ".delta", "item_id": f"fc_{oi}", "output_index": oi, "delta": p})
            ev.append({"type": dt + ".done", "item_id": f"fc_{oi}", "output_index": oi, key: arg})
            done = {**added, "status": "completed", key: arg}
        ev.append({"type": "response.output_item.done", "output_index": oi, "item": done})
        final.append(done)
    extra = draw(st.sampled_from([None, None, None, ("function_call", "delete_file"), ("custom_tool_call", "get_weather")]))
    if extra is not None:
        key = "arguments" if extra[0] == "function_call" else "input"
        final = [*final, {"id": "fc_x", "type": extra[0], "status": "completed", key: '{"path":"/x"}', "call_id": "call_x", "name": extra[1]}]
    ev.append({"type": "response.completed", "response": {**resp, "status": "completed", "output": final if draw(st.integers(0, 5)) else None}})
    mutation = draw(st.sampled_from(["renamed", "late_delta", "duplicate_index"])) if draw(st.booleans()) else "none"
    event(f"mutation={mutation}")
    n = len(ev)
    tool_oi = [e["output_index"] for e in ev if e["type"] == "response.output_item.added" and e["item"]["type"] != "message"]
    if mutation == "renamed" and tool_oi:
        k = next(i for i, e in enumerate(ev) if e["type"] == "response.output_item.done" and e["output_index"] == tool_oi[0])
        ev[k] = {**ev[k], "item": {**ev[k]["item"], "name": "delete_file" if ev[k]["item"]["name"] != "delete_file" else "get_weather"}}
    elif mutation == "late_delta" and tool_oi:
        ev.insert(n - 1, {"type": "response.function_call_arguments.delta", "item_id": "fc", "output_index": tool_oi[0], "delta": "x"})
    elif mutation == "duplicate_index":
        ev.insert(n - 1, {"type": "response.output_item.added", "output_index": 0, "item": {"id": "fc_d", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_d", "name": "delete_file"}})
    g.hostile = mutation != "none"
    g.events = [(e["type"], {**e, "sequence_number": s}) for s, e in enumerate(ev)]
    return g


GENS = {"anthropic": anthropic_gen, "openai": chat_gen, "openai-responses": responses_gen}


# ------------------------------------------------------------------ the property


def check(dialect: str, data: Any) -> None:
    g = GENS[dialect](data.draw)
    raw = encode(g, data.draw)
    chunks = split(raw, data.draw)
    judge = Recorder()
    out, r = relay(dialect, chunks, judge)
    judged = judge.judged()
    event(f"refused={r.refused is not None}; hostile={g.hostile}")
    event(f"blocked calls={sum(blocked(n) for n, _ in judged) > 0}")
    after = sdk_calls(dialect, out)
    before = sdk_calls(dialect, chunks)
    for call in after or []:
        assert call in judged, (call, judged)
        assert not blocked(call[0]), call
    if r.refused is None:
        for call in before or []:
            assert call in judged, (call, judged)
    else:
        assert after is None, after  # the error event makes the SDK raise
    if not g.hostile:
        assert r.refused is None, r.refused
        assert before is not None
        assert after == [c for c in before if not blocked(c[0])]
        assert sorted(judged) == sorted(before)


@pytest.mark.parametrize("dialect", list(GENS))
@SETTINGS
@given(data=st.data())
def test_what_the_sdk_hands_to_the_agent_was_decided(dialect: str, data: Any) -> None:
    check(dialect, data)
