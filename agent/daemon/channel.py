"""The agent channel: a lean line protocol for what the layers need on their
hot path (decisions) and the little else they need from the daemon.

Over the HTTP control API each decision costs several hundred microseconds of
HTTP machinery in two Python processes. This channel carries one JSON object
per line each way and checks the peer once per connection. It is served on
``<socket stem>-decide.sock`` (shims, hooks: members of ``daemon.group``) and
on socketpairs handed to the daemon's own children at spawn (the LLM proxy),
which therefore never depend on group membership to reach their parent::

    → {"id": 7, "op": "decide", "tool_name": "read_file", "server_id": "fs", ...}
    ← {"id": 7, "decision": {"action": "allow", ...}}
    → {"id": 8, "op": "events", "events": [...]}
    ← {"id": 8, "accepted": 3, "rejected": 0, "errors": []}   (once written)
    → {"id": 9, "op": "policy"}              ← {"id": 9, "policy": {...}, "hash": "sha256:..."}
    → {"id": 10, "op": "snapshot", "since": "12:ab.."}
    ← {"id": 10, "snapshot": {...}} | {"id": 10, "unchanged": true, "version": "12:ab.."}
    → {"id": 11, "op": "report", "state": {...}}   (children only: readiness, health)
    → {"id": 12, "op": "hook", "agent": "claude-code", "payload": {<hook JSON>}}
    ← {"id": 12, "decision": "deny", "reason": "agentsh data-flow policy: ...", "risk_level": ..., "activity_id": ...}
    → {"id": 13, "op": "flow_record", "tool_name": ..., "server_id": ..., "content": ..., "source": "shim"}
    ← {"id": 13, "recorded": true, "session": "...", "sensitive": [...]}
    ← {"id": 14, "error": "..."}

``op`` defaults to ``decide``. Decisions are answered inline and in order,
except one that must first wait for results of its flow session still in
flight (agent/daemon/hooks.py ``must_settle``), answered when taken;
``events``, ``hook`` (agent hooks, agent/daemon/hooks.py) and ``flow_record``
(a tool result as a data origin, docs/flow.md "Modes") are answered when done,
possibly after later requests (clients match answers by id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import psutil

from agentsh.agent.core.events.models import FOREIGN_TYPES
from agentsh.agent.daemon.api_mcp import parse_decision_request
from agentsh.agent.daemon.hooks import THREAD_BYTES
from agentsh.agent.daemon.intake import MAX_EVENTS_PER_BATCH, admit, hand_in
from agentsh.agent.daemon.jsonhttp import BadInput
from agentsh.agent.daemon.metrics import HookMeter
from agentsh.agent.daemon.peercred import ConnectionGuard

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext

log = logging.getLogger("agentsh.channel")
MAX_LINE = 16 * 1024 * 1024

__all__ = ["AgentChannel", "ChannelPeer"]


@dataclass
class ChannelPeer:
    role: str
    """``agent`` (a connection to the channel socket) or ``child`` (a socketpair of ours)."""
    uid: int
    pid: int | None
    component: str | None = None
    """For children: the supervised component's name."""

    def child_uid(self) -> int:
        """A child drops privileges after spawn: its current uid, from the kernel."""
        if self.pid is not None:
            with contextlib.suppress(psutil.Error):
                return int(psutil.Process(self.pid).uids().real)
        return self.uid


class AgentChannel:
    def __init__(self, ctx: DaemonContext, guard: ConnectionGuard) -> None:
        self.ctx = ctx
        self.guard = guard
        self.server: asyncio.base_events.Server | None = None
        self.connections = 0
        self.requests = 0
        self.expired = 0
        self.hook_meter = HookMeter()
        """Hook evaluations answered here, and how long they took (agent/daemon/metrics.py)."""
        self._children: set[asyncio.Task[None]] = set()

    async def start(self, path: Path) -> None:
        self.server = await asyncio.start_unix_server(self._client, path=str(path), limit=MAX_LINE)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)
        for t in list(self._children):
            t.cancel()

    def serve_child(self, component: str, pid_of: Any) -> socket.socket:
        """A connected socketpair for a child about to be spawned: we serve one end,
        the child gets the other (returned; the caller passes and then closes it).
        ``pid_of()`` gives the child's pid once it runs."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)

        async def run() -> None:
            reader, writer = await asyncio.open_unix_connection(sock=ours, limit=MAX_LINE)
            peer = ChannelPeer("child", 0, None, component)
            peer.pid = pid_of()
            await self._serve(reader, writer, peer, pid_of)

        t = asyncio.get_running_loop().create_task(run(), name=f"channel-{component}")
        self._children.add(t)
        t.add_done_callback(self._children.discard)
        return theirs

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer_cred, why = self.guard.admit(writer.get_extra_info("socket"))
        if why is not None:
            writer.write(orjson.dumps({"id": None, "error": why}) + b"\n")
            # Read what the client already sent before closing: closing with
            # unread input would reset the connection and lose the error line.
            with contextlib.suppress(Exception):
                await writer.drain()
                await asyncio.wait_for(reader.read(1 << 16), 1.0)
            writer.close()
            return
        assert peer_cred is not None
        try:
            await self._serve(reader, writer, ChannelPeer("agent", peer_cred.uid, peer_cred.pid), None)
        finally:
            self.guard.release(peer_cred)

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: ChannelPeer, pid_of: Any
    ) -> None:
        self.connections += 1
        decide = self.ctx.mcp.decide
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    line = await reader.readline()
                except (asyncio.LimitOverrunError, ValueError):
                    writer.write(b'{"id":null,"error":"line too long"}\n')
                    break
                if not line:
                    break
                self.requests += 1
                if peer.role == "child" and peer.pid is None and pid_of is not None:
                    peer.pid = pid_of()
                rid = None
                res: dict[str, Any]
                try:
                    d = orjson.loads(line)
                    if not isinstance(d, dict):
                        raise BadInput("expected a JSON object")
                    rid = d.pop("id", None)
                    op = d.pop("op", "decide")
                    deadline = d.pop("deadline", None)
                    if isinstance(deadline, int | float) and time.time() > deadline:
                        # The caller stopped waiting (and decided offline): deciding
                        # now would log a decision that was never applied.
                        self.expired += 1
                        res = {"id": rid, "error": "expired: the deadline passed before the daemon got to it"}
                    elif op == "decide":
                        req = parse_decision_request(d, peer=peer if peer.role == "agent" else None)
                        hooks = self.ctx.hooks
                        if hooks is not None and hooks.must_settle(req):
                            # results of its flow session are in flight: decide once they are recorded
                            dl = deadline if isinstance(deadline, int | float) else None
                            t = asyncio.get_running_loop().create_task(self._decide_settled(writer, rid, req, dl))
                            tasks.add(t)
                            t.add_done_callback(tasks.discard)
                            continue
                        dec = decide(req)
                        if hooks is not None:
                            hooks.expect_result(req, dec)
                        res = {"id": rid, "decision": dec.to_json()}
                    elif op == "flow_record" and len(line) <= THREAD_BYTES and self.ctx.hooks is not None:
                        # small records inline: a record then a decision on one connection stay in order
                        res = {"id": rid, **self.ctx.hooks.record_now(d, peer)}
                    elif op in ("events", "hook", "flow_record"):
                        if op == "events":
                            coro = self._events(writer, rid, d, peer)
                        else:
                            dl = deadline if isinstance(deadline, int | float) else None
                            coro = self._flow_op(writer, rid, op, d, peer, len(line), dl)
                        t = asyncio.get_running_loop().create_task(coro)
                        tasks.add(t)
                        t.add_done_callback(tasks.discard)
                        continue
                    else:
                        res = {"id": rid, **self._simple(op, d, peer)}
                except (orjson.JSONDecodeError, BadInput) as e:
                    res = {"id": rid, "error": str(e)}
                except Exception as e:  # never take the channel down for one request
                    log.exception("channel request failed")
                    res = {"id": rid, "error": f"internal error: {e.__class__.__name__}"}
                writer.write(orjson.dumps(res, default=str) + b"\n")
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.connections -= 1
            for t in tasks:
                with contextlib.suppress(Exception):
                    await t
            writer.close()

    def _simple(self, op: str, d: dict[str, Any], peer: ChannelPeer) -> dict[str, Any]:
        ctx = self.ctx
        if op == "policy":
            lp = ctx.store.current
            return {"policy": lp.policy.model_dump(mode="json"), "hash": lp.hash}
        if op == "snapshot":
            since = d.get("since")
            snap = ctx.mcp.snapshot(ctx.store.current.hash)
            if since is not None and since == snap["version"]:
                return {"unchanged": True, "version": snap["version"]}
            if peer.role == "child" and ctx.selftests is not None:
                snap["selftest"] = ctx.selftests.proxy_view()
            return {"snapshot": snap}
        if op == "report":
            if peer.role != "child" or peer.component is None:
                raise BadInput("report is for the daemon's own components")
            state = d.get("state")
            if not isinstance(state, dict):
                raise BadInput("state (object) is required")
            ctx.supervisor.report(peer.component, state)
            return {"ok": True}
        raise BadInput(f"unknown op {op!r}")

    async def _decide_settled(
        self, writer: asyncio.StreamWriter, rid: Any, req: Any, deadline: float | None
    ) -> None:
        """A decision that first waits for its flow session's results in flight
        (agent/daemon/hooks.py ``must_settle``); answered when taken."""
        hooks = self.ctx.hooks
        try:
            await hooks.settle(req, deadline)
            if deadline is not None and time.time() > deadline:
                self.expired += 1
                res = {"id": rid, "error": "expired: the deadline passed before the daemon got to it"}
            else:
                dec = self.ctx.mcp.decide(req)
                hooks.expect_result(req, dec)
                res = {"id": rid, "decision": dec.to_json()}
        except Exception as e:
            log.exception("channel decide failed")
            res = {"id": rid, "error": f"internal error: {e.__class__.__name__}"}
        with contextlib.suppress(Exception):
            writer.write(orjson.dumps(res, default=str) + b"\n")

    async def _flow_op(
        self,
        writer: asyncio.StreamWriter,
        rid: Any,
        op: str,
        d: dict[str, Any],
        peer: ChannelPeer,
        size: int,
        deadline: float | None,
    ) -> None:
        hooks = self.ctx.hooks
        t0 = time.perf_counter()
        try:
            if hooks is None:
                raise BadInput(f"{op}: not available")
            if op == "hook":
                res = {"id": rid, **await hooks.handle(d, peer, size, deadline)}
            else:
                res = {"id": rid, **await hooks.record(d, peer, size)}
        except BadInput as e:
            res = {"id": rid, "error": str(e)}
        except Exception as e:
            log.exception("channel %s failed", op)
            res = {"id": rid, "error": f"internal error: {e.__class__.__name__}"}
        if op == "hook":
            self.hook_meter.observe(d, res, time.perf_counter() - t0)
        with contextlib.suppress(Exception):
            writer.write(orjson.dumps(res, default=str) + b"\n")

    async def _events(self, writer: asyncio.StreamWriter, rid: Any, d: dict[str, Any], peer: ChannelPeer) -> None:
        items = d.get("events")
        try:
            if not isinstance(items, list):
                raise BadInput('expected {"op": "events", "events": [...]}')
            if len(items) > MAX_EVENTS_PER_BATCH:
                raise BadInput(f"at most {MAX_EVENTS_PER_BATCH} events per request")
            if peer.role == "child":
                sources = frozenset({"proxy"}) if peer.component == "llm-proxy" else frozenset()
                adm = admit(items, peer.child_uid(), pid=peer.pid, sources=sources)
            else:
                adm = admit(items, peer.uid, pid=peer.pid, sources=frozenset(FOREIGN_TYPES))
            accepted = await hand_in(self.ctx.events, adm.events)
            res: dict[str, Any] = {
                "id": rid,
                "accepted": accepted,
                "rejected": adm.rejected,
                "dropped": len(adm.events) - accepted,
                "errors": adm.errors,
            }
        except BadInput as e:
            res = {"id": rid, "error": str(e)}
        except Exception as e:
            log.exception("channel events failed")
            res = {"id": rid, "error": f"internal error: {e.__class__.__name__}"}
        with contextlib.suppress(Exception):
            writer.write(orjson.dumps(res) + b"\n")
