"""Header handling between client, proxy and upstream.

Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are never
forwarded; auth headers are forwarded untouched but must never reach a log or
an event, so everything that prints headers goes through ``redacted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from multidict import CIMultiDict, CIMultiDictProxy

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
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-api-key"}
)
# Recomputed by aiohttp from the body we actually send.
_REQ_DROP = HOP_BY_HOP | {"host", "content-length", "expect"}
_RESP_DROP = HOP_BY_HOP | {"content-length", "date", "server"}


def _connection_tokens(headers: Mapping[str, str]) -> set[str]:
    out: set[str] = set()
    for v in headers.getall("connection", []) if hasattr(headers, "getall") else []:
        out.update(t.strip().lower() for t in v.split(",") if t.strip())
    return out


def upstream_request_headers(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], *, identity: bool
) -> CIMultiDict[str]:
    """Client request headers as they go upstream.

    ``identity``: ask for an uncompressed body (the proxy parses it); unknown
    paths keep the client's Accept-Encoding and get the bytes untouched.
    """
    drop = _REQ_DROP | _connection_tokens(headers)
    out: CIMultiDict[str] = CIMultiDict()
    for k, v in headers.items():
        if k.lower() in drop:
            continue
        out.add(k, v)
    if identity:
        out["Accept-Encoding"] = "identity"
    return out


def client_response_headers(
    headers: CIMultiDictProxy[str], *, drop_encoding: bool
) -> CIMultiDict[str]:
    drop = _RESP_DROP | _connection_tokens(headers)
    if drop_encoding:
        drop = drop | {"content-encoding"}
    out: CIMultiDict[str] = CIMultiDict()
    for k, v in headers.items():
        if k.lower() in drop:
            continue
        out.add(k, v)
    return out


def redacted(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """For diagnostics only: secret header values replaced."""
    return {k: ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in headers}
