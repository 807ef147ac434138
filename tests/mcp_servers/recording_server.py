"""An honest MCP server (mcp SDK, stdio) that records every tool it RUNS.

Tools: ``echo(message)`` and ``delete_files(path)`` (the one test policies
deny). ``RECORD_FILE`` gets one JSON line per tool invocation, written before
the tool returns, so a test can prove a refused call never ran. Extra
arguments are accepted and recorded (``extra``), so a payload can carry odd
JSON anywhere in ``arguments``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcp.server.mcpserver import MCPServer

RECORD = os.environ.get("RECORD_FILE")

server = MCPServer("recording-test-server", version="0.0.1")


def _record(name: str, args: dict[str, Any]) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": name, "arguments": args}, default=repr) + "\n")


def echo(message: str, extra: Any = None) -> str:
    _record("echo", {"message": message})
    return f"echo: {message}"


def delete_files(path: str, extra: Any = None) -> str:
    _record("delete_files", {"path": path})
    return f"deleted everything under {path}"


server.add_tool(echo, description="Echo a message back.")
server.add_tool(delete_files, description="Delete the files under a path.")

if __name__ == "__main__":
    server.run()
