"""Every administrative act is an event with the caller's credentials.

The admin socket is the only way to lower enforcement (approve a flagged or
changed tool, reload policy, detach BPF, ...). ``audit`` writes one
``admin_action`` per act with who did it — uid, pid, executable and user
name from SO_PEERCRED, never from the request body — and what changed.
"""

from __future__ import annotations

import pwd
from typing import Any

from agentsh.agent.core.events.models import AdminAction


def peer_name(peer: Any) -> str:
    if peer is None:
        return "unknown"
    try:
        return pwd.getpwuid(peer.uid).pw_name
    except KeyError:
        return f"uid:{peer.uid}"


def audit(ctx: Any, request: Any, action: str, outcome: str = "ok", **detail: Any) -> None:
    peer = request.get("peer")
    ctx.events.emit(
        AdminAction(
            action=action,
            outcome=outcome,  # type: ignore[arg-type]
            detail=detail,
            uid=peer.uid if peer else None,
            pid=peer.pid if peer else None,
            exe=peer.exe() if peer else None,
            username=peer_name(peer) if peer else None,
        )
    )
