"""Flow policy: flow types, risk levels and actions (docs/flow.md "Flow types,
risk and actions").

Risk, for a detected flow:

* ``none`` — internal→internal, external→external, external→internal;
* ``critical`` — internal→external carrying sensitive data;
* ``high`` — internal→external without sensitive data that is *unjustified*:
  ``require_justification`` is on and the call had a justification channel
  (a flat ``flow_justification`` argument, or the caller said so) and left it
  empty;
* ``medium`` — any other internal→external flow (the default: a summary
  of internal data sent to a webhook is ``medium`` / ``ask``).

Action: a suspicious endpoint among the destinations → ``deny`` whatever else
is configured; else ``tool_overrides`` for the tool; else by risk
(``critical`` → ``sensitive_data_external``; ``high``/``medium`` →
``internal_to_external``; ``none`` → ``allow``). ``ask`` becomes ``warn``
when nobody can be asked (proxy-only mode).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.agent.core.flow.shell import host_of
from agentsh.agent.core.policy.schema import FlowPolicyConfig
from agentsh.agent.core.vocab import RISK_RANK, RiskLevel

__all__ = ["RISK_RANK", "CompiledFlowPolicy", "FlowType", "risk_for"]

FlowType = str  # "internal→external" etc.
I2E = "internal→external"


def risk_for(flow_type: str | None, sensitive: bool, justified: bool | None, require: bool) -> RiskLevel:
    if flow_type != I2E:
        return "none"
    if sensitive:
        return "critical"
    if require and justified is False:
        return "high"
    return "medium"


def _endpoint_host(e: str) -> str:
    e = e.strip().lower()
    h = host_of(e) if ("/" in e or ":" in e) else e
    h = (h or e).strip(".")
    if h.startswith("*."):
        h = h[2:]
    return h


@dataclass(slots=True)
class CompiledFlowPolicy:
    internal_to_external: str
    sensitive_data_external: str
    require_justification: bool
    endpoints: frozenset[str]
    overrides: dict[str, str]

    @classmethod
    def compile(cls, cfg: FlowPolicyConfig) -> CompiledFlowPolicy:
        return cls(
            cfg.internal_to_external,
            cfg.sensitive_data_external,
            cfg.require_justification,
            frozenset(h for h in (_endpoint_host(e) for e in cfg.suspicious_endpoints) if h),
            dict(cfg.tool_overrides),
        )

    def suspicious(self, host: str) -> str | None:
        """The configured endpoint ``host`` is, or is a subdomain of."""
        if not self.endpoints:
            return None
        h = host.lower().rstrip(".")
        while True:
            if h in self.endpoints:
                return h
            dot = h.find(".")
            if dot < 0:
                return None
            h = h[dot + 1 :]

    def override(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        for n in names:
            a = self.overrides.get(n)
            if a is not None:
                return n, a
        return None

    def action_for(self, risk: str) -> str:
        if risk == "critical":
            return self.sensitive_data_external
        if risk in ("high", "medium"):
            return self.internal_to_external
        return "allow"


def degrade(action: str, can_ask: bool) -> str:
    """``ask`` with nobody to ask (proxy-only mode) is ``warn``."""
    return "warn" if action == "ask" and not can_ask else action
