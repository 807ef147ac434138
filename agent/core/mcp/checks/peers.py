"""Names that impersonate or collide with other servers' tools.

Orders *about* a peer tool are judged by the directive check (a peer is one
of the objects an order can have). What is left here is the name itself: a
tool whose name folds to a peer's (``read_file`` spelled with Cyrillic letters), or a
server whose id folds to a peer's server, is impersonation; the same name on another server with a copied description is
a likely clone; a plain mention of a peer is a low note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentsh.agent.core.mcp.checks import CheckContext, Finding
from agentsh.agent.core.mcp.detect_parse import ParsedTool
from agentsh.agent.core.mcp.detect_text import prepare

_WORDS = re.compile(r"[a-z0-9]+")


def similarity(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a)), set(_WORDS.findall(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


class PeerCheck:
    """See module docstring."""

    name = "peers"

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        if not tool.peers or not tool.name:
            return
        own = tool.name
        own_l = own.lower()
        own_folded = prepare(own).lower
        desc = tool.description
        desc_lower = desc.lower if desc is not None else ""
        srv = tool.server or ""
        srv_folded = prepare(srv).lower if srv and not srv.isascii() else ""
        if srv_folded and srv_folded != srv.lower():
            # this server's own id spelled with look-alike letters of another script to pass for a
            # server whose tools are listed too ("github" written with a Cyrillic i, beside github)
            twin = next((p for p in tool.peers.values() if p.server and p.server.lower() == srv_folded), None)
            if twin is not None:
                yield Finding("shadowing", "critical", "impersonates_peer_server", "name", own, 0,
                              f"{srv} ~ {twin.server}",
                              f"server id {srv!r} is written with look-alike characters to pass for "
                              f"{twin.server!r}")  # fmt: skip
        for pl, peer in tool.peers.items():
            if own_l != own_folded and pl == own_folded:
                yield Finding("shadowing", "critical", "impersonates_peer_tool", "name", own, 0,
                              f"{own} ~ {peer.name}",
                              f"name {own!r} is written with look-alike characters to pass for "
                              f"{peer.name!r} of {peer.server or 'another server'}")  # fmt: skip
            elif pl == own_l:
                sim = similarity(desc_lower, prepare(peer.description).lower)
                sev = "high" if sim >= 0.5 else "medium"
                yield Finding("shadowing", sev, "peer_name_collision", "name", own, 0,
                              f"{own} (description similarity {sim:.2f})",
                              f"same name as a tool of {peer.server or 'another server'}"
                              f" (description similarity {sim:.2f})")  # fmt: skip
            elif desc is not None and len(pl) >= 3 and pl in desc_lower:
                m = re.search(r"(?<![\w-])" + re.escape(pl) + r"(?![\w-])", desc_lower)
                if m is not None:
                    s, e = desc.orig_span(m.start(), m.end())
                    yield Finding("shadowing", "low", "peer_tool_reference", "description",
                                  desc.raw[s:e], s, desc.raw[max(0, s - 50) : e + 50],
                                  f"mentions {peer.name!r} of {peer.server or 'another server'}")
