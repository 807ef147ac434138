"""The one JSON-RPC/MCP parser: classification, correlation, MCP helpers."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.agent.mcp import jsonrpc as rpc
from agentsh.agent.mcp.jsonrpc import Correlator, Kind, parse_line
from agentsh.agent.mcp.serverid import derive_server_id, is_mcp_server, server_id_for
from agentsh.agent.policy.schema import DEFAULT_SERVER_PATTERNS, MCPConfig


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
    ("raw", "reason"),
    [
        (b"hello world\n", "not JSON"),
        (b"\n", "empty line"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x"', "not JSON"),
        (b'{"jsonrpc":"1.0","id":1,"method":"x"}', "wrong 'jsonrpc'"),
        (b'{"jsonrpc":"2.0","id":true,"method":"x"}', "invalid request id"),
        (b'{"jsonrpc":"2.0","id":{},"result":1}', "invalid response id"),
        (b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1}}', "exactly one"),
        (b'{"jsonrpc":"2.0","result":1}', "without id"),
        (b'{"jsonrpc":"2.0","id":1,"error":"boom"}', "malformed error"),
        (b'{"jsonrpc":"2.0","method":5}', "not a string"),
        (b'{"jsonrpc":"2.0","method":"x","params":3}', "params"),
        (b"[]", "empty batch"),
        (b'"just a string"', "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
    ],
)
def test_anything_that_is_not_json_rpc_is_invalid_with_a_reason(raw: bytes, reason: str) -> None:
    m = parse_line(raw)
    assert m.kind is Kind.INVALID
    assert reason in m.reason


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


def test_correlator_keeps_string_and_number_ids_apart_and_is_bounded() -> None:
    c = Correlator(max_pending=3)
    c.note(1, "tools/list")
    c.note("1", "tools/call")
    assert c.resolve("1") == ("tools/call", None)
    assert c.resolve(1) == ("tools/list", None)
    assert c.resolve(1) is None
    for i in range(5):
        c.note(i, "ping")
    assert len(c) == 3 and c.dropped == 2
    assert c.resolve(0) is None and c.resolve(4) == ("ping", None)


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
