"""The proxy's snapshot poller keeps its last good view when a snapshot cannot
be parsed: the error is counted and the polling goes on (an exception here
once ended the poller for good, and the offline decider stayed frozen)."""

from __future__ import annotations

from typing import Any

from agentsh.agent.core.mcp.offline import SnapshotDecider
from agentsh.agent.core.policy.schema import Policy
from agentsh.proxy.decider import NameGate, SnapshotPoller


class _Answers:
    """Stands in for the daemon's channel (a daemon never sends a malformed
    snapshot; this is what a corrupted or hostile one would look like)."""

    def __init__(self, snaps: list[dict[str, Any]]) -> None:
        self.snaps = snaps

    async def snapshot(self, since: str | None = None) -> dict[str, Any]:
        return {"snapshot": self.snaps.pop(0)}


async def test_a_snapshot_that_cannot_be_parsed_keeps_the_last_one_and_polling_goes_on() -> None:
    offline = SnapshotDecider(Policy())
    good = {"version": "v1", "tools": []}
    bad = {"version": "v2", "tools": [{"server_id": "s", "tool_name": "t", "detections": [{"severity": 5}]}]}
    later = {"version": "v3", "tools": []}
    poller = SnapshotPoller(_Answers([good, bad, later]), NameGate(), offline)
    assert await poller.refresh() is True
    assert (poller.version, offline.version) == ("v1", "v1")
    assert await poller.refresh() is False
    assert (poller.version, offline.version, poller.errors) == ("v1", "v1", 1)
    assert await poller.refresh() is True
    assert (poller.version, offline.version) == ("v3", "v3")
