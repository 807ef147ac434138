"""Run the real Claude Code binary offline against the scripted stand-in API.

Each run gets its own stand-in server (unless the caller brings one), a fresh
``HOME`` and ``TMPDIR`` (so the real ``~/.claude`` / ``~/.claude.json`` are never
read or written, and nothing lands in the shared ``/tmp/claude-<uid>``), and an
environment built from scratch: none of the caller's ``ANTHROPIC_*`` /
``CLAUDE_*`` variables leak in. Facts and quirks: tests/claude_code/README.md.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .standin import Recorded, Scenario, StandIn

REPO = Path(__file__).resolve().parents[2]
NPM_MODULES = REPO / "tests" / "npm" / "node_modules"
# The native executable ships in a per-platform optional dependency of
# @anthropic-ai/claude-code; we run it directly (the wrapper package's
# postinstall, which would link it to bin/claude.exe, may be skipped by npm).
CLAUDE_BIN = NPM_MODULES / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
MCP_SHOUT = Path(__file__).resolve().parent / "mcp_shout.py"

# User settings written into every run's HOME. WebFetch otherwise asks claude.ai
# whether the domain may be fetched, which cannot work offline.
USER_SETTINGS: dict[str, Any] = {"skipWebFetchPreflight": True}


def claude_binary() -> tuple[Path | None, str]:
    """(path, "") when the binary is installed, else (None, why)."""
    if not CLAUDE_BIN.exists():
        return None, f"Claude Code binary missing at {CLAUDE_BIN} (run `make setup`)"
    if not os.access(CLAUDE_BIN, os.X_OK):
        return None, f"Claude Code binary at {CLAUDE_BIN} is not executable"
    return CLAUDE_BIN, ""


def claude_env(home: Path, tmpdir: Path, base_url: str) -> dict[str, str]:
    """The whole environment Claude Code runs with (README "Environment")."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmpdir),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-standin-not-a-real-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


@dataclass
class Result:
    returncode: int
    stdout_json: Any
    """``--output-format json``'s result object (None if stdout was not JSON)."""
    requests: list[Recorded]
    stderr: str
    stdout: str = ""
    standin: StandIn | None = None
    home: Path | None = None
    """The run's HOME (kept only when the caller supplied it)."""
    seconds: float = 0.0
    argv: list[str] = field(default_factory=list)

    @property
    def session_id(self) -> str | None:
        return self.stdout_json.get("session_id") if isinstance(self.stdout_json, dict) else None

    def main_requests(self) -> list[Recorded]:
        """Main-conversation requests that were answered (a broken stream's
        request is repeated by the non-streaming retry, so it is left out)."""
        return [r for r in self.requests if r.kind == "main" and not r.broken_stream]

    def aux_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.kind == "aux"]

    def tool_results(self) -> list[dict[str, Any]]:
        return [b for r in self.main_requests() for b in r.tool_results()]

    def tool_result_for(self, tool_use_id: str) -> dict[str, Any]:
        for b in self.tool_results():
            if b.get("tool_use_id") == tool_use_id:
                return b
        raise AssertionError(f"no tool_result for {tool_use_id}:\n{self.describe()}")

    def describe(self) -> str:
        """Everything useful for a failure message."""
        lines = [f"argv: {self.argv}", f"rc={self.returncode} in {self.seconds:.1f}s"]
        for r in self.requests:
            lines.append(f"  {r.method} {r.path} kind={r.kind} turn={r.turn} stream={r.streamed} broken={r.broken_stream}")
            for b in r.tool_results():
                lines.append(f"    tool_result {b.get('tool_use_id')} is_error={b.get('is_error')}: {str(b.get('content'))[:300]}")
            for t in r.trailing_texts():
                lines.append(f"    system: {t[:300]}")
        lines.append(f"stdout: {self.stdout[-2000:]}")
        lines.append(f"stderr: {self.stderr[-2000:]}")
        return "\n".join(lines)


def run_claude(
    prompt: str,
    scenario: Scenario,
    *,
    cwd: Path,
    allowed_tools: Sequence[str] = (),
    settings: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 90.0,
    extra_args: Sequence[str] = (),
    mcp_config: dict[str, Any] | None = None,
    home: Path | None = None,
    standin: StandIn | None = None,
) -> Result:
    """Run ``claude -p PROMPT --output-format json`` in ``cwd`` against a stand-in
    playing ``scenario``.

    ``allowed_tools`` goes to ``--allowedTools`` (``mcp__<server>__<tool>`` or
    ``mcp__<server>`` for MCP tools). ``settings`` is written to
    ``<cwd>/.claude/settings.json`` (project settings: hooks, permissions).
    ``mcp_config`` (``{"mcpServers": {...}}``) is passed with ``--mcp-config``
    and ``--strict-mcp-config``. ``home`` keeps the run's HOME for inspection
    (else a temporary one is removed afterwards). ``standin`` lets a test
    prepare the server first (TLS pages for WebFetch, a URL to put in the
    scenario); its scenario is (re)set here and it is left running.
    """
    path, why = claude_binary()
    if path is None:
        raise RuntimeError(why)
    cwd = Path(cwd)
    if settings is not None:
        (cwd / ".claude").mkdir(parents=True, exist_ok=True)
        (cwd / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    own_home = home is None
    run_home = Path(tempfile.mkdtemp(prefix="cc-home-")) if home is None else Path(home)
    (run_home / ".claude").mkdir(parents=True, exist_ok=True)
    (run_home / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    # Short, per run: Claude Code puts Unix sockets under $TMPDIR/cc-socks.
    tmpdir = Path(tempfile.mkdtemp(prefix="cc-tmp-", dir="/tmp"))
    srv = standin or StandIn()
    srv.set_scenario(scenario, prompt)
    started_here = srv.port == 0
    if started_here:
        srv.start()
    argv = [str(path), "-p", prompt, "--output-format", "json"]
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    if mcp_config is not None:
        argv += ["--mcp-config", json.dumps(mcp_config), "--strict-mcp-config"]
    argv += list(extra_args)
    env = claude_env(run_home, tmpdir, srv.url)
    if srv.ca_file is not None:
        env["NODE_EXTRA_CA_CERTS"] = str(srv.ca_file)
    env.update(extra_env or {})
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            err += f"\n[harness] killed after {timeout}s timeout"
        finally:
            _kill_group(proc)  # whatever the Bash tool or an MCP server left behind
        seconds = time.monotonic() - t0
        try:
            parsed = json.loads(out) if out.strip() else None
        except ValueError:
            parsed = None
        return Result(
            returncode=proc.returncode,
            stdout_json=parsed,
            requests=list(srv.requests),
            stderr=err,
            stdout=out,
            standin=srv,
            home=None if own_home else run_home,
            seconds=seconds,
            argv=argv,
        )
    finally:
        if started_here:
            srv.stop()
        if own_home:
            shutil.rmtree(run_home, ignore_errors=True)
        shutil.rmtree(tmpdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ------------------------------------------------------------------ hooks

_HOOK_SCRIPT = '''\
import json, sys
payload = sys.stdin.read()
with open({save!r}, "a", encoding="utf-8") as f:
    f.write(json.dumps(json.loads(payload)) + "\\n")
sys.stdout.write({stdout!r})
sys.stderr.write({stderr!r})
sys.exit({code!r})
'''


def write_hook(
    path: Path, *, save_to: Path, output: dict[str, Any] | str | None = None, stderr: str = "", exit_code: int = 0
) -> str:
    """Write a tiny hook script that appends each stdin payload (one JSON line)
    to ``save_to``, prints ``output`` (a dict is sent as JSON) and exits with
    ``exit_code``. Returns the ``command`` string for settings.json."""
    stdout = json.dumps(output) if isinstance(output, dict) else (output or "")
    path.write_text(_HOOK_SCRIPT.format(save=str(save_to), stdout=stdout, stderr=stderr, code=exit_code))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def hook_settings(event: str, matcher: str, command: str, timeout: int | None = None) -> dict[str, Any]:
    """``{"hooks": {event: [{matcher, hooks: [{type: command, command}]}]}}``."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {"hooks": {event: [{"matcher": matcher, "hooks": [hook]}]}}


def read_payloads(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def shout_mcp_server(record: Path | None = None) -> dict[str, Any]:
    """A stdio MCP server entry for ``mcpServers`` running ``mcp_shout.py``."""
    entry: dict[str, Any] = {"type": "stdio", "command": sys.executable, "args": [str(MCP_SHOUT)]}
    if record is not None:
        entry["env"] = {"SHOUT_RECORD": str(record)}
    return entry


# ------------------------------------------------------------------ fixture


class ClaudeCode:
    """Per-test runner: ``run()`` is :func:`run_claude` with a fresh working
    directory and a kept HOME under the test's ``tmp_path`` by default."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._n = 0
        self._runs = 0

    def workdir(self) -> Path:
        self._n += 1
        d = self.root / f"work{self._n}"
        d.mkdir(parents=True)
        return d

    def run(self, prompt: str, scenario: Scenario, *, cwd: Path | None = None, **kw: Any) -> Result:
        cwd = cwd or self.workdir()
        self._runs += 1
        kw.setdefault("home", self.root / f"home{self._runs}")
        return run_claude(prompt, scenario, cwd=cwd, **kw)


@pytest.fixture(name="claude_code")
def claude_code_fixture(tmp_path: Path) -> Iterator[ClaudeCode]:
    """The real Claude Code, offline. Skips only when the binary is genuinely
    missing, and never under CI (``make setup`` installs it there)."""
    path, why = claude_binary()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must not skip the Claude Code tests")
        pytest.skip(why)
    yield ClaudeCode(tmp_path)
