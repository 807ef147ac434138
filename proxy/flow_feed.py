"""Data flow in the LLM proxy: tool results become origins, tool calls are checked
(docs/flow.md "Proxy-only mode", docs/proxy.md "Data flow").

Every tool result an agent sends up to the model passes the proxy (Anthropic
``tool_result`` blocks, OpenAI chat ``role: tool`` messages, Responses
``function_call_output`` items), and every tool call the model makes comes
back through it. So without any agent hook the proxy can feed the daemon's
flow engine and have every tool call checked, the agent's own tools
(Claude Code's Read, Bash, WebFetch …) included:

* **records** — a request that may carry a tool result (a substring test:
  requests without one pay nothing else) is parsed once, off the request's
  path (a task that runs while the request goes upstream); each result is
  sent as ``op: flow_record`` (``source: proxy``) with the name and
  arguments of its call, found earlier in the same request or remembered
  from a response of the session. The conversation is re-sent every turn,
  so results are recorded once per call id (a bounded set per session);
* **checks** — once a session has origins, every tool call of its responses
  is decided with ``flow_check`` (``ToolJudge``, proxy/decider.py), after the
  session's records in flight have landed; calls of sessions without
  origins stay on the fast path (only possible MCP tools are decided).

The flow session of a request is ``X-Claude-Code-Session-Id`` (the same id
as Claude Code's hooks and its MCP servers' ``CLAUDE_CODE_SESSION_ID``),
else one session per API credential (a hash of ``x-api-key`` /
``Authorization`` / ``api-key``), else one anonymous session: see
``session_key`` for why not body fields or connections.

While the daemon does not answer, records go to the offline decider's own
engine (agent/core/mcp/offline.py ``SnapshotDecider.flow``); as every request
re-sends its conversation, that engine learns all of it on the first request
after the daemon went away, and the proxy's offline decisions check flows too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from agentsh.agent.core.client_sync import ControlError
from agentsh.agent.core.lenient_json import Unparseable, clip, loads_ex
from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.dialects import Dialect, credential_headers, dialect_of
from agentsh.proxy.dialects.base import ToolResult, result_texts

log = logging.getLogger("agentsh.proxy")

__all__ = [
    "ChannelFlowSink",
    "FlowFeed",
    "LocalFlowSink",
    "RequestFlow",
    "ToolResult",
    "extract_results",
    "may_carry_tool_result",
    "result_texts",
    "session_key",
]

RECORD_TIMEOUT = 2.0
"""A record the daemon has not acknowledged by then counts as failed (and goes to the offline engine)."""
SETTLE_SECONDS = 3.0
"""How long a check waits for its session's records in flight."""
MAX_SESSIONS = 1024
MAX_IDS = 8192
"""Recorded call ids kept per session (the oldest are forgotten: re-recorded if re-sent)."""
MAX_CALLS = 1024
"""Tool calls remembered per session for results whose call is not in the request."""
MAX_ARG_BYTES = 1 << 16
UNKNOWN_TOOL = "unknown"
LENIENT_MAX = 1 << 20
"""Request bodies larger than this are read by orjson only."""


# ------------------------------------------------------------------ extraction (pure)


def may_carry_tool_result(dialect: Dialect | str, body: bytes) -> bool:
    """False only when no reading of ``body`` can hold a tool result (the
    dialect's needles, a JSON escape of an ASCII character, or UTF-16/32)."""
    d = dialect_of(dialect)
    return d is not None and d.may_carry_tool_result(body)


def extract_results(dialect: Dialect | str, doc: Any, budget: int = 65536) -> list[ToolResult]:
    """Every tool result of a parsed request body, in order, each with the
    name and arguments of its call when the request carries the call."""
    d = dialect_of(dialect)
    if d is None or not isinstance(doc, dict):
        return []
    return d.extract_results(doc, budget)


def parse_request(body: bytes) -> Any:
    """A request body as the provider reads it: JSON (the lenient parser when
    orjson refuses, for bodies up to ``LENIENT_MAX`` — providers parse
    strictly, a pure-Python parse of a big body would stall the proxy); None
    when it cannot be read (the provider refuses it too)."""
    if len(body) > LENIENT_MAX:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    data: bytes | str = body
    if body[:3] != b"\xef\xbb\xbf" and (body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]):
        import json

        try:
            data = body.decode(json.detect_encoding(body), "surrogatepass")
        except (UnicodeDecodeError, LookupError):
            return None
    try:
        return loads_ex(data)[0]
    except Unparseable:
        return None


_NAMING_KEYS = ("file_path", "notebook_path", "path", "filename", "file", "url", "uri", "query", "command",
                "pattern", "name")


def bounded_arguments(args: Any, max_bytes: int = MAX_ARG_BYTES) -> dict[str, Any] | None:
    """A call's arguments for a record, bounded: the engine uses them to name
    the origin (a path, a URL, a command) and to read a Bash command, never
    as content. Arguments larger than ``max_bytes`` as JSON keep only those
    naming fields. The record line stays far below the channel's line limit
    whatever the model put in a tool call."""
    if not isinstance(args, dict):
        return None
    small = clip(args, max_depth=6, max_items=32, max_str=4096)
    try:
        if len(orjson.dumps(small)) <= max_bytes:
            return small
    except (TypeError, orjson.JSONEncodeError):
        pass
    return {k: v[:4096] for k in _NAMING_KEYS if isinstance(v := args.get(k), str)}


# ------------------------------------------------------------------ sessions

_HEADER = "x-claude-code-session-id"
_CREDENTIALS = credential_headers()


_KEY_CACHE: dict[str, str] = {}


def session_key(headers: Any) -> str:
    """The flow session of a request, from its headers only.

    * ``X-Claude-Code-Session-Id`` — Claude Code's session: the same id as its
      hooks' ``session_id`` and its tools' and MCP servers'
      ``CLAUDE_CODE_SESSION_ID``, so the proxy, the shims and the hooks share
      one flow session.
    * else ``llm-key:<hash>`` — one session per API credential (SHA-256 of
      the first credential header of the registry's providers, ``x-api-key``
      / ``Authorization`` / ``api-key`` / ``x-goog-api-key``, truncated):
      every conversation of an agent (of every agent using that key) on this
      machine is one session, so data read in one conversation and sent out
      in another is still a flow. Wider than a conversation, never narrower.
    * else ``llm-anonymous`` (a local model without credentials).

    Not body fields (OpenAI ``user`` / ``safety_identifier``,
    ``prompt_cache_key``, Responses ``previous_response_id``, Anthropic
    ``metadata.user_id``): they would need a parse of every request whose
    response has a tool call, a client may leave them out or change them per
    conversation (a narrower session misses flows across conversations), and
    a nested copy of such a key can be written by the model into a tool
    call's input. Not the connection: SDKs pool connections, so one
    conversation uses several and unrelated ones share them.
    """
    v = headers.get(_HEADER)
    if v is not None and 0 < len(v) <= 256 and v.isprintable():
        return v
    for h in _CREDENTIALS:
        c = headers.get(h)
        if c:
            k = _KEY_CACHE.get(c)
            if k is None:
                if len(_KEY_CACHE) >= 256:
                    _KEY_CACHE.clear()
                k = _KEY_CACHE[c] = "llm-key:" + hashlib.sha256(c.encode("utf-8", "surrogateescape")).hexdigest()[:24]
            return k
    return "llm-anonymous"


class FlowSink(Protocol):
    async def record(self, msg: dict[str, Any]) -> dict[str, Any]: ...


class ChannelFlowSink:
    """Records to the daemon over the proxy's channel (``op: flow_record``)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def record(self, msg: dict[str, Any]) -> dict[str, Any]:
        return await self._client.request({**msg, "op": "flow_record"})


class LocalFlowSink:
    """Records into an in-process FlowEngine (tests, embedding, benchmarks):
    what the daemon's ``flow_record`` does for ``source: proxy``."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    async def record(self, msg: dict[str, Any]) -> dict[str, Any]:
        args = msg.get("arguments")
        res = self.engine.record(
            msg["flow_session"], msg["tool_name"], None, msg["content"], source="proxy",
            arguments=args if isinstance(args, dict) else None,
        )  # fmt: skip
        return {"recorded": res is not None, "session": msg["flow_session"]}


@dataclass(slots=True, eq=False)
class _Session:
    recorded: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Call ids the daemon acknowledged."""
    local: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Call ids recorded in the offline engine."""
    inflight: set[str] = field(default_factory=set)
    pending: set[asyncio.Future[Any]] = field(default_factory=set)
    calls: OrderedDict[str, tuple[str, Any]] = field(default_factory=OrderedDict)
    """Tool calls seen in responses: call id → (name, arguments)."""
    origins: bool = False
    """A tool result of this session was seen: its tool calls are checked."""
    last: float = 0.0


def _remember(d: OrderedDict[str, Any], k: str, v: Any, cap: int) -> None:
    d[k] = v
    d.move_to_end(k)
    if len(d) > cap:
        d.popitem(last=False)


class RequestFlow:
    """One request's view of its flow session (built per dialect request: a few
    attribute stores; the session key is computed when first needed)."""

    __slots__ = ("_key", "active", "feed", "headers", "session", "task")

    def __init__(
        self, feed: FlowFeed, key: str | None, session: _Session | None, task: asyncio.Task[None] | None,
        headers: Any = None,
    ) -> None:
        self.feed = feed
        self._key = key
        self.headers = headers
        self.session = session
        self.task = task
        self.active = task is not None or (session is not None and session.origins)
        """The session has origins (or this request brings some): check every tool call."""

    @property
    def key(self) -> str:
        """The flow session (``session_key`` of the request's headers)."""
        if self._key is None:
            self._key = session_key(self.headers)
        return self._key

    def remember(self, call_id: str, name: str, arguments: Any) -> None:
        """A tool call of the response: its result, in a later request that may
        not repeat the call (Responses ``previous_response_id``), is recorded
        under this name and these arguments."""
        if not call_id:
            return
        s = self.session or self.feed.sessions.get(self.key)
        if s is None:
            return  # a session without origins: nothing will need the call's name
        self.session = s
        if isinstance(arguments, dict) and len(arguments) <= 64:
            _remember(s.calls, call_id, (name, arguments), MAX_CALLS)
        else:
            _remember(s.calls, call_id, (name, None), MAX_CALLS)

    async def settled(self) -> None:
        """Wait (bounded) until this request's results, and every record of the
        session still in flight, have landed: a check never runs before the
        data it should know about is recorded."""
        end = time.monotonic() + SETTLE_SECONDS
        if self.task is not None and not self.task.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.task), SETTLE_SECONDS)
        s = self.session or self.feed.sessions.get(self.key)
        if s is not None and s.pending:
            left = end - time.monotonic()
            if left > 0:
                await asyncio.wait(list(s.pending), timeout=left)


class FlowFeed:
    """Records and per-session state of the proxy's data-flow step."""

    def __init__(
        self,
        policy: Policy,
        sink: FlowSink | None,
        *,
        local: Any = None,
        is_offline: Callable[[], bool] = lambda: False,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.sink = sink
        self.local = local
        """The offline decider's FlowEngine (records while the daemon does not answer)."""
        self._is_offline = is_offline
        self._on_failure = on_failure
        self.sessions: OrderedDict[str, _Session] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.counts = {"requests": 0, "parsed": 0, "results": 0, "records": 0, "local_records": 0,
                       "record_failures": 0, "unparseable": 0}  # fmt: skip
        self.update_policy(policy)

    def update_policy(self, policy: Policy) -> None:
        ft = policy.flow.flow_tracking
        self.enabled = ft.enabled
        self.budget = ft.max_response_hash_bytes
        self.timeout = ft.session_timeout_minutes * 60.0

    def session(self, key: str) -> _Session:
        s = self._get(key)
        if s is None:
            s = self.sessions[key] = _Session(last=time.monotonic())
            if len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        return s

    def _get(self, key: str) -> _Session | None:
        """The live session (touched), or None. One idle past the flow session
        timeout is forgotten: the daemon expired it, so a resumed conversation
        is recorded again."""
        s = self.sessions.get(key)
        if s is None:
            return None
        now = time.monotonic()
        if now - s.last > self.timeout and not s.pending:
            del self.sessions[key]
            return None
        self.sessions.move_to_end(key)
        s.last = now
        return s

    def _expire(self) -> None:
        """Forget sessions idle past the flow session timeout (the daemon has
        forgotten them too: a resumed conversation is recorded again)."""
        cutoff = time.monotonic() - self.timeout
        while self.sessions:
            k, s = next(iter(self.sessions.items()))
            if s.last >= cutoff or s.pending:
                break
            del self.sessions[k]

    def begin(self, dialect: Dialect | None, headers: Any, body: bytes) -> RequestFlow | None:
        """The request's flow view, and its records started (a task that runs
        while the request goes upstream). None: flow tracking is off or the
        path is not a dialect."""
        if not self.enabled or dialect is None:
            return None
        self.counts["requests"] += 1
        has = bool(body) and may_carry_tool_result(dialect, body)
        if not has and not self.sessions:
            return RequestFlow(self, None, None, None, headers)  # nothing recorded yet: nothing to look up
        key = session_key(headers)
        s = self._get(key)
        task = None
        if has:
            s = self.session(key)
            s.origins = True
            task = asyncio.get_running_loop().create_task(self._records(key, s, dialect, body))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if len(self.sessions) > 64 and self.counts["requests"] % 256 == 0:
            self._expire()
        return RequestFlow(self, key, s, task, headers)

    async def _records(self, key: str, s: _Session, dialect: Dialect, body: bytes) -> None:
        try:
            await asyncio.sleep(0)  # let the request go upstream first
            doc = parse_request(body)
            self.counts["parsed"] += 1
            if doc is None:
                self.counts["unparseable"] += 1
                return
            results = extract_results(dialect, doc, self.budget)
            self.counts["results"] += len(results)
            offline = self._is_offline() or self.sink is None
            sends: list[asyncio.Task[None]] = []
            for r in results:
                cid = r.call_id
                if r.tool_name is None and cid in s.calls:
                    r.tool_name, r.arguments = s.calls[cid]
                if offline or cid in s.recorded or cid in s.inflight:
                    continue
                s.inflight.add(cid)
                fut = asyncio.get_running_loop().create_task(self._send(s, cid, self._message(key, r)))
                s.pending.add(fut)
                fut.add_done_callback(s.pending.discard)
                sends.append(fut)
            if sends:
                await asyncio.wait(sends)  # each bounded by RECORD_TIMEOUT
            if self.local is not None and (offline or self._is_offline()):
                # the daemon is away: the offline engine learns the whole conversation
                # (re-sent every turn, so this happens once), not only what is new
                local = [(r.call_id, self._message(key, r)) for r in results if r.call_id not in s.local]
                if local:
                    await self._record_local(s, local)
        except Exception:  # records are best effort: a bug must not touch the request
            log.exception("extracting tool results for flow records failed")

    def _message(self, key: str, r: ToolResult) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "source": "proxy",
            "tool_name": r.tool_name or UNKNOWN_TOOL,
            "content": r.content,
            "flow_session": key,
        }
        args = bounded_arguments(r.arguments)
        if args is not None:
            msg["arguments"] = args
        return msg

    async def _send(self, s: _Session, cid: str, msg: dict[str, Any]) -> None:
        assert self.sink is not None
        try:
            await asyncio.wait_for(self.sink.record(msg), RECORD_TIMEOUT)
            _remember(s.recorded, cid, None, MAX_IDS)
            self.counts["records"] += 1
        except ControlError as e:  # the daemon answered and refused it: a bug, not an outage
            self.counts["record_failures"] += 1
            log.error("agentshd refused a flow record: %s", e)
        except Exception as e:  # unreachable, timed out: the daemon is away
            self.counts["record_failures"] += 1
            why = e.__class__.__name__
            if self._on_failure is not None:
                self._on_failure(why)
            log.warning("agentshd did not take a flow record (%s); recording locally", why)
        finally:
            s.inflight.discard(cid)

    async def _record_local(self, s: _Session, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Record in the offline engine (in a thread: a whole conversation may come at once)."""
        eng = self.local

        def run() -> None:
            for _cid, m in items:
                args = m.get("arguments")
                eng.record(m["flow_session"], m["tool_name"], None, m["content"], source="proxy",
                           arguments=args if isinstance(args, dict) else None)  # fmt: skip

        await asyncio.to_thread(run)
        for cid, _m in items:
            _remember(s.local, cid, None, MAX_IDS)
        self.counts["local_records"] += len(items)

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "sessions": len(self.sessions)}

