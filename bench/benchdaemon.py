"""What the benchmarks that need a live agentshd share: the daemon in a
private root-only directory, and percentiles. Imported by the bench scripts
as a sibling module (``python bench/<name>.py`` puts bench/ on sys.path)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENTSHD = str(Path(sys.executable).parent / "agentshd")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


class Daemon:
    """agentshd in a private directory (root only), on ``policy``."""

    def __init__(self, policy: str, prefix: str = "ashb") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        self.socket = self.root / "run" / "agentsh.sock"
        self.events = self.root / "log" / "events.jsonl"
        (self.root / "etc").mkdir(parents=True)
        (self.root / "etc" / "agentsh.yaml").write_text(policy)
        self.events.parent.mkdir(parents=True)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.root / "agentshd.log", "wb")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [AGENTSHD, "--config-dir", str(self.root / "etc"), "--socket", str(self.socket),
             "--state-dir", str(self.root / "lib"), "--events", str(self.events)],
            stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"agentshd exited {self.proc.returncode}: {(self.root / 'agentshd.log').read_text()}")
            if self.socket.exists() and b'"daemon_started"' in self.events.read_bytes()[-65536:]:
                return
            time.sleep(0.1)
        raise SystemExit("agentshd did not start in 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
