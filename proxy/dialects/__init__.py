"""The dialect registry: the one list of the providers and dialects the proxy
speaks (docs/proxy.md "Dialects and routing", "Adding a provider").

Everything the proxy does differently per provider goes through the objects
listed in ``DIALECTS`` (proxy/dialects/base.py says what each one holds):
routing, the fast-path needles, decisions and rewrites of buffered bodies and
streams, tool results in requests, token counts, error shapes, credentials.
Adding a provider is one module in this package and one line here.

The daemon and ``agentshctl`` import this module (only this one) to check
``proxy.providers`` keys (``check_policy``); it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode

from agentsh.proxy.dialects import anthropic, gemini, openai_chat, openai_responses
from agentsh.proxy.dialects.base import Dialect, Provider, UsageScan

if TYPE_CHECKING:
    from agentsh.agent.core.policy.schema import Policy, ProxyConfig

__all__ = [
    "BY_NAME",
    "DIALECTS",
    "PROVIDERS",
    "Dialect",
    "Provider",
    "Route",
    "base_url",
    "canonical_path",
    "check_policy",
    "client_env",
    "dialect_of",
    "media_type",
    "redact_target",
    "route",
    "secret_headers",
]

DIALECTS: tuple[Dialect, ...] = (
    anthropic.DIALECT,
    openai_chat.DIALECT,
    openai_responses.DIALECT,
    gemini.DIALECT,
)
"""Every dialect, in the order paths are matched."""

PASS_THROUGH_DEFAULT: Provider = openai_chat.PROVIDER
"""Where a pass-through request goes that no provider claims (OpenAI-compatible APIs)."""

BY_NAME: dict[str, Dialect] = {d.name: d for d in DIALECTS}
PROVIDERS: dict[str, Provider] = {d.provider.name: d.provider for d in DIALECTS}
"""By ``proxy.providers`` key, in registry order."""


def dialect_of(d: Dialect | str | None) -> Dialect | None:
    """A dialect object from itself or its name (None: not a dialect)."""
    return d if isinstance(d, Dialect) or d is None else BY_NAME.get(d)


def secret_headers() -> frozenset[str]:
    """Header names (lower case) whose values are never logged or put in an event."""
    out = {"authorization", "proxy-authorization", "cookie", "set-cookie"}
    for p in PROVIDERS.values():
        out |= p.secret_headers
    return frozenset(out)


def credential_headers() -> tuple[str, ...]:
    """Headers whose value identifies the caller (``Authorization`` for bearer-token APIs)."""
    return tuple(dict.fromkeys(h for p in PROVIDERS.values() for h in p.credential_headers))


def redact_target(target: str) -> str:
    """A request target for a log line: credential query parameters (Gemini ``key=``) redacted."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    secret = {k for p in PROVIDERS.values() for k in p.secret_query}
    pairs = parse_qsl(query, keep_blank_values=True)
    return path + "?" + urlencode([(k, "<redacted>" if k in secret else v) for k, v in pairs])


def client_env(root: str) -> dict[str, str]:
    """``agentshctl proxy env``: the base-URL variables the official SDKs read, for a proxy at ``root``."""
    return {var: root + suffix for p in PROVIDERS.values() for var, suffix in p.client_env.items()}


# ------------------------------------------------------------------ policy


def check_policy(policy: Policy) -> list[tuple[tuple[str | int, ...], str]]:
    """``proxy.providers`` keys that name no provider: (key path, message) for the policy loader."""
    known = ", ".join(sorted(PROVIDERS))
    return [
        (("proxy", "providers", name), f"unknown provider {name!r} (known: {known})")
        for name in policy.proxy.providers
        if name not in PROVIDERS
    ]


def base_url(cfg: ProxyConfig, provider: Provider) -> str:
    """The configured upstream of ``provider``, else its public API."""
    up = cfg.providers.get(provider.name)
    return up.base_url if up is not None else provider.default_base_url


# ------------------------------------------------------------------ routing


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    dialect: Dialect | None
    """None: pass-through path (not inspected)."""
    base_url: str
    """The provider's configured base URL."""
    target: str
    """Path and query sent upstream (appended to the base URL's path)."""

    @property
    def upstream_url(self) -> str:
        return self.base_url + self.target


def _normalized(raw_path: str) -> str:
    path = raw_path.split("?", 1)[0].split("#", 1)[0]
    for _ in range(3):  # double-encoded escapes too
        dec = unquote(path, errors="replace")
        if dec == path:
            break
        path = dec
    out: list[str] = []
    for seg in path.replace("\\", "/").split("/"):
        seg = seg.split(";", 1)[0].strip()
        if seg in ("", "."):
            continue
        if seg == "..":
            if out:
                out.pop()
            continue
        out.append(seg)
    return "/" + "/".join(out)


def canonical_path(raw_path: str) -> str:
    """The path as the most liberal server could read it, for routing only.

    Percent-escapes decoded (all of them: a server that decodes ``%2F`` must
    not reach a dialect uninspected), ``\\`` as ``/``, ``;params`` dropped,
    empty and ``.`` segments removed, ``..`` resolved, lower case, no
    trailing slash. The query is not part of it.
    """
    return _normalized(raw_path).lower()


def route(method: str, target: str, headers: Any, cfg: ProxyConfig) -> Route:
    """Map an incoming request (``target``: its raw path and query) to its upstream and dialect.

    A dialect path in any spelling (``//v1/messages``, ``/V1/./messages``,
    ``/v1/%6Dessages``, ...) is routed as the dialect and sent upstream in its
    canonical spelling with the client's query, so the upstream serves
    exactly what is inspected. Other paths go to the first provider that
    claims the request (its credential headers), else to OpenAI.
    """
    if method.upper() == "POST":
        cased = _normalized(target)
        canon = cased.lower()
        for d in DIALECTS:
            path = d.match(canon, cased)
            if path is not None:
                q = target.find("?")
                return Route(d.provider, d, base_url(cfg, d.provider), path + (target[q:] if q >= 0 else ""))
    provider = next((p for p in PROVIDERS.values() if p.claims(headers, target)), PASS_THROUGH_DEFAULT)
    return Route(provider, None, base_url(cfg, provider), target)


def media_type(content_type: str) -> str:
    """``Text/Event-Stream; charset=utf-8`` -> ``text/event-stream``."""
    return content_type.split(";", 1)[0].strip().lower()


def usage_scan(dialect: Dialect | None) -> UsageScan:
    """Token counts of one response: its dialect's keys, or every dialect's on pass-through paths."""
    if dialect is not None:
        return UsageScan((dialect.usage,))
    return UsageScan(_ALL_USAGE)


def _unique(keys: Iterable[Any]) -> tuple[Any, ...]:
    seen: dict[bytes, Any] = {}
    for k in keys:
        seen.setdefault(k.usage_re.pattern + k.model_re.pattern, k)
    return tuple(seen.values())


_ALL_USAGE = _unique(d.usage for d in DIALECTS)
