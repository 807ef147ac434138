"""``agentshctl hook install|uninstall|status`` on Claude Code's settings files:
merge into what is there, keep everything else, idempotent, backed up, no
secrets, an absolute command that runs from a bare environment."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import AGENTSHCTL, DaemonProc

EXISTING: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./secrets/**)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/my-lint-hook"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "model": "opus",
}


def ctl(cwd: Path, *args: str, socket: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [AGENTSHCTL, *(["--socket", socket] if socket else []), "hook", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, env=env)


def settings(cwd: Path) -> dict[str, Any]:
    return json.loads((cwd / ".claude" / "settings.json").read_text())


def ours(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {ev: [h for g in groups for h in g["hooks"] if "hook_cmd.py" in h.get("command", "")]
            for ev, groups in doc.get("hooks", {}).items()}


def test_install_merges_agentsh_hooks_and_keeps_everything_else(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(EXISTING, indent=4))
    r = ctl(tmp_path, "install", "--agent", "claude-code", "--scope", "project", socket="/tmp/elsewhere/agentsh.sock")
    assert r.returncode == 0, r.stderr
    doc = settings(tmp_path)
    for k in ("permissions", "env", "model"):
        assert doc[k] == EXISTING[k]
    assert doc["hooks"]["Stop"] == EXISTING["hooks"]["Stop"]
    assert doc["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]
    pre = doc["hooks"]["PreToolUse"][1]
    assert pre["matcher"].split("|")[:9] == ["Read", "Glob", "Grep", "LS", "Bash", "Write", "Edit", "MultiEdit",
                                              "NotebookEdit"]
    assert {"WebFetch", "WebSearch", "Task", "Agent", "mcp__.*"} <= set(pre["matcher"].split("|"))
    (post,) = doc["hooks"]["PostToolUse"][0]["hooks"]
    assert post["async"] is True and "--event PostToolUse" in post["command"]
    assert doc["hooks"]["PostToolUseFailure"][0]["hooks"][0]["async"] is True
    backups = list((tmp_path / ".claude").glob("settings.json.agentsh-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == EXISTING


def test_install_is_idempotent_and_uninstall_restores_the_rest(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(EXISTING))
    assert ctl(tmp_path, "install").returncode == 0
    first = (tmp_path / ".claude" / "settings.json").read_text()
    r = ctl(tmp_path, "install")
    assert r.returncode == 0 and "nothing to change" in r.stdout
    assert (tmp_path / ".claude" / "settings.json").read_text() == first
    assert len(list((tmp_path / ".claude").glob("*.agentsh-backup-*"))) == 1
    r = ctl(tmp_path, "uninstall")
    assert r.returncode == 0, r.stderr
    assert settings(tmp_path) == EXISTING
    assert "nothing to change" in ctl(tmp_path, "uninstall").stdout


def test_install_creates_the_settings_file_and_records_only_a_non_default_socket(tmp_path: Path) -> None:
    assert ctl(tmp_path, "install").returncode == 0  # default socket
    for hooks in ours(settings(tmp_path)).values():
        assert "--socket" not in hooks[0]["command"]
    assert ctl(tmp_path, "install", socket="/tmp/other dir/x.sock").returncode == 0  # rewired, not duplicated
    got = ours(settings(tmp_path))
    assert set(got) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for ev, hooks in got.items():
        (h,) = hooks
        words = shlex.split(h["command"])
        assert words[words.index("--socket") + 1] == "/tmp/other dir/x.sock"
        assert words[words.index("--event") + 1] == ev


def test_the_installed_hooks_hold_no_secret_and_run_from_a_bare_environment(tmp_path: Path) -> None:
    """Paths and the event name only; the daemon knows the caller from
    the socket. The command is absolute: Claude Code's PATH has no virtualenv."""
    assert ctl(tmp_path, "install", socket=str(tmp_path / "nowhere.sock")).returncode == 0
    for hooks in ours(settings(tmp_path)).values():
        (h,) = hooks
        assert set(h) <= {"type", "command", "timeout", "async"}
        words = shlex.split(h["command"])
        assert words[0] == sys.executable and words[1:3] == ["-S", "-E"] and Path(words[3]).is_file()
        assert all(w.startswith(("/", "-")) or w in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
                   for w in words), words
        # as Claude Code runs it: through a shell, with nothing in the environment
        r = subprocess.run(["/bin/sh", "-c", h["command"]], input='{"session_id": "s"}', capture_output=True,
                           text=True, env={}, timeout=30)
        assert r.returncode == 0 and r.stdout == "" and "fail open" in r.stderr


def test_invalid_settings_are_refused_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"hooks": [1, 2]}')
    r = ctl(tmp_path, "install")
    assert r.returncode != 0 and "not an object" in r.stderr
    (tmp_path / ".claude" / "settings.json").write_text("{oops")
    r = ctl(tmp_path, "install")
    assert r.returncode != 0 and "invalid JSON" in r.stderr
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{oops"


def test_user_scope_uses_claude_config_dir(tmp_path: Path) -> None:
    conf = tmp_path / "cfg"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(conf)}
    assert ctl(tmp_path, "install", "--scope", "user", env=env).returncode == 0
    assert set(ours(json.loads((conf / "settings.json").read_text()))) == {"PreToolUse", "PostToolUse",
                                                                             "PostToolUseFailure"}
    assert not (tmp_path / ".claude").exists()


def test_status_says_where_hooks_are_installed_and_whether_the_daemon_sees_them(daemon: DaemonProc, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    r = ctl(tmp_path, "status", socket=str(daemon.socket), env=env)
    assert r.returncode == 1 and "not installed" in r.stdout and "hook install --agent claude-code" in r.stdout
    assert ctl(tmp_path, "install", socket=str(daemon.socket), env=env).returncode == 0
    r = ctl(tmp_path, "status", env=env)  # finds the daemon from the socket recorded in the hooks
    assert r.returncode == 0, r.stdout + r.stderr
    assert "project" in r.stdout and "installed: PostToolUse, PostToolUseFailure, PreToolUse" in r.stdout
    assert "no hook evaluation seen yet" in r.stdout and "coverage proxy_only" in r.stdout
    cmd = ours(settings(tmp_path))["PreToolUse"][0]["command"]
    subprocess.run(["/bin/sh", "-c", cmd], input=json.dumps({"session_id": "cc-st", "hook_event_name": "PreToolUse",
                   "tool_name": "Read", "tool_input": {"file_path": "/x"}}), capture_output=True, timeout=30, text=True)
    rep = json.loads(ctl(tmp_path, "status", "--json", env=env).stdout)
    assert rep["ok"] and rep["coverage"]["level"] == "full" and rep["coverage"]["hook_sessions"] == 1
    # doctor's Security Coverage section agrees
    doc = subprocess.run([AGENTSHCTL, "--socket", str(daemon.socket), "doctor"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env=env).stdout
    assert "Security Coverage" in doc and "full: hooks active (claude-code), 1 hook session(s)" in doc


def test_doctor_nudges_towards_hooks_when_none_are_seen(daemon: DaemonProc, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    out = subprocess.run([AGENTSHCTL, "--socket", str(daemon.socket), "doctor", "--json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=env).stdout
    checks = {c["name"]: c for c in json.loads(out)}
    nudge = ("Hooks provide visibility into agent-internal tools like Read, Bash, WebFetch. Without hooks, "
             "flow detection is limited to MCP-proxied tool calls.")
    for name in ("hooks", "security coverage"):
        assert checks[name]["status"] == "warn" and nudge in checks[name]["fix"]
        assert "agentshctl hook install --agent claude-code" in checks[name]["fix"]
    assert checks["security coverage"]["detail"].startswith("proxy_only")
