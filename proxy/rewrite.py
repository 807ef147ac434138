"""Non-streaming responses: extract tool calls, ask about each, rewrite blocked ones.

Rewrites follow seed 000: a blocked call becomes a text item saying so, and the
stop/finish reason changes only when every tool call in the turn was blocked.
When nothing is blocked the caller forwards the upstream bytes unchanged.

The body is read the way the SDKs read it (``json.loads`` on bytes: UTF-8,
-16 or -32 by its first bytes, a BOM, NaN, lone surrogates, any depth), via
the lenient parser; a body that may carry a tool call but cannot be read, or
whose tool call cannot be placed, raises ``Refused`` (docs/proxy.md
"Non-streaming").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentsh.agent.core.lenient_json import Unparseable, loads_ex
from agentsh.agent.core.mcp.types import Decision
from agentsh.proxy.decider import blocked_text

# judge(name, call_id, arguments) -> Decision | None (None: not an MCP tool)
Judge = Callable[[str, str, Any], Awaitable[Decision | None]]


class Refused(Exception):
    """A response (or stream) that may carry a tool call cannot be parsed and decided."""


@dataclass
class RewriteResult:
    body: bytes | None
    """New body, or None when the original bytes stand."""
    tool_calls: int = 0
    blocked: int = 0
    blocked_names: list[str] = field(default_factory=list)
    strict: bool = True
    """False when only the lenient parser could read the body."""


def parse_args(raw: Any) -> Any:
    """Tool arguments as the agent will read them: JSON text decoded, else the text itself."""
    if isinstance(raw, str):
        try:
            return loads_ex(raw)[0]
        except Unparseable:
            return raw
    return raw


def parse_body(body: bytes) -> tuple[Any, bool]:
    """(value, strict) of a JSON body as ``json.loads(bytes)`` reads it; Refused if it cannot be read."""
    data: bytes | str = body
    if body[:3] != b"\xef\xbb\xbf" and (body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]):
        try:
            data = body.decode(json.detect_encoding(body), "surrogatepass")
        except (UnicodeDecodeError, LookupError):
            raise Refused("response body is neither UTF-8 nor readable UTF-16/32 JSON") from None
    try:
        return loads_ex(data)
    except Unparseable as e:
        raise Refused(f"unparseable JSON response ({e})") from None


async def rewrite(dialect: str, body: bytes, judge: Judge) -> RewriteResult:
    """Parse ``body`` (already decompressed) and rewrite it; Refused when it cannot be read."""
    doc, strict = parse_body(body)
    if not isinstance(doc, dict):
        return RewriteResult(None, strict=strict)  # no SDK builds a message from it
    if dialect == "anthropic":
        res = await _anthropic(doc, judge)
    elif dialect == "openai":
        res = await _openai_chat(doc, judge)
    elif dialect == "openai-responses":
        res = await _openai_responses(doc, judge)
    else:
        res = RewriteResult(None)
    res.strict = strict
    return res


def _name(v: Any) -> str:
    if not isinstance(v, str):
        raise Refused("tool call without a string name")
    return v


async def _anthropic(doc: dict[str, Any], judge: Judge) -> RewriteResult:
    content = doc.get("content")
    res = RewriteResult(None)
    if content is None:
        return res
    if not isinstance(content, list):
        raise Refused("message content is not a list")
    new: list[Any] = []
    changed = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            res.tool_calls += 1
            name = _name(block.get("name"))
            cid = block.get("id")
            d = await judge(name, cid if isinstance(cid, str) else "", block.get("input"))
            if d is not None and d.blocked:
                res.blocked += 1
                res.blocked_names.append(name)
                new.append({"type": "text", "text": blocked_text(name, d.reason)})
                changed = True
                continue
        new.append(block)
    if not changed:
        return res
    doc["content"] = new
    if res.blocked == res.tool_calls and doc.get("stop_reason") == "tool_use":
        doc["stop_reason"] = "end_turn"
    res.body = orjson.dumps(doc)
    return res


def _chat_call(tc: Any) -> tuple[str, Any] | None:
    """(name, arguments) of a chat ``tool_calls`` entry, or None when it is not a call."""
    if not isinstance(tc, dict):
        return None
    fn, cu = tc.get("function"), tc.get("custom")
    if fn is not None and cu is not None:
        raise Refused("tool call is both a function and a custom tool")
    if isinstance(fn, dict):
        return _name(fn.get("name")), parse_args(fn.get("arguments"))
    if isinstance(cu, dict):
        return _name(cu.get("name")), cu.get("input")
    if fn is not None or cu is not None:
        raise Refused("tool call function is not an object")
    return None


async def _openai_chat(doc: dict[str, Any], judge: Judge) -> RewriteResult:
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
            name = _name(fc.get("name"))
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


def responses_message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """A Responses API output message carrying the replacement text."""
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        if status == "completed"
        else [],
    }


def responses_item_id(call_id: str, output_index: int) -> str:
    tail = call_id.removeprefix("call_") or str(output_index)
    return f"msg_agentsh_{tail}"


RESPONSES_TOOL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}


async def _openai_responses(doc: dict[str, Any], judge: Judge) -> RewriteResult:
    res = RewriteResult(None)
    output = doc.get("output")
    if output is None:
        return res
    if not isinstance(output, list):
        raise Refused("response output is not a list")
    new: list[Any] = []
    for i, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in RESPONSES_TOOL_ITEMS:
            assert isinstance(item, dict)
            res.tool_calls += 1
            name = _name(item.get("name"))
            cid = item.get("call_id")
            call_id = cid if isinstance(cid, str) else ""
            raw = item.get(RESPONSES_TOOL_ITEMS[kind])
            d = await judge(name, call_id, parse_args(raw) if kind == "function_call" else raw)
            if d is not None and d.blocked:
                res.blocked += 1
                res.blocked_names.append(name)
                new.append(responses_message_item(responses_item_id(call_id, i), blocked_text(name, d.reason)))
                continue
        new.append(item)
    if res.blocked:
        doc["output"] = new
        res.body = orjson.dumps(doc)
    return res
