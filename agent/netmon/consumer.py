"""Ring-buffer consumer: kernel records → events, on a thread of its own.

The poll loop runs in a daemon thread (``ring_buffer_poll`` with a timeout),
never on the event loop. Per record the work is fixed: unpack one fixed-size
record, two dict lookups (formatted address, server), a cached process lookup,
build the event without validation (the fields come from our own struct,
whose layout ``layout.EVENT`` the compiler checked) and ``emit()``
(thread-safe, non-blocking).

Lost records: the kernel counts failed ring-buffer reservations in the pinned
per-CPU ``stats_v1`` map; this thread reads it about once a second and emits
``bpf_lost_events`` when it grew.
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import operator
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from agentsh.agent.core.events.models import (
    BPFLostEvents,
    Event,
    MCPNetworkConnection,
    NetworkConnect,
)
from agentsh.agent.netmon.layout import (
    ACT_BLOCK,
    EVENT,
    FAM_UNIX,
    FAM_V4,
    FAM_V6,
    KIND_SENDMSG,
    KIND_TRACE,
    MAP_STATS,
    STAT_BLOCKED,
    STAT_LOST,
    STAT_MATCHED,
    STAT_MAX,
    STAT_TRACE_LOST,
    TAG_NAMES,
)
from agentsh.agent.netmon.procinfo import ProcCache
from agentsh.agent.netmon.resolver import ServerRef

log = logging.getLogger("agentsh.netmon")

REC = EVENT.struct
# The fields handle() uses, by name, in the order it unpacks them (one C-level
# itemgetter per record instead of a namedtuple: this is the hot path).
_FIELDS = operator.itemgetter(*(EVENT.names.index(n) for n in (
    "cgroup_id", "tgid", "uid", "server_idx", "addr", "port", "family",
    "protocol", "action", "kind", "tag", "ret", "comm",
)))
_FAMILY: dict[int, Literal["ipv4", "ipv6", "unix"]] = {FAM_V4: "ipv4", FAM_V6: "ipv6", FAM_UNIX: "unix"}
_V4MAPPED = b"\0" * 10 + b"\xff\xff"
_PROTO: dict[int, Literal["tcp", "udp"]] = {6: "tcp", 17: "udp"}


def format_addr(addr: bytes, port: int) -> str:
    """``a.b.c.d:port`` for IPv4 and v4-mapped, ``[v6]:port`` otherwise."""
    if addr[:12] == _V4MAPPED:
        return f"{ipaddress.IPv4Address(addr[12:])}:{port}"
    return f"[{ipaddress.IPv6Address(addr)}]:{port}"


class Consumer:
    def __init__(
        self,
        programs: Any,
        emit: Callable[[Event], bool],
        proc: ProcCache | None = None,
        poll_timeout_ms: int = 100,
    ) -> None:
        self.programs = programs
        self.emit = emit
        self.proc = proc or ProcCache()
        self.poll_timeout_ms = poll_timeout_ms
        self.servers: list[ServerRef] = [ServerRef("", "", 0, False)]
        self._addr_cache: dict[bytes, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.seen = 0
        self.emitted = 0
        self.emit_failed = 0
        self.decode_errors = 0
        self.trace_seen = 0
        self.lost_total = 0
        self.trace_lost_total = 0
        self.matched_total = 0
        self.blocked_total = 0
        self._lost_reported: int | None = None
        self.last_error: str | None = None
        self._stats_table = programs.table(MAP_STATS)
        self._cb = self._on_record  # keep a reference for the ctypes callback

    # ------------------------------------------------------------------ thread

    def start(self) -> None:
        self.programs.open_ring(self._cb)
        self.read_stats()
        self._lost_reported = self.lost_total + self.trace_lost_total
        self._thread = threading.Thread(target=self._run, name="agentsh-bpf-ring", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        next_stats = time.monotonic() + 1.0
        while not self._stop.is_set():
            try:
                self.programs.poll(self.poll_timeout_ms)
            except Exception as e:
                self.last_error = f"poll: {e}"
                log.exception("ring buffer poll failed")
                time.sleep(0.1)
            now = time.monotonic()
            if now >= next_stats:
                next_stats = now + 1.0
                self.check_lost()
        # drain what is left without blocking
        try:
            self.programs.poll(0)
        except Exception:
            pass

    # ------------------------------------------------------------------ records

    def _on_record(self, _ctx: Any, data: int, size: int) -> int:
        try:
            if size < REC.size:
                self.decode_errors += 1
                return 0
            self.handle(ctypes.string_at(data, REC.size))
        except Exception as e:
            self.decode_errors += 1
            self.last_error = f"record: {e}"
        return 0

    def handle(self, raw: bytes) -> None:
        (cgid, tgid, uid, sidx, addr, port, family, proto, action, kind, tag, ret, comm_b) = (
            _FIELDS(REC.unpack(raw))
        )
        self.seen += 1
        comm = comm_b.split(b"\0", 1)[0].decode(errors="replace")
        facts = self.proc.get(tgid, comm, uid)
        if kind == KIND_TRACE:
            self.trace_seen += 1
            remote = self._remote(addr, port) if family in (FAM_V4, FAM_V6) else ""
            ev: Event = NetworkConnect.model_construct(
                source="bpf",
                remote_addr=remote,
                family=_FAMILY.get(family, "other"),
                result=ret,
                cgroup_id=cgid,
                pid=tgid,
                uid=uid,
                comm=comm,
                exe=facts.exe,
                cmdline=facts.cmdline,
                ppid=facts.ppid,
                username=facts.username,
            )
        else:
            servers = self.servers
            ref = servers[sidx] if sidx < len(servers) else ServerRef("", "", tag, False)
            ev = MCPNetworkConnection.model_construct(
                source="bpf",
                remote_addr=self._remote(addr, port),
                server_id=ref.server_id,
                server_type=ref.server_type,
                action="block" if action == ACT_BLOCK else "allow",
                protocol=_PROTO.get(proto, "tcp"),
                family="ipv4" if family == FAM_V4 else "ipv6",
                phase="sendmsg" if kind == KIND_SENDMSG else "connect",
                cgroup_id=cgid,
                tag=TAG_NAMES.get(tag),
                pid=tgid,
                uid=uid,
                comm=comm,
                exe=facts.exe,
                cmdline=facts.cmdline,
                ppid=facts.ppid,
                username=facts.username,
            )
        if self.emit(ev):
            self.emitted += 1
        else:
            self.emit_failed += 1

    def _remote(self, addr: bytes, port: int) -> str:
        k = addr + port.to_bytes(2, "little")
        s = self._addr_cache.get(k)
        if s is None:
            s = format_addr(addr, port)
            if len(self._addr_cache) > 65536:
                self._addr_cache.clear()
            self._addr_cache[k] = s
        return s

    # ------------------------------------------------------------------ counters

    def read_stats(self) -> None:
        t = self._stats_table
        vals = []
        for i in range(STAT_MAX):
            try:
                per_cpu = t[t.Key(i)]
                vals.append(int(sum(per_cpu)))
            except Exception:
                vals.append(0)
        self.lost_total = vals[STAT_LOST]
        self.matched_total = vals[STAT_MATCHED]
        self.blocked_total = vals[STAT_BLOCKED]
        self.trace_lost_total = vals[STAT_TRACE_LOST]

    def check_lost(self) -> None:
        try:
            self.read_stats()
        except Exception as e:
            self.last_error = f"stats: {e}"
            return
        total = self.lost_total + self.trace_lost_total
        prev = self._lost_reported if self._lost_reported is not None else total
        if total > prev:
            self.emit(
                BPFLostEvents.model_construct(
                    source="bpf", lost_total=total, lost_since_last=total - prev
                )
            )
        self._lost_reported = total

    def status(self) -> dict[str, Any]:
        return {
            "events_seen": self.seen,
            "events_emitted": self.emitted,
            "events_emit_failed": self.emit_failed,
            "trace_records": self.trace_seen,
            "decode_errors": self.decode_errors,
            "lost_events": self.lost_total,
            "trace_lost_events": self.trace_lost_total,
            "matched_total": self.matched_total,
            "blocked_total": self.blocked_total,
            "proc_cache": {"size": len(self.proc), "hits": self.proc.hits, "misses": self.proc.misses},
            "last_error": self.last_error,
        }
