"""OpenAI Chat Completions (``POST /v1/chat/completions``): ``message.tool_calls``
(``function`` and ``custom``) and the legacy ``function_call``; ``role: tool`` /
``role: function`` messages in requests (docs/proxy.md "Dialects and routing").
Also the OpenAI provider, which the Responses dialect shares."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentsh.proxy.dialects.base import (
    Dialect,
    Judge,
    Provider,
    Refused,
    RewriteResult,
    ToolResult,
    UsageKeys,
    blocked_text,
    call_name,
    exact_path,
    parse_args,
    result_name,
    result_texts,
)
from agentsh.proxy.dialects.stream import (
    Call,
    Counters,
    Interceptor,
    Item,
    Parsed,
    escaped,
    fields,
    load,
)
from agentsh.proxy.dialects.stream import is_index as _int
from agentsh.proxy.dialects.stream import text_or_none as _text


def error_body(status: int, message: str) -> bytes:
    etype = "timeout" if status == 504 else "upstream_error"
    if 400 <= status < 500:
        etype = "invalid_request_error"
    return orjson.dumps({"error": {"message": message, "type": etype, "param": None, "code": None}})


PROVIDER = Provider(
    name="openai",
    default_base_url="https://api.openai.com",
    error_body=error_body,
    secret_headers=frozenset({"api-key", "openai-api-key"}),
    credential_headers=("authorization", "api-key"),
    client_env={"OPENAI_BASE_URL": "/v1"},
)


# ------------------------------------------------------------------ non-streaming


def _chat_call(tc: Any) -> tuple[str, Any] | None:
    """(name, arguments) of a chat ``tool_calls`` entry, or None when it is not a call."""
    if not isinstance(tc, dict):
        return None
    fn, cu = tc.get("function"), tc.get("custom")
    if fn is not None and cu is not None:
        raise Refused("tool call is both a function and a custom tool")
    if isinstance(fn, dict):
        return call_name(fn.get("name")), parse_args(fn.get("arguments"))
    if isinstance(cu, dict):
        return call_name(cu.get("name")), cu.get("input")
    if fn is not None or cu is not None:
        raise Refused("tool call function is not an object")
    return None


async def rewrite(doc: Any, judge: Judge) -> RewriteResult:
    """A blocked entry leaves ``message.tool_calls`` (the key dropped when empty) and its text is
    appended to ``message.content``; ``finish_reason`` becomes ``stop`` when every call of the
    choice was blocked."""
    if not isinstance(doc, dict):
        return RewriteResult(None)  # no SDK builds a message from it
    res = RewriteResult(None)
    choices = doc.get("choices")
    if choices is None:
        return res
    if not isinstance(choices, list):
        raise Refused("choices is not a list")
    changed = False
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        msg = choice.get("message")
        if not isinstance(msg, dict):
            continue
        texts: list[str] = []
        total = blocked = 0
        calls = msg.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise Refused("tool_calls is not a list")
        if isinstance(calls, list):
            kept: list[Any] = []
            for tc in calls:
                nc = _chat_call(tc)
                if nc is None:
                    kept.append(tc)
                    continue
                total += 1
                name, args = nc
                cid = tc.get("id")
                d = await judge(name, cid if isinstance(cid, str) else "", args)
                if d is not None and d.blocked:
                    blocked += 1
                    res.blocked_names.append(name)
                    texts.append(blocked_text(name, d.reason))
                else:
                    kept.append(tc)
            if blocked:
                if kept:
                    msg["tool_calls"] = kept
                else:
                    msg.pop("tool_calls", None)
        fc = msg.get("function_call")  # the legacy functions API
        if fc is not None and not isinstance(fc, dict):
            raise Refused("function_call is not an object")
        if isinstance(fc, dict) and fc.get("name") is not None:
            total += 1
            name = call_name(fc.get("name"))
            d = await judge(name, "", parse_args(fc.get("arguments")))
            if d is not None and d.blocked:
                blocked += 1
                res.blocked_names.append(name)
                texts.append(blocked_text(name, d.reason))
                msg.pop("function_call", None)
        res.tool_calls += total
        res.blocked += blocked
        if not blocked:
            continue
        changed = True
        prior = msg.get("content")
        joined = "\n".join(texts)
        msg["content"] = f"{prior}\n{joined}" if isinstance(prior, str) and prior else joined
        if blocked == total and choice.get("finish_reason") in ("tool_calls", "function_call"):
            choice["finish_reason"] = "stop"
    if changed:
        res.body = orjson.dumps(doc)
    return res


# ------------------------------------------------------------------ streaming



def _openai_error(message: str, extra: dict[str, Any] | None = None) -> bytes:
    err = {"message": message, "type": "agentsh_refused", "param": None, "code": "agentsh_refused"}
    return b"data: " + orjson.dumps({**(extra or {}), "error": err}) + b"\n\n"


@dataclass(slots=True, eq=False)
class _Choice:
    tools: list[Call] = field(default_factory=list)
    fc: Call | None = None
    finished: bool = False
    texts: int = 0

    def calls(self) -> list[Call]:
        return self.tools + ([self.fc] if self.fc is not None else [])


_CHUNK_OBJECT = b'"object":"chat.completion.chunk"'
_INDEX_ZERO = re.compile(rb'"index"\s*:\s*0(?![0-9.eE])')


class OpenAIChatInterceptor(Interceptor):
    needles = (b"_call",)

    def __init__(self, judge: Judge, counters: Counters) -> None:
        super().__init__(judge, counters)
        self.choices: list[_Choice] = []  # by position == index (enforced)
        self.open = 0
        self.saw_text = False

    def wants(self, ev: bytes) -> bool:
        if self.open:
            return True
        if b"_call" in ev or escaped(ev):  # tool_calls, function_call
            return True
        if not self.saw_text:
            # remember (without parsing) that text came first: the replacement then starts a new line
            i = ev.find(b'"content":"')
            if i >= 0 and ev[i + 11 : i + 12] != b'"':
                self.saw_text = True
        i = ev.find(b'"index"')
        if i < 0:
            return False
        # one index key, 0, in one chat.completion.chunk object: every choice of the
        # chunk is choice 0 (a choice without an index breaks the SDK)
        j = ev.find(_CHUNK_OBJECT)
        if (
            ev.find(b'"index"', i + 7) < 0
            and _INDEX_ZERO.match(ev, i) is not None
            and j >= 0
            and ev.find(b'"object"') == j
            and ev.find(b'"object"', j + 8) < 0
        ):
            if not self.choices:
                self.choices.append(_Choice())  # the chunk creates choice 0 (or hits it)
            return False
        return True  # another choice layout: place it exactly

    def _close_choice(self, st: _Choice, deps: list[Call]) -> None:
        for call in st.calls():
            if not call.closed:
                self._close(call)
                self.open -= 1
                deps.append(call)

    def observe(self, ev: bytes) -> Item:
        seq = next(self._seq)
        event, data, eol = fields(ev)
        if data is None:
            return Item(ev, seq=seq)
        if data.startswith("[DONE]"):
            return Item(ev, tuple(self._end_calls()), seq=seq)
        if event is not None and event.startswith("thread."):
            raise Refused(f"unexpected event {event!r} in a chat completion stream")
        obj = load(data, self.c)
        if not isinstance(obj, dict):
            raise Refused("chat completion chunk is not an object")
        if obj.get("error"):
            return Item(ev, seq=seq)  # the SDK raises it
        choices = obj.get("choices")
        if obj.get("object") != "chat.completion.chunk":
            # the SDK's stream helper skips it; harmless only if it touches no call and no new choice
            if isinstance(choices, list) and all(
                isinstance(ch, dict)
                and _int(ch.get("index"))
                and ch["index"] < len(self.choices)
                and not (isinstance(ch.get("delta"), dict) and ("tool_calls" in ch["delta"] or "function_call" in ch["delta"]))
                for ch in choices
            ):
                return Item(ev, seq=seq)
            if choices is None or choices == []:
                return Item(ev, seq=seq)
            raise Refused("chunk that is not a chat.completion.chunk carries choices")
        if choices is None:
            return Item(ev, seq=seq)
        if not isinstance(choices, list):
            raise Refused("choices is not a list")
        p = Parsed(event, obj, eol)
        deps: list[Call] = []
        for ch in choices:
            if not isinstance(ch, dict):
                raise Refused("choice is not an object")
            ci = ch.get("index")
            if not _int(ci) or ci > len(self.choices):
                raise Refused("choice index out of order")
            if ci == len(self.choices):
                self.choices.append(_Choice())
            st = self.choices[ci]
            delta = ch.get("delta")
            if delta is not None and not isinstance(delta, dict):
                raise Refused("delta is not an object")
            if delta:
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self.saw_text = True
                tcs = delta.get("tool_calls")
                if tcs is not None:
                    if not isinstance(tcs, list):
                        raise Refused("tool_calls is not a list")
                    if tcs and st.finished:
                        raise Refused("tool call after finish_reason")
                    for e in tcs:
                        deps.append(self._fragment(st, e, seq))
                fc = delta.get("function_call")
                if fc is not None:
                    if not isinstance(fc, dict) or st.finished:
                        raise Refused("function_call delta after finish_reason or not an object")
                    if st.fc is None:
                        st.fc = Call("legacy", first=seq)
                        self.open += 1
                    elif st.fc.closed:
                        raise Refused("function_call fragment after the call was complete")
                    name = _text(fc.get("name"), "function_call name")
                    args = _text(fc.get("arguments"), "function_call arguments")
                    if name:
                        st.fc.name_parts.append(name)
                    if args:
                        st.fc.arg_parts.append(args)
                    deps.append(st.fc)
            if ch.get("finish_reason") is not None:
                st.finished = True
                self._close_choice(st, deps)
        return Item(ev, tuple(dict.fromkeys(deps)), p, "chunk", seq=seq)

    def _fragment(self, st: _Choice, e: Any, seq: int) -> Call:
        if not isinstance(e, dict):
            raise Refused("tool_calls entry is not an object")
        t = e.get("index")
        if not _int(t) or t > len(st.tools):
            raise Refused("tool_calls index out of order")
        if t == len(st.tools):
            for prior in st.tools:  # calls stream one after another: an earlier one is complete
                if not prior.closed:
                    self._close(prior)
                    self.open -= 1
            st.tools.append(Call("function", first=seq))
            self.open += 1
        call = st.tools[t]
        if call.closed:
            raise Refused("fragment for a tool call that was already complete")
        cid = _text(e.get("id"), "tool call id")
        if cid:
            call.id_parts.append(cid)
        fn = e.get("function")
        cu = e.get("custom")
        if fn is not None and cu is not None:
            raise Refused("tool call is both a function and a custom tool")
        for key, part in (("function", fn), ("custom", cu)):
            if part is None:
                continue
            if not isinstance(part, dict):
                raise Refused(f"tool call {key} is not an object")
            kind = "function" if key == "function" else "custom"
            if call.kind != kind and (call.name_parts or call.arg_parts):
                raise Refused("tool call is both a function and a custom tool")
            call.kind = kind
            name = _text(part.get("name"), "tool name")
            args = _text(part.get("arguments" if kind == "function" else "input"), "tool arguments")
            if name:
                call.name_parts.append(name)
            if args:
                call.arg_parts.append(args)
        return call

    def _end_calls(self) -> list[Call]:
        deps: list[Call] = []
        for st in self.choices:
            self._close_choice(st, deps)
        return deps

    def end(self) -> None:
        self._end_calls()

    def render(self, item: Item) -> list[bytes]:
        p = item.p
        if p is None:
            return [item.raw]
        d = p.data
        modified = False
        for ch in d["choices"]:
            st = self.choices[ch["index"]]
            calls = st.calls()
            nblocked = sum(1 for c in calls if c.blocked)
            fr = ch.get("finish_reason")
            if not nblocked:
                continue
            delta = ch.get("delta")
            texts: list[str] = []
            if isinstance(delta, dict):
                tcs = delta.get("tool_calls")
                if isinstance(tcs, list):
                    kept: list[Any] = []
                    for e in tcs:
                        call = st.tools[e["index"]]
                        if call.decision is not None:
                            if call.first == item.seq and e is self._first_entry(tcs, e["index"]):
                                texts.append(blocked_text(call.name, call.decision.reason))
                            continue
                        ci = sum(1 for c in st.tools[: e["index"]] if not c.blocked)
                        kept.append(e if ci == e["index"] else {**e, "index": ci})
                    if kept:
                        delta["tool_calls"] = kept
                    else:
                        del delta["tool_calls"]
                fc = st.fc
                if "function_call" in delta and fc is not None and fc.decision is not None:
                    del delta["function_call"]
                    if fc.first == item.seq:
                        texts.append(blocked_text(fc.name, fc.decision.reason))
                if texts:
                    text = "\n".join(texts)
                    if st.texts or self.saw_text:
                        text = "\n" + text
                    st.texts += len(texts)
                    prior = delta.get("content")
                    delta["content"] = prior + text if isinstance(prior, str) else text
            if fr in ("tool_calls", "function_call") and nblocked == len(calls):
                ch["finish_reason"] = "stop"
            modified = True
        if not modified:
            return [item.raw]
        if not d.get("usage") and all(
            ch.get("finish_reason") is None
            and not any(v is not None for v in (ch.get("delta") or {}).values())
            for ch in d["choices"]
        ):
            return []  # only blocked-call fragments were in it
        return [p.make(d)]

    @staticmethod
    def _first_entry(tcs: list[Any], index: int) -> Any:
        for e in tcs:
            if e.get("index") == index:
                return e
        return None

    def error_event(self, message: str) -> bytes:
        return _openai_error(message)


# ------------------------------------------------------------------ tool results in requests


def extract_results(doc: dict[str, Any], budget: int) -> list[ToolResult]:
    calls: dict[str, tuple[str | None, Any]] = {}
    last_fn: tuple[str | None, Any] = (None, None)
    out: list[ToolResult] = []
    msgs = doc.get("messages")
    for i, m in enumerate(msgs if isinstance(msgs, list) else ()):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        tcs = m.get("tool_calls")
        for tc in tcs if isinstance(tcs, list) else ():
            if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
                continue
            fn, cu = tc.get("function"), tc.get("custom")
            if isinstance(fn, dict):
                calls[tc["id"]] = (result_name(fn.get("name")), parse_args(fn.get("arguments")))
            elif isinstance(cu, dict):
                calls[tc["id"]] = (result_name(cu.get("name")), cu.get("input"))
        fc = m.get("function_call")
        if isinstance(fc, dict):
            last_fn = (result_name(fc.get("name")), parse_args(fc.get("arguments")))
        if role == "tool":
            tid = m.get("tool_call_id")
            if isinstance(tid, str) and tid:
                name, args = calls.get(tid, (None, None))
                out.append(ToolResult(tid, name, args, result_texts(m.get("content"), budget)))
        elif role == "function":  # the legacy functions API: no ids, one call at a time
            name = result_name(m.get("name")) or last_fn[0]
            args = last_fn[1] if last_fn[0] == name else None
            out.append(ToolResult(f"function#{i}:{name}", name, args, result_texts(m.get("content"), budget)))
    return out


def withhold(doc: dict[str, Any], texts: Mapping[str, str]) -> int:
    n = 0
    for m in doc.get("messages") or ():
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") in texts:
            m["content"] = texts[m["tool_call_id"]]
            n += 1
    return n


DIALECT = Dialect(
    name="openai",
    provider=PROVIDER,
    match=exact_path("/v1/chat/completions"),
    needles=(b"tool_calls", b"function_call"),
    # role "tool" messages carry tool_call_id; legacy role "function" replies follow a function_call
    result_needles=(b"tool_call_id", b"function_call"),
    usage=UsageKeys(("prompt_tokens",), ("completion_tokens",), b'_tokens"'),
    rewrite=rewrite,
    interceptor=OpenAIChatInterceptor,
    extract_results=extract_results,
    withhold=withhold,
)
