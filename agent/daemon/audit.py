"""Every administrative act is an event with the caller's credentials.

The admin socket is the only way to lower enforcement (approve a flagged or
changed tool, reload policy, detach BPF, ...). ``audit`` writes one
``admin_action`` per act with who did it — uid, pid, executable and user
name from SO_PEERCRED, never from the request body — and what changed.
"""

from __future__ import annotations

import pwd
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

from agentsh.agent.core.events.models import AdminAction
from agentsh.agent.daemon.peercred import PeerCred

if TYPE_CHECKING:
    from agentsh.agent.daemon.context import DaemonContext


def peer_name(peer: PeerCred | None) -> str:
    if peer is None:
        return "unknown"
    try:
        return pwd.getpwuid(peer.uid).pw_name
    except KeyError:
        return f"uid:{peer.uid}"


def audit(
    ctx: DaemonContext,
    request: web.Request,
    action: str,
    outcome: Literal["ok", "rejected", "error"] = "ok",  # AdminAction.outcome (mypy checks they agree)
    **detail: Any,  # JSON values: AdminAction.detail
) -> None:
    peer: PeerCred | None = request.get("peer")
    ctx.events.emit(
        AdminAction(
            action=action,
            outcome=outcome,
            detail=detail,
            uid=peer.uid if peer else None,
            pid=peer.pid if peer else None,
            exe=peer.exe() if peer else None,
            username=peer_name(peer) if peer else None,
        )
    )
