"""Packaging: every sub-package is listed in pyproject (or a wheel would lack
it), package data ships, and the console scripts exist."""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import sys
from pathlib import Path

from tests.conftest import AGENTSHCTL, AGENTSHD, SHIM

REPO = Path(__file__).resolve().parents[1]


def _setup_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("agentsh_setup", REPO / "setup.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    os.chdir(REPO)  # find_packages walks relative to the project, as the build does
    try:
        spec.loader.exec_module(mod)
    finally:
        os.chdir(cwd)
    return mod


def test_every_folder_with_python_code_is_a_discovered_package() -> None:
    setup = _setup_module()
    packages = set(setup.PACKAGES)
    for root in setup.ROOTS:
        for py in (REPO / root).rglob("*.py"):
            if "__pycache__" in py.parts:
                continue
            rel = py.parent.relative_to(REPO / root)
            name = ".".join(["agentsh", root, *rel.parts])
            # a folder without __init__.py would silently be left out of the wheel
            assert name in packages, f"{py.relative_to(REPO)}: its folder is not a package (no __init__.py?)"
            assert importlib.util.find_spec(name) is not None, name


def test_every_module_is_reachable_by_static_tools() -> None:
    """The strict editable install is a tree of links that mypy and IDEs
    follow (docs/development.md "Imports and tools"); every source file must be in it."""
    trees = [Path(p) for p in sys.path if Path(p).name.startswith("__editable__.agentsh")]
    assert trees, "agentsh is not installed in strict editable mode (make setup)"
    tree = trees[0] / "agentsh"
    setup = _setup_module()
    for root in setup.ROOTS:
        for py in (REPO / root).rglob("*.py"):
            if "__pycache__" in py.parts:
                continue
            link = tree / root / py.relative_to(REPO / root)
            assert link.resolve() == py.resolve(), f"{py.relative_to(REPO)} is missing from {tree} (re-run make setup)"


def test_package_data_is_reachable() -> None:
    assert (importlib.resources.files("agentsh.policies") / "default.yaml").is_file()
    assert any(p.name.endswith(".c") for p in importlib.resources.files("agentsh.bpf").iterdir())
    assert (importlib.resources.files("agentsh.systemd") / "agentsh.service").is_file()
    assert (importlib.resources.files("agentsh.agent.bootstrap") / "setup-host.sh").is_file()


def test_console_scripts_are_installed() -> None:
    for script in (AGENTSHD, AGENTSHCTL, SHIM):
        assert Path(script).is_file(), script
