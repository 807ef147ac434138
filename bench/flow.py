"""Cost of the flow engine on the decision path (docs/flow.md "Cost").

One run measures, side by side with a baseline:

* ``check()`` per tool call with a session holding ~10,000 index entries, for
  typical arguments: a short WebFetch URL, a 1 KB and a 16 KB message to an
  external MCP tool, a curl command line (Bash analysis included). Baseline:
  ``orjson.dumps`` of the same arguments (what any layer pays to look at them).
* ``record()`` of a 16 KB response. Baseline: hashing the response once with
  ``hashlib.sha256``.
* the decision pipeline (``DecisionEngine.decide``) for a shim's tools/call with
  small arguments, with the flow step (step 8, the daemon's engine holding the
  session above) next to the same pipeline without it (an offline decider).

* the LLM proxy's data-flow step (docs/flow.md "Proxy-only mode"): per
  request that carries tool results, the parse, extraction and record
  messages (``FlowFeed``; records serialised as for the channel), for a
  small conversation and a Claude-Code-sized one, next to ``orjson.loads``
  of the body; per tool call, the flow check as the proxy makes it
  (``ToolJudge.judge`` → the decision pipeline with the flow step, in
  process) against a session of 10,000 index entries — target ≤ 50 µs p50 —
  next to the same call of a session without origins (fast path: not asked).
  Over the channel a decision adds the round trip to the daemon
  (bench/decision.py).

    .venv/bin/python bench/flow.py
"""

from __future__ import annotations

import hashlib
import random
import string
import time

import orjson

from agentsh.agent.core.flow import FlowEngine

N = 2000
N_BIG = 300


def pct(ts: list[int]) -> tuple[float, float]:
    ts = sorted(ts)
    return ts[len(ts) // 2] / 1000, ts[int(len(ts) * 0.99)] / 1000


def timed(fn, n: int) -> tuple[float, float]:
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t)
    return pct(out)


def words(rnd: random.Random, n: int) -> str:
    return " ".join(
        "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(3, 9))) for _ in range(n)
    )


def main() -> None:
    rnd = random.Random(1)
    e = FlowEngine()
    # a session full of origins: 10,000 index entries (the default budget)
    i = 0
    while e.stats()["index_entries"] < 9_900:
        e.record(
            "s",
            "Read",
            None,
            f"{words(rnd, 40)}\nTOKEN_{i}=tok{rnd.getrandbits(64):x}x{i}\n{words(rnd, 20)}",
            arguments={"file_path": f"/proj/file{i}.txt"},
        )
        i += 1
    st = e.stats()
    print(f"session: {st['origins']} origins, {st['index_entries']} index entries")

    cases = [
        (
            "short (WebFetch url)",
            "WebFetch",
            {"url": "https://docs.example.com/api?q=pagination"},
            N,
        ),
        (
            "1 KB (mcp slack message)",
            "mcp__slack__post_message",
            {"channel": "#x", "text": words(rnd, 170)},
            N,
        ),
        (
            "16 KB (mcp slack message)",
            "mcp__slack__post_message",
            {"channel": "#x", "text": words(rnd, 2700)},
            N_BIG,
        ),
        (
            "Bash curl command",
            "Bash",
            {
                "command": "curl -sS -H 'Accept: application/json' 'https://api.example.com/v1/items?page=2' | jq '.items[]'"
            },
            N,
        ),
    ]
    print(
        f"\n{'check() per call':34} {'p50 µs':>9} {'p99 µs':>9}   {'baseline p50':>12} {'ratio':>7}"
    )
    for name, tool, args, n in cases:
        size = len(orjson.dumps(args))
        base = timed(lambda a=args: orjson.dumps(a), n)
        if tool == "Bash":
            # distinct command lines: the analysis cache must not hide the parse cost
            cmds = [{"command": args["command"].replace("page=2", f"page={k}")} for k in range(n)]
            it = iter(cmds)
            got = timed(lambda it=it: e.check("s", "Bash", None, next(it), can_ask=True), n)
        else:
            got = timed(lambda t=tool, a=args: e.check("s", t, None, a, can_ask=True), n)
        print(
            f"{name + f' [{size} B]':34} {got[0]:9.1f} {got[1]:9.1f}   {base[0]:12.2f} {got[0] / base[0]:6.0f}x"
        )

    big = words(rnd, 2600)[:16384]
    resp = {"content": [{"type": "text", "text": big}]}
    base = timed(lambda: hashlib.sha256(big.encode()).digest(), N_BIG)
    e2 = FlowEngine()
    got = timed(lambda: e2.record("r", "mcp__fs__read_file", None, resp, source="mcp"), N_BIG)
    print(
        f"\n{'record() 16 KB response':34} {'p50 µs':>9} {'p99 µs':>9}   {'sha256 p50':>12} {'ratio':>7}"
    )
    print(f"{'':34} {got[0]:9.1f} {got[1]:9.1f}   {base[0]:12.2f} {got[0] / base[0]:6.0f}x")
    print(
        f"  (session after {N_BIG} records: {e2.stats()['index_entries']} index entries, bounded)"
    )

    from agentsh.agent.core.mcp.decision import DecisionEngine
    from agentsh.agent.core.mcp.registry import ToolRegistry
    from agentsh.agent.core.mcp.types import DecisionRequest
    from agentsh.agent.core.policy.schema import Policy

    reg = ToolRegistry(None)
    reg.register("slack", "stdio", "", [{"name": "post_message", "inputSchema": {"type": "object"}}])
    with_flow = DecisionEngine(reg, Policy(), None, flow=e)
    without = DecisionEngine(reg, Policy(), None)

    def req() -> DecisionRequest:
        return DecisionRequest("post_message", server_id="slack", session_id="s", emit=False,
                               arguments={"channel": "#dev", "text": "build 4711 is green, deploying"})

    base = timed(lambda: without.decide(req()), N)
    got = timed(lambda: with_flow.decide(req()), N)
    print(f"\n{'decide() shim tools/call':34} {'p50 µs':>9} {'p99 µs':>9}   {'no flow p50':>12} {'ratio':>7}")
    print(f"{'  with the flow step':34} {got[0]:9.1f} {got[1]:9.1f}   {base[0]:12.2f} {got[0] / base[0]:6.1f}x")

    proxy(e)


def proxy(e: FlowEngine) -> None:
    """The proxy's side: records per request, checks per tool call."""
    import asyncio

    from agentsh.agent.core.mcp.decision import DecisionEngine as _DE  # noqa: F401 - imported for symmetry
    from agentsh.agent.core.mcp.service import MCPService
    from agentsh.agent.core.policy.schema import Policy
    from agentsh.proxy.decider import LocalDecider, NameGate, ToolJudge
    from agentsh.proxy.flow_feed import FlowFeed

    class Sink:
        async def record(self, msg: dict) -> dict:
            orjson.dumps({**msg, "op": "flow_record", "id": 1})
            return {"recorded": True}

    rnd = random.Random(2)

    def conversation(results: int, result_chars: int, system: int, tools: int, n: int) -> bytes:
        msgs: list[dict] = [{"role": "user", "content": "Fix the failing test."}]
        for k in range(results):
            tid = f"toolu_{n}_{k}" if k == results - 1 else f"toolu_{k}"
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read",
                                                           "input": {"file_path": f"/proj/f{k}.py"}}]})
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                      "content": words(rnd, result_chars // 6)}]})
        body = {"model": "m", "max_tokens": 1024, "system": [{"type": "text", "text": words(rnd, system // 6)}],
                "tools": [{"name": f"t{k}", "description": words(rnd, 60), "input_schema": {"type": "object"}}
                          for k in range(tools)], "messages": msgs}
        return orjson.dumps(body)

    pol = Policy()
    headers = {"x-claude-code-session-id": "bench-session"}

    async def records(label: str, make, n: int) -> None:
        feed = FlowFeed(pol, Sink())
        bodies = [make(i) for i in range(n + 1)]
        base = timed(lambda it=iter(bodies): orjson.loads(next(it)), n)
        out = []
        for b in bodies:
            t = time.perf_counter_ns()
            rf = feed.begin("anthropic", headers, b)
            assert rf is not None and rf.task is not None
            await rf.task
            await rf.settled()
            out.append(time.perf_counter_ns() - t)
        got = pct(out[1:])  # the first request records the whole conversation
        print(f"{label + f' [{len(bodies[0]) // 1024} KB]':34} {got[0]:9.1f} {got[1]:9.1f}   {base[0]:12.2f} {got[0] / base[0]:6.1f}x")

    async def checks() -> None:
        svc = MCPService(Policy.model_validate({"mcp": {"inspection": {"registry": {"persistent": False}}}}),
                         "/nonexistent", lambda ev: True, flow=e)
        judge = ToolJudge(LocalDecider(svc), NameGate(frozenset(), False), lambda ev: None)
        feed = FlowFeed(pol, Sink())
        rf_active = feed.begin("anthropic", {"x-claude-code-session-id": "s"}, b'{"tool_result"}')  # session "s": 10k entries
        assert rf_active is not None and rf_active.task is not None
        await rf_active.task
        fresh = FlowFeed(pol, Sink()).begin("anthropic", {"x-claude-code-session-id": "t"}, b"{}")
        args = {"url": "https://docs.example.com/api?q=pagination", "prompt": "summarise"}

        async def one(rf) -> None:
            await judge.judge(name="WebFetch", call_id="toolu_x", arguments=args, request_id="r", dialect="anthropic", flow=rf)

        for label, rf in (("session without origins (fast path)", fresh), ("session with 10,000 index entries", rf_active)):
            out = []
            for _ in range(N):
                t = time.perf_counter_ns()
                await one(rf)
                out.append(time.perf_counter_ns() - t)
            p50, p99 = pct(out)
            print(f"  {label:38} {p50:9.1f} {p99:9.1f}")

    print(f"\n{'proxy: records per request':34} {'p50 µs':>9} {'p99 µs':>9}   {'loads p50':>12} {'ratio':>7}")
    asyncio.run(records("small conversation (3 results)", lambda i: conversation(3, 1500, 0, 0, i), 500))
    asyncio.run(records("Claude Code-sized (20 results)", lambda i: conversation(20, 4000, 30_000, 40, i), 200))
    print(f"\n{'proxy: flow check per tool call':40} {'p50 µs':>9} {'p99 µs':>9}   (target: <= 50 µs p50 with 10,000)")
    asyncio.run(checks())


if __name__ == "__main__":
    main()
