"""The one JSON-RPC/MCP parser: classification, lenient parsing, id matching
the way the clients match, the top-level scan, MCP helpers."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.agent.core.mcp import jsonrpc as rpc
from agentsh.agent.core.mcp.jsonrpc import Kind, PendingRequests, parse_line
from agentsh.agent.core.mcp.serverid import derive_server_id, is_mcp_server, server_id_for
from agentsh.agent.core.policy.schema import DEFAULT_SERVER_PATTERNS, MCPConfig


def line(obj: object) -> bytes:
    return orjson.dumps(obj) + b"\n"


def test_requests_notifications_responses_errors_are_told_apart() -> None:
    req = parse_line(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert (req.kind, req.method, req.id) == (Kind.REQUEST, "tools/list", 1)
    note = parse_line(line({"jsonrpc": "2.0", "method": rpc.TOOLS_LIST_CHANGED}))
    assert (note.kind, note.method) == (Kind.NOTIFICATION, rpc.TOOLS_LIST_CHANGED)
    resp = parse_line(line({"jsonrpc": "2.0", "id": "a", "result": {}}))
    assert (resp.kind, resp.id) == (Kind.RESPONSE, "a")
    err = parse_line(line({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}))
    assert err.kind is Kind.ERROR and err.is_response


def test_batch_members_are_classified_each() -> None:
    m = parse_line(
        line(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"bogus": True},
            ]
        )
    )
    assert m.kind is Kind.BATCH
    assert [i.kind for i in m.items] == [Kind.REQUEST, Kind.NOTIFICATION, Kind.INVALID]


@pytest.mark.parametrize(
    ("raw", "reason", "code"),
    [
        (b"hello world\n", "not JSON", rpc.PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x"', "not JSON", rpc.PARSE_ERROR),
        (b'{"jsonrpc":"1.0","id":1,"method":"x"}', "wrong 'jsonrpc'", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":true,"method":"x"}', "invalid request id", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":{},"result":1}', "invalid response id", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1}}', "exactly one", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","result":1}', "without id", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"error":"boom"}', "malformed error", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":true}}', "malformed error", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":5}', "not a string", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"x","params":3}', "params", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","result":{}}', "request carries result", rpc.INVALID_REQUEST),
        (b"[]", "empty batch", rpc.INVALID_REQUEST),
        (b'"just a string"', "not a JSON object", rpc.INVALID_REQUEST),
        (b"\xff\xfe{}", "not JSON", rpc.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping",\r"x":1}\n', "bare CR", rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r{"jsonrpc":"2.0","id":2,"method":"ping"}\n',
         "bare CR", rpc.INVALID_REQUEST),
    ],
)
def test_anything_that_is_not_json_rpc_is_invalid_with_a_reason(raw: bytes, reason: str, code: int) -> None:
    m = parse_line(raw)
    assert m.kind is Kind.INVALID
    assert reason in m.reason
    assert m.code == code


def test_blank_lines_are_not_messages() -> None:
    for raw in (b"\n", b"  \t\r\n", b"", b"\r\n"):
        assert parse_line(raw).kind is Kind.BLANK


def test_one_trailing_cr_is_a_line_ending_like_the_ts_sdk_strips_it() -> None:
    m = parse_line(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
    assert (m.kind, m.id) == (Kind.REQUEST, 1)


def test_the_request_id_is_recovered_from_a_line_that_is_not_json() -> None:
    m = parse_line(b'{"jsonrpc":"2.0","id":"r-9","method":"tools/call","params":{"name":"x","arguments":{,}}}\n')
    assert m.kind is Kind.INVALID and m.code == rpc.PARSE_ERROR
    assert m.has_id and m.id == "r-9"
    m = parse_line(b'{"jsonrpc":"2.0","id":true,"method":"x"}')
    assert not m.has_id and m.id is None
    assert rpc.recover_id(b'{"jsonrpc":"2.0","params":{"id":1},"id":42,"method":"tools/call","params":{"na') == (True, 42)
    assert rpc.recover_id(b'{"jsonrpc":"2.0","params":{"id":1,"x":"') == (False, None)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":"\\ud800"}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":"\xff"}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":1e400}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":'
        + b"[" * 5000 + b"]" * 5000 + b"}}}",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":' + b"9" * 5000 + b"}}}",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{"x":NaN}}}',
    ],
)
def test_what_orjson_refuses_but_receivers_accept_is_classified_all_the_same(raw: bytes) -> None:
    m = parse_line(raw + b"\n")
    assert (m.kind, m.method, m.id, m.strict) == (Kind.REQUEST, "tools/call", 1, False)
    assert rpc.tool_call(m)[0] == "rm"


def test_duplicate_keys_mean_the_last_one_like_every_receiver() -> None:
    m = parse_line(b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call",'
                   b'"params":{"name":"ok","name":"rm"},"id":2}')
    assert (m.method, m.id, rpc.tool_call(m)[0]) == ("tools/call", 2, "rm")


@given(st.binary(max_size=200))
@settings(max_examples=300)
def test_parser_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    assert parse_line(raw).kind in set(Kind)


def test_mcp_payloads_are_extracted() -> None:
    init = parse_line(
        line({"jsonrpc": "2.0", "id": 0, "result": {"serverInfo": {"name": "fs", "version": "1.2"}}})
    )
    assert rpc.server_info(init.result) == ("fs", "1.2")
    listed = parse_line(
        line(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {"tools": [{"name": "a"}, {"nope": 1}, "x"], "nextCursor": "c2"},
            }
        )
    )
    assert [t["name"] for t in rpc.tools_of(listed.result)] == ["a"]
    assert rpc.next_cursor(listed.result) == "c2"
    call = parse_line(
        line(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "read", "arguments": {"p": "/x"}},
            }
        )
    )
    assert rpc.tool_call(call) == ("read", {"p": "/x"})
    assert rpc.tool_call(parse_line(line({"jsonrpc": "2.0", "id": 4, "method": "tools/call"}))) == (
        None,
        None,
    )


def test_error_response_keeps_the_request_id_and_names_the_reason() -> None:
    out = orjson.loads(rpc.error_response("req-7", "[agentsh] Tool 'x' blocked by policy: tool denied"))
    assert out == {
        "jsonrpc": "2.0",
        "id": "req-7",
        "error": {"code": -32001, "message": "[agentsh] Tool 'x' blocked by policy: tool denied"},
    }


def test_with_tools_keeps_id_cursor_and_unknown_fields() -> None:
    obj = {"jsonrpc": "2.0", "id": 9, "result": {"tools": [{"name": "a"}, {"name": "b"}],
                                                  "nextCursor": "n", "_meta": {"k": 1}}}
    out = rpc.with_tools(obj, [{"name": "b"}])
    assert out == {"jsonrpc": "2.0", "id": 9, "result": {"tools": [{"name": "b"}],
                                                          "nextCursor": "n", "_meta": {"k": 1}}}
    assert len(obj["result"]["tools"]) == 2  # the original is not mutated


@pytest.mark.parametrize(
    ("request_id", "response_id"),
    [(1, "1"), (1, " 1\n"), (1, "0x1"), (1, "1e0"), (1, "1.0"), (1, 1.0), (1, "+1"), (10, "1_0"),
     (0, ""), (0, "-0"), ("7", 7), (2**53 + 1, 2**53), ("abc", "abc"), (3, "\u0663")],
)
def test_ids_match_the_way_the_ts_and_python_clients_coerce_them(request_id: object, response_id: object) -> None:
    p = PendingRequests()
    entry = p.add(request_id, "tools/list")
    assert p.matches(response_id) == [entry]


@pytest.mark.parametrize(("request_id", "response_id"), [(1, "one"), (1, 2), (1, None), (1, True), ("a", "A"), (1, "0x")])
def test_ids_that_no_client_confuses_do_not_match(request_id: object, response_id: object) -> None:
    p = PendingRequests()
    p.add(request_id, "tools/list")
    assert p.matches(response_id) == []


def test_pending_requests_may_share_an_id_and_are_bounded() -> None:
    p = PendingRequests(max_pending=3)
    a = p.add(7, "tools/list", True)
    b = p.add("7", "tools/call", "rm")
    assert p.matches(7) == [a, b] and p.count("tools/list") == 1
    p.remove(b)
    assert p.matches("7") == [a]
    p.add(8, "ping")
    p.add(9, "ping")
    assert p.add(10, "ping") is None, "full and nothing cancelled: the caller refuses"
    for q in p.matches(8):
        q.cancelled = True
    c = p.add(10, "ping")
    assert c is not None and p.matches(8) == [] and p.dropped == 1
    assert p.count("tools/list") == 1 and len(p) == 3
    evicting = PendingRequests(max_pending=1, evict_live=True)
    evicting.add(1, "sampling/createMessage")
    assert evicting.add(2, "roots/list") is not None and evicting.matches(1) == []


def test_js_number_matches_the_spec_cases() -> None:
    cases = {"": 0.0, " \t\n": 0.0, "12": 12.0, "-1.5e3": -1500.0, ".5": 0.5, "5.": 5.0, "0x1F": 31.0,
             "0b101": 5.0, "0o17": 15.0, "Infinity": float("inf"), "+Infinity": float("inf"),
             "\u00a01\u2028": 1.0, "\ufeff2": 2.0}
    for s, v in cases.items():
        assert rpc.js_number(s) == v, s
    for s in ("1_0", "-0x1", "inf", "NaN", "1e", "0x", "\u0663", "1 2", "\x851"):
        assert rpc.js_number(s) is None, s


# --------------------------------------------------------------------------- top-level scan

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\{}[]:,\n\u00e9\U0001f600 '), max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["jsonrpc", "id", "method", "result", "error", "params", "x", "\u0069d"]),
                          _values), max_size=8),
       st.sampled_from([0, 10, 4096]), st.sampled_from(["", " ", "\t\r\n "]))
def test_the_top_level_scan_agrees_with_the_full_parse(members: list[tuple[str, object]], small: int, ws: str) -> None:
    """Duplicate keys, escaped keys, strings full of quotes and brackets, any
    whitespace: the members the scan finds are exactly the parser's."""
    text = "{" + ws + ("," + ws).join(orjson.dumps(k).decode() + ws + ":" + ws + orjson.dumps(v).decode()
                                       for k, v in members) + ws + "}"
    data = text.encode()
    full = orjson.loads(data)
    scanned = rpc.scan_top(data)
    if scanned is None:  # only when the step budget is exhausted
        assert len(data) > 1000
        return
    assert scanned.keys() == full.keys()
    for k, v in full.items():
        if isinstance(v, dict | list) and len(orjson.dumps(v)) > rpc.SMALL_VALUE:
            assert scanned[k] == type(v)()
        else:
            assert scanned[k] == v
    assert rpc.classify(scanned).kind == rpc.classify(full).kind or isinstance(full.get("error"), dict)


def test_the_top_level_scan_gives_up_instead_of_guessing() -> None:
    assert rpc.scan_top(b'[{"id":1}]') is None
    assert rpc.scan_top(b'{"id":1} x') is None
    assert rpc.scan_top(b'{"id":1,"r":"unterminated}') is None
    assert rpc.scan_top(b'{"a":[' + b'"\\""' * 5000 + b"]}") is None  # over the step budget
    big = orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "x" * 100_000}]}})
    assert rpc.scan_top(big) == {"jsonrpc": "2.0", "id": 3, "result": {}}


# --------------------------------------------------------------------------- server ids


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        (["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/u"], "server-filesystem"),
        (["npx", "@modelcontextprotocol/server-everything@2025.1.1"], "server-everything"),
        (["python", "-m", "mcp_server_sqlite", "--db", "x.db"], "mcp_server_sqlite"),
        (["uvx", "mcp-server-fetch"], "mcp-server-fetch"),
        (["uvx", "mcp-server-git==1.2"], "mcp-server-git"),
        (
            ["node", "tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"],
            "server-everything",
        ),
        (["/opt/tools/my-mcp-server"], "my-mcp-server"),
    ],
)
def test_server_id_is_the_package_or_module_name(cmd: list[str], expected: str) -> None:
    assert derive_server_id(cmd[0], cmd[1:]) == expected


def test_server_id_falls_back_to_a_stable_hash() -> None:
    a = derive_server_id("node", ["server.js"])
    assert a.startswith("mcp-") and len(a) == 12
    assert a == derive_server_id("node", ["server.js"])
    assert a != derive_server_id("node", ["other.js"])


def test_declared_stdio_server_and_explicit_id_take_precedence() -> None:
    mcp = MCPConfig.model_validate(
        {"servers": [{"id": "files", "type": "stdio", "command": "npx",
                      "args": ["@modelcontextprotocol/server-filesystem", "/srv"]}]}
    )
    args = ["@modelcontextprotocol/server-filesystem", "/srv"]
    assert server_id_for("/usr/bin/npx", args, mcp) == "files"
    assert server_id_for("npx", [*args, "/more"], mcp) == "server-filesystem"
    assert server_id_for("npx", args, mcp, explicit="mine") == "mine"


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        (["npx", "-y", "@modelcontextprotocol/server-filesystem", "/p"], True),
        (["uvx", "mcp-server-fetch"], True),
        (["/usr/local/bin/mcp-server-git"], True),
        (["python", "-m", "mcp_server_sqlite"], True),
        (["node", "/opt/acme-mcp-server"], True),
        (["node", "server.js"], False),
        (["bash", "-c", "ls"], False),
    ],
)
def test_default_server_patterns(cmd: list[str], expected: bool) -> None:
    assert is_mcp_server(cmd[0], cmd[1:], DEFAULT_SERVER_PATTERNS) is expected


def test_custom_server_patterns_match_words_and_paths() -> None:
    assert is_mcp_server("node", ["/srv/internal/tools/run.js"], ["/srv/internal/tools"])
    assert is_mcp_server("my-company-mcp-search", [], ["my-company-mcp-*"])
    assert not is_mcp_server("node", ["x.js"], ["my-company-mcp-*"])
