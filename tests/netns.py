"""A network namespace joined to the host by a veth pair, for tests that need a
non-loopback address. Both ends are created here and removed on exit; the
addresses (10.200.x.y/30) exist only on this pair, so no traffic leaves the host.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from pyroute2 import IPRoute, NetNS, netns


@dataclass
class VethNS:
    name: str
    host_if: str
    ns_if: str
    host_ip: str
    ns_ip: str

    def popen(self, code: str, **kw: object) -> subprocess.Popen[bytes]:
        """Run Python code inside the namespace (the child joins it first)."""
        prelude = f"from pyroute2 import netns as _n; _n.setns({self.name!r});\n"
        return subprocess.Popen([sys.executable, "-c", prelude + code], **kw)  # type: ignore[call-overload]


@contextlib.contextmanager
def veth_namespace(subnet: int | None = None) -> Iterator[VethNS]:
    tag = uuid.uuid4().hex[:6]
    name = f"agentsh-t-{tag}"
    host_if, ns_if = f"ash{tag}h", f"ash{tag}n"
    n = subnet if subnet is not None else (os.getpid() + int(tag, 16)) % 250 + 1
    host_ip, ns_ip = f"10.200.{n}.1", f"10.200.{n}.2"
    netns.create(name)
    try:
        with IPRoute() as ipr:
            ipr.link("add", ifname=host_if, kind="veth", peer={"ifname": ns_if, "net_ns_fd": name})
            idx = ipr.link_lookup(ifname=host_if)[0]
            ipr.addr("add", index=idx, address=host_ip, prefixlen=30)
            ipr.link("set", index=idx, state="up")
        with NetNS(name) as ns:
            nidx = ns.link_lookup(ifname=ns_if)[0]
            ns.addr("add", index=nidx, address=ns_ip, prefixlen=30)
            ns.link("set", index=nidx, state="up")
            lo = ns.link_lookup(ifname="lo")[0]
            ns.link("set", index=lo, state="up")
        yield VethNS(name, host_if, ns_if, host_ip, ns_ip)
    finally:
        with contextlib.suppress(Exception), IPRoute() as ipr:
            idx = ipr.link_lookup(ifname=host_if)
            if idx:
                ipr.link("del", index=idx[0])
        with contextlib.suppress(Exception):
            netns.remove(name)


# ---------------------------------------------------------------- cgroup clients

CLIENT = r"""
import ctypes, errno, json, os, socket, sys
cg = sys.argv[1]
with open(os.path.join(cg, "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
ctypes.CDLL(None).prctl(15, b"ash-client", 0, 0, 0)  # PR_SET_NAME
print(json.dumps({"ready": os.getpid()}), flush=True)
for line in sys.stdin:
    op = json.loads(line)
    if op.get("op") == "exit":
        break
    fam = socket.AF_INET6 if op.get("family") == 6 else socket.AF_INET
    typ = socket.SOCK_DGRAM if op.get("proto") == "udp" else socket.SOCK_STREAM
    s = socket.socket(fam, typ)
    s.settimeout(op.get("timeout", 3))
    res = "ok"
    try:
        if typ == socket.SOCK_DGRAM and op.get("op") == "sendto":
            s.sendto(b"x", (op["host"], op["port"]))
        else:
            s.connect((op["host"], op["port"]))
            if op.get("read"):
                res = "ok:" + s.recv(100).decode()
    except OSError as e:
        res = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
    finally:
        s.close()
    print(json.dumps({"result": res}), flush=True)
"""


class CgroupClient:
    """A helper process that first moves itself into ``cgroup_dir``, then runs the
    connect/sendto operations it is sent, one per line, and answers each with
    the result ("ok" or the errno name). Its comm is ``ash-client``."""

    def __init__(self, cgroup_dir: str, python: str | None = None) -> None:
        import json

        self._json = json
        self.proc = subprocess.Popen(
            [python or sys.executable, "-c", CLIENT, cgroup_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = json.loads(self.proc.stdout.readline())
        self.pid: int = ready["ready"]

    def op(self, **op: object) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(self._json.dumps(op) + "\n")
        self.proc.stdin.flush()
        return str(self._json.loads(self.proc.stdout.readline())["result"])

    def tcp(self, host: str, port: int, family: int = 4, read: bool = False) -> str:
        return self.op(op="connect", host=host, port=port, family=family, read=read)

    def udp_sendto(self, host: str, port: int, family: int = 4) -> str:
        return self.op(op="sendto", proto="udp", host=host, port=port, family=family)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.op(op="exit")
        with contextlib.suppress(Exception):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> CgroupClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def child_cgroup(prefix: str = "agentsh-test") -> Iterator[str]:
    """A fresh child cgroup2 directory (removed afterwards; leftovers move to the parent)."""
    from agentsh.agent.netmon.cgroup import ensure_cgroup2, remove_cgroup

    root = ensure_cgroup2()
    path = os.path.join(root, f"{prefix}-{uuid.uuid4().hex[:10]}")
    os.mkdir(path)
    try:
        yield path
    finally:
        remove_cgroup(path)


def free_port(host: str = "127.0.0.1", family: int = 4, kind: int = 1) -> int:
    import socket

    fam = socket.AF_INET6 if family == 6 else socket.AF_INET
    with socket.socket(fam, kind) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Listener:
    """A TCP listener thread that accepts, sends a greeting and closes."""

    def __init__(self, host: str, family: int = 4, greeting: bytes = b"hello") -> None:
        import socket
        import threading

        fam = socket.AF_INET6 if family == 6 else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(512)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.greeting = greeting
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with contextlib.suppress(OSError):
                c.sendall(self.greeting)
            c.close()

    def close(self) -> None:
        import socket

        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
