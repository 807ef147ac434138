"""One log line format for agentshd, the LLM proxy and agentsh-shim.

    2026-11-23T10:00:00.123+00:00 agentshd[123] supervisor INFO started llm-proxy (pid 456)

RFC 3339 local time with milliseconds and its UTC offset, ``program[pid]``,
the component (the logger's name below ``agentsh.``), the level, the message
(docs/operations.md "Daemon logs"). A record is one line: newlines in a
message are written as ``\\n``, so a collector that splits on lines sees one
record and text from a hostile peer cannot forge another. The traceback of an
unexpected exception (``log.exception``) follows on lines starting with
``  | ``; expected failures are logged without one.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from typing import TextIO

PREFIX = "agentsh."


class LineFormatter(logging.Formatter):
    """``TIME PROGRAM[PID] COMPONENT LEVEL MESSAGE``, one line per record."""

    def __init__(self, program: str) -> None:
        super().__init__()
        self.program = program

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")
        name = record.name
        component = name[len(PREFIX):] if name.startswith(PREFIX) else name
        if component == "root":
            component = self.program
        msg = record.getMessage().replace("\r", "\\r").replace("\n", "\\n")
        line = f"{ts} {self.program}[{record.process}] {component} {record.levelname} {msg}"
        if record.exc_info and record.exc_info[0] is not None:
            tb = self.formatException(record.exc_info)
            line += "".join(f"\n  | {t}" for t in tb.splitlines())
        return line


def setup(program: str, level: int | str = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every log record of this process to ``stream`` (stderr) in the one format.

    Replaces handlers installed earlier, so calling it again (tests, a re-exec)
    does not double lines. Python warnings go through the same format.
    """
    if isinstance(level, str):
        level = logging.getLevelName(level.upper())
        if not isinstance(level, int):
            level = logging.INFO
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(LineFormatter(program))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
