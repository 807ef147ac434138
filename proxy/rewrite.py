"""Non-streaming responses: extract tool calls, ask about each, rewrite blocked ones.

Rewrites follow seed 000: a blocked call becomes a text item saying so, and the
stop/finish reason changes only when every tool call in the turn was blocked.
When nothing is blocked the caller forwards the upstream bytes unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentsh.agent.mcp.types import Decision
from agentsh.proxy.decider import blocked_text

# judge(name, call_id, arguments) -> Decision | None (None: not an MCP tool)
Judge = Callable[[str, str, Any], Awaitable[Decision | None]]


@dataclass
class RewriteResult:
    body: bytes | None
    """New body, or None when the original bytes stand."""
    tool_calls: int = 0
    blocked: int = 0
    blocked_names: list[str] = field(default_factory=list)


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


async def rewrite(dialect: str, body: bytes, judge: Judge) -> RewriteResult:
    """Parse ``body`` (already decompressed) and rewrite it; unparseable bodies stand."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return RewriteResult(None)
    if not isinstance(doc, dict):
        return RewriteResult(None)
    if dialect == "anthropic":
        return await _anthropic(doc, judge)
    if dialect == "openai":
        return await _openai_chat(doc, judge)
    if dialect == "openai-responses":
        return await _openai_responses(doc, judge)
    return RewriteResult(None)


async def _anthropic(doc: dict[str, Any], judge: Judge) -> RewriteResult:
    content = doc.get("content")
    res = RewriteResult(None)
    if not isinstance(content, list):
        return res
    new: list[Any] = []
    changed = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            res.tool_calls += 1
            name = str(block.get("name", ""))
            d = await judge(name, str(block.get("id", "")), block.get("input"))
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


async def _openai_chat(doc: dict[str, Any], judge: Judge) -> RewriteResult:
    res = RewriteResult(None)
    choices = doc.get("choices")
    if not isinstance(choices, list):
        return res
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
        if isinstance(calls, list):
            kept: list[Any] = []
            for tc in calls:
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict):
                    kept.append(tc)
                    continue
                total += 1
                name = str(fn.get("name", ""))
                d = await judge(name, str(tc.get("id", "")), _args(fn.get("arguments")))
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
        if isinstance(fc, dict) and fc.get("name"):
            total += 1
            name = str(fc.get("name", ""))
            d = await judge(name, "", _args(fc.get("arguments")))
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


async def _openai_responses(doc: dict[str, Any], judge: Judge) -> RewriteResult:
    res = RewriteResult(None)
    output = doc.get("output")
    if not isinstance(output, list):
        return res
    new: list[Any] = []
    for i, item in enumerate(output):
        if isinstance(item, dict) and item.get("type") == "function_call":
            res.tool_calls += 1
            name = str(item.get("name", ""))
            call_id = str(item.get("call_id", ""))
            d = await judge(name, call_id, _args(item.get("arguments")))
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
