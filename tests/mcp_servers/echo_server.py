"""A minimal, fast newline-delimited JSON-RPC "MCP" server (no SDK) for benchmarks
and relay tests: it must never be the bottleneck.

- initialize → serverInfo {"name": "echo-bench"}
- tools/list → one tool, ``echo``
- tools/call ``echo`` with ``{"size": N}`` → a result whose text is N bytes
  (responses are cached per size), else echoes ``arguments.message``
- any other request with ``params.size`` N → the same N-byte result
- anything else with an id → empty result
"""

from __future__ import annotations

import os
import sys

import orjson

TOOL = {
    "name": "echo",
    "description": "Echo a message, or return SIZE bytes of text.",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"},
                                                     "size": {"type": "integer"}}},
}
_cache: dict[int, tuple[bytes, bytes]] = {}


def _sized(size: int) -> tuple[bytes, bytes]:
    if size not in _cache:
        body = orjson.dumps({"content": [{"type": "text", "text": "x" * size}]})
        _cache[size] = (b'{"jsonrpc":"2.0","id":', b',"result":' + body + b"}\n")
    return _cache[size]


def handle(line: bytes) -> bytes | None:
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        return None
    rid = orjson.dumps(msg["id"])
    method = msg["method"]
    params = msg.get("params") or {}
    if method != "tools/call" and isinstance(params.get("size"), int):
        head, tail = _sized(params["size"])
        return head + rid + tail
    if method == "tools/call":
        args = (msg.get("params") or {}).get("arguments") or {}
        if isinstance(args.get("size"), int):
            head, tail = _sized(args["size"])
            return head + rid + tail
        result = {"content": [{"type": "text", "text": str(args.get("message", ""))}]}
    elif method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo-bench", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        result = {}
    return b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + orjson.dumps(result) + b"}\n"


def main() -> None:
    buf = b""
    out = sys.stdout.fileno()
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        replies = [r for r in (handle(x) for x in lines) if r]
        if replies:
            data = memoryview(b"".join(replies))
            while data:
                data = data[os.write(out, data):]


if __name__ == "__main__":
    main()
