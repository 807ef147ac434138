"""A tiny stdio MCP server for ``agentshctl selftest``: one canary tool.

    python -m agentsh.agent.selftest_canary --tool NAME --marker PATH

Speaks newline-delimited JSON-RPC like any stdio MCP server (initialize,
tools/list, tools/call, ping). It has no dependencies so it starts in a few
milliseconds. If the canary tool is ever CALLED, it writes ``PATH``: the
selftest then knows the call got past the shim, which must never happen.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def canary_tool(name: str) -> dict[str, Any]:
    """The canary's definition (the daemon registers the same one)."""
    return {
        "name": name,
        "description": "agentsh selftest canary. Returns ok.",
        "inputSchema": {"type": "object", "properties": {}},
    }


def _answer(msg: dict[str, Any], tool: str, marker: str) -> dict[str, Any] | None:
    if "id" not in msg:
        return None  # a notification
    rid, method = msg.get("id"), msg.get("method")
    result: Any
    if method == "initialize":
        params = msg.get("params") or {}
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "agentsh-selftest-canary", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [canary_tool(tool)]}
    elif method == "tools/call":
        with open(marker, "a") as f:
            f.write(json.dumps(msg.get("params")) + "\n")
        result = {"content": [{"type": "text", "text": "ok"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--marker", required=True)
    args = ap.parse_args()
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            out = _answer(msg, args.tool, args.marker)
            if out is not None:
                sys.stdout.write(json.dumps(out) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
