"""Compile, load, attach and replace the BPF programs in bpf/netmon.c.

Lifecycle (why it looks like this):

* The C source is compiled once per daemon start (BCC, ~1 s). Its maps are
  pinned under ``pin_dir``; when pins exist BCC reuses those maps, so a new
  instance sees the entries the previous one wrote and enforcement never has
  an empty map.
* The cgroup programs are attached with the legacy ``BPF_PROG_ATTACH``
  (``BPF_F_ALLOW_MULTI``), which keeps them attached after the loading process
  exits. A later instance finds its predecessor's programs in the cgroup by
  name (``BPF_PROG_QUERY``) and swaps each for the new one in a single
  ``BPF_F_REPLACE`` attach: there is no instant with no program attached.
* The trace_all tracepoints are perf-event attachments that end with the
  process; that is fine for an audit log (not enforcement).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsh.agent.netmon import bpfsys, layout
from agentsh.agent.netmon.cgroup import cgroup_id, ensure_tracefs, open_dir
from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.layout import META_VAL

SOURCE = Path(__file__).resolve().parents[2] / "bpf" / "netmon.c"

# function name -> attach type; names double as the kernel prog names we look for
CGROUP_PROGS: dict[str, int] = {
    "agentsh_c4": bpfsys.CGROUP_INET4_CONNECT,
    "agentsh_c6": bpfsys.CGROUP_INET6_CONNECT,
    "agentsh_s4": bpfsys.CGROUP_UDP4_SENDMSG,
    "agentsh_s6": bpfsys.CGROUP_UDP6_SENDMSG,
}
TRACE_PROGS = {  # tracepoint -> function
    "syscalls:sys_enter_connect": "agentsh_tenter",
    "syscalls:sys_exit_connect": "agentsh_texit",
}

_CAP_SYS_ADMIN = 21
_CAP_PERFMON = 38
_CAP_BPF = 39
_CAP_NET_ADMIN = 12


def _source_path() -> Path:
    if SOURCE.exists():
        return SOURCE
    # installed (non-editable) layout: agentsh/bpf next to agentsh/agent
    import agentsh.bpf

    return Path(agentsh.bpf.__file__).parent / "netmon.c"


def effective_caps() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def check_prerequisites() -> None:
    """Raise BPFUnavailable with a fix for the first missing prerequisite."""
    bpfsys.arch()
    caps = effective_caps()
    has_bpf = bool(caps & (1 << _CAP_BPF)) or bool(caps & (1 << _CAP_SYS_ADMIN))
    if not has_bpf:
        raise BPFUnavailable(
            "missing CAP_BPF/CAP_SYS_ADMIN", "run agentshd as root (the systemd unit does)"
        )
    if not caps & (1 << _CAP_NET_ADMIN) and not caps & (1 << _CAP_SYS_ADMIN):
        raise BPFUnavailable(
            "missing CAP_NET_ADMIN (needed for cgroup sock_addr programs)", "run agentshd as root"
        )
    bcc = import_bcc()
    del bcc
    build = f"/lib/modules/{platform.release()}/build"
    if not os.path.exists(os.path.join(build, "include")):
        raise BPFUnavailable(
            f"kernel headers missing at {build}",
            "run `make setup` (installs linux-headers and links them for BCC)",
        )


def import_bcc() -> Any:
    try:
        import bcc
    except ImportError as e:
        raise BPFUnavailable(
            "BCC Python bindings not importable",
            "apt-get install python3-bpfcc, and use a venv made with "
            "--system-site-packages (`make setup` does both)",
        ) from e
    if not hasattr(bcc, "BPF"):
        raise BPFUnavailable(
            f"`import bcc` found an unrelated package at {getattr(bcc, '__file__', '?')}",
            "pip uninstall bcc (the PyPI 'bcc' is not BCC); use Debian's python3-bpfcc",
        )
    return bcc


@dataclass
class Attachment:
    attach_type: str
    prog_id: int
    replaced: int | None = None
    """The previous instance's program id that this one replaced atomically."""


@dataclass
class Programs:
    pin_dir: str
    cgroup_dir: str
    bpf: Any = None
    fns: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    trace_attached: bool = False
    compile_seconds: float = 0.0

    # ------------------------------------------------------------------ build

    def compile(self) -> None:
        import time

        bpfsys.arch()
        bcc = import_bcc()
        try:
            cflags = compile_flags(self.pin_dir)
        except ValueError as e:
            raise BPFUnavailable(str(e), "use a plain path") from e
        t0 = time.monotonic()
        try:
            self.bpf = bcc.BPF(src_file=str(_source_path()).encode(), cflags=cflags)
        except Exception as e:
            raise BPFUnavailable(
                f"BPF compile/load failed: {e}",
                "check `agentshctl doctor` (kernel headers link, CAP_BPF)",
            ) from e
        self.compile_seconds = time.monotonic() - t0
        try:
            for name, atype in CGROUP_PROGS.items():
                self.fns[name] = self.bpf.load_func(
                    name.encode(), bcc.BPF.CGROUP_SOCK_ADDR, None, atype
                )
        except Exception as e:
            raise BPFUnavailable(f"loading cgroup programs failed: {e}", "") from e
        self._check_maps()

    def _check_maps(self) -> None:
        """The maps as created (or reused from pins) are the ones the layout
        describes: each name exists in the program, its pin is that very map,
        and the kernel's type, key/value size and capacity match. A pin left
        by an older, different layout is refused here instead of misread."""
        for spec in layout.MAPS:
            try:
                fd = self.table(spec.name).map_fd
            except KeyError as e:
                raise BPFUnavailable(f"bpf/netmon.c has no map {spec.name}", "") from e
            info = bpfsys.map_info(fd)
            got = (info.type, info.key_size, info.value_size, info.max_entries)
            want = (spec.type, spec.key_size, spec.value_size, spec.max_entries)
            if got != want:
                raise BPFUnavailable(
                    f"map {spec.name} is (type, key, value, entries) {got}, the layout says {want}",
                    f"a pin from another layout version is in {self.pin_dir}: "
                    "`agentshctl bpf detach` removes it (docs/network.md#layout)",
                )
            pfd = bpfsys.obj_get(os.path.join(self.pin_dir, spec.name))
            try:
                pinned = bpfsys.map_info(pfd).id
            finally:
                os.close(pfd)
            if pinned != info.id:
                raise BPFUnavailable(f"pin {spec.name} is map {pinned}, not the program's {info.id}", "")

    def table(self, name: str) -> Any:
        return self.bpf[name.encode()]

    # ------------------------------------------------------------------ attach

    def attach(self) -> list[Attachment]:
        """Attach every cgroup program, atomically replacing a predecessor's."""
        prev_cgroup = self._read_meta_path()
        fd = open_dir(self.cgroup_dir)
        out: list[Attachment] = []
        try:
            for name, atype in CGROUP_PROGS.items():
                fn = self.fns[name]
                new_id = bpfsys.prog_info(fn.fd).id
                ours = _ours(fd, atype, name)
                ours = [i for i in ours if i != new_id]
                replaced = None
                if ours:
                    old_fd = bpfsys.prog_fd_by_id(ours[0])
                    try:
                        bpfsys.prog_attach(
                            fn.fd,
                            fd,
                            atype,
                            bpfsys.BPF_F_ALLOW_MULTI | bpfsys.BPF_F_REPLACE,
                            old_fd,
                        )
                    finally:
                        os.close(old_fd)
                    replaced = ours[0]
                    for extra in ours[1:]:
                        _detach_id(fd, atype, extra)
                else:
                    try:
                        bpfsys.prog_attach(fn.fd, fd, atype, bpfsys.BPF_F_ALLOW_MULTI)
                    except bpfsys.BPFSysError as e:
                        if e.errno != 17:  # EEXIST: this very program is attached
                            raise BPFUnavailable(
                                f"attaching {name} to {self.cgroup_dir} failed: {e}",
                                "another program may hold the cgroup without "
                                "BPF_F_ALLOW_MULTI; see `agentshctl bpf status`",
                            ) from e
                out.append(Attachment(bpfsys.ATTACH_NAMES[atype], new_id, replaced))
        finally:
            os.close(fd)
        self.attachments = out
        self._record_meta()
        if prev_cgroup and os.path.realpath(prev_cgroup) != os.path.realpath(self.cgroup_dir):
            # moved: the old location keeps the previous programs until now
            with contextlib.suppress(OSError):
                detach_cgroup(prev_cgroup)
        return out

    def _record_meta(self) -> None:
        t = self.table(layout.MAP_META)
        leaf = t.Leaf()
        leaf.cgroup_id = cgroup_id(self.cgroup_dir)
        path = self.cgroup_dir.encode()[: META_VAL.fields["cgroup_path"].size - 1]
        leaf.cgroup_path = path
        t[t.Key(0)] = leaf

    def _read_meta_path(self) -> str | None:
        with contextlib.suppress(Exception):
            t = self.table(layout.MAP_META)
            p = bytes(t[t.Key(0)].cgroup_path).split(b"\0", 1)[0].decode()
            return p or None
        return None

    def query(self) -> list[dict[str, Any]]:
        """What of ours is attached to the cgroup right now (for status)."""
        out: list[dict[str, Any]] = []
        try:
            fd = open_dir(self.cgroup_dir)
        except OSError:
            return out
        try:
            for name, atype in CGROUP_PROGS.items():
                for pid in _ours(fd, atype, name):
                    out.append({"attach_type": bpfsys.ATTACH_NAMES[atype], "prog_id": pid})
        finally:
            os.close(fd)
        return out

    # ------------------------------------------------------------------ trace_all

    def attach_trace(self) -> None:
        if self.trace_attached:
            return
        tracefs = ensure_tracefs()
        check_tracepoints(tracefs)
        cg = self.table(layout.MAP_TRACE_CGROUP)
        fd = open_dir(self.cgroup_dir)
        try:
            cg[0] = fd
        finally:
            os.close(fd)
        try:
            for tp, fn in TRACE_PROGS.items():
                self.bpf.attach_tracepoint(tp=tp.encode(), fn_name=fn.encode())
        except Exception as e:
            raise BPFUnavailable(f"attaching connect tracepoints failed: {e}", "") from e
        self.trace_attached = True

    def detach_trace(self) -> None:
        if not self.trace_attached:
            return
        for tp in TRACE_PROGS:
            with contextlib.suppress(Exception):
                self.bpf.detach_tracepoint(tp.encode())
        self.trace_attached = False

    # ------------------------------------------------------------------ ring buffer

    def open_ring(self, callback: Callable[[Any, int, int], int]) -> None:
        self.table(layout.MAP_EVENTS).open_ring_buffer(callback)

    def poll(self, timeout_ms: int) -> None:
        self.bpf.ring_buffer_poll(timeout_ms)

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        """Release our fds; the kernel keeps the cgroup attachments and pinned maps."""
        self.detach_trace()
        if self.bpf is not None:
            with contextlib.suppress(Exception):
                self.bpf.cleanup()
            self.bpf = None


def compile_flags(pin_dir: str, **layout_kw: Any) -> list[str]:
    """The clang flags for bpf/netmon.c: everything it shares with Python
    (``layout.cflags``; tests pass variations through ``layout_kw``), and a
    header that redefines one of those names is an error, not a silent override."""
    return [*layout.cflags(pin_dir.rstrip("/"), **layout_kw), "-Werror=macro-redefined"]


def check_tracepoints(tracefs: str) -> None:
    """Refuse trace_all when this kernel's connect tracepoint arguments are not
    where the programs read them (docs/network.md#layout)."""
    for tp, lay in layout.TRACEPOINTS.items():
        path = os.path.join(tracefs, "events", tp, "format")
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise BPFUnavailable(
                f"cannot read {path}: {e.strerror}",
                "a kernel with CONFIG_FTRACE_SYSCALLS, or network.trace_all: false",
            ) from e
        why = layout.tracepoint_mismatch(lay, text)
        if why is not None:
            raise BPFUnavailable(f"tracepoint {tp} differs from the program: {why}",
                                 "network.trace_all: false on this kernel")


def _ours(cgroup_fd: int, atype: int, name: str) -> list[int]:
    try:
        _flags, ids = bpfsys.prog_query(cgroup_fd, atype)
    except bpfsys.BPFSysError:
        return []
    out = []
    for i in ids:
        info = bpfsys.prog_info_by_id(i)
        if info is not None and info.name == name:
            out.append(i)
    return out


def _detach_id(cgroup_fd: int, atype: int, prog_id: int) -> None:
    pfd = bpfsys.prog_fd_by_id(prog_id)
    try:
        bpfsys.prog_detach(pfd, cgroup_fd, atype)
    finally:
        os.close(pfd)


def detach_cgroup(cgroup_dir: str) -> list[str]:
    """Detach every agentsh program from one cgroup; returns what was removed."""
    removed: list[str] = []
    fd = open_dir(cgroup_dir)
    try:
        for name, atype in CGROUP_PROGS.items():
            for pid in _ours(fd, atype, name):
                try:
                    _detach_id(fd, atype, pid)
                    removed.append(f"{bpfsys.ATTACH_NAMES[atype]} prog {pid} from {cgroup_dir}")
                except bpfsys.BPFSysError as e:
                    removed.append(f"FAILED {bpfsys.ATTACH_NAMES[atype]} prog {pid}: {e}")
    finally:
        os.close(fd)
    return removed


def read_pinned_cgroup(pin_dir: str) -> str | None:
    """The cgroup path recorded in the pinned meta map (without BCC)."""
    path = os.path.join(pin_dir, layout.MAP_META)
    if not os.path.exists(path):
        return None
    try:
        fd = bpfsys.obj_get(path)
    except OSError:
        return None
    try:
        try:
            if bpfsys.map_info(fd).value_size != META_VAL.size:
                return None  # another layout: not ours to read
            raw = bpfsys.map_lookup(fd, (0).to_bytes(4, sys.byteorder), META_VAL.size)
        except OSError:
            return None
        if raw is None:
            return None
        p = META_VAL.unpack(raw).cgroup_path.split(b"\0", 1)[0].decode(errors="replace")
        return p or None
    finally:
        os.close(fd)


def detach_all(pin_dir: str, cgroup_path: str | None) -> list[str]:
    """Remove every attachment and pin agentsh made. Used by `agentshctl bpf detach`."""
    try:
        bpfsys.arch()
    except BPFUnavailable as e:
        return [f"skipped: {e.reason}"]  # nothing of ours can be attached here
    removed: list[str] = []
    places: list[str] = []
    recorded = read_pinned_cgroup(pin_dir)
    for p in (cgroup_path, recorded):
        if p and os.path.isdir(p) and os.path.realpath(p) not in [os.path.realpath(x) for x in places]:
            places.append(p)
    for p in places:
        removed.extend(detach_cgroup(p))
    if os.path.isdir(pin_dir):
        for name in sorted(os.listdir(pin_dir)):
            fp = os.path.join(pin_dir, name)
            try:
                if os.path.isdir(fp):
                    shutil.rmtree(fp)
                else:
                    os.unlink(fp)
                removed.append(f"pin {fp}")
            except OSError as e:
                removed.append(f"FAILED pin {fp}: {e}")
        with contextlib.suppress(OSError):
            os.rmdir(pin_dir)
            removed.append(f"pin dir {pin_dir}")
    return removed
