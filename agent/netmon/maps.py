"""The watch map: what the kernel checks on every connect()/sendmsg().

Keys are (port, address prefix) in an LPM trie; IPv4 is stored as IPv4-mapped
IPv6 so a v4-mapped connect on an AF_INET6 socket matches the same entry.
Port 0 means "any port" (the kernel looks up the real port first, then 0).

The key and value layouts are ``layout.WATCH_KEY`` / ``layout.WATCH_VAL``,
which bpf/netmon.c is compiled against (docs/network.md#layout).

``WatchMap.sync`` makes the map equal to a desired set by updating changed and
new entries first and deleting stale ones last, so an entry that stays blocked
is never absent, not even for a moment.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Any

from agentsh.agent.netmon.layout import (
    ACT_ALLOW,
    ACT_BLOCK,
    F_EMIT,
    TAG_DECLARED,
    TAG_KNOWN_ENDPOINT,
    TAG_NAMES,
    TAG_REGISTRY,
    TAG_SELFTEST,
    WATCH_KEY,
    WATCH_PORT_BITS,
    WATCH_VAL,
)

__all__ = [
    "ACT_ALLOW",
    "ACT_BLOCK",
    "F_EMIT",
    "TAG_DECLARED",
    "TAG_KNOWN_ENDPOINT",
    "TAG_NAMES",
    "TAG_REGISTRY",
    "TAG_SELFTEST",
    "Net",
    "WatchKey",
    "WatchMap",
    "WatchVal",
]

_V4MAPPED = b"\0" * 10 + b"\xff\xff"

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class WatchKey:
    net: Net
    port: int  # 0 = any

    def encode(self) -> bytes:
        if self.net.version == 4:
            addr = _V4MAPPED + self.net.network_address.packed
            plen = 96 + self.net.prefixlen
        else:
            addr = self.net.network_address.packed
            plen = self.net.prefixlen
        return WATCH_KEY.pack(
            prefixlen=WATCH_PORT_BITS + plen, port=_hton16(self.port), addr=addr
        )

    @classmethod
    def decode(cls, raw: bytes) -> WatchKey:
        k = WATCH_KEY.unpack(raw)
        plen, addr = k.prefixlen - WATCH_PORT_BITS, k.addr
        if addr[:12] == _V4MAPPED and plen >= 96:
            net: Net = ipaddress.IPv4Network((addr[12:], plen - 96), strict=False)
        else:
            net = ipaddress.IPv6Network((addr, plen), strict=False)
        return cls(net, _hton16(k.port))

    def __str__(self) -> str:
        host = str(self.net.network_address) if self.net.num_addresses == 1 else str(self.net)
        if self.net.version == 6:
            host = f"[{host}]"
        return f"{host}:{self.port or '*'}"


@dataclass(frozen=True, slots=True)
class WatchVal:
    server_idx: int
    tag: int
    action: int
    flags: int

    def encode(self) -> bytes:
        return WATCH_VAL.pack(
            server_idx=self.server_idx, tag=self.tag, action=self.action, flags=self.flags
        )

    @classmethod
    def decode(cls, raw: bytes) -> WatchVal:
        v = WATCH_VAL.unpack(raw)
        return cls(server_idx=v.server_idx, tag=v.tag, action=v.action, flags=v.flags)


def _hton16(v: int) -> int:
    return ((v & 0xFF) << 8) | (v >> 8)


class WatchMap:
    """Mirror of the pinned LPM trie; reads the kernel's copy once, then diffs."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.current: dict[WatchKey, WatchVal] = {}
        self.errors = 0
        for k, v in list(table.items()):
            try:
                self.current[WatchKey.decode(bytes(k))] = WatchVal.decode(bytes(v))
            except (ValueError, struct.error):
                self.errors += 1

    def _kv(self, k: WatchKey, v: WatchVal | None = None) -> tuple[Any, Any]:
        key = self.table.Key.from_buffer_copy(k.encode())
        val = self.table.Leaf.from_buffer_copy(v.encode()) if v is not None else None
        return key, val

    def sync(self, desired: dict[WatchKey, WatchVal]) -> tuple[int, int]:
        """Make the map equal ``desired``; returns (updated, deleted)."""
        updated = deleted = 0
        for k, v in desired.items():
            if self.current.get(k) != v:
                key, val = self._kv(k, v)
                self.table[key] = val
                self.current[k] = v
                updated += 1
        for k in [k for k in self.current if k not in desired]:
            key, _ = self._kv(k)
            try:
                del self.table[key]
            except KeyError:
                pass
            del self.current[k]
            deleted += 1
        return updated, deleted

    def __len__(self) -> int:
        return len(self.current)
