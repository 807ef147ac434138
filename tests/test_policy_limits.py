"""Policy files are hostile input: aliases, size, drop-in count, depth and tags
are bounded, every refusal is a clear file:line:column error, and the last good
policy stays in force. (Loading speed is measured by bench/policy.py.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from agentsh.agent.core.events.models import Event, PolicyLoaded, PolicyRejected
from agentsh.agent.core.policy.loader import (
    MAX_DROPINS,
    MAX_ERRORS,
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    PolicyError,
    load_dir,
    load_paths,
    load_texts,
)
from agentsh.agent.core.policy.store import PolicyStore
from agentsh.agent.core.policy.yamlread import MAX_DEPTH
from tests.conftest import AGENTSHCTL

# The classic "billion laughs": 9 levels of 9 aliases, 9**9 strings once expanded.
BOMB = "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9) if p else ','.join(['lol'] * 9)}]\n"
    for p, c in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def errors_of(texts: list[tuple[str, str]]) -> list[str]:
    with pytest.raises(PolicyError) as ei:
        load_texts(texts)
    return ei.value.errors


def rules(n: int, start: int = 0) -> str:
    return "mcp:\n  denied_tools:\n" + "".join(
        f'    - {{server: "srv{i % 7}", tool: "tool_{i}_*"}}\n' for i in range(start, start + n)
    )


# ------------------------------------------------------------------ aliases


def test_alias_bomb_is_refused_at_its_first_anchor_with_one_error(tmp_path: Path) -> None:
    assert len(BOMB) < 400 and "*h" in BOMB
    (tmp_path / "agentsh.yaml").write_text(BOMB)
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    assert ei.value.errors == [
        f"{tmp_path}/agentsh.yaml:1:4: a: YAML anchor/alias &a: anchors and aliases are not "
        "supported in policy files, write the value out (docs/policy.md, Limits) "
        "(80 more in this file)"
    ]


def test_ctl_policy_validate_refuses_the_alias_bomb(tmp_path: Path) -> None:
    (tmp_path / "policy.d").mkdir()
    (tmp_path / "policy.d" / "10-bomb.yaml").write_text(BOMB)
    r = subprocess.run(
        [AGENTSHCTL, "policy", "validate", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1
    assert f"{tmp_path}/policy.d/10-bomb.yaml:1:4: a: YAML anchor/alias &a:" in r.stderr


def test_alias_is_reported_where_it_is_used_with_its_key_path() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  denied_tools:\n    - {tool: x}\n    - *rule\n")])
    assert errs == [
        "a.yaml:4:7: mcp.denied_tools[1]: YAML anchor/alias *rule: anchors and aliases are "
        "not supported in policy files, write the value out (docs/policy.md, Limits)"
    ]


def test_anchor_on_a_value_is_refused_even_without_an_alias() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  fail_closed: &yes true\n")])
    assert len(errs) == 1 and errs[0].startswith("a.yaml:2:16: mcp.fail_closed: YAML anchor/alias &yes:")


def test_merge_key_is_refused() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  <<: {fail_closed: true}\n")])
    assert errs == ["a.yaml:2:3: mcp: YAML merge keys ('<<') are not supported"]


async def test_watcher_rejects_a_bomb_dropin_and_keeps_the_last_good_policy(tmp_path: Path) -> None:
    (tmp_path / "agentsh.yaml").write_text("mcp:\n  fail_closed: true\n")
    store = PolicyStore(tmp_path, tmp_path / "state")
    lp, err = store.load_initial()
    assert err is None and lp.policy.mcp.fail_closed is True
    events: list[Event] = []
    store.set_emitter(lambda ev: events.append(ev) is None)
    watcher = asyncio.ensure_future(store.watch(lambda: 0.05, lambda: True))
    try:
        (tmp_path / "policy.d").mkdir()
        (tmp_path / "policy.d" / "50-bomb.yaml").write_text(BOMB)
        for _ in range(400):
            if store.rejections:
                break
            await asyncio.sleep(0.05)
    finally:
        watcher.cancel()
    assert store.rejections == 1
    assert store.current.hash == lp.hash and store.policy.mcp.fail_closed is True
    (rejected,) = [e for e in events if isinstance(e, PolicyRejected)]
    assert rejected.trigger == "watch" and rejected.kept_hash == lp.hash
    assert "50-bomb.yaml:1:4: a: YAML anchor/alias &a" in rejected.errors[0]
    assert not [e for e in events if isinstance(e, PolicyLoaded)]


# ------------------------------------------------------------------ size and count


def test_oversize_file_is_refused_without_being_parsed(tmp_path: Path) -> None:
    big = tmp_path / "policy.d" / "20-big.yaml"
    big.parent.mkdir()
    pad = "# " + "x" * 1022 + "\n"
    big.write_text(pad * (MAX_FILE_BYTES // 1024) + "mcp: {fail_closed: true}\n")
    size = big.stat().st_size
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    assert ei.value.errors == [
        f"{big}:1:1: <root>: file is larger than {MAX_FILE_BYTES} bytes ({size} bytes), "
        "the limit for one policy file (docs/policy.md, Limits)"
    ]
    # the same limit holds for text handed in directly (agentshctl, tools)
    errs = errors_of([("t.yaml", big.read_text())])
    assert errs[0].startswith(f"t.yaml:1:1: <root>: file is larger than {MAX_FILE_BYTES} bytes")


def test_files_just_under_the_limit_load(tmp_path: Path) -> None:
    f = tmp_path / "agentsh.yaml"
    body = "mcp: {fail_closed: true}\n"
    pad = "#" * 1023 + "\n"
    f.write_text(pad * ((MAX_FILE_BYTES - len(body)) // 1024) + body)
    assert f.stat().st_size <= MAX_FILE_BYTES
    assert load_dir(tmp_path).policy.mcp.fail_closed is True


def test_total_size_of_all_files_is_bounded() -> None:
    chunk = "#" * (MAX_FILE_BYTES - 100) + "\nmcp: {}\n"
    n = MAX_TOTAL_BYTES // len(chunk) + 1
    errs = errors_of([(f"{i:02d}.yaml", chunk) for i in range(n)])
    assert errs == [
        f"{n - 1:02d}.yaml:1:1: <root>: the policy files add up to more than {MAX_TOTAL_BYTES} "
        "bytes, the limit for one policy (docs/policy.md, Limits)"
    ]


def test_too_many_dropins_are_refused_and_the_limit_itself_loads(tmp_path: Path) -> None:
    d = tmp_path / "policy.d"
    d.mkdir()
    for i in range(MAX_DROPINS):
        (d / f"{i:04d}.yaml").write_text(f'mcp:\n  denied_tools:\n    - {{tool: "t{i}"}}\n')
    lp = load_dir(tmp_path)
    assert [r.tool for r in lp.policy.mcp.denied_tools] == [f"t{i}" for i in range(MAX_DROPINS)]
    (d / "9999.yaml").write_text("mcp: {}\n")
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    assert ei.value.errors == [
        f"{d}: {MAX_DROPINS + 1} drop-in files, more than the limit of {MAX_DROPINS} "
        "(docs/policy.md, Limits)"
    ]


def test_error_in_the_last_of_many_dropins_names_its_merged_index(tmp_path: Path) -> None:
    d = tmp_path / "policy.d"
    d.mkdir()
    for i in range(200):
        (d / f"{i:04d}.yaml").write_text(rules(10, start=10 * i))
    bad = d / "0199.yaml"
    bad.write_text(rules(9, start=1990) + '    - {tool: "[oops"}\n')
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    assert ei.value.errors == [
        f"{bad}:12:14: mcp.denied_tools[1999].tool: unclosed '[' at position 0 in glob '[oops'"
    ]


def test_fifo_named_on_the_command_line_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    with pytest.raises(PolicyError) as ei:
        load_paths([fifo])  # no writer: a blocking open would hang here
    assert ei.value.errors == [f"{fifo}: cannot read: not a regular file: {fifo}"]


# ------------------------------------------------------------------ positions in big files


def test_errors_deep_in_a_10k_rule_file_carry_line_and_column(tmp_path: Path) -> None:
    lines = rules(10_000).splitlines(keepends=True)
    # rule 7777 is on line 3 + 7777; give it a bad glob and rule 9000 an unknown key
    lines[2 + 7777] = '    - {server: "srv1", tool: "x[z-a]"}\n'
    lines[2 + 9000] = '    - {server: "srv2", tol: "typo"}\n'
    main = tmp_path / "agentsh.yaml"
    main.write_text("".join(lines))
    drop = tmp_path / "policy.d" / "10.yaml"
    drop.parent.mkdir()
    drop.write_text(rules(3) + "    - {tool: 5, server: [a]}\n")
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    assert ei.value.errors == [
        f"{main}:7780:30: mcp.denied_tools[7777].tool: bad character range 'z-a' at position 2 "
        "in glob 'x[z-a]'",
        f"{main}:9003:24: mcp.denied_tools[9000].tol: unknown key 'tol' (not part of the policy schema)",
        f"{drop}:6:25: mcp.denied_tools[10003].server: Input should be a valid string",
        f"{drop}:6:14: mcp.denied_tools[10003].tool: Input should be a valid string",
    ]


def test_error_list_is_capped_with_a_count_of_the_rest() -> None:
    text = "mcp:\n  denied_tools:\n" + '    - {tool: "[x"}\n' * (MAX_ERRORS + 30)
    errs = errors_of([("a.yaml", text)])
    assert len(errs) == MAX_ERRORS + 1
    assert errs[0].startswith("a.yaml:3:14: mcp.denied_tools[0].tool: unclosed '['")
    assert errs[-1] == "... and 30 more errors"


# ------------------------------------------------------------------ shapes YAML allows and policies don't


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    deep = "mcp:\n  servers: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    errs = errors_of([("a.yaml", deep)])
    assert len(errs) == 1
    assert f"nested more than {MAX_DEPTH} levels deep" in errs[0]
    assert errs[0].startswith("a.yaml:2:")


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!python/object/apply:os.system [id]", "tag:yaml.org,2002:python/object/apply:os.system"),
        ("!!binary aGVsbG8=", "tag:yaml.org,2002:binary"),
        ("!!set {a: null}", "tag:yaml.org,2002:set"),
        ("!custom x", "!custom"),
    ],
)
def test_explicit_yaml_tags_other_than_plain_types_are_refused(value: str, tag: str) -> None:
    errs = errors_of([("a.yaml", f"mcp:\n  known_endpoints: {value}\n")])
    assert errs == [f"a.yaml:2:20: mcp.known_endpoints: YAML tag {tag!r} is not supported"]


def test_plain_yaml_types_still_resolve() -> None:
    lp = load_texts(
        [
            (
                "a.yaml",
                "events:\n  queue_size: 0x400\n  fsync_interval_seconds: .5\n"
                "  file_mode: 0600\nmcp:\n  fail_closed: yes\n  known_endpoints: ['10.0.0.1', 'true']\n",
            )
        ]
    )
    ev = lp.policy.events
    assert (ev.queue_size, ev.fsync_interval_seconds, ev.file_mode) == (1024, 0.5, 0o600)
    assert lp.policy.mcp.fail_closed is True
    assert lp.policy.mcp.known_endpoints == ["10.0.0.1", "true"]


def test_a_second_yaml_document_is_refused() -> None:
    errs = errors_of([("a.yaml", "mcp: {}\n---\nmcp: {fail_closed: true}\n")])
    assert errs == [
        "a.yaml:2:1: a policy file must hold one YAML document, found another ('---')"
    ]


def test_non_string_mapping_key_is_refused_and_the_rest_still_checked() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  ? [a, b]\n  : 1\n  fail_closed: true\n  fail_closed: false\n")])
    assert errs == [
        "a.yaml:2:5: mcp: mapping keys must be plain strings",
        "a.yaml:5:3: mcp.fail_closed: duplicate key 'fail_closed'",
    ]


def test_backwards_glob_range_is_a_policy_error_not_a_crash_at_match_time() -> None:
    errs = errors_of([("a.yaml", 'mcp:\n  denied_servers:\n    - id: "db[9-0]"\n')])
    assert errs == [
        "a.yaml:3:11: mcp.denied_servers[0].id: bad character range '9-0' at position 3 in glob 'db[9-0]'"
    ]


def test_quoted_merge_key_lookalike_is_an_ordinary_key() -> None:
    # a quoted "<<" is a plain string key (here: unknown to the schema), not a merge key
    errs = errors_of([("a.yaml", 'mcp:\n  "<<": 1\n')])
    assert errs == ["a.yaml:2:3: mcp.<<: unknown key '<<' (not part of the policy schema)"]


def test_fast_reader_and_positional_reader_build_the_same_data() -> None:
    from agentsh.agent.core.policy.yamlread import read_data, read_yaml

    repo = Path(__file__).resolve().parents[1]
    texts = [p.read_text() for p in sorted((repo / "policies").rglob("*.yaml"))]
    texts.append(
        "a: [1, -2, 0o17, 0x1f, 1_000, 1.5e3, .inf, ~, null, yes, No, on, '', \"q\", 2001-12-14]\n"
        "b:\n  c: {d: [[], {}]}\n  e: |\n    multi\n    line\n'': empty key\n"
    )
    assert len(texts) > 3
    for text in texts:
        fast = read_data(text)
        errors: list[str] = []
        slow, _ = read_yaml(text, "x.yaml", 0, errors)
        assert errors == [] and fast == slow
