"""Is enforcement actually working? The one answer `status`, health checks and
selftest share.

agentsh must never claim protection it does not deliver, so "healthy" means
every layer the policy enables is up, deciding with the daemon, and losing
nothing. Anything else is a one-line reason and the daemon is degraded:

* a layer the policy turns off (``proxy.mode: disabled``, ``network.enabled:
  false`` or ``blocking: false``, ``mcp.inspection.enabled: false``,
  ``flow.flow_tracking.enabled: false``, ``flow.hooks.enabled: false``) or
  ``mcp.enforce_policy: false`` (decisions reported, nothing blocked);
* agent hook evaluations that failed in the daemon, recently;
* a component not running or not ready (``starting`` while it starts), one
  that failed (with the one-line error it gave), one that stopped reporting;
* the LLM proxy or a shim deciding offline (daemon not answering them) or
  failing open, recently; the proxy's decision snapshot stale;
* spooled events waiting, events dropped or BPF events lost recently, an
  event-log error, a rejected policy reload, the metrics listener unable to
  listen (``metrics.enabled``).

"Recently" is ``RECENT_SECONDS``: a past incident stops degrading the daemon
after that long (its counters stay in ``status``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentsh.agent.core.policy.schema import Policy
    from agentsh.agent.daemon.context import DaemonContext

RECENT_SECONDS = 600.0
REPORT_STALE_SECONDS = 15.0
SNAPSHOT_STALE_SECONDS = 5.0
SPOOL_WAIT_SECONDS = 10.0


@dataclass
class _Counter:
    value: int = 0
    changed_at: float | None = None

    def see(self, value: int, now: float) -> None:
        if value > self.value:
            self.changed_at = now
        self.value = value

    def recent(self, now: float) -> bool:
        return self.changed_at is not None and now - self.changed_at < RECENT_SECONDS


@dataclass
class HealthTracker:
    """Remembers when counters last grew (drops, lost events) and since when
    the proxy's snapshot has been behind."""

    dropped: _Counter = field(default_factory=_Counter)
    bpf_lost: _Counter = field(default_factory=_Counter)
    snapshot_behind_since: float | None = None


def _policy_reasons(policy: Policy) -> list[str]:
    out = []
    if not policy.mcp.enforce_policy:
        out.append("mcp.enforce_policy is false: decisions are reported, nothing is blocked")
    if policy.proxy.mode == "disabled":
        out.append("LLM proxy disabled by policy (proxy.mode: disabled)")
    if not policy.network.enabled:
        out.append("BPF network layer disabled by policy (network.enabled: false)")
    elif not policy.network.blocking:
        out.append("BPF network layer does not block (network.blocking: false)")
    if not policy.mcp.inspection.enabled:
        out.append("MCP tool definition inspection disabled (mcp.inspection.enabled: false)")
    if not policy.flow.flow_tracking.enabled:
        out.append("data-flow tracking disabled (flow.flow_tracking.enabled: false)")
    if not policy.flow.hooks.enabled:
        out.append("agent hooks answered allow without evaluation (flow.hooks.enabled: false)")
    return out


def _proxy_reasons(ctx: DaemonContext, policy: Policy, now: float, tracker: HealthTracker) -> list[str]:
    if policy.proxy.mode == "disabled":
        return []
    st = ctx.supervisor.get("llm-proxy")
    if st is None:
        return ["llm-proxy starting"]
    if st.state == "failed":
        return [f"llm-proxy failed: {st.error or 'restart budget used'}"]
    if st.state == "backoff":
        why = st.last_exit_signal or f"exit {st.last_exit_code}"
        return [f"llm-proxy restarting after it exited ({why})"]
    if st.state in ("starting", "stopped") or not st.ready:
        return [f"llm-proxy {st.state if st.state != 'running' else 'starting'} (not ready yet)"]
    out = []
    rep = st.report or {}
    if st.report_at is None or now - st.report_at > REPORT_STALE_SECONDS:
        out.append("llm-proxy is not reporting (its channel to the daemon is not answering)")
    last_off = rep.get("last_offline_at")
    if rep.get("offline"):
        out.append("llm-proxy is deciding offline (the daemon does not answer its decisions)")
    elif isinstance(last_off, int | float) and now - last_off < RECENT_SECONDS:
        out.append(f"llm-proxy decided {rep.get('offline_decisions', '?')} tool calls offline recently")
    last_open = rep.get("last_fail_open_at")
    if isinstance(last_open, int | float) and now - last_open < RECENT_SECONDS:
        out.append(f"llm-proxy failed open on {rep.get('fail_open', '?')} tool calls recently")
    if isinstance(rep.get("events_dropped"), int) and rep["events_dropped"] > 0:
        out.append(f"llm-proxy dropped {rep['events_dropped']} events (spool unwritable)")
    want = ctx.mcp.snapshot_version(ctx.store.current.hash)
    have = rep.get("snapshot_version")
    if have != want:
        if tracker.snapshot_behind_since is None:
            tracker.snapshot_behind_since = now
        elif now - tracker.snapshot_behind_since > SNAPSHOT_STALE_SECONDS:
            out.append(
                f"llm-proxy tool snapshot stale for {now - tracker.snapshot_behind_since:.0f}s "
                f"(has {have}, daemon {want})"
            )
    else:
        tracker.snapshot_behind_since = None
    return out


def _spool_waiting(ctx: DaemonContext, now: float) -> int:
    n = 0
    for d in [ctx.paths.spool_dir, *ctx.user_spools.values()]:
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.name.endswith(".jsonl") and now - e.stat(follow_symlinks=False).st_mtime > SPOOL_WAIT_SECONDS:
                        n += 1
        except OSError:
            continue
    return n


def assess(ctx: DaemonContext, bpf: dict[str, Any]) -> list[str]:
    """Every reason the daemon is degraded right now (empty: healthy)."""
    now = time.time()
    policy = ctx.store.policy
    tracker = ctx.health
    reasons = _policy_reasons(policy)
    if ctx.store.last_error:
        reasons.append("last policy reload was rejected; previous policy in force")
    for name in ctx.supervisor.failed():
        if name != "llm-proxy":
            reasons.append(f"component {name} failed (restart budget used)")
    reasons += _proxy_reasons(ctx, policy, now, tracker)
    ev = ctx.events.stats()
    if ev.get("last_error"):
        reasons.append(f"event log: {ev['last_error']}")
    tracker.dropped.see(int(ev.get("dropped") or 0), now)
    if tracker.dropped.recent(now):
        reasons.append(f"event log dropped events recently ({tracker.dropped.value} since start)")
    if policy.network.enabled:
        if bpf.get("state") != "active":
            reasons.append(f"bpf: {bpf.get('state')} ({bpf.get('reason')})")
        tracker.bpf_lost.see(int(bpf.get("lost_events") or 0), now)
        if tracker.bpf_lost.recent(now):
            reasons.append(f"bpf lost events recently ({tracker.bpf_lost.value} since start)")
    for s in ctx.shims.list():
        t = s.get("last_offline_at")
        if isinstance(t, int | float) and now - t < RECENT_SECONDS:
            reasons.append(
                f"shim {s['server_id']} (pid {s['pid']}) decided {s['offline_decisions']} calls offline "
                f"and spooled {s['spooled']} events recently"
            )
    hooks = ctx.hooks
    if hooks.last_error_at is not None and now - hooks.last_error_at < RECENT_SECONDS:
        reasons.append(
            f"agent hook evaluations failed recently ({hooks.counts['errors']} since start; "
            f"the hooks failed open or closed per flow.hooks.fail_open): {hooks.last_error}"
        )
    metrics = ctx.metrics
    if metrics is not None and metrics.error:
        reasons.append(metrics.error)
    waiting = _spool_waiting(ctx, now)
    if waiting:
        reasons.append(f"{waiting} spooled event file(s) waiting to be ingested")
    return reasons
