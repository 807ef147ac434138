"""Packaging: every sub-package is listed in pyproject (or a wheel would lack
it), package data ships, and the console scripts exist."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path

from tests.conftest import AGENTSHCTL, AGENTSHD, SHIM

REPO = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject() -> None:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    mapping = cfg["package-dir"]
    found = set()
    for pkg, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"


def test_package_data_is_reachable() -> None:
    assert (importlib.resources.files("agentsh.policies") / "default.yaml").is_file()
    assert any(p.name.endswith(".c") for p in importlib.resources.files("agentsh.bpf").iterdir())
    assert (importlib.resources.files("agentsh.systemd") / "agentsh.service").is_file()
    assert (importlib.resources.files("agentsh.agent.bootstrap") / "setup-host.sh").is_file()


def test_console_scripts_are_installed() -> None:
    for script in (AGENTSHD, AGENTSHCTL, SHIM):
        assert Path(script).is_file(), script
