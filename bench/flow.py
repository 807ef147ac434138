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

    .venv/bin/python bench/flow.py
"""

from __future__ import annotations

import hashlib
import random
import string
import time

import orjson

from agentsh.agent.flow import FlowEngine

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

    from agentsh.agent.mcp.decision import DecisionEngine
    from agentsh.agent.mcp.registry import ToolRegistry
    from agentsh.agent.mcp.types import DecisionRequest
    from agentsh.agent.policy.schema import Policy

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


if __name__ == "__main__":
    main()
