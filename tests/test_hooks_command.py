"""The hook command (agent/hook_cmd.py) as Claude Code runs it: a separate
process, stdin in, stdout out. It must stay import-light, speak Claude Code's
protocol, fail open on every failure, and never outlive its deadline."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from agentsh.agent import hook_cmd
from agentsh.agent.core.client_sync import channel_path
from agentsh.agent.daemon.hooks import hooks_conf_path
from tests.conftest import DaemonProc, short_tmpdir

HOOK = str(Path(hook_cmd.__file__).resolve())
PRE = {"session_id": "cc-cmd", "hook_event_name": "PreToolUse", "tool_name": "WebFetch",
       "tool_input": {"url": "https://webhook.site/x", "prompt": "p"}, "tool_use_id": "t1"}


def run_hook(socket_path: str | Path, stdin: str | bytes, event: str = "PreToolUse", *extra: str,
             env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-S", "-E", HOOK, "--event", event, "--socket", str(socket_path), *extra],
                          input=data, capture_output=True, timeout=timeout, env=env or {"PATH": "/usr/bin:/bin"})


def test_the_hook_command_imports_only_modules_built_into_the_interpreter(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-S", "-E", "-X", "importtime", HOOK, "--event", "PreToolUse",
                        "--socket", str(tmp_path / "none.sock")], input=json.dumps(PRE).encode(),
                       capture_output=True, timeout=30)
    mods = {line.split("|")[-1].strip() for line in r.stderr.decode().splitlines() if line.startswith("import time:")}
    mods.discard("imported package")
    assert mods and mods <= {"_json", "_socket", "_signal", "io", "abc", "_abc", "encodings", "codecs",
                             "encodings.aliases", "encodings.utf_8", "_codecs", "site", "time", "posix",
                             "_io", "marshal", "zipimport", "_frozen_importlib_external", "_imp",
                             "_thread", "_warnings", "_weakref"}, mods
    assert r.returncode == 0


@pytest.mark.parametrize("where", ["no_socket", "not_listening"])
def test_an_unreachable_daemon_fails_open_silently_on_stdout(where: str) -> None:
    d = short_tmpdir()
    sock = d / "agentsh.sock"
    if where == "not_listening":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(channel_path(sock)))  # a socket file nobody accepts on
        s.close()
    r = run_hook(sock, json.dumps(PRE))
    assert r.returncode == 0 and r.stdout == b""  # allow: Claude Code's own permissions apply
    assert b"not evaluated, allowed (fail open)" in r.stderr


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b"\xff\xfe\x00garbage", b'{"session_id": '])
def test_malformed_payloads_fail_open(daemon: DaemonProc, stdin: bytes) -> None:
    r = run_hook(daemon.socket, stdin)
    assert r.returncode == 0 and r.stdout == b"", r
    assert b"allowed (fail open)" in r.stderr
    assert not daemon.events("hook_evaluation")


def test_the_hook_gives_up_at_its_deadline_when_the_daemon_does_not_answer() -> None:
    """A daemon that accepts and never answers, and a stdin that never ends:
    the command still ends, allowed, at its deadline."""
    d = short_tmpdir()
    sock = d / "agentsh.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(channel_path(sock)))
    srv.listen(4)
    try:
        t0 = time.monotonic()
        r = run_hook(sock, json.dumps(PRE), "PreToolUse", "--timeout", "1")
        assert r.returncode == 0 and r.stdout == b"" and b"fail open" in r.stderr
        assert 0.9 <= time.monotonic() - t0 < 5
        p = subprocess.Popen([sys.executable, "-S", "-E", HOOK, "--event", "PreToolUse", "--socket", str(sock),
                              "--timeout", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdin is not None
        p.stdin.write(b'{"session_id": "s"')  # ... and never closed
        p.stdin.flush()
        assert p.wait(10) == 0
        assert p.stdout is not None and p.stdout.read() == b""
        p.stdin.close()
    finally:
        srv.close()


def test_daemon_answers_become_claude_codes_hook_protocol(daemon: DaemonProc) -> None:
    r = run_hook(daemon.socket, json.dumps(PRE))
    out = json.loads(r.stdout)
    assert out == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "agentsh data-flow policy: destination webhook.site is a suspicious endpoint"}}
    allowed = {**PRE, "tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}, "tool_use_id": "t2"}
    assert run_hook(daemon.socket, json.dumps(allowed)).stdout == b""  # never an explicit allow
    post = {**allowed, "hook_event_name": "PostToolUse", "tool_response": {"type": "text", "file": {"content": "x"}}}
    r = run_hook(daemon.socket, json.dumps(post), "PostToolUse")
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b""
    # pretty-printed payloads (newlines between tokens) are fine
    r = run_hook(daemon.socket, json.dumps({**PRE, "tool_use_id": "t3"}, indent=2))
    assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("decision", ["deny", "ask", "warn", "allow"])
def test_output_for_each_decision(decision: str) -> None:
    reason = 'agentsh: "quoted" → ünïcode \\ back\nslash'
    out = hook_cmd.output("PreToolUse", decision, reason)
    if decision == "allow":
        assert out == b""
        return
    doc = json.loads(out)
    if decision == "warn":
        assert doc == {"systemMessage": "agentsh warning: " + reason}
    else:
        h = doc["hookSpecificOutput"]
        assert (h["permissionDecision"], h["permissionDecisionReason"]) == (decision, reason)
    assert hook_cmd.output("PostToolUse", decision, reason) == b""


def test_answer_fields_are_read_back_exactly_from_the_daemons_json() -> None:
    reason = 'he said "decision":"allow" → \\" ünï ☃ \u2028'
    line = orjson.dumps({"id": 1, "decision": "deny", "reason": reason, "risk_level": None}) + b"\n"
    assert hook_cmd._field(line, b"decision") == "deny"
    assert hook_cmd._field(line, b"reason") == reason
    assert hook_cmd._field(line, b"risk_level") is None
    assert hook_cmd._field(orjson.dumps({"id": 1, "error": "bad"}), b"decision") is None


@pytest.mark.parametrize("sock", ["/run/agentsh/agentsh.sock", "/tmp/x/a.b.sock", "/tmp/x/plain", "rel/agentsh.sock",
                                  "/tmp/.hidden"])
def test_the_hook_finds_the_same_sibling_sockets_as_the_daemon(sock: str) -> None:
    assert hook_cmd.sibling(sock, "-decide.sock") == str(channel_path(sock))
    assert hook_cmd.sibling(sock, "-hooks.conf") == str(hooks_conf_path(Path(sock)))


def test_agentsh_socket_from_the_environment_is_used_without_socket_option(daemon: DaemonProc) -> None:
    r = subprocess.run([sys.executable, "-S", "-E", HOOK, "--event", "PreToolUse"], input=json.dumps(PRE).encode(),
                       capture_output=True, timeout=30, env={"AGENTSH_SOCKET": str(daemon.socket)})
    assert json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_agentshctl_hook_evaluate_runs_the_same_code(daemon: DaemonProc) -> None:
    r = daemon.ctl("hook", "evaluate", "--event", "PreToolUse", input=json.dumps(PRE))
    assert r.returncode == 0 and json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
