"""Why the BPF layer cannot run here, with the fix an operator can apply."""

from __future__ import annotations


class BPFUnavailable(Exception):
    """Raised while starting the BPF layer; the daemon keeps running without it."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.reason} (fix: {self.fix})" if self.fix else self.reason
