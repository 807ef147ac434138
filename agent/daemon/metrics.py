"""Prometheus metrics of agentshd, and ``/healthz`` beside them (docs/operations.md
"Monitoring").

Nothing is counted twice and nothing is counted on the hot paths for metrics'
sake: a custom collector reads, at scrape time, the counters the parts keep
anyway (decision engine, event writer, BPF consumer, policy store,
supervisor, shim table, hook service, agent channel). The processes that are
not the daemon report through it, so there is one listener, not one per
process: the LLM proxy in its channel reports (``metrics`` in ``op: report``),
shims in their heartbeats. Their counters are cumulative per process; a new
process starts from zero and what the previous one reported is kept
(``Cumulative``), so the daemon's counters only go down when the daemon
restarts (a counter reset, as Prometheus expects).

Labels are bounded by construction: layers, actions, reason classes
(``agent/core/mcp/decision.py`` ``reason_class``), hook events and answers,
built-in detection categories, component names. Never a tool, server or
free-text value.

prometheus_client and the daemon's API are imported only by the listener.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client import CollectorRegistry

    from agentsh.agent.core.policy.schema import Policy
    from agentsh.agent.daemon.context import DaemonContext

from agentsh.agent.core.histogram import DURATION_BUCKETS, LATENCY_BUCKETS, Buckets
from agentsh.agent.core.vocab import FLOW_DECISIONS

__all__ = ["DURATION_BUCKETS", "LATENCY_BUCKETS", "Buckets"]

log = logging.getLogger("agentsh.metrics")

MAX_REPORTED = 64
"""At most this many counters are taken from one process's report."""
HOOK_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
HOOK_ANSWERS = frozenset(FLOW_DECISIONS)


# --------------------------------------------------------------------------- reported counters


def _number(v: Any) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    if not math.isfinite(v) or v < 0:
        return None
    return v


def _hist(v: Any) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    b, s = v.get("b"), _number(v.get("s"))
    if not isinstance(b, list) or not 0 < len(b) <= MAX_REPORTED or s is None:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in b):
        return None
    return {"b": b, "s": float(s)}


def clean_report(values: Any) -> dict[str, Any]:
    """The counters of a report another process sent (it is not trusted):
    name → non-negative number, or a histogram ``{"b": [ints], "s": sum}``.
    Anything else is left out."""
    out: dict[str, Any] = {}
    if not isinstance(values, dict):
        return out
    for k, v in values.items():
        if len(out) >= MAX_REPORTED:
            break
        if not isinstance(k, str) or not 0 < len(k) <= 64:
            continue
        x = _number(v) if not isinstance(v, dict) else _hist(v)
        if x is not None:
            out[k] = x
    return out


def _add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        have = out.get(k)
        if have is None:
            out[k] = v
        elif isinstance(v, dict) and isinstance(have, dict):
            if len(v["b"]) == len(have["b"]):
                out[k] = {"b": [x + y for x, y in zip(have["b"], v["b"], strict=True)], "s": have["s"] + v["s"]}
            else:  # another bucket layout (an upgrade): the newer one
                out[k] = v
        elif not isinstance(v, dict) and not isinstance(have, dict):
            out[k] = have + v
        else:
            out[k] = v
    return out


def _went_down(old: dict[str, Any], new: dict[str, Any]) -> bool:
    for k, v in new.items():
        o = old.get(k)
        if isinstance(v, dict):
            if isinstance(o, dict) and sum(v["b"]) < sum(o["b"]):
                return True
        elif o is not None and not isinstance(o, dict) and v < o:
            return True
    return False


class Cumulative:
    """Counters one component reports cumulatively, across its restarts: a
    new process (``proc``), or a counter that went down, starts from zero and
    what the previous process reported stays in the base."""

    __slots__ = ("_base", "_last", "_proc")

    def __init__(self) -> None:
        self._base: dict[str, Any] = {}
        self._last: dict[str, Any] = {}
        self._proc: object = None

    def update(self, proc: object, values: Any) -> None:
        clean = clean_report(values)
        if self._last and (proc != self._proc or _went_down(self._last, clean)):
            self._base = _add(self._base, self._last)
        self._proc = proc
        self._last = clean

    def total(self) -> dict[str, Any]:
        return _add(self._base, self._last)


# --------------------------------------------------------------------------- agent hooks


class HookMeter:
    """Agent hook evaluations the daemon answered (channel ``op: hook``), by
    hook event and answer, and the time the daemon took to answer. The
    channel calls ``observe`` once per ``op: hook`` it answers."""

    __slots__ = ("counts", "latency")

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.latency = Buckets()

    def observe(self, request: dict[str, Any], answer: dict[str, Any], seconds: float) -> None:
        p = request.get("payload")
        ev = p.get("hook_event_name", request.get("event")) if isinstance(p, dict) else None
        event = ev if isinstance(ev, str) and ev in HOOK_EVENTS else "invalid"
        dec = answer.get("decision")
        if "error" in answer or not isinstance(dec, str) or dec not in HOOK_ANSWERS:
            decision = "error"
        elif answer.get("evaluated") is False:
            decision = "not_evaluated"
        else:
            decision = dec
        k = (event, decision)
        self.counts[k] = self.counts.get(k, 0) + 1
        self.latency.observe(seconds)


# --------------------------------------------------------------------------- the collector


def _builtin_categories() -> frozenset[str]:
    from agentsh.agent.core.policy.schema import BuiltinDetections

    return frozenset(BuiltinDetections.model_fields)


class ChannelCounters(Protocol):
    """What the collector reads of the agent channel (agent/daemon/channel.py
    imports this module, so the channel is seen through this protocol)."""

    requests: int
    expired: int
    hook_meter: HookMeter


class DaemonCollector:
    """Everything, read at scrape time (on the event loop: the parts are its)."""

    def __init__(self, ctx: DaemonContext, channel: ChannelCounters | None = None) -> None:
        self.ctx = ctx
        self.channel = channel
        self.categories = _builtin_categories()
        self.errors = 0

    def describe(self) -> list[Any]:
        return []  # unchecked collector: the families depend on what runs

    def collect(self) -> Iterator[Any]:
        for part in (
            self._health,
            self._decisions,
            self._events,
            self._bpf,
            self._proxy,
            self._shims,
            self._hooks,
            self._detector,
            self._policy,
            self._components,
        ):
            try:
                yield from part()
            except Exception:  # one broken part must not cost the others
                self.errors += 1
                log.exception("metrics: collecting %s failed", part.__name__)

    # each part ------------------------------------------------------------

    def _health(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from agentsh.agent.core.version import __version__
        from agentsh.agent.daemon.api import health_answer

        info = GaugeMetricFamily("agentsh_build_info", "agentshd version (always 1)", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        healthy, body = health_answer(self.ctx)
        yield GaugeMetricFamily(
            "agentsh_healthy",
            "1 when enforcement works on every layer the policy enables (agentshctl status 'healthy'), else 0",
            value=1 if healthy else 0,
        )
        yield GaugeMetricFamily(
            "agentsh_degraded_reasons", "Number of reasons the daemon is degraded",
            value=len(body.get("degraded_reasons") or []),
        )

    def _decisions(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        mcp = self.ctx.mcp
        if mcp is None:
            return
        c = CounterMetricFamily(
            "agentsh_decisions",
            "Tool-call decisions of the daemon's decision pipeline, by asking layer, action and reason class",
            labels=["layer", "action", "reason"],
        )
        for (layer, action, reason), n in sorted(dict(mcp.engine.by_class).items()):
            c.add_metric([layer, action, reason], n)
        yield c
        if self.channel is not None:
            yield CounterMetricFamily(
                "agentsh_channel_requests", "Requests on the agent channel (decisions, events, hooks, reports)",
                value=self.channel.requests,
            )
            yield CounterMetricFamily(
                "agentsh_channel_expired",
                "Channel requests dropped because their deadline passed (the caller decided offline)",
                value=self.channel.expired,
            )

    def _events(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        st = self.ctx.events.stats()
        for name, key, doc in (
            ("agentsh_events_accepted", "accepted", "Events accepted into the writer's queue"),
            ("agentsh_events_written", "written", "Events written to the event log"),
            ("agentsh_events_dropped", "dropped", "Events dropped (queue full or writer stopped)"),
            ("agentsh_events_written_bytes", "bytes_written", "Bytes written to the event log"),
            ("agentsh_events_write_errors", "write_errors", "Event log write errors"),
            ("agentsh_events_rotations", "rotations", "Event log rotations"),
        ):
            yield CounterMetricFamily(name, doc, value=int(st.get(key) or 0))
        yield GaugeMetricFamily("agentsh_events_queued", "Events waiting to be written", value=int(st.get("queue_depth") or 0))
        yield GaugeMetricFamily("agentsh_events_queue_capacity", "Capacity of the event queue (events.queue_size)", value=int(st.get("queue_size") or 0))

    def _bpf(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from agentsh.agent.daemon.api import bpf_status

        st = bpf_status(self.ctx)
        yield GaugeMetricFamily("agentsh_bpf_active", "1 when the BPF layer is attached and running", value=1 if st.get("state") == "active" else 0)
        yield CounterMetricFamily("agentsh_bpf_events_seen", "Connection events read from the BPF ring buffer", value=int(st.get("events_seen") or 0))
        yield CounterMetricFamily("agentsh_bpf_blocked", "Connections the BPF layer refused (EPERM)", value=int(st.get("blocked_total") or 0))
        lost = CounterMetricFamily("agentsh_bpf_events_lost", "BPF ring-buffer records lost, by ring", labels=["ring"])
        lost.add_metric(["events"], int(st.get("lost_events") or 0))
        lost.add_metric(["trace"], int(st.get("trace_lost_events") or 0))
        yield lost
        watch = (st.get("maps") or {}).get("watch_v1") or {}
        yield GaugeMetricFamily("agentsh_bpf_watched_addresses", "Entries in the BPF watch map", value=int(watch.get("entries") or 0))

    def _proxy(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        st = self.ctx.supervisor.get("llm-proxy")
        if st is None:
            return
        t = st.metrics.total()
        for name, key, doc in (
            ("agentsh_proxy_requests", "requests", "Requests the LLM proxy received"),
            ("agentsh_proxy_streams", "streams", "Event-stream (SSE) responses the LLM proxy relayed"),
            ("agentsh_proxy_tool_calls", "tool_calls", "Tool calls the LLM proxy saw in responses"),
            ("agentsh_proxy_tool_calls_blocked", "blocked", "Tool calls the LLM proxy replaced (blocked)"),
            ("agentsh_proxy_errors", "errors", "LLM proxy requests that ended in an error (upstream, refused, client gone)"),
            ("agentsh_proxy_events_spooled", "events_spooled", "Proxy events spooled because the daemon did not take them"),
            ("agentsh_proxy_events_dropped", "events_dropped", "Proxy events lost (spool unwritable)"),
            ("agentsh_proxy_fail_open", "fail_open", "Tool calls the LLM proxy allowed with neither daemon nor snapshot"),
        ):
            v = t.get(key)
            if isinstance(v, int | float):
                yield CounterMetricFamily(name, doc, value=v)
        yield from _histogram(
            "agentsh_proxy_added_latency_seconds",
            "Time the LLM proxy itself held an exchange: before sending it upstream, and tool calls waiting for their decisions",
            t.get("added_latency"), LATENCY_BUCKETS,
        )
        yield from _histogram(
            "agentsh_proxy_request_duration_seconds",
            "Whole LLM requests through the proxy, upstream time included",
            t.get("duration"), DURATION_BUCKETS,
        )

    def _shims(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        shims = self.ctx.shims
        t = shims.totals()
        yield GaugeMetricFamily("agentsh_shims", "stdio shims registered now", value=len(shims))
        yield CounterMetricFamily("agentsh_shim_sessions", "stdio shim sessions registered since the daemon started", value=shims.sessions)
        for name, key, doc in (
            ("agentsh_shim_tool_calls", "calls", "tools/call requests the shims saw (online and offline)"),
            ("agentsh_shim_tool_calls_blocked", "blocks", "tools/call requests the shims refused"),
            ("agentsh_shim_tools_hidden", "hidden", "Tools the shims removed from tools/list results"),
            ("agentsh_shim_messages_refused", "refused", "JSON-RPC lines the shims refused (unparseable, oversized)"),
            ("agentsh_shim_events_spooled", "spooled", "Shim events spooled because the daemon did not take them"),
        ):
            yield CounterMetricFamily(name, doc, value=t.get(key, 0))
        off = CounterMetricFamily(
            "agentsh_offline_decisions",
            "Tool calls a layer decided without the daemon (daemon unreachable), by layer",
            labels=["layer"],
        )
        off.add_metric(["shim"], t.get("offline_decisions", 0))
        px = self.ctx.supervisor.get("llm-proxy")
        pv = px.metrics.total().get("offline_decisions") if px is not None else None
        off.add_metric(["proxy"], pv if isinstance(pv, int | float) else 0)
        yield off

    def _hooks(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        if self.channel is None:
            return
        m: HookMeter = self.channel.hook_meter
        c = CounterMetricFamily(
            "agentsh_hook_evaluations",
            "Agent hook requests the daemon answered, by hook event and answer "
            "(not_evaluated: hooks disabled or a failed tool; error: refused or failed)",
            labels=["event", "decision"],
        )
        for (event, decision), n in sorted(dict(m.counts).items()):
            c.add_metric([event, decision], n)
        yield c
        yield from _histogram(
            "agentsh_hook_evaluation_seconds", "Time the daemon took to answer an agent hook",
            m.latency.to_json(), LATENCY_BUCKETS,
        )

    def _detector(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        mcp = self.ctx.mcp
        if mcp is None:
            return
        sums: dict[tuple[str, str], int] = {}
        for (cat, action), n in dict(getattr(mcp, "flags", {})).items():
            k = (cat if cat in self.categories else "custom", action if action in ("alert", "block") else "alert")
            sums[k] = sums.get(k, 0) + n
        c = CounterMetricFamily(
            "agentsh_detector_flags",
            "Tool-definition detections at or above the alert threshold (mcp_detection events), "
            "by built-in category (custom patterns: custom) and action",
            labels=["category", "action"],
        )
        for (cat, action), n in sorted(sums.items()):
            c.add_metric([cat, action], n)
        yield c

    def _policy(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        store = self.ctx.store
        c = CounterMetricFamily("agentsh_policy_reloads", "Policy reloads, by result (ok, rejected)", labels=["result"])
        c.add_metric(["ok"], store.reloads)
        c.add_metric(["rejected"], store.rejections)
        yield c

    def _components(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        restarts = CounterMetricFamily("agentsh_component_restarts", "Restarts of a supervised component", labels=["component"])
        up = GaugeMetricFamily("agentsh_component_up", "1 when a supervised component is running and ready", labels=["component"])
        for s in self.ctx.supervisor.status():
            restarts.add_metric([s["name"]], s["restarts"])
            up.add_metric([s["name"]], 1 if s["state"] == "running" and s["ready"] else 0)
        yield restarts
        yield up


def _histogram(name: str, doc: str, data: Any, bounds: tuple[float, ...]) -> Iterator[Any]:
    from prometheus_client.core import HistogramMetricFamily

    h = _hist(data)
    if h is None or len(h["b"]) != len(bounds) + 1:
        return
    acc = 0
    buckets: list[tuple[str, float]] = []
    for le, n in zip([*map(str, bounds), "+Inf"], h["b"], strict=True):
        acc += n
        buckets.append((le, acc))
    yield HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h["s"])


# --------------------------------------------------------------------------- the listener


class MetricsServer:
    """``metrics.listen``: ``/metrics`` (Prometheus text format) and ``/healthz``.

    Follows the policy: started, stopped or moved on reload. A listen address
    that cannot be bound is ``error`` (a one-line degraded reason in status),
    retried now and then and on every reload."""

    RETRY_SECONDS = 10.0

    def __init__(self, ctx: DaemonContext, channel: ChannelCounters | None = None) -> None:
        self.ctx = ctx
        self.collector = DaemonCollector(ctx, channel)
        self.want: str | None = None
        self.listening: str | None = None
        self.error: str | None = None
        self.scrapes = 0
        self._runner: web.AppRunner | None = None
        self._tried_at = 0.0
        self._registry: CollectorRegistry | None = None

    def _app(self) -> web.Application:
        from aiohttp import web
        from prometheus_client import CollectorRegistry
        from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
        from prometheus_client.process_collector import ProcessCollector

        from agentsh.agent.daemon.api import health_answer
        from agentsh.agent.daemon.jsonhttp import json_response

        if self._registry is None:
            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(self.collector)
            ProcessCollector(registry=self._registry)  # process_start_time_seconds: restarts show
        registry = self._registry

        async def metrics(request: web.Request) -> web.Response:
            self.scrapes += 1
            return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

        async def healthz(request: web.Request) -> web.Response:
            healthy, body = health_answer(self.ctx)
            return json_response(body, status=200 if healthy else 503)

        async def not_found(request: web.Request) -> web.Response:
            return json_response({"error": "no such endpoint: GET /metrics or GET /healthz"}, status=404)

        app = web.Application(client_max_size=4096)
        app.router.add_get("/metrics", metrics)
        app.router.add_get("/healthz", healthz)
        app.router.add_route("*", "/{tail:.*}", not_found)
        return app

    async def apply(self, policy: Policy) -> None:
        """Match the policy's ``metrics`` section (start, stop, move, retry)."""
        cfg = policy.metrics
        want = cfg.listen if cfg.enabled else None
        if want == self.want and (want is None or self._runner is not None):
            return
        await self.stop()
        self.want = want
        self.error = None
        if want is not None:
            await self._start(want)

    async def retry(self) -> None:
        """Housekeeping: try a listen address that could not be bound again."""
        if self.want is not None and self._runner is None and time.monotonic() - self._tried_at > self.RETRY_SECONDS:
            await self._start(self.want)

    async def _start(self, listen: str) -> None:
        from aiohttp import web

        self._tried_at = time.monotonic()
        host, _, port = listen.rpartition(":")
        runner = web.AppRunner(self._app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, host.strip("[]"), int(port), reuse_address=True).start()
        except OSError as e:
            await runner.cleanup()
            reason = os.strerror(e.errno) if e.errno else str(e)
            why = f"metrics listener cannot listen on {listen}: {reason}"
            if why != self.error:
                log.error("%s", why)
            self.error = why
            return
        self._runner = runner
        self.listening = listen
        self.error = None
        log.info("metrics on http://%s/metrics, health on /healthz", listen)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.listening = None

    def status(self) -> dict[str, Any]:
        return {
            "enabled": self.want is not None,
            "listen": self.want,
            "listening": self.listening is not None,
            "error": self.error,
            "scrapes": self.scrapes,
            "collect_errors": self.collector.errors,
        }
