"""Shared fixtures: a real agentshd subprocess with its own config, socket,
state and event log, and helpers to read its events."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
AGENTSHD = str(BIN / "agentshd")
AGENTSHCTL = str(BIN / "agentshctl")
SHIM = str(BIN / "agentsh-shim")
NPM_MODULES = REPO / "tests" / "npm" / "node_modules"

# Tests run the daemon without the BPF layer and the proxy unless they ask for them:
# they are slow to start and have tests of their own.
BASE_TEST_POLICY = """
network:
  enabled: false
proxy:
  mode: disabled
daemon:
  watch_interval_seconds: 0.2
events:
  fsync_interval_seconds: 0.2
"""


def short_tmpdir(prefix: str = "ash") -> Path:
    """A short directory path (Unix socket paths are limited to 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def read_events(path: Path) -> list[dict[str, Any]]:
    """Complete lines only: after a kill -9 the log can end in a partial line until the
    next daemon repairs it (events_torn_tail), the way any tail reader must treat it."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    for line in complete.splitlines():
        if line.strip():
            out.append(orjson.loads(line))
    return out


def wait_for(pred: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or pred}")
        time.sleep(interval)


@dataclass
class DaemonProc:
    root: Path
    config_dir: Path
    state_dir: Path
    events_path: Path
    socket: Path
    log_path: Path
    proc: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def admin_socket(self) -> Path:
        return self.socket.with_name(self.socket.stem + "-admin.sock")

    def start(self, wait: bool = True) -> DaemonProc:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logf = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [
                AGENTSHD,
                "--foreground",
                "--config-dir", str(self.config_dir),
                "--socket", str(self.socket),
                "--state-dir", str(self.state_dir),
                "--events", str(self.events_path),
                "--log-level", "debug",
            ],
            stdout=logf,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        logf.close()
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"agentshd exited {self.proc.returncode}:\n{self.log()}")
            pid = self.proc.pid if self.proc is not None else None
            started = any(e["type"] == "daemon_started" and e.get("pid") == pid for e in self.events())
            return started and self.socket.exists()

        wait_for(ready, timeout, what="agentshd ready")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        evs = read_events(self.events_path)
        return [e for e in evs if type_ is None or e["type"] == type_]

    def wait_event(self, type_: str, pred: Callable[[dict], bool] = lambda e: True, timeout: float = 15.0) -> dict:
        return wait_for(
            lambda: next((e for e in self.events(type_) if pred(e)), None),
            timeout,
            what=f"event {type_}",
        )

    def ctl(self, *args: str, check: bool = False, user: str | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        cmd = [AGENTSHCTL, "--socket", str(self.socket), *args]
        if user:
            cmd = ["setpriv", f"--reuid={user}", "--regid=65534", "--clear-groups", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, input=input)
        if check and r.returncode != 0:
            raise AssertionError(f"agentshctl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def write_policy(self, text: str, name: str | None = None) -> Path:
        """Write the main policy file (or a drop-in with ``name``)."""
        if name:
            p = self.config_dir / "policy.d" / name
        else:
            p = self.config_dir / "agentsh.yaml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
        return p

    def stop(self, sig: int = 15, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture
def daemon_factory() -> Iterator[Callable[..., DaemonProc]]:
    made: list[DaemonProc] = []

    def make(policy: str | None = BASE_TEST_POLICY, start: bool = True, env: dict[str, str] | None = None) -> DaemonProc:
        root = short_tmpdir()
        d = DaemonProc(
            root=root,
            config_dir=root / "etc",
            state_dir=root / "lib",
            events_path=root / "log" / "events.jsonl",
            socket=root / "run" / "agentsh.sock",
            log_path=root / "log" / "agentshd.log",
            env=env or {},
        )
        d.config_dir.mkdir(parents=True)
        if policy is not None:
            d.write_policy(policy)
        made.append(d)
        if start:
            d.start()
        return d

    yield make
    for d in made:
        d.stop()
        shutil.rmtree(d.root, ignore_errors=True)


@pytest.fixture
def daemon(daemon_factory: Callable[..., DaemonProc]) -> DaemonProc:
    return daemon_factory()


_EXIT_STATUS: list[int] = [0]


def _xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist each worker collects every test and is handed whole files: the
    files whose tests wait on a long check (tests/early_commands.py) go first, so the
    worker that gets them starts the checks at once and the others run the rest beside
    them (the same order in every worker, as xdist requires)."""
    if _xdist_worker(config):
        early_files = {it.path for it in items if any(it.iter_markers("early"))}
        items.sort(key=lambda it: it.path not in early_files)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the long subprocess checks the selected tests need (tests/early_commands.py).
    Not in an xdist worker: it does not know yet which files it will be handed; the
    file that needs them starts them when its first test begins (pytest_runtest_setup)."""
    import early_commands

    if _xdist_worker(session.config):
        return
    for item in session.items:
        for mark in item.iter_markers("early"):
            early_commands.start(mark.args[0])


_EARLY_STARTED_FOR: set[Path] = set()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _xdist_worker(item.config) and item.path not in _EARLY_STARTED_FOR:
        import early_commands

        _EARLY_STARTED_FOR.add(item.path)
        for other in item.session.items:
            if other.path == item.path:
                for mark in other.iter_markers("early"):
                    early_commands.start(mark.args[0])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS[0] = int(exitstatus)
    import early_commands

    early_commands.stop_all()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Never let a stray non-daemon thread (left by a failed test) hang the run
    after the summary: CI would time out instead of reporting the failure."""
    stray = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if stray:
        sys.stdout.flush()
        sys.stderr.write(
            f"conftest: {len(stray)} non-daemon thread(s) still running at exit "
            f"({', '.join(t.name for t in stray)}); exiting without waiting for them\n"
        )
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[0])
