"""The shipped unit passes `systemd-analyze verify` (man pages included), its
offline exposure score stays below the 5.6 it had, the real daemon loads and
enforces its BPF programs under the unit's own restrictions, and
install-service lays everything out without overwriting an existing policy."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import AGENTSHCTL, AGENTSHD, short_tmpdir, wait_for

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing (make setup installs it)")
def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    unit = tmp_path / "agentsh.service"
    unit.write_text((REPO / "systemd/agentsh.service").read_text().replace("/usr/local/bin/agentshd", AGENTSHD))
    # Documentation= names man pages: verify runs man(1) on them, so generate them
    # where man looks (MANPATH), as install-service installs them.
    subprocess.run([AGENTSHCTL, "man", "--out", str(tmp_path / "man")], check=True, capture_output=True)
    env = {**os.environ, "MANPATH": str(tmp_path / "man")}
    man = [] if shutil.which("man") else ["--man=no"]
    r = subprocess.run(["systemd-analyze", "verify", *man, str(unit)], capture_output=True, text=True, env=env)
    problems = [line for line in r.stderr.splitlines() if "agentsh.service" in line]
    assert r.returncode == 0 and not problems, r.stderr


def test_unit_has_the_required_settings() -> None:
    text = (REPO / "systemd/agentsh.service").read_text()
    for needle in (
        "Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure", "WatchdogSec=",
        "RuntimeDirectory=agentsh", "StateDirectory=agentsh", "LogsDirectory=agentsh",
        "CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_ADMIN",
        "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "ProtectSystem=strict", "ReadWritePaths=",
        "ProtectHome=read-only", "PrivateTmp=yes", "NoNewPrivileges=yes", "RuntimeDirectoryMode=0755",
        "ReadWritePaths=/sys/fs/bpf",
    ):
        assert needle in text, needle
    # ProtectKernelModules= makes /usr/lib/modules inaccessible (BCC's kernel headers), and
    # ProtectKernelTunables= mounts /sys/fs/bpf read-only with a priority above ReadWritePaths=
    # (docs/operations.md "Service hardening"); either one switches the BPF layer off.
    assert "ProtectKernelModules=yes" not in text and "ProtectKernelTunables=yes" not in text
    # CAP_SYS_RESOURCE is not needed: systemd sets LimitMEMLOCK=infinity before exec, and
    # BPF memory is charged to the memory cgroup since Linux 5.11 (Debian 12: 6.1).
    assert "CAP_SYS_RESOURCE" not in text and "LimitMEMLOCK=infinity" in text


def exposure(unit: Path) -> float:
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)], capture_output=True, text=True)
    m = re.search(r"Overall exposure level for \S+: ([\d.]+)", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    return float(m.group(1))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing (make setup installs it)")
def test_unit_exposure_score_is_below_the_old_5_6(tmp_path: Path) -> None:
    unit = tmp_path / "agentsh.service"
    unit.write_text((REPO / "systemd/agentsh.service").read_text().replace("/usr/local/bin/agentshd", AGENTSHD))
    assert exposure(unit) < 5.6


@pytest.mark.bpf
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_daemon_loads_and_enforces_bpf_under_the_units_restrictions() -> None:
    """agentshd started under the unit's mounts, capability bounding set,
    no-new-privileges, syscall filter, address families and W^X memory
    (tests/unit_sandbox.py): the BPF layer compiles, attaches and pins, a
    denied address gets EPERM, and the LLM proxy drops privileges and serves."""
    from netns import CgroupClient, Listener, child_cgroup, free_port

    from agentsh.agent.netmon.programs import detach_all

    root = Path(f"/run/agentsh-sbx-{uuid.uuid4().hex[:8]}")
    (root / "etc").mkdir(parents=True)
    pin = f"/sys/fs/bpf/agentsh-test-{uuid.uuid4().hex[:10]}"
    target = Listener("127.0.0.9")
    port = free_port()
    log = short_tmpdir() / "agentshd.log"
    proc = None
    with child_cgroup() as cg:
        (root / "etc" / "agentsh.yaml").write_text(f"""
proxy: {{mode: embedded, listen: "127.0.0.1:{port}"}}
daemon: {{user: nobody, watch_interval_seconds: 0.2}}
mcp:
  servers:
    - {{id: evil, type: http, url: "http://127.0.0.9:{target.port}/mcp"}}
  denied_servers: [{{id: evil}}]
network: {{enabled: true, cgroup_path: {cg}, pin_dir: {pin}, discovery: false}}
""")
        sock = root / "run" / "agentsh.sock"
        try:
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, str(REPO / "tests" / "unit_sandbox.py"), str(REPO / "systemd" / "agentsh.service"),
                     "--rw", str(root), "--keep", str(REPO), "--keep", sys.prefix, "--", AGENTSHD, "--config-dir", str(root / "etc"), "--socket", str(sock),
                     "--state-dir", str(root / "lib"), "--events", str(root / "log" / "events.jsonl")],
                    stdout=out, stderr=subprocess.STDOUT, cwd="/")

            def status() -> dict:
                if proc.poll() is not None:
                    raise AssertionError(f"agentshd exited {proc.returncode}: {log.read_text()}")
                r = subprocess.run([AGENTSHCTL, "--socket", str(sock), "status", "--json"], capture_output=True, text=True)
                return json.loads(r.stdout) if r.stdout.strip() else {}

            st = wait_for(lambda: (s := status()).get("bpf", {}).get("state") == "active"
                          and any(c["name"] == "llm-proxy" and c["state"] == "running" for c in s["components"]) and s,
                          90, what="BPF active and the proxy running inside the sandbox")
            assert st["bpf"]["pin_dir"] == pin and Path(pin).is_dir()  # pinned through the read-write /sys/fs/bpf
            with CgroupClient(cg) as c:
                assert c.tcp("127.0.0.9", target.port) == "EPERM"
            assert target.accepted == 0
            report = next(c for c in st["components"] if c["name"] == "llm-proxy").get("report") or {}
            assert report.get("uid") not in (None, 0)  # dropped root under the syscall filter
            assert "Traceback" not in log.read_text()
        finally:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(30)
            detach_all(pin, cg)
            target.close()
            shutil.rmtree(root, ignore_errors=True)
            with contextlib.suppress(OSError):  # the empty mount point of the sandbox's private /dev
                os.rmdir("/run/.agentsh-sandbox-dev")


def test_install_service_into_a_root_keeps_existing_policy(tmp_path: Path) -> None:
    existing = tmp_path / "etc/agentsh/agentsh.yaml"
    existing.parent.mkdir(parents=True)
    existing.write_text("mcp: {fail_closed: true}\n")
    r = subprocess.run([AGENTSHCTL, "install-service", "--root", str(tmp_path), "--no-accounts"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    unit = (tmp_path / "etc/systemd/system/agentsh.service").read_text()
    assert f"ExecStart={AGENTSHD} --config-dir /etc/agentsh" in unit
    assert existing.read_text() == "mcp: {fail_closed: true}\n"
    assert "kept existing /etc/agentsh/agentsh.yaml" in r.stdout
    assert (tmp_path / "etc/logrotate.d/agentsh").read_text().count("events reopen") == 1
    assert (tmp_path / "etc/agentsh/policy.d").is_dir()
    fresh = tmp_path / "fresh"
    r = subprocess.run([AGENTSHCTL, "install-service", "--root", str(fresh), "--no-accounts"],
                       capture_output=True, text=True)
    assert r.returncode == 0
    assert "version: 1" in (fresh / "etc/agentsh/agentsh.yaml").read_text()


def test_install_service_lays_out_path_docs_man_completion_and_one_rotation(tmp_path: Path) -> None:
    r = subprocess.run([AGENTSHCTL, "install-service", "--root", str(tmp_path), "--no-accounts"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    venv_bin = Path(AGENTSHCTL).parent
    for name in ("agentshctl", "agentshd", "agentsh-shim"):
        link = tmp_path / "usr/local/bin" / name
        assert link.is_symlink() and os.readlink(link) == str(venv_bin / name)
    etc = tmp_path / "etc/agentsh"
    assert (etc.stat().st_mode & 0o777, (etc / "agentsh.yaml").stat().st_mode & 0o777) == (0o755, 0o644)
    # logrotate rotates, so the daemon's own rotation is off: one rotation, not two
    dropin = (etc / "policy.d/00-logrotate.yaml").read_text()
    assert "rotate_max_bytes: 0" in dropin
    lint = subprocess.run([AGENTSHCTL, "policy", "validate", str(etc)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr
    doc = tmp_path / "usr/local/share/doc/agentsh"
    assert (doc / "README.md").read_text() == (REPO / "README.md").read_text()
    assert (doc / "docs/operations.md").is_file()
    unit = (tmp_path / "etc/systemd/system/agentsh.service").read_text()
    assert "file:///usr/local/share/doc/agentsh/README.md" in unit and "man:agentshd(8)" in unit
    assert (tmp_path / "usr/local/share/man/man1/agentshctl-status.1").is_file()
    assert (tmp_path / "usr/local/share/man/man8/agentshd.8").is_file()
    assert "_AGENTSHCTL_COMPLETE" in (tmp_path / "usr/local/share/bash-completion/completions/agentshctl").read_text()
    assert "skipped accounts: --no-accounts given" in r.stdout
    # idempotent: a second run changes nothing and says only what it skipped
    again = subprocess.run([AGENTSHCTL, "install-service", "--root", str(tmp_path), "--no-accounts"],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    changes = [ln for ln in again.stdout.splitlines()
               if not ln.startswith(("skipped", "kept existing", "next:", "everything already"))]
    assert changes == [], again.stdout


def test_install_service_dry_run_writes_nothing(tmp_path: Path) -> None:
    r = subprocess.run([AGENTSHCTL, "install-service", "--root", str(tmp_path / "r"), "--no-accounts", "--dry-run"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "would: installed /etc/systemd/system/agentsh.service" in r.stdout
    assert not (tmp_path / "r").exists()
