"""The daemon's policy store: the policy in force, reloads, and the file watcher.

A reload validates first. A bad change is rejected with a ``policy_rejected``
event and the last good policy stays in force; a good one emits
``policy_loaded`` and notifies subscribers (the MCP engine, the BPF layer, the
proxy). The last good policy is also saved in the state directory so that a
daemon restarted onto a broken file still enforces what it enforced before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import orjson

from agentsh.agent.core.events.models import Event, PolicyLoaded, PolicyRejected
from agentsh.agent.core.policy.loader import (
    DROPIN_DIR,
    MAX_DROPINS,
    Check,
    LoadedPolicy,
    PolicyError,
    load_dir,
    policy_files,
    policy_hash,
)
from agentsh.agent.core.policy.schema import Policy

log = logging.getLogger("agentsh.policy")

Subscriber = Callable[[LoadedPolicy], Awaitable[None] | None]
LAST_GOOD = "last-good-policy.json"


class PolicyStore:
    def __init__(self, config_dir: Path, state_dir: Path | None = None, checks: Sequence[Check] = ()) -> None:
        self.config_dir = Path(config_dir)
        self.state_dir = state_dir
        self.checks = tuple(checks)
        """Checks beyond the schema (loader ``Check``), applied at every load."""
        self._current: LoadedPolicy | None = None
        self.loaded_at: float = 0.0
        self.last_error: list[str] | None = None
        self.last_error_at: float | None = None
        self.reloads = 0
        self.rejections = 0
        self._subs: list[Subscriber] = []
        self._emit: Callable[[Event], bool] | None = None
        self._lock = asyncio.Lock()
        self._fingerprint = self._files_fingerprint()

    # -- state

    @property
    def current(self) -> LoadedPolicy:
        assert self._current is not None, "policy not loaded"
        return self._current

    @property
    def policy(self) -> Policy:
        return self.current.policy

    def subscribe(self, cb: Subscriber) -> None:
        self._subs.append(cb)

    def set_emitter(self, emit: Callable[[Event], bool]) -> None:
        self._emit = emit

    # -- loading

    def load_initial(self) -> tuple[LoadedPolicy, list[str] | None]:
        """Load at start. On a bad policy fall back to the last good one saved in
        the state dir; with none, raise PolicyError (the daemon refuses to start)."""
        try:
            lp = load_dir(self.config_dir, self.checks)
            self._set(lp)
            return lp, None
        except PolicyError as e:
            saved = self._read_last_good()
            if saved is None:
                raise
            self._current = saved
            self.loaded_at = time.time()
            self.last_error, self.last_error_at = e.errors, time.time()
            return saved, e.errors

    async def reload(self, trigger: str) -> tuple[bool, LoadedPolicy | list[str]]:
        async with self._lock:
            self._fingerprint = self._files_fingerprint()
            try:
                lp = await asyncio.to_thread(load_dir, self.config_dir, self.checks)
            except PolicyError as e:
                self.rejections += 1
                self.last_error, self.last_error_at = e.errors, time.time()
                for line in e.errors:
                    log.error("policy rejected (%s): %s", trigger, line)
                if self._emit:
                    self._emit(
                        PolicyRejected(
                            errors=e.errors,
                            files=e.files,
                            trigger=trigger,
                            kept_hash=self._current.hash if self._current else None,
                        )
                    )
                return False, e.errors
            changed = self._current is None or lp.hash != self._current.hash
            self._set(lp)
            self.reloads += 1
            self.last_error = None
            log.info("policy loaded (%s): %s %s", trigger, lp.hash[:19], lp.files)
            if self._emit:
                self._emit(PolicyLoaded(hash=lp.hash, files=lp.files, trigger=trigger))
            if changed:
                for cb in self._subs:
                    try:
                        r = cb(lp)
                        if asyncio.iscoroutine(r):
                            await r
                    except Exception:
                        log.exception("policy subscriber failed")
            return True, lp

    def _set(self, lp: LoadedPolicy) -> None:
        self._current = lp
        self.loaded_at = time.time()
        self._write_last_good(lp)

    def save_last_good(self) -> None:
        """Save the policy in force as the last good one (after the state dir moved)."""
        if self._current is not None:
            self._write_last_good(self._current)

    # -- last good snapshot

    def _last_good_path(self) -> Path | None:
        return self.state_dir / LAST_GOOD if self.state_dir else None

    def _write_last_good(self, lp: LoadedPolicy) -> None:
        p = self._last_good_path()
        if p is None:
            return
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_suffix(".tmp")
            tmp.write_bytes(
                orjson.dumps({"hash": lp.hash, "files": lp.files, "policy": lp.policy.model_dump(mode="json")})
            )
            os.chmod(tmp, 0o600)
            tmp.replace(p)
        except OSError as e:
            log.warning("cannot save last good policy to %s: %s", p, e)

    def _read_last_good(self) -> LoadedPolicy | None:
        p = self._last_good_path()
        if p is None or not p.is_file():
            return None
        try:
            d = orjson.loads(p.read_bytes())
            policy = Policy.model_validate(d["policy"])
            return LoadedPolicy(
                policy=policy,
                files=[*d.get("files", []), f"{p} (last good)"],
                hash=policy_hash(policy),
            )
        except Exception as e:
            log.error("cannot read last good policy %s: %s", p, e)
            return None

    # -- watching

    def _files_fingerprint(self) -> tuple:
        files = policy_files(self.config_dir)
        # Past the drop-in limit the policy is rejected anyway: the count (and
        # the directory's mtime) tell a change, without a stat per file.
        items: list[tuple] = [("files", len(files))]
        for p in [self.config_dir, self.config_dir / DROPIN_DIR, *files[: MAX_DROPINS + 1]]:
            try:
                st = p.stat()
                items.append((str(p), st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                items.append((str(p), None))
        return tuple(items)

    async def watch(self, interval: Callable[[], float], enabled: Callable[[], bool]) -> None:
        """Poll the config directory and reload when a policy file changes.

        Polling (one stat per file per interval) keeps this dependency-free and
        robust against editors that replace files rather than writing them.
        """
        while True:
            await asyncio.sleep(interval())
            if not enabled():
                continue
            fp = await asyncio.to_thread(self._files_fingerprint)
            if fp != self._fingerprint:
                # let an editor finish writing before we read
                await asyncio.sleep(0.2)
                await self.reload("watch")
