"""The real Claude Code binary, offline, against the scripted stand-in API.

These tests prove the harness later data-flow / hook tests stand on: what a
tool really did reaches the stand-in as a ``tool_result``, hooks get the
documented payloads and their decisions are honoured, MCP tools are called by
their ``mcp__<server>__<tool>`` names, and both wire forms (SSE and JSON) work.
Facts they pin down are written up in tests/claude_code/README.md.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.claude_code.harness import (  # noqa: F401 - claude_code_fixture registers the fixture
    ClaudeCode,
    claude_code_fixture,
    hook_settings,
    read_payloads,
    shout_mcp_server,
    write_hook,
)
from tests.claude_code.standin import Scenario, StandIn, Turn, text, tool_result_text, tool_use

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "denied by test",
    }
}


def test_standin_speaks_the_messages_api_to_the_official_sdk() -> None:
    """The stand-in's JSON and SSE forms parse with the official SDK (tool input
    reassembled from input_json_delta pieces); an aux request consumes no turn."""
    tools: Any = [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
    go: Any = [{"role": "user", "content": "go"}]
    big = {"file_path": "/tmp/x" * 40, "limit": 7}
    sc = Scenario.of(
        [text("first"), tool_use("Read", big, id="toolu_a")],
        [text("second"), tool_use("Read", {**big, "limit": 8}, id="toolu_b")],
    )
    with StandIn(sc, prompt="go") as srv:
        client = anthropic.Anthropic(base_url=srv.url, api_key="k", max_retries=0)
        aux: Any = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "digest"}])
        assert aux.content[0].text == sc.aux_text
        msg: Any = client.messages.create(model="m", max_tokens=5, tools=tools, messages=go)
        assert [b.type for b in msg.content] == ["text", "tool_use"] and msg.stop_reason == "tool_use"
        assert msg.content[1].input == big and msg.content[1].id == "toolu_a"
        with client.messages.stream(model="m", max_tokens=5, tools=tools, messages=go) as stream:
            events = [e.type for e in stream]
            final: Any = stream.get_final_message()
        assert events[0] == "message_start" and events[-1] == "message_stop"
        assert final.content[0].text == "second" and final.stop_reason == "tool_use"
        assert final.content[1].input == {**big, "limit": 8}
        done: Any = client.messages.create(model="m", max_tokens=5, tools=tools, messages=go)
        assert done.content[0].text == sc.final_text and done.stop_reason == "end_turn"
        assert [(r.kind, r.turn, r.streamed) for r in srv.requests] == [
            ("aux", None, False), ("main", 0, False), ("main", 1, True), ("main", None, False)
        ]


def test_claude_code_reads_a_file_through_the_standin(claude_code: ClaudeCode, tmp_path: Path) -> None:
    secret = tmp_path / "notes.txt"
    marker = f"file-content-{uuid.uuid4().hex}"
    secret.write_text(f"first line\n{marker}\n")
    sc = Scenario.of([text("Reading it."), tool_use("Read", {"file_path": str(secret)}, id="toolu_read_1")])
    r = claude_code.run("Read notes.txt for me", sc, allowed_tools=["Read"])
    assert r.returncode == 0, r.describe()
    assert r.stdout_json["result"] == sc.final_text, r.describe()
    main = r.main_requests()
    assert len(main) == 2, r.describe()
    assert main[0].tool_results() == []
    (res,) = main[1].tool_results()
    assert res["tool_use_id"] == "toolu_read_1" and not res.get("is_error"), r.describe()
    assert marker in tool_result_text(res)
    # Claude Code echoes the turn it was given back as the assistant message.
    assistant = [m for m in main[1].body["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["content"][-1]["input"] == {"file_path": str(secret)}


def test_requests_name_the_session_in_metadata_user_id(claude_code: ClaudeCode) -> None:
    """metadata.user_id is a JSON *string* {device_id, account_uuid, session_id};
    session_id is the run's session (also sent as X-Claude-Code-Session-Id) and
    device_id is ~/.claude.json's userID."""
    r = claude_code.run("Say hello", Scenario.of([text("hello")]))
    assert r.returncode == 0, r.describe()
    assert r.session_id and r.home is not None
    for req in r.main_requests():
        uid = json.loads(req.body["metadata"]["user_id"])
        assert set(uid) == {"device_id", "account_uuid", "session_id"}
        assert uid["session_id"] == r.session_id
        assert req.headers["X-Claude-Code-Session-Id"] == r.session_id
        assert req.headers["x-api-key"] == "sk-ant-standin-not-a-real-key"
        assert req.query == {"beta": "true"} and req.body["stream"] is True
    config = json.loads((r.home / ".claude" / ".claude.json").read_text())
    assert uid["device_id"] == config["userID"]


def test_claude_code_runs_bash_and_reports_output(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    cmd = "printf 'sum=%s' $((6*7)) && touch side-effect.txt"
    sc = Scenario.of([tool_use("Bash", {"command": cmd, "description": "compute"}, id="toolu_bash_1")])
    r = claude_code.run("Compute 6*7 in the shell", sc, cwd=work, allowed_tools=["Bash"])
    assert r.returncode == 0, r.describe()
    res = r.tool_result_for("toolu_bash_1")
    assert tool_result_text(res) == "sum=42" and res["is_error"] is False, r.describe()
    assert (work / "side-effect.txt").exists()


def test_pretooluse_hook_deny_stops_the_tool(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    saved = work.parent / "pre-payloads.jsonl"
    command = write_hook(work.parent / "deny_hook.py", save_to=saved, output=DENY)
    bash_input = {"command": "touch must-not-exist.txt && echo ran", "description": "touch"}
    sc = Scenario.of([tool_use("Bash", bash_input, id="toolu_bash_deny")])
    r = claude_code.run(
        "Touch a file", sc, cwd=work, allowed_tools=["Bash"], settings=hook_settings("PreToolUse", "Bash", command)
    )
    assert r.returncode == 0, r.describe()
    assert not (work / "must-not-exist.txt").exists(), "the denied command ran"
    res = r.tool_result_for("toolu_bash_deny")
    assert res["is_error"] is True and "denied by test" in tool_result_text(res), r.describe()
    assert [d["tool_use_id"] for d in r.stdout_json["permission_denials"]] == ["toolu_bash_deny"]
    (p,) = read_payloads(saved)
    assert p["hook_event_name"] == "PreToolUse"
    assert p["tool_name"] == "Bash" and p["tool_input"] == bash_input
    assert p["tool_use_id"] == "toolu_bash_deny"
    assert p["session_id"] == r.session_id
    assert p["cwd"] == str(work)
    assert p["permission_mode"] == "default"
    assert r.home is not None and p["transcript_path"].startswith(str(r.home))
    assert p["transcript_path"].endswith(f"{r.session_id}.jsonl") and Path(p["transcript_path"]).exists()
    assert "tool_response" not in p


def test_posttooluse_hook_receives_the_tool_response(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    (work / "data.txt").write_text("alpha\nbeta\n")
    saved = work.parent / "post-payloads.jsonl"
    command = write_hook(work.parent / "post_hook.py", save_to=saved)
    sc = Scenario.of(
        [tool_use("Read", {"file_path": str(work / "data.txt")}, id="toolu_r")],
        [tool_use("Bash", {"command": "echo out-$((1+1)); echo err >&2", "description": "x"}, id="toolu_b")],
    )
    r = claude_code.run(
        "Read then run", sc, cwd=work, allowed_tools=["Read", "Bash"], settings=hook_settings("PostToolUse", "Read|Bash", command)
    )
    assert r.returncode == 0, r.describe()
    read, bash = read_payloads(saved)
    assert read["hook_event_name"] == "PostToolUse" and read["tool_name"] == "Read" and read["tool_use_id"] == "toolu_r"
    assert read["tool_response"]["file"]["content"] == "alpha\nbeta\n"
    assert read["tool_response"]["file"]["filePath"] == str(work / "data.txt")
    assert bash["tool_name"] == "Bash" and bash["tool_input"]["command"].startswith("echo out-")
    # The Bash tool runs the command with stderr merged into stdout.
    assert bash["tool_response"]["stdout"] == "out-2\nerr" and bash["tool_response"]["stderr"] == ""
    assert bash["session_id"] == read["session_id"] == r.session_id
    assert isinstance(bash["duration_ms"], int)


@pytest.mark.parametrize("configured_by", ["mcp_config_flag", "project_mcp_json"])
def test_mcp_tool_is_called_by_prefixed_name_and_seen_by_pretooluse_hook(claude_code: ClaudeCode, configured_by: str) -> None:
    work = claude_code.workdir()
    received = work.parent / "shout-calls.jsonl"
    saved = work.parent / "mcp-payloads.jsonl"
    command = write_hook(work.parent / "mcp_hook.py", save_to=saved)
    servers = {"mcpServers": {"srv": shout_mcp_server(received)}}
    kw: dict[str, Any] = {}
    if configured_by == "mcp_config_flag":
        kw["mcp_config"] = servers
    else:  # -p mode uses a project's .mcp.json without asking (no trust dialog)
        (work / ".mcp.json").write_text(json.dumps(servers))
    sc = Scenario.of([tool_use("mcp__srv__shout", {"text": "quiet words"}, id="toolu_mcp")])
    settings = hook_settings("PreToolUse", "mcp__srv__.*", command)
    r = claude_code.run("Shout it", sc, cwd=work, allowed_tools=["mcp__srv__shout"], settings=settings, **kw)
    assert r.returncode == 0, r.describe()
    res = r.tool_result_for("toolu_mcp")
    assert not res.get("is_error") and "QUIET WORDS!" in tool_result_text(res), r.describe()
    assert read_payloads(received) == [{"tool": "shout", "arguments": {"text": "quiet words"}}]
    (p,) = read_payloads(saved)
    assert p["tool_name"] == "mcp__srv__shout" and p["tool_input"] == {"text": "quiet words"}
    assert p["mcp_server"]["name"] == "srv"


def test_mcp_tool_not_in_allowed_tools_is_refused_before_the_server(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    received = work.parent / "shout-calls.jsonl"
    sc = Scenario.of([tool_use("mcp__srv__shout", {"text": "x"}, id="toolu_mcp")])
    r = claude_code.run("Shout it", sc, cwd=work, mcp_config={"mcpServers": {"srv": shout_mcp_server(received)}})
    res = r.tool_result_for("toolu_mcp")
    assert res["is_error"] is True and "haven't granted" in tool_result_text(res), r.describe()
    assert read_payloads(received) == []


def test_streaming_and_non_streaming_turns_both_work(claude_code: ClaudeCode) -> None:
    """Claude Code streams; an SSE body without events makes it retry the same
    request without ``stream`` (its non-streaming fallback), which the stand-in
    answers as JSON. Turn 0 goes that way, turn 1 streams."""
    work = claude_code.workdir()
    (work / "a.txt").write_text("from-the-json-turn\n")
    sc = Scenario(
        [
            Turn([text("json turn"), tool_use("Read", {"file_path": str(work / "a.txt")}, id="toolu_json")], break_stream=True),
            Turn([tool_use("Bash", {"command": "echo from-the-sse-turn", "description": "x"}, id="toolu_sse")]),
        ]
    )
    r = claude_code.run("Read a.txt then echo", sc, cwd=work, allowed_tools=["Read", "Bash"])
    assert r.returncode == 0, r.describe()
    shape = [(q.turn, q.streamed, q.broken_stream) for q in r.requests if q.kind == "main"]
    assert shape == [(0, True, True), (0, False, False), (1, True, False), (None, True, False)], r.describe()
    assert "from-the-json-turn" in tool_result_text(r.tool_result_for("toolu_json"))
    assert tool_result_text(r.tool_result_for("toolu_sse")) == "from-the-sse-turn"


def test_webfetch_summary_request_is_auxiliary_and_consumes_no_turn(claude_code: ClaudeCode) -> None:
    """WebFetch GETs the page (over TLS: it upgrades http:// to https://), then
    asks the model to digest it in a separate, tool-less request. That request
    is answered as auxiliary; the scenario's next turn still plays."""
    page_marker = f"page-secret-{uuid.uuid4().hex[:8]}"
    with StandIn(tls=True) as srv:
        srv.pages["/doc.html"] = ("text/html", f"<html><body><h1>Doc</h1><p>{page_marker}</p></body></html>")
        url = f"{srv.https_url}/doc.html"
        sc = Scenario.of(
            [tool_use("WebFetch", {"url": url, "prompt": "What does it say?"}, id="toolu_wf")],
            [tool_use("Bash", {"command": "echo after-fetch", "description": "x"}, id="toolu_after")],
        )
        r = claude_code.run("Fetch the doc", sc, allowed_tools=["WebFetch", "Bash"], standin=srv)
    assert r.returncode == 0, r.describe()
    assert [q.path for q in r.requests if q.kind == "page"] == ["/doc.html"]
    (aux,) = r.aux_requests()
    assert aux.body["tools"] == [] and page_marker in json.dumps(aux.body["messages"])
    assert json.loads(aux.body["metadata"]["user_id"])["session_id"] == r.session_id
    assert tool_result_text(r.tool_result_for("toolu_wf")) == sc.aux_text
    assert tool_result_text(r.tool_result_for("toolu_after")) == "after-fetch", r.describe()


# ---------------------------------------------------------------- hook protocol facts

ASK = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "asked"}}


@pytest.mark.parametrize(
    ("output", "exit_code", "stderr", "runs", "result_has"),
    [
        pytest.param(DENY, 0, "", False, "denied by test", id="deny_json_blocks"),
        pytest.param(None, 2, "blocked via exit 2", False, "blocked via exit 2", id="exit_2_blocks_with_stderr"),
        pytest.param(ASK, 0, "", False, "asked", id="ask_is_a_deny_in_print_mode"),
        pytest.param(None, 1, "hook crashed", True, "ran", id="exit_1_fails_open"),
        pytest.param("{not json", 0, "", True, "ran", id="unparsable_output_fails_open"),
    ],
)
def test_pretooluse_hook_protocol(
    claude_code: ClaudeCode, output: dict | str | None, exit_code: int, stderr: str, runs: bool, result_has: str
) -> None:
    work = claude_code.workdir()
    saved = work.parent / "payloads.jsonl"
    command = write_hook(work.parent / "hook.py", save_to=saved, output=output, exit_code=exit_code, stderr=stderr)
    sc = Scenario.of([tool_use("Bash", {"command": "touch ran.txt && echo ran", "description": "x"}, id="toolu_b")])
    r = claude_code.run("Run it", sc, cwd=work, allowed_tools=["Bash"], settings=hook_settings("PreToolUse", "Bash", command))
    assert len(read_payloads(saved)) == 1, r.describe()
    assert (work / "ran.txt").exists() is runs, r.describe()
    res = r.tool_result_for("toolu_b")
    assert result_has in tool_result_text(res) and bool(res.get("is_error")) is not runs, r.describe()


def test_pretooluse_hook_updated_input_replaces_the_command(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                  "updatedInput": {"command": "echo rewritten", "description": "x"}}}
    command = write_hook(work.parent / "hook.py", save_to=work.parent / "p.jsonl", output=out)
    sc = Scenario.of([tool_use("Bash", {"command": "touch original.txt", "description": "x"}, id="toolu_b")])
    r = claude_code.run("Run it", sc, cwd=work, allowed_tools=["Bash"], settings=hook_settings("PreToolUse", "Bash", command))
    assert tool_result_text(r.tool_result_for("toolu_b")) == "rewritten", r.describe()
    assert not (work / "original.txt").exists()


def test_posttooluse_hook_feedback_arrives_as_a_system_message(claude_code: ClaudeCode) -> None:
    """A PostToolUse block reason / additionalContext does not change the
    tool_result; Claude Code adds a ``role: system`` message after it."""
    work = claude_code.workdir()
    out = {"decision": "block", "reason": "post says no",
           "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "context from hook"}}
    command = write_hook(work.parent / "hook.py", save_to=work.parent / "p.jsonl", output=out)
    sc = Scenario.of([tool_use("Bash", {"command": "echo done-it", "description": "x"}, id="toolu_b")])
    r = claude_code.run("Run it", sc, cwd=work, allowed_tools=["Bash"], settings=hook_settings("PostToolUse", "Bash", command))
    assert tool_result_text(r.tool_result_for("toolu_b")) == "done-it", r.describe()
    texts = "\n".join(r.main_requests()[-1].trailing_texts("system"))
    assert "post says no" in texts and "context from hook" in texts, r.describe()


def test_posttooluse_hook_can_replace_an_mcp_tool_result(claude_code: ClaudeCode) -> None:
    work = claude_code.workdir()
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": "REDACTED BY HOOK"}}
    command = write_hook(work.parent / "hook.py", save_to=work.parent / "p.jsonl", output=out)
    sc = Scenario.of([tool_use("mcp__srv__shout", {"text": "secret"}, id="toolu_mcp")])
    r = claude_code.run(
        "Shout", sc, cwd=work, allowed_tools=["mcp__srv"], mcp_config={"mcpServers": {"srv": shout_mcp_server()}},
        settings=hook_settings("PostToolUse", "mcp__srv__shout", command),
    )
    assert tool_result_text(r.tool_result_for("toolu_mcp")) == "REDACTED BY HOOK", r.describe()
    assert "SECRET" not in json.dumps(r.main_requests()[-1].body["messages"])
