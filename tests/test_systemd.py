"""The shipped unit passes `systemd-analyze verify`, and install-service lays
out unit, policy and logrotate without overwriting an existing policy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import AGENTSHCTL, AGENTSHD

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing (make setup installs it)")
def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    unit = tmp_path / "agentsh.service"
    unit.write_text((REPO / "systemd/agentsh.service").read_text().replace("/usr/local/bin/agentshd", AGENTSHD))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    problems = [line for line in r.stderr.splitlines() if "agentsh.service" in line]
    assert r.returncode == 0 and not problems, r.stderr


def test_unit_has_the_required_settings() -> None:
    text = (REPO / "systemd/agentsh.service").read_text()
    for needle in (
        "Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure", "WatchdogSec=",
        "RuntimeDirectory=agentsh", "StateDirectory=agentsh", "LogsDirectory=agentsh",
        "CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_SYS_RESOURCE",
        "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "ProtectSystem=strict", "ReadWritePaths=",
        "ProtectHome=", "PrivateTmp=yes", "NoNewPrivileges=yes",
    ):
        assert needle in text, needle


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
