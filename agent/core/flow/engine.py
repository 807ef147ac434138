"""The flow engine: one object the daemon's decision pipeline, the shim, the LLM
proxy and the hook endpoint call (docs/flow.md).

* :meth:`FlowEngine.record` — a tool's response became visible (PostToolUse,
  an MCP ``tools/call`` result, a ``tool_result`` block in an LLM request):
  remember where its content came from.
* :meth:`FlowEngine.check` — a tool is about to be called (PreToolUse, an MCP
  ``tools/call``, a tool call in an LLM response): does recorded data flow
  somewhere it must not? Returns a :class:`FlowVerdict`.
* :meth:`FlowEngine.register_pending` / :meth:`FlowEngine.correlate` /
  :meth:`FlowEngine.link` — tie an MCP session to the hook session of the
  agent that drives it (docs/flow.md "Sessions", correlation).
* :meth:`FlowEngine.expire` — sessions idle past ``session_timeout_minutes``,
  as ``flow_summary`` fields for the caller to emit (docs/flow.md "Sessions").

Synchronous, no I/O, thread-safe (one lock for the session table, one per
session; fingerprints are computed outside the locks).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

from agentsh.agent.core.flow.classify import (
    OUTGOING_ARGS,
    ClassificationResult,
    Classifier,
    split_mcp_name,
)
from agentsh.agent.core.flow.content import digest, leaves, views
from agentsh.agent.core.flow.policy import I2E, RISK_RANK, CompiledFlowPolicy, degrade, risk_for
from agentsh.agent.core.flow.session import FlowSession, Match, Origin, prepare
from agentsh.agent.core.flow.shell import (
    _EMAIL_ADDR,
    _URL_RX,
    ShellAnalysis,
    analyze,
    host_of,
    is_sensitive_path,
)
from agentsh.agent.core.policy.schema import FlowConfig, Policy
from agentsh.agent.core.sensitive import SensitiveDetector, SensitiveMatch
from agentsh.agent.core.vocab import Coverage, FlowDecision, RiskLevel

__all__ = ["FlowEngine", "FlowVerdict", "OriginRef", "RecordResult"]

Layer = Literal["hook", "mcp", "proxy"]
_MAX_SESSIONS = 4096
_MAX_PENDING = 4096
_SHELL_CACHE = 1024
_SENSITIVE_MIN = 8
_SECRET_VAR = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASS",
    "PWD",
    "CRED",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "SIG",
)
_VENDOR_ALIASES = {
    "gh": "github",
    "aws": "amazonaws",
    "hf": "huggingface",
    "npm": "npmjs",
    "gcp": "googleapis",
    "google": "googleapis",
}
_URLISH_KEYS = frozenset(
    {
        "url",
        "uri",
        "href",
        "link",
        "endpoint",
        "webhook",
        "webhook_url",
        "host",
        "hostname",
        "domain",
        "server",
        "address",
        "target",
        "destination",
        "callback",
        "callback_url",
        "base_url",
    }
)
_LABEL_KEYS = (
    "file_path",
    "notebook_path",
    "path",
    "url",
    "query",
    "command",
    "pattern",
    "name",
    "uri",
)
_PATH_KEYS = ("file_path", "notebook_path", "path", "filename", "file")


@dataclass(frozen=True, slots=True)
class OriginRef:
    """A recorded origin an argument matched, for events and reasons."""

    tool: str
    server: str | None
    classification: str
    source_class: str
    label: str | None
    sensitive: tuple[str, ...]
    how: str
    """exact | normalized | sensitive | window | path | implicit"""
    age_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "server": self.server,
            "classification": self.classification,
            "source": self.source_class,
            "label": self.label,
            "sensitive": list(self.sensitive),
            "how": self.how,
            "age_seconds": round(self.age_seconds, 3),
        }


@dataclass(slots=True)
class FlowVerdict:
    action: FlowDecision
    flow_type: str | None
    risk_level: RiskLevel
    reason: str | None
    classification: ClassificationResult
    matched_origins: tuple[OriginRef, ...] = ()
    coverage: Coverage = "proxy_only"
    destinations: tuple[str, ...] = ()
    sensitive_types: tuple[str, ...] = ()
    session_id: str = ""
    suspicious_endpoint: str | None = None
    override: str | None = None

    def event_fields(self) -> dict[str, Any]:
        """Fields of a ``hook_evaluation`` event (agent/core/events/models.py)."""
        return {
            "decision": self.action,
            "reason": self.reason,
            "classification": self.classification.classification,
            "flow_type": self.flow_type,
            "risk_level": self.risk_level,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.event_fields(),
            "classification_detail": self.classification.to_json(),
            "matched_origins": [o.to_json() for o in self.matched_origins],
            "coverage": self.coverage,
            "destinations": list(self.destinations),
            "sensitive_types": list(self.sensitive_types),
            "session_id": self.session_id,
            "suspicious_endpoint": self.suspicious_endpoint,
            "override": self.override,
        }


@dataclass(frozen=True, slots=True)
class RecordResult:
    origin_id: int
    source_class: str
    sensitive: tuple[str, ...]
    entries: int
    """Index entries the session holds after this record."""


@dataclass(slots=True)
class _Slot:
    session: FlowSession
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(slots=True)
class _Outgoing:
    texts: list[str]
    hosts: list[str]
    destination: str  # for humans
    shell: ShellAnalysis | None = None


class FlowEngine:
    def __init__(
        self,
        policy: Policy | FlowConfig | None = None,
        *,
        detector: SensitiveDetector | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._detector = detector
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Slot] = OrderedDict()  # by last activity
        self._links: dict[str, str] = {}  # mcp session → hook session
        self._pending: dict[bytes, list[tuple[str, float]]] = {}
        self._pending_order: deque[tuple[float, bytes]] = deque()
        self._evicted: list[dict[str, Any]] = []
        self._shell_cache: dict[str, ShellAnalysis] = {}
        self._n = {
            "checks": 0,
            "records": 0,
            "flows": 0,
            "deny": 0,
            "ask": 0,
            "warn": 0,
            "correlated": 0,
        }
        self.update_policy(policy if policy is not None else Policy())

    # ------------------------------------------------------------ policy

    def update_policy(self, policy: Policy | FlowConfig) -> None:
        if isinstance(policy, Policy):
            flow, servers = policy.flow, policy.mcp.servers
            custom = [(p.name, p.pattern) for p in policy.proxy.dlp.custom_patterns]
        else:
            flow, servers, custom = policy, [], []
        ft = flow.flow_tracking
        # swap as one tuple so a concurrent check sees either the old or the new policy
        self._cfg = (
            flow,
            Classifier(flow.classification, servers),
            CompiledFlowPolicy.compile(flow.flow_policy),
            self._detector or SensitiveDetector(custom=custom),
        )
        self.enabled = ft.enabled
        self.k = ft.hash_min_length
        self.budget = ft.max_origins_per_session
        self.max_bytes = ft.max_response_hash_bytes
        self.timeout = ft.session_timeout_minutes * 60.0
        self.ttl = flow.hooks.correlation_ttl_seconds

    @property
    def classifier(self) -> Classifier:
        return self._cfg[1]

    def classify(
        self, tool: str, server_id: str | None = None, annotations: dict[str, Any] | None = None
    ) -> ClassificationResult:
        return self._cfg[1].tool(tool, server_id, annotations)

    def analyze_shell(self, command: str) -> ShellAnalysis:
        a = self._shell_cache.get(command)
        if a is None:
            a = analyze(command)
            if len(self._shell_cache) >= _SHELL_CACHE:
                self._shell_cache.clear()
            self._shell_cache[command] = a
        return a

    # ------------------------------------------------------------ sessions

    def _slot(self, key: str, now: float, layer: str) -> tuple[str, _Slot]:
        with self._lock:
            key = self._links.get(key, key)
            slot = self._sessions.get(key)
            if slot is None:
                slot = _Slot(FlowSession(now, self.budget, self.k))
                self._sessions[key] = slot
                if len(self._sessions) > _MAX_SESSIONS:
                    old_key, old = self._sessions.popitem(last=False)
                    self._evicted.append(self._summary(old_key, old.session, now, "evicted"))
            else:
                self._sessions.move_to_end(key)
            if layer == "hook":
                slot.session.has_hooks = True
            return key, slot

    # ------------------------------------------------------------ record

    def record(
        self,
        session_key: str,
        tool: str,
        server_id: str | None,
        content: Any,
        *,
        source: Layer = "hook",
        arguments: Any = None,
        annotations: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> RecordResult | None:
        """Remember ``content`` (a tool's response) as produced by ``tool``.

        ``arguments`` are the call's input: they name what was read (a path,
        URL, command) and, for ``Bash``, tell whether the output came from the
        network. Returns None when flow tracking is disabled.
        """
        if not self.enabled:
            return None
        now = self._clock() if now is None else now
        _flow, classifier, _pol, detector = self._cfg
        cls = classifier.tool(tool, server_id, annotations)
        if server_id is None and (split := split_mcp_name(tool)) is not None:
            server_id = split[0]
        args = arguments if isinstance(arguments, dict) else {}
        source_class = classifier.as_source(cls.classification)
        if tool == "Bash" and server_id is None:
            cmd = args.get("command")
            if isinstance(cmd, str):
                a = self.analyze_shell(cmd)
                # output of a network fetch is external content; anything else was local
                if a.network and any(c.network and c.kind == "fetch" for c in a.commands):
                    source_class = "external"
        label = _label(args)
        paths = [
            p
            for p in (args.get(k) for k in _PATH_KEYS)
            if isinstance(p, str) and p[:1] in "/~." and len(p) < 4096
        ]
        full, fields = self._texts(content)
        found: list[tuple[str, str, int]] = []
        for i, f in enumerate(fields):
            if len(f) >= _SENSITIVE_MIN:
                found.extend(
                    (m.type, m.text, i)
                    for m in detector.find(f)
                    if len(m.text) >= min(self.k, _SENSITIVE_MIN)
                )
        prep = prepare(full, fields, found, self.k, self.budget)
        o = Origin(
            0, tool, server_id, cls.classification, source_class, label, prep.sensitive, now, source
        )
        _key, slot = self._slot(session_key, now, source)
        with slot.lock:
            s = slot.session
            s.add(o, prep, paths)
            s.last_active = now
            s.tools[tool] = None
            entries = s.entries()
        with self._lock:
            self._n["records"] += 1
        return RecordResult(o.id, source_class, prep.sensitive, entries)

    def _texts(self, content: Any) -> tuple[str, list[str]]:
        budget = self.max_bytes
        if isinstance(content, (bytes, bytearray, memoryview)):
            content = bytes(content[:budget]).decode("utf-8", "replace")
        if isinstance(content, str):
            full = _clip(content, budget)
            fields = [full]
            fields.extend(_config_values(full, self.k))
            if full[:1] in "{[":
                try:
                    inner = orjson.loads(full)
                except orjson.JSONDecodeError:
                    inner = None
                if isinstance(inner, (dict, list)):
                    fields.extend(leaves(inner, budget))
            return full, fields
        fields = leaves(content, budget)
        try:
            full = orjson.dumps(content, option=orjson.OPT_SORT_KEYS, default=str).decode()
        except TypeError:
            full = "\n".join(fields)
        full = _clip(full, budget)
        extra: list[str] = []
        for f in fields:
            extra.extend(_config_values(f, self.k))
        return full, fields + extra

    # ------------------------------------------------------------ check

    def check(
        self,
        session_key: str,
        tool: str,
        server_id: str | None,
        arguments: Any,
        *,
        can_ask: bool,
        source: Layer = "hook",
        annotations: dict[str, Any] | None = None,
        justified: bool | None = None,
        now: float | None = None,
    ) -> FlowVerdict:
        """Judge a tool call before it runs. ``can_ask``: someone can answer
        "ask" (a hook-enabled agent); otherwise "ask" degrades to "warn"."""
        _flow, classifier, pol, detector = self._cfg
        cls = classifier.tool(tool, server_id, annotations)
        if not self.enabled:
            return FlowVerdict("allow", None, "none", None, cls)
        now = self._clock() if now is None else now
        if server_id is None and (split := split_mcp_name(tool)) is not None:
            server_id, bare = split
        else:
            bare = tool
        args = (
            arguments
            if isinstance(arguments, dict)
            else {"": arguments}
            if arguments is not None
            else {}
        )
        out = self._outgoing(tool, server_id, args, cls)
        if out.shell is not None:
            a = out.shell
            cls = replace(
                cls,
                classification=a.classification,
                confidence=a.confidence,
                can_exfiltrate=a.network or a.opaque,
                basis=f"bash: {a.why_opaque}"
                if a.opaque
                else (
                    "bash: network commands "
                    + ", ".join(sorted({c.name for c in a.commands if c.network}))
                    if a.network
                    else "bash: local commands"
                ),
            )
        dst = classifier.as_destination(cls.classification)
        external = dst == "external"

        # suspicious endpoints: any host the call sends to
        suspicious = None
        if external:
            for h in out.hosts:
                ep = pol.suspicious(h)
                if ep is not None:
                    suspicious = h
                    break

        key, slot = self._slot(session_key, now, source)
        # decode arguments outside the lock
        min_len = min(self.k, _SENSITIVE_MIN)
        decoded: list[list[str]] = [views(t, self.k) for t in out.texts if len(t) >= min_len]
        found: dict[int, Match] = {}
        implicit: list[OriginRef] = []
        with slot.lock:
            s = slot.session
            s.last_active = now
            s.tools[tool] = None
            for vs in decoded:
                s.match_text(vs, found)
            if out.shell is not None:
                for up in out.shell.uploads:
                    o = s.match_path(up) if not up.startswith("<") else None
                    if o is not None:
                        _add_match(found, o, "path", o.sensitive)
                    else:
                        sens: tuple[str, ...] = ()
                        if up == "<environment>":
                            sens = ("environment",)
                        elif is_sensitive_path(up):
                            sens = ("sensitive_file",)
                        implicit.append(
                            OriginRef(
                                "Bash", None, "internal", "internal", up, sens, "implicit", 0.0
                            )
                        )
            coverage: Coverage = "full" if s.has_hooks else "proxy_only"

        if out.shell is not None and external:
            for v in out.shell.env_vars:
                if _secret_var(v) and not _vendor_dest(v, out.hosts):
                    implicit.append(
                        OriginRef(
                            "Bash",
                            None,
                            "internal",
                            "internal",
                            f"${v}",
                            (f"env:{v}",),
                            "implicit",
                            0.0,
                        )
                    )
        if external:
            # credentials in what leaves the host count even when never recorded
            # (docs/flow.md "Matching": "sensitive data in arguments")
            seen_types: set[str] = set()
            recorded = {t for m in found.values() for t in m.sensitive}
            for vs in decoded:
                for v in vs:
                    for hit in detector.find(v):
                        if hit.type in recorded or hit.type in seen_types or _glued_digits(hit, v):
                            continue
                        seen_types.add(hit.type)
            if seen_types:
                implicit.append(
                    OriginRef(
                        tool,
                        server_id,
                        "internal",
                        "internal",
                        "arguments",
                        tuple(sorted(seen_types)),
                        "implicit",
                        0.0,
                    )
                )

        # flows
        refs: list[OriginRef] = []
        edge_types: list[str] = []
        sensitive: dict[str, None] = {}
        for m in found.values():
            o = m.origin
            src = o.source_class
            # a round trip through one server (read from GitHub, write back to it) crosses nothing
            if src == "internal" and external and server_id is not None and o.server == server_id:
                ft = "internal→internal"
            else:
                ft = f"{src}→{dst}"
            refs.append(
                OriginRef(
                    o.tool,
                    o.server,
                    o.classification,
                    src,
                    o.label,
                    m.sensitive,
                    m.how,
                    max(0.0, now - o.ts),
                )
            )
            edge_types.append(ft)
            if ft == I2E:
                sensitive.update(dict.fromkeys(m.sensitive))
        if external:
            for r in implicit:
                refs.append(r)
                edge_types.append(I2E)
                sensitive.update(dict.fromkeys(r.sensitive))
        flow_type = I2E if I2E in edge_types else (edge_types[0] if edge_types else None)
        order = sorted(
            range(len(refs)),
            key=lambda i: (edge_types[i] != I2E, not refs[i].sensitive, refs[i].age_seconds),
        )
        refs = [refs[i] for i in order]
        edge_types = [edge_types[i] for i in order]

        if justified is None:
            j = args.get("flow_justification")
            if isinstance(j, str):
                justified = bool(j.strip())
        risk = risk_for(flow_type, bool(sensitive), justified, pol.require_justification)
        names = _override_names(tool, bare, server_id)
        ov = pol.override(names)
        if suspicious is not None:
            action = "deny"
        elif ov is not None:
            action = ov[1]
        else:
            action = pol.action_for(risk)
        action = degrade(action, can_ask)
        reason = _reason(
            flow_type,
            refs,
            tool,
            out.destination,
            tuple(sensitive),
            suspicious,
            pol,
            ov,
            action,
            risk,
        )

        if edge_types:
            with slot.lock:
                for ft in edge_types:
                    slot.session.count_edge(ft, risk if ft == I2E else "none")
        with self._lock:
            n = self._n
            n["checks"] += 1
            if flow_type == I2E:
                n["flows"] += 1
            if action in ("deny", "ask", "warn"):
                n[action] += 1
        return FlowVerdict(
            action,  # type: ignore[arg-type]
            flow_type,
            risk,
            reason,
            cls,
            tuple(refs),
            coverage,
            tuple(dict.fromkeys(out.hosts)),
            tuple(sensitive),
            key,
            suspicious,
            ov[0] if ov else None,
        )

    def _outgoing(
        self, tool: str, server_id: str | None, args: dict[str, Any], cls: ClassificationResult
    ) -> _Outgoing:
        if server_id is None and tool == "Bash":
            cmd = args.get("command")
            if not isinstance(cmd, str):
                cmd = orjson.dumps(args, default=str).decode()
            a = self.analyze_shell(cmd)
            if a.network or a.opaque:
                hosts = [h for h in (host_of(d) for d in a.destinations) if h]
                texts = list(a.payload)
                dest = ", ".join(dict.fromkeys(hosts)) or ", ".join(a.destinations) or "the network"
                return _Outgoing(texts, hosts, dest, a)
            return _Outgoing([cmd], [], "local commands", a)
        keys = OUTGOING_ARGS.get(tool) if server_id is None else None
        if keys is not None:
            vals = [args.get(k) for k in keys]
            texts = leaves([v for v in vals if v is not None], self.max_bytes)
        else:
            texts = leaves(args, self.max_bytes)
        hosts = _hosts(args if keys is None else {k: args.get(k) for k in keys}, texts)
        if tool == "WebSearch" and server_id is None:
            dest = "web search"
        elif hosts:
            dest = ", ".join(dict.fromkeys(hosts))
        else:
            dest = server_id or tool
        return _Outgoing(texts, hosts, dest)

    # ------------------------------------------------------------ correlation

    @staticmethod
    def _corr_key(tool: str, arguments: Any, scope: str = "") -> bytes:
        split = split_mcp_name(tool)
        bare = split[1] if split else tool
        try:
            a = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS, default=str).decode()
        except TypeError:
            a = repr(arguments)
        return digest(scope + "\0" + bare + "\0" + a)

    def register_pending(
        self,
        hook_session: str,
        tool: str,
        arguments: Any,
        *,
        scope: str = "",
        now: float | None = None,
    ) -> None:
        """A PreToolUse for an ``mcp__*`` tool: the MCP call with the same tool
        name and arguments, if it arrives within ``correlation_ttl_seconds``,
        belongs to ``hook_session`` (docs/flow.md "Sessions"). ``scope`` (the caller's uid)
        keeps one user's MCP calls from matching another user's hooks."""
        now = self._clock() if now is None else now
        k = self._corr_key(tool, arguments, scope)
        with self._lock:
            self._purge_pending(now)
            lst = self._pending.setdefault(k, [])
            lst.append((hook_session, now))
            self._pending_order.append((now, k))
            while len(self._pending_order) > _MAX_PENDING:
                _t, old = self._pending_order.popleft()
                ol = self._pending.get(old)
                if ol:
                    ol.pop(0)
                    if not ol:
                        del self._pending[old]

    def _purge_pending(self, now: float) -> None:
        cutoff = now - self.ttl
        q = self._pending_order
        while q and q[0][0] < cutoff:
            _t, k = q.popleft()
            lst = self._pending.get(k)
            if lst:
                while lst and lst[0][1] < cutoff:
                    lst.pop(0)
                if not lst:
                    del self._pending[k]

    def correlate(
        self,
        mcp_session: str,
        tool: str,
        arguments: Any,
        *,
        scope: str = "",
        now: float | None = None,
    ) -> str | None:
        """An MCP ``tools/call`` arrived on ``mcp_session``: the hook session it
        is linked to (linking it now if a pending PreToolUse of the same
        ``scope`` matches), or None."""
        now = self._clock() if now is None else now
        with self._lock:
            linked = self._links.get(mcp_session)
            if linked is not None:
                return linked
            self._purge_pending(now)
            k = self._corr_key(tool, arguments, scope)
            lst = self._pending.pop(k, None)
            if not lst:
                return None
            # the first call takes the oldest entry; identical calls of other
            # sessions in the same window are ambiguous and dropped (docs/flow.md "Sessions")
            hook = lst[0][0]
        self.link(mcp_session, hook, now=now)
        with self._lock:
            self._n["correlated"] += 1
        return hook

    def link(self, mcp_session: str, hook_session: str, *, now: float | None = None) -> None:
        """Attribute ``mcp_session`` to ``hook_session`` for the rest of its life.
        Origins already recorded under the MCP session move to the hook session."""
        if mcp_session == hook_session:
            return
        now = self._clock() if now is None else now
        with self._lock:
            if mcp_session in self._links:
                return  # first link wins (docs/flow.md "Sessions")
            self._links[mcp_session] = hook_session
            old = self._sessions.pop(mcp_session, None)
            hs = self._sessions.get(hook_session)
            if hs is None:
                hs = _Slot(FlowSession(now, self.budget, self.k))
                self._sessions[hook_session] = hs
            hs.session.has_hooks = True
        with hs.lock:
            hs.session.linked[mcp_session] = None
            if old is not None:
                with old.lock:
                    hs.session.merge_from(old.session)

    def linked_session(self, mcp_session: str) -> str | None:
        return self._links.get(mcp_session)

    # ------------------------------------------------------------ expiry

    def expire(self, now: float | None = None, *, everything: bool = False) -> list[dict[str, Any]]:
        """Remove sessions idle past the timeout (``everything``: all of them, at
        shutdown); their ``flow_summary`` fields (plus ``session_id``), ready
        for ``FlowSummary(**d)``."""
        now = self._clock() if now is None else now
        out: list[dict[str, Any]] = []
        with self._lock:
            out.extend(self._evicted)
            self._evicted.clear()
            cutoff = float("inf") if everything else now - self.timeout
            dead = [k for k, sl in self._sessions.items() if sl.session.last_active < cutoff]
            for k in dead:
                sl = self._sessions.pop(k)
                out.append(self._summary(k, sl.session, now, "shutdown" if everything else "idle"))
                for m in sl.session.linked:
                    if self._links.get(m) == k:
                        del self._links[m]
            self._purge_pending(now)
        return out

    def forget(self, session_key: str) -> bool:
        """Drop a session without a summary (a selftest's canary session)."""
        with self._lock:
            slot = self._sessions.pop(session_key, None)
            if slot is None:
                return False
            for m in slot.session.linked:
                if self._links.get(m) == session_key:
                    del self._links[m]
            return True

    def has_session(self, session_key: str) -> bool:
        with self._lock:
            return self._links.get(session_key, session_key) in self._sessions

    def is_sink(self, tool: str, server_id: str | None, arguments: Any) -> bool:
        """Whether a call of ``tool`` can send data off the host (an external or
        hybrid destination; for ``Bash``, a command that uses the network or
        cannot be analysed). Cheap: for callers deciding whether to wait for
        results still being recorded before a check."""
        cls = self._cfg[1].tool(tool, server_id)
        if server_id is None and tool == "Bash":
            cmd = arguments.get("command") if isinstance(arguments, dict) else None
            if not isinstance(cmd, str):
                return True
            a = self.analyze_shell(cmd)
            return a.network or a.opaque
        return self.classifier.as_destination(cls.classification) == "external"

    @staticmethod
    def _summary(key: str, s: FlowSession, now: float, reason: str) -> dict[str, Any]:
        return {
            "session_id": key,
            "duration_seconds": round(max(0.0, s.last_active - s.created), 3),
            "total_origins": s.total_origins,
            "total_flow_edges": s.edges,
            "flow_type_distribution": dict(s.flow_types),
            "risk_level_distribution": dict(s.risk_levels),
            "linked_mcp_sessions": list(s.linked),
            "tools_used": list(s.tools),
            "coverage": "full" if s.has_hooks else "proxy_only",
            "reason": reason,
        }

    def stats(self) -> dict[str, Any]:
        with self._lock:
            sessions = list(self._sessions.values())
            links = len(self._links)
            pending = sum(len(v) for v in self._pending.values())
            counters = dict(self._n)
        return {
            "enabled": self.enabled,
            "sessions": len(sessions),
            "hook_sessions": sum(1 for s in sessions if s.session.has_hooks),
            "origins": sum(len(s.session.origins) for s in sessions),
            "index_entries": sum(s.session.entries() for s in sessions),
            "linked_mcp_sessions": links,
            "pending_correlations": pending,
            **counters,
        }


# ----------------------------------------------------------------- helpers


def _add_match(found: dict[int, Match], o: Origin, how: str, sens: tuple[str, ...]) -> None:
    if o.id not in found:
        found[o.id] = Match(o, how, sens)


def _clip(s: str, budget: int) -> str:
    if len(s) <= budget // 4:
        return s
    b = s.encode("utf-8", "surrogatepass")
    return s if len(b) <= budget else b[:budget].decode("utf-8", "ignore")


def _config_values(text: str, k: int) -> list[str]:
    """Values of ``KEY=value`` / ``key: value`` lines (config and .env files)."""
    if "=" not in text and ":" not in text:
        return []
    out: list[str] = []
    for n, line in enumerate(text.splitlines()):
        if n >= 2000:
            break
        for sep in ("=", ":"):
            _k, s, v = line.partition(sep)
            if s and _k.strip() and " " not in _k.strip().removeprefix("export "):
                v = v.strip().strip("\"'").strip()
                if len(v) >= k:
                    out.append(v)
                break
    return out


def _label(args: dict[str, Any]) -> str | None:
    for k in _LABEL_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v if len(v) <= 200 else v[:197] + "..."
    return None


def _hosts(args: Any, texts: list[str]) -> list[str]:
    hosts: list[str] = []
    for t in texts:
        if "://" in t:
            for u in _URL_RX.findall(t):
                h = host_of(u)
                if h:
                    hosts.append(h)
        if "@" in t:
            hosts.extend(m.group(1).lower() for m in _EMAIL_ADDR.finditer(t))
    stack = [args]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, str) and isinstance(k, str) and k.lower() in _URLISH_KEYS:
                    h = host_of(v)
                    if h:
                        hosts.append(h)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(o, list):
            stack.extend(x for x in o if isinstance(x, (dict, list)))
    return list(dict.fromkeys(hosts))


_DIGIT_TYPES = frozenset({"credit_card", "us_ssn", "phone"})


def _glued_digits(m: SensitiveMatch, text: str) -> bool:
    """A digit-shaped match inside a longer alphanumeric run (hex, base64, ids)
    is not a card or phone number."""
    if m.type not in _DIGIT_TYPES:
        return False
    before = text[m.start - 1] if m.start > 0 else " "
    after = text[m.end] if m.end < len(text) else " "
    return before.isalnum() or after.isalnum()


def _secret_var(name: str) -> bool:
    u = name.upper()
    return any(s in u for s in _SECRET_VAR)


def _vendor_dest(var: str, hosts: list[str]) -> bool:
    """``$GITHUB_TOKEN`` to api.github.com is the credential's own service."""
    vendor = var.split("_", 1)[0].lower()
    vendor = _VENDOR_ALIASES.get(vendor, vendor)
    return len(vendor) >= 3 and bool(hosts) and all(vendor in h for h in hosts)


def _override_names(tool: str, bare: str, server_id: str | None) -> tuple[str, ...]:
    if server_id is None:
        return (tool,)
    return (tool, f"{server_id}:{bare}", f"mcp__{server_id}__{bare}", bare)


def _reason(
    flow_type: str | None,
    refs: list[OriginRef],
    tool: str,
    dest: str,
    sensitive: tuple[str, ...],
    suspicious: str | None,
    pol: CompiledFlowPolicy,
    ov: tuple[str, str] | None,
    action: str,
    risk: str,
) -> str | None:
    parts: list[str] = []
    if suspicious is not None:
        parts.append(f"destination {suspicious} is a suspicious endpoint")
    if flow_type == I2E:
        first = next((r for r in refs if r.source_class == "internal"), refs[0] if refs else None)
        if first is not None:
            who = (
                first.tool
                if first.server is None or first.tool.startswith("mcp__")
                else f"{first.server}:{first.tool}"
            )
            what = f"data read by {who}" if first.how != "implicit" else "local data"
            if first.label:
                what += f" ({first.label})"
            more = len([r for r in refs if r.source_class == "internal"]) - 1
            if more > 0:
                what += f" and {more} more source{'s' if more > 1 else ''}"
            s = f"internal→external flow: {what} sent by {tool} to {dest}"
            if sensitive:
                s += f" (sensitive: {', '.join(sensitive)})"
            parts.append(s)
    elif flow_type is not None and refs:
        r = refs[0]
        parts.append(f"{flow_type} flow: data from {r.tool} passed to {tool}")
    if ov is not None:
        parts.append(f"tool override {ov[0]!r}: {ov[1]}")
    if not parts:
        return None
    text = "; ".join(parts)
    if RISK_RANK.get(risk, 0) and action == "warn":
        text += (
            " (ask degraded to warn: nobody to ask)"
            if pol.action_for(risk) == "ask" and ov is None and suspicious is None
            else ""
        )
    return text
