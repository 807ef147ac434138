"""agentsh.agent.core.lenient_json parses what the receivers parse, with their meaning."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsh.agent.core import lenient_json as lj


def test_values_orjson_rejects_are_parsed_like_node_and_python_parse_them() -> None:
    value, strict = lj.loads_ex(b'{"a": 1e400, "b": "x\\ud800", "c": NaN, "d": 123456789012345678901234567890}')
    assert strict is False
    assert value["a"] == math.inf
    assert value["b"] == "x\ufffd"  # a lone surrogate cannot travel further: U+FFFD
    assert math.isnan(value["c"])
    assert value["d"] == pytest.approx(1.2345678901234568e29)


def test_invalid_utf8_is_decoded_with_replacement_like_node() -> None:
    assert lj.loads(b'{"name": "ec\xffho"}') == {"name": "ec\ufffdho"}


def test_a_bom_is_skipped_like_python_json_on_bytes() -> None:
    assert lj.loads(b'\xef\xbb\xbf{"x": 1}') == {"x": 1}


def test_nesting_deeper_than_the_recursion_limit_is_parsed() -> None:
    doc = lj.loads(b'{"k":' * 5000 + b'"\\ud800"' + b"}" * 5000)
    depth = 0
    while isinstance(doc, dict):
        doc = doc["k"]
        depth += 1
    assert depth == 5000 and doc == "\ufffd"


def test_nesting_beyond_the_bound_is_refused() -> None:
    with pytest.raises(lj.Unparseable):
        lj.loads(b"[" * 2000 + b"]" * 2000, max_depth=1500)


def test_duplicate_keys_keep_the_last_value_like_every_receiver() -> None:
    assert lj.loads(b'{"name": "allowed", "name": "denied\\ud800"}') == {"name": "denied\ufffd"}
    assert lj.loads(b"[" * 3000 + b'{"a": 1, "a": 2}' + b"]" * 3000) is not None


@pytest.mark.parametrize(
    "bad", [b"[1,]", b'{"a":1,}', b"[1 2]", b'{"a" 1}', b"[", b"{} x", b"", b"tru", b"'x'"]
)
def test_what_no_receiver_parses_is_unparseable(bad: bytes) -> None:
    with pytest.raises(lj.Unparseable):
        lj.loads(bad)
    with pytest.raises(lj.Unparseable):
        lj.loads(b"[" * 1500 + b"[0," + bad + b"]" + b"]" * 1500)  # also on the deep path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(0, 1500))
def test_deep_path_means_the_same_as_python_json(value: object, pad: int) -> None:
    text = json.dumps(value)
    wrapped = "[" * pad + text + "]" * pad
    got = lj.loads(wrapped.encode())
    for _ in range(pad):
        got = got[0]  # type: ignore[index]
    assert got == lj.loads(text.encode())


def test_node_json_parse_agrees_on_the_edge_cases() -> None:
    """Node's JSON.parse is one of the receivers: it must accept what we accept here
    and read the same tool name out of it."""
    cases = [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"\\ud800"}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1e400}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":'
        + b'[' * 5000 + b']' * 5000 + b"}}",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"\xff"}}}',
    ]
    script = (
        "const rl=require('readline').createInterface({input:process.stdin});"
        "rl.on('line',l=>{try{const m=JSON.parse(l);console.log(m.params.name)}catch(e){console.log('ERR')}});"
    )
    out = subprocess.run(
        ["node", "-e", script], input=b"\n".join(cases) + b"\n", capture_output=True, timeout=30, check=True
    ).stdout.decode().split()
    assert out == ["echo"] * len(cases)
    assert [lj.loads(c)["params"]["name"] for c in cases] == out


def test_clip_bounds_depth_items_and_strings() -> None:
    v = lj.clip({"a": [[[[1]]]], "s": "x" * 10, "l": list(range(5))}, max_depth=3, max_items=3, max_str=4)
    assert v == {"a": [["<nested too deep>"]], "s": "xxxx...<6 more chars>", "l": [0, 1, 2, "<2 more items>"]}
    deep = lj.loads(b"[" * 5000 + b"]" * 5000)
    assert lj.clip(deep, max_depth=2) == [["<nested too deep>"]]


def test_a_decision_request_is_bounded_whatever_the_shape_of_its_arguments() -> None:
    import orjson

    from agentsh.agent.core.client_sync import MAX_DECISION_ARGS_BYTES, cap_decision_request

    wide = {f"a{i}": {f"b{j}": "x" * 16384 for j in range(60)} for i in range(60)}  # 59 MB in small pieces
    deep = lj.loads(b'{"d":' + b"[" * 5000 + b'"' + b"y" * 100 + b'"' + b"]" * 5000 + b"}")  # orjson cannot encode it
    for args in (wide, deep, {"s": "z" * (50 << 20)}):
        req = cap_decision_request({"tool_name": "t", "arguments": args})
        assert req["arguments_truncated"] is True
        assert len(orjson.dumps(req["arguments"])) <= MAX_DECISION_ARGS_BYTES
