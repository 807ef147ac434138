"""Real-time SSE relay that holds each tool call until it is complete (docs/proxy.md "Streaming").

Framing is the official SDKs' (their SSE decoders): lines end at CR, LF or
CRLF, an event ends at a blank line, ``data:`` lines are joined with LF,
comments and unknown fields are ignored, each line is strict UTF-8.

Text never waits: an event that cannot touch a tool call goes to the client
as the exact bytes received, unparsed. Whether it can is a substring test
(``Interceptor.wants``): the dialect's type/key names, or a JSON escape that
could spell one (``\\u00XX`` for an ASCII character), or dialect state. Those
events are parsed and fed to a per-dialect model of what the SDKs'
accumulators build (anthropic ``accumulate_event``, openai
``ChatCompletionStreamState`` and ``ResponseStreamState``):

* a tool call's events are **held** from its first event until the call is
  complete (Anthropic ``content_block_stop``; OpenAI chat: the next call of
  the choice, ``finish_reason``, ``[DONE]``; Responses ``output_item.done``;
  end of stream), then the judge decides on the complete call (name, id,
  parsed arguments) and the held events are released byte-identical when it
  is allowed, or replaced by a text block when it is blocked. Events after a
  held one queue behind it, so order never changes;
* anything the model cannot place unambiguously (indexes out of order,
  fragments for a finished call, a name that differs between two views of
  one item, an event name that disagrees with its data, unparseable JSON in
  a candidate event, an over-long event, ...) **refuses** the stream: held
  events are dropped and the stream ends with an error event the SDK raises
  (``Refused``). Real provider streams never look like that.

The replacement keeps the stream well-formed for the SDKs: Anthropic gets a
text block at the same index; OpenAI chat gets the text in ``delta.content``
and the remaining tool calls renumbered densely; Responses gets a ``message``
item at the same ``output_index`` with contiguous ``sequence_number``;
Gemini gets a text part in place of the ``functionCall`` part.

The per-dialect models live with their dialects (proxy/dialects/<name>.py,
their base in proxy/dialects/stream.py); this module is the relay.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable

from agentsh.proxy.dialects import BY_NAME
from agentsh.proxy.dialects.base import Judge, Refused, UsageScan
from agentsh.proxy.dialects.stream import Counters, Interceptor, Item

log = logging.getLogger("agentsh.proxy")

__all__ = ["INTERCEPTORS", "MAX_HELD_FACTOR", "Counters", "Interceptor", "Judge", "Refused", "SSERelay"]

Write = Callable[[bytes], Awaitable[None]]

# A blank line ends an event: a line terminator (CRLF, lone CR, LF) directly
# followed by another one.
_END_OF_EVENT = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
MAX_HELD_FACTOR = 16
"""Held events may take this many times ``max_event_bytes`` before the stream is refused."""

INTERCEPTORS: dict[str, Callable[[Judge, Counters], Interceptor]] = {d.name: d.interceptor for d in BY_NAME.values()}
"""Each dialect's stream model by name (tests; the server takes it from the route's dialect)."""


class SSERelay:
    """Event framing + hold queue + flushing. Feed upstream chunks; output goes to ``write``.

    Without an interceptor it is a plain copy. ``refused`` is set (and the
    error event written) when the stream had to be refused; the caller then
    stops reading upstream and ends the response.
    """

    def __init__(
        self,
        interceptor: Interceptor | None,
        write: Write,
        max_event_bytes: int,
        usage: UsageScan | None = None,
    ) -> None:
        self.interceptor = interceptor
        self._write = write
        self._max = max_event_bytes
        self._max_held = MAX_HELD_FACTOR * max_event_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self._queue: deque[Item] = deque()
        self._held = 0
        self.copying = interceptor is None
        self.usage = usage
        self.refused: str | None = None
        self._in_write = False

    async def _out(self, b: bytes) -> None:
        """Write to the client; its failures (client gone) are the caller's, never a refusal."""
        self._in_write = True
        await self._write(b)
        self._in_write = False

    async def feed(self, chunk: bytes) -> None:
        if self.copying:
            if self.usage is not None:
                self.usage.scan(chunk)
            await self._write(chunk)
            return
        if self.refused is not None:
            return
        icpt = self.interceptor
        assert icpt is not None
        buf = self._buf
        buf += chunk
        pos = 0
        out: list[bytes] = []
        usage = self.usage
        search = _END_OF_EVENT.search
        scan = max(self._scan_from - 3, 0)
        queue = self._queue
        try:
            while True:
                m = search(buf, scan)
                if m is None:
                    break
                end = m.end()
                ev = bytes(buf[pos:end])
                pos = scan = end
                if usage is not None:
                    usage.scan(ev)
                wanted = icpt.wants(ev)
                if not wanted and not queue:
                    out.append(ev)
                    continue
                item = icpt.observe(ev) if wanted else Item(ev)
                queue.append(item)
                self._held += len(ev)
                if icpt.has_pending:
                    if out:  # text before a tool call never waits on the decision
                        await self._out(b"".join(out))
                        out = []
                    await icpt.decide_pending()
                self._release(out)
                if self._held > self._max_held:
                    raise Refused(f"tool call larger than {self._max_held} bytes held")
            if pos:
                del buf[:pos]
            self._scan_from = len(buf)
            if len(buf) > self._max:
                raise Refused(f"SSE event longer than max_sse_line_bytes ({self._max})")
        except Refused as r:
            await self._refuse(out, str(r))
            return
        except Exception as e:  # a bug must not pass an undecided call: refuse
            if self._in_write:
                raise
            log.exception("SSE interceptor failed; refusing the stream")
            await self._refuse(out, f"internal error ({e.__class__.__name__})")
            return
        if out:
            await self._write(b"".join(out))

    def _release(self, out: list[bytes]) -> None:
        icpt = self.interceptor
        assert icpt is not None
        queue = self._queue
        while queue and queue[0].ready():
            item = queue.popleft()
            self._held -= len(item.raw)
            out.extend(icpt.render(item))

    async def refuse(self, reason: str) -> None:
        """End the stream with the dialect's error event (held events are dropped)."""
        if self.refused is None and self.interceptor is not None:
            await self._refuse([], reason)

    async def _refuse(self, out: list[bytes], reason: str) -> None:
        self.refused = reason
        self._queue.clear()
        self._buf.clear()
        icpt = self.interceptor
        assert icpt is not None
        out.append(icpt.error_event(f"agentsh proxy refused the response: {reason}"))
        await self._out(b"".join(out))

    async def finish(self) -> None:
        """Upstream ended: close open calls, decide them, release everything."""
        if self.copying:
            return
        if self.refused is not None:
            return
        icpt = self.interceptor
        assert icpt is not None
        out: list[bytes] = []
        try:
            tail = bytes(self._buf)
            self._buf.clear()
            icpt.end()
            if icpt.has_pending:
                await icpt.decide_pending()
            self._release(out)
            if self._queue:
                raise Refused("stream ended with an undecided tool call")
            # an unterminated event is never dispatched by a receiver; pass it only if it cannot matter
            if tail and not icpt.wants(tail):
                out.append(tail)
        except Refused as r:
            await self._refuse(out, str(r))
            return
        except Exception as e:
            if self._in_write:
                raise
            log.exception("SSE interceptor failed; refusing the stream")
            await self._refuse(out, f"internal error ({e.__class__.__name__})")
            return
        if out:
            await self._write(b"".join(out))
