"""systemd notification protocol (sd_notify) without libsystemd.

No-ops when not started by systemd (no NOTIFY_SOCKET), so the daemon works the
same in a terminal.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self) -> None:
        addr = os.environ.get("NOTIFY_SOCKET")
        if addr and addr.startswith("@"):
            addr = "\0" + addr[1:]
        self._addr = addr
        self._sock: socket.socket | None = None
        if addr:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *fields: str) -> bool:
        if self._sock is None or self._addr is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self._addr)
            return True
        except OSError:
            return False

    def ready(self, status: str = "") -> None:
        self.notify("READY=1", f"MAINPID={os.getpid()}", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> None:
        self.notify(f"STATUS={text}")

    def stopping(self) -> None:
        self.notify("STOPPING=1")

    def reloading(self) -> None:
        self.notify("RELOADING=1")

    def watchdog(self) -> None:
        self.notify("WATCHDOG=1")

    @staticmethod
    def watchdog_interval() -> float | None:
        """Half the watchdog timeout systemd asked for, in seconds, or None."""
        usec = os.environ.get("WATCHDOG_USEC")
        pid = os.environ.get("WATCHDOG_PID")
        if not usec or (pid and pid != str(os.getpid())):
            return None
        try:
            return max(int(usec) / 2e6, 0.5)
        except ValueError:
            return None
