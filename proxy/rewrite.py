"""Non-streaming responses: extract tool calls, ask about each, rewrite blocked ones.

Rewrites (docs/proxy.md "Parse the way the receivers do, or refuse"): a blocked call becomes a text item saying so, and the
stop/finish reason changes only when every tool call in the turn was blocked.
When nothing is blocked the caller forwards the upstream bytes unchanged. What
a tool call and its replacement look like is the dialect's
(``Dialect.rewrite``, proxy/dialects/).

The body is read the way the SDKs read it (``json.loads`` on bytes: UTF-8,
-16 or -32 by its first bytes, a BOM, NaN, lone surrogates, any depth), via
the lenient parser; a body that may carry a tool call but cannot be read, or
whose tool call cannot be placed, raises ``Refused`` (docs/proxy.md
"Non-streaming").
"""

from __future__ import annotations

from agentsh.proxy.dialects import Dialect, dialect_of
from agentsh.proxy.dialects.base import Judge, Refused, RewriteResult, parse_args, parse_body

__all__ = ["Judge", "Refused", "RewriteResult", "parse_args", "parse_body", "rewrite"]


async def rewrite(dialect: Dialect | str, body: bytes, judge: Judge) -> RewriteResult:
    """Parse ``body`` (already decompressed) and rewrite it; Refused when it cannot be read."""
    doc, strict = parse_body(body)
    d = dialect_of(dialect)
    res = await d.rewrite(doc, judge) if d is not None else RewriteResult(None)
    res.strict = strict
    return res
