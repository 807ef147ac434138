"""Classification of MCP servers and agent tools (docs/flow.md "Classification").

``internal`` tools read or write the user's own data and keep it on the host;
``external`` ones send what they are given to a third party (and return
untrusted content); ``hybrid`` ones can do both (``Bash``, GitHub); ``unknown``
is resolved by ``flow.classification.default_unknown`` when a flow is judged.

Precedence for a server: ``server_overrides`` (method ``config``, confidence
1.0) > name heuristics on the server id and, for a declared stdio server, its
command and arguments (``npx @modelcontextprotocol/server-slack``) > declared
``url`` (a public host makes the server at least hybrid: whatever it is sent
leaves the machine). MCP tool annotations (method ``annotation``) may make a
tool *more* external (``openWorldHint: true``) or place a server the
heuristics cannot, but never make a heuristically external server internal:
annotations come from the server itself, which is the party we distrust.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from agentsh.agent.core.policy.schema import ClassificationConfig, MCPServerDeclaration

__all__ = ["ClassificationResult", "Classifier", "split_mcp_name"]

Class = Literal["internal", "external", "hybrid", "unknown"]


@dataclass(frozen=True, slots=True)
class ClassificationResult:
    classification: Class
    confidence: float
    method: Literal["heuristic", "config", "annotation"]
    can_read_data: bool = False
    """Returns data the agent may pass on (a source)."""
    can_exfiltrate: bool = False
    """Sends what it is given off the host (a sink)."""
    writes_local: bool = False
    server: str | None = None
    basis: str = ""
    """What decided it, for humans ("name token 'slack'", "table", "override")."""

    def to_json(self) -> dict[str, Any]:
        return {
            "classification": self.classification,
            "confidence": self.confidence,
            "method": self.method,
            "can_read_data": self.can_read_data,
            "can_exfiltrate": self.can_exfiltrate,
            "writes_local": self.writes_local,
            "server": self.server,
            "basis": self.basis,
        }


# ----------------------------------------------------------------- tables

_EXTERNAL = frozenset(
    [
        "slack",
        "discord",
        "telegram",
        "teams",
        "msteams",
        "whatsapp",
        "signal",
        "matrix",
        "mattermost",
        "zulip",
        "webhook",
        "webhooks",
        "email",
        "mail",
        "gmail",
        "smtp",
        "sendgrid",
        "mailgun",
        "postmark",
        "twilio",
        "sms",
        "http",
        "https",
        "fetch",
        "browser",
        "puppeteer",
        "playwright",
        "selenium",
        "web",
        "websearch",
        "search",
        "brave",
        "tavily",
        "exa",
        "serper",
        "serpapi",
        "firecrawl",
        "scrape",
        "scraper",
        "crawl",
        "crawler",
        "twitter",
        "reddit",
        "mastodon",
        "bluesky",
        "linkedin",
        "facebook",
        "instagram",
        "youtube",
        "pastebin",
        "upload",
        "ftp",
        "pushover",
        "ntfy",
        "zapier",
        "ifttt",
        "n8n",
        "make",
        "webflow",
        "wordpress",
        "medium",
        "hackernews",
        "perplexity",
        "openai",
        "anthropic",
        "gemini",
    ]
)
_INTERNAL = frozenset(
    [
        "filesystem",
        "fs",
        "file",
        "files",
        "git",
        "sqlite",
        "sqlite3",
        "postgres",
        "postgresql",
        "pg",
        "mysql",
        "mariadb",
        "mongo",
        "mongodb",
        "redis",
        "memory",
        "db",
        "database",
        "sql",
        "local",
        "time",
        "sequentialthinking",
        "thinking",
        "everything",
        "obsidian",
        "notes",
        "knowledge",
        "vector",
        "chroma",
        "chromadb",
        "qdrant",
        "lancedb",
        "duckdb",
        "docker",
        "shell",
        "terminal",
        "desktop",
        "clipboard",
        "calculator",
        "math",
        "code",
        "python",
        "node",
        "repl",
        "ripgrep",
        "grep",
    ]
)
_HYBRID = frozenset(
    [
        "github",
        "gitlab",
        "bitbucket",
        "gitea",
        "jira",
        "linear",
        "notion",
        "confluence",
        "atlassian",
        "gdrive",
        "drive",
        "dropbox",
        "box",
        "onedrive",
        "sharepoint",
        "salesforce",
        "hubspot",
        "stripe",
        "aws",
        "gcp",
        "azure",
        "cloudflare",
        "vercel",
        "netlify",
        "sentry",
        "supabase",
        "airtable",
        "figma",
        "asana",
        "trello",
        "monday",
        "clickup",
        "zendesk",
        "intercom",
        "shopify",
        "google",
        "googledrive",
        "kubernetes",
        "k8s",
    ]
)
_NOISE = frozenset(
    {
        "mcp",
        "server",
        "modelcontextprotocol",
        "npx",
        "uvx",
        "node",
        "python",
        "python3",
        "y",
        "js",
        "py",
        "the",
    }
)
_READ_VERBS = frozenset(
    [
        "read",
        "get",
        "list",
        "search",
        "query",
        "find",
        "fetch",
        "describe",
        "show",
        "view",
        "load",
        "open",
        "cat",
        "lookup",
        "retrieve",
        "download",
        "browse",
        "tree",
        "stat",
        "head",
    ]
)
_WRITE_VERBS = frozenset(
    [
        "write",
        "create",
        "update",
        "edit",
        "delete",
        "remove",
        "put",
        "set",
        "save",
        "move",
        "rename",
        "append",
        "insert",
        "upsert",
        "patch",
        "push",
        "commit",
    ]
)
_SEND_VERBS = frozenset(
    [
        "send",
        "post",
        "publish",
        "notify",
        "message",
        "reply",
        "comment",
        "share",
        "upload",
        "email",
        "tweet",
        "forward",
        "invite",
        "submit",
        "call",
    ]
)

_T = ClassificationResult
_AGENT_TOOLS: dict[str, ClassificationResult] = {
    "Read": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "NotebookRead": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "Glob": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "Grep": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "LS": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "BashOutput": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "Write": _T("internal", 1.0, "heuristic", writes_local=True, basis="agent tool table"),
    "Edit": _T("internal", 1.0, "heuristic", writes_local=True, basis="agent tool table"),
    "MultiEdit": _T("internal", 1.0, "heuristic", writes_local=True, basis="agent tool table"),
    "NotebookEdit": _T("internal", 1.0, "heuristic", writes_local=True, basis="agent tool table"),
    "TodoWrite": _T("internal", 1.0, "heuristic", writes_local=True, basis="agent tool table"),
    "TodoRead": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "Task": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    # Claude Code 2.x calls the subagent tool "Agent" (formerly "Task")
    "Agent": _T("internal", 1.0, "heuristic", can_read_data=True, basis="agent tool table"),
    "KillShell": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "KillBash": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "ExitPlanMode": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "SlashCommand": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "Skill": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "AskUserQuestion": _T("internal", 1.0, "heuristic", basis="agent tool table"),
    "Bash": _T(
        "hybrid",
        1.0,
        "heuristic",
        can_read_data=True,
        can_exfiltrate=True,
        writes_local=True,
        basis="agent tool table (per command: docs/flow.md Bash)",
    ),
    "WebFetch": _T(
        "external",
        1.0,
        "heuristic",
        can_read_data=True,
        can_exfiltrate=True,
        basis="agent tool table",
    ),
    "WebSearch": _T(
        "external",
        1.0,
        "heuristic",
        can_read_data=True,
        can_exfiltrate=True,
        basis="agent tool table",
    ),
}
AGENT_TOOLS = frozenset(_AGENT_TOOLS)

# arguments of agent tools that actually leave the host (the rest stays local
# or goes only to the LLM provider, which sees the whole conversation anyway)
OUTGOING_ARGS: dict[str, tuple[str, ...]] = {
    "WebFetch": ("url",),
    "WebSearch": ("query", "allowed_domains", "blocked_domains"),
}

_TOKEN = re.compile(r"[a-z0-9]+")


def split_mcp_name(name: str) -> tuple[str, str] | None:
    """``mcp__<server>__<tool>`` → (server, tool)."""
    if not name.startswith("mcp__"):
        return None
    server, sep, tool = name[5:].partition("__")
    if not sep or not server or not tool:
        return None
    return server, tool


def _tokens(*texts: str) -> list[str]:
    out: list[str] = []
    for t in texts:
        # split camelCase before lowercasing ("postMessage" → post, message)
        t = re.sub(r"([a-z])([A-Z])", r"\1 \2", t)
        out.extend(x for x in _TOKEN.findall(t.lower()) if x not in _NOISE)
    return out


def _name_class(tokens: list[str]) -> tuple[Class, float, str] | None:
    ext = [t for t in tokens if t in _EXTERNAL]
    itl = [t for t in tokens if t in _INTERNAL]
    hyb = [t for t in tokens if t in _HYBRID]
    conf = 0.9
    if not (ext or itl or hyb):
        # compound names: "slackbot", "postgresdb", "mywebhooks"
        for t in tokens:
            for kw_set, bucket in ((_HYBRID, hyb), (_EXTERNAL, ext), (_INTERNAL, itl)):
                for kw in kw_set:
                    if len(kw) >= 5 and kw in t:
                        bucket.append(kw)
        conf = 0.8
    if hyb:
        return "hybrid", conf - 0.05, f"name token {hyb[0]!r}"
    if ext and itl:
        return "hybrid", 0.6, f"name tokens {ext[0]!r} and {itl[0]!r}"
    if ext:
        return "external", conf, f"name token {ext[0]!r}"
    if itl:
        return "internal", conf, f"name token {itl[0]!r}"
    return None


def is_public_host(host: str) -> bool:
    h = host.lower().strip("[]").rstrip(".")
    if h in ("localhost", "") or h.endswith(
        (".localhost", ".local", ".internal", ".lan", ".home.arpa")
    ):
        return False
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return "." in h
    return not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified)


class Classifier:
    """Classifies servers (cached) and tools. Immutable after construction."""

    def __init__(
        self, cfg: ClassificationConfig, servers: list[MCPServerDeclaration] | None = None
    ) -> None:
        self.cfg = cfg
        self.default_unknown = cfg.default_unknown
        self._decl = {s.id: s for s in servers or ()}
        self._cache: dict[str, ClassificationResult] = {}
        # overrides by exact id and case-insensitively
        self._overrides = {k.lower(): v for k, v in cfg.server_overrides.items()}

    def server(self, server_id: str) -> ClassificationResult:
        r = self._cache.get(server_id)
        if r is None:
            r = self._server(server_id)
            if len(self._cache) < 4096:
                self._cache[server_id] = r
        return r

    def _server(self, server_id: str) -> ClassificationResult:
        ov = self.cfg.server_overrides.get(server_id) or self._overrides.get(server_id.lower())
        if ov is not None:
            return ClassificationResult(
                ov,
                1.0,
                "config",
                can_read_data=True,
                can_exfiltrate=ov != "internal",
                server=server_id,
                basis="flow.classification.server_overrides",
            )
        decl = self._decl.get(server_id)
        texts = [server_id]
        if decl is not None and decl.command:
            texts.append(decl.command.rsplit("/", 1)[-1])
            texts.extend(a for a in decl.args if not a.startswith("-"))
        got = _name_class(_tokens(*texts))
        cls: Class
        if got is None:
            cls, conf, basis = "unknown", 0.3, "no heuristic matched"
        else:
            cls, conf, basis = got
        if decl is not None and decl.url:
            host = urlsplit(decl.url).hostname or ""
            if is_public_host(host):
                if cls == "internal":
                    cls, conf, basis = "hybrid", 0.7, f"{basis}; declared url on public host {host}"
                elif cls == "unknown":
                    cls, conf, basis = "external", 0.7, f"declared url on public host {host}"
            elif cls == "unknown":
                basis = f"declared url on local host {host}; {basis}"
        return ClassificationResult(
            cls,
            conf,
            "heuristic",
            can_read_data=True,
            can_exfiltrate=cls in ("external", "hybrid"),
            server=server_id,
            basis=basis,
        )

    def tool(
        self, tool: str, server_id: str | None = None, annotations: dict[str, Any] | None = None
    ) -> ClassificationResult:
        """Classify a tool call target: agent tool, ``mcp__server__tool``, or ``server`` + tool."""
        if server_id is None:
            r = _AGENT_TOOLS.get(tool)
            if r is not None:
                return r
            split = split_mcp_name(tool)
            if split is not None:
                server_id, tool = split
        if server_id is not None:
            base = self.server(server_id)
        else:
            got = _name_class(_tokens(tool))
            if got is None:
                base = ClassificationResult(
                    "unknown", 0.3, "heuristic", basis="unrecognised tool name"
                )
            else:
                base = ClassificationResult(got[0], got[1] - 0.2, "heuristic", basis=got[2])
        toks = set(_tokens(tool))
        reads = bool(toks & _READ_VERBS) or not (toks & (_WRITE_VERBS | _SEND_VERBS))
        writes = bool(toks & _WRITE_VERBS)
        cls, conf, method, basis = base.classification, base.confidence, base.method, base.basis
        if annotations and method != "config":
            ow = annotations.get("openWorldHint")
            if ow is True and cls in ("internal", "unknown"):
                cls, conf, method, basis = "external", 0.7, "annotation", "openWorldHint: true"
            elif ow is False and cls == "unknown":
                cls, conf, method, basis = "internal", 0.6, "annotation", "openWorldHint: false"
            if annotations.get("readOnlyHint") is True:
                reads, writes = True, False
        return ClassificationResult(
            cls,
            conf,
            method,
            can_read_data=reads,
            can_exfiltrate=cls in ("external", "hybrid"),
            writes_local=writes and cls == "internal",
            server=server_id,
            basis=basis,
        )

    # -------------------------------------------------------- flow direction

    def as_source(self, cls: str) -> str:
        """Where data produced by a tool of this class comes from: internal | external."""
        if cls == "external":
            return "external"
        if cls == "unknown":
            return "external" if self.default_unknown == "external" else "internal"
        return "internal"  # internal, hybrid (private repos, tickets …)

    def as_destination(self, cls: str) -> str:
        """Where arguments to a tool of this class go: internal | external."""
        if cls in ("external", "hybrid"):
            return "external"
        if cls == "unknown":
            return "external" if self.default_unknown in ("external", "hybrid") else "internal"
        return "internal"
