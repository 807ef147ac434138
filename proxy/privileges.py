"""Dropping root before the proxy reads a byte from the network.

The proxy parses untrusted model output, so it runs as an unprivileged
account: the listen socket is bound and the few root-owned directories it
writes to are prepared first, then setgroups/setgid/setuid. The account's
supplementary groups include the daemon's group (when it exists) so the proxy
can still use the control socket (0660 root:agentsh).
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("agentsh.proxy")


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]


def resolve_account(user: str, group: str | None = None) -> Account:
    """``user``, or ``nobody`` when it does not exist."""
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        log.warning("user %r does not exist; dropping to 'nobody'", user)
        pw = pwd.getpwnam("nobody")
    groups = {pw.pw_gid}
    try:
        groups.update(os.getgrouplist(pw.pw_name, pw.pw_gid))
    except OSError:
        pass
    if group:
        try:
            groups.add(grp.getgrnam(group).gr_gid)
        except KeyError:
            pass
    return Account(pw.pw_name, pw.pw_uid, pw.pw_gid, tuple(sorted(groups)))


def prepare_dir(path: Path, acct: Account, mode: int, *, take_over: bool) -> None:
    """Create ``path`` for the account (chown only while root).

    ``take_over``: the directory is the proxy's own (bodies), so an existing
    root-owned one is handed over too; shared ones (spool) only when created here.
    """
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return
    if created or (take_over and path.stat().st_uid != acct.uid):
        os.chown(path, acct.uid, acct.gid)
        os.chmod(path, mode)


def prepare_file(path: Path, acct: Account, mode: int = 0o600) -> None:
    """Pre-create a file the account will append to (e.g. in a root-owned spool dir)."""
    if os.geteuid() != 0:
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, mode)
        os.fchown(fd, acct.uid, acct.gid)
        os.close(fd)
    except OSError as e:
        log.warning("cannot prepare %s: %s", path, e)


def drop_privileges(acct: Account) -> bool:
    """Become ``acct`` for good; False when not running as root (nothing to drop)."""
    if os.geteuid() != 0:
        return False
    os.setgroups(list(acct.groups))
    os.setresgid(acct.gid, acct.gid, acct.gid)
    os.setresuid(acct.uid, acct.uid, acct.uid)
    if acct.uid != 0:
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:  # pragma: no cover - would mean the drop did not stick
            raise RuntimeError("privilege drop failed: could regain root")
    log.info("dropped privileges to %s (uid %d gid %d)", acct.name, acct.uid, acct.gid)
    return True
