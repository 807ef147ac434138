"""The supervisor restarts crashing children with backoff, gives up after its
budget, and stops children (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from agentsh.agent.core.events.models import ComponentExited, Event
from agentsh.agent.daemon.supervisor import ChildSpec, Supervisor


async def wait_until(pred, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


async def test_crashing_child_is_restarted_with_backoff_then_marked_failed() -> None:
    events: list[Event] = []
    sup = Supervisor(emit=lambda e: events.append(e) or True)
    sup.add(
        ChildSpec(
            name="crasher",
            argv=[sys.executable, "-c", "import sys; sys.exit(3)"],
            backoff_initial=0.05,
            backoff_max=0.4,
            budget_restarts=4,
            budget_window=60,
        )
    )
    sup.start("crasher")
    await wait_until(lambda: sup.get("crasher").state == "failed")
    st = sup.status()[0]
    assert st["restarts"] == 4
    assert st["last_exit"]["code"] == 3
    exits = [e for e in events if isinstance(e, ComponentExited)]
    assert len(exits) == 5
    assert [e.will_restart for e in exits] == [True, True, True, True, False]
    delays = [e.next_restart_in_seconds for e in exits[:-1]]
    assert delays == [0.05, 0.1, 0.2, 0.4]  # exponential, capped at backoff_max
    assert sup.failed() == ["crasher"]
    await sup.stop_all()


async def test_killed_child_is_restarted() -> None:
    sup = Supervisor()
    sup.add(ChildSpec(name="sleeper", argv=["sleep", "60"], backoff_initial=0.05))
    sup.start("sleeper")
    await wait_until(lambda: sup.get("sleeper").state == "running")
    first = sup.get("sleeper").pid
    os.kill(first, signal.SIGKILL)
    await wait_until(lambda: sup.get("sleeper").pid not in (None, first) and sup.get("sleeper").state == "running")
    st = sup.status()[0]
    assert st["restarts"] == 1 and st["last_exit"]["signal"] == "SIGKILL"
    await sup.stop_all()
    assert sup.get("sleeper").state == "stopped"


async def test_stop_escalates_to_sigkill_for_a_child_ignoring_sigterm() -> None:
    sup = Supervisor()
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    sup.add(ChildSpec(name="stubborn", argv=[sys.executable, "-c", code], stop_timeout=0.5,
                      stdout=asyncio.subprocess.PIPE))
    sup.start("stubborn")
    await wait_until(lambda: sup.get("stubborn").proc is not None)
    await sup.get("stubborn").proc.stdout.readline()  # handler installed
    pid = sup.get("stubborn").pid
    await sup.stop("stubborn")
    assert sup.get("stubborn").state == "stopped"
    assert sup.get("stubborn").proc.returncode == -signal.SIGKILL
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().split()[2] == "Z"
