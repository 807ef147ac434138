"""The project's closed vocabularies, each defined once (docs/architecture.md "Vocabulary").

Every value set that several layers share (event sources, server types,
decision actions, severities, flow risk levels and verdicts) is one
``Literal`` here; the ordered tuples and rank tables are derived from it with
``typing.get_args``, so a value added to a ``Literal`` reaches the policy
schema, the event models, the decision pipeline and the CLI together.
``tests/test_vocab.py`` checks that no other module spells one of these sets
out again.

Provider dialects are deliberately *not* a closed set here: the LLM proxy's
dialect registry is the one place that knows which exist, so adding a
provider touches ``proxy/`` only. The core treats a dialect or provider name
as an identifier (:data:`IDENT_PATTERN`), keeps it as given, and refuses one
that is not well formed.

This module imports no pydantic at load time: ``agentshctl`` reads the ranks
and must start fast (docs/operations.md "CLI start-up").
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

# ------------------------------------------------------------------ who saw it

Source = Literal["daemon", "proxy", "shim", "bpf", "hook", "ctl"]
"""The component that saw an event (the envelope's ``source``)."""
SOURCES: tuple[Source, ...] = get_args(Source)

CallSource = Literal["shim", "proxy", "hook", "test"]
"""Who asks the decision pipeline about a tool call."""
CALL_SOURCES: tuple[CallSource, ...] = get_args(CallSource)

# ------------------------------------------------------------------ MCP

ServerType = Literal["stdio", "http", "sse"]
"""The transport of an MCP server."""
SERVER_TYPES: tuple[ServerType, ...] = get_args(ServerType)
MaybeServerType = Literal[ServerType, ""]
"""A server type, or ``""`` when the tool is not in the registry."""

Action = Literal["allow", "block"]
"""The decision pipeline's verdict on a tool call (and a connection)."""
ACTIONS: tuple[Action, ...] = get_args(Action)

PinAction = Literal["block", "alert", "allow"]
"""What a changed pinned tool definition leads to (``version_pinning.on_change``)."""

DetectionAction = Literal["alert", "block"]
"""What a detection at or above the threshold leads to."""

# ------------------------------------------------------------------ severity

Severity = Literal["low", "medium", "high", "critical"]
"""A detection's severity (policy rules, detector findings), lowest first."""
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}

EventSeverity = Literal["info", Severity]
"""An event's envelope severity: ``info`` below the detection severities
(docs/events.md "Severity"); maps 1:1 onto OCSF ``severity_id`` 1..5."""
EVENT_SEVERITIES: tuple[EventSeverity, ...] = get_args(EventSeverity)
EVENT_SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(EVENT_SEVERITIES)}

# ------------------------------------------------------------------ data flow (docs/flow.md)

RiskLevel = Literal["none", "medium", "high", "critical"]
"""A data flow's risk, lowest first."""
RISK_LEVELS: tuple[RiskLevel, ...] = get_args(RiskLevel)
RISK_RANK: dict[str, int] = {r: i for i, r in enumerate(RISK_LEVELS)}

FlowDecision = Literal["allow", "warn", "ask", "deny"]
"""The data-flow step's verdict (and a flow policy's configured action)."""
FLOW_DECISIONS: tuple[FlowDecision, ...] = get_args(FlowDecision)

Coverage = Literal["full", "proxy_only"]
"""A flow session's coverage: hooks seen (``full``) or the proxy only."""
COVERAGES: tuple[Coverage, ...] = get_args(Coverage)

# ------------------------------------------------------------------ open identifiers

IDENT_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
"""A provider or dialect name: lowercase letter first, then lowercase letters,
digits, ``_`` and ``-``; at most 64 characters (as the policy's provider
names). The set of names is the proxy's."""
_IDENT = re.compile(IDENT_PATTERN)
IDENT_RULE = "lowercase letters, digits, '_' and '-', starting with a letter, at most 64 characters"


def is_ident(v: object) -> bool:
    """``v`` is a well-formed provider/dialect name."""
    return isinstance(v, str) and _IDENT.fullmatch(v) is not None


class _IdentSchema:
    """pydantic: a ``str`` matching :data:`IDENT_PATTERN`. The core schema is
    built on first use, so importing this module does not import pydantic."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.str_schema(pattern=IDENT_PATTERN)


Dialect = Annotated[str, _IdentSchema()]
"""The API dialect of an LLM request (which ones exist: the proxy's registry)."""
Provider = Annotated[str, _IdentSchema()]
"""The LLM provider of a request (which ones exist: the proxy's registry)."""
