"""agentsh-shim: run one stdio MCP server under agentsh's inspection.

    agentsh-shim [--server-id ID] [--socket PATH] [--config-dir DIR]
                 [--state-dir DIR] -- CMD [ARGS...]

Spawns CMD, relays stdin/stdout byte-for-byte (shim/relay.py), passes stderr
through (the server inherits it), forwards signals and exits with the
server's exit status (128+N when a signal N killed it; 127/126 when CMD
cannot be found/executed). Threads: two relay threads (one per direction)
and the main thread's asyncio loop, which owns the daemon link, the
signal handlers and the wait for the child. See docs/shim.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import click

from agentsh.agent.core.api_models import ShimHeartbeat, ShimRegister
from agentsh.agent.core.client_sync import cap_decision_request, default_socket
from agentsh.agent.core.events.models import ProtocolError, ShimExited, ShimRegistered
from agentsh.agent.core.mcp.offline import LocalDecider, event_json, load_policy
from agentsh.agent.core.mcp.serverid import server_id_for
from agentsh.agent.core.mcp.types import Decision, DecisionRequest
from agentsh.agent.core.vocab import SEVERITY_RANK as _RANK
from agentsh.shim.daemon_link import (
    DaemonLink,
    FlowRecords,
    LinkDown,
    bounded_arguments,
    mcp_result_content,
)
from agentsh.shim.inspector import MessageInspector
from agentsh.shim.relay import Output, RelayStats, grow_pipe, pump_client, pump_server
from agentsh.shim.spool import Spool, spool_dir

log = logging.getLogger("agentsh.shim")

DEFAULT_CONFIG_DIR = "/etc/agentsh"
DEFAULT_STATE_DIR = "/var/lib/agentsh"
DECIDE_TIMEOUT = 5.0
"""Seconds a tools/call waits for the daemon before the local decision applies."""
REGISTER_TIMEOUT = 5.0
"""Seconds a tools/list response waits for the daemon's verdicts before local ones apply."""
DRAIN_TIMEOUT = 5.0
"""After the server exits: how long to wait for the rest of its output."""
FORWARDED_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGWINCH,
)
PR_SET_PDEATHSIG = 1

try:
    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _LIBC = None


def _child_setup() -> None:
    """In the child before exec: die with the shim (SIGKILL of the shim leaves no orphan)."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class ShimOptions:
    command: list[str]
    server_id: str | None = None
    socket: str | None = None
    config_dir: str | None = None
    state_dir: str | None = None

    def resolved(self) -> ShimOptions:
        return ShimOptions(
            command=self.command,
            server_id=self.server_id,
            socket=self.socket or default_socket(),
            config_dir=self.config_dir or os.environ.get("AGENTSH_CONFIG_DIR", DEFAULT_CONFIG_DIR),
            state_dir=self.state_dir or os.environ.get("AGENTSH_STATE_DIR", DEFAULT_STATE_DIR),
        )


class Shim:
    """One shim process: the Gate for the inspector plus the process lifecycle."""

    def __init__(self, opts: ShimOptions) -> None:
        self.opts = opts.resolved()
        self.command = list(self.opts.command)
        self.pid = os.getpid()
        self.session_id = os.environ.get("AGENTSH_SESSION_ID") or None
        # The agent's session when it says (Claude Code sets it for its MCP
        # servers): decisions and records then join its flow session directly.
        cc = os.environ.get("CLAUDE_CODE_SESSION_ID") or ""
        self.flow_session = cc if 0 < len(cc) <= 256 else None
        self.loaded, self.policy_error = load_policy(self.opts.config_dir or DEFAULT_CONFIG_DIR)
        if self.policy_error:
            log.warning("policy in %s not usable (%s); using the embedded default",
                        self.opts.config_dir, self.policy_error)
        self.server_id = server_id_for(
            self.command[0], self.command[1:], self.loaded.policy.mcp, self.opts.server_id
        )
        self.spool = Spool(spool_dir(self.opts.state_dir or DEFAULT_STATE_DIR))
        self.link = DaemonLink(
            self.opts.socket or default_socket(),
            self.spool,
            self._register_payload,
            self._heartbeat_payload,
            self._resend_tools,
        )
        self.local = LocalDecider(self.loaded, self.link.emit, self.server_id, self.session_id, self.pid,
                                  flow_session=self.flow_session)
        self.flow_records = FlowRecords(self.link, self.opts.socket or default_socket(), self._flow_record)
        self.inspector = MessageInspector(self)
        self.stats = RelayStats()
        self.known_tools: dict[str, dict[str, Any]] = {}
        self._tools_lock = threading.Lock()
        self._local_synced = False
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._reported_invalid = 0
        self._reported_oversized = 0
        self.last_offline_at: float | None = None
        self._result_detector: Any = None

    # ------------------------------------------------------------------ Gate

    def decide_call(self, name: str, arguments: Any, jsonrpc_id: Any) -> tuple[bool, str]:
        req = DecisionRequest(
            tool_name=name,
            server_id=self.server_id,
            arguments=arguments,
            source="shim",
            session_id=self.session_id,
            jsonrpc_id=jsonrpc_id,
            pid=self.pid,
            flow_session=self.flow_session,
        )
        d: Decision | None = None
        if self.link.up:
            try:
                res = self.link.decide(req.to_json(), DECIDE_TIMEOUT)
                if isinstance(res, dict) and "action" in res:
                    d = Decision.from_json(res)
            except LinkDown:
                d = None
        if d is None:
            self._sync_local()
            self.last_offline_at = time.time()
            # the same bound the daemon link applies: a deep/huge argument value
            # (lenient_json reads 5,000 levels) must not break the decision event
            local_args = cap_decision_request({"arguments": arguments})["arguments"]
            d = self.local.decide(name, local_args, jsonrpc_id)
        return (not d.blocked), d.reason

    def review_tools(self, tools: list[dict[str, Any]], complete: bool) -> set[str]:
        with self._tools_lock:
            if complete:
                self.known_tools = {}
            for t in tools:
                self.known_tools[t["name"]] = t
        verdicts: list[dict[str, Any]] | None = None
        if self.link.up:
            try:
                res = self.link.call("/v1/mcp/tools", self._tools_payload(tools, complete),
                                     REGISTER_TIMEOUT)
                verdicts = _verdicts_of(res)
                self._local_synced = False
            except LinkDown:
                verdicts = None
        if verdicts is None:
            self._sync_local(skip_current=True)
            verdicts = self.local.register_tools(tools, complete)
        return {v["name"] for v in verdicts if v.get("blocked") and isinstance(v.get("name"), str)}

    def server_info(self, name: str | None, version: str | None) -> None:
        self.server_name, self.server_version = name, version

    def tools_changed(self) -> None:
        log.info("server %s announced tools/list_changed", self.server_id)

    def tool_result(self, name: str, call_id: Any, result: Any) -> str | None:
        """Indirect prompt injection in the result of an allowed tools/call, before
        the client gets it (docs/mcp.md "Tool results"): an ``mcp_result_injection``
        event; with ``results.action: block`` the result is withheld (the returned
        text becomes the client's JSON-RPC error)."""
        insp = self.loaded.policy.mcp.inspection
        cfg = insp.results
        if not (insp.enabled and cfg.enabled):
            return None
        from agentsh.agent.core.mcp.detect_results import check_result

        if self._result_detector is None:
            from agentsh.agent.core.mcp.detector import Detector

            self._result_detector = Detector(insp.detection)
        try:
            v = check_result(
                self._result_detector, result, server_id=self.server_id, tool_name=name, cfg=cfg,
                call_id=None if call_id is None else str(call_id), source="shim",
                threshold=insp.detection.alert_threshold,
            )
        except Exception:  # a scanner bug must not cost the result
            log.exception("scanning the result of %r failed", name)
            return None
        if v.event is None:
            return None
        ev = v.event.model_copy(update={"session_id": self.session_id, "pid": self.pid})
        self.link.emit(event_json(ev))
        if not v.block:
            return None
        # categories only: the model must not read the attacker's words here
        cats = sorted({d.category for d in v.detections if _RANK.get(d.severity, 0) >= 2})
        return f"[agentsh] Tool result of '{name}' withheld: possible prompt injection ({', '.join(cats)})"

    def tool_call_done(self, name: str, call_id: Any, arguments: Any, result: Any, error: Any) -> None:
        """An allowed tools/call's result (or error) is on its way to the client:
        hand it to the daemon as a data origin, off the relay path (docs/flow.md "Modes")."""
        self.flow_records.submit((name, call_id, arguments, result, error))

    def _flow_record(self, item: tuple[str, Any, Any, Any, Any]) -> dict[str, Any]:
        """The ``flow_record`` message of one outcome (on the recorder's thread)."""
        name, call_id, arguments, result, error = item
        budget = self.loaded.policy.flow.flow_tracking.max_response_hash_bytes
        msg: dict[str, Any] = {
            "op": "flow_record",
            "source": "shim",
            "server_id": self.server_id,
            "tool_name": name,
            "content": mcp_result_content(result if error is None else {"error": error}, budget),
            "call_id": call_id,
            "pid": self.pid,
        }
        args = bounded_arguments(arguments)
        if args is not None:
            msg["arguments"] = args
        if self.session_id:
            msg["session_id"] = self.session_id
        if self.flow_session:
            msg["flow_session"] = self.flow_session
        return msg

    # ------------------------------------------------------------------ helpers

    def _sync_local(self, skip_current: bool = False) -> None:
        """Going local after deciding with the daemon: teach the local registry the
        tools already listed (quietly: the daemon has reported them)."""
        if self._local_synced:
            return
        self._local_synced = True
        with self._tools_lock:
            tools = list(self.known_tools.values())
        if tools and not skip_current:
            self.local.register_tools(tools, complete=True, quiet=True)

    def _tools_payload(self, tools: list[dict[str, Any]], complete: bool) -> dict[str, Any]:
        p: dict[str, Any] = {
            "server_id": self.server_id,
            "server_type": "stdio",
            "tools": tools,
            "complete": complete,
            "source": "shim",
            "pid": self.pid,
        }
        if self.session_id:
            p["session_id"] = self.session_id
        return p

    async def _resend_tools(self) -> None:
        with self._tools_lock:
            tools = list(self.known_tools.values())
        self._local_synced = False
        if tools:
            await self.link.post("/v1/mcp/tools", self._tools_payload(tools, True), REGISTER_TIMEOUT)

    def _register_payload(self) -> ShimRegister:
        return ShimRegister(server_id=self.server_id, pid=self.pid, command=self.command,
                            spool_dir=str(self.spool.dir), session_id=self.session_id or None)

    def _heartbeat_payload(self) -> ShimHeartbeat:
        s = self.inspector.stats
        last = self.last_offline_at
        if self.link.spooled_at is not None and (last is None or self.link.spooled_at > last):
            last = self.link.spooled_at
        return ShimHeartbeat(
            tools=s.tools,
            calls=s.calls,
            blocks=s.blocks,
            offline_decisions=self.local.decisions,
            spooled=self.spool.written,
            last_offline_at=last,
            hidden=s.hidden,  # these and calls/blocks: cumulative, for the daemon's /metrics
            refused=sum(s.invalid.values()) + sum(s.oversized.values()),
        )

    def _report_protocol_errors(self) -> None:
        s = self.inspector.stats
        invalid = s.invalid["client"] + s.invalid["server"]
        oversized = s.oversized["client"] + s.oversized["server"]
        d_inv, d_over = invalid - self._reported_invalid, oversized - self._reported_oversized
        if d_inv > 0:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(s.invalid_reasons.items()))
            self.link.emit(event_json(ProtocolError(
                source="shim", layer="shim", server_id=self.server_id, pid=self.pid,
                session_id=self.session_id, count=d_inv,
                detail=(f"{d_inv} message(s) refused, not forwarded "
                        f"(client total {s.invalid['client']}, server total {s.invalid['server']}; "
                        f"{reasons})"),
            )))
            self._reported_invalid = invalid
        if d_over > 0:
            self.link.emit(event_json(ProtocolError(
                source="shim", layer="shim", server_id=self.server_id, pid=self.pid,
                session_id=self.session_id, count=d_over,
                detail=f"{d_over} oversized line(s) refused, not forwarded",
            )))
            self._reported_oversized = oversized

    # ------------------------------------------------------------------ lifecycle

    def spawn(self) -> int | None:
        """Start the server; returns an exit code when it cannot be started."""
        c2s_r, self.c2s_w = os.pipe()
        self.s2c_r, s2c_w = os.pipe()
        for fd in (c2s_r, s2c_w):
            grow_pipe(fd)
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=c2s_r,
                stdout=s2c_w,
                stderr=None,
                close_fds=True,
                preexec_fn=_child_setup,  # threads start after the spawn
            )
        except FileNotFoundError:
            click.echo(f"agentsh-shim: {self.command[0]}: command not found", err=True)
            return 127
        except PermissionError:
            click.echo(f"agentsh-shim: {self.command[0]}: permission denied", err=True)
            return 126
        except OSError as e:
            click.echo(f"agentsh-shim: {self.command[0]}: {e}", err=True)
            return 126
        finally:
            os.close(c2s_r)
            os.close(s2c_w)
        return None

    def _forward(self, sig: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in FORWARDED_SIGNALS:
            loop.add_signal_handler(sig, self._forward, sig)
        if not await self.link.start():
            self.link.emit(event_json(ShimRegistered(
                source="shim", server_id=self.server_id, command=self.command, pid=self.pid,
                uid=os.getuid(), session_id=self.session_id,
            )))
        out = Output(1)

        def client_eof() -> None:
            with contextlib.suppress(OSError):
                os.close(self.c2s_w)

        t_c2s = threading.Thread(
            target=pump_client, name="shim-c2s", daemon=True,
            args=(0, self.c2s_w, out, self.inspector, self.stats, client_eof),
        )
        t_s2c = threading.Thread(
            target=pump_server, name="shim-s2c", daemon=True,
            args=(self.s2c_r, out, self.inspector, self.stats),
        )
        t_c2s.start()
        t_s2c.start()

        async def reporter() -> None:
            while True:
                await asyncio.sleep(self.link.heartbeat_seconds)
                self._report_protocol_errors()

        rep = asyncio.create_task(reporter())
        assert self.proc is not None
        rc = await loop.run_in_executor(None, self.proc.wait)
        await loop.run_in_executor(None, t_s2c.join, DRAIN_TIMEOUT)
        rep.cancel()
        code = 128 - rc if rc < 0 else rc
        self._report_protocol_errors()
        if not self.link.up:
            s = self.inspector.stats
            self.link.emit(event_json(ShimExited(
                source="shim", server_id=self.server_id, exit_code=code, calls=s.calls,
                blocks=s.blocks, pid=self.pid, session_id=self.session_id,
            )))
        await self.link.close(code)
        return code


def _verdicts_of(res: Any) -> list[dict[str, Any]] | None:
    if isinstance(res, dict):
        res = res.get("tools", res.get("verdicts"))
    if isinstance(res, list):
        return [v for v in res if isinstance(v, dict)]
    return None


def run(opts: ShimOptions) -> int:
    shim = Shim(opts)
    failed = shim.spawn()
    if failed is not None:
        return failed
    return asyncio.run(shim.main())


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                      "help_option_names": ["-h", "--help"]}
)
@click.option("--server-id", help="Server id (default: declared stdio server, else derived).")
@click.option("--socket", "socket_path", help="agentshd socket (env AGENTSH_SOCKET).")
@click.option("--config-dir", help="Policy directory for offline decisions (env AGENTSH_CONFIG_DIR).")
@click.option("--state-dir", help="State directory; events spool under spool/ (env AGENTSH_STATE_DIR).")
@click.option("-v", "--verbose", count=True, help="Log to stderr (-v info, -vv debug).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def main(
    server_id: str | None,
    socket_path: str | None,
    config_dir: str | None,
    state_dir: str | None,
    verbose: int,
    command: tuple[str, ...],
) -> None:
    """Run an MCP stdio server under agentsh: agentsh-shim [OPTIONS] -- CMD [ARGS...]"""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    from agentsh.agent.core.logfmt import setup as setup_logging

    setup_logging("agentsh-shim", level)
    code = run(ShimOptions(list(command), server_id, socket_path, config_dir, state_dir))
    sys.stdout.flush()
    os._exit(code)  # relay threads may sit in a read of a client that never closes stdin


if __name__ == "__main__":  # pragma: no cover
    main()
