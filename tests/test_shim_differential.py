"""Parser differentials: the shim never forwards what it could not parse and decide.

An attacker picks bytes that agentsh reads one way and the receiver another.
These tests run the SAME bytes through the shim and through the real
receiving parsers, and assert on what the receivers would do with whatever
the shim lets through:

- the TS SDK (Node ``JSON.parse`` + ``ReadBuffer`` framing +
  ``JSONRPCMessageSchema`` / ``CallToolRequestSchema`` / ``ListToolsResultSchema``
  and ``Number(id)`` matching), through a small node script;
- the Python ``mcp`` SDK (its stdin reader with universal newlines and
  ``errors="replace"``, its client reader, ``jsonrpc_message_adapter``,
  ``int(id)`` matching);
- plain Python ``json`` (what a simple server would use, batches included).

Hypothesis generates hostile lines (escapes in keys and values, lone
surrogates, invalid UTF-8, huge numbers, deep nesting, duplicate keys, CR and
CRLF, ids of every type, batches). Then each attack from the field is a named
end-to-end regression: real servers (Node server-everything, a Python ``mcp``
server that records what it runs, hostile raw servers) behind the real
``agentsh-shim``, with the official clients where the attack targets them.
"""

from __future__ import annotations

import base64
import codecs
import io
import itertools
import json
import math
import os
import select
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp.shared.dispatcher import coerce_request_id
from mcp.types import JSONRPCRequest, JSONRPCResponse, ListToolsResult, jsonrpc_message_adapter
from pydantic import ValidationError

from agentsh.agent.core import lenient_json
from agentsh.agent.core.mcp import jsonrpc as rpc
from tests.conftest import BASE_TEST_POLICY, NPM_MODULES, SHIM, DaemonProc
from tests.test_shim_relay import DenyNamed, relay_in_process

SERVERS = Path(__file__).parent / "mcp_servers"
RECORDING = str(SERVERS / "recording_server.py")
HOSTILE = str(SERVERS / "hostile_server.py")
EVERYTHING = NPM_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SDK = NPM_MODULES / "@modelcontextprotocol" / "sdk"
needs_node = pytest.mark.skipif(not SDK.exists() or not EVERYTHING.exists(),
                                reason="npm packages not installed (make setup)")
DENIED = "delete_files"
POISONED = "exfiltrate"

# --------------------------------------------------------------------------- receivers

NODE_RECEIVER = r"""
const {ReadBuffer} = require('@modelcontextprotocol/sdk/shared/stdio.js');
const t = require('@modelcontextprotocol/sdk/types.js');
const rl = require('readline').createInterface({input: process.stdin, crlfDelay: Infinity});
const tag = (k, x) => typeof x === 'number' ? {$num: String(x)} : x;
function describe(m) {
  if (t.isJSONRPCRequest(m) || t.isJSONRPCNotification(m)) {
    const d = {kind: 'id' in m ? 'request' : 'notification', method: m.method};
    if (m.method === 'tools/call') {
      const r = t.CallToolRequestSchema.safeParse(m);
      d.call = r.success ? r.data.params.name : null;
    }
    return d;
  }
  if (t.isJSONRPCResultResponse(m)) {
    const r = t.ListToolsResultSchema.safeParse(m.result);
    return {kind: 'result', idNum: Number(m.id), tools: r.success ? r.data.tools.map(x => x.name) : null};
  }
  if (t.isJSONRPCErrorResponse(m)) return {kind: 'error', idNum: Number(m.id)};
  return {kind: 'other'};
}
rl.on('line', line => {
  const req = JSON.parse(line);
  let out;
  if (req.op === 'number') {
    out = req.values.map(v => { const n = Number(v); return Number.isNaN(n) ? null : String(n); });
  } else if (req.op === 'parse') {
    try { out = {ok: true, value: JSON.stringify(JSON.parse(Buffer.from(req.b64, 'base64').toString('utf8')), tag)}; }
    catch (e) { out = {ok: false}; }
  } else {
    const rb = new ReadBuffer({maxBufferSize: 1 << 30});
    out = [];
    rb.append(Buffer.from(req.b64, 'base64'));
    for (;;) {
      let m;
      try { m = rb.readMessage(); } catch (e) { out.push({kind: 'rejected'}); continue; }
      if (m === null) break;
      out.push(describe(m));
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
});
"""


class Node:
    """One node process answering receiver questions line by line."""

    def __init__(self, script: Path) -> None:
        self.proc = subprocess.Popen(
            ["node", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "NODE_PATH": str(NPM_MODULES)},
        )

    def ask(self, req: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(orjson.dumps(req) + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "node receiver died"
        return lenient_json.loads(line)  # may hold lone surrogates and deep values

    def messages(self, data: bytes) -> list[dict[str, Any]]:
        return self.ask({"op": "messages", "b64": base64.b64encode(data).decode()})

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    if not SDK.exists():
        pytest.skip("npm packages not installed (make setup)")
    script = tmp_path_factory.mktemp("node") / "receiver.js"
    script.write_text(NODE_RECEIVER)
    n = Node(script)
    yield n
    n.close()


def node_server_calls(node: Node, data: bytes) -> list[str]:
    """Tool names a TS SDK server would run from these stdin bytes."""
    return [m["call"] for m in node.messages(data) if m.get("kind") == "request" and m.get("call") is not None]


def python_server_calls(data: bytes) -> list[str]:
    """Tool names the Python ``mcp`` server would run: its stdin is a text stream
    with universal newlines (a bare CR ends a line) and errors="replace"."""
    names = []
    for line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"):
        try:
            m = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            continue
        if isinstance(m, JSONRPCRequest) and m.method == "tools/call" and isinstance((m.params or {}).get("name"), str):
            names.append(m.params["name"])  # type: ignore[index]
    return names


def json_server_calls(data: bytes) -> list[str]:
    """Tool names a plain ``json.loads`` server would run (batches and notifications too)."""
    names = []
    for raw in data.split(b"\n"):
        try:
            v = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        for m in v if isinstance(v, list) else [v]:
            if isinstance(m, dict) and m.get("method") == "tools/call":
                p = m.get("params")
                if isinstance(p, dict) and isinstance(p.get("name"), str):
                    names.append(p["name"])
    return names


def node_client_lists(node: Node, data: bytes, list_id: int) -> list[list[str]]:
    """Tool lists the TS SDK client would accept as the answer to ``list_id``."""
    return [m["tools"] for m in node.messages(data)
            if m.get("kind") == "result" and m.get("idNum") == list_id and m.get("tools") is not None]


def python_client_lists(data: bytes, list_id: int) -> list[list[str]]:
    """Tool lists the Python ``mcp`` client would accept: it decodes strictly (its
    reader dies at the first invalid byte), splits on LF, matches ``int(id)``."""
    text = codecs.getincrementaldecoder("utf-8")("strict")
    good = ""
    for i in range(len(data)):
        try:
            good += text.decode(data[i : i + 1])
        except UnicodeDecodeError:
            break
    lists = []
    for line in good.split("\n")[:-1]:
        try:
            m = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            continue
        if isinstance(m, JSONRPCResponse) and coerce_request_id(m.id) == list_id:
            try:
                lists.append([t.name for t in ListToolsResult.model_validate(m.result).tools])
            except ValidationError:
                pass
    return lists


# --------------------------------------------------------------------------- hostile JSON


@dataclass(frozen=True)
class Raw:
    """JSON text emitted verbatim (what no well-behaved serialiser writes)."""

    text: bytes


@dataclass(frozen=True)
class Obj:
    """An object whose pairs may repeat keys; a key may be a Raw token."""

    pairs: tuple[tuple[Any, Any], ...]


def emit(v: Any) -> bytes:
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, Obj):
        return b"{" + b",".join(emit(k) + b":" + emit(x) for k, x in v.pairs) + b"}"
    if isinstance(v, list):
        return b"[" + b",".join(emit(x) for x in v) + b"]"
    return json.dumps(v).encode()


def deep(n: int) -> Raw:
    return Raw(b"[" * n + b"]" * n)


SPECIAL = [Raw(b'"\\ud800"'), Raw(b'"a\\udc00b"'), Raw(b'"\xff\xfe"'), Raw(b'"\xed\xa0\x80"'), Raw(b"1e400"),
           Raw(b"-1e400"), Raw(b"NaN"), Raw(b"Infinity"), Raw(b"1" * 30), Raw(b"9" * 5000), Raw(b'"tab\there"'),
           Raw(b'"nul\x00"'), deep(300), deep(5000), Raw(b'{"__proto__":{"name":"delete_files"}}'),
           Raw(b'"\\u0000"'), Raw(b'"line\\u2028sep"'), "plain", 1, None, True, [1, {"a": "b"}]]


def esc_first(s: str) -> Raw:
    return Raw(b'"\\u%04x' % ord(s[0]) + s[1:].encode() + b'"')


def key(k: str) -> st.SearchStrategy[Any]:
    odd = [esc_first(k), Raw(b'"' + k.encode() + b'\\ud800"'), k.upper()]
    return st.sampled_from([k] * 9 + odd)


ids = st.sampled_from([1, 1, 1, 0, -1, 7, Raw(b"1.0"), 1.5, Raw(b"1180591620717411303424"), "1", " 1", "0x1", "1e0",
                       "abc", None, True, {}, [], Raw(b"1e400")])
specials = st.sampled_from(SPECIAL)


@st.composite
def hostile_obj(draw: st.DrawFn, pairs: list[tuple[str, Any]], mild: bool = False) -> Obj:
    """``pairs`` with keys spelled in odd ways, odd extra members, repeats and any
    order (``mild``: only the order changes, so the values carry the twist)."""
    if mild:
        return Obj(tuple(draw(st.permutations(pairs)) if draw(st.booleans()) else pairs))
    out = [(draw(key(k)), v) for k, v in pairs if draw(st.integers(0, 19)) > 0]  # sometimes drop one
    if draw(st.integers(0, 3)) == 0:
        out.append((draw(st.sampled_from(["_meta", "x", "extra"])), draw(specials)))
    if draw(st.integers(0, 3)) == 0:  # a repeated member, before or after
        k, v = draw(st.sampled_from(pairs))
        out.insert(draw(st.integers(0, len(out))), (k, draw(st.one_of(st.just(v), specials, ids))))
    if draw(st.booleans()):
        out = draw(st.permutations(out))
    return Obj(tuple(out))


names = st.sampled_from([DENIED, DENIED, "echo", Raw(b'"delete\\u005ffiles"'), Raw(b'"delete_files\\ud800"'),
                         Raw(b'"delete_\xfffiles"'), Raw(b'"delete_files\\u0000"'), 5])
methods = st.sampled_from(["tools/call", "tools/call", Raw(b'"tools\\/call"'), Raw(b'"tools/\\u0063all"'),
                           "tools/call ", "ping"])


@st.composite
def client_message(draw: st.DrawFn) -> Any:
    mild = draw(st.booleans())
    args = draw(hostile_obj([("path", "/srv"), ("extra", draw(specials))], mild))
    params = draw(hostile_obj([("name", draw(names)), ("arguments", args)], mild))
    version = "2.0" if mild else draw(st.sampled_from(["2.0", "2.0", "2.0", Raw(b'"2\\u002e0"'), "2", 2.0]))
    return draw(hostile_obj([("jsonrpc", version), ("id", draw(ids)), ("method", draw(methods)),
                             ("params", params)], mild))


PREFIX = st.sampled_from([b"", b"", b" ", b"\t", b"\r", b"\xef\xbb\xbf"])
ENDING = st.sampled_from([b"\n", b"\n", b"\r\n", b"\r\r\n", b"\r", b" \n"])


@st.composite
def client_stream(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 5)) == 0:
            body = emit([draw(client_message()) for _ in range(draw(st.integers(1, 3)))])
        else:
            body = emit(draw(client_message()))
        out += draw(PREFIX) + body + draw(ENDING)
    if draw(st.booleans()):
        out = out.rstrip(b"\n")  # a last line without newline
    return out


def normalize(name: str) -> str:
    """A receiver's string as agentsh reads it (lone surrogates become U+FFFD)."""
    return name.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@given(client_stream(), st.lists(st.integers(0, 1 << 20), max_size=4))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_no_receiver_runs_a_denied_or_undecided_call_from_what_the_shim_forwards(
    node: Node, data: bytes, cuts: list[int]
) -> None:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points) if b > a]
    gate = DenyNamed(DENIED)
    forwarded, _, _ = relay_in_process(chunks, [], gate)
    allowed = Counter(n for n in gate.calls if n != DENIED)
    for receiver, ran in (("node", node_server_calls(node, forwarded)),
                          ("python-mcp", python_server_calls(forwarded)),
                          ("python-json", json_server_calls(forwarded))):
        assert DENIED not in ran, f"{receiver} would run the denied tool"
        assert not Counter(map(normalize, ran)) - allowed, f"{receiver} would run a call the gate never saw"
    unfiltered = node_server_calls(node, data) + python_server_calls(data) + json_server_calls(data)
    if DENIED in unfiltered:
        event("the unfiltered bytes would run the denied tool")


# --------------------------------------------------------------------------- server -> client

tool_names = st.sampled_from(["read_notes", POISONED, POISONED, Raw(b'"exfil\\u0074rate"'),
                              Raw(b'"exfiltrate\\ud800"'), Raw(b'"exfil\xfftrate"')])


@st.composite
def tool(draw: st.DrawFn, mild: bool) -> Obj:
    return draw(hostile_obj([("name", draw(tool_names)), ("description", "d"),
                             ("inputSchema", Obj((("type", "object"), ("x", draw(st.one_of(st.just(1), specials))))))],
                            mild))


@st.composite
def server_message(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return Raw(b"not json " + draw(st.binary(max_size=20)).replace(b"\n", b""))
    if kind == 1:
        return Obj((("jsonrpc", "2.0"), ("method", "notifications/message"), ("params", Obj((("data", draw(specials)),)))))
    mild = draw(st.booleans())
    pairs: list[tuple[str, Any]] = [("tools", [draw(tool(mild)) for _ in range(draw(st.integers(1, 3)))])]
    if draw(st.booleans()):
        pairs.append(("nextCursor", "c"))
    result = draw(hostile_obj(pairs, mild))
    return draw(hostile_obj([("jsonrpc", "2.0"), ("id", draw(ids)), ("result", result)], mild))


@st.composite
def server_stream(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 6)) == 0:
            body = emit([draw(server_message()) for _ in range(draw(st.integers(1, 3)))])
        else:
            body = emit(draw(server_message()))
        out += draw(PREFIX) + body + draw(ENDING)
    if draw(st.booleans()):
        out = out.rstrip(b"\n")
    return out


@given(server_stream(), st.lists(st.integers(0, 1 << 20), max_size=4))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_no_client_accepts_a_tool_list_the_shim_did_not_decide(node: Node, data: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points) if b > a]
    gate = DenyNamed(POISONED)
    _, to_client, _ = relay_in_process([b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'], chunks, gate)
    reviewed = {n for page in gate.lists for n in page}
    for receiver, lists in (("node", node_client_lists(node, to_client, 1)),
                            ("python-mcp", python_client_lists(to_client, 1))):
        for names_seen in lists:
            assert POISONED not in names_seen, f"{receiver} would accept the hidden tool"
            assert set(map(normalize, names_seen)) <= reviewed, f"{receiver} would accept unreviewed tools"
    if any(POISONED in names_seen for names_seen in node_client_lists(node, data, 1) + python_client_lists(data, 1)):
        event("the unfiltered bytes would list the hidden tool")


# --------------------------------------------------------------------------- the parsers underneath


@given(st.lists(st.text(alphabet=st.sampled_from(list("0123456789abcdefxXoObB.eE+-_ \t\n\v\f\r\u00a0\u2028\ufeff\u0663"
                                                        "Infinity")), max_size=8), min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_id_coercion_is_nodes_number(node: Node, values: list[str]) -> None:
    got = node.ask({"op": "number", "values": values})
    for v, n in zip(values, got, strict=True):
        ours = rpc.js_number(v)
        assert (None if ours is None or math.isnan(ours) else ours) == (None if n is None else float(n)), repr(v)


near_json = st.recursive(
    st.sampled_from(SPECIAL[:-4]) | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(st.text(max_size=3), inner), max_size=3).map(
        lambda ps: Obj(tuple(ps))),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Value equality as the receivers mean it (numbers as doubles, NaN equals NaN)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, int | float) and isinstance(y, int | float) and not isinstance(x, bool) and not isinstance(y, bool):
            fx, fy = float(x) if abs(x) < 1e308 else x, float(y) if abs(y) < 1e308 else y
            if not (fx == fy or (fx != fx and fy != fy)):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


def _untag(v: Any) -> Any:
    stack = [v]
    root = v
    if isinstance(v, dict) and set(v) == {"$num"}:
        return float(v["$num"])
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for k, x in list(items):
            if isinstance(x, dict) and set(x) == {"$num"}:
                node[k] = float(x["$num"])
            elif isinstance(x, dict | list):
                stack.append(x)
    return root


@given(near_json, st.sampled_from([b"", b" ", b"\xef\xbb\xbf"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_lenient_json_reads_whatever_a_receiver_reads_and_means_the_same(node: Node, value: Any, prefix: bytes) -> None:
    data = prefix + emit(value)
    res = node.ask({"op": "parse", "b64": base64.b64encode(data).decode()})
    try:
        ours = lenient_json.loads(data)
    except lenient_json.Unparseable:
        ours = None
        assert not res["ok"], f"Node parses what lenient_json refuses: {data[:200]!r}"
    try:
        json.loads(data.decode("utf-8", "replace").removeprefix("\ufeff"))
        py_ok = True
    except (ValueError, RecursionError):
        py_ok = False
    if py_ok:
        assert ours is not None, f"Python json parses what lenient_json refuses: {data[:200]!r}"
    if res["ok"]:
        theirs = _untag(lenient_json.loads(res["value"].encode("utf-8", "surrogatepass").decode("utf-8", "replace")))
        assert _same(ours, theirs), f"lenient_json and Node read {data[:200]!r} differently"


# --------------------------------------------------------------------------- end to end: client -> server

INIT = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
PAYLOADS = {
    "lone_surrogate": b'"\\ud800"',
    "invalid_utf8": b'"\xff\xfe"',
    "huge_number": b"1e400",
    "deep_nesting": b"[" * 5000 + b"]" * 5000,
}


def smuggled_call(tool_name: str, arg: str, payload: bytes) -> bytes:
    return (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"' + tool_name.encode()
            + b'","arguments":{"' + arg.encode() + b'":"ran","extra":' + payload + b"}}}\n")


class RawClient:
    """A raw stdio client: writes bytes, reads reply lines by id (no SDK in between)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.buf = b""
        self.seen: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def reply(self, rid: Any, timeout: float = 20.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            for m in self.seen:
                if m.get("id") == rid and ("result" in m or "error" in m):
                    self.seen.remove(m)
                    return m
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.strip():
                    self.seen.append(lenient_json.loads(line))
            if any(m.get("id") == rid for m in self.seen):
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no reply for id {rid!r} within {timeout}s; saw {self.seen!r}")
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise AssertionError(f"stream closed before a reply for {rid!r}; saw {self.seen!r}")
                self.buf += chunk

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def offline_shim(tmp_path: Path, policy: str, server_id: str = "test") -> tuple[list[str], dict[str, str]]:
    """The shim with no daemon: decisions from the policy in --config-dir."""
    etc = tmp_path / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "agentsh.yaml").write_text(BASE_TEST_POLICY + policy)
    argv = [SHIM, "--server-id", server_id, "--socket", str(tmp_path / "none.sock"),
            "--config-dir", str(etc), "--state-dir", str(tmp_path / "state"), "--"]
    return argv, dict(os.environ)


def deny(tool_name: str) -> str:
    return f'\nmcp:\n  denied_tools:\n    - server: "*"\n      tool: {tool_name}\n'


@needs_node
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_denied_call_node_server_everything_would_run_never_reaches_it(tmp_path: Path, payload: str) -> None:
    line = smuggled_call("echo", "message", PAYLOADS[payload])
    # control: straight to the server, the smuggled call runs
    direct = RawClient(["node", str(EVERYTHING), "stdio"], dict(os.environ))
    direct.send(INIT + line)
    assert direct.reply(5)["result"]["content"][0]["text"] == "Echo: ran"
    direct.close()
    # through the shim: refused, and the server never receives it (its stdin is recorded)
    received = tmp_path / "stdin.log"
    argv, env = offline_shim(tmp_path, deny("echo"))
    c = RawClient([*argv, "sh", "-c", f'tee "{received}" | exec node "{EVERYTHING}" stdio'], env)
    c.send(INIT)
    c.reply(0)
    c.send(line + b'{"jsonrpc":"2.0","id":6,"method":"ping"}\n')
    err = c.reply(5)["error"]
    assert err["code"] == -32001 and "Tool 'echo' blocked by policy: tool denied" in err["message"]
    c.reply(6)
    c.close()
    assert b"tools/call" not in received.read_bytes()


@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_denied_call_the_python_mcp_server_would_run_never_runs(tmp_path: Path, payload: str) -> None:
    line = smuggled_call(DENIED, "path", PAYLOADS[payload])
    record = tmp_path / "ran.jsonl"
    env = {**os.environ, "RECORD_FILE": str(record)}
    # control: straight to the server (the SDK runs the invalid-UTF-8 and 1e400 variants)
    direct = RawClient([sys.executable, RECORDING], env)
    direct.send(INIT + line + b'{"jsonrpc":"2.0","id":6,"method":"ping"}\n')
    direct.reply(6)
    direct.close()
    ran_directly = record.exists() and DENIED in record.read_text()
    if payload in ("invalid_utf8", "huge_number"):
        assert ran_directly, "the Python SDK no longer runs this payload: update the test"
    record.unlink(missing_ok=True)
    argv, _ = offline_shim(tmp_path, deny(DENIED))
    c = RawClient([*argv, sys.executable, RECORDING], env)
    c.send(INIT)
    c.reply(0)
    c.send(line + smuggled_call("echo", "message", b"1").replace(b'"id":5', b'"id":7'))
    err = c.reply(5)["error"]
    assert err["code"] == -32001 and f"Tool '{DENIED}' blocked by policy" in err["message"]
    assert c.reply(7)["result"]["content"][0]["text"] == "echo: ran"
    c.close()
    assert [r["tool"] for r in map(json.loads, record.read_text().splitlines())] == ["echo"]
    spooled = b"".join(p.read_bytes() for p in (tmp_path / "state" / "spool").glob("*.jsonl*"))
    called = [e for e in map(orjson.loads, spooled.splitlines()) if e["type"] == "mcp_tool_called"]
    assert [(e["tool_name"], e["action"]) for e in called] == [(DENIED, "block"), ("echo", "allow")], \
        "the decision is recorded, whatever the arguments hold"


def test_a_50mb_call_of_a_denied_tool_is_parsed_decided_and_refused(daemon_factory: Any, tmp_path: Path) -> None:
    d: DaemonProc = daemon_factory(BASE_TEST_POLICY + deny(DENIED))
    record = tmp_path / "ran.jsonl"
    env = {**os.environ, "RECORD_FILE": str(record)}
    argv = [SHIM, "--server-id", "rec", "--socket", str(d.socket), "--config-dir", str(d.config_dir),
            "--state-dir", str(d.state_dir), "--", sys.executable, RECORDING]
    c = RawClient(argv, env)
    c.send(INIT)
    c.reply(0)
    big = b'"' + b"A" * (50 * 1024 * 1024) + b'"'
    c.send(smuggled_call(DENIED, "path", big) + b'{"jsonrpc":"2.0","id":6,"method":"ping"}\n')
    err = c.reply(5, timeout=60)["error"]
    assert err["code"] == -32001 and "tool denied" in err["message"]
    c.reply(6)
    c.close()
    assert not record.exists()
    ev = d.wait_event("mcp_tool_called", lambda e: e["tool_name"] == DENIED)
    assert ev["action"] == "block" and ev["source"] == "shim"


def test_an_unparseable_or_invalid_client_line_gets_an_error_and_is_counted(tmp_path: Path) -> None:
    record = tmp_path / "ran.jsonl"
    argv, _ = offline_shim(tmp_path, deny(DENIED))
    c = RawClient([*argv, sys.executable, RECORDING], {**os.environ, "RECORD_FILE": str(record)})
    c.send(INIT)
    c.reply(0)
    c.send(b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},}}\n'
           b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo",\r"arguments":{"message":"x"}}}\n'
           b'{"jsonrpc":"1.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}\n')
    assert c.reply(8)["error"]["code"] == -32700
    assert "bare CR" in c.reply(9)["error"]["message"]
    assert c.reply(10)["error"]["code"] == -32600
    c.close()
    assert not record.exists()
    spooled = b"".join(p.read_bytes() for p in (tmp_path / "state" / "spool").glob("*.jsonl*"))
    errors = [e for e in map(orjson.loads, spooled.splitlines()) if e["type"] == "protocol_error"]
    assert errors and "3 message(s) refused" in errors[0]["detail"]


# --------------------------------------------------------------------------- end to end: server -> client

NODE_CLIENT = r"""
const {Client} = require('@modelcontextprotocol/sdk/client/index.js');
const {StdioClientTransport} = require('@modelcontextprotocol/sdk/client/stdio.js');
const [command, ...args] = JSON.parse(process.env.MCP_CMD);
const calls = JSON.parse(process.env.MCP_CALLS || '[]');
(async () => {
  const client = new Client({name: 'agentsh-test', version: '1'});
  await client.connect(new StdioClientTransport({command, args, env: process.env, stderr: 'inherit'}));
  const out = {calls: []};
  try { out.tools = (await client.listTools(undefined, {timeout: 15000})).tools.map(t => t.name); }
  catch (e) { out.list_error = String(e.message); }
  for (const [name, a] of calls) {
    try { const r = await client.callTool({name, arguments: a}, undefined, {timeout: 15000});
          out.calls.push({name, text: r.content[0].text}); }
    catch (e) { out.calls.push({name, error: String(e.message)}); }
  }
  console.log(JSON.stringify(out));
  await client.close();
})().catch(e => { console.log(JSON.stringify({fatal: String(e)})); process.exit(1); });
"""

HOSTILE_MODES = ["plain", "string_id", "surrogate", "huge_number", "deep", "deep_tool", "mid_line"]
DETECT_BLOCK = "\nmcp:\n  inspection:\n    on_detection:\n      action: block\n"


def run_node_client(tmp_path: Path, command: list[str], env: dict[str, str],
                    calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    script = tmp_path / "client.js"
    script.write_text(NODE_CLIENT)
    r = subprocess.run(["node", str(script)], capture_output=True, timeout=90,
                       env={**env, "NODE_PATH": str(NPM_MODULES), "MCP_CMD": json.dumps(command),
                            "MCP_CALLS": json.dumps(calls)})
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.splitlines()[-1])


@needs_node
@pytest.mark.parametrize("mode", HOSTILE_MODES)
def test_the_node_client_never_sees_the_poisoned_tool_whatever_the_list_looks_like(
    daemon_factory: Any, tmp_path: Path, mode: str
) -> None:
    d: DaemonProc = daemon_factory(BASE_TEST_POLICY + DETECT_BLOCK)
    record = tmp_path / "ran.jsonl"
    env = {**os.environ, "HOSTILE_MODE": mode, "RECORD_FILE": str(record)}
    calls = [(POISONED, {"target": "x"}), ("read_notes", {"topic": "t"})]
    # control: without the shim the official client takes the poisoned tool
    direct = run_node_client(tmp_path, [sys.executable, HOSTILE], env, [])
    assert POISONED in direct["tools"], direct
    record.unlink(missing_ok=True)
    shim = [SHIM, "--server-id", "hostile", "--socket", str(d.socket), "--config-dir", str(d.config_dir),
            "--state-dir", str(d.state_dir), "--", sys.executable, HOSTILE]
    got = run_node_client(tmp_path, shim, env, calls)
    assert got.get("tools") == ["read_notes"], got
    blocked, notes = got["calls"]
    assert "blocked by policy" in blocked.get("error", ""), blocked
    assert notes == {"name": "read_notes", "text": "ran read_notes"}
    assert [json.loads(x)["tool"] for x in record.read_text().splitlines()] == ["read_notes"]
    if mode != "deep_tool":  # that one never reaches the detector: it cannot be fully scanned
        d.wait_event("mcp_detection", lambda e: e["tool_name"] == POISONED)


@pytest.mark.parametrize("mode", ["plain", "string_id", "huge_number", "mid_line"])
async def test_the_python_client_never_sees_the_poisoned_tool(tmp_path: Path, mode: str) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    record = tmp_path / "ran.jsonl"
    env = {"HOSTILE_MODE": mode, "RECORD_FILE": str(record)}

    async def session(command: str, args: list[str]) -> tuple[list[str], str]:
        params = StdioServerParameters(command=command, args=args, env=env)
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            listed = [t.name for t in (await s.list_tools()).tools]
            try:
                res = await s.call_tool(POISONED, {"target": "x"})
                called = res.content[0].text  # type: ignore[union-attr]
            except MCPError as e:
                called = str(e.error.message)
            return listed, called

    listed, called = await session(sys.executable, [HOSTILE])
    assert POISONED in listed and called == f"ran {POISONED}", "control: the Python client takes it"
    record.unlink()
    argv, _ = offline_shim(tmp_path, DETECT_BLOCK, "hostile")
    listed, called = await session(argv[0], [*argv[1:], sys.executable, HOSTILE])
    assert listed == ["read_notes"]
    assert "blocked by policy" in called
    assert not record.exists()


def test_colliding_ids_a_blocked_call_does_not_let_the_list_through(tmp_path: Path) -> None:
    argv, env = offline_shim(tmp_path, DETECT_BLOCK.rstrip("\n") + f'\n  denied_tools:\n    - server: "*"\n      tool: {POISONED}\n',
                             "hostile")
    c = RawClient([*argv, sys.executable, HOSTILE], {**env, "HOSTILE_MODE": "plain"})
    c.send(INIT)
    c.reply(0)
    c.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}\n'
           b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exfiltrate","arguments":{}}}\n')
    first, second = c.reply(7), c.reply(7)
    c.close()
    (listed,) = [m for m in (first, second) if "result" in m]
    (blocked,) = [m for m in (first, second) if "error" in m]
    assert [t["name"] for t in listed["result"]["tools"]] == ["read_notes"]
    assert "blocked by policy" in blocked["error"]["message"]


def test_list_responses_sent_ahead_for_later_request_ids_are_never_accepted(tmp_path: Path) -> None:
    argv, env = offline_shim(tmp_path, DETECT_BLOCK, "hostile")
    c = RawClient([*argv, sys.executable, HOSTILE], {**env, "HOSTILE_MODE": "early"})
    c.send(INIT)
    c.reply(0)
    c.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    answers = [c.reply(1), c.reply(2)]
    c.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
    c.reply(3)
    c.close()
    for a in answers:
        assert [t["name"] for t in a["result"]["tools"]] == ["read_notes"]
    assert not any(m.get("id") in (3, 4, 5, 6) and "result" in m and "tools" in m["result"] for m in c.seen)
