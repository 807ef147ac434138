"""Network MCP discovery: list the tools of every declared http/sse server.

For each server the ``mcp`` SDK client connects (streamable HTTP for
``type: http``, SSE for ``type: sse``), runs ``initialize``, pages through
``tools/list`` (``nextCursor``) and hands the whole list to the MCP service
(``register_tools(server_type, server_addr=host:port)``) for detection and
pinning. It stays connected and re-lists when the server sends
``notifications/tools/list_changed``, and reconnects and re-lists every
``network.discovery_interval_seconds``.

``tls_fingerprint`` (``sha256:<hex>`` of the DER certificate) is checked on a
separate TLS handshake before the MCP session; a mismatch reports the server
as blocked (the monitor turns it into a block verdict in the watch map) and
the tools are not listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentsh.agent.core.events.models import Event, MCPServerDiscovered
from agentsh.agent.core.policy.schema import MCPServerDeclaration
from agentsh.agent.core.vocab import ServerType
from agentsh.agent.netmon.resolver import host_port_str, url_host_port

log = logging.getLogger("agentsh.netmon.discovery")

_MAX_PAGES = 1000


def normalize_fingerprint(fp: str) -> str:
    v = fp.strip().lower()
    if v.startswith("sha256:"):
        v = v[7:]
    return v.replace(":", "")


async def fetch_cert_fingerprint(host: str, port: int, timeout: float = 10.0) -> str:
    """SHA-256 hex of the server's DER certificate (no CA verification: the pin is the check)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port, ssl=ctx, server_hostname=host), timeout
    )
    try:
        sslobj = writer.get_extra_info("ssl_object")
        der = sslobj.getpeercert(binary_form=True) if sslobj else None
        if not der:
            raise ssl.SSLError("server sent no certificate")
        return hashlib.sha256(der).hexdigest()
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    del reader


@dataclass
class DiscoveryResult:
    server_id: str
    server_type: ServerType
    server_addr: str
    tools: int = 0
    error: str | None = None
    tls_fingerprint_ok: bool | None = None
    at: float = field(default_factory=time.time)
    listings: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "server_type": self.server_type,
            "server_addr": self.server_addr,
            "tools": self.tools,
            "error": self.error,
            "tls_fingerprint_ok": self.tls_fingerprint_ok,
            "at": self.at,
            "listings": self.listings,
        }


async def list_all_tools(session: Any) -> list[dict[str, Any]]:
    import mcp_types as types

    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        res = await session.list_tools(params=params)
        for t in res.tools:
            tools.append(t.model_dump(by_alias=True, exclude_none=True, mode="json"))
        cursor = res.next_cursor
        if not cursor:
            break
    return tools


class ServerWatcher:
    """One declared server: connect, list, register, wait for list_changed or the interval."""

    def __init__(
        self,
        decl: MCPServerDeclaration,
        register: Callable[[str, str, str, list[dict[str, Any]]], Any],
        emit: Callable[[Event], bool],
        on_tls_mismatch: Callable[[str, bool], Awaitable[None]],
        interval: float,
        timeout: float = 30.0,
    ) -> None:
        self.decl = decl
        self.register = register
        self.emit = emit
        self.on_tls_mismatch = on_tls_mismatch
        self.interval = interval
        self.timeout = timeout
        host, port = url_host_port(decl.url or "")
        self.host, self.port = host, port
        self.addr = host_port_str(host, port)
        self.result = DiscoveryResult(decl.id, decl.type, self.addr)
        self.task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    def start(self) -> None:
        self.task = asyncio.create_task(self._loop(), name=f"agentsh-discovery-{self.decl.id}")

    async def stop(self, timeout: float = 5.0) -> None:
        """Cancel the watcher; a transport stuck in its own cleanup is abandoned after
        ``timeout`` rather than holding up a policy reload or shutdown."""
        task, self.task = self.task, None
        if task is None:
            return
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            log.warning("discovery watcher %s did not stop within %.0fs", self.decl.id, timeout)
        elif not task.cancelled():
            with contextlib.suppress(BaseException):
                task.exception()

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._report(error=_describe(e))
            await asyncio.sleep(self.interval)

    async def check_tls(self) -> bool:
        want = self.decl.tls_fingerprint
        if not want:
            return True
        if not (self.decl.url or "").startswith("https://"):
            self.result.tls_fingerprint_ok = False
            await self.on_tls_mismatch(self.decl.id, True)
            raise RuntimeError("tls_fingerprint set but the url is not https")
        got = await fetch_cert_fingerprint(self.host, self.port, self.timeout)
        ok = got == normalize_fingerprint(want)
        self.result.tls_fingerprint_ok = ok
        await self.on_tls_mismatch(self.decl.id, not ok)
        if not ok:
            raise RuntimeError(f"TLS certificate sha256:{got} does not match the pinned fingerprint")
        return True

    async def run_once(self, stay_seconds: float | None = None) -> None:
        """Connect, list and register; then stay for list_changed until the interval ends."""
        from mcp.client.session import ClientSession

        await self.check_tls()
        stay = self.interval if stay_seconds is None else stay_seconds
        self._changed.clear()

        async def on_message(message: Any) -> None:
            import mcp_types as types

            if isinstance(message, types.ToolListChangedNotification):
                self._changed.set()

        async with self._transport() as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, message_handler=on_message) as session:
                await asyncio.wait_for(session.initialize(), self.timeout)
                await self._list(session)
                deadline = time.monotonic() + stay
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        await asyncio.wait_for(self._changed.wait(), left)
                    except TimeoutError:
                        break
                    self._changed.clear()
                    await self._list(session)

    def _transport(self) -> Any:
        url = self.decl.url or ""
        if self.decl.type == "sse":
            from mcp.client.sse import sse_client

            return sse_client(url, timeout=self.timeout)
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(url)

    async def _list(self, session: Any) -> None:
        tools = await asyncio.wait_for(list_all_tools(session), self.timeout)
        res = self.register(self.decl.id, self.decl.type, self.addr, tools)
        if asyncio.iscoroutine(res):
            await res
        self.result.listings += 1
        self._report(tools=len(tools))

    def _report(self, tools: int = 0, error: str | None = None) -> None:
        r = self.result
        r.tools, r.error, r.at = tools, error, time.time()
        self.emit(
            MCPServerDiscovered(
                source="daemon",
                server_id=r.server_id,
                server_type=r.server_type,
                server_addr=r.server_addr,
                tools=tools,
                error=error,
                tls_fingerprint_ok=r.tls_fingerprint_ok,
            )
        )


def _describe(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        inner = [_describe(x) for x in e.exceptions]
        return "; ".join(inner) or type(e).__name__
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


class Discovery:
    """All watchers, keyed by server id; rebuilt on policy reload."""

    def __init__(
        self,
        register: Callable[[str, str, str, list[dict[str, Any]]], Any],
        emit: Callable[[Event], bool],
        on_tls_mismatch: Callable[[str, bool], Awaitable[None]],
    ) -> None:
        self.register = register
        self.emit = emit
        self.on_tls_mismatch = on_tls_mismatch
        self.watchers: dict[str, ServerWatcher] = {}

    async def update(self, servers: list[MCPServerDeclaration], interval: float) -> None:
        want = {s.id: s for s in servers}
        for sid in list(self.watchers):
            w = self.watchers[sid]
            if sid not in want or want[sid] != w.decl or w.interval != interval:
                await w.stop()
                del self.watchers[sid]
        for sid, decl in want.items():
            if sid not in self.watchers:
                w = ServerWatcher(decl, self.register, self.emit, self.on_tls_mismatch, interval)
                self.watchers[sid] = w
                w.start()

    async def stop(self) -> None:
        for w in self.watchers.values():
            await w.stop()
        self.watchers.clear()

    def status(self) -> dict[str, Any]:
        return {sid: w.result.to_json() for sid, w in self.watchers.items()}
