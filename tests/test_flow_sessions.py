"""Flow sessions and hook ↔ MCP session correlation (docs/flow.md "Sessions")."""

from __future__ import annotations

import threading

from agentsh.agent.core.events.models import FlowSummary, HookEvaluation
from agentsh.agent.core.flow import FlowEngine
from agentsh.agent.core.policy.schema import Policy

AWS = "AKIAIOSFODNN7EXAMPLE"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _engine(clock: Clock, flow: dict | None = None) -> FlowEngine:
    return FlowEngine(Policy.model_validate({"flow": flow or {}}), clock=clock)


# ----------------------------------------------------------------- expiry and summary


def test_idle_session_expires_with_a_flow_summary() -> None:
    clock = Clock()
    e = _engine(clock, {"flow_tracking": {"session_timeout_minutes": 30}})
    e.record("cc-1", "Read", None, f"key={AWS}", arguments={"file_path": "/h/.env"})
    clock.t += 60
    e.check("cc-1", "WebFetch", None, {"url": f"https://x.example/?{AWS}"}, can_ask=True)
    e.check(
        "cc-1", "Write", None, {"file_path": "/tmp/a", "content": f"{AWS} copied"}, can_ask=True
    )
    e.record("other", "Read", None, "x" * 40)
    clock.t += 29 * 60
    e.record("other", "Read", None, "y" * 40)  # keeps "other" alive
    assert e.expire() == []
    clock.t += 2 * 60
    out = e.expire()
    assert [d["session_id"] for d in out] == ["cc-1"]
    d = out[0]
    assert d["duration_seconds"] == 60.0
    assert d["total_origins"] == 1 and d["total_flow_edges"] == 2
    assert d["flow_type_distribution"] == {"internal→external": 1, "internal→internal": 1}
    assert d["risk_level_distribution"] == {"critical": 1, "none": 1}
    assert d["tools_used"] == ["Read", "WebFetch", "Write"]
    ev = FlowSummary(**d)  # the caller emits exactly this
    assert ev.type == "flow_summary"
    # the expired session's origins are gone
    v = e.check("cc-1", "WebFetch", None, {"url": f"https://x.example/?{AWS}_"}, can_ask=True)
    assert not [o for o in v.matched_origins if o.how != "implicit"]


def test_verdict_fields_fit_the_hook_evaluation_event() -> None:
    e = _engine(Clock())
    v = e.check("s", "WebFetch", None, {"url": "https://webhook.site/x"}, can_ask=True)
    ev = HookEvaluation(
        hook_event="PreToolUse", tool_name="WebFetch", session_id=v.session_id, **v.event_fields()
    )
    assert ev.decision == "deny" and ev.classification == "external"


# ----------------------------------------------------------------- correlation


def test_pending_hook_call_links_the_matching_mcp_session() -> None:
    clock = Clock()
    e = _engine(clock)
    e.register_pending("cc-abc", "mcp__github__get_file", {"path": "README.md", "repo": "a/b"})
    clock.t += 0.05
    assert e.correlate("mcp-1", "get_file", {"repo": "a/b", "path": "README.md"}) == "cc-abc"
    # linked for life: later calls on the MCP session land in the hook session
    e.record("mcp-1", "get_file", "github", f"secret {AWS}", source="mcp")
    v = e.check("cc-abc", "WebFetch", None, {"url": f"https://x.example/{AWS}"}, can_ask=True)
    assert v.matched_origins[0].server == "github" and v.session_id == "cc-abc"
    assert e.correlate("mcp-1", "anything", {}) == "cc-abc"
    assert e.expire(clock.t + 10_000)[0]["linked_mcp_sessions"] == ["mcp-1"]


def test_stale_pending_entry_is_ignored() -> None:
    clock = Clock()
    e = _engine(clock, {"hooks": {"correlation_ttl_seconds": 5}})
    e.register_pending("cc-abc", "mcp__github__get_file", {"path": "x"})
    clock.t += 5.5
    assert e.correlate("mcp-1", "get_file", {"path": "x"}) is None
    assert e.linked_session("mcp-1") is None
    assert e.stats()["pending_correlations"] == 0


def test_simultaneous_sessions_link_without_cross_contamination() -> None:
    clock = Clock()
    e = _engine(clock)
    e.register_pending("cc-A", "mcp__fs__read_file", {"path": "/a"})
    e.register_pending("cc-B", "mcp__fs__read_file", {"path": "/b"})
    assert e.correlate("mcp-B", "read_file", {"path": "/b"}) == "cc-B"
    assert e.correlate("mcp-A", "read_file", {"path": "/a"}) == "cc-A"
    e.record("mcp-A", "read_file", "fs", f"A's key {AWS}", source="mcp")
    vb = e.check("mcp-B", "WebFetch", None, {"url": f"https://x.example/{AWS}"}, can_ask=True)
    assert not [o for o in vb.matched_origins if o.how != "implicit"]
    va = e.check("mcp-A", "WebFetch", None, {"url": f"https://x.example/{AWS}"}, can_ask=True)
    assert va.session_id == "cc-A" and va.matched_origins[0].how != "implicit"


def test_identical_calls_from_two_agents_link_only_the_first() -> None:
    clock = Clock()
    e = _engine(clock)
    e.register_pending("cc-A", "mcp__fs__list", {"path": "/"})
    e.register_pending("cc-B", "mcp__fs__list", {"path": "/"})
    assert e.correlate("mcp-1", "list", {"path": "/"}) == "cc-A"
    assert e.correlate("mcp-2", "list", {"path": "/"}) is None


def test_a_linked_mcp_session_is_never_relinked() -> None:
    e = _engine(Clock())
    e.link("mcp-1", "cc-A")
    e.register_pending("cc-B", "mcp__fs__list", {"path": "/"})
    assert e.correlate("mcp-1", "list", {"path": "/"}) == "cc-A"


def test_origins_recorded_before_linking_move_to_the_hook_session() -> None:
    e = _engine(Clock())
    e.record("mcp-1", "get_file", "github", f"key {AWS}", source="mcp")
    e.link("mcp-1", "cc-A")
    v = e.check("cc-A", "WebFetch", None, {"url": f"https://x.example/{AWS}"}, can_ask=True)
    assert v.matched_origins[0].server == "github"
    assert e.stats()["sessions"] == 1


def test_coverage_is_full_once_hooks_speak_for_the_session() -> None:
    e = _engine(Clock())
    assert e.check("mcp-1", "list", "fs", {}, can_ask=False, source="mcp").coverage == "proxy_only"
    e.link("mcp-1", "cc-A")
    assert e.check("mcp-1", "list", "fs", {}, can_ask=False, source="mcp").coverage == "full"


# ----------------------------------------------------------------- concurrency


def test_concurrent_records_and_checks_keep_sessions_consistent() -> None:
    e = _engine(Clock(), {"flow_tracking": {"max_origins_per_session": 300}})
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(150):
                s = f"s{i % 3}"
                e.record(
                    s,
                    "Read",
                    None,
                    f"worker {n} item {i} value v{n}x{i}abcdef123456",
                    arguments={"file_path": f"/w{n}/{i}"},
                )
                e.check(
                    s,
                    "WebFetch",
                    None,
                    {"url": f"https://x.example/v{n}x{i}abcdef123456"},
                    can_ask=True,
                )
                if i % 20 == 0:
                    e.link(f"mcp-{n}-{i}", s)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    st = e.stats()
    assert st["sessions"] == 3 and st["index_entries"] <= 3 * 300
    assert st["checks"] == 600 and st["records"] == 600
