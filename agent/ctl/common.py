"""Helpers shared by agentshctl commands."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click
import orjson

from agentsh.agent.core.client_sync import ControlError, DaemonUnavailable, call


def socket_of(ctx: click.Context, admin: bool = False) -> str | None:
    obj = ctx.find_root().obj
    if not obj:
        return None
    return obj.get("admin_socket" if admin else "socket")


def die(msg: str, code: int = 1) -> NoReturn:
    click.echo(f"agentshctl: {msg}", err=True)
    sys.exit(code)


def api(ctx: click.Context, method: str, path: str, payload: Any = None, admin: bool = False) -> Any:
    """Call the daemon (``admin``: on the admin socket); exit 2 with one line
    when it is unreachable, 1 when it refuses."""
    try:
        return call(socket_of(ctx, admin), method, path, payload)
    except DaemonUnavailable as e:
        if admin and e.why == "permission denied":
            die(f"{e.socket_path}: permission denied (administrative commands need root or group agentsh-admin)", 1)
        die(str(e), 2)
    except ControlError as e:
        body = e.body
        if isinstance(body, dict) and "errors" in body:
            for line in body["errors"]:
                click.echo(line, err=True)
            sys.exit(1)
        die(str(e), 1)


def print_json(data: Any) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers)]
    lines.extend(fmt.format(*r) for r in rows)
    return "\n".join(line.rstrip() for line in lines)


def ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
