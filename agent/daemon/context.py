"""What the daemon's parts share: one object handed to every API module."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentsh.agent.daemon.shims import ShimTable
    from agentsh.agent.daemon.supervisor import Supervisor
    from agentsh.agent.events.writer import EventWriter
    from agentsh.agent.policy.store import PolicyStore


@dataclass
class RuntimePaths:
    config_dir: Path
    state_dir: Path
    run_dir: Path
    socket: Path
    events_path: Path

    @property
    def spool_dir(self) -> Path:
        return self.state_dir / "spool"


@dataclass
class DaemonContext:
    paths: RuntimePaths
    store: PolicyStore
    events: EventWriter
    supervisor: Supervisor
    shims: ShimTable
    started_at: float = field(default_factory=time.time)
    mcp: Any = None
    """agentsh.agent.mcp.service.MCPService"""
    netmon: Any = None
    """agentsh.agent.netmon.monitor.NetworkMonitor (None when network.enabled is false)"""
    netmon_error: str | None = None
    status_sections: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    stopping: bool = False
