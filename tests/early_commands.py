"""Long subprocess checks started as soon as collection ends, so they run beside the rest of the
suite instead of in its line (the scorer's training takes a CPU-minute or more each, and the rest
of the suite leaves a core idle while it waits on daemons and servers). The test that needs a
result waits for it; a check nobody collected is never started. They run at a lower priority, so
the tests beside them keep the CPU they ask for."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class _Early:
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    out: IO[bytes] | None = None
    err: IO[bytes] | None = None
    result: subprocess.CompletedProcess[str] | None = None


_COMMANDS: dict[str, _Early] = {}


def register(name: str, argv: list[str]) -> str:
    """Declare a check (at import of the test module); returns ``name`` for the marker."""
    _COMMANDS.setdefault(name, _Early(list(argv)))
    return name


def start(name: str) -> None:
    e = _COMMANDS[name]
    if e.proc is not None or e.result is not None:
        return
    # (closed in result(), once the process has written them)
    e.out, e.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115
    e.proc = subprocess.Popen(e.argv, stdout=e.out, stderr=e.err, cwd=ROOT,
                              preexec_fn=lambda: os.nice(10))  # fmt: skip


def result(name: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """The check's exit status and output, started now if collection did not start it."""
    e = _COMMANDS[name]
    if e.result is None:
        start(name)
        assert e.proc is not None and e.out is not None and e.err is not None
        try:
            rc = e.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            e.proc.kill()
            e.proc.wait()
            raise
        e.out.seek(0)
        e.err.seek(0)
        e.result = subprocess.CompletedProcess(e.argv, rc, e.out.read().decode(errors="replace"),
                                               e.err.read().decode(errors="replace"))  # fmt: skip
        e.out.close()
        e.err.close()
    return e.result


def stop_all() -> None:
    """Kill what is still running (a run stopped early, or a test deselected after start)."""
    for e in _COMMANDS.values():
        if e.proc is not None and e.result is None and e.proc.poll() is None:
            e.proc.kill()
            e.proc.wait()
