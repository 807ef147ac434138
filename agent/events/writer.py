"""The one writer of ``events.jsonl``: every event in the system goes through here.

Design (why it looks like this):

* **A dedicated writer thread**, not an asyncio task + executor. File I/O
  (write, fsync, rename, open) blocks; in a thread it never stalls the event
  loop, and one blocking ``SimpleQueue.get`` per batch replaces an executor hop
  and a loop wake-up per batch. Producers live on several threads (the BPF
  ring-buffer poller, the asyncio loop, executor workers): a plain thread-safe
  queue serves all of them without ``call_soon_threadsafe`` (a self-pipe write
  per call). It also works with no event loop at all (tests, tools).
* **emit() is cheap and never blocks on disk**: it assigns an id when empty,
  takes ``time.time_ns()`` and puts ``(ns, event)`` into a bounded queue. The
  model → dict → orjson work happens in the writer thread. emit() takes no
  lock (a lock convoys under the GIL: one preempted holder stalls every
  producer for a switch interval); its counters are ``itertools.count`` (atomic
  ``next()``), and ``stop()`` waits for in-flight emit() calls before the final
  drain, so no accepted event is left behind. The bound is checked without a
  lock, so the queue may exceed ``queue_size`` by at most one item per thread.
* **Backlog**: when the queue holds more than ``queue_size/64`` events, the
  writer is starved of the GIL by busy producers (each write() hands the GIL
  away, getting it back takes a switch interval per busy thread). Then emit()
  serializes its own event (a few µs, still no I/O) and the writer takes 16x
  ``batch_max`` lines per write, so it catches up instead of dropping.
* **Lines are never split**: the writer alone decides where a file ends. It
  writes whole lines in batches, rotates between lines, and if a write fails
  half-way it finishes the same line in the same file, or cuts the partial
  line off (``ftruncate``) before it switches files.
* The writer's own events (``events_rotated``, ``events_dropped``) are written
  directly, never queued, so they cannot be dropped.

Errors (disk full, EACCES, missing directory): the writer records
``last_error``, keeps the unwritten lines in memory (at most one batch) and
retries with a backoff of up to one second; meanwhile the queue fills and
overflow is counted in ``dropped``. Nothing is lost silently: every event
passed to ``emit()`` is either written or counted as dropped (``emit()`` returns
False for the latter). Events still unwritten when ``stop()`` gives up after its
timeout are counted as dropped too.

Events must not be mutated by the producer after ``emit()``: they are
serialized later, in the writer thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import itertools
import os
import queue
import secrets
import socket
import stat
import threading
import time
import typing
from typing import Any

import orjson
from pydantic import BaseModel

from agentsh.agent.events.models import Event, EventsDropped, EventsRotated
from agentsh.agent.policy.schema import EventsConfig

_WAKE = object()
"""Queue sentinel: wakes the writer for stop/reopen/reconfigure."""

_DUMP_OPTS = orjson.OPT_APPEND_NEWLINE
_DROP_REPORT_INTERVAL = 1.0
_MAX_BACKOFF = 1.0


def _nullable_fields(cls: type[BaseModel]) -> tuple[str, ...] | None:
    """Fields that may hold None, or None when the fast path does not apply.

    The fast path (copy ``__dict__``, delete the None-valued nullable fields)
    equals ``model_dump(exclude_none=True)`` for plain models: no aliases, no
    custom serializers, no extras. Every model in agentsh.agent.events.models is
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


class EventWriter:
    """Bounded, batched, rotating JSONL writer. See the module docstring."""

    def __init__(self, config: EventsConfig | None = None, *, host: str | None = None) -> None:
        self._cfg = config or EventsConfig()
        self._path = self._cfg.path
        self._host = host or socket.gethostname()
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._max = self._cfg.queue_size
        self._hiwater = max(256, self._max // 64)
        self._accepting = True
        self._prefix = new_id_prefix()
        self._seq = itertools.count()
        self._clock = _Clock()
        self._kick = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stop_deadline = float("inf")
        self._reopen_req = False
        self._new_cfg: EventsConfig | None = None
        # file state (writer thread only)
        self._fd = -1
        self._regular = True
        self._size = 0
        self._dirty = False
        self._last_fsync = time.monotonic()
        self._lines: collections.deque[tuple[bytes, bool]] = collections.deque()
        # a chunk being written: fd, data, offset, file size before it, lines, own lines
        self._partial: tuple[int, bytes, int, int, int, int] | None = None
        # counters
        # itertools.count: next() is atomic under the GIL, so emit() needs no lock
        self._n_enter = itertools.count()
        self._n_exit = itertools.count()
        self._n_accepted = itertools.count()
        self._n_dropped = itertools.count()
        self._writer_dropped = 0  # writer thread only: unserializable, lost at stop
        self._dropped_reported = 0
        self._last_drop_report = 0.0
        self._written = 0
        self._own_written = 0
        self._bytes = 0
        self._rotations = 0
        self._reopens = 0
        self._fsyncs = 0
        self._errors = 0
        self._last_error: str | None = None
        self._lost_on_stop = 0

    # ------------------------------------------------------------------ producers

    def emit(self, event: Event) -> bool:
        """Queue ``event``; True if accepted, False if dropped (counted). Never blocks on I/O.

        Thread-safe; callable from the event loop, any thread, before ``start()``
        (events wait in the queue) but not after ``stop()`` (then it returns False).
        """
        next(self._n_enter)  # see stop_sync: no emit() is left half-done at the final drain
        d = event.__dict__
        if not d["id"]:
            d["id"] = f"{self._prefix}{next(self._seq):010x}"
        item: Any = (time.time_ns(), event)
        if self._q.qsize() > self._hiwater:
            # The writer is behind: most likely it does not get enough of the GIL
            # against busy producers. The producer then serializes its own event
            # (a few µs, still no I/O), so the writer only has bytes to write.
            with contextlib.suppress(Exception):
                item = self._line(item[0], event)
        if self._accepting and self._q.qsize() < self._max:
            self._q.put(item)
            next(self._n_accepted)
            next(self._n_exit)
            return True
        next(self._n_dropped)
        next(self._n_exit)
        return False

    def request_reopen(self) -> None:
        """Close and reopen the file at its path (after an external rename, e.g. logrotate).

        Safe from any thread and from signal handlers.
        """
        self._reopen_req = True
        self._q.put(_WAKE)
        self._kick.set()

    def reconfigure(self, config: EventsConfig) -> None:
        """Apply a new EventsConfig (policy reload); a new path means a reopen there."""
        self._new_cfg = config
        self._max = config.queue_size
        self._hiwater = max(256, self._max // 64)
        self._q.put(_WAKE)
        self._kick.set()

    def stats(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "running": self._thread is not None and self._thread.is_alive(),
            "accepted": _value(self._n_accepted),
            "written": self._written,
            "own_events_written": self._own_written,
            "dropped": self._dropped,
            "queue_depth": self._q.qsize(),
            "queue_size": self._max,
            "rotations": self._rotations,
            "reopens": self._reopens,
            "bytes_written": self._bytes,
            "fsyncs": self._fsyncs,
            "write_errors": self._errors,
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
        """Stop accepting, drain the queue, fsync, close. True if everything was written."""
        return await asyncio.to_thread(self.stop_sync, timeout)

    @property
    def _dropped(self) -> int:
        return _value(self._n_dropped) + self._writer_dropped

    def stop_sync(self, timeout: float = 30.0) -> bool:
        self._accepting = False
        # Wait until every emit() that may have seen _accepting True has put its
        # item: exits are read before entries, so equality means none was in flight.
        deadline = time.monotonic() + 1.0
        while _value(self._n_exit) != _value(self._n_enter) and time.monotonic() < deadline:
            time.sleep(0.0002)
        self._stop_deadline = time.monotonic() + timeout
        self._stopping = True
        self._q.put(_WAKE)
        self._kick.set()
        if self._thread is None:
            self.start_thread()
        assert self._thread is not None
        self._thread.join(timeout + 5.0)
        if self._thread.is_alive():  # stuck in a syscall (e.g. open() of a FIFO)
            self._last_error = self._last_error or "writer thread did not finish"
            return False
        return self._lost_on_stop == 0

    # ------------------------------------------------------------------ writer thread

    def _run(self) -> None:
        backoff = 0.05
        while True:
            if self._new_cfg is not None:
                self._apply_config()
            if self._reopen_req:
                self._reopen_req = False
                self._switch_file("reopen")
            if self._lines or self._fd < 0:
                if self._flush_lines():
                    backoff = 0.05
                else:
                    if self._stopping and time.monotonic() >= self._stop_deadline:
                        self._give_up()
                        break
                    self._kick.wait(backoff)
                    self._kick.clear()
                    backoff = min(backoff * 2, _MAX_BACKOFF)
                    continue
            if self._stopping and self._q.qsize() == 0:
                self._report_drops(force=True)
                if self._lines and not self._flush_lines():
                    continue
                break
            batch = self._collect(self._idle_timeout())
            if batch:
                self._serialize(batch)
                self._flush_lines()
            self._report_drops(force=False)
            self._maybe_fsync()
        self._close()
        with contextlib.suppress(queue.Empty):
            while True:  # only wake-up sentinels are left
                self._q.get_nowait()

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
        """``batch_max`` lines per write; 16x that while a backlog builds up.

        Every write() hands the GIL to the producers, and getting it back can
        take a switch interval (5 ms) per busy producer thread: under a backlog
        the writer must move more per round trip to keep up.
        """
        n = self._cfg.batch_max
        return n * 16 if self._q.qsize() > self._hiwater else n

    def _collect(self, timeout: float | None) -> list[tuple[int, Event]]:
        q = self._q
        try:
            first = q.get(timeout=timeout) if timeout != 0 else q.get_nowait()
        except queue.Empty:
            return []
        batch = [] if first is _WAKE else [first]
        get = q.get_nowait
        for _ in range(self._batch_cap() - len(batch)):
            try:
                item = get()
            except queue.Empty:
                break
            if item is not _WAKE:
                batch.append(item)
        return batch

    def _line(self, ns: int, ev: BaseModel) -> bytes:
        d = _plain(ev)
        if not d.get("timestamp"):
            d["timestamp"] = self._clock.format(ns)
        if not d.get("host"):
            d["host"] = self._host
        return orjson.dumps(d, default=_default, option=_DUMP_OPTS)

    def _serialize(self, batch: list[tuple[int, Event]]) -> None:
        append = self._lines.append
        line = self._line
        for item in batch:
            if item.__class__ is bytes:  # serialized by a producer (see emit)
                append((item, False))
                continue
            ns, ev = item
            try:
                append((line(ns, ev), False))
            except Exception:  # a value orjson cannot encode: let pydantic coerce it
                try:
                    d = orjson.loads(ev.model_dump_json(exclude_none=True))
                    d["timestamp"] = d.get("timestamp") or self._clock.format(ns)
                    d["host"] = d.get("host") or self._host
                    append((orjson.dumps(d, option=_DUMP_OPTS), False))
                except Exception as e:
                    self._writer_dropped += 1
                    self._last_error = f"cannot serialize {ev.type} event {ev.id}: {e}"

    def _own(self, ev: Event, front: bool = False) -> None:
        ev.id = f"{self._prefix}{next(self._seq):010x}"
        line = (self._line(time.time_ns(), ev), True)
        if front:
            self._lines.appendleft(line)
        else:
            self._lines.append(line)

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
        self._flush_lines()

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
        except OSError as e:
            os.close(fd)
            self._error("open", e)
            return False
        self._fd = fd
        self._size = st.st_size if self._regular else 0
        return True

    def _close(self) -> None:
        if self._fd < 0:
            return
        self._drop_partial()
        self._fsync()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1

    def _fsync(self) -> None:
        if self._fd >= 0 and self._dirty and self._regular:
            try:
                os.fsync(self._fd)
                self._fsyncs += 1
            except OSError as e:
                self._error("fsync", e)
        self._dirty = False
        self._last_fsync = time.monotonic()

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

    def _flush_lines(self) -> bool:
        """Write queued lines, rotating between lines. False on an I/O error (retry later)."""
        if self._fd < 0 and not self._open():
            return False
        lines = self._lines
        limit = self._cfg.rotate_max_bytes
        cap = self._batch_cap()
        while lines:
            if self._partial is not None:
                if not self._write_partial():
                    return False
                continue
            chunk: list[bytes] = []
            size = self._size
            n_own = 0
            for line, own in lines:
                if limit and self._regular and size + len(line) > limit and size > 0:
                    break
                chunk.append(line)
                size += len(line)
                n_own += own
                if len(chunk) >= cap:
                    break
            if not chunk:  # the next line does not fit: rotate first
                self._switch_file("size")
                if self._fd < 0:
                    return False
                continue
            self._partial = (self._fd, b"".join(chunk), 0, self._size, len(chunk), n_own)
            if not self._write_partial():
                return False
        return True

    def _write_partial(self) -> bool:
        assert self._partial is not None
        fd, data, off, start, n, n_own = self._partial
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
            self._partial = (fd, data, off, start, n, n_own)
            self._error("write", e)
            return False
        self._partial = None
        popleft = self._lines.popleft
        for _ in range(n):
            popleft()
        self._written += n - n_own
        self._own_written += n_own
        self._size = start + len(data)
        self._bytes += len(data)
        self._dirty = True
        return True

    def _give_up(self) -> None:
        """stop() timed out on a failing disk: count what is left as dropped."""
        left = sum(1 for _line, own in self._lines if not own)
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not _WAKE:
                left += 1
        self._lines.clear()
        self._partial = None
        self._lost_on_stop = left
        self._writer_dropped += left
