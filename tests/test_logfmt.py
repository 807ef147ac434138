"""One log format for agentshd, the LLM proxy and agentsh-shim, and expected
failures reported as one line each, never a traceback (docs/operations.md
"Daemon logs")."""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentsh.agent.core.logfmt import LineFormatter
from tests.conftest import AGENTSHCTL, AGENTSHD, SHIM, DaemonProc, short_tmpdir

# 2026-11-23T10:00:00.123+00:00 agentshd[123] supervisor INFO message
LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d (agentshd|agentsh-proxy|agentsh-shim)\[\d+\] "
    r"\S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) .*$"
)


def assert_log_lines(text: str) -> list[str]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines, "no log output"
    for ln in lines:
        assert LINE.match(ln), f"not in the log format: {ln!r}"
    assert "Traceback" not in text
    return lines


def record(msg: str, name: str = "agentsh.supervisor", exc: bool = False) -> str:
    h = logging.StreamHandler(buf := io.StringIO())
    h.setFormatter(LineFormatter("agentshd"))
    log = logging.getLogger(name)
    log.addHandler(h)
    log.propagate = False
    try:
        if exc:
            try:
                raise ValueError("boom")
            except ValueError:
                log.exception(msg)
        else:
            log.warning(msg)
    finally:
        log.removeHandler(h)
        log.propagate = True
    return buf.getvalue()


def test_a_record_is_one_line_with_time_zone_program_pid_component_level() -> None:
    out = record("started llm-proxy (pid 42)")
    assert LINE.match(out.rstrip("\n")), out
    assert f" agentshd[{os.getpid()}] supervisor WARNING started llm-proxy (pid 42)\n" in out


def test_newlines_in_a_message_cannot_forge_a_second_record() -> None:
    out = record("tool name 'x\n2026-01-01T00:00:00.000+00:00 agentshd[1] daemon INFO forged'")
    assert out.count("\n") == 1 and "\\n2026-01-01" in out


def test_an_unexpected_exception_keeps_its_traceback_marked_as_continuation() -> None:
    out = record("housekeeping failed", exc=True)
    first, *rest = out.rstrip("\n").split("\n")
    assert LINE.match(first) and rest and all(ln.startswith("  | ") for ln in rest)
    assert rest[-1] == "  | ValueError: boom"


def test_daemon_with_a_bad_policy_says_so_in_one_line_per_error(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "agentsh.yaml").write_text("bogus: 1\nproxy: {mode: disabled}\n")
    r = subprocess.run([AGENTSHD, "--config-dir", str(tmp_path / "etc"), "--socket", str(tmp_path / "a.sock"),
                        "--state-dir", str(tmp_path / "lib"), "--events", str(tmp_path / "e.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 78
    lines = assert_log_lines(r.stderr)
    assert any("daemon ERROR policy error: " in ln and "agentsh.yaml:1:1: bogus: unknown key" in ln for ln in lines)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_daemon_that_cannot_create_its_directories_says_so_in_one_line() -> None:
    tmp = short_tmpdir()
    (tmp / "etc").mkdir()
    (tmp / "etc" / "agentsh.yaml").write_text("proxy: {mode: disabled}\nnetwork: {enabled: false}\n")
    tmp.chmod(0o755)
    r = subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", AGENTSHD,
                        "--config-dir", str(tmp / "etc"), "--socket", str(tmp / "run" / "a.sock"),
                        "--state-dir", str(tmp / "lib"), "--events", str(tmp / "log" / "e.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 73, r.stderr
    lines = assert_log_lines(r.stderr)
    assert lines[-1].endswith(f"daemon ERROR cannot start: Permission denied: {tmp / 'lib'} (agentshd runs as root)")


def test_a_second_daemon_on_the_same_socket_says_so_in_one_line(daemon: DaemonProc, tmp_path: Path) -> None:
    r = subprocess.run([AGENTSHD, "--config-dir", str(daemon.config_dir), "--socket", str(daemon.socket),
                        "--state-dir", str(tmp_path / "lib"), "--events", str(tmp_path / "e.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    lines = assert_log_lines(r.stderr)
    assert lines[-1].endswith(f"daemon ERROR another daemon is listening on {daemon.socket}")


def test_proxy_on_a_port_in_use_exits_78_with_one_line(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "agentsh.yaml").write_text("network: {enabled: false}\n")
    try:
        r = subprocess.run([sys.executable, "-m", "agentsh.proxy", "--socket", str(tmp_path / "none.sock"),
                            "--policy-dir", str(tmp_path / "etc"), "--user", "nobody",
                            "--state-dir", str(tmp_path / "state"), "--listen", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=60)
    finally:
        busy.close()
    assert r.returncode == 78
    lines = assert_log_lines(r.stderr)
    assert lines[-1].endswith(f"proxy ERROR cannot listen on 127.0.0.1:{port}: Address already in use")


def test_shim_without_a_daemon_warns_in_the_log_format(tmp_path: Path) -> None:
    r = subprocess.run([SHIM, "--socket", str(tmp_path / "none.sock"), "--state-dir", str(tmp_path / "state"),
                        "--", sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
                       input='{"jsonrpc":"2.0","id":1,"method":"ping"}\n', capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = assert_log_lines(r.stderr)
    assert any(" agentsh-shim[" in ln and "shim WARNING agentshd unreachable" in ln for ln in lines), lines


def test_agentshctl_without_a_daemon_is_one_line_exit_2(tmp_path: Path) -> None:
    for args in (["status"], ["proxy", "env"], ["mcp", "registry", "list"], ["policy", "reload"]):
        r = subprocess.run([AGENTSHCTL, "--socket", str(tmp_path / "none.sock"), *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("agentshctl: "), (args, r.stderr)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_agentshctl_refused_by_the_socket_says_permission_not_not_running(daemon: DaemonProc) -> None:
    daemon.socket.parent.chmod(0o755)
    daemon.root.chmod(0o755)
    r = subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", AGENTSHCTL,
                        "--socket", str(daemon.socket), "status"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"agentshctl: cannot reach agentshd: permission denied at {daemon.socket} (needs root or group agentsh)"
    )
