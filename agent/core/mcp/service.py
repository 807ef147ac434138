"""The daemon's MCP hub: registry + detector + decision engine behind one object.

``register_tools`` is what happens when a tools/list is seen (shim) or fetched
(network discovery): inspect each definition, register it (pins, change
detection, shadowing), emit the definition events, and tell the caller which
tools to hide. ``decide`` is the one decision pipeline. Everything here is
thread-safe, so the control API may run registrations in a worker thread
(detection regexes must not stall the event loop) while decisions run on it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.agent.core.events.models import (
    DetectionResult,
    Event,
    FieldChange,
    MCPDetection,
    MCPToolChanged,
    MCPToolSeen,
    MCPToolShadowed,
)
from agentsh.agent.core.mcp.decision import DecisionEngine
from agentsh.agent.core.mcp.hashing import canonical_json
from agentsh.agent.core.mcp.registry import ToolEntry, ToolRegistry
from agentsh.agent.core.mcp.types import Decision, DecisionRequest
from agentsh.agent.core.mcp.verdict_store import VERDICTS_FILE, VerdictStore, detector_fingerprint
from agentsh.agent.core.policy.schema import SEVERITY_RANK, DetectionConfig, Policy
from agentsh.agent.core.vocab import SERVER_TYPES, SOURCES

if TYPE_CHECKING:
    from agentsh.agent.core.flow.engine import FlowEngine

log = logging.getLogger(__name__)

REGISTRY_FILE = "registry.db"
_CACHE_MAX = 4096
_SOURCES = frozenset(SOURCES)


@dataclass(slots=True)
class ToolVerdict:
    """What the shim needs per tool of a tools/list: hide it or pass it on."""

    name: str
    hash: str
    status: str
    blocked: bool = False
    reason: str = ""
    detections: list[DetectionResult] = field(default_factory=list)
    max_severity: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hash": self.hash,
            "status": self.status,
            "blocked": self.blocked,
            "reason": self.reason,
            "detections": [d.model_dump(mode="json") for d in self.detections],
            "max_severity": self.max_severity,
        }


def _as_result(d: Any) -> DetectionResult:
    """A detector result as the model (a detector returning plain mappings is validated)."""
    if isinstance(d, DetectionResult):
        return d
    if isinstance(d, Mapping):
        return DetectionResult.model_validate(d)
    raise TypeError(f"cannot use detection result of type {type(d).__name__}")


class _Inspector:
    """Adapter over the pattern detector (agentsh.agent.core.mcp.detector); without it
    (or with inspection disabled) every tool is clean."""

    def __init__(self, cfg: DetectionConfig, enabled: bool, store_path: Path | None = None) -> None:
        self.detector: Any = None
        self._cache: dict[tuple[bytes, bytes], list[DetectionResult]] = {}
        self.store: VerdictStore | None = None
        if not enabled:
            return
        try:
            from agentsh.agent.core.mcp.detector import Detector
        except ImportError as e:
            log.error("MCP detector unavailable, definitions are not inspected: %s", e)
            return
        self.detector = Detector(cfg)
        if store_path is not None:
            # verdicts kept across restarts, valid only for this detector and configuration
            self.store = VerdictStore(store_path, detector_fingerprint(cfg), _CACHE_MAX)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def inspect_all(
        self,
        tools: Sequence[dict[str, Any]],
        peers: Sequence[dict[str, Any]],
        server: str | None = None,
    ) -> dict[str, list[DetectionResult]]:
        """Detections per tool name. ``server`` is the listing server's id and the
        other tools of the same tools/list are each tool's siblings ("call
        `list_tables` first" is a workflow, not a redirection). Results are cached by
        (full definition, peer set, siblings, server): every session of a server
        sends the same tools/list again."""
        if self.detector is None:
            return {t["name"]: [] for t in tools}
        peer_key = hashlib.sha256(
            b"\0".join(sorted(canonical_json(p).encode() for p in peers))
        ).digest()
        names = [str(t.get("name", "")) for t in tools]
        # one context per tools/list: the peers, the server and every name listed. A tool's
        # siblings are the listed names but its own, and its own name is in its definition,
        # so (definition, context) decides them (hashed once, not once per tool: O(n), not O(n²))
        distinct = sorted(set(names))
        ctx = hashlib.sha256(
            b"\0".join([peer_key, (server or "").encode(), *(n.encode() for n in distinct)])
        ).digest()
        out: dict[str, list[DetectionResult]] = {}
        for tool, name in zip(tools, names, strict=True):
            key = (hashlib.sha256(canonical_json(tool).encode()).digest(), ctx)
            hit = self._cache.get(key)
            if hit is None and self.store is not None:
                hit = self.store.get(key[0] + key[1])
                if hit is not None:
                    self._remember(key, hit)
            if hit is None:
                try:
                    siblings = [n for n in distinct if n != name]
                    hit = [_as_result(r) for r in self.detector.inspect(
                        tool, peers=peers, siblings=siblings, server=server)]
                except Exception as e:  # fail closed: a definition that breaks the analysis is not clean
                    log.exception("detector failed on tool %r; treating it as poisoned", tool.get("name"))
                    from agentsh.agent.core.mcp.detector import inspection_failed

                    hit = [inspection_failed("definition", e)]
                else:
                    if self.store is not None:  # (never a failure: the next daemon tries again)
                        self.store.put(key[0] + key[1], hit)
                self._remember(key, hit)
            out[name] = list(hit)  # frozen models: shared with the cache, never copied
        return out

    def _remember(self, key: tuple[bytes, bytes], hit: list[DetectionResult]) -> None:
        if len(self._cache) >= _CACHE_MAX:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = hit


class MCPService:
    def __init__(
        self,
        policy: Policy,
        state_dir: Path | str,
        emit: Callable[[Event], bool],
        flow: FlowEngine | None = None,
    ) -> None:
        self._policy = policy
        self._emit = emit
        persistent = policy.mcp.inspection.registry.persistent
        self.registry = ToolRegistry(Path(state_dir) / REGISTRY_FILE if persistent else None)
        self.flow = flow
        """The daemon's one flow engine (docs/flow.md); the decision pipeline's step 8."""
        self.engine = DecisionEngine(self.registry, policy, emit, flow=flow)
        self._verdicts_path = Path(state_dir) / VERDICTS_FILE if persistent else None
        self._inspector = _Inspector(
            policy.mcp.inspection.detection, policy.mcp.inspection.enabled, self._verdicts_path
        )
        self._shadow_lock = threading.Lock()
        self._shadow_reported: dict[tuple[str, str], tuple[str, ...]] = {}
        self.flags: dict[tuple[str, str], int] = {}
        """(detection category, alert|block) → ``mcp_detection`` events, for /metrics."""

    # ------------------------------------------------------------------ lifecycle

    def update_policy(self, policy: Policy) -> None:
        old = self._policy.mcp.inspection
        self._policy = policy
        self.engine.update_policy(policy)
        if self.flow is not None:
            self.flow.update_policy(policy)
        new = policy.mcp.inspection
        if new.detection != old.detection or new.enabled != old.enabled:
            self._inspector.close()
            self._inspector = _Inspector(new.detection, new.enabled, self._verdicts_path)

    def close(self) -> None:
        self._inspector.close()
        self.registry.close()

    # ------------------------------------------------------------------ definitions

    def _peers_of(self, server_id: str) -> list[dict[str, Any]]:
        """Tools other servers currently list: what a description of this server
        could shadow or impersonate. (A server's own tools referring to each
        other, "call list_tables first", is ordinary and not shadowing.)"""
        return [
            {"server": e.server_id, "tool": e.definition}
            for e in self.registry.list(include_unlisted=False)
            if e.server_id != server_id
        ]

    def register_tools(
        self,
        server_id: str,
        server_type: str,
        server_addr: str | None,
        tools: Sequence[dict[str, Any]],
        session_id: str | None = None,
        source: str = "shim",
        complete: bool = True,
        pid: int | None = None,
    ) -> list[ToolVerdict]:
        """Inspect, register and report one server's tools (a tools/list result).

        Emits ``mcp_tool_seen`` per tool; ``mcp_detection`` per detection at or
        above the threshold and ``mcp_tool_changed`` once per new definition (not
        on every tools/list); ``mcp_tool_shadowed`` when another server lists the
        same name (once per new set of servers). Raises ValueError on bad input.
        """
        policy = self._policy
        mcp = policy.mcp
        insp = mcp.inspection
        threshold = SEVERITY_RANK[insp.detection.alert_threshold]
        src = source if source in _SOURCES else "daemon"
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise ValueError(f"tools[{i}]: must be an object with a string 'name'")
        detections = self._inspector.inspect_all(tools, self._peers_of(server_id), server=server_id)
        auto_pin = insp.registry.pin_on_first_use and mcp.version_pinning.auto_trust_first
        regs = self.registry.register(
            server_id,
            server_type,
            server_addr or "",
            tools,
            detections,
            auto_pin=auto_pin,
            complete=complete,
        )
        vp = mcp.version_pinning
        on_change = vp.on_change if vp.enabled else "allow"
        verdicts: list[ToolVerdict] = []
        events: list[Event] = []
        common: dict[str, Any] = {"source": src, "session_id": session_id, "pid": pid}
        descriptions = {t["name"]: t.get("description") for t in tools}
        for reg in regs:
            e = reg.entry
            dets = list(e.detections)
            block_reason = self.engine.definition_block(e)
            verdicts.append(
                ToolVerdict(
                    name=e.tool_name,
                    hash=e.hash,
                    status=reg.status,
                    blocked=block_reason is not None,
                    reason=block_reason or "",
                    detections=dets,
                    max_severity=e.max_severity,
                )
            )
            try:
                description = descriptions.get(e.tool_name)
                events.append(
                    MCPToolSeen(
                        **common,
                        server_id=server_id,
                        server_type=_stype(e.server_type),
                        server_addr=e.server_addr or None,
                        tool_name=e.tool_name,
                        tool_hash=e.hash,
                        description=description if isinstance(description, str) else None,
                        status=reg.status,
                        detections=dets,
                        max_severity=e.max_severity,
                        blocked=block_reason is not None,
                    )
                )
                if reg.transition:
                    det_block = (
                        insp.on_detection.action == "block" and mcp.enforce_policy and not e.approved
                    )
                    for d in dets:
                        if SEVERITY_RANK[d.severity] >= threshold:
                            events.append(
                                MCPDetection(
                                    **common,
                                    server_id=server_id,
                                    tool_name=e.tool_name,
                                    detection=d,
                                    action="block" if det_block else "alert",
                                )
                            )
                            fk = (d.category, "block" if det_block else "alert")
                            self.flags[fk] = self.flags.get(fk, 0) + 1
                    if reg.status == "changed" and reg.previous_hash is not None:
                        events.append(
                            MCPToolChanged(
                                **common,
                                server_id=server_id,
                                tool_name=e.tool_name,
                                previous_hash=reg.previous_hash,
                                new_hash=e.hash,
                                changes=[FieldChange.model_validate(c) for c in reg.changes],
                                detections=dets,
                                action=on_change,
                            )
                        )
                if reg.shadowed_by:
                    key = (server_id, e.tool_name)
                    with self._shadow_lock:
                        report = self._shadow_reported.get(key) != reg.shadowed_by
                        self._shadow_reported[key] = reg.shadowed_by
                    if report:
                        events.append(
                            MCPToolShadowed(
                                **common,
                                tool_name=e.tool_name,
                                server_id=server_id,
                                other_server_ids=list(reg.shadowed_by),
                            )
                        )
            except Exception:  # an event that does not validate must not lose the registration
                log.exception("cannot build events for tool %r of %r", e.tool_name, server_id)
        for ev in events:
            try:
                self._emit(ev)
            except Exception:
                log.exception("cannot emit %s", ev.type)
        return verdicts

    def remove_server(self, server_id: str) -> int:
        """A server went away (its shim exited): its tools stop being current; pins stay."""
        with self._shadow_lock:
            for k in [k for k in self._shadow_reported if k[0] == server_id]:
                del self._shadow_reported[k]
        return self.registry.remove_server(server_id)

    # ------------------------------------------------------------------ decisions

    def decide(self, req: DecisionRequest) -> Decision:
        return self.engine.decide(req)

    # ------------------------------------------------------------------ admin

    def approve(
        self, server: str, tool: str | None = None, all_tools: bool = False, approved_by: str = ""
    ) -> list[dict[str, Any]]:
        """Approve one tool or every tool of a server. KeyError when unknown."""
        if all_tools:
            entries = self.registry.approve_all(server, approved_by)
        else:
            if not tool:
                raise ValueError("a tool name (or all) is required")
            entries = [self.registry.approve(server, tool, approved_by)]
        return [self._entry_json(e) for e in entries]

    def _entry_json(self, e: ToolEntry, full: bool = False) -> dict[str, Any]:
        d = e.to_json(full=full)
        if e.approved:
            status = "approved"
        elif e.changed:
            status = "changed"
        elif e.pinned_hash is not None:
            status = "pinned"
        else:
            status = "unpinned"
        d["status"] = status
        reason = self.engine.definition_block(e)
        d["blocked"] = reason is not None
        d["block_reason"] = reason
        return d

    def list(self, server: str | None = None) -> list[dict[str, Any]]:
        return [self._entry_json(e) for e in self.registry.list(server)]

    def show(self, server: str, tool: str) -> dict[str, Any] | None:
        e = self.registry.get(server, tool)
        return self._entry_json(e, full=True) if e is not None else None

    def names(self) -> dict[str, Any]:
        """For the LLM proxy's pre-filter (GET /v1/mcp/names): the names a tool call
        must carry to possibly be an MCP tool, and whether unknown names matter."""
        gen, names = self.registry.call_names()
        mcp = self._policy.mcp
        return {
            "version": gen,
            "names": sorted(names),
            "fail_closed": mcp.fail_closed,
            "enforce": mcp.enforce_policy,
        }

    def snapshot(self, policy_hash: str) -> dict[str, Any]:
        """The decision snapshot a layer keeps for deciding without the daemon
        (channel ``op: snapshot``). ``version`` changes with the registry and the
        policy, so an unchanged snapshot costs one short answer."""
        gen, names = self.registry.call_names()
        mcp = self._policy.mcp
        return {
            "version": self.snapshot_version(policy_hash, gen),
            "names": sorted(names),
            "tools": self.registry.snapshot_entries(),
            "fail_closed": mcp.fail_closed,
            "enforce": mcp.enforce_policy,
        }

    def snapshot_version(self, policy_hash: str, generation: int | None = None) -> str:
        gen = self.registry.call_names()[0] if generation is None else generation
        return f"{gen}:{policy_hash.removeprefix('sha256:')[:16]}"

    def server_addrs(self) -> dict[str, str]:
        return self.registry.server_addrs()

    def stats(self) -> dict[str, Any]:
        out = {**self.registry.stats(), "decisions": self.engine.stats()}
        if self.flow is not None:
            out["flow"] = self.flow.stats()
        return out


def _stype(s: str) -> Any:
    return s if s in SERVER_TYPES else ""
