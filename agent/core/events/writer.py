"""The one writer of ``events.jsonl``: every event in the system goes through here.

Design (why it looks like this; docs/events.md, "Delivery guarantees"):

* **Producers serialize, the writer only writes.** emit() turns its event into
  one JSON line (``_plain`` + orjson, a few µs, no I/O) and appends the bytes
  to a shared list. The writer thread takes everything pending at once
  (a slice and a ``del`` of the list's prefix: two C operations, whatever the
  count; ``list.append`` and both are atomic under the GIL, so nothing can
  slip between them) and writes it with one ``b"".join`` + write(2) per batch.
  Its GIL needs are O(1) per batch, not per event: under GIL pressure (busy
  producers, a CPU-bound neighbour thread) the writer may get the GIL only
  every few switch intervals, and then moves thousands of lines per turn.
  The earlier design (the writer serialized queued models) needed ~5 µs of
  GIL per event in the one thread that gets the GIL least.
* **A dedicated writer thread**, not an asyncio task + executor: file I/O
  (write, fsync, rename, open) blocks; in a thread it never stalls the event
  loop. Producers live on several threads (the BPF ring-buffer poller, the
  asyncio loop, executor workers) and need no loop (tests, tools).
* **emit() never blocks on disk and takes no lock** (a lock convoys under the
  GIL: one preempted holder stalls every producer for a switch interval). Its
  counters are ``itertools.count`` (atomic ``next()``). It wakes the writer
  (``threading.Event.set``) only when the writer said it is idle, so a busy
  writer costs producers nothing. ``stop()`` waits for in-flight emit() calls
  before the final drain, so no accepted event is left behind. The bound is
  checked without a lock: the buffer may exceed ``queue_size`` by at most one
  line per thread.
* **Backlog**: the writer needs the GIL once per batch, but with many busy
  threads it may wait for it behind every one of them, a switch interval
  (5 ms) each, and longer on a loaded machine. It then writes everything
  pending in one write(2) (not ``batch_max`` lines at a time: each write costs
  another wait), and while more than ``queue_size/8`` lines wait, emit() gives
  up its thread's GIL turn after queueing (``time.sleep(0)``: no I/O, no lock),
  so the writer's turn comes after a few emits instead of a few switch
  intervals, and the buffer drains instead of overflowing.
* **Acknowledged emit** (``emit_acked`` / ``emit_acked_sync``): the lines go
  into the same buffer, then a ticket into a second list. The writer takes the
  tickets *before* the lines, so every ticket it holds has all its lines in
  the writer's hands; it releases the tickets once all lines taken so far are
  written (write(2) returned: in the kernel, they survive ``kill -9`` of the
  daemon; with ``fsync=True`` also after an fsync, for power loss).
* **Lines are never split**: the writer alone decides where a file ends. It
  writes whole lines in batches, rotates between lines, and if a write fails
  half-way it finishes the same line in the same file, or cuts the partial
  line off (``ftruncate``) before it switches files.
* **Torn tail repair**: a process killed in the middle of write(2) can leave
  a partial last line. Whenever the writer opens a file that does not end
  with a newline, it cuts the partial line off (``ftruncate`` to the last
  newline; every complete line stays), counts it (``torn_tails``) and writes
  an ``events_torn_tail`` event, so the next line starts on its own line and
  every line stays valid JSON. A partial line was never acknowledged: an
  acknowledgement waits for the whole write.
* The writer's own events (``events_rotated``, ``events_dropped``,
  ``events_torn_tail``) are written directly, never queued, so they cannot be
  dropped.

Errors (disk full, EACCES, missing directory): the writer records
``last_error``, keeps the unwritten lines in memory and retries with a
backoff of up to one second; meanwhile the buffer fills and overflow is
counted in ``dropped``. Nothing is lost silently: every event passed to
``emit()`` is either written or counted as dropped (``emit()`` returns False
for the latter; an event that cannot be serialized is dropped that way too).
Events still unwritten when ``stop()`` gives up after its timeout are counted
as dropped, and their acknowledgements say ``written=False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import secrets
import socket
import stat
import threading
import time
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

from agentsh.agent.core.events.models import Event, EventsDropped, EventsRotated, EventsTornTail
from agentsh.agent.core.events.output import renderer
from agentsh.agent.core.policy.schema import EventsConfig

_DUMP_OPTS = orjson.OPT_APPEND_NEWLINE
_DROP_REPORT_INTERVAL = 1.0
_MAX_BACKOFF = 1.0
_MAX_WRITE = 32 << 20  # bytes per write() at most
_TAIL_SCAN = 1 << 16  # bytes read per step when looking for the last newline
_FRAGMENT_HEAD = 200  # bytes of a torn line quoted in events_torn_tail


def _nullable_fields(cls: type[BaseModel]) -> tuple[str, ...] | None:
    """Fields that may hold None, or None when the fast path does not apply.

    The fast path (copy ``__dict__``, delete the None-valued nullable fields)
    equals ``model_dump(exclude_none=True)`` for plain models: no aliases, no
    custom serializers, no extras. Every model in agentsh.agent.core.events.models is
    one (a test checks each type); anything else falls back to pydantic.
    """
    dec = cls.__pydantic_decorators__
    if dec.field_serializers or dec.model_serializers or dec.computed_fields:
        return None
    if cls.model_config.get("extra") == "allow":
        return None
    out = []
    for name, f in cls.model_fields.items():
        if f.alias is not None or f.serialization_alias is not None:
            return None
        ann = f.annotation
        if f.default is None or ann is Any or type(None) in typing.get_args(ann):
            out.append(name)
    return tuple(out)


_NULLABLE: dict[type, tuple[str, ...] | None] = {}


def _plain(o: BaseModel) -> dict[str, Any]:
    """``o`` as a dict without None-valued fields (nested models are left to ``_default``)."""
    cls = type(o)
    try:
        nullable = _NULLABLE[cls]
    except KeyError:
        nullable = _NULLABLE[cls] = _nullable_fields(cls)
    if nullable is None:
        return o.model_dump(mode="json", exclude_none=True)
    d = o.__dict__.copy()
    for k in nullable:
        if d[k] is None:
            del d[k]
    return d


def _default(o: Any) -> Any:
    """orjson fallback for nested models (DetectionResult, ...) and a few Python types."""
    if isinstance(o, BaseModel):
        return _plain(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _value(c: itertools.count[int]) -> int:
    """How many times next() was called on ``c`` (its repr is ``count(N)``)."""
    return int(repr(c)[6:-1])


class _Clock:
    """RFC 3339 UTC timestamps with microseconds; the seconds part is cached."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache = (-1, "")  # one tuple, swapped atomically: safe from any thread

    def format(self, ns: int) -> str:
        sec, frac = divmod(ns // 1000, 1_000_000)
        c = self._cache
        if c[0] != sec:
            c = self._cache = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
        return f"{c[1]}.{frac:06d}Z"


def new_id_prefix() -> str:
    """16 hex chars: start time (seconds) + 32 random bits; ids stay unique across restarts."""
    return f"{int(time.time()) & 0xFFFFFFFF:08x}{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True)
class AckResult:
    """What became of the events of one ``emit_acked`` call."""

    accepted: int
    """Events taken into the writer's hands (in order)."""
    dropped: int
    """Events refused (buffer full, writer stopped, unserializable): counted in ``stats()``."""
    written: bool
    """True once every accepted event was written with write(2) (and fsynced when
    asked). False when the wait timed out or ``stop()`` gave up on a failing
    disk: then the accepted events may still be written later, or are counted
    as dropped at stop."""


class _Ticket:
    """One acknowledged emit call waiting for its lines to be written."""

    __slots__ = ("_event", "_fut", "_loop", "fsync", "ok")

    def __init__(self, fsync: bool, loop: asyncio.AbstractEventLoop | None) -> None:
        self.fsync = fsync
        self.ok = False
        self._loop = loop
        self._fut: asyncio.Future[bool] | None = loop.create_future() if loop else None
        self._event = None if loop else threading.Event()

    def resolve(self, ok: bool) -> None:  # writer thread
        self.ok = ok
        if self._event is not None:
            self._event.set()
            return
        assert self._loop is not None and self._fut is not None
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(_set_result, self._fut, ok)

    async def wait_async(self, timeout: float | None) -> bool:
        assert self._fut is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._fut), timeout)
        except TimeoutError:
            return False

    def wait_sync(self, timeout: float | None) -> bool:
        assert self._event is not None
        return self._event.wait(timeout) and self.ok


def _set_result(fut: asyncio.Future[bool], ok: bool) -> None:
    if not fut.done():
        fut.set_result(ok)


class EventWriter:
    """Bounded, batched, rotating JSONL writer. See the module docstring."""

    def __init__(self, config: EventsConfig | None = None, *, host: str | None = None) -> None:
        self._cfg = config or EventsConfig()
        self._path = self._cfg.path
        self._host = host or socket.gethostname()
        # shared with producers: they append, the writer removes prefixes
        self._buf: list[bytes] = []
        self._tickets: list[_Ticket] = []
        self._max = self._cfg.queue_size
        self._hiwater = max(256, self._max // 64)
        self._yield_at = self._max // 8
        self._accepting = True
        self._prefix = new_id_prefix()
        self._seq = itertools.count()
        self._clock = _Clock()
        # Serialization hook (agent/core/events/output.py): envelope severity + line format.
        self._render = renderer(self._cfg.format)
        self._kick = threading.Event()
        self._idle = False  # the writer waits for lines: the next emit() sets _kick
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stop_deadline = float("inf")
        self._reopen_req = False
        self._new_cfg: EventsConfig | None = None
        # writer thread only
        self._pend: list[bytes] = []  # taken from _buf, not yet written
        self._own_lines: list[bytes] = []  # the writer's own events, written first
        self._waiting: list[_Ticket] = []  # released once _pend is written
        self._fd = -1
        self._regular = True
        self._size = 0
        self._dirty = False
        self._last_fsync = time.monotonic()
        # a chunk being written: fd, data, offset, file size before it, lines, own lines?
        self._partial: tuple[int, bytes, int, int, int, bool] | None = None
        # counters; itertools.count: next() is atomic under the GIL, so emit() needs no lock
        self._n_enter = itertools.count()
        self._n_exit = itertools.count()
        self._n_accepted = itertools.count()
        self._n_dropped = itertools.count()
        self._writer_dropped = 0  # writer thread only: lost at stop
        self._dropped_reported = 0
        self._last_drop_report = 0.0
        self._written = 0
        self._own_written = 0
        self._bytes = 0
        self._rotations = 0
        self._reopens = 0
        self._fsyncs = 0
        self._errors = 0
        self._torn_tails = 0
        self._torn_bytes = 0
        self._last_error: str | None = None
        self._lost_on_stop = 0

    # ------------------------------------------------------------------ producers

    def emit(self, event: Event) -> bool:
        """Write ``event``; True if accepted, False if dropped (counted). Never blocks on I/O.

        Thread-safe; callable from the event loop, any thread, before ``start()``
        (lines wait in the buffer) but not after ``stop()`` (then it returns False).
        The event is serialized here: the producer may reuse it afterwards.
        """
        next(self._n_enter)  # see stop_sync: no emit() is left half-done at the final drain
        try:
            return self._emit_one(event)
        finally:
            next(self._n_exit)

    def _emit_one(self, event: Event) -> bool:
        d = event.__dict__
        if not d["id"]:
            d["id"] = f"{self._prefix}{next(self._seq):010x}"
        queued = len(self._buf)
        if self._accepting and queued < self._max:
            line = self._serialize(time.time_ns(), event)
            if line is not None:
                self._buf.append(line)
                next(self._n_accepted)
                if self._idle:
                    self._idle = False
                    self._kick.set()
                elif queued > self._yield_at:
                    # The writer is far behind: it waits for the GIL behind every
                    # busy thread. Give up this thread's turn (no I/O, no lock)
                    # so that it comes sooner, instead of filling the buffer.
                    time.sleep(0)
                return True
        next(self._n_dropped)
        return False

    async def emit_acked(
        self, events: Sequence[Event], *, fsync: bool = False, timeout: float | None = None
    ) -> AckResult:
        """Write ``events`` and return once every accepted one is in the file.

        "In the file" means write(2) returned for all of its bytes: the lines
        are in the kernel and survive ``kill -9`` of this process. They do not
        survive a power loss or kernel crash before the next fsync (at most
        ``events.fsync_interval_seconds``): pass ``fsync=True`` to wait for an
        fsync as well. Events are accepted or dropped as with emit() (never
        blocks a producer on a full buffer); ``written`` is False if
        ``timeout`` (seconds) passed first, or stop() gave up on a failing disk.
        Call it from the event loop; the loop is not blocked while it waits.
        """
        ticket = _Ticket(fsync, asyncio.get_running_loop())
        accepted, dropped = self._emit_ticketed(events, ticket)
        if not accepted:
            return AckResult(0, dropped, True)
        return AckResult(accepted, dropped, await ticket.wait_async(timeout))

    def emit_acked_sync(
        self, events: Sequence[Event], *, fsync: bool = False, timeout: float | None = None
    ) -> AckResult:
        """emit_acked() for threads without an event loop (blocks the calling thread)."""
        ticket = _Ticket(fsync, None)
        accepted, dropped = self._emit_ticketed(events, ticket)
        if not accepted:
            return AckResult(0, dropped, True)
        return AckResult(accepted, dropped, ticket.wait_sync(timeout))

    def _emit_ticketed(self, events: Sequence[Event], ticket: _Ticket) -> tuple[int, int]:
        next(self._n_enter)
        try:
            accepted = 0
            for ev in events:
                accepted += self._emit_one(ev)
            if accepted:
                # after its lines: a ticket the writer holds has all its lines taken
                self._tickets.append(ticket)
                if self._idle:
                    self._idle = False
                    self._kick.set()
            return accepted, len(events) - accepted
        finally:
            next(self._n_exit)

    def request_reopen(self) -> None:
        """Close and reopen the file at its path (after an external rename, e.g. logrotate).

        Safe from any thread and from signal handlers.
        """
        self._reopen_req = True
        self._kick.set()

    def reconfigure(self, config: EventsConfig) -> None:
        """Apply a new EventsConfig (policy reload); a new path means a reopen there."""
        self._new_cfg = config
        self._render = renderer(config.format)  # events written from now on
        self._max = config.queue_size
        self._hiwater = max(256, self._max // 64)
        self._yield_at = self._max // 8
        self._kick.set()

    def stats(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "running": self._thread is not None and self._thread.is_alive(),
            "accepted": _value(self._n_accepted),
            "written": self._written,
            "own_events_written": self._own_written,
            "dropped": self._dropped,
            "queue_depth": len(self._buf) + len(self._pend),
            "queue_size": self._max,
            "rotations": self._rotations,
            "reopens": self._reopens,
            "bytes_written": self._bytes,
            "fsyncs": self._fsyncs,
            "write_errors": self._errors,
            "torn_tails": self._torn_tails,
            "torn_tail_bytes": self._torn_bytes,
            "last_error": self._last_error,
        }

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.start_thread()

    def start_thread(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="agentsh-events", daemon=True)
        self._thread.start()

    async def stop(self, timeout: float = 30.0) -> bool:
        """Stop accepting, drain the buffer, fsync, close. True if everything was written."""
        return await asyncio.to_thread(self.stop_sync, timeout)

    @property
    def _dropped(self) -> int:
        return _value(self._n_dropped) + self._writer_dropped

    def stop_sync(self, timeout: float = 30.0) -> bool:
        self._accepting = False
        # Wait until every emit() that may have seen _accepting True has put its
        # line: exits are read before entries, so equality means none was in flight.
        deadline = time.monotonic() + 1.0
        while _value(self._n_exit) != _value(self._n_enter) and time.monotonic() < deadline:
            time.sleep(0.0002)
        self._stop_deadline = time.monotonic() + timeout
        self._stopping = True
        self._kick.set()
        if self._thread is None:
            self.start_thread()
        assert self._thread is not None
        self._thread.join(timeout + 5.0)
        if self._thread.is_alive():  # stuck in a syscall (e.g. open() of a FIFO)
            self._last_error = self._last_error or "writer thread did not finish"
            return False
        return self._lost_on_stop == 0

    # ------------------------------------------------------------------ serialization

    def _line(self, ns: int, ev: BaseModel) -> bytes:
        d = _plain(ev)
        if not d.get("timestamp"):
            d["timestamp"] = self._clock.format(ns)
        if not d.get("host"):
            d["host"] = self._host
        d = self._render(ev, d)
        # A copy of exactly the line's size: orjson's own result sits in a
        # larger buffer shrunk with realloc, and holding thousands of those until
        # the writer takes them costs ~5 µs each in malloc (a copy: ~0.2 µs).
        return bytes(memoryview(orjson.dumps(d, default=_default, option=_DUMP_OPTS)))

    def _serialize(self, ns: int, ev: Event) -> bytes | None:
        try:
            return self._line(ns, ev)
        except Exception:  # a value orjson cannot encode: let pydantic coerce it
            try:
                d = orjson.loads(ev.model_dump_json(exclude_none=True))
                d["timestamp"] = d.get("timestamp") or self._clock.format(ns)
                d["host"] = d.get("host") or self._host
                d = self._render(ev, d)
                return bytes(memoryview(orjson.dumps(d, option=_DUMP_OPTS)))
            except Exception as e:
                self._last_error = f"cannot serialize {ev.type} event {ev.id}: {e}"
                return None

    def _own(self, ev: Event, front: bool = False) -> None:
        ev.id = f"{self._prefix}{next(self._seq):010x}"
        line = self._line(time.time_ns(), ev)
        if front:
            self._own_lines.insert(0, line)
        else:
            self._own_lines.append(line)

    # ------------------------------------------------------------------ writer thread

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._close()
            # tickets nobody will write for (give-up, or a crash of this loop)
            for t in self._waiting + self._tickets:
                t.resolve(False)
            self._waiting.clear()
            self._tickets.clear()

    def _loop(self) -> None:
        backoff = 0.05
        while True:
            if self._new_cfg is not None:
                self._apply_config()
            if self._reopen_req:
                self._reopen_req = False
                self._switch_file("reopen")
            if self._pend or self._own_lines or self._fd < 0:
                if not self._flush():
                    if self._stopping and time.monotonic() >= self._stop_deadline:
                        self._give_up()
                        return
                    self._kick.wait(backoff)  # producers do not wake a failing writer
                    self._kick.clear()
                    backoff = min(backoff * 2, _MAX_BACKOFF)
                    continue
                backoff = 0.05
                if self._pend or self._own_lines:  # paused for a reopen / new config
                    continue
            if self._waiting:  # every line taken so far is written
                self._release()
            if self._take():
                continue
            self._report_drops(force=self._stopping)
            self._maybe_fsync()
            if self._own_lines:
                continue
            if self._stopping:
                # stop() sets _stopping once every emit() has put its line:
                # lines that came while we fsynced above are still to write.
                if self._buf or self._tickets:
                    continue
                return
            self._wait(self._idle_timeout())

    def _take(self) -> bool:
        """Move everything pending to the writer: tickets first, then lines."""
        tickets = self._tickets
        if tickets:
            n = len(tickets)
            self._waiting += tickets[:n]
            del tickets[:n]
        buf = self._buf
        n = len(buf)
        if n:
            self._pend = buf[:n]
            del buf[:n]
            return True
        return bool(self._waiting)

    def _release(self) -> None:
        """Acknowledge the tickets whose lines are all written (fsync first if one asks)."""
        waiting, self._waiting = self._waiting, []
        ok = True
        if any(t.fsync for t in waiting):
            ok = self._fsync()
        for t in waiting:
            t.resolve(ok or not t.fsync)

    def _wait(self, timeout: float | None) -> None:
        """Sleep until a producer, stop, reopen or reconfigure wakes us (or ``timeout``)."""
        self._kick.clear()
        self._idle = True
        if not (self._buf or self._tickets or self._stopping or self._reopen_req or self._new_cfg):
            self._kick.wait(timeout)
        self._idle = False

    def _idle_timeout(self) -> float | None:
        now = time.monotonic()
        waits = []
        if self._dirty and self._cfg.fsync_interval_seconds > 0:
            waits.append(self._last_fsync + self._cfg.fsync_interval_seconds - now)
        if self._dropped != self._dropped_reported:
            waits.append(self._last_drop_report + _DROP_REPORT_INTERVAL - now)
        if not waits:
            return None
        return max(0.0, min(waits))

    def _batch_cap(self) -> int:
        """``batch_max`` lines per write; everything pending while a backlog builds up.

        Every write() hands the GIL away, and getting it back can take a switch
        interval (5 ms) per busy thread: under a backlog the writer must move
        all it has in one round trip to keep up (bounded by ``_MAX_WRITE`` bytes).
        """
        backlog = len(self._pend) + len(self._buf)
        return backlog if backlog > self._hiwater else self._cfg.batch_max

    def _report_drops(self, force: bool) -> None:
        dropped = self._dropped
        if dropped == self._dropped_reported:
            return
        now = time.monotonic()
        if not force and now - self._last_drop_report < _DROP_REPORT_INTERVAL:
            return
        self._own(
            EventsDropped(
                dropped_total=dropped, dropped_since_last=dropped - self._dropped_reported
            )
        )
        self._dropped_reported = dropped
        self._last_drop_report = now
        self._flush()

    # ------------------------------------------------------------------ file handling

    def _error(self, what: str, e: OSError) -> None:
        self._errors += 1
        self._last_error = f"{what} {self._path}: {e.strerror or e}"

    def _open(self) -> bool:
        path = self._path
        try:
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, mode=0o750, exist_ok=True)
            fd = os.open(
                path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, self._cfg.file_mode
            )
        except OSError as e:
            self._error("open", e)
            return False
        try:
            st = os.fstat(fd)
            self._regular = stat.S_ISREG(st.st_mode)
            if self._regular and stat.S_IMODE(st.st_mode) != self._cfg.file_mode:
                os.fchmod(fd, self._cfg.file_mode)
            size = st.st_size if self._regular else 0
            if size:
                size = self._repair_tail(fd, size)
        except OSError as e:
            os.close(fd)
            self._error("open", e)
            return False
        self._fd = fd
        self._size = size
        return True

    def _repair_tail(self, fd: int, size: int) -> int:
        """Cut off a partial last line (a crash mid-write); returns the new size.

        Reads through a second, read-only descriptor of the same inode
        (``/proc/self/fd``: not the path, which may have been renamed since).
        """
        rfd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if os.pread(rfd, 1, size - 1) == b"\n":
                return size
            end = size
            keep = 0  # size up to and including the last newline
            while end > 0:
                start = max(0, end - _TAIL_SCAN)
                i = os.pread(rfd, end - start, start).rfind(b"\n")
                if i >= 0:
                    keep = start + i + 1
                    break
                end = start
            head = os.pread(rfd, min(_FRAGMENT_HEAD, size - keep), keep)
        finally:
            os.close(rfd)
        os.ftruncate(fd, keep)
        self._torn_tails += 1
        self._torn_bytes += size - keep
        self._own(
            EventsTornTail(
                path=self._path,
                bytes_removed=size - keep,
                fragment_head=head.decode("utf-8", "replace"),
            )
        )
        return keep

    def _close(self) -> None:
        if self._fd < 0:
            return
        self._drop_partial()
        self._fsync()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1

    def _fsync(self) -> bool:
        ok = True
        if self._fd >= 0 and self._dirty and self._regular:
            try:
                os.fsync(self._fd)
                self._fsyncs += 1
            except OSError as e:
                self._error("fsync", e)
                ok = False
        self._dirty = False
        self._last_fsync = time.monotonic()
        return ok

    def _maybe_fsync(self) -> None:
        iv = self._cfg.fsync_interval_seconds
        if iv > 0 and self._dirty and time.monotonic() - self._last_fsync >= iv:
            self._fsync()

    def _drop_partial(self) -> None:
        """Before leaving a file: cut off a line that a failed write left half-written."""
        if self._partial is None:
            return
        fd, _data, _off, start, _n, _own = self._partial
        self._partial = None
        if fd == self._fd:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)

    def _switch_file(self, reason: str) -> None:
        """Rotate by size (``reason="size"``) or reopen the path; log ``events_rotated``."""
        self._close()
        if reason == "size":
            self._shift_backups()
            self._rotations += 1
        else:
            self._reopens += 1
        if self._open():
            self._own(EventsRotated(reason=reason, path=self._path), front=True)

    def _shift_backups(self) -> None:
        p, n = self._path, self._cfg.rotate_backups
        try:
            if n == 0:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
                return
            top = 0
            while top < n and os.path.exists(f"{p}.{top + 1}"):
                top += 1
            if top == n:
                os.unlink(f"{p}.{n}")
                top -= 1
            for i in range(top, 0, -1):
                os.rename(f"{p}.{i}", f"{p}.{i + 1}")
            with contextlib.suppress(FileNotFoundError):  # moved away by someone else
                os.rename(p, f"{p}.1")
        except OSError as e:
            self._error("rotate", e)

    def _apply_config(self) -> None:
        cfg, self._new_cfg = self._new_cfg, None
        assert cfg is not None
        old_path = self._path
        self._cfg = cfg
        self._path = cfg.path
        if cfg.path != old_path and self._fd >= 0:
            self._switch_file("reopen")

    def _chunk(self, lines: list[bytes]) -> tuple[int, bytes]:
        """The next write: how many of ``lines``, joined; ``(0, b"")``: rotate first.

        The common case costs one join (its length tells whether a limit is
        near); only near a limit are lines measured one by one.
        """
        k = min(len(lines), self._batch_cap())
        data = b"".join(lines if k == len(lines) else lines[:k])
        limit = self._cfg.rotate_max_bytes if self._regular else 0
        size = self._size
        if len(data) <= _MAX_WRITE and (not limit or size + len(data) <= limit):
            return k, data
        n, start = 0, size
        for line in lines[:k]:
            if n and size + len(line) - start > _MAX_WRITE:
                break
            if limit and size + len(line) > limit and size > 0:
                break
            size += len(line)
            n += 1
        return n, b"".join(lines[:n])

    def _flush(self) -> bool:
        """Write own lines, then taken lines, rotating between lines. False on an I/O error.

        Returns early (True, lines left) when a reopen or a new config is asked for.
        """
        if self._fd < 0 and not self._open():
            return False
        while True:
            if self._partial is not None:
                if not self._write_partial():
                    return False
                continue
            if self._reopen_req or self._new_cfg is not None:
                return True  # between two lines: the loop reopens, then we go on
            own = bool(self._own_lines)
            lines = self._own_lines if own else self._pend
            if not lines:
                return True
            n, data = self._chunk(lines)
            if n == 0:  # the next line does not fit: rotate first
                self._switch_file("size")
                if self._fd < 0:
                    return False
                continue
            self._partial = (self._fd, data, 0, self._size, n, own)
            if not self._write_partial():
                return False

    def _write_partial(self) -> bool:
        assert self._partial is not None
        fd, data, off, start, n, own = self._partial
        if fd != self._fd:  # the file changed under a half-written chunk: rewrite it whole
            self._partial = None
            return True
        mv = memoryview(data)
        try:
            while off < len(data):
                k = os.write(fd, mv[off:])
                if k == 0:
                    raise OSError(errno.EIO, "write returned 0")
                off += k
        except OSError as e:
            self._partial = (fd, data, off, start, n, own)
            self._error("write", e)
            return False
        self._partial = None
        if own:
            del self._own_lines[:n]
            self._own_written += n
        else:
            del self._pend[:n]
            self._written += n
        self._size = start + len(data)
        self._bytes += len(data)
        self._dirty = True
        return True

    def _give_up(self) -> None:
        """stop() timed out on a failing disk: count what is left as dropped."""
        n = len(self._buf)
        left = len(self._pend) + n
        del self._buf[:n]
        self._pend = []
        self._own_lines.clear()
        self._partial = None
        self._lost_on_stop = left
        self._writer_dropped += left
