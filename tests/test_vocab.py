"""One definition per fact (docs/architecture.md "Vocabulary"): the shared value
sets live in agent/core/vocab.py only, and a provider dialect is an open,
validated identifier in the core: a dialect the core has never heard of is
kept as given through the decision pipeline, a malformed one is refused at
the boundary."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from agentsh.agent.core import vocab
from agentsh.agent.core.client_async import ChannelClient, ControlClient, ControlError, channel_path
from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.output import ocsf as output_ocsf
from agentsh.agent.core.mcp.decision import DecisionEngine
from agentsh.agent.core.mcp.registry import ToolRegistry
from agentsh.agent.core.mcp.types import DecisionRequest
from agentsh.agent.core.policy.schema import Policy
from tests.conftest import BASE_TEST_POLICY, DaemonProc, short_tmpdir
from tests.test_ocsf import errors_of

REPO = Path(__file__).resolve().parents[1]
VOCAB_FILE = REPO / "agent" / "core" / "vocab.py"
NEW_DIALECT = "gemini-next"  # well formed, unknown to the core (and to the proxy today)
TOOL = {"name": "get_weather", "description": "weather for a city",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}


# ------------------------------------------------------------------ (a) an unknown dialect is kept


def test_unknown_dialect_is_kept_through_the_decision_engine_and_its_ocsf_form() -> None:
    events: list[m.Event] = []
    reg = ToolRegistry(None)
    reg.register("weather", "http", "127.0.0.1:8080", [TOOL])

    def emit(ev: m.Event) -> bool:
        events.append(ev)
        return True

    engine = DecisionEngine(reg, Policy.model_validate({"mcp": {}}), emit)
    d = engine.decide(DecisionRequest("mcp__weather__get_weather", source="proxy", dialect=NEW_DIALECT,
                                      request_id="req_g", tool_call_id="fc_1", arguments={"city": "Oslo"}))
    assert (d.action, d.server_id) == ("allow", "weather")
    [ev] = events
    assert isinstance(ev, m.MCPToolCallIntercepted)
    assert ev.dialect == NEW_DIALECT
    assert engine.stats().get("emit_failed", 0) == 0
    ev.id = "0" * 26
    line = output_ocsf(ev, {**ev.model_dump(mode="json", exclude_none=True),
                            "timestamp": "2026-11-22T10:00:00.000001Z", "host": "h"})
    assert errors_of(line) == []
    assert line["api"]["operation"] == "tool_call" and NEW_DIALECT in line["message"]
    assert line["unmapped"]["dialect"] == NEW_DIALECT


def _proc(root: Path) -> DaemonProc:
    d = DaemonProc(root=root, config_dir=root / "etc", state_dir=root / "lib",
                   events_path=root / "log" / "events.jsonl", socket=root / "run" / "agentsh.sock",
                   log_path=root / "log" / "agentshd.log")
    d.config_dir.mkdir(parents=True, exist_ok=True)
    d.write_policy(BASE_TEST_POLICY + "\nmcp:\n  denied_tools:\n    - server: \"*\"\n      tool: get_weather\n")
    return d


@pytest.fixture(scope="module")
def agentshd() -> Iterator[DaemonProc]:
    root = short_tmpdir()
    d = _proc(root).start()
    yield d
    d.stop()
    shutil.rmtree(root, ignore_errors=True)


async def _decide(d: DaemonProc, request: dict[str, Any]) -> Any:
    c = ChannelClient(channel_path(d.socket))
    try:
        return await c.decide(request)
    finally:
        await c.close()


async def test_unknown_dialect_is_kept_end_to_end_by_the_daemon(agentshd: DaemonProc) -> None:
    async with ControlClient(str(agentshd.socket)) as c:
        await c.post("/v1/mcp/tools", {"server_id": "weather", "server_type": "http",
                                       "server_addr": "127.0.0.1:8080", "tools": [TOOL]})
    d = await _decide(agentshd, {"tool_name": "mcp__weather__get_weather", "source": "proxy",
                                 "dialect": NEW_DIALECT, "request_id": "req_vocab", "tool_call_id": "fc_9",
                                 "arguments": {"city": "Oslo"}})
    assert (d["action"], d["reason"]) == ("block", "tool denied")
    ev = agentshd.wait_event("mcp_tool_call_intercepted", lambda e: e["request_id"] == "req_vocab")
    assert (ev["dialect"], ev["action"], ev["tool_call_id"]) == (NEW_DIALECT, "block", "fc_9")


# ------------------------------------------------------------------ (b) a malformed dialect is refused


@pytest.mark.parametrize("dialect", ["x y", "a" * 100, "Gemini", "9lives", "", "gemini\n", "ü"])
async def test_malformed_dialect_is_refused_at_the_daemon_boundary(agentshd: DaemonProc, dialect: str) -> None:
    with pytest.raises(ControlError) as ei:
        await _decide(agentshd, {"tool_name": "mcp__weather__get_weather", "source": "proxy",
                                 "dialect": dialect, "request_id": "req_bad", "tool_call_id": "fc_b"})
    assert ei.value.status == 400
    assert "dialect must be a name of lowercase letters, digits, '_' and '-'" in ei.value.body["error"]


async def test_a_proxy_decision_without_a_dialect_is_refused(agentshd: DaemonProc) -> None:
    with pytest.raises(ControlError) as ei:
        await _decide(agentshd, {"tool_name": "t", "source": "proxy", "request_id": "r", "tool_call_id": "c"})
    assert ei.value.status == 400
    assert "dialect is required for source 'proxy'" in ei.value.body["error"]


@pytest.mark.parametrize("name", ["x y", "a" * 65, "Gemini", "-x"])
def test_malformed_dialect_or_provider_is_refused_by_the_event_models(name: str) -> None:
    """Events handed in by the proxy (offline decisions, llm_request) go through parse_event."""
    common = {"request_id": "r", "tool_name": "t", "tool_call_id": "c", "server_id": "s",
              "server_type": "stdio", "tool_hash": "h", "action": "allow"}
    with pytest.raises(ValidationError, match="should match pattern"):
        m.parse_event({"type": "mcp_tool_call_intercepted", "dialect": name, **common})
    llm = {"type": "llm_request", "request_id": "r", "path": "/x", "status": 200, "streaming": False,
           "latency_ms": 1.0, "request_bytes": 1, "response_bytes": 1}
    with pytest.raises(ValidationError, match="should match pattern"):
        m.parse_event({**llm, "provider": name})
    assert m.parse_event({**llm, "provider": "gemini", "dialect": NEW_DIALECT}).provider == "gemini"


# ------------------------------------------------------------------ (c) nobody re-defines the vocabulary

_SETS = {n: frozenset(get_args(getattr(vocab, n))) for n in (
    "Source", "CallSource", "ServerType", "MaybeServerType", "Action", "PinAction", "DetectionAction",
    "Severity", "EventSeverity", "RiskLevel", "FlowDecision", "Coverage")}
_LEVELS = {n: _SETS[n] for n in ("Severity", "EventSeverity", "RiskLevel")}
_DIALECT_NAMES = frozenset({"anthropic", "openai", "openai-responses"})


def _sources() -> Iterator[tuple[str, ast.AST]]:
    for root in ("agent", "shim", "proxy"):
        for p in sorted((REPO / root).rglob("*.py")):
            if p != VOCAB_FILE:
                yield str(p.relative_to(REPO)), ast.parse(p.read_text(), str(p))


def _strs(nodes: list[ast.expr]) -> list[str] | None:
    out = [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out if len(out) == len(nodes) else None


def _literal_values(node: ast.Subscript) -> list[str] | None:
    f = node.value
    if not ((isinstance(f, ast.Name) and f.id == "Literal") or (isinstance(f, ast.Attribute) and f.attr == "Literal")):
        return None
    sl = node.slice
    return _strs(list(sl.elts) if isinstance(sl, ast.Tuple) else [sl])


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of docstring nodes (modules, classes, functions and attribute docstrings)."""
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            ids |= {id(s.value) for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)}
    return ids


def redefinitions(path: str, tree: ast.AST, core: bool) -> list[str]:
    """What ``tree`` spells out that agent/core/vocab.py defines; in the core
    (``core``), also any closed set or code constant of provider dialects."""
    out = []
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Subscript) and (vals := _literal_values(node)):
            out += [f"{where} Literal of {n}" for n, s in _SETS.items() if len(vals) > 1 and frozenset(vals) == s]
            if core and _DIALECT_NAMES & set(vals):
                out.append(f"{where} Literal of provider dialects (the proxy's registry owns them)")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) > 2 and (vals := _strs(node.elts)):
            out += [f"{where} sequence of {n}" for n, s in _SETS.items() if frozenset(vals) == s]
        elif isinstance(node, ast.Dict) and len(node.keys) > 1:
            keys = _strs([k for k in node.keys if k is not None])
            ints = all(isinstance(v, ast.Constant) and type(v.value) is int for v in node.values)
            if keys is not None and len(keys) == len(node.keys) and ints:
                out += [f"{where} rank table of {n}" for n, s in _LEVELS.items() if set(keys) <= s]
        elif core and isinstance(node, ast.Constant) and node.value == "openai-responses" and id(node) not in docs:
            out.append(f"{where} a provider dialect named in the core")
    return out


def test_no_module_but_vocab_spells_out_a_shared_value_set() -> None:
    found = [h for path, tree in _sources() for h in redefinitions(path, tree, core=not path.startswith("proxy/"))]
    assert found == [], "import these from agentsh.agent.core.vocab instead:\n" + "\n".join(found)


def test_the_redefinition_scan_bites() -> None:
    """The scan above finds each kind of re-definition (so an empty result means something)."""
    src = '''
from typing import Literal
Sev = Literal["critical", "high", "medium", "low"]
RANK = {"low": 0, "medium": 1, "high": 2}
RISKS = ("none", "medium", "high", "critical")
D = Literal["anthropic", "openai"]
x = "openai-responses"
'''
    hits = redefinitions("x.py", ast.parse(src), core=True)
    assert {h.split(" ", 1)[1] for h in hits} == {
        "Literal of Severity", "sequence of Severity",  # the Literal's subscript is a tuple too
        "rank table of Severity", "rank table of EventSeverity", "sequence of RiskLevel",
        "Literal of provider dialects (the proxy's registry owns them)", "a provider dialect named in the core"}
    assert redefinitions("x.py", ast.parse('"""About openai-responses."""\nf = "openai-responses"\n'), core=True) == [
        "x.py:2 a provider dialect named in the core"]  # a docstring may name one; code may not


def test_ranks_and_orders_are_derived_from_the_literals() -> None:
    assert vocab.SEVERITIES == ("low", "medium", "high", "critical")
    assert [vocab.SEVERITY_RANK[s] for s in vocab.SEVERITIES] == list(range(4))
    assert ("info", *vocab.SEVERITIES) == vocab.EVENT_SEVERITIES
    assert vocab.RISK_LEVELS == ("none", "medium", "high", "critical")
    assert set(get_args(vocab.MaybeServerType)) == {*vocab.SERVER_TYPES, ""}
    from agentsh.agent.core.events.ocsf import SEVERITY_ID
    assert SEVERITY_ID == {"info": 1, "low": 2, "medium": 3, "high": 4, "critical": 5}  # OCSF severity_id
