"""The shim's connection to agentshd: register, heartbeat, decisions, events.

Runs on the shim's asyncio loop (main thread); the relay threads reach it
through ``call()`` (run_coroutine_threadsafe with a timeout). When the daemon
is unreachable the link goes ``down``: the caller falls back to local
decisions (agent/core/mcp/offline.py) and events go to the spool (shim/spool.py). A
reconnect task polls the socket; when the daemon is back the shim registers
again, re-sends the tools it knows (so the daemon can decide on them) and
seals the spool segment so the daemon ingests it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from agentsh.agent.core.api_models import ShimHeartbeat, ShimRegister, ShimUnregister
from agentsh.agent.core.client_async import ControlClient
from agentsh.agent.core.client_sync import (
    ControlError,
    DaemonUnavailable,
    SyncChannelClient,
    SyncControlClient,
)
from agentsh.agent.core.lenient_json import clip
from agentsh.shim.spool import Spool

__all__ = ["DaemonLink", "FlowRecords", "LinkDown", "bounded_arguments", "mcp_result_content"]

log = logging.getLogger("agentsh.shim")

HEARTBEAT_SECONDS = 10.0
RECONNECT_SECONDS = 1.0
EVENT_BATCH = 512
EVENT_FLUSH_SECONDS = 0.05
"""Events are collected and sent in batches at this period: emitting an event from a
relay thread is a deque append, never a wake-up of the event loop."""


FLOW_QUEUE_MAX = 1024
"""Tool-call outcomes waiting to be recorded; beyond, the oldest are dropped (and counted)."""
FLOW_RECORD_TIMEOUT = 5.0


def mcp_result_content(result: Any, budget: int) -> list[Any]:
    """What of an MCP ``tools/call`` outcome is a data origin (docs/flow.md
    "Matching"), as strings of at most ``budget`` characters in all: the text
    of ``text`` blocks and of embedded ``resource``s, ``structuredContent`` and
    an ``error`` object as JSON text; not the base64 of images, audio and
    blobs (no text the agent could pass on verbatim)."""
    out: list[Any] = []
    left = budget

    def text(t: str) -> None:
        nonlocal left
        if left > 0 and t:
            out.append(t[:left])
            left -= min(len(t), left)

    if not isinstance(result, dict):
        if isinstance(result, str):
            text(result)
        elif result is not None:
            try:
                text(orjson.dumps(clip(result, max_depth=16, max_items=200, max_str=max(budget, 1))).decode())
            except (TypeError, orjson.JSONEncodeError):
                pass
        return out
    blocks = result.get("content")
    for b in blocks if isinstance(blocks, list) else ():
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            text(b["text"])
        elif kind == "resource" and isinstance(b.get("resource"), dict):
            r = b["resource"]
            if isinstance(r.get("text"), str):
                text(r["text"])
    for key in ("structuredContent", "error", "toolResult"):  # toolResult: the 2024-11-05 compatibility shape
        v = result.get(key)
        if v is not None and left > 0:
            # as JSON text (the engine opens it when whole), within what is left of the budget
            try:
                j = orjson.dumps(clip(v, max_depth=16, max_items=200, max_str=left)).decode()
            except (TypeError, orjson.JSONEncodeError):
                continue
            text(j)
    return out


_NAMING_KEYS = ("file_path", "path", "filename", "file", "url", "uri", "query", "command", "name")


def bounded_arguments(args: Any, max_bytes: int = 1 << 16) -> dict[str, Any] | None:
    """A call's arguments for a record, bounded (they name the origin; they are
    not content): larger than ``max_bytes`` as JSON, only the naming fields."""
    if not isinstance(args, dict):
        return None
    small = clip(args, max_depth=6, max_items=32, max_str=4096)
    try:
        if len(orjson.dumps(small)) <= max_bytes:
            return small
    except (TypeError, orjson.JSONEncodeError):
        pass
    return {k: v[:4096] for k in _NAMING_KEYS if isinstance(v := args.get(k), str)}


class LinkDown(Exception):
    """The daemon cannot answer now (unreachable, timed out, or refused the request)."""


class DaemonLink:
    def __init__(
        self,
        socket_path: str,
        spool: Spool,
        register_payload: Callable[[], ShimRegister],
        heartbeat_payload: Callable[[], ShimHeartbeat],
        on_reconnect: Callable[[], Awaitable[None]] | None = None,
        *,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        reconnect_seconds: float = RECONNECT_SECONDS,
    ) -> None:
        self.client = ControlClient(socket_path, timeout=10.0)
        self.sync = SyncControlClient(socket_path)
        """For requests of the relay threads (a tools/list to register), which
        wait for the answer: no hop to the event loop."""
        self.decisions = SyncChannelClient(socket_path)
        self.spool = spool
        self._register_payload = register_payload
        self._heartbeat_payload = heartbeat_payload
        self._on_reconnect = on_reconnect
        self.heartbeat_seconds = heartbeat_seconds
        self.reconnect_seconds = reconnect_seconds
        self.loop: asyncio.AbstractEventLoop | None = None
        self.up = False
        self.shim_id: str | None = None
        self.policy_hash: str | None = None
        self.went_down_at: float | None = None
        self.reconnects = 0
        self.events_sent = 0
        self.spooled_at: float | None = None
        """When events last went to the spool (epoch seconds), for the heartbeat."""
        self._events: collections.deque[dict[str, Any]] = collections.deque()
        self._sender: asyncio.Task[Any] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._wake_reconnect: asyncio.Event | None = None
        self._closing = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> bool:
        self.loop = asyncio.get_running_loop()
        self._wake_reconnect = asyncio.Event()
        ok = await self._register()
        self._sender = asyncio.create_task(self._event_sender())
        self._tasks = [
            asyncio.create_task(self._heartbeat()),
            asyncio.create_task(self._reconnector()),
        ]
        return ok

    async def _register(self) -> bool:
        try:
            res = await asyncio.wait_for(
                self.client.post("/v1/shims/register", self._register_payload().body()), 5.0
            )
        except (DaemonUnavailable, ControlError, TimeoutError, OSError) as e:
            self._set_down(f"register: {e}")
            return False
        self.shim_id = res.get("shim_id") if isinstance(res, dict) else None
        self.policy_hash = res.get("policy_hash") if isinstance(res, dict) else None
        self.up = True
        self.went_down_at = None
        return True

    def _set_down(self, why: str) -> None:
        if self.up or self.went_down_at is None:
            log.warning("agentshd unreachable (%s); deciding locally and spooling events", why)
            self.went_down_at = time.monotonic()
        self.up = False
        if self._wake_reconnect is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self._wake_reconnect.set)

    def mark_down(self, why: str) -> None:
        """Called from any thread when a request failed for lack of a daemon."""
        self._set_down(why)

    async def close(self, exit_code: int | None) -> None:
        """Flush events and unregister (bounded in time)."""
        self._closing = True
        for t in self._tasks:
            t.cancel()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(BaseException):
                await self._sender
            self._sender = None
        await self._flush_events()
        if self.up and self.shim_id:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    self.client.post(  # with the final counters (a last heartbeat)
                        f"/v1/shims/{self.shim_id}/unregister",
                        ShimUnregister(**self._heartbeat_payload().model_dump(), exit_code=exit_code).body(),
                    ),
                    2.0,
                )
        with contextlib.suppress(Exception):
            await self.client.close()
        self.spool.seal()

    # ------------------------------------------------------------------ requests

    async def post(self, path: str, payload: Any, timeout: float) -> Any:
        if not self.up:
            raise LinkDown("daemon down")
        try:
            return await asyncio.wait_for(self.client.post(path, payload), timeout)
        except (DaemonUnavailable, TimeoutError, OSError) as e:
            self._set_down(f"{path}: {e}")
            raise LinkDown(str(e)) from e
        except ControlError as e:
            # The daemon answered but refused: a bug or version skew, not an outage.
            log.error("agentshd refused %s: %s", path, e)
            raise LinkDown(str(e)) from e

    def decide(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Blocking decision from a relay thread over the decision channel; raises LinkDown."""
        if not self.up:
            raise LinkDown("daemon down")
        try:
            return self.decisions.decide(request, timeout)
        except ControlError as e:
            log.error("agentshd refused a decision: %s", e)
            raise LinkDown(str(e)) from e
        except (DaemonUnavailable, orjson.JSONDecodeError) as e:
            self._set_down(f"decide: {e}")
            raise LinkDown(str(e)) from e

    def call(self, path: str, payload: Any, timeout: float) -> Any:
        """Blocking request from a relay thread; raises LinkDown."""
        if not self.up:
            raise LinkDown("daemon down")
        try:
            return self.sync.post(path, payload, timeout)
        except ControlError as e:
            # The daemon answered but refused: a bug or version skew, not an outage.
            log.error("agentshd refused %s: %s", path, e)
            raise LinkDown(str(e)) from e
        except DaemonUnavailable as e:
            self._set_down(f"{path}: {e}")
            raise LinkDown(str(e)) from e

    # ------------------------------------------------------------------ events

    def emit(self, event: dict[str, Any]) -> None:
        """Queue one event (any thread); sent within EVENT_FLUSH_SECONDS, spooled
        when the daemon is down."""
        if self._closing and self._sender is None:
            self.spool.write([event])
            self.spooled_at = time.time()
            return
        self._events.append(event)

    async def _event_sender(self) -> None:
        while True:
            await asyncio.sleep(EVENT_FLUSH_SECONDS)
            await self._flush_events()

    async def _flush_events(self) -> None:
        while self._events:
            batch: list[dict[str, Any]] = []
            while self._events and len(batch) < EVENT_BATCH:
                batch.append(self._events.popleft())
            await self._send_batch(batch)

    async def _send_batch(self, batch: list[dict[str, Any]]) -> None:
        if self.up:
            try:
                res = await asyncio.wait_for(self.client.post("/v1/events", {"events": batch}), 5.0)
                self.events_sent += len(batch)
                if isinstance(res, dict) and res.get("rejected"):
                    log.error("agentshd rejected %s shim events: %s", res["rejected"], res.get("errors"))
                return
            except (DaemonUnavailable, TimeoutError, OSError) as e:
                self._set_down(f"/v1/events: {e}")
            except ControlError as e:
                log.error("agentshd refused shim events: %s", e)
        self.spool.write(batch)
        self.spooled_at = time.time()

    # ------------------------------------------------------------------ background

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            self.spool.maybe_seal()
            if not self.up or not self.shim_id:
                continue
            try:
                await asyncio.wait_for(
                    self.client.post(
                        f"/v1/shims/{self.shim_id}/heartbeat", self._heartbeat_payload().body()
                    ),
                    5.0,
                )
            except ControlError as e:
                if e.status == 404:  # the daemon restarted and forgot us
                    await self._reconnected()
            except (DaemonUnavailable, TimeoutError, OSError) as e:
                self._set_down(f"heartbeat: {e}")

    async def _reconnector(self) -> None:
        assert self._wake_reconnect is not None
        while True:
            if self.up:
                self._wake_reconnect.clear()
                await self._wake_reconnect.wait()
                continue
            await asyncio.sleep(self.reconnect_seconds)
            if self._closing:
                return
            try:
                await asyncio.wait_for(self.client.get("/v1/status"), 2.0)
            except Exception:
                continue
            await self._reconnected()

    async def _reconnected(self) -> None:
        if await self._register():
            self.reconnects += 1
            log.warning("agentshd reachable again; shim re-registered as %s", self.shim_id)
            if self._on_reconnect is not None:
                try:
                    await self._on_reconnect()
                except Exception:
                    log.exception("re-sending state to agentshd failed")
            self.spool.seal()


class FlowRecords:
    """Outcomes of allowed ``tools/call``s handed to the daemon as data origins
    (``op: flow_record``; docs/flow.md "Modes"), off the relay path.

    ``submit`` (a relay thread, before the client gets the result) only
    appends to a bounded queue; a thread of its own builds each record
    (``make``) and sends it on a channel connection of its own, so a result
    never waits for its record. The daemon counts a call it allowed as a
    result in flight until this record arrives (agent/daemon/hooks.py), so a
    later call of the flow session cannot be judged before it is known.
    While the daemon is unreachable nothing is recorded (a shim's offline
    decisions hold no flow state: docs/shim.md "Offline").
    """

    def __init__(self, link: DaemonLink, socket_path: str, make: Callable[[Any], dict[str, Any]]) -> None:
        self.link = link
        self._make = make
        self._client = SyncChannelClient(socket_path)
        self._queue: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.sent = 0
        self.failed = 0
        self.skipped = 0
        """Not recorded: the daemon was unreachable, or the queue was full."""

    def submit(self, item: Any) -> None:
        if not self.link.up:
            self.skipped += 1
            return
        q = self._queue
        q.append(item)
        if len(q) > FLOW_QUEUE_MAX:
            q.popleft()
            self.skipped += 1
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="shim-flow", daemon=True)
                    self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        q = self._queue
        while True:
            self._wake.wait()
            self._wake.clear()
            while q:
                try:
                    item = q.popleft()
                except IndexError:
                    break
                self._send(item)

    def _send(self, item: Any) -> None:
        if not self.link.up:
            self.skipped += 1
            return
        try:
            msg = self._make(item)
            self._client.request(msg, FLOW_RECORD_TIMEOUT)
            self.sent += 1
        except ControlError as e:  # refused (a bug or version skew): not an outage
            self.failed += 1
            log.error("agentshd refused a flow record: %s", e)
        except DaemonUnavailable as e:
            self.failed += 1
            self.link.mark_down(f"flow_record: {e}")
        except Exception:
            self.failed += 1
            log.exception("cannot build or send a flow record")

    def pending(self) -> int:
        return len(self._queue)
