"""``agentshctl mcp inspect``: offline scan of MCP tool definitions (no daemon needed).

Input: a file (or ``-`` for stdin) holding a JSON-RPC tools/list response,
its ``result``, a list of tools or one tool; or ``--server-cmd "CMD ARGS"``:
the server is started, initialised and its tools/list paginated with the
``mcp`` SDK's stdio client. Detection uses the policy's detection settings
(built-ins and custom patterns) from the config directory. Exit status: 0
when no detection reaches ``--threshold``, 3 when one does (1 on errors).
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

import click
import orjson

from agentsh.agent.core.vocab import SEVERITIES
from agentsh.agent.ctl.common import print_json, table

__all__ = ["inspect", "tools_from_document"]

EXIT_FOUND = 3


def tools_from_document(doc: Any) -> list[dict[str, Any]]:
    """Tools out of any of the accepted shapes; ClickException when none fits."""
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):
        doc = doc["result"]
    if isinstance(doc, dict) and isinstance(doc.get("tools"), list):
        doc = doc["tools"]
    if isinstance(doc, dict) and isinstance(doc.get("name"), str):
        doc = [doc]
    if not isinstance(doc, list):
        raise click.ClickException(
            "expected a tools/list response, its result, a list of tools or one tool"
        )
    tools = [t for t in doc if isinstance(t, dict) and isinstance(t.get("name"), str)]
    if len(tools) != len(doc):
        raise click.ClickException(f"{len(doc) - len(tools)} entries are not tools (need a string 'name')")
    return tools


async def _list_server_tools(argv: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp_types import PaginatedRequestParams

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    tools: list[dict[str, Any]] = []
    errlog: Any = sys.stderr
    try:
        errlog.fileno()
    except (AttributeError, OSError, ValueError):  # captured stderr (tests): use the real one
        errlog = sys.__stderr__
    async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
        init = await s.initialize()
        name = getattr(init.server_info, "name", None)
        cursor: str | None = None
        for _ in range(1000):
            res = await s.list_tools(
                params=PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            for t in res.tools:
                tools.append(t.model_dump(mode="json", by_alias=True, exclude_none=True))
            cursor = res.next_cursor
            if not cursor:
                break
    return tools, name


def _load_tools(source: str | None, server_cmd: str | None) -> tuple[list[dict[str, Any]], str]:
    if server_cmd:
        import anyio

        argv = shlex.split(server_cmd)
        if not argv:
            raise click.UsageError("--server-cmd is empty")
        try:
            tools, name = anyio.run(_list_server_tools, argv)
        except Exception as e:  # any failure to start/talk to the server
            raise click.ClickException(f"cannot list tools of {server_cmd!r}: {e}") from None
        return tools, name or argv[0]
    if source is None:
        raise click.UsageError("give a FILE, '-' for stdin, or --server-cmd")
    try:
        raw = sys.stdin.buffer.read() if source == "-" else open(source, "rb").read()  # noqa: SIM115
    except OSError as e:
        raise click.ClickException(f"{source}: {e.strerror or e}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise click.ClickException(f"{source}: invalid JSON: {e}") from None
    return tools_from_document(doc), source


@click.command("inspect")
@click.argument("source", required=False)
@click.option("--server-cmd", help='Start this stdio server and inspect its tools, e.g. "npx -y pkg".')
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--threshold", type=click.Choice(SEVERITIES), default="high", show_default=True,
              help="Exit 3 when a detection reaches this severity.")
@click.option("--config-dir", help="Policy directory for detection settings (env AGENTSH_CONFIG_DIR).")
def inspect(source: str | None, server_cmd: str | None, as_json: bool, threshold: str,
            config_dir: str | None) -> None:
    """Scan MCP tool definitions for poisoning (offline)."""
    from agentsh.agent.core.mcp.detector import Detector, max_severity, reaches
    from agentsh.agent.core.mcp.offline import load_policy

    if source is not None and server_cmd:
        raise click.UsageError("give either SOURCE or --server-cmd, not both")
    tools, origin = _load_tools(source, server_cmd)
    loaded, err = load_policy(config_dir or os.environ.get("AGENTSH_CONFIG_DIR", "/etc/agentsh"))
    if err and not as_json:
        click.echo(f"note: policy not loaded ({err}); using built-in detection settings", err=True)
    detector = Detector(loaded.policy.mcp.inspection.detection)
    report: list[dict[str, Any]] = []
    found = False
    names = [t["name"] for t in tools]
    for i, tool in enumerate(tools):
        # one tools/list is one server: the other tools are its siblings, not peers
        siblings = [n for j, n in enumerate(names) if j != i]
        results = detector.inspect(tool, siblings=siblings)
        top = max_severity(results)
        hit = reaches(top, threshold)
        found = found or hit
        report.append(
            {
                "tool": tool["name"],
                "max_severity": top,
                "reaches_threshold": hit,
                "detections": [
                    {
                        "category": r.category,
                        "pattern": r.pattern,
                        "severity": r.severity,
                        "field": r.field,
                        "match": r.matches[0].text if r.matches else "",
                        "why": r.why,
                        "matches": [m.model_dump() for m in r.matches],
                    }
                    for r in results
                ],
            }
        )
    if as_json:
        print_json({"source": origin, "threshold": threshold, "tools": report,
                    "max_severity": max_severity_of(report), "found": found})
    else:
        _print_people(origin, report, threshold)
    sys.exit(EXIT_FOUND if found else 0)


def max_severity_of(report: list[dict[str, Any]]) -> str | None:
    ranks = [SEVERITIES.index(t["max_severity"]) for t in report if t["max_severity"]]
    return SEVERITIES[max(ranks)] if ranks else None


def _short(s: str, n: int = 60) -> str:
    s = s.replace("\n", " ")
    s = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in s)
    return s if len(s) <= n else s[: n - 1] + "…"


def _print_people(origin: str, report: list[dict[str, Any]], threshold: str) -> None:
    rows = []
    for t in report:
        n = len(t["detections"])
        counts: dict[str, int] = {}
        for d in t["detections"]:
            counts[d["severity"]] = counts.get(d["severity"], 0) + 1
        label = ", ".join(f"{counts[s]} {s}" for s in reversed(SEVERITIES) if s in counts) or "none"
        rows.append([_short(t["tool"], 40), t["max_severity"] or "-", label if n else "none",
                     "yes" if t["reaches_threshold"] else ""])
    click.echo(f"{origin}: {len(report)} tools, threshold {threshold}\n")
    click.echo(table(rows, ["TOOL", "MAX", "DETECTIONS", "ALERT"]))
    details = [
        [_short(t["tool"], 30), d["severity"], f"{d['category']}/{d['pattern']}", _short(d["field"], 40),
         _short(d.get("why") or d["match"], 200)]
        for t in report
        for d in t["detections"]
    ]
    if details:
        click.echo("")
        click.echo(table(details, ["TOOL", "SEVERITY", "CATEGORY/PATTERN", "FIELD", "WHY"]))
