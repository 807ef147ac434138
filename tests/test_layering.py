"""Dependency direction (docs/architecture.md "Code layout"): the core never
imports the daemon, the CLI, the BPF layer, the shim or the proxy; the layers
never import each other; the CLI never imports the shim. Checked on the
source (every import statement, including those inside functions), so a
violation fails here before it is ever executed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"agent": "agentsh.agent", "proxy": "agentsh.proxy", "shim": "agentsh.shim"}

DAEMON = "agentsh.agent.daemon"
CTL = "agentsh.agent.ctl"
NETMON = "agentsh.agent.netmon"
PROXY = "agentsh.proxy"
SHIM = "agentsh.shim"

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "agentsh.agent.core": (
        DAEMON, CTL, NETMON, PROXY, SHIM,
        "agentsh.agent.bootstrap", "agentsh.agent.hook_cmd", "agentsh.agent.selftest_canary",
    ),
    NETMON: (DAEMON, CTL, PROXY, SHIM),
    CTL: (DAEMON, PROXY, SHIM),
    DAEMON: (CTL, PROXY, SHIM),
    PROXY: (DAEMON, CTL, NETMON, SHIM),
    SHIM: (DAEMON, CTL, NETMON, PROXY),
}  # fmt: skip

REGISTRY = "agentsh.proxy.dialects"
ALLOWED: dict[str, str] = {CTL: REGISTRY, DAEMON: REGISTRY}
"""The one proxy module the daemon and the CLI may import: the dialect registry,
to check ``proxy.providers`` keys (docs/architecture.md "Code layout"); names
imported from it, never its submodules."""


def _allowed(layer: str, target: str) -> bool:
    reg = ALLOWED.get(layer)
    if reg is None or not (target == reg or target.startswith(reg + ".")):
        return False
    rest = target[len(reg) + 1 :]
    return target == reg or ("." not in rest and not (REPO / "proxy" / "dialects" / f"{rest}.py").exists()
                             and not (REPO / "proxy" / "dialects" / rest).is_dir())


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO)
    parts = [ROOTS[rel.parts[0]], *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in ``source``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    found = []
    for layer, banned in FORBIDDEN.items():
        if module != layer and not module.startswith(layer + "."):
            continue
        for line, target in imported(source, module, is_package):
            for b in banned:
                if (target == b or target.startswith(b + ".")) and not _allowed(layer, target):
                    found.append(f"{module}:{line} imports {target} ({layer} must not import {b})")
    return sorted(set(found))


def first_party_files() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_imports_against_the_layering() -> None:
    problems: list[str] = []
    for path in first_party_files():
        problems += violations(path.read_text(), module_name(path), path.name == "__init__.py")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("agentsh.agent.core.mcp.service", "def f():\n    from agentsh.agent.daemon import context\n"),
        ("agentsh.agent.core.policy.store", "import agentsh.shim.main\n"),
        ("agentsh.agent.netmon.api", "from agentsh.agent.daemon.jsonhttp import RouteSet\n"),
        ("agentsh.agent.ctl.status", "from agentsh.shim import main\n"),
        ("agentsh.proxy.server", "from ..agent.daemon.metrics import Buckets\n"),
        ("agentsh.agent.ctl.policy_cmd", "from agentsh.proxy.dialects.gemini import DIALECT\n"),
        ("agentsh.agent.daemon.app", "import agentsh.proxy.sse\n"),
        ("agentsh.agent.core.policy.store", "from agentsh.proxy.dialects import check_policy\n"),
    ],
)
def test_the_checker_catches_a_forbidden_import(module: str, source: str) -> None:
    assert violations(source, module), f"not caught: {source!r} in {module}"


def test_the_daemon_and_cli_may_import_the_dialect_registry_only() -> None:
    src = "from agentsh.proxy.dialects import check_policy\n"
    assert violations(src, "agentsh.agent.ctl.policy_cmd") == []
    assert violations(src, "agentsh.agent.daemon.app") == []


def test_the_checker_allows_imports_of_the_core() -> None:
    src = "from agentsh.agent.core.policy.schema import Policy\nfrom agentsh.proxy import sse\n"
    assert violations(src, "agentsh.proxy.server") == []
