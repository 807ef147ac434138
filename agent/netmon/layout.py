"""Every fact the BPF programs and the daemon share, defined once.

bpf/netmon.c defines none of these numbers itself: ``cflags()`` passes the
constants (actions, flags, record kinds, counter indexes, families, map sizes,
the pin directory) as ``-D`` flags, and for each struct the daemon reads or
writes, its size and every field's offset, size and signedness. The C file
refuses to compile when a constant is missing (``#error``) or a struct there
disagrees with its layout here (``_Static_assert``), so drift between the two
sides is a compile error, never a mis-decoded record (docs/network.md#layout).
"""

from __future__ import annotations

import re
import struct
from collections import namedtuple
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------- constants

ACT_ALLOW = 0
ACT_BLOCK = 1

F_EMIT = 1
"""watch_val.flags: write a ring-buffer record for matches."""

KIND_CONNECT = 0
KIND_SENDMSG = 1
KIND_TRACE = 2

STAT_LOST = 0
STAT_MATCHED = 1
STAT_BLOCKED = 2
STAT_TRACE_LOST = 3
STAT_MAX = 4

FAM_OTHER = 0
FAM_UNIX = 1
FAM_V4 = 4
FAM_V6 = 6
"""event.family: our codes (not AF_*), so the record says the socket's family plainly."""

TAG_DECLARED = 1
TAG_KNOWN_ENDPOINT = 2
TAG_REGISTRY = 3
TAG_SELFTEST = 4
TAG_NAMES = {
    TAG_DECLARED: "declared",
    TAG_KNOWN_ENDPOINT: "known_endpoint",
    TAG_REGISTRY: "registry",
    TAG_SELFTEST: "selftest",
}

WATCH_MAX_ENTRIES = 65536
EVENTS_RING_BYTES = 512 * 4096
TRACE_PENDING_MAX = 10240

# Map names: the C identifiers and the pin file names under network.pin_dir.
# A layout change takes a new suffix (docs/network.md#restart-semantics).
MAP_WATCH = "watch_v1"
MAP_STATS = "stats_v1"
MAP_META = "meta_v1"
MAP_EVENTS = "events_v1"
MAP_TRACE_CGROUP = "trace_cgroup"
PINNED_MAPS = (MAP_WATCH, MAP_STATS, MAP_META, MAP_EVENTS)

CONSTANTS: dict[str, int] = {
    "ACT_ALLOW": ACT_ALLOW,
    "ACT_BLOCK": ACT_BLOCK,
    "F_EMIT": F_EMIT,
    "KIND_CONNECT": KIND_CONNECT,
    "KIND_SENDMSG": KIND_SENDMSG,
    "KIND_TRACE": KIND_TRACE,
    "STAT_LOST": STAT_LOST,
    "STAT_MATCHED": STAT_MATCHED,
    "STAT_BLOCKED": STAT_BLOCKED,
    "STAT_TRACE_LOST": STAT_TRACE_LOST,
    "STAT_MAX": STAT_MAX,
    "FAM_OTHER": FAM_OTHER,
    "FAM_UNIX": FAM_UNIX,
    "FAM_V4": FAM_V4,
    "FAM_V6": FAM_V6,
    "WATCH_MAX_ENTRIES": WATCH_MAX_ENTRIES,
    "EVENTS_RING_BYTES": EVENTS_RING_BYTES,
    "TRACE_PENDING_MAX": TRACE_PENDING_MAX,
}
"""What bpf/netmon.c gets as ``-DNAME=value`` (it ``#error``s without each)."""

# ---------------------------------------------------------------- layouts

_SCALARS = {"B": (1, False), "b": (1, True), "H": (2, False), "h": (2, True),
            "I": (4, False), "i": (4, True), "Q": (8, False), "q": (8, True)}


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    code: str
    """``struct`` code: one scalar (B H I Q, signed b h i q) or ``<n>s`` for a byte array."""
    offset: int
    size: int
    signed: bool | None
    """None for byte arrays."""


class Layout:
    """One C struct, laid out by the C compiler's rules (natural alignment, or
    none when ``packed``), with a ``struct.Struct`` that reads and writes it
    whole (padding included) in host byte order."""

    def __init__(self, c_name: str, spec: Iterable[tuple[str, str]], packed: bool = False) -> None:
        self.c_name = c_name
        self.packed = packed
        fields: list[Field] = []
        fmt, off, max_align = "=", 0, 1
        for name, code in spec:
            if code in _SCALARS:
                size, signed = _SCALARS[code]
                align: int = size
            elif code.endswith("s") and code[:-1].isdigit():
                size, signed, align = int(code[:-1]), None, 1
            else:
                raise ValueError(f"{c_name}.{name}: unsupported field code {code!r}")
            if packed:
                align = 1
            pad = -off % align
            fmt += f"{pad}x" if pad else ""
            off += pad
            fields.append(Field(name, code, off, size, signed))
            fmt += code
            off += size
            max_align = max(max_align, align)
        tail = -off % max_align
        fmt += f"{tail}x" if tail else ""
        self.size = off + tail
        self.fields: dict[str, Field] = {f.name: f for f in fields}
        self.names = tuple(self.fields)
        self.struct = struct.Struct(fmt)
        if self.struct.size != self.size:  # pragma: no cover - a bug in this class
            raise AssertionError(f"{c_name}: struct {fmt!r} is {self.struct.size}, not {self.size}")
        # (rename: a C name like __syscall_nr becomes _1; those structs are never decoded here)
        # a namedtuple class made at run time from the C struct's field names: mypy
        # accepts only literal field lists (the decoded records are untyped tuples)
        self.record: Any = namedtuple(f"{c_name}_record", self.names, rename=True)  # type: ignore[misc]

    def unpack(self, raw: bytes) -> Any:
        """A namedtuple of the fields (``raw`` exactly ``size`` bytes)."""
        return self.record._make(self.struct.unpack(raw))

    def unpack_from(self, buf: Any, offset: int = 0) -> Any:
        return self.record._make(self.struct.unpack_from(buf, offset))

    def _values(self, values: Mapping[str, Any]) -> list[Any]:
        unknown = set(values) - set(self.fields)
        if unknown:
            raise ValueError(f"{self.c_name} has no field {', '.join(sorted(unknown))}")
        return [values.get(f.name, 0 if f.signed is not None else b"") for f in self.fields.values()]

    def pack(self, **values: Any) -> bytes:
        """Fields by name; omitted ones are zero."""
        return self.struct.pack(*self._values(values))

    def pack_into(self, buf: Any, offset: int = 0, **values: Any) -> None:
        self.struct.pack_into(buf, offset, *self._values(values))

    def cflags(self) -> list[str]:
        """``AGENTSH_SIZEOF_<struct>`` and ``AGENTSH_LAYOUT_<struct>``: one
        compile-time assertion per field (offset, size, and signedness of
        scalars), expanded in the C file after the struct's definition."""
        checks = []
        for f in self.fields.values():
            if f.signed is None:
                checks.append(f"AGENTSH_FIELD({self.c_name},{f.name},{f.offset},{f.size})")
            else:
                checks.append(
                    f"AGENTSH_SCALAR({self.c_name},{f.name},{f.offset},{f.size},{int(f.signed)})"
                )
        return [
            f"-DAGENTSH_SIZEOF_{self.c_name}={self.size}",
            f"-DAGENTSH_LAYOUT_{self.c_name}={' '.join(checks)}",
        ]

    def __repr__(self) -> str:
        return f"Layout({self.c_name}, size={self.size})"


WATCH_KEY = Layout(
    "watch_key",
    [("prefixlen", "I"), ("port", "H"), ("addr", "16s")],  # port in network order
    packed=True,
)
"""LPM key: prefixlen counts the port bits too, then the IPv6 address
(IPv4 as ::ffff:a.b.c.d). Port first so one key can say "this CIDR on this port"."""
WATCH_PORT_BITS = 8 * WATCH_KEY.fields["port"].size

WATCH_VAL = Layout(
    "watch_val", [("server_idx", "I"), ("tag", "H"), ("action", "B"), ("flags", "B")]
)

META_VAL = Layout("meta_val", [("cgroup_id", "Q"), ("cgroup_path", "248s")])

EVENT = Layout(
    "event",
    [
        ("cgroup_id", "Q"),
        ("tgid", "I"),
        ("tid", "I"),
        ("uid", "I"),
        ("server_idx", "I"),
        ("addr", "16s"),
        ("port", "H"),  # host order
        ("family", "B"),  # FAM_*
        ("protocol", "B"),
        ("action", "B"),
        ("kind", "B"),  # KIND_*
        ("tag", "H"),
        ("ret", "i"),
        ("comm", "16s"),
    ],
)
"""One ring-buffer record."""

# Syscall tracepoint arguments (trace_all), as the kernel's format files
# describe them on 64-bit architectures; checked against the running kernel's
# format before attaching (``tracepoint_mismatch``).
ENTER_CONNECT_ARGS = Layout(
    "enter_connect_args",
    [("common", "Q"), ("__syscall_nr", "i"), ("pad", "I"),
     ("fd", "Q"), ("uservaddr", "Q"), ("addrlen", "Q")],
)
EXIT_CONNECT_ARGS = Layout(
    "exit_connect_args", [("common", "Q"), ("__syscall_nr", "i"), ("pad", "I"), ("ret", "q")]
)
TRACEPOINT_FILLER = frozenset({"common", "pad"})
"""Layout fields that stand for the common header and padding, not format fields."""
TRACEPOINTS: dict[str, Layout] = {
    "syscalls/sys_enter_connect": ENTER_CONNECT_ARGS,
    "syscalls/sys_exit_connect": EXIT_CONNECT_ARGS,
}

STRUCTS = (WATCH_KEY, WATCH_VAL, META_VAL, EVENT, ENTER_CONNECT_ARGS, EXIT_CONNECT_ARGS)


@dataclass(frozen=True, slots=True)
class MapSpec:
    name: str
    type: int
    """enum bpf_map_type (UAPI)."""
    key_size: int
    value_size: int
    max_entries: int


BPF_MAP_TYPE_ARRAY = 2
BPF_MAP_TYPE_PERCPU_ARRAY = 6
BPF_MAP_TYPE_LPM_TRIE = 11
BPF_MAP_TYPE_RINGBUF = 27

MAPS = (
    MapSpec(MAP_WATCH, BPF_MAP_TYPE_LPM_TRIE, WATCH_KEY.size, WATCH_VAL.size, WATCH_MAX_ENTRIES),
    MapSpec(MAP_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, STAT_MAX),
    MapSpec(MAP_META, BPF_MAP_TYPE_ARRAY, 4, META_VAL.size, 1),
    MapSpec(MAP_EVENTS, BPF_MAP_TYPE_RINGBUF, 0, 0, EVENTS_RING_BYTES),
)
"""The pinned maps as the kernel must report them (checked after every compile,
so a pinned map left by an older layout is refused, not misread)."""


def cflags(
    pin_dir: str,
    *,
    trace_cgroup: bool = True,
    constants: Mapping[str, int] = CONSTANTS,
    structs: Iterable[Layout] = STRUCTS,
) -> list[str]:
    """Everything bpf/netmon.c needs from Python, as clang ``-D`` flags."""
    if any(c in '"\\' or ord(c) < 0x20 for c in pin_dir):
        raise ValueError(f"pin_dir {pin_dir!r} contains quotes, backslashes or control characters")
    out = [f'-DAGENTSH_PIN_DIR="{pin_dir}"', f"-DAGENTSH_TRACE_CGROUP={int(trace_cgroup)}"]
    out += [f"-D{k}={v}" for k, v in constants.items()]
    for s in structs:
        out += s.cflags()
    return out


# ---------------------------------------------------------------- tracepoint formats

_FORMAT_FIELD = re.compile(
    r"^\s*field:(?P<decl>[^;]+);\s*offset:(?P<off>\d+);\s*size:(?P<size>\d+);\s*signed:(?P<sgn>[01]);"
)


def parse_tracepoint_format(text: str) -> dict[str, tuple[int, int, bool]]:
    """``name -> (offset, size, signed)`` from a tracefs ``format`` file."""
    out: dict[str, tuple[int, int, bool]] = {}
    for line in text.splitlines():
        m = _FORMAT_FIELD.match(line)
        if m is None:
            continue
        name = re.split(r"[\s*]+", m["decl"].split("[", 1)[0].strip())[-1]
        out[name] = (int(m["off"]), int(m["size"]), m["sgn"] == "1")
    return out


def tracepoint_mismatch(layout: Layout, format_text: str) -> str | None:
    """Why the kernel's arguments for a tracepoint differ from ``layout``
    (None when every field the program may read is where it expects)."""
    fmt = parse_tracepoint_format(format_text)
    for f in layout.fields.values():
        if f.name in TRACEPOINT_FILLER:
            continue
        got = fmt.get(f.name)
        if got is None:
            return f"{layout.c_name}.{f.name}: not in the tracepoint format"
        if got != (f.offset, f.size, bool(f.signed)):
            return (
                f"{layout.c_name}.{f.name}: kernel has offset {got[0]} size {got[1]} "
                f"signed {int(got[2])}, expected offset {f.offset} size {f.size} "
                f"signed {int(bool(f.signed))}"
            )
    return None
