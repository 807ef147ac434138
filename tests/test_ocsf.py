"""The OCSF form of the event log (``events.format: ocsf``; docs/events.md, "OCSF"):
every event type maps to an OCSF 1.5.0 class and validates against the vendored
OCSF definitions, which are what the OCSF schema export derives; a real daemon
writes OCSF lines when the policy says so, and the tools still read them."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from ocsf_json_schema import get_ocsf_schema

from agentsh.agent.core.client_async import ControlClient
from agentsh.agent.core.events import models as m
from agentsh.agent.core.events.ocsf import (
    ACTION,
    APPLICATION_LIFECYCLE,
    CLASSES,
    DISPOSITION,
    FINDING_STATUS,
    MAPPINGS,
    OCSF_VERSION,
    SCHEMA_DIR,
    SCHEMA_FILE,
    SEVERITY_CAPTION,
    SEVERITY_ID,
    STATUS,
    Mapping,
    epoch_ms,
)
from agentsh.agent.core.events.ocsf_vendor import build_bundle, dumps
from agentsh.agent.core.events.output import ocsf as output_ocsf
from tests.conftest import AGENTSHCTL, DaemonProc, wait_for
from tests.test_event_contract import full, minimal, write

_VALIDATOR: Draft202012Validator | None = None


def ocsf_validator() -> Draft202012Validator:
    global _VALIDATOR
    if _VALIDATOR is None:
        schema = json.loads(SCHEMA_FILE.read_text())
        Draft202012Validator.check_schema(schema)
        _VALIDATOR = Draft202012Validator(schema, format_checker=FormatChecker())
    return _VALIDATOR


def errors_of(d: dict[str, Any]) -> list[str]:
    v = ocsf_validator()
    out = []
    for e in v.iter_errors(d):
        # oneOf failures: report the reasons under the class this line claims
        for sub in e.context or [e]:
            out.append(f"{list(sub.absolute_path)}: {sub.message[:200]}")
    return out


def variants() -> list[m.Event]:
    """Every type, full and minimal, plus the decisions that change the mapping."""
    evs: list[m.Event] = [*(full(c, v) for c in m.EVENT_TYPES for v in range(3)), *(minimal(c) for c in m.EVENT_TYPES)]
    call = dict(server_id="fs", tool_name="write_file", jsonrpc_id=2**70, input={"path": "/etc/passwd"})
    evs += [
        m.MCPToolCalled(**call, action="block", reason="tool denied"),
        m.MCPToolCalled(**call, action="allow"),
        m.NetworkConnect(remote_addr="[2001:db8::1]:443", family="ipv6", result=-1),
        m.NetworkConnect(remote_addr="10.0.0.1:99999", family="ipv4", result=-111),
        m.NetworkConnect(remote_addr="", family="unix", result=0),
        m.MCPNetworkConnection(remote_addr="mcp.example.com:8443", server_id="s", server_type="http",
                               action="block", phase="connect"),
        m.MCPServerDiscovered(server_id="s", server_type="sse", server_addr="https://mcp.example.com/sse",
                              tools=0, error="timeout", tls_fingerprint_ok=False),
        m.LLMRequest(request_id="r", provider="anthropic", path="/v1/messages", status=502, streaming=True,
                     latency_ms=12.6, request_bytes=1, response_bytes=2, error="upstream reset",
                     tool_calls=2, tool_calls_blocked=1),
        m.AdminAction(action="something_new", outcome="error", uid=0, pid=1, exe="/usr/bin/curl"),
        m.ComponentExited(component="llm-proxy", exit_code=1, will_restart=False),
    ]
    evs += [m.HookEvaluation(hook_event="PreToolUse", tool_name="WebFetch", decision=dec) for dec in ("allow", "warn", "ask", "deny")]
    return evs


def test_every_event_type_has_an_ocsf_form_that_validates_against_the_ocsf_schema(tmp_path: Path) -> None:
    assert set(MAPPINGS) == m.TYPE_NAMES, "every event type needs a mapping in agent/core/events/ocsf.py"
    evs = variants()
    lines = write(evs, tmp_path / "o.jsonl", fmt="ocsf")
    assert len(lines) == len(evs)
    seen_classes = set()
    for ev, d in zip(evs, lines, strict=True):
        assert errors_of(d) == [], (ev.type, errors_of(d)[:8])
        mp = MAPPINGS[ev.type]
        assert d["class_uid"] == mp.cls.uid and d["category_uid"] == mp.cls.category_uid, ev.type
        assert d["type_uid"] == d["class_uid"] * 100 + d["activity_id"]
        native = d["unmapped"]
        assert native["type"] == ev.type and native["id"] == d["metadata"]["uid"] == ev.id
        assert d["metadata"]["event_code"] == ev.type and d["metadata"]["version"] == OCSF_VERSION
        assert d["time"] == epoch_ms(native["timestamp"])
        assert d["severity_id"] == SEVERITY_ID[native["severity"]]
        assert m.parse_event(native).type == ev.type  # the native event, whole, under unmapped
        seen_classes.add(d["class_uid"])
    assert seen_classes == {c.uid for c in CLASSES.values()}


_text = st.text(max_size=60)
_addr = st.one_of(
    _text,
    st.builds(lambda h, p: f"{h}:{p}", st.one_of(st.ip_addresses().map(str), _text), st.integers(-5, 70000)),
    st.builds(lambda h, p: f"[{h}]:{p}", st.ip_addresses(v=6).map(str), st.integers(0, 70000)),
    st.builds(lambda h: f"https://{h}/mcp", _text),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(addr=_addr, text=_text, jid=st.one_of(st.none(), st.integers(), _text, st.lists(st.integers(), max_size=3)),
       result=st.integers(-4096, 4096))
def test_hostile_addresses_and_text_still_map_to_valid_ocsf(addr: str, text: str, jid: Any, result: int) -> None:
    """What senders and the network put in an event (addresses, names, reasons, ids)
    never makes an OCSF line invalid or falls back to Base Event."""
    evs = [
        m.MCPNetworkConnection(remote_addr=addr, server_id=text, server_type="http", action="block"),
        m.NetworkConnect(remote_addr=addr, family="ipv6", result=result),
        m.MCPServerDiscovered(server_id=text, server_type="http", server_addr=addr, tools=1, error=text or None),
        m.MCPToolCalled(server_id=text, tool_name=text, jsonrpc_id=jid, action="block", reason=text,
                        comm=text, exe=text or None, cmdline=[text], username=text or None, uid=0, pid=1),
        m.MCPToolCallIntercepted(request_id=text, dialect="openai", tool_name=text, tool_call_id=text,
                                 server_id=text, server_type="sse", server_addr=addr, tool_hash=text, action="allow"),
    ]
    for ev in evs:
        ev.id = "0" * 26
        d = output_ocsf(ev, {**ev.model_dump(mode="json", exclude_none=True),
                             "timestamp": "2026-11-22T10:00:00.000001Z", "host": text or "h"})
        assert errors_of(d) == [], (ev.type, addr, errors_of(d)[:5])
        assert d["class_uid"] == MAPPINGS[ev.type].cls.uid  # not the Base Event fallback


def test_an_event_whose_mapping_fails_is_written_as_a_base_event_not_lost(tmp_path: Path, monkeypatch) -> None:
    def broken(ev: Any, d: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("a bug in a mapping")

    monkeypatch.setitem(MAPPINGS, "shim_exited", Mapping(APPLICATION_LIFECYCLE, "", "", "", broken))
    d = write([m.ShimExited(server_id="fs", exit_code=3)], tmp_path / "o.jsonl", "ocsf")[0]
    assert errors_of(d) == []
    assert (d["class_uid"], d["activity_id"], d["unmapped"]["type"]) == (0, 99, "shim_exited")
    assert d["status_detail"].startswith("OCSF mapping of shim_exited failed: KeyError")


def test_the_ocsf_validation_bites(tmp_path: Path) -> None:
    d = write([m.MCPToolCalled(server_id="fs", tool_name="t", action="block", reason="x")], tmp_path / "o", "ocsf")[0]
    assert errors_of(d) == []
    bad_field = {**d, "agentsh_extra": 1}
    bad_activity = {**d, "activity_id": 7}  # API Activity has no activity 7
    bad_pid = {**d, "actor": {"process": {"pid": "4242"}}}
    no_api = {k: v for k, v in d.items() if k != "api"}
    bad_class = {**d, "class_uid": 6099}
    for bad in (bad_field, bad_activity, bad_pid, no_api, bad_class):
        assert errors_of(bad), bad


def test_decisions_map_to_ocsf_actions_dispositions_and_findings(tmp_path: Path) -> None:
    det = m.DetectionResult(pattern="hidden_instructions", category="tool_poisoning", severity="critical",
                            matches=[m.DetectionMatch(text="ignore previous", position=3)], field="description")
    evs = [
        m.MCPToolCalled(server_id="fs", tool_name="write_file", jsonrpc_id=7, action="block", reason="tool denied",
                        source="shim", pid=4242, uid=1000, comm="node"),
        m.MCPDetection(server_id="fs", tool_name="write_file", detection=det, action="block"),
        m.AdminAction(action="bpf_detach", uid=0, pid=99, exe="/usr/bin/agentshctl"),
        m.MCPNetworkConnection(remote_addr="10.1.2.3:443", server_id="api", server_type="http", action="block",
                               family="ipv4", protocol="tcp"),
    ]
    call, finding, admin, conn = write(evs, tmp_path / "o.jsonl", "ocsf")
    assert (call["class_name"], call["activity_name"], call["status"], call["action"], call["disposition"]) == (
        "API Activity", "Call", "Failure", "Denied", "Blocked")
    assert call["status_detail"] == "tool denied" and call["api"]["request"]["uid"] == "7"
    assert call["actor"]["process"]["pid"] == 4242 and call["actor"]["user"]["uid"] == "1000"
    assert call["severity"] == "Medium" and call["metadata"]["product"]["feature"]["name"] == "shim"
    assert (finding["class_uid"], finding["severity_id"], finding["status"]) == (2004, 5, "New")
    assert finding["finding_info"]["analytic"]["name"] == "hidden_instructions" and finding["is_alert"] is True
    assert (admin["class_uid"], admin["activity_name"], admin["severity_id"]) == (3004, "Disable", 4)
    assert admin["entity"]["type"] == "BPF programs" and admin["actor"]["process"]["file"]["path"] == "/usr/bin/agentshctl"
    assert (conn["activity_name"], conn["dst_endpoint"]["ip"], conn["dst_endpoint"]["port"]) == ("Refuse", "10.1.2.3", 443)
    assert conn["connection_info"]["protocol_ver_id"] == 4 and conn["disposition"] == "Blocked"


def test_vendored_ocsf_schema_is_what_the_ocsf_schema_export_derives() -> None:
    assert SCHEMA_FILE.read_text() == dumps(build_bundle()), (
        "regenerate with python -m agentsh.agent.core.events.ocsf_vendor"
    )
    lic = (SCHEMA_DIR / "LICENSE").read_text()
    assert "Apache License" in lic and "Version 2.0" in lic


def test_captions_and_ids_match_the_ocsf_schema() -> None:
    src = get_ocsf_schema(version=OCSF_VERSION)
    assert src["version"] == OCSF_VERSION
    classes = src["classes"]
    dictionary = src["dictionary_attributes"]

    def captions(attrs: dict[str, Any], name: str) -> dict[int, str]:
        return {int(k): v["caption"] for k, v in attrs[name]["enum"].items()}

    for key, c in CLASSES.items():
        cls = classes[key]
        assert (cls["uid"], cls["caption"]) == (c.uid, c.name), key
        assert captions(cls["attributes"], "category_uid") == {c.category_uid: c.category_name}, key
        assert captions(cls["attributes"], "class_uid") == {c.uid: c.name}, key
        assert captions(cls["attributes"], "activity_id") == c.activities, key
        status = captions(cls["attributes"], "status_id")
        assert {k: status[k] for k in c.statuses} == c.statuses, key
    assert {k: v for k, v in captions(dictionary, "severity_id").items() if k in SEVERITY_CAPTION} == SEVERITY_CAPTION
    assert {k: v for k, v in captions(dictionary, "status_id").items() if k in STATUS} == STATUS
    assert captions(classes["detection_finding"]["attributes"], "status_id") == FINDING_STATUS
    api = classes["api_activity"]["attributes"]
    assert {k: v for k, v in captions(api, "action_id").items() if k in ACTION} == ACTION
    disp = captions(api, "disposition_id")
    assert {k: disp[k] for k in DISPOSITION} == DISPOSITION


# ------------------------------------------------------------------ a real daemon

OCSF_POLICY = """
network:
  enabled: false
proxy:
  mode: disabled
daemon:
  watch_interval_seconds: 0.2
events:
  fsync_interval_seconds: 0.2
  format: ocsf
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()] if path.exists() else []


def test_events_format_ocsf_makes_the_daemon_write_ocsf_lines(daemon_factory) -> None:
    d: DaemonProc = daemon_factory(OCSF_POLICY, start=False)
    d.start(wait=False)

    def started() -> dict[str, Any] | None:
        assert d.proc is not None and d.proc.poll() is None, d.log()
        return next((x for x in _lines(d.events_path) if x.get("metadata", {}).get("event_code") == "daemon_started"), None)

    first = wait_for(started, 30, what="daemon_started in OCSF")
    wait_for(d.socket.exists, 10, what="socket")
    assert (first["class_uid"], first["activity_name"], first["unmapped"]["pid"]) == (6002, "Start", d.proc.pid)

    async def hand_in() -> dict[str, Any]:
        async with ControlClient(str(d.socket)) as c:
            return await c.post("/v1/events", {"events": [
                {"type": "mcp_tool_called", "source": "shim", "server_id": "fs", "tool_name": "write_file",
                 "jsonrpc_id": 7, "input": {"path": "/etc/shadow"}, "action": "block", "reason": "tool denied",
                 "timestamp": "2026-11-22T10:00:00Z"}]})

    assert asyncio.run(hand_in())["accepted"] == 1
    call = wait_for(lambda: next((x for x in _lines(d.events_path)
                                  if x.get("metadata", {}).get("event_code") == "mcp_tool_called"), None), 15)
    assert errors_of(call) == [] and errors_of(first) == []
    assert (call["class_uid"], call["action"], call["severity"]) == (6003, "Denied", "Medium")
    assert call["metadata"]["original_time"] == "2026-11-22T10:00:00Z"
    assert "type" not in call and all("class_uid" in x for x in _lines(d.events_path))

    # the tools read both forms: tail shows the native events
    r = subprocess.run([AGENTSHCTL, "--socket", str(d.socket), "events", "tail", "--json", "--events",
                        str(d.events_path), "--type", "mcp_tool_called"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    tailed = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(t["type"], t["action"], t["severity"]) for t in tailed] == [("mcp_tool_called", "block", "medium")]

    # back to native on reload: the events written after it (the reload's admin_action)
    n_before = len(_lines(d.events_path))
    d.write_policy(OCSF_POLICY.replace("format: ocsf", "format: native"))
    assert d.ctl("policy", "reload").returncode == 0
    audit = wait_for(lambda: [x for x in _lines(d.events_path)[n_before:] if x.get("type") == "admin_action"], 15)
    assert audit[0]["action"] == "policy_reload" and audit[0]["severity"] == "medium"
    assert "class_uid" not in audit[0]


def test_schema_command_prints_both_schemas() -> None:
    native = json.loads(subprocess.run([AGENTSHCTL, "events", "schema"], capture_output=True, text=True,
                                       timeout=60, check=True).stdout)
    assert native["$id"].startswith("https://agentsh.dev/schemas/events/v")
    ocsf = json.loads(subprocess.run([AGENTSHCTL, "events", "schema", "--format", "ocsf"], capture_output=True,
                                     text=True, timeout=60, check=True).stdout)
    assert ocsf == json.loads(SCHEMA_FILE.read_text())


