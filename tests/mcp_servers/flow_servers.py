"""Two small MCP servers (mcp SDK, stdio) for data-flow tests: an internal data
source and an external sink, picked by the first argument.

* ``notes`` — tool ``read_note(name)`` returns a note; the ``deploy`` note
  carries an AWS access key (``NOTE_SECRET``), the others are public text.
* ``post`` — tool ``post_message(channel, text)`` "posts" a message.

``RECORD_FILE`` gets one JSON line per tool the server RUNS (written before it
returns), so a test proves a denied call never reached the server.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

RECORD = os.environ.get("RECORD_FILE")
NOTE_SECRET = os.environ.get("NOTE_SECRET", "AKIAIOSFODNN7EXAMPLE")


def _record(tool: str, args: dict[str, str]) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "arguments": args}) + "\n")


def read_note(name: str) -> str:
    _record("read_note", {"name": name})
    if name == "deploy":
        return f"Deploy notes: use the key {NOTE_SECRET} for the release bucket."
    return f"Public note {name}: the release is scheduled for Thursday."


def post_message(channel: str, text: str) -> str:
    _record("post_message", {"channel": channel, "text": text})
    return f"posted to {channel}"


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "notes"
    server = MCPServer(f"flow-{kind}-server", version="0.0.1")
    if kind == "notes":
        server.add_tool(read_note, description="Read a team note by name.")
    else:
        server.add_tool(post_message, description="Post a message to a chat channel.")
    server.run()
