"""A tiny stdio MCP server (official ``mcp`` SDK) for the Claude Code harness tests.

One tool, ``shout``, returns its text upper-cased. When ``SHOUT_RECORD`` names a
file, every call the server *receives* appends one JSON line to it, so a test
can prove a call did (or did not) reach the server.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("shout-test-server", version="0.0.1")


def shout(text: str) -> str:
    record = os.environ.get("SHOUT_RECORD")
    if record:
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": "shout", "arguments": {"text": text}}) + "\n")
    return text.upper() + "!"


server.add_tool(shout, description="Return the text upper-cased, with an exclamation mark.")

if __name__ == "__main__":
    server.run()
