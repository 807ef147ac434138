"""Policy loading: merge rule, drop-ins, embedded default, and every error path
with its file:line:column and key path."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from agentsh.agent.core.policy.globs import glob_match
from agentsh.agent.core.policy.loader import (
    EMBEDDED_DEFAULT,
    PolicyError,
    load_dir,
    load_embedded,
    load_texts,
)
from tests.conftest import AGENTSHCTL


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


def errors_of(texts: list[tuple[str, str]]) -> list[str]:
    with pytest.raises(PolicyError) as ei:
        load_texts([(n, textwrap.dedent(t).lstrip("\n")) for n, t in texts])
    return ei.value.errors


def test_empty_directory_uses_embedded_default(tmp_path: Path) -> None:
    lp = load_dir(tmp_path)
    assert lp.files == [EMBEDDED_DEFAULT]
    assert lp.hash == load_embedded().hash
    assert lp.policy.events.path == "/var/log/agentsh/events.jsonl"


def test_dropins_merge_onto_embedded_default_when_no_main_file(tmp_path: Path) -> None:
    write(tmp_path / "policy.d/10-x.yaml", "mcp:\n  fail_closed: true\n")
    lp = load_dir(tmp_path)
    assert lp.files == [EMBEDDED_DEFAULT, str(tmp_path / "policy.d/10-x.yaml")]
    assert lp.policy.mcp.fail_closed is True
    assert lp.policy.proxy.listen == "127.0.0.1:7390"  # from the default


def test_mappings_merge_scalars_later_wins_lists_concatenate(tmp_path: Path) -> None:
    write(
        tmp_path / "agentsh.yaml",
        """
        mcp:
          fail_closed: false
          denied_tools:
            - {server: a, tool: "delete_*"}
          rate_limits: {enabled: true, default_rpm: 10}
        """,
    )
    write(
        tmp_path / "policy.d/20-b.yaml",
        """
        mcp:
          fail_closed: true
          denied_tools:
            - {tool: exec}
          rate_limits: {default_rpm: 20}
        """,
    )
    write(tmp_path / "policy.d/10-a.yaml", "mcp:\n  denied_tools:\n    - {tool: rm}\n")
    write(tmp_path / "policy.d/README.txt", "not a policy")
    lp = load_dir(tmp_path)
    assert [Path(f).name for f in lp.files] == ["agentsh.yaml", "10-a.yaml", "20-b.yaml"]
    m = lp.policy.mcp
    assert m.fail_closed is True
    assert [r.tool for r in m.denied_tools] == ["delete_*", "rm", "exec"]
    assert m.rate_limits.enabled is True and m.rate_limits.default_rpm == 20


def test_error_in_dropin_names_file_line_column_and_key_path(tmp_path: Path) -> None:
    write(tmp_path / "agentsh.yaml", "mcp:\n  denied_tools:\n    - tool: ok\n")
    f = write(
        tmp_path / "policy.d/20-mcp.yaml",
        """
        mcp:
          denied_tools:
            - tool: fine
            - tool: "[unclosed"
        """,
    )
    with pytest.raises(PolicyError) as ei:
        load_dir(tmp_path)
    # the second file's second item is item [2] of the merged list
    assert ei.value.errors == [
        f"{f}:4:13: mcp.denied_tools[2].tool: unclosed '[' at position 0 in glob '[unclosed'"
    ]


def test_unknown_key_is_an_error_at_the_key() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  fail_closd: true\n")])
    assert errs == ["a.yaml:2:3: mcp.fail_closd: unknown key 'fail_closd' (not part of the policy schema)"]


def test_wrong_type_is_an_error_at_the_value() -> None:
    errs = errors_of([("a.yaml", "events:\n  queue_size: lots\n")])
    assert len(errs) == 1
    assert errs[0].startswith("a.yaml:2:15: events.queue_size: Input should be a valid integer")


def test_bad_enum_value_lists_choices() -> None:
    errs = errors_of([("a.yaml", "proxy:\n  mode: turbo\n")])
    assert errs[0].startswith("a.yaml:2:9: proxy.mode: Input should be 'embedded', 'mcp-only' or 'disabled'")


def test_yaml_syntax_error_has_position() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  denied_tools: [\n")])
    assert errs[0].startswith("a.yaml:3:1: YAML syntax error:")


def test_duplicate_key_is_rejected() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  fail_closed: true\n  fail_closed: false\n")])
    assert errs == ["a.yaml:3:3: mcp.fail_closed: duplicate key 'fail_closed'"]


def test_non_mapping_file_is_rejected() -> None:
    errs = errors_of([("a.yaml", "- just\n- a list\n")])
    assert errs == ["a.yaml:1:1: <root>: a policy file must be a mapping"]


def test_cross_field_error_points_at_the_list_item() -> None:
    errs = errors_of([("a.yaml", "mcp:\n  servers:\n    - id: w\n      type: http\n")])
    assert errs == ["a.yaml:3:7: mcp.servers[0]: a http server needs 'url'"]


def test_unsafe_custom_regex_is_a_policy_error() -> None:
    errs = errors_of(
        [
            (
                "a.yaml",
                """
                mcp:
                  inspection:
                    detection:
                      custom_patterns:
                        - name: bad
                          pattern: "(a+"
                """,
            )
        ]
    )
    assert errs[0].startswith("a.yaml:6:20: mcp.inspection.detection.custom_patterns[0].pattern:")
    assert "compile" in errs[0]


def test_errors_from_several_files_are_all_reported() -> None:
    errs = errors_of([("a.yaml", "mcp: [\n"), ("b.yaml", "x: {\n")])
    assert [e.split(":")[0] for e in errs] == ["a.yaml", "b.yaml"]


def test_hash_is_stable_and_content_based() -> None:
    a = load_texts([("a.yaml", "mcp: {fail_closed: true}\n")])
    b = load_texts([("b.yaml", "mcp:\n  fail_closed: true\n")])
    c = load_texts([("c.yaml", "mcp: {fail_closed: false}\n")])
    assert a.hash == b.hash != c.hash


@pytest.mark.parametrize(
    ("pattern", "value", "ok"),
    [
        ("*", "anything", True),
        ("delete_*", "delete_file", True),
        ("delete_*", "undelete_file", False),
        ("file?", "files", True),
        ("[ab]x", "bx", True),
        ("[!ab]x", "bx", False),
        ("exec", "exec", True),
        ("exec", "execute", False),
    ],
)
def test_globs(pattern: str, value: str, ok: bool) -> None:
    assert glob_match(pattern, value) is ok


def test_shipped_example_policies_are_valid() -> None:
    examples = sorted((Path(__file__).parents[1] / "policies" / "examples").glob("*.yaml"))
    assert examples, "policies/examples/ ships no example"
    for ex in examples:
        load_texts([(str(ex), ex.read_text())])


def test_ctl_policy_validate_reports_errors_and_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "agentsh.yaml", "mcp:\n  tool_policy: maybe\n")
    r = subprocess.run([AGENTSHCTL, "policy", "validate", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{tmp_path}/agentsh.yaml:2:16: mcp.tool_policy:" in r.stderr


def test_ctl_policy_validate_accepts_good_files(tmp_path: Path) -> None:
    f = write(tmp_path / "p.yaml", "mcp:\n  fail_closed: true\n")
    r = subprocess.run([AGENTSHCTL, "policy", "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout


def test_ctl_policy_show_offline_prints_merged_policy_and_hash(tmp_path: Path) -> None:
    write(tmp_path / "policy.d/50.yaml", "proxy:\n  listen: 127.0.0.1:9999\n")
    r = subprocess.run(
        [AGENTSHCTL, "policy", "show", "--config-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# hash: sha256:")
    assert "listen: 127.0.0.1:9999" in r.stdout
