"""The shim's relay is byte-exact, whatever goes through it.

In-process (hypothesis, many examples): the real pump functions and the real
MCP inspector over OS pipes. Out-of-process: the real ``agentsh-shim`` with
``cat`` as the "server" (a 10 MB line, non-JSON lines, a last line without
newline), exit codes, signal forwarding and stderr pass-through.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsh.shim.inspector import MessageInspector
from agentsh.shim.relay import Output, RelayStats, pump_client, pump_server

SHIM = str(Path(sys.executable).parent / "agentsh-shim")


class AllowAll:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lists: list[list[str]] = []

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


def relay_in_process(client_chunks: list[bytes], server_chunks: list[bytes]) -> tuple[bytes, bytes, MessageInspector]:
    """Client chunks go through pump_client, server chunks through pump_server."""
    gate = AllowAll()
    insp = MessageInspector(gate)
    stats = RelayStats()
    c_in_r, c_in_w = os.pipe()  # client -> shim
    s_in_r, s_in_w = os.pipe()  # shim -> server
    s_out_r, s_out_w = os.pipe()  # server -> shim
    c_out_r, c_out_w = os.pipe()  # shim -> client
    out = Output(c_out_w)
    to_server, to_client = bytearray(), bytearray()
    readers = [_drain(s_in_r, to_server), _drain(c_out_r, to_client)]
    feeders = [_feed(c_in_w, client_chunks), _feed(s_out_w, server_chunks)]
    tc = threading.Thread(
        target=pump_client, args=(c_in_r, s_in_w, out, insp, stats, lambda: os.close(s_in_w))
    )
    ts = threading.Thread(target=pump_server, args=(s_out_r, out, insp, stats), daemon=True)
    tc.start()
    ts.start()
    for t in (*feeders, tc, ts):
        t.join(30)
    os.close(c_out_w)
    for t in readers:
        t.join(30)
    os.close(c_in_r)
    os.close(s_out_r)
    return bytes(to_server), bytes(to_client), insp


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


json_rpc_lines = st.one_of(
    st.builds(
        lambda i, m: orjson.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": {}}) + b"\n",
        st.integers(0, 50),
        st.sampled_from(["tools/list", "tools/call", "ping", "initialize", "resources/read"]),
    ),
    st.builds(
        lambda i, t: orjson.dumps({"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": t}]}}) + b"\n",
        st.integers(0, 50),
        st.text(min_size=1, max_size=20),
    ),
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"") + b"\n"),
    st.text(max_size=200).map(lambda s: s.replace("\n", " ").encode() + b"\n"),
)


@given(
    client=st.lists(json_rpc_lines, max_size=25),
    server=st.lists(json_rpc_lines, max_size=25),
    tail=st.binary(max_size=50),
    cuts_c=st.lists(st.integers(0, 1 << 16), max_size=12),
    cuts_s=st.lists(st.integers(0, 1 << 16), max_size=12),
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_relay_is_byte_exact_for_arbitrary_input(
    client: list[bytes], server: list[bytes], tail: bytes, cuts_c: list[int], cuts_s: list[int]
) -> None:
    c_data = b"".join(client) + tail
    s_data = b"".join(server) + tail
    to_server, to_client, _ = relay_in_process(_split(c_data, cuts_c), _split(s_data, cuts_s))
    assert to_server == c_data
    assert to_client == s_data


def test_relay_counts_invalid_lines_and_still_forwards_them() -> None:
    client = [b"not json\n", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b"{broken\n"]
    server = [b"banner from a chatty server\n", b'{"jsonrpc":"2.0","id":1,"result":{}}\n']
    to_server, to_client, insp = relay_in_process(client, server)
    assert to_server == b"".join(client)
    assert to_client == b"".join(server)
    assert insp.stats.invalid == {"client": 2, "server": 1}


def test_big_server_lines_are_checked_by_their_framing_across_reads() -> None:
    good = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"blob": "y" * 300_000}}) + b"\n"
    bad = b"x" * 300_000 + b"\n"
    truncated = good[:-10] + b"\n"
    data = good + bad + truncated
    chunks = [data[i : i + 70_000] for i in range(0, len(data), 70_000)]
    _, to_client, insp = relay_in_process([], chunks)
    assert to_client == data
    assert insp.stats.invalid["server"] == 2
    assert insp.stats.light_checked == 1


def test_tools_list_response_split_across_reads_is_held_and_seen_whole() -> None:
    resp = orjson.dumps({"jsonrpc": "2.0", "id": 5, "result": {"tools": [{"name": "a"}, {"name": "b"}]}}) + b"\n"
    gate = AllowAll()
    insp = MessageInspector(gate)
    assert insp.client_line(b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}\n') is None
    assert insp.server_hold_needed()
    assert insp.server_line(resp) is None
    assert gate.lists == [["a", "b"]]
    assert not insp.server_hold_needed()


# --------------------------------------------------------------------------- the real shim


@pytest.fixture
def shim_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AGENTSH_SOCKET": str(tmp_path / "no-daemon.sock"),
        "AGENTSH_STATE_DIR": str(tmp_path / "state"),
        "AGENTSH_CONFIG_DIR": str(tmp_path / "etc"),
    }


def test_real_shim_relays_a_10mb_line_and_garbage_byte_for_byte(shim_env: dict[str, str]) -> None:
    big = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"blob": "x" * (10 * 1024 * 1024)}})
    data = (
        b"plain text, not JSON\n"
        + big
        + b"\n\x00\xff\xfe binary junk\n"
        + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
        + b"\n\n"
        + b"last line without newline"
    )
    r = subprocess.run([SHIM, "--", "cat"], input=data, capture_output=True, env=shim_env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == data


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


def test_stderr_passes_through_untouched(shim_env: dict[str, str]) -> None:
    r = subprocess.run(
        [SHIM, "--", "sh", "-c", "printf 'to stderr\\n' >&2; printf 'to stdout\\n'"],
        capture_output=True, env=shim_env, timeout=30,
    )
    assert r.stdout == b"to stdout\n"
    assert b"to stderr\n" in r.stderr


SIGNAL_SERVER = """
import os, signal, sys, time
def h(sig, frame):
    os.write(1, f"got {sig}\\n".encode())
    if sig == signal.SIGTERM:
        sys.exit(3)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(s, h)
os.write(1, b"ready\\n")
while True:
    time.sleep(0.05)
"""


def test_signals_are_forwarded_to_the_server(shim_env: dict[str, str]) -> None:
    p = subprocess.Popen(
        [SHIM, "--", sys.executable, "-c", SIGNAL_SERVER],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=shim_env,
    )
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    time.sleep(0.3)  # the shim installs its handlers before it starts relaying; be generous
    p.send_signal(signal.SIGHUP)
    assert p.stdout.readline() == b"got 1\n"
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline() == b"got 10\n"
    p.send_signal(signal.SIGTERM)
    assert p.stdout.readline() == b"got 15\n"
    assert p.wait(30) == 3


class DenyNamed(AllowAll):
    def __init__(self, deny: str) -> None:
        super().__init__()
        self.deny = deny

    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        self.calls.append(name)
        return (name != self.deny), "tool denied"

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        return {self.deny}


def test_blocked_call_in_a_batch_is_removed_and_answered_with_an_error() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    batch = orjson.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ls", "arguments": {}}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "rm"}},
    ]) + b"\n"
    v = insp.client_line(batch)
    assert v is not None and v.to_server is not None and v.to_client is not None
    assert [m["id"] for m in orjson.loads(v.to_server)] == [2]
    errors = orjson.loads(v.to_client)
    assert errors == [{"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32001, "message": "[agentsh] Tool 'rm' blocked by policy: tool denied"}}]
    assert insp.stats.blocks == 2 and insp.stats.calls == 3


def test_blocked_notification_call_is_dropped_silently() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    v = insp.client_line(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rm"}}\n')
    assert v is not None and v.to_server is None and v.to_client is None


def test_hidden_tool_is_removed_from_a_held_list_response_keeping_the_id() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    insp.client_line(b'{"jsonrpc":"2.0","id":"L1","method":"tools/list","params":{}}\n')
    resp = orjson.dumps({"jsonrpc": "2.0", "id": "L1", "result": {
        "tools": [{"name": "ls"}, {"name": "rm"}], "nextCursor": "p2"}}) + b"\n"
    out = insp.server_line(resp)
    assert out is not None and out.endswith(b"\n")
    assert orjson.loads(out) == {"jsonrpc": "2.0", "id": "L1",
                                 "result": {"tools": [{"name": "ls"}], "nextCursor": "p2"}}
    # an unrelated response with the same shape but no pending request is left alone
    assert insp.server_line(resp) is None


# --------------------------------------------------------------------------- stdout kinds
# The server -> client direction splices when stdout is a pipe or a socket and
# falls back to read+write otherwise; both must stay byte-exact.

BIG_MIXED = (
    b"plain text, not JSON\n"
    + orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"blob": "y" * (3 * 1024 * 1024)}})
    + b"\n\x00\xff junk\n"
    + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    + b"last line without newline"
)


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


def test_blocked_call_error_waits_for_the_end_of_a_server_line_in_flight() -> None:
    insp = MessageInspector(DenyNamed("rm"))
    stats = RelayStats()
    c_in_r, c_in_w = os.pipe()
    s_in_r, s_in_w = os.pipe()
    s_out_r, s_out_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    out = Output(c_out_w)
    tc = threading.Thread(target=pump_client, args=(c_in_r, s_in_w, out, insp, stats, lambda: None), daemon=True)
    ts = threading.Thread(target=pump_server, args=(s_out_r, out, insp, stats), daemon=True)
    tc.start()
    ts.start()
    first, rest = b'{"jsonrpc":"2.0","id":9,"result":{"text":"', b'abc"}}\n'
    os.write(s_out_w, first)
    got = b""
    while len(got) < len(first):
        got += os.read(c_out_r, 1 << 16)
    assert got == first
    os.write(c_in_w, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}}\n')
    deadline = time.monotonic() + 10
    while stats.client_lines < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    os.write(s_out_w, rest)
    os.close(s_out_w)
    os.close(c_in_w)
    ts.join(30)
    tc.join(30)
    os.close(c_out_w)
    while chunk := os.read(c_out_r, 1 << 16):
        got += chunk
    for fd in (c_in_r, s_in_r, s_in_w, s_out_r, c_out_r):
        os.close(fd)
    line, error, tail = got.split(b"\n")
    assert line + b"\n" == first + rest and tail == b""
    assert orjson.loads(error)["id"] == 1 and "rm" in orjson.loads(error)["error"]["message"]
