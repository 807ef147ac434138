"""What the daemon's parts share: one object handed to every API module.

Typed throughout (no ``Any``): the parts that need the context to be built
(hooks, selftests, metrics) are imported for type checking only, so there is
no import cycle at run time; the first two are set by ``Daemon.run`` before
any socket listens (``field(init=False)``), metrics right after.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.agent.daemon.health import HealthTracker

if TYPE_CHECKING:
    from agentsh.agent.core.events.writer import EventWriter
    from agentsh.agent.core.mcp.service import MCPService
    from agentsh.agent.core.policy.store import PolicyStore
    from agentsh.agent.daemon.hooks import HookService
    from agentsh.agent.daemon.metrics import MetricsServer
    from agentsh.agent.daemon.peercred import ConnectionGuard
    from agentsh.agent.daemon.selftest import Selftests
    from agentsh.agent.daemon.shims import ShimTable
    from agentsh.agent.daemon.supervisor import Supervisor
    from agentsh.agent.netmon.monitor import NetworkMonitor


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
    mcp: MCPService
    started_at: float = field(default_factory=time.time)
    netmon: NetworkMonitor | None = None
    """None when network.enabled is false or the BPF layer could not load."""
    netmon_error: str | None = None
    status_sections: dict[str, Callable[[], dict[str, object]]] = field(default_factory=dict)
    stopping: bool = False
    guards: dict[str, ConnectionGuard] = field(default_factory=dict)
    """Admission per socket (agent, channel, admin), for status."""
    health: HealthTracker = field(default_factory=HealthTracker)
    user_spools: dict[int, Path] = field(default_factory=dict)
    """Per-user spool directories shims announced (uid → dir), ingested like the main spool."""
    user_spools_add: Callable[[int, str], None] | None = None
    selftests: Selftests = field(init=False)
    """Active selftest canaries."""
    hooks: HookService = field(init=False)
    """Agent hooks and flow records."""
    metrics: MetricsServer | None = None
    """The metrics listener (docs/operations.md "Monitoring"); set once the sockets listen."""
