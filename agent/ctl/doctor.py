"""agentshctl doctor: can this host run agentsh's BPF layer, and if not, how to fix it.

Each check prints ``ok``, ``warn`` or ``FAIL`` with what it found; every FAIL
(and warn) carries the fix. Exit status 1 when anything failed.
"""

from __future__ import annotations

import gzip
import os
import platform
from dataclasses import dataclass

import click

from agentsh.agent.ctl.common import print_json, socket_of

CAPS = {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_SYS_ADMIN": 21, "CAP_NET_ADMIN": 12}


@dataclass
class Check:
    name: str
    status: str  # ok | warn | FAIL
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def _mounts() -> dict[str, str]:
    out: dict[str, str] = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if len(p) >= 3:
                out.setdefault(p[2], p[1])
    return out


def check_caps() -> Check:
    from agentsh.agent.netmon.programs import effective_caps

    caps = effective_caps()
    missing = [n for n, b in CAPS.items() if not caps & (1 << b)]
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    if not missing:
        return Check("privileges", "ok", f"{who}, CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_NET_ADMIN")
    return Check(
        "privileges",
        "FAIL",
        f"{who}, missing {' '.join(missing)}",
        "run agentshd (and this check) as root; the systemd unit does",
    )


def check_arch() -> Check:
    from agentsh.agent.netmon.bpfsys import arch
    from agentsh.agent.netmon.errors import BPFUnavailable

    try:
        a = arch()
    except BPFUnavailable as e:
        return Check("architecture", "FAIL", e.reason, e.fix)
    return Check("architecture", "ok", f"{a.machine} (bpf syscall {a.nr_bpf})")


def check_bcc() -> Check:
    try:
        import bcc
    except ImportError:
        return Check(
            "bcc",
            "FAIL",
            "`import bcc` failed",
            "apt-get install python3-bpfcc and create the venv with --system-site-packages "
            "(`make setup` does both)",
        )
    path = getattr(bcc, "__file__", "?") or "?"
    if not hasattr(bcc, "BPF"):
        return Check(
            "bcc",
            "FAIL",
            f"`import bcc` is an unrelated package ({path}), not BCC",
            "pip uninstall bcc (PyPI's 'bcc' is a different library); use Debian's python3-bpfcc",
        )
    try:
        from bcc.version import __version__ as ver
    except ImportError:
        ver = ""
    if not path.startswith("/usr/lib/python3/dist-packages/"):
        return Check(
            "bcc",
            "warn",
            f"BCC {ver} from {path} (not Debian's python3-bpfcc)",
            "prefer apt-get install python3-bpfcc (the tested version)",
        )
    return Check("bcc", "ok", f"BCC {ver} from {path} (Debian python3-bpfcc)")


def check_headers() -> Check:
    rel = platform.release()
    build = f"/lib/modules/{rel}/build"
    if not os.path.exists(os.path.join(build, "include")):
        return Check(
            "kernel headers",
            "FAIL",
            f"{build} missing",
            "run `make setup` (installs linux-headers-amd64 and links /lib/modules/$(uname -r)/build)",
        )
    target = os.path.realpath(build)
    if os.path.islink(build) and rel not in os.path.basename(target):
        src = os.path.realpath(f"/lib/modules/{rel}/source")
        kconfig = any(
            os.path.exists(os.path.join(d, "include/linux/kconfig.h")) for d in (target, src)
        )
        if not kconfig:
            return Check(
                "kernel headers",
                "FAIL",
                f"{build} -> {target} (fallback) but include/linux/kconfig.h is in neither build "
                "nor source",
                "run `make setup` (links source -> the -common headers tree)",
            )
        return Check(
            "kernel headers",
            "ok",
            f"fallback: {build} -> {target}, source -> {src} (no headers for {rel}; safe because "
            "the programs read only UAPI structs)",
        )
    return Check("kernel headers", "ok", f"exact match for {rel}: {build} -> {target}")


def check_mounts() -> list[Check]:
    m = _mounts()
    out = []
    for fstype, name, fix in (
        ("tracefs", "tracefs", "mount -t tracefs nodev /sys/kernel/tracing (or `make setup`)"),
        ("cgroup2", "cgroup2", "mount -t cgroup2 none /sys/fs/cgroup/unified (or `make setup`)"),
        ("bpf", "bpffs", "mount -t bpf bpf /sys/fs/bpf (or `make setup`)"),
    ):
        if fstype in m:
            out.append(Check(name, "ok", f"mounted at {m[fstype]}"))
        else:
            out.append(
                Check(
                    name,
                    "warn",
                    "not mounted (agentshd mounts it at start when it runs as root)",
                    fix,
                )
            )
    return out


def _kconfig(opt: str) -> str | None:
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if line.startswith(opt + "="):
                    return line.strip().split("=", 1)[1]
                if line.startswith(f"# {opt} is not set"):
                    return "n"
    except OSError:
        return None
    return "n"


def check_kernel() -> list[Check]:
    out = []
    if os.path.exists("/sys/kernel/btf/vmlinux"):
        out.append(Check("BTF", "ok", "/sys/kernel/btf/vmlinux present"))
    else:
        out.append(
            Check("BTF", "warn", "no /sys/kernel/btf/vmlinux", "not needed by agentsh today")
        )
    cg = _kconfig("CONFIG_CGROUP_BPF")
    if cg not in (None, "y"):
        out.append(
            Check("CONFIG_CGROUP_BPF", "FAIL", f"={cg}", "a kernel with CONFIG_CGROUP_BPF=y")
        )
    kp = _kconfig("CONFIG_KPROBES")
    out.append(
        Check(
            "kprobes",
            "ok",
            "not used (agentsh uses cgroup sock_addr hooks and tracepoints)"
            + (f"; CONFIG_KPROBES={kp}" if kp else ""),
        )
    )
    lsm_path = "/sys/kernel/security/lsm"
    if os.path.exists(lsm_path):
        with open(lsm_path) as f:
            lsms = f.read().strip()
        st = "ok" if "bpf" in lsms.split(",") else "warn"
        out.append(
            Check(
                "BPF LSM",
                st,
                f"active LSMs: {lsms}",
                "" if st == "ok" else "optional; boot with lsm=...,bpf to enable",
            )
        )
    else:
        out.append(
            Check(
                "BPF LSM",
                "warn",
                "securityfs not mounted; cannot list LSMs",
                "mount -t securityfs securityfs /sys/kernel/security (optional check)",
            )
        )
    return out


def check_daemon(socket_path: str | None) -> list[Check]:
    from agentsh.agent.core.client_sync import ControlError, DaemonUnavailable, call

    try:
        st = call(socket_path, "GET", "/v1/status")
    except DaemonUnavailable as e:
        return [
            Check(
                "daemon",
                "warn",
                f"not reachable: {e}",
                "start it: `make run` (foreground) or `agentshctl install-service`",
            )
        ]
    except ControlError as e:
        return [Check("daemon", "FAIL", f"error: {e}", "see the daemon's log")]
    out = [Check("daemon", "ok", f"agentshd {st.get('version')} pid {st.get('pid')}")]
    bpf = st.get("bpf") or {}
    state = bpf.get("state")
    if state == "active":
        out.append(Check("bpf layer", "ok", f"active at {bpf.get('cgroup_path')}"))
    elif state == "disabled":
        out.append(Check("bpf layer", "warn", f"disabled ({bpf.get('reason')})", "network.enabled"))
    else:
        out.append(
            Check(
                "bpf layer",
                "FAIL",
                f"{state} ({bpf.get('reason')})",
                bpf.get("fix") or "fix the failing checks above, then restart agentshd",
            )
        )
    return out


def check_compile() -> Check:
    import shutil
    import uuid

    from agentsh.agent.netmon.cgroup import ensure_bpffs, resolve_cgroup
    from agentsh.agent.netmon.errors import BPFUnavailable
    from agentsh.agent.netmon.programs import Programs

    pin = f"/sys/fs/bpf/agentsh-doctor-{uuid.uuid4().hex[:8]}"
    try:
        ensure_bpffs(pin)
        p = Programs(pin, resolve_cgroup(""))
        p.compile()
        secs = p.compile_seconds
        p.close()
        return Check("bpf compile", "ok", f"bpf/netmon.c compiled and loaded in {secs:.2f}s")
    except BPFUnavailable as e:
        return Check("bpf compile", "FAIL", e.reason, e.fix or "see the checks above")
    finally:
        shutil.rmtree(pin, ignore_errors=True)


def check_coverage(socket_path: str | None) -> list[Check]:
    """The "Security Coverage" section (docs/flow.md "Modes"): are agent hooks installed,
    and does the daemon see them (coverage ``full``) or only the MCP layers
    (``proxy_only``)?"""
    from agentsh.agent.ctl.hook import NUDGE, settings_path, status_report

    install = "agentshctl hook install --agent claude-code"
    rep = status_report(socket_path, {"project": settings_path("project"), "user": settings_path("user")})
    where = [f"{f['scope']} ({f['path']})" for f in rep["settings"] if f["installed"]]
    problems = [p for f in rep["settings"] for p in f["problems"]]
    out = []
    if problems:
        out.append(Check("hooks", "warn", "claude-code hooks installed but broken: " + "; ".join(problems),
                         f"run `{install}` again"))
    elif where:
        out.append(Check("hooks", "ok", "claude-code hooks installed in " + ", ".join(where)))
    else:
        out.append(Check("hooks", "warn", "no agent hooks installed (project or user settings of claude-code)",
                         f"{NUDGE} Run `{install}` to enable."))
    if not rep["daemon_reachable"]:
        return out  # the daemon check above says why
    cov = rep["coverage"]
    if cov.get("hooks_enabled") is False:
        out.append(Check("security coverage", "warn", "proxy_only: agent hooks disabled by policy "
                         "(flow.hooks.enabled: false)", "set flow.hooks.enabled: true"))
    elif cov.get("level") == "full":
        out.append(Check("security coverage", "ok", f"full: hooks active (claude-code), "
                         f"{cov.get('hook_sessions', 0)} hook session(s)"))
    else:
        out.append(Check("security coverage", "warn", "proxy_only: no hook evaluations seen by the daemon "
                         "recently (flow detection is limited to MCP-proxied tool calls)",
                         f"{NUDGE} Run `{install}` to enable."))
    return out


def run_checks(socket_path: str | None, compile_test: bool) -> list[Check]:
    checks = [check_arch(), check_caps(), check_bcc(), check_headers()]
    checks += [*check_mounts(), *check_kernel()]
    if compile_test:
        checks.append(check_compile())
    checks.extend(check_daemon(socket_path))
    checks.extend(check_coverage(socket_path))
    return checks


@click.command("doctor")
@click.option("--compile", "compile_test", is_flag=True, help="Also compile and load the BPF programs (~1 s).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def doctor(ctx: click.Context, compile_test: bool, as_json: bool) -> None:
    """Check this host for what agentsh's BPF layer needs, and explain fixes."""
    checks = run_checks(socket_of(ctx), compile_test)
    if as_json:
        print_json([c.to_json() for c in checks])
    else:
        for c in checks:
            if c.name == "hooks":
                click.echo("Security Coverage")
            click.echo(f"{c.status:>4}  {c.name}: {c.detail}")
            if c.fix and c.status != "ok":
                click.echo(f"      fix: {c.fix}")
    if any(c.status == "FAIL" for c in checks):
        ctx.exit(1)
