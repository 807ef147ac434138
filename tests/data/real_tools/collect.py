"""Collect the tool definitions of real, public MCP servers into a fixture.

Each candidate below is a published npm or PyPI package, pinned. The script
installs it into a scratch directory outside the repository (idempotent: an
already installed pin is reused), starts it over stdio with the official `mcp`
SDK client, runs `initialize` and `tools/list` (following `nextCursor`) under a
per-server timeout, and records every tool as the SDK parses it
(`model_dump(mode="json", by_alias=True, exclude_none=True)`). The SDK's model
drops fields it does not know (e.g. `annotations.category`); so that nothing a
server said is lost, the listing is also fetched as plain JSON and whatever the
dump lost or changed is kept beside it (`sdk_dropped`, see README.md).

Servers are started with dummy credentials only and no network beyond the
package registries: a server that will not start or list its tools that way is
reported with the reason and skipped. The fixture exists so that detectors can
be measured against what real servers say about their tools (see README.md
beside this file); it is not part of `make test`.

    .venv/bin/python tests/data/real_tools/collect.py --out tests/data/real_tools/real_tools.json
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import click
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import PaginatedRequestParams, Tool
from pydantic import ValidationError

Kind = Literal["npm", "pypi"]

# Dummy credentials: many servers insist on a token at start-up but never use
# it to list their tools. None of these is a real secret.
DUMMY = "dummy"
AWS = {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY,
       "FASTMCP_LOG_LEVEL": "ERROR"}


@dataclass(frozen=True)
class Candidate:
    """One server to try. `command` is the executable the package installs (an
    npm `.bin` name or a console script of the venv); `args`/`env` may use the
    placeholders `{work}` (a scratch work directory with a sample git repo,
    files and an SQLite database), `{home}` (the scratch HOME) and `{prefix}`
    (where the package is installed)."""

    kind: Kind
    package: str
    version: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str = "3.11"  # pypi only: interpreter minor version for the venv
    extra: tuple[str, ...] = ()  # further requirements installed alongside
    timeout: float = 60.0


CANDIDATES: tuple[Candidate, ...] = (
    # ---- npm: the reference servers (some archived but still published)
    Candidate("npm", "@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything", ("stdio",)),
    Candidate("npm", "@modelcontextprotocol/server-filesystem", "2026.8.31", "mcp-server-filesystem", ("{work}/files",)),
    Candidate("npm", "@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory",
              env={"MEMORY_FILE_PATH": "{work}/memory.jsonl"}),
    Candidate("npm", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31", "mcp-server-sequential-thinking"),
    Candidate("npm", "@modelcontextprotocol/server-github", "2025.4.8", "mcp-server-github",
              env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY}),
    Candidate("npm", "@modelcontextprotocol/server-gitlab", "2025.4.25", "mcp-server-gitlab",
              env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY, "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}),
    Candidate("npm", "@modelcontextprotocol/server-slack", "2025.4.25", "mcp-server-slack",
              env={"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
    Candidate("npm", "@modelcontextprotocol/server-postgres", "0.6.2", "mcp-server-postgres",
              ("postgresql://dummy:dummy@127.0.0.1:9/dummy",)),
    Candidate("npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12", "mcp-server-puppeteer"),
    Candidate("npm", "@modelcontextprotocol/server-brave-search", "0.6.2", "mcp-server-brave-search",
              env={"BRAVE_API_KEY": DUMMY}),
    Candidate("npm", "@modelcontextprotocol/server-google-maps", "0.6.2", "mcp-server-google-maps",
              env={"GOOGLE_MAPS_API_KEY": DUMMY}),
    Candidate("npm", "@modelcontextprotocol/server-redis", "2025.4.25", "mcp-server-redis",
              ("redis://127.0.0.1:9",)),
    Candidate("npm", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2", "mcp-server-aws-kb-retrieval",
              env={"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY, "AWS_REGION": "us-east-1"}),
    Candidate("npm", "@modelcontextprotocol/server-everart", "0.6.2", "mcp-server-everart",
              env={"EVERART_API_KEY": DUMMY}),
    Candidate("npm", "@modelcontextprotocol/server-gdrive", "2025.1.14", "mcp-server-gdrive",
              env={"GDRIVE_CREDENTIALS_PATH": "{work}/gdrive-credentials.json"}),
    # ---- npm: vendors' and community servers
    Candidate("npm", "@playwright/mcp", "0.0.83", "playwright-mcp", ("--isolated",)),
    Candidate("npm", "chrome-devtools-mcp", "1.11.0", "chrome-devtools-mcp"),
    Candidate("npm", "@upstash/context7-mcp", "4.1.1", "context7-mcp"),
    Candidate("npm", "@notionhq/notion-mcp-server", "2.5.2", "notion-mcp-server", env={"NOTION_TOKEN": DUMMY}),
    Candidate("npm", "@supabase/mcp-server-supabase", "0.13.0", "mcp-server-supabase", ("--access-token=dummy",)),
    Candidate("npm", "@azure/mcp", "2.0.5", "azmcp", ("server", "start"),
              env={"DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1", "AZURE_MCP_COLLECT_TELEMETRY": "false"},
              timeout=120),
    Candidate("npm", "@azure-devops/mcp", "2.10.0", "mcp-server-azuredevops", ("dummy-org",)),
    Candidate("npm", "mongodb-mcp-server", "3.0.4", "mongodb-mcp-server", env={"MDB_MCP_TELEMETRY": "disabled"}),
    Candidate("npm", "@stripe/mcp", "0.3.3", "mcp", ("--tools=all", "--api-key=sk_test_dummy")),
    Candidate("npm", "tavily-mcp", "0.2.22", "tavily-mcp", env={"TAVILY_API_KEY": "tvly-dummy"}),
    Candidate("npm", "@zereight/mcp-gitlab", "2.1.64", "mcp-gitlab",
              env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY, "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}),
    Candidate("npm", "firecrawl-mcp", "3.26.0", "firecrawl-mcp", env={"FIRECRAWL_API_KEY": "fc-dummy"}),
    Candidate("npm", "@circleci/mcp-server-circleci", "0.20.0", "mcp-server-circleci", env={"CIRCLECI_TOKEN": DUMMY}),
    Candidate("npm", "@wonderwhy-er/desktop-commander", "0.2.52", "desktop-commander"),
    Candidate("npm", "@sentry/mcp-server", "0.39.0", "sentry-mcp", ("--access-token=dummy",)),
    Candidate("npm", "@launchdarkly/mcp-server", "0.6.2", "mcp", ("start", "--api-key", DUMMY)),
    Candidate("npm", "figma-developer-mcp", "0.13.2", "figma-developer-mcp", ("--figma-api-key=dummy", "--stdio")),
    Candidate("npm", "@executeautomation/playwright-mcp-server", "1.0.12", "playwright-mcp-server"),
    Candidate("npm", "@eslint/mcp", "0.3.13", "mcp"),
    Candidate("npm", "@winor30/mcp-server-datadog", "1.8.0", "mcp-server-datadog",
              env={"DATADOG_API_KEY": DUMMY, "DATADOG_APP_KEY": DUMMY}),
    Candidate("npm", "@antv/mcp-server-chart", "0.9.10", "mcp-server-chart"),
    Candidate("npm", "@hubspot/mcp-server", "0.4.0", "mcp-hubspot", env={"PRIVATE_APP_ACCESS_TOKEN": DUMMY}),
    Candidate("npm", "@perplexity-ai/mcp-server", "1.2.1", "perplexity-mcp", env={"PERPLEXITY_API_KEY": DUMMY}),
    Candidate("npm", "@shortcut/mcp", "0.25.0", "mcp-server-shortcut", env={"SHORTCUT_API_TOKEN": DUMMY}),
    Candidate("npm", "@apify/actors-mcp-server", "0.16.0", "actors-mcp-server", env={"APIFY_TOKEN": DUMMY}),
    Candidate("npm", "@bytebase/dbhub", "1.4.0", "dbhub", ("--transport", "stdio", "--dsn", "sqlite:///{work}/sample.db")),
    Candidate("npm", "@brave/brave-search-mcp-server", "2.1.4", "brave-search-mcp-server", ("--transport", "stdio"),
              env={"BRAVE_API_KEY": DUMMY}),
    Candidate("npm", "@drawio/mcp", "1.6.1", "drawio-mcp"),
    Candidate("npm", "@mobilenext/mobile-mcp", "1.0.4", "mcp-server-mobile"),
    Candidate("npm", "@currents/mcp", "2.1.1", "mcp", env={"CURRENTS_API_KEY": DUMMY}),
    Candidate("npm", "@google-cloud/cloud-run-mcp", "1.10.0", "cloud-run-mcp"),
    Candidate("npm", "exa-mcp-server", "3.4.1", "exa-mcp-server", env={"EXA_API_KEY": DUMMY}),
    Candidate("npm", "@browsermcp/mcp", "0.1.3", "mcp-server-browsermcp"),
    Candidate("npm", "@heroku/mcp-server", "1.2.8", "heroku-mcp-server", env={"HEROKU_API_KEY": DUMMY}),
    Candidate("npm", "mcp-server-kubernetes", "4.1.7", "mcp-server-kubernetes"),
    Candidate("npm", "@benborla29/mcp-server-mysql", "2.0.9", "mcp-server-mysql",
              env={"MYSQL_HOST": "127.0.0.1", "MYSQL_PORT": "9", "MYSQL_USER": DUMMY, "MYSQL_PASS": DUMMY,
                   "MYSQL_DB": DUMMY}),
    Candidate("npm", "@agentdeskai/browser-tools-mcp", "2.0.2", "browser-tools-mcp"),
    Candidate("npm", "@cloudflare/mcp-server-cloudflare", "0.2.0", "mcp-server-cloudflare", ("run", "dummy-account")),
    Candidate("npm", "@aashari/mcp-server-atlassian-jira", "3.3.0", "mcp-atlassian-jira",
              env={"ATLASSIAN_SITE_NAME": DUMMY, "ATLASSIAN_USER_EMAIL": "dummy@example.invalid",
                   "ATLASSIAN_API_TOKEN": DUMMY}),
    Candidate("npm", "n8n-mcp", "2.87.0", "n8n-mcp", env={"MCP_MODE": "stdio", "LOG_LEVEL": "error"}, timeout=120),
    Candidate("npm", "@larksuiteoapi/lark-mcp", "0.5.1", "lark-mcp", ("mcp", "-a", DUMMY, "-s", DUMMY)),
    Candidate("npm", "@mastra/mcp-docs-server", "1.2.27", "mcp-docs-server"),
    Candidate("npm", "mcp-server-code-runner", "0.1.8", "mcp-server-code-runner"),
    Candidate("npm", "@cocal/google-calendar-mcp", "2.6.3", "google-calendar-mcp",
              env={"GOOGLE_OAUTH_CREDENTIALS": "{work}/gcp-oauth.keys.json"}),
    Candidate("npm", "slack-mcp-server", "1.3.0", "slack-mcp-server", ("--transport", "stdio"),
              env={"SLACK_MCP_XOXP_TOKEN": "xoxp-dummy"}),
    Candidate("npm", "@dynatrace-oss/dynatrace-mcp-server", "2.1.2", "mcp-server-dynatrace",
              env={"DT_ENVIRONMENT": "https://dummy.apps.dynatrace.com"}),
    Candidate("npm", "nx-mcp", "0.25.0", "nx-mcp", ("{work}/repo",)),
    Candidate("npm", "next-devtools-mcp", "0.4.0", "next-devtools-mcp"),
    # ---- PyPI: the reference servers
    Candidate("pypi", "mcp-server-fetch", "2026.10.24", "mcp-server-fetch"),
    Candidate("pypi", "mcp-server-git", "2026.10.19", "mcp-server-git", ("--repository", "{work}/repo")),
    Candidate("pypi", "mcp-server-time", "2026.10.19", "mcp-server-time", ("--local-timezone", "UTC")),
    # These two predate mcp 2 and do not pin it; sentry also forgot its httpx dependency.
    Candidate("pypi", "mcp-server-sqlite", "2025.4.25", "mcp-server-sqlite", ("--db-path", "{work}/sample.db"),
              extra=("mcp<2",)),
    Candidate("pypi", "mcp-server-sentry", "2025.1.14", "mcp-server-sentry", ("--auth-token", DUMMY),
              extra=("mcp<2", "httpx")),
    # ---- PyPI: vendors' and community servers
    Candidate("pypi", "mcp-server-qdrant", "0.8.1", "mcp-server-qdrant",
              env={"QDRANT_LOCAL_PATH": "{work}/qdrant", "COLLECTION_NAME": "sample"}),
    Candidate("pypi", "awslabs-aws-documentation-mcp-server", "1.2.3", "awslabs.aws-documentation-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-aws-pricing-mcp-server", "1.1.1", "awslabs.aws-pricing-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-cloudwatch-mcp-server", "0.3.1", "awslabs.cloudwatch-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-eks-mcp-server", "0.2.1", "awslabs.eks-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-aws-iac-mcp-server", "1.0.26", "awslabs.aws-iac-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-dynamodb-mcp-server", "2.1.8", "awslabs.dynamodb-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-ecs-mcp-server", "0.1.37", "ecs-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-aws-serverless-mcp-server", "0.2.0", "awslabs.aws-serverless-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-iam-mcp-server", "1.1.2", "awslabs.iam-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-billing-cost-management-mcp-server", "0.0.42",
              "awslabs.billing-cost-management-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-memcached-mcp-server", "1.1.1", "awslabs.memcached-mcp-server", env=AWS),
    Candidate("pypi", "awslabs-prometheus-mcp-server", "0.3.1", "awslabs.prometheus-mcp-server", env=AWS),
    Candidate("pypi", "mcp-server-motherduck", "1.1.0", "mcp-server-motherduck", ("--db-path", ":memory:", "--read-write")),
    Candidate("pypi", "mcp-atlassian", "0.23.1", "mcp-atlassian",
              env={"JIRA_URL": "https://dummy.atlassian.net", "JIRA_USERNAME": "dummy@example.invalid",
                   "JIRA_API_TOKEN": DUMMY, "CONFLUENCE_URL": "https://dummy.atlassian.net/wiki",
                   "CONFLUENCE_USERNAME": "dummy@example.invalid", "CONFLUENCE_API_TOKEN": DUMMY}),
    Candidate("pypi", "mcp-clickhouse", "0.7.0", "mcp-clickhouse",
              env={"CLICKHOUSE_HOST": "127.0.0.1", "CLICKHOUSE_PORT": "9", "CLICKHOUSE_USER": DUMMY,
                   "CLICKHOUSE_PASSWORD": DUMMY, "CLICKHOUSE_SECURE": "false"}),
    Candidate("pypi", "mcp-neo4j-cypher", "0.6.0", "mcp-neo4j-cypher",
              env={"NEO4J_URI": "bolt://127.0.0.1:9", "NEO4J_USERNAME": DUMMY, "NEO4J_PASSWORD": DUMMY}),
    Candidate("pypi", "mcp-neo4j-memory", "0.4.5", "mcp-neo4j-memory",
              env={"NEO4J_URL": "bolt://127.0.0.1:9", "NEO4J_USERNAME": DUMMY, "NEO4J_PASSWORD": DUMMY}),
    Candidate("pypi", "elasticsearch-mcp-server", "2.1.6", "elasticsearch-mcp-server",
              env={"ELASTICSEARCH_HOSTS": "http://127.0.0.1:9", "ELASTICSEARCH_USERNAME": DUMMY,
                   "ELASTICSEARCH_PASSWORD": DUMMY}),
    # Pins mcp 1.6.0, which imports a pydantic internal that pydantic 2.11 removed.
    Candidate("pypi", "chroma-mcp", "0.2.6", "chroma-mcp", ("--client-type", "ephemeral"), extra=("pydantic<2.11",)),
    Candidate("pypi", "excel-mcp-server", "2.2.2", "excel-mcp-server", ("stdio",),
              env={"EXCEL_FILES_PATH": "{work}/files"}),
    Candidate("pypi", "office-word-mcp-server", "1.1.11", "word_mcp_server"),
    Candidate("pypi", "office-powerpoint-mcp-server", "2.0.7", "ppt_mcp_server", extra=("mcp<2",)),
    Candidate("pypi", "markitdown-mcp", "0.0.1a8", "markitdown-mcp"),
    Candidate("pypi", "arxiv-mcp-server", "0.8.2", "arxiv-mcp-server", ("--storage-path", "{work}/arxiv")),
    Candidate("pypi", "duckduckgo-mcp-server", "0.7.0", "duckduckgo-mcp-server"),
    Candidate("pypi", "mcp-server-duckdb", "1.1.0", "mcp-server-duckdb", ("--db-path", "{work}/duck.db"),
              extra=("mcp<2",)),
    Candidate("pypi", "opensearch-mcp-server-py", "0.12.0", "opensearch-mcp-server-py",
              env={"OPENSEARCH_URL": "http://127.0.0.1:9", "OPENSEARCH_USERNAME": DUMMY,
                   "OPENSEARCH_PASSWORD": DUMMY}),
    Candidate("pypi", "mcp-yahoo-finance", "0.2.0", "mcp-yahoo-finance"),
    Candidate("pypi", "serena-agent", "2.1.0", "serena",
              ("start-mcp-server", "--project", "{work}/repo", "--agent-interface", "tools",
               "--enable-web-dashboard", "false",
               "--open-web-dashboard", "false"), timeout=120),
    Candidate("pypi", "redis-mcp-server", "0.5.1", "redis-mcp-server", ("--url", "redis://127.0.0.1:9/0")),
    Candidate("pypi", "mcp-shell-server", "1.1.14", "mcp-shell-server", env={"ALLOW_COMMANDS": "ls,cat,echo"}),
    Candidate("pypi", "mcp-server-calculator", "0.2.1", "mcp-server-calculator"),
    Candidate("pypi", "mcp-grafana", "2.1.1", "mcp-grafana",
              env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_API_KEY": DUMMY}),
    Candidate("pypi", "mcp-server-tree-sitter", "0.7.0", "mcp-server-tree-sitter", extra=("mcp<2",)),
    Candidate("pypi", "code-index-mcp", "2.17.1", "code-index-mcp"),
    Candidate("pypi", "jupyter-mcp-server", "2.2.4", "jupyter-mcp-server",
              env={"JUPYTER_URL": "http://127.0.0.1:9", "JUPYTER_TOKEN": DUMMY}),
    Candidate("pypi", "mcp-obsidian", "0.2.3", "mcp-obsidian", env={"OBSIDIAN_API_KEY": DUMMY}),
    Candidate("pypi", "kubernetes-mcp-server", "0.0.69", "kubernetes-mcp-server"),
    Candidate("pypi", "dbt-mcp", "2.8.0", "dbt-mcp", env={"DBT_PROJECT_DIR": "{work}/repo"}, python="3.12"),
    Candidate("pypi", "pagerduty-mcp", "1.1.0", "pagerduty-mcp", env={"PAGERDUTY_USER_API_KEY": DUMMY},
              python="3.12"),
    Candidate("pypi", "postgres-mcp", "0.3.0", "postgres-mcp", ("--access-mode=unrestricted",),
              env={"DATABASE_URI": "postgresql://dummy:dummy@127.0.0.1:9/dummy"}, python="3.12"),
    Candidate("pypi", "mcp-server-docker", "0.3.0", "mcp-server-docker", python="3.12"),
    Candidate("pypi", "notion-mcp", "0.2.2", "notion-mcp", env={"NOTION_API_KEY": DUMMY}, python="3.12"),
)


# --------------------------------------------------------------------------- install


def slug(package: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", package.lstrip("@"))


def run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 900) -> None:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if not ln.startswith("WARNING")]
        tail = [ln[:300] for ln in lines[-4:]]
        raise RuntimeError(f"{' '.join(cmd[:3])}... exited {p.returncode}: " + " | ".join(tail))


def find_python(minor: str) -> str:
    """An interpreter of the wanted minor version: on PATH, else under pyenv."""
    found = shutil.which(f"python{minor}")
    if found:
        try:
            subprocess.run([found, "-c", "pass"], check=True, capture_output=True)
            return found
        except (OSError, subprocess.CalledProcessError):
            pass  # a pyenv shim for a version that is not the global one
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for d in sorted(root.glob(f"{minor}.*"), reverse=True):
        exe = d / "bin" / f"python{minor}"
        if exe.exists():
            return str(exe)
    raise RuntimeError(f"no python{minor} interpreter found")


def npm_dir(scratch: Path, c: Candidate) -> Path:
    return scratch / "npm" / slug(c.package)


def pypi_dir(scratch: Path, c: Candidate) -> Path:
    return scratch / "pypi" / slug(c.package)


def npm_installed(scratch: Path, c: Candidate) -> dict[str, Any] | None:
    pj = npm_dir(scratch, c) / "node_modules" / c.package / "package.json"
    if not pj.exists():
        return None
    meta: dict[str, Any] = json.loads(pj.read_text())
    return meta if meta.get("version") == c.version else None


def pypi_installed(scratch: Path, c: Candidate) -> dict[str, str] | None:
    py = pypi_dir(scratch, c) / "bin" / "python"
    if not py.exists():
        return None
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "md = m.distribution(sys.argv[1]).metadata\n"
        "lic = md.get('License-Expression') or ''\n"
        "if not lic:\n"
        "    lic = ', '.join(c.split(' :: ')[-1] for c in md.get_all('Classifier') or []\n"
        "                    if c.startswith('License ::'))\n"
        "if not lic:\n"
        "    lic = ((md.get('License') or '').strip().splitlines() or [''])[0]\n"
        "files = [f for f in m.distribution(sys.argv[1]).files or []\n"
        "         if f.name.upper().startswith(('LICEN', 'COPYING')) and '.dist-info' in str(f)]\n"
        "print(json.dumps({'version': md['Version'], 'license': lic,\n"
        "                  'license_file': str(files[0].locate()) if files else ''}))\n"
    )
    p = subprocess.run([str(py), "-c", probe, c.package], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return None
    meta: dict[str, str] = json.loads(p.stdout)
    if not meta["license"] and meta["license_file"]:
        meta["license"] = license_file_says(Path(meta["license_file"]))
    return meta if meta["version"] == c.version else None


def license_file_says(path: Path) -> str:
    """A licence file's title line, for packages whose metadata names no licence."""
    try:
        first = next((ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()), "")
    except OSError:
        return ""
    return f"{first} (licence file; no licence in metadata)" if first else ""


def install(scratch: Path, c: Candidate) -> str:
    """Installs the pin if missing; returns the package's licence from its metadata."""
    base_env = os.environ | {
        "PUPPETEER_SKIP_DOWNLOAD": "1",
        "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    # What was asked for, kept beside the install: a changed `extra` re-installs.
    wanted = json.dumps([c.package, c.version, list(c.extra)])
    if c.kind == "npm":
        d = npm_dir(scratch, c)
        stamp = d / ".collect-stamp"
        meta = npm_installed(scratch, c)
        if meta is None or not stamp.exists() or stamp.read_text() != wanted:
            d.mkdir(parents=True, exist_ok=True)
            # Lifecycle scripts are not run: here they only fetch browsers or
            # prebuilt binaries from outside the registry, which cannot work.
            run(["npm", "install", "--prefix", str(d), "--no-audit", "--no-fund", "--ignore-scripts",
                 "--loglevel=error", f"{c.package}@{c.version}", *c.extra], env=base_env)
            meta = npm_installed(scratch, c)
            if meta is None:
                raise RuntimeError("npm install did not produce the pinned version")
            stamp.write_text(wanted)
        lic = meta.get("license") or meta.get("licenses") or ""
        if isinstance(lic, dict):
            lic = lic.get("type", "")
        if isinstance(lic, list):
            lic = ", ".join(x.get("type", "") if isinstance(x, dict) else str(x) for x in lic)
        if not lic or str(lic).upper().startswith("SEE LICEN"):
            pkg_dir = d / "node_modules" / c.package
            files = sorted(f for f in pkg_dir.iterdir() if f.name.upper().startswith(("LICEN", "COPYING")))
            said = license_file_says(files[0]) if files else ""
            lic = f"{lic}: {said}" if lic and said else (said or lic)
        return str(lic)
    d = pypi_dir(scratch, c)
    stamp = d / ".collect-stamp"
    pmeta = pypi_installed(scratch, c)
    if pmeta is None or not stamp.exists() or stamp.read_text() != wanted:
        if not (d / "bin" / "python").exists():
            run([find_python(c.python), "-m", "venv", str(d)], env=base_env)
        run([str(d / "bin" / "python"), "-m", "pip", "install", "-q", f"{c.package}=={c.version}", *c.extra],
            env=base_env)
        pmeta = pypi_installed(scratch, c)
        if pmeta is None:
            raise RuntimeError("pip install did not produce the pinned version")
        stamp.write_text(wanted)
    return pmeta["license"]


# --------------------------------------------------------------------------- work dir


def prepare_work(scratch: Path) -> Path:
    """Sample things some servers want to point at (a git repo, a folder, a
    database). Built once; the servers only read their shape at start-up."""
    work = scratch / "work"
    (work / "files").mkdir(parents=True, exist_ok=True)
    (work / "files" / "hello.txt").write_text("hello\n")
    repo = work / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "README.md").write_text("sample repository for MCP tool listing\n")
        genv = os.environ | {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@example.invalid",
                             "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@example.invalid"}
        for cmd in (["git", "init", "-q"], ["git", "add", "README.md"], ["git", "commit", "-qm", "init"]):
            subprocess.run(cmd, cwd=repo, env=genv, check=True, capture_output=True)
    db = work / "sample.db"
    if not db.exists():
        import sqlite3

        con = sqlite3.connect(db)
        con.execute("create table notes (id integer primary key, body text)")
        con.commit()
        con.close()
    # Dummy credential files in the shapes some servers read at start-up.
    far = 32503680000000  # year 3000, in ms: "not expired", so nothing tries to refresh
    (work / "gdrive-credentials.json").write_text(json.dumps(
        {"access_token": DUMMY, "refresh_token": DUMMY, "token_type": "Bearer", "expiry_date": far}))
    (work / "gcp-oauth.keys.json").write_text(json.dumps(
        {"installed": {"client_id": "dummy.apps.googleusercontent.com", "client_secret": DUMMY,
                       "redirect_uris": ["http://localhost"]}}))
    wrangler = scratch / "home" / ".config" / ".wrangler" / "config" / "default.toml"
    wrangler.parent.mkdir(parents=True, exist_ok=True)
    wrangler.write_text('oauth_token = "dummy"\nexpiration_time = "3000-01-01T00:00:00.000Z"\n')
    return work


# --------------------------------------------------------------------------- list


MAX_PAGES = 100  # a server that never stops paginating is a failure


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def list_sdk(s: ClientSession) -> list[dict[str, Any]]:
    """tools/list through the SDK, following nextCursor."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        res = await s.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(dump(t) for t in res.tools)
        cursor = res.next_cursor
        if not cursor:
            return tools
    raise RuntimeError(f"tools/list pagination did not end after {MAX_PAGES} pages")


async def list_raw(s: ClientSession) -> list[dict[str, Any]]:
    """tools/list as plain JSON: to see what the SDK's model drops, and for a
    listing the SDK rejects as a whole (one tool with, e.g., an inputSchema
    without "type" fails the entire result). The SDK has no public call that
    skips result validation, so this goes to its dispatcher (mcp is pinned in
    pyproject.toml); each tool is then validated on its own in `collect_one`
    and kept as sent if it fails."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await s._dispatcher.send_raw_request("tools/list", {"cursor": cursor} if cursor else None, {})
        listed = page.get("tools")
        if not isinstance(listed, list) or not all(isinstance(t, dict) for t in listed):
            raise RuntimeError("tools/list result has no list of tool objects")
        tools.extend(listed)
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
    raise RuntimeError(f"tools/list pagination did not end after {MAX_PAGES} pages")


async def list_server(c: Candidate, scratch: Path, work: Path, log: Path) -> tuple[Any, list[dict[str, Any]], str | None]:
    prefix = npm_dir(scratch, c) if c.kind == "npm" else pypi_dir(scratch, c)

    def sub(s: str) -> str:
        return s.replace("{work}", str(work)).replace("{home}", str(scratch / "home")).replace("{prefix}", str(prefix))

    exe = prefix / "node_modules" / ".bin" / c.command if c.kind == "npm" else prefix / "bin" / c.command
    if not exe.exists():
        raise RuntimeError(f"installed package has no executable {c.command!r}")
    env = {
        "HOME": str(scratch / "home"),
        "DO_NOT_TRACK": "1",
        "NO_COLOR": "1",
        "NODE_NO_WARNINGS": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",  # set order inside descriptions/defaults (e.g. mcp-atlassian) stays put across runs
        **{k: sub(v) for k, v in c.env.items()},
    }
    params = StdioServerParameters(command=str(exe), args=[sub(a) for a in c.args], env=env, cwd=str(work))
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            init = await s.initialize()
            rejected: str | None = None
            try:
                listed = await list_sdk(s)
            except ValidationError as e:
                err = e.errors()[0]
                rejected = f"{'.'.join(map(str, err['loc']))}: {err['msg']} ({e.error_count()} errors)"
            raw = await list_raw(s)
            if rejected is None and sorted(t["name"] for t in listed) != sorted(str(t.get("name")) for t in raw):
                raise RuntimeError("the SDK's listing and the plain JSON listing name different tools")
    return dump(init.server_info), raw, rejected


def pointer(path: str, key: str) -> str:
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def differences(sent: Any, kept: Any, path: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """(what `sent` has that `kept` lost or changed, what `kept` added), keyed
    by JSON pointer, values as sent / as added."""
    lost: dict[str, Any] = {}
    added: dict[str, Any] = {}
    if isinstance(sent, dict) and isinstance(kept, dict):
        for k, v in sent.items():
            if k not in kept:
                lost[pointer(path, k)] = v
            else:
                a, b = differences(v, kept[k], pointer(path, k))
                lost |= a
                added |= b
        for k in kept.keys() - sent.keys():
            added[pointer(path, k)] = kept[k]
    elif isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for i, (x, y) in enumerate(zip(sent, kept, strict=True)):
            a, b = differences(x, y, f"{path}/{i}")
            lost |= a
            added |= b
    elif sent != kept:
        lost[path] = sent
    return lost, added


ERRORISH = re.compile(r"error|fail|require|not found|cannot|missing|denied|refused|no such", re.I)


def why(e: BaseException, log: Path) -> str:
    """One line: the exception, and the server's own last words that look like a reason."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    if isinstance(e, TimeoutError):
        msg = "timed out starting or listing tools"
    else:
        msg = " / ".join(ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines() if ln.strip())
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] if log.exists() else []
    lines = [ln for ln in lines if not ln.startswith("at ") and not ln.startswith("File ")]
    said = [ln for ln in lines if ERRORISH.search(ln)][-2:] or lines[-2:]
    if said:
        msg += " | stderr: " + " / ".join(x[:240] for x in said)
    return msg[:600]


async def collect_one(c: Candidate, scratch: Path, work: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        lic = await asyncio.to_thread(install, scratch, c)
    except Exception as e:  # reported, then skipped
        return None, f"install failed: {e}"[:600]
    log = scratch / "logs" / f"{slug(c.package)}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        async with asyncio.timeout(c.timeout):
            info, raw, rejected = await list_server(c, scratch, work, log)
    except Exception as e:  # reported, then skipped
        return None, why(e, log)
    if not raw:
        return None, "started but listed no tools"
    tools: list[dict[str, Any]] = []
    invalid: dict[str, str] = {}
    dropped: dict[str, dict[str, Any]] = {}
    added: dict[str, dict[str, Any]] = {}
    for t in raw:
        name = str(t.get("name"))
        try:
            d = dump(Tool.model_validate(t))
        except ValidationError as e:
            tools.append(t)
            err = e.errors()[0]
            invalid[name] = f"{'.'.join(map(str, err['loc']))}: {err['msg']}"
            continue
        tools.append(d)
        lost, extra = differences(t, d)
        if lost:
            dropped[name] = lost
        if extra:
            added[name] = extra
    tools.sort(key=lambda t: str(t.get("name")))
    rec: dict[str, Any] = {
        "server": c.package,
        "version": c.version,
        "source": c.kind,
        "license": lic,
        "server_info": info,
        "tools": tools,
    }
    if rejected:  # the SDK's listing validation failed; tools were re-fetched as JSON
        rec["sdk_rejected_listing"] = rejected
    if invalid:  # tools that do not even parse as a Tool: kept exactly as sent
        rec["sdk_invalid_tools"] = invalid
    if dropped:  # per tool, JSON pointer -> value as sent, for what the SDK's dump lost or changed
        rec["sdk_dropped"] = dropped
    if added:  # per tool, JSON pointer -> value the SDK's dump added
        rec["sdk_added"] = added
    return rec, None


@click.command()
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Where to write the fixture JSON.")
@click.option("--scratch", type=click.Path(path_type=Path), default=Path("/tmp/realtools"), show_default=True,
              help="Where packages are installed (outside the repository).")
@click.option("--only", multiple=True, help="Only these packages (repeatable); the rest of --out is kept.")
@click.option("--source", type=click.Choice(["npm", "pypi"]), help="Only this kind; the rest of --out is kept.")
@click.option("--markdown", is_flag=True, help="Also print the tables as Markdown (for README.md).")
def main(out: Path, scratch: Path, only: tuple[str, ...], source: str | None, markdown: bool) -> None:
    scratch = scratch.resolve()
    unknown = set(only) - {c.package for c in CANDIDATES}
    if unknown:
        raise click.UsageError(f"not a candidate: {', '.join(sorted(unknown))}")
    chosen = [c for c in CANDIDATES if (not only or c.package in only) and (not source or c.kind == source)]
    work = prepare_work(scratch)
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    if (only or source) and out.exists():  # a partial run refreshes only what it tried
        tried = {(c.kind, c.package) for c in chosen}
        for rec in json.loads(out.read_text()):
            if (rec["source"], rec["server"]) not in tried:
                kept[(rec["source"], rec["server"])] = rec
    failures: dict[str, str] = {}
    for c in chosen:
        t0 = time.monotonic()
        rec, err = asyncio.run(collect_one(c, scratch, work))
        dt = time.monotonic() - t0
        if rec is not None:
            kept[(c.kind, c.package)] = rec
            print(f"ok   {c.package}@{c.version}: {len(rec['tools'])} tools ({dt:.1f}s)", file=sys.stderr)
        else:
            failures[c.package] = err or "unknown"
            print(f"FAIL {c.package}@{c.version}: {err}", file=sys.stderr)
    records = [kept[k] for k in sorted(kept)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    total = sum(len(r["tools"]) for r in records)
    width = max([len(r["server"]) for r in records] + [6])
    print(f"{'server':<{width}}  {'source':<6}  {'version':<12}  tools")
    for r in records:
        print(f"{r['server']:<{width}}  {r['source']:<6}  {r['version']:<12}  {len(r['tools'])}")
    print(f"{'total':<{width}}  {'':<6}  {'':<12}  {total}  ({len(records)} servers)")
    for pkg, err in failures.items():
        print(f"failed: {pkg}: {err}")
    if markdown:
        print("\n| server | source | version | licence | tools |\n| --- | --- | --- | --- | ---: |")
        for r in records:
            print(f"| `{r['server']}` | {r['source']} | {r['version']} | {r['license'] or '?'} | {len(r['tools'])} |")
        print(f"| **total** | | | | **{total}** |")
        if failures:
            print("\n| package | why it was skipped |\n| --- | --- |")
            for pkg, err in failures.items():
                print(f"| `{pkg}` | {err.replace('|', '/')} |")


if __name__ == "__main__":
    main()
