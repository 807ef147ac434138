"""Getting the proxy's events to the daemon without losing any.

Events are queued in memory and handed in in batches over the proxy's
channel (``op: events``, answered once the daemon has written them) by one
background task. When the daemon cannot take them they are appended to a
spool file (``<state_dir>/spool/proxy-<pid>-<start>.jsonl.tmp``) that the
proxy replays itself once the daemon answers again, or the daemon ingests
after the proxy is gone. Only when even the spool cannot be written are
events counted as dropped (reported to the daemon, which shows it in status).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("agentsh.proxy")


def now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class ListSink:
    """In-memory sink (tests, and anything embedding the proxy in-process)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, ev: dict[str, Any]) -> None:
        ev.setdefault("timestamp", now_rfc3339())
        ev.setdefault("source", "proxy")
        self.events.append(ev)

    def of_type(self, t: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == t]


class EventReporter:
    def __init__(
        self,
        client: Any,
        spool_dir: Path,
        *,
        flush_interval: float = 0.25,
        batch_max: int = 500,
        queue_max: int = 100_000,
    ) -> None:
        self._client = client
        self.spool_dir = spool_dir
        # ``.tmp`` while this process lives: the daemon ingests ``*.jsonl`` and
        # the ``.tmp`` of dead processes only. Once the daemon answers again the
        # reporter replays the spool itself and truncates it.
        self.spool_path = spool_dir / f"proxy-{os.getpid()}-{int(time.time())}.jsonl.tmp"
        self._spool_dirty = False
        self._interval = flush_interval
        self._batch_max = batch_max
        self._queue_max = queue_max
        self._pending: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        self.spooled = 0
        self.dropped = 0

    def emit(self, ev: dict[str, Any]) -> None:
        ev.setdefault("timestamp", now_rfc3339())
        ev.setdefault("source", "proxy")
        self._pending.append(ev)
        if len(self._pending) >= self._batch_max:
            self._wake.set()
        if len(self._pending) > self._queue_max:  # daemon slow and spool failing: bound memory
            self._spool(self._pending)
            self._pending = []

    def _spool(self, batch: list[dict[str, Any]]) -> None:
        try:
            data = b"".join(orjson.dumps(e, default=str) + b"\n" for e in batch)
            with open(self.spool_path, "ab") as fh:
                fh.write(data)
            self.spooled += len(batch)
            self._spool_dirty = True
        except OSError as e:
            self.dropped += len(batch)
            log.error("cannot spool %d proxy events to %s: %s (dropped)", len(batch), self.spool_path, e)

    async def _replay_spool(self) -> None:
        """The daemon is reachable again: hand it what was spooled, keep the rest."""
        try:
            lines = [ln for ln in self.spool_path.read_bytes().splitlines() if ln.strip()]
        except OSError:
            return
        sent = 0
        try:
            while sent < len(lines):
                chunk = lines[sent : sent + self._batch_max]
                batch = []
                for ln in chunk:
                    try:
                        batch.append(orjson.loads(ln))
                    except orjson.JSONDecodeError:
                        continue
                await self._send(batch)
                sent += len(chunk)
                self.sent += len(batch)
        except Exception as e:
            log.warning("replaying the spool failed (%s); %d events stay spooled", e.__class__.__name__, len(lines) - sent)
        try:
            with open(self.spool_path, "r+b") as fh:
                fh.truncate(0)
                fh.write(b"".join(ln + b"\n" for ln in lines[sent:]))
            self._spool_dirty = sent < len(lines)
        except OSError as e:
            log.error("cannot rewrite spool %s: %s", self.spool_path, e)

    async def _send(self, batch: list[dict[str, Any]]) -> None:
        if self._client is None:
            raise ConnectionError("no daemon client")
        res = await asyncio.wait_for(self._client.events(batch), 5.0)
        if isinstance(res, dict) and res.get("rejected"):
            log.error("agentshd refused %s proxy events: %s", res["rejected"], res.get("errors"))

    async def flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._batch_max], self._pending[self._batch_max :]
            try:
                await self._send(batch)
                self.sent += len(batch)
                if self._spool_dirty:
                    await self._replay_spool()
            except asyncio.CancelledError:
                self._spool(batch)  # shutting down mid-send: keep the batch
                raise
            except Exception as e:
                log.warning("event delivery failed (%s); spooling %d", e.__class__.__name__, len(batch))
                self._spool(batch)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._interval)
            self._wake.clear()
            await self.flush()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    def stats(self) -> dict[str, int]:
        return {"sent": self.sent, "spooled": self.spooled, "dropped": self.dropped, "pending": len(self._pending)}
