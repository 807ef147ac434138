"""Supervisor for the daemon's child components (the LLM proxy, ...).

Start, watch, restart with exponential backoff within a restart budget, stop
on shutdown (SIGTERM, then SIGKILL after a timeout), and report state, pid,
restarts, uptime and last exit. A child that exhausts its budget is left
``failed`` and makes the daemon report itself degraded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentsh.agent.events.models import ComponentExited, Event

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

    def snapshot(self) -> dict[str, Any]:
        now = time.time()
        return {
            "name": self.spec.name,
            "state": self.state,
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
        st.proc = await asyncio.create_subprocess_exec(
            *spec.argv,
            env=spec.env,
            cwd=spec.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=spec.stdout,
            stderr=spec.stderr,
            start_new_session=True,
        )
        st.pid = st.proc.pid
        st.started_at = time.time()
        st.state = "running"
        log.info("started %s (pid %d)", spec.name, st.pid)

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
            if st.stop_requested:
                st.state = "stopped"
                self._exited(st, will_restart=False)
                return
            # budget
            now = time.time()
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
