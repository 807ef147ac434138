"""Which commands are MCP servers, and what a stdio server is called.

Used by the shim (its own server id), by ``agentshctl mcp wrap`` (which
entries of a client config to wrap) and by anything that must name a stdio
server the same way. Rules (docs/shim.md "Server ids"):

- Server id: a declared stdio server (``mcp.servers``, type stdio) whose
  command and args match wins; else the package/module name found in the
  first argument mentioning ``mcp``/``modelcontextprotocol``
  (``npx @modelcontextprotocol/server-filesystem /p`` -> ``server-filesystem``,
  ``python -m mcp_server_sqlite`` -> ``mcp_server_sqlite``); else
  ``mcp-`` + 8 hex digits of SHA-256 of the command line (stable across runs).
- Server patterns are globs (``agentsh.agent.core.policy.globs``) matched against
  the whole command line, every single word, and the basename of every word;
  a pattern containing spaces is matched against each run of that many
  consecutive words (``uvx mcp-server-*``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence

from agentsh.agent.core.policy.globs import glob_match
from agentsh.agent.core.policy.schema import MCPConfig

__all__ = ["declared_server_id", "derive_server_id", "is_mcp_server", "server_id_for"]

_VERSION_SUFFIX = re.compile(r"@[^/@]*$")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SCRIPT_EXT = (".js", ".mjs", ".cjs", ".ts", ".py", ".pyz", ".sh")
_GENERIC = {"dist", "build", "lib", "src", "bin", "index", "main", "server", "__main__", "cli"}


def _clean(name: str) -> str:
    name = _SAFE.sub("-", name).strip("-.")
    return name[:128]


def _name_from_arg(arg: str) -> str | None:
    """The package/module name inside one argument, or None."""
    a = arg.strip()
    if not a:
        return None
    # uvx/pipx style "pkg==1.2" / "pkg>=1"
    a = re.split(r"[=<>~!]=|[<>]", a, maxsplit=1)[0]
    if a.startswith("@") and "/" in a and not a.startswith("@/"):
        # npm scoped package, maybe with @version: "@scope/name@1.2.3" -> "name"
        pkg = _VERSION_SUFFIX.sub("", a.split("/", 1)[1]) if a.count("@") > 1 else a.split("/", 1)[1]
        pkg = pkg.split("/")[0]
        return _clean(pkg) or None
    if "/" in a or os.sep in a:
        # a path: prefer the last component mentioning mcp, else the closest
        # non-generic ancestor of a script file
        parts = [p for p in a.replace(os.sep, "/").split("/") if p and p not in (".", "..")]
        for p in reversed(parts):
            low = p.lower()
            if "mcp" in low or "modelcontextprotocol" in low:
                if low.startswith("@"):
                    continue
                return _clean(_strip_ext(p)) or None
        for p in reversed(parts):
            stem = _strip_ext(p)
            if stem.lower() not in _GENERIC and not stem.startswith("@"):
                return _clean(stem) or None
        return None
    a = _VERSION_SUFFIX.sub("", a) if a.count("@") == 1 and not a.startswith("@") else a
    return _clean(_strip_ext(a)) or None


def _strip_ext(p: str) -> str:
    for ext in _SCRIPT_EXT:
        if p.lower().endswith(ext):
            return p[: -len(ext)]
    return p


def derive_server_id(command: str, args: Sequence[str]) -> str:
    """Package/module name from the command, else a stable hash (docs/shim.md "Server ids")."""
    words = [command, *args]
    for w in words:
        low = w.lower()
        if "mcp" in low or "modelcontextprotocol" in low:
            name = _name_from_arg(w)
            if name:
                return name
    digest = hashlib.sha256((command + " " + " ".join(args)).encode("utf-8", "replace"))
    return "mcp-" + digest.hexdigest()[:8]


def _same_command(declared: str, actual: str) -> bool:
    if declared == actual:
        return True
    # "npx" declared, "/usr/bin/npx" run (or the other way round)
    return os.path.basename(declared) == os.path.basename(actual) and (
        "/" not in declared or "/" not in actual
    )


def declared_server_id(mcp: MCPConfig, command: str, args: Sequence[str]) -> str | None:
    """The id of the declared stdio server with this command and these args."""
    for s in mcp.servers:
        if s.type != "stdio" or not s.command:
            continue
        if _same_command(s.command, command) and list(s.args) == list(args):
            return s.id
    return None


def server_id_for(
    command: str, args: Sequence[str], mcp: MCPConfig | None = None, explicit: str | None = None
) -> str:
    """Explicit id, else declared stdio server, else derived."""
    if explicit:
        return explicit
    if mcp is not None:
        sid = declared_server_id(mcp, command, args)
        if sid:
            return sid
    return derive_server_id(command, args)


def _candidates(command: str, args: Sequence[str], width: int) -> Iterable[str]:
    words = [command, *args]
    if width <= 1:
        yield " ".join(words)
        for w in words:
            yield w
            base = os.path.basename(w.rstrip("/"))
            if base != w:
                yield base
        return
    for i in range(len(words) - width + 1):
        run = words[i : i + width]
        yield " ".join(run)
        yield " ".join([os.path.basename(run[0]), *run[1:]])


def is_mcp_server(command: str, args: Sequence[str], patterns: Iterable[str]) -> bool:
    """Does any server pattern match this command line (see module docstring)?"""
    for pat in patterns:
        width = len(pat.split())
        if any(glob_match(pat, c) for c in _candidates(command, args, width)):
            return True
        # a path pattern like "/opt/internal/mcp-server" also matches "…/mcp-server/x.js"
        if "/" in pat and "*" not in pat and any(
            w == pat or w.startswith(pat.rstrip("/") + "/") for w in [command, *args]
        ):
            return True
    return False
