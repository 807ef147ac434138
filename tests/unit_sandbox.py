"""Run a command under the restrictions systemd/agentsh.service puts on
agentshd, without systemd (it is not PID 1 here), so a test can load the real
BPF programs the way the installed service would.

Emulated from the unit file itself (so a change to the unit is what is tested):

* ``ProtectSystem=strict``: every mount read-only except /proc, /sys, /dev and
  the home directories, then ``ReadWritePaths=`` and the daemon's own
  directories (given with ``--rw``, as StateDirectory= etc. would be) read-write;
* ``ReadOnlyPaths=``, ``ProtectControlGroups=`` (/sys/fs/cgroup read-only),
  ``ProtectHome=read-only``, ``PrivateTmp=`` (fresh /tmp, /var/tmp),
  ``PrivateDevices=`` (a /dev with only null, zero, full, random, urandom,
  tty, ptmx, pts, shm), ``ProtectKernelModules=`` (/usr/lib/modules inaccessible);
* ``CapabilityBoundingSet=`` (prctl PR_CAPBSET_DROP), ``NoNewPrivileges=``;
* ``SystemCallFilter=`` (groups expanded by ``systemd-analyze syscall-filter``,
  allow list then ``~`` lists, ``SystemCallErrorNumber=``),
  ``RestrictAddressFamilies=`` and ``MemoryDenyWriteExecute=`` as systemd 252
  builds them: one seccomp filter (mmap with PROT_WRITE|PROT_EXEC, mprotect /
  pkey_mprotect adding PROT_EXEC and shmat with SHM_EXEC refused).

Not emulated (no effect on what agentshd does with BPF): ProtectClock,
ProtectHostname, ProtectKernelLogs, RestrictRealtime, RestrictSUIDSGID,
LockPersonality, RestrictNamespaces, UMask, the Limit*= settings.

Usage: ``python tests/unit_sandbox.py UNIT [--rw PATH]... [--keep PATH]... -- CMD [ARGS...]``.

``--keep PATH``: a path under /tmp or /var/tmp that stays visible (read-only)
through ``PrivateTmp=``: a checkout (with its venv) cloned under /tmp, as CI may
do; an installed agentsh never lives there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import subprocess
import sys
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
PROT_WRITE, PROT_EXEC, SHM_EXEC = 2, 4, 0o100000
AF_MAX = 46
CAPS = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3, "CAP_FSETID": 4,
    "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_LINUX_IMMUTABLE": 9,
    "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
    "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15, "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17,
    "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19, "CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21,
    "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23, "CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25,
    "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27, "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29,
    "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31, "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33,
    "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35, "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37,
    "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40,
}
FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17}

_libc = ctypes.CDLL(None, use_errno=True)


def service_settings(unit_text: str) -> dict[str, list[str]]:
    """``[Service]`` settings, every occurrence of a key kept in order."""
    out: dict[str, list[str]] = {}
    section = ""
    for raw in unit_text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            k, _, v = line.partition("=")
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def expand(names: list[str]) -> set[str]:
    """Syscall names for a list of names and @groups (systemd's own tables)."""
    out: set[str] = set()
    for n in names:
        if not n.startswith("@"):
            out.add(n)
            continue
        listing = subprocess.run(["systemd-analyze", "syscall-filter", n], capture_output=True, text=True,
                                 check=True).stdout
        members = [ln.strip() for ln in listing.splitlines()[1:] if ln.strip() and not ln.strip().startswith("#")]
        out |= expand(members)
    return out


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    r = _libc.mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None,
                    ctypes.c_ulong(flags), data.encode() if data else None)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {src} {target}: {os.strerror(e)}")


def _mountpoints() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mp = line.split()[4].encode().decode("unicode_escape")
        points.append(mp)
    return points


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _readonly_tree(top: str) -> None:
    """Bind ``top`` onto itself if it is not a mount point, then every mount at or below it read-only."""
    if not os.path.exists(top):
        return
    if top not in _mountpoints():
        _mount(top, top, None, MS_BIND)
    for mp in _mountpoints():
        if _under(mp, top):
            try:
                _mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENOENT):
                    raise


def _readwrite(path: str) -> None:
    if not os.path.exists(path):
        return
    _mount(path, path, None, MS_BIND | MS_REC)
    _mount(None, path, None, MS_REMOUNT | MS_BIND)


STAGE = "/run/.agentsh-sandbox-dev"


def _private_dev_stage() -> None:
    """Build the private /dev aside (before the tree turns read-only); moved onto /dev last."""
    stage = STAGE
    os.makedirs(stage, exist_ok=True)
    _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name in ("null", "zero", "full", "random", "urandom", "tty", "ptmx"):
        Path(stage, name).touch()
        _mount(f"/dev/{name}", f"{stage}/{name}", None, MS_BIND)
    for d in ("pts", "shm"):
        os.mkdir(f"{stage}/{d}")
    _mount("devpts", f"{stage}/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    _mount("tmpfs", f"{stage}/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{stage}/{name}")


KEEP_STAGE = "/run/.agentsh-sandbox-keep"


def apply_mounts(s: dict[str, list[str]], rw: list[str], keep: list[str] | None = None) -> None:
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [os.path.realpath(k) for k in keep or () if _under(os.path.realpath(k), "/tmp")
            or _under(os.path.realpath(k), "/var/tmp")]
    if keep:  # staged before the tree turns read-only and /tmp is replaced
        os.makedirs(KEEP_STAGE, exist_ok=True)
        _mount("tmpfs", KEEP_STAGE, "tmpfs", MS_NOSUID, "mode=0700")
        for i, k in enumerate(keep):
            os.mkdir(f"{KEEP_STAGE}/{i}")
            _mount(k, f"{KEEP_STAGE}/{i}", None, MS_BIND | MS_REC)
    private_dev = "yes" in s.get("PrivateDevices", [])
    if private_dev:
        _private_dev_stage()
    exempt = ("/proc", "/sys", "/dev", "/home", "/root", "/run/user", STAGE)
    if "strict" in s.get("ProtectSystem", []):
        for mp in _mountpoints():
            if not any(_under(mp, e) for e in exempt):
                try:
                    _mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
                except OSError as e:
                    if e.errno not in (errno.EACCES, errno.EPERM, errno.EINVAL):
                        raise
    if "yes" in s.get("PrivateTmp", []):
        for t in ("/tmp", "/var/tmp"):
            _mount("tmpfs", t, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        for i, k in enumerate(keep):
            # the checkout (venv, link tree) lives under /tmp on this machine; an
            # installed agentsh never does: put it back, read-only, at its own path
            os.makedirs(k, exist_ok=True)
            _mount(f"{KEEP_STAGE}/{i}", k, None, MS_BIND | MS_REC)
            _mount(None, k, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    if "read-only" in s.get("ProtectHome", []):
        for h in ("/home", "/root", "/run/user"):
            _readonly_tree(h)
    for spec in s.get("ReadOnlyPaths", []):
        for p in spec.split():
            _readonly_tree(p.lstrip("-"))
    if "yes" in s.get("ProtectControlGroups", []):
        _readonly_tree("/sys/fs/cgroup")
    if "yes" in s.get("ProtectKernelModules", []):
        for m in ("/usr/lib/modules", "/lib/modules"):
            if os.path.isdir(m) and not os.path.islink(m):
                _mount("tmpfs", m, "tmpfs", MS_RDONLY, "mode=0000")
    for spec in s.get("ReadWritePaths", []):
        for p in spec.split():
            _readwrite(p.lstrip("-"))
    for p in rw:
        _readwrite(p)
    if private_dev:
        _mount(STAGE, "/dev", None, MS_MOVE)


def drop_capabilities(s: dict[str, list[str]]) -> None:
    keep: set[int] = set()
    for spec in s.get("CapabilityBoundingSet", []):
        keep |= {CAPS[c] for c in spec.split()}
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if cap not in keep and _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")
    if "yes" in s.get("NoNewPrivileges", []) and _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")


def load_seccomp(s: dict[str, list[str]]) -> None:
    import seccomp  # Debian's python3-seccomp (make setup installs it)

    errno_name = (s.get("SystemCallErrorNumber") or ["EPERM"])[-1]
    deny_action = seccomp.ERRNO(getattr(errno, errno_name))
    filters = s.get("SystemCallFilter", [])
    allowed: set[str] | None = None
    denied: set[str] = set()
    for spec in filters:
        if spec.startswith("~"):
            denied |= expand(spec[1:].split())
        elif allowed is None:
            allowed = expand(["@default", *spec.split()])
        else:
            allowed |= expand(spec.split())
    if allowed is not None:
        allowed -= denied
        f = seccomp.SyscallFilter(defaction=deny_action)
        rule_action, names = seccomp.ALLOW, allowed
    else:
        f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        rule_action, names = deny_action, denied
    special = {"mmap", "mprotect", "pkey_mprotect", "shmat", "socket"}
    for name in sorted(names - special):
        try:
            f.add_rule(rule_action, name)
        except (RuntimeError, ValueError):
            pass  # not a syscall on this architecture
    mdwe = "yes" in s.get("MemoryDenyWriteExecute", [])
    eperm = seccomp.ERRNO(errno.EPERM)

    def usable(name: str) -> bool:
        return (allowed is not None and name in allowed) or (allowed is None and name not in denied)

    wx = PROT_WRITE | PROT_EXEC
    if usable("mmap"):
        if mdwe and allowed is None:
            f.add_rule(eperm, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, wx, wx))
        elif mdwe:  # allow list: every protection but write+exec
            for ok in (0, PROT_WRITE, PROT_EXEC):
                f.add_rule(seccomp.ALLOW, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, wx, ok))
        elif allowed is not None:
            f.add_rule(seccomp.ALLOW, "mmap")
    for name in ("mprotect", "pkey_mprotect"):
        if usable(name):
            if mdwe and allowed is None:
                f.add_rule(eperm, name, seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC))
            elif mdwe:  # allow list: refused unless it adds no PROT_EXEC
                f.add_rule(seccomp.ALLOW, name, seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, 0))
            elif allowed is not None:
                f.add_rule(seccomp.ALLOW, name)
    if usable("shmat"):
        if mdwe and allowed is None:
            f.add_rule(eperm, "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, SHM_EXEC, SHM_EXEC))
        elif mdwe:
            f.add_rule(seccomp.ALLOW, "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, SHM_EXEC, 0))
        elif allowed is not None:
            f.add_rule(seccomp.ALLOW, "shmat")
    if usable("socket"):
        families = {FAMILIES[x] for spec in s.get("RestrictAddressFamilies", []) for x in spec.split()}
        if families:
            for fam in range(AF_MAX):
                if fam not in families:
                    f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.EQ, fam))
            if allowed is not None:
                for fam in families:
                    f.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.EQ, fam))
        elif allowed is not None:
            f.add_rule(seccomp.ALLOW, "socket")
    f.load()


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit(__doc__)
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    unit, rw = opts[0], [opts[j + 1] for j, o in enumerate(opts) if o == "--rw"]
    keep = [opts[j + 1] for j, o in enumerate(opts) if o == "--keep"]
    s = service_settings(Path(unit).read_text())
    for setting in ("SystemCallFilter", "RestrictAddressFamilies"):
        for spec in s.get(setting, []):
            if re.search(r"[^\w@~ .-]", spec):
                raise SystemExit(f"unit_sandbox: cannot emulate {setting}={spec}")
    apply_mounts(s, rw, keep)
    drop_capabilities(s)
    load_seccomp(s)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
