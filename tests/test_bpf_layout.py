"""The BPF layer's shared facts have one source (agent/netmon/layout.py) and
the compiler holds both sides to it: real BCC compiles of bpf/netmon.c, the
compiled struct types read back through BCC and the kernel's map info, and
drift on either side shown to stop the compile. Compiling needs no attach;
the one daemon here runs under an unsupported architecture and attaches
nothing."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from netns import child_cgroup

from agentsh.agent.netmon import bpfsys, layout
from agentsh.agent.netmon.cgroup import ensure_bpffs, ensure_tracefs, resolve_cgroup
from agentsh.agent.netmon.errors import BPFUnavailable
from agentsh.agent.netmon.layout import EVENT, META_VAL, STRUCTS, WATCH_KEY, WATCH_VAL, Layout
from agentsh.agent.netmon.programs import (
    Programs,
    _source_path,
    check_tracepoints,
    compile_flags,
    detach_all,
    import_bcc,
)
from tests.conftest import AGENTSHCTL, AGENTSHD, DaemonProc, wait_for

pytestmark = [pytest.mark.bpf, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]

SOURCE = _source_path().read_text()
# One array per struct, so that BCC describes every struct's compiled type
# (the ring-buffer record and the tracepoint arguments are in no map otherwise).
HELPER_MAPS = "".join(f"\nBPF_ARRAY(layout_{s.c_name}, struct {s.c_name}, 1);" for s in STRUCTS)


@pytest.fixture
def pin_dir() -> Iterator[str]:
    p = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
    ensure_bpffs(p)
    yield p
    shutil.rmtree(p, ignore_errors=True)


def compile_text(text: str, flags: list[str]) -> Any:
    return import_bcc().BPF(text=text.encode(), cflags=flags)


def compile_error(text: str, flags: list[str], capfd: pytest.CaptureFixture[str]) -> str:
    """Compile, expect failure, return clang's diagnostics."""
    capfd.readouterr()
    with pytest.raises(Exception, match="Failed to compile"):
        compile_text(text, flags)
    return capfd.readouterr().err


def compiled_fields(ctype: Any) -> list[tuple[str, int, int, bool | None]]:
    """(name, offset, size, signed) of a compiled struct as BCC describes it
    (without the ``__pad_*`` members BCC adds to spell out the padding)."""
    out = []
    for name, t in ctype._fields_:
        if name.startswith("__pad_"):
            continue
        d = getattr(ctype, name)
        if issubclass(t, ctypes.Array):
            assert ctypes.sizeof(t._type_) == 1, (name, t)
            signed = None
        else:
            signed = t(-1).value < 0
        out.append((name, d.offset, d.size, signed))
    return out


def python_fields(lay: Layout) -> list[tuple[str, int, int, bool | None]]:
    return [(f.name, f.offset, f.size, f.signed) for f in lay.fields.values()]


def with_struct(lay: Layout) -> list[str]:
    """The loader's flags, with one struct's layout swapped for ``lay``."""
    return compile_flags_with(structs=[lay if s.c_name == lay.c_name else s for s in STRUCTS])


FAILING_PIN = f"/sys/fs/bpf/agentsh-test-fail-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module", autouse=True)
def _remove_failing_pin() -> Iterator[None]:
    yield
    shutil.rmtree(FAILING_PIN, ignore_errors=True)  # BCC makes the directory before failing


def compile_flags_with(**kw: Any) -> list[str]:
    """For compiles that must fail: no map is ever pinned under this directory."""
    return compile_flags(FAILING_PIN, **kw)


# ---------------------------------------------------------------- the compiled types


def test_compiled_structs_have_exactly_the_python_layouts(pin_dir: str) -> None:
    b = compile_text(SOURCE + HELPER_MAPS, compile_flags(pin_dir))
    try:
        for lay in STRUCTS:
            t = b[f"layout_{lay.c_name}".encode()]
            assert compiled_fields(t.Leaf) == python_fields(lay), lay.c_name
            # the compiler's sizeof, as the kernel received it when creating the map
            assert bpfsys.map_info(t.map_fd).value_size == lay.size == ctypes.sizeof(t.Leaf)
        # the production maps' own key and value types
        watch = b[layout.MAP_WATCH.encode()]
        assert compiled_fields(watch.Key) == python_fields(WATCH_KEY)
        assert compiled_fields(watch.Leaf) == python_fields(WATCH_VAL)
        assert compiled_fields(b[layout.MAP_META.encode()].Leaf) == python_fields(META_VAL)
        for spec in layout.MAPS:
            info = bpfsys.map_info(b[spec.name.encode()].map_fd)
            assert (info.type, info.key_size, info.value_size, info.max_entries) == (
                spec.type, spec.key_size, spec.value_size, spec.max_entries
            ), spec.name
        assert sorted(os.listdir(pin_dir)) == sorted(layout.PINNED_MAPS)
    finally:
        b.cleanup()
    # what the consumer reads per ring-buffer record is the whole compiled struct
    assert EVENT.struct.size == EVENT.size


# ---------------------------------------------------------------- drift stops the compile


def _event(**change: str) -> Layout:
    return Layout("event", [(f.name, change.get(f.name, f.code)) for f in EVENT.fields.values()])


@pytest.mark.parametrize(
    ("flags", "c_change", "expect"),
    [
        pytest.param(
            lambda: with_struct(_event(port="I")), None,
            "struct event.port: size differs from its Python layout", id="python-widens-a-field",
        ),
        pytest.param(
            lambda: with_struct(Layout("watch_val", [("server_idx", "I"), ("tag", "H"),
                                                     ("flags", "B"), ("action", "B")])),
            None, "struct watch_val.flags: offset differs from its Python layout",
            id="python-reorders-fields",
        ),
        pytest.param(
            lambda: with_struct(_event(ret="I")), None,
            "struct event.ret: signedness differs from its Python layout", id="python-sign-flip",
        ),
        pytest.param(
            lambda: with_struct(Layout("meta_val", [*((f.name, f.code) for f in META_VAL.fields.values()),
                                                    ("generation", "Q")])),
            None, "no member named 'generation' in 'struct meta_val'", id="python-adds-a-field",
        ),
        pytest.param(
            lambda: compile_flags_with(), ("    u16 port;   /* host order */", "    u32 port;"),
            "struct event.port: size differs from its Python layout", id="c-widens-a-field",
        ),
        pytest.param(
            lambda: compile_flags_with(), ("    u64 cgroup_id;\n    char cgroup_path[248];",
                                           "    u64 cgroup_id;\n    char cgroup_path[240];"),
            "sizeof(struct meta_val) differs from its Python layout", id="c-shrinks-a-struct",
        ),
    ],
)
def test_a_struct_that_drifts_on_either_side_stops_the_compile(
    flags: Any, c_change: tuple[str, str] | None, expect: str, capfd: pytest.CaptureFixture[str]
) -> None:
    text = SOURCE
    if c_change is not None:
        assert c_change[0] in text
        text = text.replace(c_change[0], c_change[1])
    assert expect in compile_error(text, flags(), capfd)


@pytest.mark.parametrize(
    ("drop", "expect"),
    [
        ("-DACT_BLOCK=", "ACT_ALLOW/ACT_BLOCK/F_EMIT missing"),
        ("-DSTAT_MAX=", "STAT_* missing"),
        ("-DAGENTSH_LAYOUT_event=", "struct layouts missing"),
    ],
)
def test_a_constant_missing_from_the_flags_stops_the_compile(
    drop: str, expect: str, capfd: pytest.CaptureFixture[str]
) -> None:
    flags = compile_flags_with()
    kept = [f for f in flags if not f.startswith(drop)]
    assert len(kept) == len(flags) - 1
    assert expect in compile_error(SOURCE, kept, capfd)


def test_a_header_macro_clashing_with_a_python_constant_stops_the_compile(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # AF_INET comes from the kernel headers; passing it as if it were ours must not
    # let either definition win silently
    flags = [*compile_flags_with(), "-DAF_INET=99"]
    assert "macro-redefined" in compile_error(SOURCE, flags, capfd)


def test_a_pinned_map_left_by_another_layout_is_refused(pin_dir: str) -> None:
    # an older agentsh whose meta_v1 value was a bare u64
    old = compile_text(
        f'BPF_TABLE_PINNED("array", u32, u64, meta_v1, 1, "{pin_dir}/meta_v1");', []
    )
    old.cleanup()
    p = Programs(pin_dir, resolve_cgroup(""))
    with pytest.raises(BPFUnavailable, match=r"map meta_v1 is .*\(2, 4, 8, 1\).* says \(2, 4, 256, 1\)"):
        p.compile()
    p.close()


# ---------------------------------------------------------------- the kernel's own numbers


def _field_asserts(ctype: str, prefix: str, lay: Layout) -> str:
    out = []
    for f in lay.fields.values():
        m = f"{prefix}{f.name}"
        out.append(f'_Static_assert(__builtin_offsetof({ctype}, {m}) == {f.offset}, "{ctype} {m} offset");')
        out.append(f'_Static_assert(sizeof((({ctype} *)0)->{m}) == {f.size}, "{ctype} {m} size");')
        if f.signed is not None:
            out.append(
                f'_Static_assert(((__typeof__((({ctype} *)0)->{m}))-1 < 0) == {int(f.signed)}, '
                f'"{ctype} {m} sign");'
            )
    return "\n".join(out)


def test_bpf_syscall_commands_flags_and_structs_are_the_kernel_uapi() -> None:
    lines = ["#include <uapi/linux/bpf.h>"]
    numbers = {**bpfsys.UAPI_NUMBERS}
    numbers.update({k: v for k, v in vars(layout).items() if k.startswith("BPF_MAP_TYPE_")})
    lines += [f'_Static_assert({k} == {v}, "{k}");' for k, v in numbers.items()]
    lines += [_field_asserts(t, p, lay) for t, p, lay in bpfsys.UAPI_LAYOUTS]
    compile_text("\n".join(lines), []).cleanup()  # raises on any mismatch


_NR_HEADERS = {"x86_64": "asm/unistd_64.h", "aarch64": "uapi/asm-generic/unistd.h"}


@pytest.mark.parametrize("machine", sorted(bpfsys.ARCHES))
def test_bpf_syscall_number_per_architecture_is_the_kernel_table(machine: str) -> None:
    nr = bpfsys.arch(machine).nr_bpf
    compile_text(f'#include <{_NR_HEADERS[machine]}>\n_Static_assert(__NR_bpf == {nr}, "nr");', []).cleanup()


def test_connect_tracepoints_are_laid_out_as_the_programs_read_them() -> None:
    tracefs = ensure_tracefs()
    check_tracepoints(tracefs)  # this kernel: no refusal
    text = Path(tracefs, "events/syscalls/sys_enter_connect/format").read_text()
    assert layout.parse_tracepoint_format(text)["uservaddr"] == (24, 8, False)
    moved = text.replace("uservaddr;\toffset:24;", "uservaddr;\toffset:32;")
    assert moved != text
    why = layout.tracepoint_mismatch(layout.ENTER_CONNECT_ARGS, moved)
    assert why is not None and "enter_connect_args.uservaddr: kernel has offset 32" in why
    exit_text = Path(tracefs, "events/syscalls/sys_exit_connect/format").read_text()
    assert layout.tracepoint_mismatch(layout.EXIT_CONNECT_ARGS, exit_text) is None
    gone = "\n".join(ln for ln in exit_text.splitlines() if " ret;" not in ln)
    assert layout.tracepoint_mismatch(layout.EXIT_CONNECT_ARGS, gone) == (
        "exit_connect_args.ret: not in the tracepoint format"
    )


# ---------------------------------------------------------------- other architectures


def test_an_unsupported_architecture_is_refused_in_one_line_by_status_and_doctor(daemon_factory: Any) -> None:
    """``setarch i686`` makes the kernel report i686 to the daemon and the CLI:
    the BPF layer says so in one line; the daemon runs on without it."""
    reason = "unsupported architecture 'i686' (the BPF layer supports x86_64, aarch64)"
    with child_cgroup() as cgdir:
        pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
        d: DaemonProc = daemon_factory(
            f"proxy: {{mode: disabled}}\n"
            f"network: {{enabled: true, cgroup_path: {cgdir}, pin_dir: {pin}, discovery: false}}\n",
            start=False,
        )
        d.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(d.log_path, "ab") as logf:
            d.proc = subprocess.Popen(
                ["setarch", "i686", AGENTSHD, "--foreground", "--config-dir", str(d.config_dir),
                 "--socket", str(d.socket), "--state-dir", str(d.state_dir),
                 "--events", str(d.events_path)],
                stdout=logf, stderr=subprocess.STDOUT,
            )
        try:
            d.wait_ready()

            def bpf() -> dict:
                return json.loads(d.ctl("status", "--json").stdout)["bpf"]

            st = wait_for(lambda: (b := bpf())["state"] != "stopped"
                          and b.get("reason") != "not started" and b, 30, what="bpf state")
            assert (st["state"], st["reason"]) == ("unavailable", reason)
            text = d.ctl("status")
            assert f"BPF      unavailable ({reason})" in text.stdout.splitlines()
            doc = subprocess.run(["setarch", "i686", AGENTSHCTL, "--socket", str(d.socket), "doctor"],
                                 capture_output=True, text=True, timeout=60)
            assert doc.returncode == 1
            assert f"FAIL  architecture: {reason}" in doc.stdout.splitlines()
            assert f"FAIL  bpf layer: unavailable ({reason})" in doc.stdout.splitlines()
            detach = subprocess.run(
                ["setarch", "i686", AGENTSHCTL, "bpf", "detach", "--local", "--pin-dir", pin,
                 "--cgroup-path", cgdir], capture_output=True, text=True, timeout=60)
            assert detach.returncode == 0 and detach.stdout.strip() == f"skipped: {reason}"
            assert d.proc.poll() is None  # the other layers run on
            assert not os.path.exists(pin)  # nothing was loaded or pinned
        finally:
            d.stop()
            detach_all(pin, cgdir)
