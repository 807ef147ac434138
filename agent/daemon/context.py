"""What the daemon's parts share: one object handed to every API module."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.agent.daemon.health import HealthTracker

if TYPE_CHECKING:
    from agentsh.agent.core.events.writer import EventWriter
    from agentsh.agent.core.policy.store import PolicyStore
    from agentsh.agent.daemon.peercred import ConnectionGuard
    from agentsh.agent.daemon.shims import ShimTable
    from agentsh.agent.daemon.supervisor import Supervisor


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

    @property
    def admin_socket(self) -> Path:
        return self.socket.with_name(self.socket.stem + "-admin.sock")

    @property
    def channel_socket(self) -> Path:
        return self.socket.with_name(self.socket.stem + "-decide.sock")


@dataclass
class DaemonContext:
    paths: RuntimePaths
    store: PolicyStore
    events: EventWriter
    supervisor: Supervisor
    shims: ShimTable
    started_at: float = field(default_factory=time.time)
    mcp: Any = None
    """agentsh.agent.core.mcp.service.MCPService"""
    netmon: Any = None
    """agentsh.agent.netmon.monitor.NetworkMonitor (None when network.enabled is false)"""
    netmon_error: str | None = None
    status_sections: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    stopping: bool = False
    guards: dict[str, ConnectionGuard] = field(default_factory=dict)
    """Admission per socket (agent, channel, admin), for status."""
    health: HealthTracker = field(default_factory=HealthTracker)
    user_spools: dict[int, Path] = field(default_factory=dict)
    """Per-user spool directories shims announced (uid → dir), ingested like the main spool."""
    user_spools_add: Callable[[int, str], None] | None = None
    selftests: Any = None
    """agentsh.agent.daemon.selftest.Selftests: active selftest canaries."""
    hooks: Any = None
    """agentsh.agent.daemon.hooks.HookService: agent hooks and flow records."""
    metrics: Any = None
    """agentsh.agent.daemon.metrics.MetricsServer: the metrics listener (docs/operations.md "Monitoring")."""
