"""Supervisor for the daemon's child components (the LLM proxy, ...).

Start, watch, restart with exponential backoff within a restart budget, stop
on shutdown (SIGTERM, then SIGKILL after a timeout), and report state, pid,
restarts, uptime and last exit. A child that exhausts its budget is left
``failed`` and makes the daemon report itself degraded.

A child with a ``channel`` gets an already-connected socket to the daemon at
spawn (``--channel-fd N``): it never depends on a socket path or on group
membership to reach its parent, and it reports over it. Such a child is
``starting`` until it reports ``ready`` (listening, privileges dropped), and
its reports (health, errors) are kept for ``status``. Exit code 78
(EX_CONFIG) means "cannot run with this configuration" (e.g. the port is
taken): the child is ``failed`` with the one-line error it reported, and is
retried at the slowest backoff without using up its budget. A pidfile lets
a new daemon find and end a child the previous one left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from agentsh.agent.core.events.models import ComponentExited, Event
from agentsh.agent.daemon.metrics import Cumulative

log = logging.getLogger("agentsh.supervisor")


@dataclass
class ChildSpec:
    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    budget_restarts: int = 10
    """At most this many restarts within ``budget_window`` seconds, then ``failed``."""
    budget_window: float = 300.0
    stop_timeout: float = 5.0
    stable_after: float = 30.0
    """A child that ran this long resets its backoff."""
    stdout: int | None = None
    stderr: int | None = None
    channel: Callable[[Callable[[], int | None]], socket.socket] | None = None
    """Makes a connected channel socket for each spawn (given a getter of the
    child's pid); the child gets its end as ``--channel-fd N``."""
    pidfile: Path | None = None
    """Where the running child's pid and start time are kept (reclaim after a crash)."""

EX_CONFIG = 78


@dataclass
class ChildState:
    spec: ChildSpec
    state: str = "stopped"  # starting|running|backoff|failed|stopped
    pid: int | None = None
    restarts: int = 0
    started_at: float | None = None
    last_exit_code: int | None = None
    last_exit_signal: str | None = None
    last_exit_at: float | None = None
    next_restart_at: float | None = None
    proc: asyncio.subprocess.Process | None = None
    task: asyncio.Task | None = None
    restart_times: deque = field(default_factory=deque)
    backoff: float = 0.0
    stop_requested: bool = False
    ready: bool = False
    report: dict[str, Any] = field(default_factory=dict)
    """The child's last report over its channel."""
    report_at: float | None = None
    error: str | None = None
    """The one-line reason the child gave for failing (EX_CONFIG)."""
    metrics: Cumulative = field(default_factory=Cumulative)
    """The counters its reports carry (``metrics``), across its restarts (agent/daemon/metrics.py)."""

    def snapshot(self) -> dict[str, Any]:
        now = time.time()
        return {
            "name": self.spec.name,
            "state": self.state,
            "ready": self.ready,
            "error": self.error,
            "report": self.report or None,
            "report_age_seconds": round(now - self.report_at, 3) if self.report_at else None,
            "pid": self.pid,
            "restarts": self.restarts,
            "uptime_seconds": round(now - self.started_at, 3)
            if self.started_at and self.state == "running"
            else None,
            "last_exit": None
            if self.last_exit_at is None
            else {
                "code": self.last_exit_code,
                "signal": self.last_exit_signal,
                "at": self.last_exit_at,
            },
            "next_restart_in_seconds": round(self.next_restart_at - now, 3)
            if self.next_restart_at and self.state == "backoff"
            else None,
        }


class Supervisor:
    def __init__(self, emit: Callable[[Event], bool] | None = None) -> None:
        self._children: dict[str, ChildState] = {}
        self._emit = emit

    def add(self, spec: ChildSpec) -> ChildState:
        if spec.name in self._children:
            raise ValueError(f"child {spec.name!r} already supervised")
        st = ChildState(spec=spec)
        self._children[spec.name] = st
        return st

    def get(self, name: str) -> ChildState | None:
        return self._children.get(name)

    def start(self, name: str) -> None:
        st = self._children[name]
        st.stop_requested = False
        if st.task is None or st.task.done():
            st.task = asyncio.create_task(self._run(st), name=f"supervise-{name}")

    async def _spawn(self, st: ChildState) -> None:
        spec = st.spec
        st.state = "starting"
        st.ready = False
        st.report = {}
        st.report_at = None
        argv = list(spec.argv)
        child_end: socket.socket | None = None
        pass_fds: tuple[int, ...] = ()
        if spec.channel is not None:
            child_end = spec.channel(lambda: st.pid)
            argv += ["--channel-fd", str(child_end.fileno())]
            pass_fds = (child_end.fileno(),)
        try:
            st.proc = await asyncio.create_subprocess_exec(
                *argv,
                env=spec.env,
                cwd=spec.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=spec.stdout,
                stderr=spec.stderr,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        finally:
            if child_end is not None:
                child_end.close()  # the child has its copy
        st.pid = st.proc.pid
        st.started_at = time.time()
        if spec.channel is None:
            st.state = "running"
            st.ready = True
        self._write_pidfile(st)
        log.info("started %s (pid %d)", spec.name, st.pid)

    def _write_pidfile(self, st: ChildState) -> None:
        if st.spec.pidfile is None or st.pid is None:
            return
        try:
            created = psutil.Process(st.pid).create_time()
            st.spec.pidfile.write_text(f"{st.pid} {created!r}\n")
        except (OSError, psutil.Error) as e:
            log.warning("cannot write %s: %s", st.spec.pidfile, e)

    def report(self, name: str, state: dict[str, Any]) -> None:
        """A child's report over its channel (readiness, health, a fatal error)."""
        st = self._children.get(name)
        if st is None:
            return
        m = state.pop("metrics", None)  # for /metrics, not status
        if m is not None:
            st.metrics.update(st.pid, m)
        st.report = state
        st.report_at = time.time()
        err = state.get("error")
        if isinstance(err, str) and err:
            st.error = err[:500]
        if state.get("ready") and not st.ready:
            st.ready = True
            st.error = None
            if st.state == "starting":
                st.state = "running"
            log.info("%s ready (pid %s)", name, st.pid)

    async def _run(self, st: ChildState) -> None:
        spec = st.spec
        st.backoff = spec.backoff_initial
        while not st.stop_requested:
            try:
                await self._spawn(st)
            except OSError as e:
                log.error("cannot start %s: %s", spec.name, e)
                st.last_exit_code, st.last_exit_signal = None, None
                st.last_exit_at = time.time()
                rc = None
            else:
                assert st.proc is not None
                rc = await st.proc.wait()
                st.last_exit_at = time.time()
                if rc < 0:
                    st.last_exit_code, st.last_exit_signal = None, signal.Signals(-rc).name
                else:
                    st.last_exit_code, st.last_exit_signal = rc, None
                ran = st.last_exit_at - (st.started_at or st.last_exit_at)
                if ran >= spec.stable_after:
                    st.backoff = spec.backoff_initial
            st.pid = None
            st.ready = False
            if st.stop_requested:
                st.state = "stopped"
                self._exited(st, will_restart=False)
                return
            now = time.time()
            if rc == EX_CONFIG:
                # Cannot run with this configuration (the child said why): no
                # crash loop, no budget used; try again at the slowest pace.
                st.state = "failed"
                st.error = st.error or f"{spec.name} exited {EX_CONFIG} (configuration error)"
                st.next_restart_at = now + spec.backoff_max
                self._exited(st, will_restart=True, delay=spec.backoff_max)
                log.error("%s: %s (retrying in %.0fs)", spec.name, st.error, spec.backoff_max)
                await asyncio.sleep(spec.backoff_max)
                if st.stop_requested:
                    st.state = "stopped"
                    return
                st.next_restart_at = None
                continue
            # budget
            while st.restart_times and now - st.restart_times[0] > spec.budget_window:
                st.restart_times.popleft()
            if len(st.restart_times) >= spec.budget_restarts:
                st.state = "failed"
                log.error(
                    "%s exited (%s) and used its restart budget (%d in %.0fs): giving up",
                    spec.name,
                    st.last_exit_signal or st.last_exit_code,
                    spec.budget_restarts,
                    spec.budget_window,
                )
                self._exited(st, will_restart=False)
                return
            delay = st.backoff
            st.backoff = min(st.backoff * 2, spec.backoff_max)
            st.state = "backoff"
            st.next_restart_at = now + delay
            self._exited(st, will_restart=True, delay=delay)
            log.warning(
                "%s exited (%s); restarting in %.1fs",
                spec.name,
                st.last_exit_signal or st.last_exit_code,
                delay,
            )
            await asyncio.sleep(delay)
            if st.stop_requested:
                st.state = "stopped"
                return
            st.restart_times.append(time.time())
            st.restarts += 1
            st.next_restart_at = None

    def _exited(self, st: ChildState, will_restart: bool, delay: float | None = None) -> None:
        if self._emit:
            self._emit(
                ComponentExited(
                    component=st.spec.name,
                    exit_code=st.last_exit_code,
                    signal=st.last_exit_signal,
                    restarts=st.restarts,
                    will_restart=will_restart,
                    next_restart_in_seconds=delay,
                )
            )

    def signal(self, name: str, sig: int) -> bool:
        st = self._children.get(name)
        if st and st.proc and st.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                st.proc.send_signal(sig)
                return True
        return False

    async def stop(self, name: str) -> None:
        st = self._children[name]
        st.stop_requested = True
        proc = st.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), st.spec.stop_timeout)
            except TimeoutError:
                log.warning("%s did not stop in %.1fs: SIGKILL", name, st.spec.stop_timeout)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        if st.task is not None:
            st.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await st.task
        st.state = "stopped"
        st.pid = None

    async def stop_all(self) -> None:
        await asyncio.gather(*(self.stop(n) for n in list(self._children)))

    async def remove(self, name: str) -> None:
        if name in self._children:
            await self.stop(name)
            del self._children[name]

    def status(self) -> list[dict[str, Any]]:
        return [st.snapshot() for st in self._children.values()]

    def failed(self) -> list[str]:
        return [n for n, st in self._children.items() if st.state == "failed"]


def reclaim_stale(pidfile: Path, marker: str, state_dir: str) -> list[int]:
    """End children a previous daemon left behind (after kill -9 they may still
    hold the proxy's port): the one in ``pidfile`` if it is still that process,
    and any orphan (parent gone) whose command line has ``marker`` and our
    ``--state-dir``. Returns the pids ended."""
    victims: dict[int, psutil.Process] = {}
    try:
        pid_s, created_s = pidfile.read_text().split()[:2]
        p = psutil.Process(int(pid_s))
        if abs(p.create_time() - float(created_s)) < 0.01 and marker in " ".join(p.cmdline()):
            victims[p.pid] = p
    except (OSError, ValueError, psutil.Error):
        pass
    for p in psutil.process_iter(["cmdline", "ppid"]):
        with contextlib.suppress(psutil.Error):
            cmd = p.info["cmdline"] or []
            if marker in cmd and "--state-dir" in cmd and p.info["ppid"] == 1:
                i = cmd.index("--state-dir")
                if i + 1 < len(cmd) and cmd[i + 1] == state_dir and p.pid != os.getpid():
                    victims[p.pid] = p
    for p in victims.values():
        log.warning("ending %s left by a previous daemon (pid %d)", marker, p.pid)
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(list(victims.values()), timeout=3)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    with contextlib.suppress(OSError):
        pidfile.unlink()
    return sorted(victims)
