"""Request/response bodies for audit (``proxy.mode: mcp-only``).

Bodies never go into events.jsonl (which a SIEM tails and which must not carry
prompts or completions); they go to their own JSONL file under the state dir,
rotated by size like the event log (``proxy.body_storage``). The directory is
created (and handed to the proxy's user) before the proxy drops root.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from agentsh.agent.core.policy.schema import BodyStorageConfig

BODIES_DIR = "llm-bodies"
BODIES_FILE = "llm-bodies.jsonl"


def bodies_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / BODIES_DIR / BODIES_FILE


def _text(b: bytes) -> dict[str, str]:
    try:
        return {"text": b.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode()}


class BodyStore:
    def __init__(self, path: Path, cfg: BodyStorageConfig) -> None:
        self.path = path
        self.max_bytes = cfg.max_bytes
        self.backups = cfg.backups
        self._lock = threading.Lock()
        self._fh: Any = None
        self._size = 0
        self.written = 0
        self.errors = 0

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "ab", buffering=0)  # noqa: SIM115 - long-lived handle
        os.chmod(self.path, 0o600)
        self._size = self._fh.tell()

    def _rotate(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self.backups <= 0:
            self.path.unlink(missing_ok=True)
        else:
            for i in range(self.backups - 1, 0, -1):
                src = self.path.with_name(f"{self.path.name}.{i}")
                if src.exists():
                    src.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
            if self.path.exists():
                self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self._open()

    def write(
        self,
        *,
        request_id: str,
        provider: str,
        path: str,
        status: int,
        request: bytes,
        response: bytes,
        rewritten: bool,
    ) -> None:
        rec = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "request_id": request_id,
            "provider": provider,
            "path": path,
            "status": status,
            "rewritten": rewritten,
            "request": _text(request),
            "response": _text(response),
        }
        line = orjson.dumps(rec) + b"\n"
        with self._lock:
            try:
                if self._fh is None:
                    self._open()
                if self.max_bytes and self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                self._fh.write(line)
                self._size += len(line)
                self.written += 1
            except OSError:
                self.errors += 1

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
