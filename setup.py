"""Package discovery for the folders mapped into the ``agentsh`` namespace.

The top-level folders (``agent/ bpf/ shim/ proxy/ policies/ systemd/``) are
installed as ``agentsh.<folder>``; every package below them is found here by
walking the tree (``find_namespace_packages`` would also pick up data folders,
so a package is a folder with an ``__init__.py``). Everything else lives in
pyproject.toml. docs/development.md "Imports and tools" says how the editable
install is made so that static tools resolve ``agentsh.*``.
"""

from __future__ import annotations

from setuptools import find_packages, setup

ROOTS = ("agent", "proxy", "shim", "bpf", "policies", "systemd")


def discover() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    for root in ROOTS:
        packages.append(f"agentsh.{root}")
        packages += [f"agentsh.{root}.{sub}" for sub in find_packages(root)]
    return packages, {f"agentsh.{root}": root for root in ROOTS}


PACKAGES, PACKAGE_DIR = discover()

if __name__ == "__main__":
    setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
