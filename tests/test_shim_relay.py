"""The shim's relay: JSON-RPC traffic goes through byte for byte, whatever the
chunking; what the inspector cannot parse and decide is refused, never forwarded.

In-process (hypothesis, many examples): the real pump functions and the real
MCP inspector over OS pipes. Out-of-process: the real ``agentsh-shim`` with
``cat`` or small scripts as the "server" (a 10 MB line, exit codes, signal
forwarding, stderr pass-through, stdout kinds).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsh.agent.core.mcp import jsonrpc as rpc
from agentsh.shim.inspector import MAX_PENDING_LISTS, SCAN_MIN, MessageInspector
from agentsh.shim.relay import Output, RelayStats, pump_client, pump_server

SHIM = str(Path(sys.executable).parent / "agentsh-shim")


class AllowAll:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lists: list[list[str]] = []
        self.results: list[tuple[str, Any, Any]] = []

    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        self.calls.append(name)
        return True, ""

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        self.lists.append([t["name"] for t in tools])
        return set()

    def server_info(self, name: str | None, version: str | None) -> None:
        pass

    def tools_changed(self) -> None:
        pass

    def tool_result(self, name: str, call_id: Any, result: Any) -> None:
        self.results.append((name, call_id, result))


class DenyNamed(AllowAll):
    def __init__(self, deny: str) -> None:
        super().__init__()
        self.deny = deny

    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        self.calls.append(name)
        return (name != self.deny), "tool denied"

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        super().review_tools(tools, complete)
        return {self.deny}


def _drain(fd: int, sink: bytearray) -> threading.Thread:
    def run() -> None:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            sink.extend(b)
        os.close(fd)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _feed(fd: int, chunks: list[bytes]) -> threading.Thread:
    def run() -> None:
        for c in chunks:
            os.write(fd, c)
        os.close(fd)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def relay_in_process(
    client_chunks: list[bytes],
    server_chunks: list[bytes],
    gate: Any = None,
    max_line: int = 64 * 1024 * 1024,
) -> tuple[bytes, bytes, MessageInspector]:
    """Client chunks go through pump_client first (so their requests are pending),
    then server chunks through pump_server; returns (to server, to client, inspector)."""
    insp = MessageInspector(gate or AllowAll())
    stats = RelayStats()
    c_in_r, c_in_w = os.pipe()  # client -> shim
    s_in_r, s_in_w = os.pipe()  # shim -> server
    s_out_r, s_out_w = os.pipe()  # server -> shim
    c_out_r, c_out_w = os.pipe()  # shim -> client
    out = Output(c_out_w)
    to_server, to_client = bytearray(), bytearray()
    readers = [_drain(s_in_r, to_server), _drain(c_out_r, to_client)]
    tc = threading.Thread(target=pump_client,
                          args=(c_in_r, s_in_w, out, insp, stats, lambda: os.close(s_in_w), max_line))
    ts = threading.Thread(target=pump_server, args=(s_out_r, out, insp, stats, max_line), daemon=True)
    tc.start()
    ts.start()
    _feed(c_in_w, client_chunks).join(30)
    tc.join(30)
    _feed(s_out_w, server_chunks).join(30)
    ts.join(30)
    os.close(c_out_w)
    for t in readers:
        t.join(30)
    os.close(c_in_r)
    os.close(s_out_r)
    return bytes(to_server), bytes(to_client), insp


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def lines_of(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


# --------------------------------------------------------------------------- byte-exact relay

_ids = st.integers(0, 10**6)
_methods = st.sampled_from(["tools/list", "tools/call", "ping", "initialize", "resources/read"])
_text = st.text(max_size=30)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[bytes], list[bytes]]:
    """Valid client requests/notifications and the server's answers to them
    (plus server requests and notifications), each line in any JSON layout."""
    client: list[bytes] = []
    server: list[bytes] = []
    ids = draw(st.lists(_ids, unique=True, max_size=12))
    for rid in ids:
        method = draw(_methods)
        params: dict[str, Any] = {"name": draw(_text), "arguments": {"a": draw(_text)}} if method == "tools/call" else {}
        client.append(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        if method == "tools/list":
            result: Any = {"tools": [{"name": n} for n in draw(st.lists(_text.filter(bool), unique=True, max_size=3))]}
        else:
            result = {"content": [{"type": "text", "text": draw(_text)}]}
        if draw(st.booleans()):
            server.append(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}))
        else:
            server.append(orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -1, "message": draw(_text)}}))
    client += [orjson.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"t": draw(_text)}})
               for _ in range(draw(st.integers(0, 3)))]
    server += [orjson.dumps({"jsonrpc": "2.0", "id": f"s{i}", "method": "sampling/createMessage", "params": {}})
               for i in range(draw(st.integers(0, 3)))]
    server = draw(st.permutations(server))
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    pad = draw(st.sampled_from([b"", b" ", b"\t "]))
    return [pad + x + ending for x in client], [pad + x + ending for x in server]


@given(
    conv=conversations(),
    cuts_c=st.lists(st.integers(0, 1 << 16), max_size=12),
    cuts_s=st.lists(st.integers(0, 1 << 16), max_size=12),
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_json_rpc_traffic_is_relayed_byte_exact_however_it_is_chunked(
    conv: tuple[list[bytes], list[bytes]], cuts_c: list[int], cuts_s: list[int]
) -> None:
    client, server = conv
    c_data, s_data = b"".join(client), b"".join(server)
    to_server, to_client, insp = relay_in_process(_split(c_data, cuts_c), _split(s_data, cuts_s))
    assert to_server == c_data
    assert to_client == s_data
    assert insp.stats.invalid == {"client": 0, "server": 0}


def test_what_is_not_json_rpc_is_refused_with_an_error_and_counted() -> None:
    client = [b"not json\n", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b'{"jsonrpc":"2.0","id":"b",broken\n',
              b'{"jsonrpc":"1.0","id":3,"method":"ping"}\n', b"  \n"]
    server = [b"banner from a chatty server\n", b'{"jsonrpc":"2.0","id":1,"result":{}}\n',
              b'{"jsonrpc":"2.0","id":77,"result":{}}\n']
    to_server, to_client, insp = relay_in_process(client, server)
    assert to_server == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    replies = lines_of(to_client)
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (None, -32700), ("b", -32700), (3, -32600), (1, None)]
    assert "[agentsh] refused: " in replies[0]["error"]["message"]
    assert insp.stats.invalid == {"client": 3, "server": 2}, "banner and the unsolicited response 77"
    assert insp.stats.invalid_reasons["response to no pending request"] == 1


def test_a_server_response_nobody_asked_for_is_dropped_even_when_sent_ahead() -> None:
    """A hostile server may answer a tools/list id the client has not sent yet;
    if it got through unfiltered, the client would take it when it does."""
    early = orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "rm"}]}}) + b"\n"
    _, to_client, _insp = relay_in_process([b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'],
                                          [early, b'{"jsonrpc":"2.0","id":1,"result":{}}\n'])
    assert to_client == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_big_server_lines_are_decided_from_their_top_level_across_reads() -> None:
    good = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"blob": "y" * 300_000}}) + b"\n"
    bad = b"x" * 300_000 + b"\n"
    truncated = good[:-10] + b"\n"
    unsolicited = orjson.dumps({"jsonrpc": "2.0", "id": 9, "result": {"blob": "z" * 300_000}}) + b"\n"
    data = good + bad + truncated + unsolicited
    chunks = [data[i : i + 70_000] for i in range(0, len(data), 70_000)]
    _, to_client, insp = relay_in_process([b'{"jsonrpc":"2.0","id":1,"method":"resources/read"}\n'], chunks)
    assert to_client == good
    assert insp.stats.scanned == 1
    assert insp.stats.invalid["server"] == 3


def test_tool_results_are_parsed_and_handed_to_the_gate_before_the_client_gets_them() -> None:
    gate = AllowAll()
    big = orjson.dumps({"jsonrpc": "2.0", "id": "c1", "result": {
        "content": [{"type": "text", "text": "r" * (SCAN_MIN * 3)}]}}) + b"\n"
    small = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\\ud800"}]}}\n'
    calls = [orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n}}) + b"\n"
             for i, n in (("c1", "read"), (2, "grep"))]
    _, to_client, insp = relay_in_process(calls, [big[:100_000], big[100_000:], small], gate)
    assert to_client == big + small
    assert [(n, i) for n, i, _ in gate.results] == [("read", "c1"), ("grep", 2)]
    assert gate.results[0][2]["content"][0]["text"] == "r" * (SCAN_MIN * 3)
    assert gate.results[1][2] == {"content": [{"type": "text", "text": "\ufffd"}]}
    assert insp.stats.tool_results == 2 and insp.stats.scanned == 0


def test_an_unparseable_response_is_replaced_by_an_error_for_its_request() -> None:
    call = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read"}}\n'
    broken = b'{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"abc"}]}\n'
    _, to_client, _insp = relay_in_process([call], [broken])
    (err,) = lines_of(to_client)
    assert err["id"] == 5 and err["error"]["code"] == rpc.INTERNAL_ERROR
    assert "the server's response (not JSON" in err["error"]["message"]


# --------------------------------------------------------------------------- sizes

def test_an_oversized_client_line_is_refused_with_the_id_read_from_its_head() -> None:
    big = b'{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"rm","arguments":{"x":"' \
        + b"A" * 200_000 + b'"}}}\n'
    after = b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    gate = AllowAll()
    to_server, to_client, insp = relay_in_process([big[:5000], big[5000:150_000], big[150_000:] + after], [],
                                                  gate, max_line=100_000)
    assert to_server == after
    (err,) = lines_of(to_client)
    assert err["id"] == "big-1" and err["error"]["code"] == rpc.INVALID_REQUEST
    assert "over the size limit" in err["error"]["message"]
    assert gate.calls == [] and insp.stats.oversized["client"] == 1


def test_an_oversized_server_line_is_dropped_and_its_request_gets_an_error() -> None:
    call = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read"}}\n'
    big = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"' + b"B" * 300_000 + b'"}]}}\n'
    nxt = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n'
    _, to_client, insp = relay_in_process([call], [big[:1000], big[1000:] + nxt], max_line=100_000)
    err, note = lines_of(to_client)
    assert err["id"] == 3 and "over the size limit" in err["error"]["message"]
    assert note["method"] == "notifications/progress"
    assert insp.stats.oversized["server"] == 1


# --------------------------------------------------------------------------- tools/list and ids

LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'


def list_response(rid: Any, tools: list[dict[str, Any]], extra: bytes = b"") -> bytes:
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    return body[:-2] + extra + b"}}\n" if extra else body + b"\n"


@pytest.mark.parametrize("rid", [1, "1", "0x1", " 1", "1e0", 1.0, "+1"])
def test_a_list_response_whose_id_a_client_coerces_to_the_request_is_filtered(rid: Any) -> None:
    resp = list_response(rid, [{"name": "ls"}, {"name": "rm"}])
    _, to_client, _ = relay_in_process([LIST], [resp], DenyNamed("rm"))
    (got,) = lines_of(to_client)
    assert [t["name"] for t in got["result"]["tools"]] == ["ls"] and got["id"] == rid


@pytest.mark.parametrize("extra", [
    b',"_meta":{"x":"\\ud800"}', b',"_meta":{"x":1e400}', b',"_meta":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b',"_meta":{"x":"\xff\xfe"}', b',"_meta":{"x":NaN}'])
def test_a_list_response_only_the_lenient_parser_reads_is_filtered_all_the_same(extra: bytes) -> None:
    gate = DenyNamed("rm")
    resp = list_response(1, [{"name": "ls"}, {"name": "rm"}], extra)
    _, to_client, insp = relay_in_process([LIST], [resp], gate)
    (got,) = lines_of(to_client)
    assert [t["name"] for t in got["result"]["tools"]] == ["ls"] and got["id"] == 1
    assert gate.lists == [["ls", "rm"]] and insp.stats.lenient["server"] == 1


def test_colliding_ids_a_blocked_call_does_not_unhold_the_list() -> None:
    gate = DenyNamed("rm")
    client = [LIST.replace(b":1,", b":7,"),
              b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm"}}\n']
    resp = list_response(7, [{"name": "ls"}, {"name": "rm"}])
    to_server, to_client, _ = relay_in_process(client, [resp], gate)
    assert to_server == client[0]
    blocked, listed = lines_of(to_client)
    assert blocked["id"] == 7 and "blocked by policy" in blocked["error"]["message"]
    assert [t["name"] for t in listed["result"]["tools"]] == ["ls"]


def test_colliding_ids_a_call_result_does_not_unhold_the_list() -> None:
    gate = DenyNamed("rm")
    client = [LIST.replace(b":1,", b":7,"),
              b'{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"ls"}}\n']
    call_result = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n'
    resp = list_response(7, [{"name": "ls"}, {"name": "rm"}])
    _, to_client, _ = relay_in_process(client, [call_result, resp], gate)
    result, listed = lines_of(to_client)
    assert result == orjson.loads(call_result)
    assert [t["name"] for t in listed["result"]["tools"]] == ["ls"]
    assert [n for n, _, _ in gate.results] == ["ls"]


def test_tools_the_detector_cannot_fully_see_are_hidden_and_their_calls_refused() -> None:
    gate = AllowAll()
    deep = {"name": "deep", "inputSchema": {"x": orjson.loads(b"[" * 200 + b"]" * 200)}}
    wide = {"name": "wide", "inputSchema": {"enum": [str(i) for i in range(5000)]}}
    odd = {"name": "od\ud800d"}
    tools = [{"name": "ls"}, deep, wide, {"name": "ls", "description": "second ls, never reviewed"}]
    resp = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})[:-3] + \
        b',{"name":"od\\ud800d"}]}}\n'
    assert odd
    calls = [orjson.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": n}}) + b"\n"
             for i, n in enumerate(["deep", "wide", "od\ufffdd"])]
    insp = MessageInspector(gate)
    _to_server, to_client, _ = relay_in_process([LIST], [resp], gate)
    (got,) = lines_of(to_client)
    assert got["result"]["tools"] == [{"name": "ls"}]
    assert gate.lists == [["ls"]]
    # the same inspector refuses calls to what it did not show
    insp.client_line(LIST)
    assert insp.server_line(resp) is not None
    for c in calls:
        v = insp.client_line(c)
        assert v is not None and v.to_server is None and v.to_client is not None
        assert "blocked by policy" in orjson.loads(v.to_client)["error"]["message"]
    assert gate.calls == []


def test_a_malformed_list_result_is_refused_not_registered() -> None:
    gate = AllowAll()
    _, to_client, _ = relay_in_process([LIST], [b'{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"x"}}}\n'], gate)
    (err,) = lines_of(to_client)
    assert err["id"] == 1 and "malformed" in err["error"]["message"]
    assert gate.lists == []


def test_too_many_pending_list_requests_are_refused_not_forgotten() -> None:
    insp = MessageInspector(AllowAll())
    for i in range(MAX_PENDING_LISTS):
        assert insp.client_line(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"})) is None
    v = insp.client_line(orjson.dumps({"jsonrpc": "2.0", "id": "more", "method": "tools/list"}))
    assert v is not None and v.to_server is None
    assert orjson.loads(v.to_client or b"")["id"] == "more"
    # a cancelled request no longer counts
    insp.client_line(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 0}}))
    assert insp.client_line(orjson.dumps({"jsonrpc": "2.0", "id": "more", "method": "tools/list"})) is None
    # ...but its late answer is still filtered like any list response
    assert insp.to_server.matches(0)[0].cancelled


def test_blocked_call_in_a_batch_is_removed_and_answered_with_an_error() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    batch = orjson.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ls", "arguments": {}}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "rm"}},
        {"jsonrpc": "2.0", "id": 4, "method": 5},
    ]) + b"\n"
    v = insp.client_line(batch)
    assert v is not None and v.to_server is not None and v.to_client is not None
    assert [m["id"] for m in orjson.loads(v.to_server)] == [2]
    errors = orjson.loads(v.to_client)
    assert errors[0] == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32001, "message": "[agentsh] Tool 'rm' blocked by policy: tool denied"}}
    assert errors[1]["id"] == 4 and errors[1]["error"]["code"] == rpc.INVALID_REQUEST
    assert insp.stats.blocks == 2 and insp.stats.calls == 3


def test_blocked_notification_call_is_dropped_silently() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    v = insp.client_line(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rm"}}\n')
    assert v is not None and v.to_server is None and v.to_client is None


@pytest.mark.parametrize("params", [b'["rm", {}]', b'{"arguments":{}}', b'{"name":5}', b"null"])
def test_a_tools_call_without_a_tool_name_is_refused(params: bytes) -> None:
    gate = AllowAll()
    insp = MessageInspector(gate)
    v = insp.client_line(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}\n")
    assert v is not None and v.to_server is None
    assert orjson.loads(v.to_client or b"")["error"]["code"] in (rpc.INVALID_PARAMS, rpc.INVALID_REQUEST)
    assert gate.calls == []


def test_hidden_tool_is_removed_from_a_list_response_keeping_the_id_and_cursor() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    insp.client_line(b'{"jsonrpc":"2.0","id":"L1","method":"tools/list","params":{}}\n')
    resp = orjson.dumps({"jsonrpc": "2.0", "id": "L1", "result": {
        "tools": [{"name": "ls"}, {"name": "rm"}], "nextCursor": "p2"}}) + b"\n"
    out = insp.server_line(resp)
    assert out is not None and out.endswith(b"\n")
    assert orjson.loads(out) == {"jsonrpc": "2.0", "id": "L1",
                                 "result": {"tools": [{"name": "ls"}], "nextCursor": "p2"}}
    # the same line again answers nothing: dropped
    assert insp.server_line(resp) == b""


# --------------------------------------------------------------------------- line boundaries

def _live_relay(insp: MessageInspector) -> tuple[int, int, int, Callable[..., bytes], RelayStats]:
    """Pumps running on pipes; returns (client write fd, server write fd, client read fd, closer, stats)."""
    stats = RelayStats()
    c_in_r, c_in_w = os.pipe()
    s_in_r, s_in_w = os.pipe()
    s_out_r, s_out_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    out = Output(c_out_w)
    sink = bytearray()
    _drain(s_in_r, sink)
    tc = threading.Thread(target=pump_client, args=(c_in_r, s_in_w, out, insp, stats, lambda: None), daemon=True)
    ts = threading.Thread(target=pump_server, args=(s_out_r, out, insp, stats), daemon=True)
    tc.start()
    ts.start()

    def close(read: bool = True) -> bytes:
        """Stop both pumps; the rest of the client's output (unless someone else reads it)."""
        os.close(s_out_w)
        os.close(c_in_w)
        ts.join(30)
        tc.join(30)
        os.close(c_out_w)
        rest = b""
        while read and (chunk := os.read(c_out_r, 1 << 16)):
            rest += chunk
        for fd in (c_in_r, s_in_w, s_out_r) + ((c_out_r,) if read else ()):
            os.close(fd)
        return rest

    return c_in_w, s_out_w, c_out_r, close, stats


def _read_line(fd: int, timeout: float = 10.0) -> bytes:
    import select

    got = b""
    deadline = time.monotonic() + timeout
    while not got.endswith(b"\n"):
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            raise AssertionError(f"no complete line within {timeout}s (got {got[:200]!r})")
        got += os.read(fd, 1)
    return got


def test_a_server_that_never_ends_its_line_cannot_hold_back_the_blocked_call_error() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    c_w, s_w, c_r, close, _ = _live_relay(insp)
    first, rest = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"', b'abc"}}\n'
    os.write(s_w, first)
    os.write(c_w, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}}\n')
    error = _read_line(c_r)
    assert orjson.loads(error)["id"] == 1 and "rm" in orjson.loads(error)["error"]["message"]
    os.write(s_w, rest)
    assert _read_line(c_r) == first + rest
    assert close() == b""


def test_a_list_response_after_a_dangling_partial_line_is_still_filtered() -> None:
    """The old relay streamed a chunk straight through while the line in front
    of it was unfinished, list response included."""
    insp = MessageInspector(DenyNamed("rm"))
    c_w, s_w, c_r, close, stats = _live_relay(insp)
    opening = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"'
    os.write(s_w, opening)
    os.write(c_w, LIST)
    deadline = time.monotonic() + 10
    while stats.client_lines < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.write(s_w, b'x"}}\n' + list_response(1, [{"name": "ls"}, {"name": "rm"}]) + opening)
    assert _read_line(c_r) == opening + b'x"}}\n'
    listed = orjson.loads(_read_line(c_r))
    assert [t["name"] for t in listed["result"]["tools"]] == ["ls"]
    assert close() == b"", "the unfinished last line is decided at the end like any other: not JSON"
    assert insp.stats.invalid["server"] == 1


# --------------------------------------------------------------------------- the real shim


@pytest.fixture
def shim_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AGENTSH_SOCKET": str(tmp_path / "no-daemon.sock"),
        "AGENTSH_STATE_DIR": str(tmp_path / "state"),
        "AGENTSH_CONFIG_DIR": str(tmp_path / "etc"),
    }


def _request(rid: int, size: int = 0) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "x/echo", "params": {"blob": "x" * size}}) + b"\n"


def test_real_shim_relays_a_10mb_line_byte_for_byte_and_refuses_junk(shim_env: dict[str, str]) -> None:
    """``cat`` echoes the client's requests: server -> client they are requests too."""
    big = _request(1, 10 * 1024 * 1024)
    data = b"plain text, not JSON\n" + big + b"\x00\xff\xfe binary junk\n" + _request(2) + b"\n\n" + _request(3)[:-1]
    r = subprocess.run([SHIM, "--", "cat"], input=data, capture_output=True, env=shim_env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split(b"\n")
    errors = [orjson.loads(x) for x in lines if b'"error"' in x[:200]]
    assert b"\n".join(x for x in lines if b'"error"' not in x[:200]) == big + _request(2) + _request(3)[:-1]
    assert [e["error"]["code"] for e in errors] == [-32700, -32700]


def test_exit_code_and_signal_death_are_passed_on(shim_env: dict[str, str]) -> None:
    r = subprocess.run([SHIM, "--", "sh", "-c", "exit 7"], capture_output=True, env=shim_env, timeout=30)
    assert r.returncode == 7
    r = subprocess.run(
        [SHIM, "--", "sh", "-c", "kill -KILL $$"], capture_output=True, env=shim_env, timeout=30
    )
    assert r.returncode == 128 + signal.SIGKILL
    r = subprocess.run(
        [SHIM, "--", "/nonexistent/server"], capture_output=True, env=shim_env, timeout=30
    )
    assert r.returncode == 127 and b"not found" in r.stderr


NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n'


def test_stderr_passes_through_untouched(shim_env: dict[str, str]) -> None:
    note = (NOTE % b"to stdout").decode()
    r = subprocess.run(
        [SHIM, "--", "sh", "-c", f"printf 'to stderr\\n' >&2; printf '%s' '{note}'"],
        capture_output=True, env=shim_env, timeout=30,
    )
    assert r.stdout == note.encode()
    assert b"to stderr\n" in r.stderr


SIGNAL_SERVER = """
import os, signal, sys, time
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\\n'
def h(sig, frame):
    os.write(1, NOTE % f"got {sig}".encode())
    if sig == signal.SIGTERM:
        sys.exit(3)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(s, h)
os.write(1, NOTE % b"ready")
while True:
    time.sleep(0.05)
"""


def test_signals_are_forwarded_to_the_server(shim_env: dict[str, str]) -> None:
    p = subprocess.Popen(
        [SHIM, "--", sys.executable, "-c", SIGNAL_SERVER],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=shim_env,
    )
    assert p.stdout is not None
    assert p.stdout.readline() == NOTE % b"ready"
    time.sleep(0.3)  # the shim installs its handlers before it starts relaying; be generous
    p.send_signal(signal.SIGHUP)
    assert p.stdout.readline() == NOTE % b"got 1"
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline() == NOTE % b"got 10"
    p.send_signal(signal.SIGTERM)
    assert p.stdout.readline() == NOTE % b"got 15"
    assert p.wait(30) == 3


# --------------------------------------------------------------------------- stdout kinds
# The server -> client direction splices when stdout is a pipe or a socket and
# falls back to read+write otherwise; both must stay byte-exact.

BIG_MIXED = _request(1, 3 * 1024 * 1024) + _request(2) + _request(3, 100_000) + _request(4)[:-1]


def test_real_shim_relays_byte_exact_to_a_regular_file(shim_env: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with target.open("wb") as f:
        r = subprocess.run([SHIM, "--", "cat"], input=BIG_MIXED, stdout=f, env=shim_env, timeout=60)
    assert r.returncode == 0
    assert target.read_bytes() == BIG_MIXED


def test_real_shim_relays_to_a_slow_non_blocking_socket(shim_env: dict[str, str]) -> None:
    """Node clients (libuv) give children socketpairs; the shim's end may be non-blocking."""
    import socket

    ours, theirs = socket.socketpair()
    theirs.setblocking(False)  # the description the shim inherits is O_NONBLOCK
    p = subprocess.Popen([SHIM, "--", "cat"], stdin=subprocess.PIPE, stdout=theirs.fileno(), env=shim_env)
    theirs.close()
    got = bytearray()

    def slow_reader() -> None:
        time.sleep(0.5)  # let the socket buffer fill: the shim must wait, not fail
        while chunk := ours.recv(1 << 20):
            got.extend(chunk)

    t = threading.Thread(target=slow_reader, daemon=True)
    t.start()
    assert p.stdin is not None
    p.stdin.write(BIG_MIXED)
    p.stdin.close()
    assert p.wait(60) == 0
    t.join(30)
    ours.close()
    assert bytes(got) == BIG_MIXED


def test_an_injected_error_never_lands_between_the_pieces_of_a_held_line() -> None:
    """A line that spans reads goes out in two pieces (the start from the hold
    pipe, then the rest); an error the client pump injects in between would
    corrupt both. Here the injection is attempted exactly after the first piece."""
    insp = MessageInspector(DenyNamed("rm"))
    injected = threading.Event()

    class Probe(Output):
        calls = 0

        def splice_from(self, src: int, n: int, discard: Callable[[int, int], None]) -> bool:
            ok = super().splice_from(src, n, discard)
            Probe.calls += 1
            if Probe.calls == 1:
                err = rpc.error_response(1, "injected")
                threading.Thread(target=lambda: (self.inject(err), injected.set()), daemon=True).start()
                injected.wait(0.3)  # with the line's pieces under one lock, it cannot get in
            return ok

    stats = RelayStats()
    s_out_r, s_out_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    got = bytearray()
    reader = _drain(c_out_r, got)
    ts = threading.Thread(target=pump_server, args=(s_out_r, Probe(c_out_w), insp, stats), daemon=True)
    ts.start()
    body = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"d" * 200_000 + b'"}}\n'
    os.write(s_w := s_out_w, body[:150_000])
    time.sleep(0.1)
    os.write(s_w, body[150_000:])
    os.close(s_w)
    ts.join(30)
    assert injected.wait(30), "the injecting thread never got its turn"
    os.close(c_out_w)
    reader.join(30)
    os.close(s_out_r)
    assert Probe.calls >= 1, "the line must have gone out through the hold pipe"
    assert bytes(got) == body + rpc.error_response(1, "injected")


def test_a_gate_that_fails_refuses_the_call_instead_of_stopping_the_relay() -> None:
    class Broken(AllowAll):
        def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
            raise RuntimeError("daemon link bug")

    call = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ls"}}\n'
    ping = b'{"jsonrpc":"2.0","id":5,"method":"ping"}\n'
    to_server, to_client, insp = relay_in_process([call, ping], [b'{"jsonrpc":"2.0","id":5,"result":{}}\n'], Broken())
    assert to_server == ping
    err, pong = lines_of(to_client)
    assert err["id"] == 4 and err["error"]["code"] == rpc.INTERNAL_ERROR
    assert pong == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert insp.stats.invalid_reasons["internal error"] == 1
