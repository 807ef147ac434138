"""Header handling between client, proxy and upstream.

Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are never
forwarded; auth headers are forwarded untouched but must never reach a log or
an event, so everything that prints headers goes through ``redacted``.

Both directions work on the raw header pairs (no multidict built and copied
per request): the request side straight from the client's raw bytes into the
upstream's header block, the response side from the upstream's parsed list.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentsh.proxy.dialects import secret_headers

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
SECRET_HEADERS = secret_headers()
"""Every provider's credential headers (the dialect registry) and cookies."""
# Host and Content-Length are written by the upstream client from what it actually sends.
_REQ_DROP = frozenset(n.encode() for n in HOP_BY_HOP | {"host", "content-length", "expect"})
_REQ_DROP_IDENTITY = _REQ_DROP | {b"accept-encoding"}
_RESP_DROP = HOP_BY_HOP | {"content-length", "date", "server"}
_RESP_DROP_ENCODING = _RESP_DROP | {"content-encoding"}


def _tokens(value: str) -> set[str]:
    return {t.strip().lower() for t in value.split(",") if t.strip()}


def upstream_header_block(
    raw: Iterable[tuple[bytes, bytes]], *, identity: bool, body_decoded: bool = False
) -> bytes:
    """Client request headers (aiohttp's ``raw_headers``) as header lines for upstream.

    ``identity``: ask for an uncompressed body (the proxy parses it); unknown
    paths keep the client's Accept-Encoding and get the bytes untouched.
    ``body_decoded``: the server already decompressed the request body, so its
    Content-Encoding no longer describes the bytes sent.
    Returns CRLF-terminated lines without Host and Content-Length.
    """
    drop = _REQ_DROP_IDENTITY if identity else _REQ_DROP
    if body_decoded:
        drop = drop | {b"content-encoding"}
    out: list[bytes] = []
    named: set[bytes] | None = None
    for k, v in raw:
        lk = k.lower()
        if lk in drop:
            if lk == b"connection":  # headers it names are hop-by-hop too
                named = named or set()
                named.update(t.strip().lower() for t in v.split(b",") if t.strip())
            continue
        if b"\r" in v or b"\n" in v:  # cannot come from a conforming parser; never let it split a header
            continue
        out.append(k + b": " + v + b"\r\n")
    if named:
        out = [line for line in out if line.split(b":", 1)[0].lower() not in named]
    if identity:
        out.append(b"Accept-Encoding: identity\r\n")
    return b"".join(out)


# Request Content-Encodings aiohttp's server decodes before the handler reads the body.
SERVER_DECODED_ENCODINGS = frozenset({"gzip", "deflate", "br", "zstd"})


def client_response_headers(
    headers: list[tuple[str, str]], connection: str, *, drop_encoding: bool
) -> list[tuple[str, str]]:
    """Upstream response headers as they go to the client (``connection``: its Connection value)."""
    drop = _RESP_DROP_ENCODING if drop_encoding else _RESP_DROP
    if connection:
        drop = drop | _tokens(connection)
    return [(k, v) for k, v in headers if k.lower() not in drop]


def redacted(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """For diagnostics only: secret header values replaced."""
    return {k: ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in headers}
