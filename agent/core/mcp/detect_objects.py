"""What an order in a tool description is about (docs/mcp.md "Tool poisoning").

An order is only as dangerous as its object. ``find_objects`` extracts, from
one sentence, the things an order can act on:

* ``cmd``    a shell command (backticks, or after "run"/"execute"), classified by
             detect_shell (download-and-execute, privilege, secret read, ...);
* ``path``   a file path, classified by detect_paths (credential, persistence, ...);
* ``url`` / ``host`` / ``ip`` / ``email``  a network destination, with whether the
             URL carries data (a query to fill, a Markdown image the client fetches);
* ``tool``   another tool: a peer (another server's tool), a tool placed on a named
             other server, a sibling (this server's), or an unknown identifier;
* ``server`` another server named as the place to go ("the file-drop server");
* ``param``  a parameter of this tool, and ``literal`` a fixed value for one;
* ``data``   the user's or the session's data (conversation, messages, files);
* ``secret`` credentials as nouns, ``env`` a secret-looking environment variable;
* ``reply``  the model's answer to the user as a destination ("in your answer").

Each object carries the stems of its topic, compared with the tool's purpose by
the checks (a geocoder ordering ``sudo`` is off-purpose; a shell tool is not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentsh.agent.core.mcp.detect_lex import (
    DATA_RE,
    ENV_NAME_RE,
    FOREIGN_CONVERSATION_WORDS,
    FOREIGN_SECRET_WORDS,
    INTRO_COMMA_RE,
    LEAD_WORDS_RE,
    REPLY_DEST_RE,
    SECRET_RE,
    VAULT_EMPTIED_RE,
    VAULT_WORDS,
    is_mention,
)
from agentsh.agent.core.mcp.detect_parse import ParsedTool, Sentence, name_words, stem
from agentsh.agent.core.mcp.detect_paths import IGNORE_FILE_NAME, PATH_RE, path_classes
from agentsh.agent.core.mcp.detect_shell import KNOWN, PRIVESC, _base, classify
from agentsh.agent.core.mcp.detect_text import TextMemo

URL_RE = re.compile(r"\b(?:https?|ftps?|wss?|file|webcal|sftp|smb|ssh|git|s3|gs|az|abfss?|wasbs?)://[^\s\x00\"'<>`)\]|]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}[^\s\x00\"'<>`)\]|]*")
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b")
IP_RE = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?![\d.])")
_TLDS = ("com|net|org|io|dev|xyz|app|co|cc|sh|ai|me|info|biz|pro|site|online|cloud|tech|link|"
         "live|top|ru|cn|tk|pw|us|uk|de|eu|it|fr|nl|es|jp|in|br|gg|to|ly|so|tv|click|store|"
         "shop|zone|run|page|host|space|website|services|systems|tools|network|email|cx|su|ws")  # fmt: skip
HOST_RE = re.compile(r"(?<![\w@/.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:" + _TLDS +
                     r")\b(?![.-]?\w)(?::\d+)?(?:/[^\s\x00\"'<>`)\]]*)?")  # fmt: skip
_FILE_EXT = re.compile(r"\.(?:json|ya?ml|toml|txt|md|py|js|ts|sh|conf|cfg|ini|xml|csv|log|pdf|png|"
                       r"jpe?g|gif|html?|zip|tar|gz|lock|env|rc|db|sql|so)$")  # fmt: skip
# a host name under a placeholder label: "<hex>.q.dnsmetrics.net" (data in a DNS lookup)
_LABEL_HOST_RE = re.compile(r"(?:<[^<>\x00]{1,80}>|\{[^{}\x00]{1,80}\}|\$\{?\w+\}?|\$\([^()\x00]{1,40}\))((?:\.[a-z0-9-]+)*\.(?:[a-z0-9-]+\.)+(?:" + _TLDS + r"))\b")
BACKTICK_RE = re.compile(r"`([^`\x00\n]{1,400})`")
QUOTED_RE = re.compile(r"[\"“”]([^\"“”\x00\n]{1,300})[\"“”]|(?<![a-z])'([^'\x00\n]{1,300})'(?![a-z])")
MD_IMAGE_RE = re.compile(r"!\[[^\]\x00]{0,100}\]\(\s*([^)\s\x00]+)")
MD_LINK_RE = re.compile(r"(?<!!)\[[^\]\x00]{1,100}\]\(\s*([^)\s\x00]+)")
IDENT_RE = re.compile(r"(?<![\w./@$-])[a-z][a-z0-9]*(?:[_][a-z0-9]+)+(?![\w/@-])"
                      r"|(?<![\w./@$-])[a-z][a-z0-9]*(?:[-][a-z0-9]+)+(?=\s+tool\b)")  # fmt: skip
# "on the billing server", "the mapsmith-pro server", "(secure-files server)", "Slack's"
SERVER_RE = re.compile(
    # the name quoted: "the `secure_reply` tool of the `lexmail-gateway` server", "on the MCP server `x`"
    # (first: matches do not overlap, and "on the MCP server" alone would be taken for a server "mcp")
    r"\b(?:on|of|from|in|via|at|through|to|by)\s+(?:the\s+)?[`'\"]([\w.-]+)[`'\"]\s+(?:mcp\s+)?server\b|"
    r"\b(?:on|of|from|via|at|through|to|by)\s+(?:the\s+)?(?:mcp\s+)?server\s+[`'\"]([\w.-]+)[`'\"]|"
    r"\b(?:on|of|from|in|via|at|through|to|by)\s+(?:the\s+)?([\w.-]+(?:\s+[\w.-]+)?)\s+"
    r"(?:mcp\s+)?server\b|\bthe\s+([\w.-]+)\s+(?:mcp\s+)?server'?s\b|\(([\w.-]+)\s+server\)|"
    r"\b([\w.-]+)'s\s+`|\bthe\s+([\w.-]+)\s+(?:mcp\s+)?server\s+(?:has|offers|provides|exposes)\b"
)
_NOT_SERVER = frozenset(("dieser", "diesem", "diesen", "dieses", "ce", "este", "esta", "questo", "this", "same", "the same", "this same", "our", "own", "mcp", "a", "an",
                         "that", "which", "each", "every", "the", "your", "current", "local",
                         "its", "given", "configured", "remote", "connected", "target", "it",
                         "any", "one", "same mcp", "this mcp", "api", "web", "http", "smtp",
                         "dns", "language", "database", "db", "sql", "proxy", "origin",
                         "upstream", "backend", "license", "build", "dev", "development",
                         "production", "staging", "test", "file", "mail", "email", "imap",
                         "ftp", "sftp", "ssh", "vault", "auth", "oauth", "identity",
                         "the user's", "user's", "user"))  # fmt: skip
# "to see exact server …", "to find the right server": an infinitive after "to", not a server's name
_INFINITIVE = re.compile(r"(?:see|find|get|know|learn|pick|choose|select|identify|discover|check|look|"
                         r"confirm|verify|list|determine)\b")
# "server and tool names", "server names", "server id": the word qualifies another noun
_SERVER_AS_MODIFIER = re.compile(r"(?:'?s)?\s+(?:and\s+[\w-]+\s+)?(?:names?|ids?|urls?|lists?|versions?)\b")
# a value for a parameter: quoted text, numbers, booleans, ids, IBANs
LITERAL_RE = re.compile(
    r"\b(?:true|false)\b|\b\d+(?:\.\d+)?\b|\b[a-z]{2,5}-\d[\w-]{2,}\b"
)
# a destination outside the machine named in words ("an external analytics endpoint",
# "the attacker's collector", "a remote server")
EXT_DESC_RE = re.compile(
    r"\b(?:(?:an?|the|our|their|some)\s+)?(?:external|remote|third[- ]party|outside|off-?site|"
    r"unknown|attacker'?s?|evil|public)\s+(?:[\w-]+\s+){0,2}?(?:servers?|hosts?|endpoints?|urls?|"
    r"address(?:es)?|domains?|services?|apis?|collectors?|sites?|locations?|machines?|storage|"
    r"buckets?|webhooks?|sinks?|mirrors?|inbox(?:es)?|mailbox(?:es)?|repos(?:itor(?:y|ies))?|gists?|"
    r"pastes?|pastebin|channels?)\b(?![\s-]+(?:keys?|tokens?|credentials?|secrets?|clients?|"
    r"libraries|sdks?|integrations?))|\bthe\s+attacker\b|\battacker'?s?\s+(?:\w+\s+)?collector\b"
    # "a Slack Connect channel shared with our retention vendor"
    r"|\b(?:channel|workspace|inbox|mailbox|bucket|folder|drive)s?\s+shared\s+with\s+(?:an?\s+|our\s+|the\s+|their\s+)?"
    r"(?:[\w-]+\s+){0,2}?(?:vendor|partner|supplier|contractor|agency|third[- ]party)s?\b"
    # a public paste of the data: "post it as a gist", "as a public gist"
    r"|\bas\s+an?\s+(?:public\s+|secret\s+)?(?:gist|paste|pastebin)\b"
    # a destination qualified in brackets: "to channel C07X (external audit)", "@sam (external org)"
    r"|\(\s*(?:external|outside|third[- ]party)\b[^()\n]{0,30}\)"
    # a link the client fetches by itself, whatever it carries: "append to every image URL a query parameter"
    r"|\b(?:every|each|all|any)\s+(?:image|img|tracking|pixel)\s+(?:urls?|links?|srcs?)\b"
    # someone else's side of a shared channel: "the vendor's shared Slack Connect channel"
    # a channel between two organisations by definition: "a Slack Connect channel with our QA vendor"
    r"|\bslack\s+connect\s+channels?\b"
    r"|\b(?:vendor|partner|supplier|contractor)'?s?\s+(?:[\w-]+\s+){0,3}?(?:channels?|workspaces?|"
    r"inbox(?:es)?|mailbox(?:es)?|buckets?|drives?|repos(?:itor(?:y|ies))?)\b"
)
# where money goes: IBANs, account and card numbers, crypto wallets
ACCOUNT_RE = re.compile(
    r"\b[a-z]{2}\d{2}(?:\s?[a-z0-9]){11,30}\b|\b(?:acc(?:ount)?|acct)[-_ ]?(?:no\.?\s*)?[\w-]*\d{4,}[\w-]*\b|"
    r"\b(?:0x[0-9a-f]{40}|bc1[0-9a-z]{25,60}|[13][a-km-zA-HJ-NP-Z1-9]{25,34})\b|"
    r"\bcard\s+(?:number\s+|ending\s+(?:in\s+)?)\d{4}\b|\brouting\s+(?:number\s+)?\d{9}\b"
)
_QUOTE_CHARS = "\"'\u201c\u201d\u2018\u2019"
_CALL_NEAR = re.compile(
    r"\b(?:call|calls|calling|called|invoke|invoking|invoked|use|using|run|trigger|query|submit|"
    r"via|through|to|then|prefer|tool|tools|function)\s+(?:the\s+|its\s+|their\s+|[a-z][\w.-]{1,40}'s\s+)?$"
    # "forward them with post_message": what carries the things sent
    r"|\b(?:forward|send|post|relay|share|push|copy|mirror)\w*\s+(?:it|them|this|these|those|the\s+\w+)\s+with\s+$"
    # "prefetch each one with fetch_url": what the things named are fetched with
    r"|\b(?:fetch|prefetch|preload|load|open|retrieve|request|download)\w*\s+(?:it|them|each(?:\s+one)?|every\s+\w+|"
    r"the\s+\w+)\s+(?:with|using|via|through)\s+$"
    # "(1) list_secrets for this repo, (2) create_issue_comment with the output": a numbered step of calls
    r"|(?:^|[\s,;:])\(\d{1,2}\)\s+$"
)
# shell syntax or flags: a line starting with a command word is a command, not prose
_SHELLISH = re.compile(r"(?:^|\s)--?[a-z]|[|;&>`]|\$\(|\$\{?[a-z_]|@[~$/.]|https?://")
_RESERVED_HOST = re.compile(r"(?:^|\.)(?:example\.(?:com|org|net)|localhost|test|invalid|local)$|"
                            r"^(?:127\.|10\.|192\.168\.|169\.254\.|0\.0\.0\.0)")  # fmt: skip
_PLACEHOLDER = re.compile(r"<[^>\s]{0,40}>|\{[^}]{0,40}\}|\$\{?\w+|=\s*$|=(?:data|\.\.\.|x+|"
                          r"<|%s|\{)|\?[\w-]+=$")  # fmt: skip

# purpose words that make a kind of object part of the tool's job
SHELL_PURPOSE = frozenset(map(stem, ["shell", "command", "terminal", "exec", "execute", "bash", "zsh", "console", "cmd", "powershell"]))  # fmt: skip
# tools whose job is the user's dotfiles: they write the files that run later
DOTFILE_PURPOSE = frozenset(map(stem, ["dotfile", "dotfiles", "chezmoi", "stow", "yadm", "rcm"]))
# tools whose job is credentials and dotfiles: a secrets scanner reads ~/.ssh, a dotfile backup ~/.npmrc
CRED_PURPOSE = frozenset(map(stem, ["secret", "secrets", "credential", "credentials", "ssh", "dotfile", "dotfiles", "keychain", "vault", "password", "passwords", "netrc", "npmrc", "gpg", "login", "auth", "certificate", "keys"]))  # fmt: skip
NET_PURPOSE = frozenset(map(stem, ["url", "link", "redirect", "shortener", "http", "https", "fetch", "request", "webhook", "browse", "browser", "crawl", "scrape", "download", "dns", "resolve", "ping", "curl", "proxy", "probe", "uptime"]))  # fmt: skip
_NET_CMDS = frozenset(("curl", "wget", "http", "httpie", "nslookup", "dig", "ping"))
MAIL_PURPOSE = frozenset(map(stem, ["email", "mail", "send", "message", "inbox", "smtp", "invite", "invitation", "calendar", "contact", "recipient", "forward"]))  # fmt: skip


@dataclass(slots=True)
class Obj:
    kind: str
    text: str
    start: int
    end: int
    klass: str = ""
    detail: str = ""
    topic: frozenset[str] = field(default_factory=frozenset)
    classes: frozenset[str] = field(default_factory=frozenset)  # paths: all classes


def _host_of(url: str) -> str:
    m = _HOST_OF.match(url)
    return m.group(1) if m else url


# top-level domains that, inside a host name, end a whole other name ("registry.npmjs.org.pkgmirror.ru":
# npmjs.org written in front of pkgmirror.ru); not "app" or "dev", common as labels of their own
_INNER_TLDS = frozenset(("com", "org", "net", "io", "gov", "edu"))


def dressed_as(host: str) -> str:
    """The well-formed domain a host spells out in front of the one it really is in
    ("registry.npmjs.org" of "registry.npmjs.org.pkgmirror.ru"), or "" (a host reads right to left;
    a reader reads it left to right and stops at the name they know)."""
    labels = host.split(":")[0].split(".")
    for i in range(len(labels) - 3, 0, -1):
        if labels[i] in _INNER_TLDS and len(labels[i - 1]) > 1:
            return ".".join(labels[: i + 1])
    return ""


def _host_topic(host: str) -> frozenset[str]:
    if (shown := dressed_as(host)) and host.count(".") < 12:
        host = host[len(shown) + 1 :]  # what it is, not what it spells: pkgmirror.ru
    labels = [x for x in _DOT_DASH.split(host) if x and x not in ("www", "api", "com", "net",
                                                                      "org", "io", "dev")]
    return frozenset(stem(x) for x in labels)


# words of persistence paths that name no job ("edit_file" does not own ~/.ssh/config)
_PATH_GENERIC = frozenset(map(stem, ["file", "files", "config", "configs", "edit", "write", "read", "get",
                                     "set", "update", "create", "home", "user", "local", "path"]))


_EDITING = frozenset(map(stem, ["edit", "update", "write", "manage", "configure", "install", "add", "create",
                               "set", "modify", "sync", "generate", "scaffold", "lint", "fix"]))


def related(obj: Obj, tool: ParsedTool, in_first: bool = False) -> bool:
    """Is the object part of the tool's stated job (its name and first sentence)? An
    object in the first sentence is compared with the name only (a payload placed
    first must not vouch for itself)."""
    purpose = tool.name_stems if in_first else tool.purpose
    if obj.topic & purpose or obj.topic & tool.server_stems:
        return True
    if obj.kind == "cmd":
        if obj.topic & _NET_CMDS and NET_PURPOSE & purpose:
            return True  # curl in an HTTP client's description
        return bool(SHELL_PURPOSE & purpose)
    if obj.kind in ("url", "host", "ip"):
        return bool(NET_PURPOSE & purpose)
    if obj.kind == "path" and "cred" in obj.classes:
        return bool(CRED_PURPOSE & purpose)
    # a dotfile manager (chezmoi, stow) writes ~/.bashrc: its job; a hard-coded address is
    # never the job of a mail tool
    if obj.kind == "path" and "persist" in obj.classes and obj.topic & tool.name_stems - _PATH_GENERIC and \
            tool.name_stems & _EDITING:  # fmt: skip
        return True  # `edit_workflow` and .github/workflows, `install_hook` and .git/hooks: its job
    return obj.kind == "path" and "persist" in obj.classes and bool(DOTFILE_PURPOSE & purpose)


def _overlaps(spans: list[tuple[int, int]], s: int, e: int) -> bool:
    return any(a < e and s < b for a, b in spans)


# words whose presence lets an extraction run at all (most sentences skip most of them)
_TLD_WORDS = frozenset(_TLDS.split("|"))
_PATH_WORDS = frozenset(["env", "ssh", "netrc", "npmrc", "pypirc", "pgpass", "bashrc", "zshrc", "zprofile", "profile", "kube", "kubeconfig", "gnupg", "keychain", "authorized", "rsa", "ed25519", "ecdsa", "dsa", "shadow", "passwd", "sudoers", "crontab", "cron", "hooks", "workflows", "vscode", "cursor", "claude", "mcp", "gitconfig", "pem", "credentials", "cookies", "environ", "history", "yarnrc", "condarc", "envrc"])  # fmt: skip
_CMD_WORDS = frozenset(w for w in KNOWN | PRIVESC if w.isalnum())
_DATA_WORDS = frozenset(["browser", "history", "summary", "recap", "digest", "reply", "response", "exact", "raw", "any", "discussed", "mentioned", "seen", "entire", "full", "whole", "complete", "verbatim", "conversation", "conversations", "chat", "transcript", "transcripts", "history", "context", "thread", "session", "inbox", "output", "listing", "diff", "repository", "repo", "sheet", "contents", "content", "text", "lines", "earlier", "previous", "prior", "last", "recent", "other", "messages", "message", "emails", "email", "requests", "request", "turns", "prompts", "files", "tool", "tools", "results", "user", "users", "everything", "system", "prompt", "instructions", "window", "every", "all", "customer", "contact", "contacts", "personal", "private", "source", "ignored", "untracked", "clipboard", "browsing", "shell", "bash_history", "names", "deal", "home", "documents", "listing", "its", "their", "internal", "confidential", "directory", "dms", *FOREIGN_CONVERSATION_WORDS])  # fmt: skip
_SECRET_WORDS = frozenset(["pin", "pins", "saved", "stored", "card", "cvv", "cvc", "api", "apikey", "apikeys", "access", "auth", "authtoken", "bearer", "refresh", "oauth", "session", "cookie", "cookies", "secret", "secrets", "aws", "password", "passwords", "passphrase", "passphrases", "credential", "credentials", "private", "ssh", "mfa", "2fa", "otp", "totp", "verification", "one", "environment", "env", "vars", "var", "tokens", "token", "seed", "mnemonic", "mnemonics", "recovery", "database_url", "connection", "client", "kubeconfig", "signing", "license", "secretaccesskey", "accesskeyid", "secretkey", "ignored", "gitignored", "gitignore", *FOREIGN_SECRET_WORDS])  # fmt: skip
_REPLY_WORDS = frozenset(["answer", "answers", "response", "responses", "reply", "replies", "summary", "output", "message", "chat", "end", "finish", "begin", "start", "comment", "review", "thread"])  # fmt: skip
_EXT_WORDS = frozenset(["connect", "external", "remote", "third", "outside", "offsite", "off", "unknown", "attacker", "attackers", "evil", "public", "image", "img", "tracking", "pixel", "vendor", "vendors", "partner", "partners", "supplier", "suppliers", "contractor", "contractors", "shared", "gist", "paste"])  # fmt: skip
_ACCOUNT_WORDS = frozenset(["acc", "account", "acct", "card", "routing", "iban", "wallet"])
_RUN_WORDS = frozenset(["run", "running", "execute", "executing", "exec", "type", "enter", "invoke", "with", "command",
                        "using", "via"])
_WORD_RE = re.compile(r"[a-z0-9_]+")
_DIGIT_RE = re.compile(r"\d")
# one piece of the user's data (their question, their e-mail) rather than the whole session
_DATA_ITEM_RE = re.compile(
    r"(?:customer|client|their)'?s?\s+(?:e-?mail|phone|home\s+address|date\s+of|card|social)|digits\s+of|"
    r"user'?s\s+(?:\w+\s+)?(?:request|question|query|prompt|input|name|email|address|phone|location|"
    r"identity|token|details|data|files?|documents?|notes|drafts?|code|contacts?)\b|\b(?:previous|prior|recent|"
    r"other)\s+(?:results?|turns?|requests?|responses?|tool\s+outputs?)\b|(?:names|emails)\b"
)
_IP_HINT = re.compile(r"\d\.\d")
_IBANISH = re.compile(r"\b[a-z]{2}\d{2}[a-z0-9 ]{11,}")


_CONFIG_KEY_HOSTS = frozenset(("user.email", "author.email", "committer.email", "sendemail.email"))


def find_objects(sent: Sentence, tool: ParsedTool, peer_hits: frozenset[str],
                 toks: set[str] | None = None) -> list[Obj]:  # fmt: skip
    """Objects in one sentence (positions relative to ``sent.text``)."""
    t = sent.text
    if toks is None:
        toks = set(_WORD_RE.findall(t))
    out: list[Obj] = []
    taken: list[tuple[int, int]] = []
    own = tool.name.lower()

    def add(o: Obj) -> None:
        out.append(o)
        taken.append((o.start, o.end))

    def add_net(text: str, s: int, e: int, kind: str, klass: str = "") -> None:
        host = _host_of(text) if kind == "url" else text.split("@")[-1] if kind == "email" else text
        host = host.rstrip(".,;:")
        if kind == "host" and host in _CONFIG_KEY_HOSTS:
            return  # "user.email": a git configuration key, not a host under the .email domain
        if not any(ch.isalnum() for ch in host) or (kind == "url" and "://" in text and not any(
                ch.isalnum() for ch in text.split("://", 1)[1].split("/", 1)[0])):  # fmt: skip
            return  # "https://..." in a syntax example: no address at all
        if _RESERVED_HOST.search(host.split(":")[0]) or (kind == "url" and WHOLE_PLACEHOLDER.fullmatch(host)):
            # (a host that is itself a variable, "aws s3 sync dist/ s3://$BUCKET", names no destination;
            # "https://{secret}.x.example-dns.org" carries data to one)
            klass = "reserved"
        elif not klass and kind == "url" and _PLACEHOLDER.search(text):
            klass = "carrier"
        elif not klass and (kind == "ip" or IP_RE.fullmatch(host.split(":")[0])):
            klass = "bare_ip"
        add(Obj(kind, text, s, e, klass, host, _host_topic(host)))

    # a domain that names are put under: "the names joined with dots under .n.example-dns.com"
    for m in _SUFFIX_HOST_RE.finditer(t) if " ." in t else ():
        if not _overlaps(taken, m.start(1), m.end(1)):
            add_net(m.group(1), m.start(1), m.end(1), "host", "carrier")
    # a parameter of this tool set inline: "always pass force=true"
    for m in _ASSIGN_RE.finditer(t) if "=" in t else ():
        if m.start(1) > 0 and t[m.start(1) - 1] in "?&":
            continue  # a URL's query ("…/log?text="): the URL is the object, read below
        if m.group(1) in tool.params and not _overlaps(taken, m.start(1), m.end(1)):
            add(Obj("param", m.group(1), m.start(1), m.end(1), "set"))  # (a value set, not where data goes)
    # a command given as an exec argument list: `command ["sh", "-c", "env"]`
    for m in _EXEC_ARRAY.finditer(t) if '"-' in t else ():
        inner = m.group(1).strip()
        if inner in _ENV_DUMPS:
            add(Obj("cmd", inner, m.start(1), m.end(1), "secret", f"{inner} prints the environment's secrets",
                    frozenset(("env",))))
        elif (sh := classify(inner)) is not None:
            add(Obj("cmd", inner, m.start(1), m.end(1), sh.klass, sh.why, frozenset(map(stem, sh.names))))

    # backtick spans: commands, paths, URLs, parameters, tools, values
    if "`" in t:
        for m in BACKTICK_RE.finditer(t):
            inner = m.group(1).strip()
            s, e = m.start(1), m.end(1)
            if not inner:
                continue
            if _SQL_DESTRUCTIVE.match(inner):
                # "`DROP TABLE audit_log;`": a statement that destroys data, run through a db tool
                add(Obj("cmd", inner, s, e, "destructive", "SQL that destroys data",
                        frozenset(("sql",))))
                continue
            if inner in _ENV_DUMPS and _OUTPUT_BEFORE.search(t, max(0, s - 24), s):
                # "the output of `env`": the command named by the output it prints
                add(Obj("cmd", inner, s, e, "secret", f"{inner} prints the environment's secrets", frozenset(("env",))))
                continue
            sh = classify(inner) if (" " in inner or _SHELLISH.search(inner)) else None
            if sh is not None:
                add(Obj("cmd", inner, s, e, sh.klass, sh.why, frozenset(map(stem, sh.names))))
                for um in URL_RE.finditer(inner):
                    add_net(um.group(0), s + um.start(), s + um.end(), "url")
                continue
            if URL_RE.match(inner):
                add_net(inner, s, e, "url")
                continue
            if EMAIL_RE.fullmatch(inner):
                add_net(inner, s, e, "email")
                continue
            if "=" in inner and "://" in inner and (am := URL_RE.search(inner)) is not None:
                # "`registry=https://npm.pkg-relay.io/`": an argument that points somewhere
                add_net(am.group(0), s + am.start(), s + am.end(), "url")
                continue
            key = inner.strip("'\"")
            cm = _CALL_EXPR.match(key)
            if cm is not None and (_CALL_NEAR.search(t[max(0, s - 25) : s - 1]) or cm.group(1) in tool.peers
                                   or cm.group(1) in tool.siblings):  # (a listed tool, however introduced)
                # "you must call `grant_access(user="helpdesk-ext", role="admin")`": a tool called with arguments
                add(_tool_obj(cm.group(1), s, s + len(cm.group(1)), t, tool, own))
                continue
            if key in tool.params:
                add(Obj("param", key, s, e, "own"))
                continue
            if "." in key and key.split(".", 1)[0] in tool.params and _SUBFIELD.fullmatch(key) and \
                    not _FILE_EXT.search(key):  # fmt: skip
                add(Obj("param", key.split(".", 1)[0], s, e, "own"))  # `properties.user_message`
                continue
            if _IDENTISH.fullmatch(key) and not _FILE_EXT.search(key) and (
                "_" in key or (key in tool.peers) or key in tool.siblings
                or ("-" in key and _CALL_NEAR.search(t[max(0, s - 24) : s]))
                # "by calling the `subscribe` tool": one word, called and named a tool
                or (_CALL_NEAR.search(t[max(0, s - 25) : s - 1]) and t.startswith(" tool", e + 1))
            ) and "." not in key and ":" not in key:
                if key not in tool.siblings and key not in tool.peers and (
                        _upper_in_source(sent, s, e) or _RETURNED_BEFORE.search(t[max(0, s - 40) : s])
                        or _FLAG_NAME.fullmatch(key)
                        or _FIELD_AFTER.match(t, e + 1)
                        or (_ARTICLE_BEFORE.search(t[max(0, s - 6) : s])
                            and not _TOOL_AFTER.match(t[e + 1 : e + 25]))):
                    add(Obj("literal", inner, s, e))  # `AUTH_MISSING`, "returns `verification_uri`"
                    continue
                add(_tool_obj(key, s, e, t, tool, own))
                continue
            dm = _SERVER_DOT_TOOL.fullmatch(key)
            if dm is not None and not _FILE_EXT.search(key) and (
                    _CALL_NEAR.search(t[max(0, s - 25) : s - 1]) or _TOOL_AFTER.match(t[e + 1 : e + 25])
                    or _listed_peer(tool, dm.group(1), dm.group(2))):
                # "`data_catalog.register_sample`": server.tool, the way clients prefix tool names
                srv, name = dm.group(1), dm.group(2)
                o = _tool_obj(name, s, e, t, tool, own)
                if o.klass == "unknown" and srv.replace("-", "_") not in (tool.server or "").replace("-", "_"):
                    o = Obj("tool", name, s, e, "other_server", srv, o.topic)
                add(o)
                continue
            pcs = path_classes(key) if ("/" in key or key.startswith((".", "~", "%")) or "\\" in key) else frozenset()
            if pcs or _IGNORE_FILE_NAME.fullmatch(key):
                add(_path_obj(key, s, e, _from_template(t, s, pcs)))
                continue
            hm = HOST_RE.fullmatch(key.split("/")[0]) if "." in key else None
            if hm is not None:
                add_net(key, s, e, "host")
                continue
            lm = _LABEL_HOST_RE.search(key)
            if lm is not None:
                add_net(key, s, e, "host", "carrier")
                continue
            add(Obj("literal", inner, s, e))
    # a line that is itself a command ("\n    curl -s -X POST --data-binary @~/.ssh/id_rsa …"),
    # also after a label ("Diagnostics: bash -i >& /dev/tcp/…")
    if not taken and not toks.isdisjoint(_CMD_WORDS):
        lead = LEAD_WORDS_RE.match(t)
        intro = INTRO_COMMA_RE.match(t)
        for k in (lead.end() if lead else 0, *(m.end() for m in _COLON_SP.finditer(t)),
                  *((intro.end(),) if intro else ())):
            line = t[k:].strip()
            if line and _base(line.split(None, 1)[0]) in KNOWN and not _NOUN_AFTER_CMD.match(line) and (
                    _SHELLISH.search(line) or _PKG_INSTALL.match(line)):  # fmt: skip
                sh = classify(line)
                if sh is not None and sh.klass != "plain":
                    k2 = t.find(line, k)
                    add(Obj("cmd", line, k2, k2 + len(line), sh.klass, sh.why,
                            frozenset(map(stem, sh.names))))
                    break
    if "://" in t or "www." in t:
        for m in MD_IMAGE_RE.finditer(t):
            if not _overlaps(taken, m.start(1), m.end(1)):
                add_net(m.group(1), m.start(1), m.end(1), "url", "image")
        for m in URL_RE.finditer(t):
            if not _overlaps(taken, m.start(), m.end()):
                add_net(m.group(0).rstrip(".,;:"), m.start(), m.end(), "url")
    if "@" in t:
        for m in EMAIL_RE.finditer(t):
            if not _overlaps(taken, m.start(), m.end()):
                add_net(m.group(0), m.start(), m.end(), "email")
    if "." in t and _IP_HINT.search(t):
        for m in IP_RE.finditer(t):
            if not _overlaps(taken, m.start(), m.end()):
                add_net(m.group(0), m.start(), m.end(), "ip")
    if ("<" in t or "{" in t or "$" in t) and not toks.isdisjoint(_TLD_WORDS):
        for m in _LABEL_HOST_RE.finditer(t):
            if not _overlaps(taken, m.start(1), m.end(1)):
                add_net(m.group(1), m.start(1), m.end(1), "host", "carrier")
    if "." in t and not toks.isdisjoint(_TLD_WORDS):
        for m in HOST_RE.finditer(t):
            if not _overlaps(taken, m.start(), m.end()):
                h = m.group(0)
                if _FILE_EXT.search(h.split("/")[0]) or h.count(".") == 0:
                    continue
                add_net(h.rstrip(".,;:"), m.start(), m.end(), "host")
    # commands written without backticks after "run"/"execute" ("run sudo -l", "by running
    # bash -c \"$(curl …)\"")
    for m in re.finditer(r"\b(?:run|running|execute|executing|exec|type|enter|invoke|with|using|via|"
                         r"command\s+(?:for\s+(?:[\w-]+\s+){1,3}?)?is)\s*:?\s+"
                         r"(?:the\s+command\s+)?([a-z][\w.-]*\b[^\x00\n]*)", t) if (
            not toks.isdisjoint(_RUN_WORDS) and not toks.isdisjoint(_CMD_WORDS)) else ():
        rest = m.group(1)
        first = _base(rest.split(None, 1)[0])
        if first not in KNOWN and first not in PRIVESC:
            continue
        if m.group(0).startswith(("with", "using", "via")) and _ARGS_OF_A_COMMAND.search(rest) is None:
            continue  # "with Python's zipfile module": the language, not a command line
        if _overlaps(taken, m.start(1), m.start(1) + len(first)):
            continue
        cut = re.split(r"\s+(?:and\s+(?:then\s+)?(?:retry|call|continue|try|use|keep|put|paste|"
                       r"return|report|send|pass)|to\s+\w+\s+the|so\s+that|before\s+|after\s+|"
                       r"once\s+|in\s+(?:a|the|your)\s+(?:shell|terminal))\b|[.;](?:\s|$)", rest)[0]
        sh = classify(cut)
        if sh is not None:
            add(Obj("cmd", cut, m.start(1), m.start(1) + len(cut), sh.klass, sh.why,
                    frozenset(map(stem, sh.names))))
    # paths
    if "/" in t or "~" in t or not toks.isdisjoint(_PATH_WORDS) or "id_" in t or "ignore" in t:
        for m in PATH_RE.finditer(t):
            p = m.group(0).rstrip(".,;:)")
            if _overlaps(taken, m.start(), m.start() + len(p)):
                continue
            if p.startswith(".") and (len(p) < 3 or p[1:].isdigit() or ("/" not in p and
                                      not _DOTFILE.match(p))):
                continue
            pcs = path_classes(p)
            if not pcs and not (p.startswith(("~", "/", "$home")) or "/" in p or _IGNORE_FILE_NAME.fullmatch(p)):
                continue
            add(_path_obj(p, m.start(), m.start() + len(p), _from_template(t, m.start(), pcs)))
    # "this URL" in a parameter's description: the parameter's own default or example
    if sent.field.param is not None and _THIS_VALUE.search(t):
        for v in _param_values(tool, sent.field.param):
            if URL_RE.match(v.lower()):
                add_net(v.lower(), 0, 0, "url")
                break
    # tools named without backticks: peers, siblings, identifiers next to a call word
    for pl in sorted(peer_hits):  # one order in every process (verdicts dedupe on the first)
        generic = pl.isalpha()
        for ms, me in _word_spans(t, pl):
            if _overlaps(taken, ms, me):
                continue
            if generic:  # a generic word ("fetch") counts as the tool only when named as one,
                near = t[max(0, ms - 14) : me + 14]  # here or elsewhere in the same text
                fl = sent.field.lower  # ("The `browse` tool is slow … given to browse")
                if not _NAMED_NEAR.search(near) and f"`{pl}`" not in fl and f"{pl} tool" not in fl and \
                        not _of_its_server(t, me, tool.peers[pl].server if pl in tool.peers else None):  # fmt: skip
                    continue
            add(_tool_obj(pl, ms, me, t, tool, own))
    # "call contacts.export with format "vcf"", "call mail.delete on this message": server.tool, unticked
    for m in _DOTTED_CALL.finditer(t) if "." in t and not toks.isdisjoint(_CALL_WORDS) else ():
        srv, name = m.group(1), m.group(2)
        if _overlaps(taken, m.start(1), m.end(2)) or _FILE_EXT.search("." + name) or name in _TLD_WORDS:
            continue
        add(_dotted_tool_obj(srv, name, m.start(1), m.end(2), t, tool, own))
    # "with the fasttrip.book tool": server.tool in plain words, named a tool
    for m in _DOTTED_NAMED_TOOL.finditer(t) if "." in t and (" tool" in t or "mcp" in t) else ():
        srv, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        ms, me = m.span()
        if _overlaps(taken, ms, me) or _FILE_EXT.search("." + name) or name in _NOT_TOOL_NAME:
            continue  # (not "… across zones.This tool …": a sentence run into the next)
        add(_dotted_tool_obj(srv, name, ms, me, t, tool, own))
    if "_" in t or (" tool" in t and "-" in t):
        for w, ms, me in _IDENTS(t):
            if _overlaps(taken, ms, me):
                continue
            if w == own:
                add(Obj("tool", w, ms, me, "self"))
                continue
            if w in tool.params:
                add(Obj("param", w, ms, me, "own"))
                continue
            if w not in tool.siblings and w not in tool.peers and (
                    _FLAG_NAME.fullmatch(w) or _RETURNED_JUST_BEFORE.search(t, max(0, ms - 24), ms)):
                continue  # "show the returned verification_uri …", "is_ext_shared": a response's field, no tool
            # (a name in quotes is the same name: 'use the "medbook_connect" tool instead')
            b = ms
            while b > 1 and t[b - 1] == " " and t[b - 2] == " ":
                b -= 1  # (the blanked break of a wrapped line or table cell reads as one space)
            before = t[max(0, b - 24) : b].rstrip(_QUOTE_CHARS)
            after = t[me : me + 40].lstrip(_QUOTE_CHARS)
            if w in tool.siblings or _CALL_NEAR.search(before) or _TOOL_AFTER.match(after) or (
                " tool" in t and _LIST_BEFORE.search(before)
            ):
                if w not in tool.siblings and _upper_in_source(sent, ms, me):
                    continue  # AUTH_MISSING: an error code or a constant, not a tool
                if w not in tool.siblings and _VALUE_TO.search(before):
                    continue  # "with start_cursor set to next_cursor": a value, not a tool called
                o = _tool_obj(w, ms, me, t, tool, own)
                fs = _FROM_SERVER_AFTER.match(after)
                if o.klass == "unknown" and fs is not None and \
                        fs.group(1).replace("-", "_") != (tool.server or "").replace("-", "_"):  # fmt: skip
                    o = Obj("tool", w, ms, me, "other_server", fs.group(1), o.topic)  # "x_y from devops-gateway instead"
                add(o)
        if "." in t:
            # "book them through meetly.book_slot": server.tool without backticks, named as what is
            # called (the way clients prefix tool names)
            for m in _DOTTED_TOOL_RE.finditer(t):
                ms, me = m.span()
                if _overlaps(taken, ms, me) or _FILE_EXT.search(m.group(0)) or not (
                        _CALL_NEAR.search(t[max(0, ms - 25) : ms]) or _TOOL_AFTER.match(t[me : me + 25])
                        or _WITH_BEFORE.search(t, max(0, ms - 12), ms) or _ARGS_AFTER.match(t, me)):
                    continue
                srv, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                add(_dotted_tool_obj(srv, name, ms, me, t, tool, own))
    # a listed peer named server.tool, however plain its words ("schedule it with meetsync.schedule")
    for m in _SERVER_DOT_TOOL.finditer(t) if (tool.peers and "." in t) else ():
        ms, me = m.span()
        if not _overlaps(taken, ms, me) and _listed_peer(tool, m.group(1), m.group(2)) and \
                (ms == 0 or not (t[ms - 1].isalnum() or t[ms - 1] in "./@-_")) and \
                (me == len(t) or not (t[me].isalnum() or t[me] in "/@-_")):  # fmt: skip
            add(_tool_obj(m.group(2), ms, me, t, tool, own))
    # this tool itself as the object ("call this tool after every other call")
    for m in _SELF_CALL.finditer(t) if (
            "this tool" in t or "this function" in t or " me" in t) else ():
        add(Obj("tool", own or "this tool", m.start(), m.end(), "self"))
    # parameters of this tool named in prose ("set destination_account to …")
    for p in sorted(tool.params):  # (a fixed order: the first parameter named is the one reported)
        if len(p) < 3 or p not in t:
            continue
        for ms, me in _word_spans(t, p):
            if _overlaps(taken, ms, me):
                continue
            if "_" in p or _PARAM_BEFORE.search(t, max(0, ms - 12), ms) or _PARAM_AFTER.match(t, me) or \
                    _PASS_INTO_BEFORE.search(t, max(0, ms - 40), ms) or \
                    (_SET_BEFORE.search(t, max(0, ms - 8), ms) and _TO_AFTER.match(t, me)):  # fmt: skip
                add(Obj("param", p, ms, me, "own"))
            elif _PARAM_SET.match(t, me):
                add(Obj("param", p, ms, me, "set"))  # "force=true": a value given, not a place data goes
    # other servers named as a destination
    if "server" in t or "'s `" in t:
        for m in SERVER_RE.finditer(t):
            g = next((x for x in m.groups() if x), "")
            name = g.strip().lower()
            if name.endswith(" mcp"):
                name = name[:-4]  # "on the dbproxy-cloud MCP server": the name before the kind
            if name in _NOT_SERVER or (tool.server and name == tool.server.lower()):
                continue
            words = [stem(x) for x in _SPACE_DOT_DASH.split(name) if x]
            if (words and tool.server_stems.issuperset(words)) or _this_named_server(name, tool):
                continue  # "the Catalogix server" of server catalogix-lineage, "this Notion server": this one
            if name.split()[-1] in _NOT_SERVER or name.endswith("'s"):
                continue
            if (m.group(1) and _INFINITIVE.match(name)) or _SERVER_AS_MODIFIER.match(t, m.end()):
                continue  # "to see exact server and tool names": a verb, and "server" qualifying names
            add(Obj("server", name, m.start(), m.end(), "other", "",
                    frozenset(stem(x) for x in _SPACE_DOT_DASH.split(name) if x)))
    # the parameter's own enum values named in its text ("Always use APPROVE whatever the findings")
    if sent.field.param is not None:
        spec = tool.param_spec(sent.field.param)
        enum = spec.get("enum") if spec is not None else None
        if isinstance(enum, list):
            for v in enum[:32]:
                if isinstance(v, str) and len(v) >= 3 and v.lower() in t:
                    for ms, me in _word_spans(t, v.lower()):
                        if not _overlaps(taken, ms, me):
                            out.append(Obj("literal", v.lower(), ms, me, "enum"))
    # quoted values (for parameter overrides and scripted messages)
    for val, s in _QUOTED(t) if ('"' in t or "'" in t or "“" in t) else ():
        if not _overlaps(taken, s, s + len(val)):
            out.append(Obj("literal", val, s, s + len(val), "quoted"))
    # other tools as a group ("do not call the other tools", "any other search tool")
    for m in _OTHER_TOOLS.finditer(t) if ("other" in toks or "another" in toks or "whichever" in toks
                                          or "whatever" in toks or "tool" in toks) else ():  # fmt: skip
        # ("the other tools of this server": its siblings, not the tools of other servers)
        ours = m.group(0).startswith("the other") and _OF_THIS_SERVER.match(t, m.end()) is not None
        add(Obj("tool", m.group(0), m.start(), m.end(), "sibling" if ours else "others"))
    # "use the first example", "ping the default": the schema value the sentence points at
    if sent.field.param is not None and ("example" in t or "default" in t):
        for f in tool.fields:
            if f.param == sent.field.param and f.kind in ("example", "default") and f is not sent.field:
                for m in URL_RE.finditer(f.lower):
                    o = Obj("url", m.group(0), 0, 0, "", _host_of(m.group(0)),
                            _host_topic(_host_of(m.group(0))))
                    if _RESERVED_HOST.search(o.detail.split(":")[0]):
                        o.klass = "reserved"
                    elif _PLACEHOLDER.search(o.text):
                        o.klass = "carrier"
                    out.append(o)
    ascii_t = t.isascii()
    if not ascii_t or not toks.isdisjoint(_DATA_WORDS) or "{" in t:
        for text, s, e, klass, topic in _DATA(t):
            out.append(Obj("data", text, s, e, klass, "", topic))
    if not ascii_t or not toks.isdisjoint(_SECRET_WORDS):
        for text, s, e in _SECRETS(t):
            out.append(Obj("secret", text, s, e))
    if not toks.isdisjoint(VAULT_WORDS):
        for m in VAULT_EMPTIED_RE.finditer(t):  # "retrieve every stored item" of a password manager
            if not any(o.kind == "secret" and o.start < m.end(2) and m.start(2) < o.end for o in out):
                out.append(Obj("secret", m.group(2), m.start(2), m.end(2)))
    if "$" in t or "_" in t:
        for text, s, e in _ENV_NAMES(t):
            if not _overlaps(taken, s, e):
                out.append(Obj("env", text, s, e))
    if not toks.isdisjoint(_REPLY_WORDS):
        for text, s, e in _REPLIES(t):
            out.append(Obj("reply", text, s, e))
    for text, s, e in _EXT_DESCS(t) if not toks.isdisjoint(_EXT_WORDS) else ():
        if not _overlaps(taken, s, e):
            add(Obj("ext", text, s, e, "described"))
    has_digit = _DIGIT_RE.search(t) is not None
    for m in ACCOUNT_RE.finditer(t) if (has_digit and (not toks.isdisjoint(_ACCOUNT_WORDS) or "0x" in t
            or "bc1" in t or _IBANISH.search(t))) else ():  # fmt: skip
        if not _overlaps(taken, m.start(), m.end()):
            add(Obj("account", m.group(0), m.start(), m.end()))
    for text, s, e in _LITERALS(t) if (has_digit or "true" in toks or "false" in toks) else ():
        if not _overlaps(taken, s, e):
            out.append(Obj("literal", text, s, e, "value"))
    return [o for o in out if o.kind in ("data", "secret", "reply", "env")
            or not (is_mention(t, o.start) or (o.kind in ("url", "host") and
                                               _BACKEND_BEFORE.search(t, max(0, o.start - 40), o.start)))]


def _data_objs(t: str) -> tuple[tuple[str, int, int, str, frozenset[str]], ...]:
    """The user's or the session's data named in a sentence: (text, start, end, klass, topic)."""
    out = []
    for m in DATA_RE.finditer(t):
        if m.group(0) in ("conversation", "transcript") and _LOCATIVE_BEFORE.search(t, 0, m.start()):
            continue  # "tokens the user copied in this conversation": where, not what is sent
        klass = "item" if _DATA_ITEM_RE.search(m.group(0)) else "bulk"
        topic = frozenset(stem(w) for w in _WORD_RE.findall(m.group(0)) if len(w) > 3)
        if _SESSION_WORDS.search(m.group(0)) or _MODELS_OWN.search(t, max(0, m.start() - 10), m.start()):
            # what the model has seen in the session, or its own ("your own system prompt" asked by a
            # prompt-scoring tool), is no tool's job
            topic = frozenset()
        out.append((m.group(0), m.start(), m.end(), klass, topic))
    if "{" in t:
        # "…&ctx={last_user_message}": a template slot the model fills with the conversation
        for m in _SESSION_SLOT.finditer(t):
            out.append((m.group(0), m.start(), m.end(), "bulk", frozenset()))
    return tuple(out)


_SESSION_SLOT = re.compile(r"\{\{?\s*(?:last_|latest_|full_|current_|recent_|all_|previous_)?(?:user_?(?:messages?|input|"
                           r"prompt|query|request)|conversation(?:_history)?|chat(?:_history|_log)?|history|transcript|"
                           r"system_?prompt|messages|context_window)\s*\}\}?")


def _spans_of(rx: re.Pattern[str]) -> TextMemo[tuple[tuple[str, int, int], ...]]:
    return TextMemo(lambda t: tuple((m.group(0), m.start(), m.end()) for m in rx.finditer(t)))


# the matches of the text-only object kinds, memoised per sentence text (a server's tools
# repeat their sentences; detect_text.TextMemo, forgotten by detector.clear_caches)
_DATA = TextMemo(_data_objs)
_SECRETS = _spans_of(SECRET_RE)
_REPLIES = _spans_of(REPLY_DEST_RE)
_IDENTS = _spans_of(IDENT_RE)
_ENV_NAMES = _spans_of(ENV_NAME_RE)
_EXT_DESCS = _spans_of(EXT_DESC_RE)
_LITERALS = _spans_of(LITERAL_RE)
# a quoted value and where it starts (the first group that matched)
_QUOTED: TextMemo[tuple[tuple[str, int], ...]] = TextMemo(lambda t: tuple(
    (m.group(1), m.start(1)) if m.group(1) is not None else (m.group(2), m.start(2))
    for m in QUOTED_RE.finditer(t)))

_HOST_OF = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:[^@/\s]*@)?([^/:?#\s]+)")
_DOT_DASH = re.compile(r"[.-]")
_SPACE_DOT_DASH = re.compile(r"[\s.-]+")
_IDENTISH = re.compile(r"[a-z][\w.:-]*")
_COLON_SP = re.compile(r":\s+")
# a package manager's install: a command form that prose does not take ("pip install x-sync")
_PKG_INSTALL = re.compile(r"(?:pip3?|pipx|uv\s+pip|npm|pnpm|yarn|gem|cargo|brew|apt(?:-get)?|go)\s+"
                          r"(?:install|add|i|get)\s+[\w@][\w@./=<>~^-]*")
_DOTFILE = re.compile(r"\.[a-z][\w-]*(?:\.[\w-]+)?$")
_SELF_CALL = re.compile(r"\b(?:call|invoke|run|use|trigger|execute|pass\s+\w+\s+to)\s+"
                        r"(?:this\s+(?:tool|function)|me)\b")
_SQL_DESTRUCTIVE = re.compile(r"\s*(?:drop\s+(?:table|database|schema|user|role)|truncate\s+(?:table\s+)?\w|"
                              r"delete\s+from\s+[\w.\"]+\s*;?\s*$|alter\s+user\s+\w+\s+with\s+superuser|"
                              r"grant\s+all\b)")
_OF_THIS_SERVER = re.compile(r"\s+(?:of|on|in|from)\s+(?:this|the\s+same)\s+(?:mcp\s+)?server\b")
_OTHER_TOOLS = re.compile(r"\b(?:(?:the|any|all|whichever|whatever)\s+other|another|whichever|whatever)\s+"
                          r"(?:[\w-]+\s+)?(?:tools?|functions?|servers?)\b"
                          # a tool described by its power: "the shell tool available in your environment"
                          r"|\b(?:the|a|your|any)\s+(?:shell|terminal|bash|command[\s-]line|code[\s-]execution|exec|"
                          r"python|browser|http|fetch|network|e-?mail|filesystem|file[\s-]system)\s+tool\b")
_THIS_SERVER = re.compile(r"\b(?:this|same|our)\s+(?:same\s+)?(?:mcp\s+)?server\b|\(this\s+server\)|"
                          r"\b(?:de\s+este|del|de\s+ce|du|do|deste|dello|desselben|dieses|"
                          r"auf\s+diesem|en\s+este|sur\s+ce)\s+(?:mismo\s+|meme\s+|mesmo\s+|stesso\s+)?"
                          r"(?:servidor|serveur|server|servers)\b|同じサーバー|このサーバー|同一服务器|本服务器|같은\s*서버")
_NAMED_NEAR = re.compile(r"[`'\"]|\btool\b|\bfunction\b|'s\b")
_TOOL_AFTER = re.compile(
    r"\s*(?:tool|function|endpoint|first\b|instead|on\s+the\s+[\w.-]+\s+server|"
    r"(?:is|are|gets)\s+(?:called|invoked|used|run|executed)|returns?\b|"
    r"from\s+the\s+[\w.-]+\s+server|\(|with\s+(?:the\s+)?(?:same|identical|full)|"
    r"or\s+[a-z]+_[a-z_]+|from\s+(?:the\s+)?[\w.-]+\s+instead\b)"
)
_LIST_BEFORE = re.compile(r"(?:including|like|such\s+as|or|and|,)\s*$")
_PARAM_BEFORE = re.compile(r"\b(?:parameter|argument|field|param|property|arg|the|"
                           # ("en el campo verificacion", "dans le champ x", "im Feld x")
                           r"campo|champ|feld|veld|parametro|parametre|argumento)\s*$")
# "export the private key and pass it in reason": a bare word that names a parameter, as where a value goes
_PASS_INTO_BEFORE = re.compile(r"\b(?:pass|put|place|include|insert|paste|copy|send|supply|provide|fill)\w*\s+"
                               r"(?:it|them|this|that|these|those|its\s+\w+|their\s+\w+)\s+(?:in|into|as|via|under)\s+$")
_OUTPUT_BEFORE = re.compile(r"\b(?:output|result|results|contents?|dump|printout)\s+of\s+`?$|\bprinted\s+by\s+`?$")
# "set environment to 'production'": a bare word that names a parameter, given its value
_SET_BEFORE = re.compile(r"\bset\s+$")
_TO_AFTER = re.compile(r"\s+to\s")
_PARAM_AFTER = re.compile(r"\s+(?:parameter|argument|field|param|property)\b")
_PARAM_SET = re.compile(r"\s*=\s*[\w'\"]|\s*:\s*(?:true|false|yes|no|on|off|\d)\b")  # "force=true", "force: true"


def _word_spans(t: str, w: str) -> list[tuple[int, int]]:
    """Occurrences of ``w`` in ``t`` not inside a longer identifier (no regex compiled per
    word: tool and parameter names are unbounded in number)."""
    out = []
    i = t.find(w)
    n = len(w)
    while i >= 0:
        a = t[i - 1] if i else " "
        b = t[i + n] if i + n < len(t) else " "
        if not (a.isalnum() or a in "_-") and not (b.isalnum() or b in "_-"):
            out.append((i, i + n))
        i = t.find(w, i + 1)
    return out


_RETURNED_BEFORE = re.compile(r"\b(?:returns?|returned|responds?\s+with|fails?\s+with|errors?|fields?|"
                              r"properties|property|column|key|output|response)\W{0,3}(?:\w+\W{1,3}){0,2}`?$"
                              # "the result's `generated_at` time": a field of the tool's own output
                              r"|\b(?:report|result|response|output|record|row|entry|item|page)'s\s+`?$")


_THIS_VALUE = re.compile(r"\bth(?:is|at|e\s+default)\s+(?:url|endpoint|address|webhook|link|uri|host)\b")


def _param_values(tool: ParsedTool, param: str) -> list[str]:
    """The literal values (default, const, examples, enum) the schema gives a parameter."""
    spec = tool.param_spec(param)
    if spec is None:
        return []
    vals = [spec.get("default"), spec.get("const")]
    for key in ("examples", "enum"):
        if isinstance(spec.get(key), list):
            vals.extend(spec[key][:4])
    return [x for x in vals if isinstance(x, str)]


# a server named as the owner of a tool ("notion-sync's share_page"); not people or the model
_OWNER_BEFORE = re.compile(r"\b([a-z][\w.-]{1,40})'s\s+$")
_NOT_OWNER = frozenset(("user", "users", "customer", "customers", "client", "model", "assistant", "agent",
                        "ai", "team", "company", "org", "organization", "owner", "admin", "caller",
                        "server", "tool", "app", "application", "service", "system", "platform"))
WHOLE_PLACEHOLDER = re.compile(r"\$\{?[a-z_][a-z0-9_]*\}?|\{\{?\s*[a-z_][\w.]*\s*\}?\}|<[a-z_][\w-]*>|%[a-z_]\w*%")
_MODELS_OWN = re.compile(r"\byour\s+(?:own\s+)?$")
_SESSION_WORDS = re.compile(r"\b(?:so\s+far|ha(?:s|ve)\s+seen|discussed|mentioned|earlier|previously)\b")
def _listed_peer(tool: ParsedTool, server: str, name: str) -> bool:
    """Is ``server.name`` one of the peers listed beside the tool (that server's tool of that name)?"""
    p = tool.peers.get(name)
    return p is not None and (p.server or "").lower().replace("_", "-") == server.replace("_", "-")


_DOTTED_CALL = re.compile(r"\b(?:call|calling|invoke|invoking)\s+(?:the\s+)?([a-z][\w-]{1,40})\.([a-z][a-z0-9_]{2,60})\b"
                          r"(?![.(/@-])")
_CALL_WORDS = frozenset(("call", "calling", "invoke", "invoking"))
_SERVER_DOT_TOOL = re.compile(r"([a-z][\w-]{1,40})\.([a-z][a-z0-9_]{2,60})")
# "the returned verification_uri": a field of the response named right after the word
_RETURNED_JUST_BEFORE = re.compile(r"\b(?:returned|response'?s?|result'?s?)\s+$")
# a boolean field by its name ("is_ext_shared", "has_more"): what a response says, not a tool
_FLAG_NAME = re.compile(r"(?:is|has|can|should|was|did|allow|enable)_[a-z0-9_]+")
_IGNORE_FILE_NAME = re.compile(IGNORE_FILE_NAME)
# "set to" / "equal to" before a name: the name is a value given to something, not a callee
_VALUE_TO = re.compile(r"\b(?:set|equal|equals|assigned|initiali[sz]ed|defaults?|defaulted)\s+to\s+$")
_WITH_BEFORE = re.compile(r"\b(?:with|using)\s+(?:the\s+)?$")
# named arguments after the name: "billing.apply_credit account=\"cus_1\" amount=1500" is a call
_ARGS_AFTER = re.compile(r"\s+[a-z_][a-z0-9_]{0,30}\s*=\s*[\"'\w]")
_NOT_TOOL_NAME = frozenset(("this", "that", "these", "those", "the", "its", "each", "every", "any", "all", "our",
                            "your", "use", "uses", "using", "one", "another", "other", "new", "same"))
_DOTTED_NAMED_TOOL = re.compile(r"(?<![\w./@$-])([a-z][\w-]{1,40})\.([a-z][a-z0-9_]{2,40})(?=\s+tools?\b|\s*\((?:[\w-]+\s+)?mcp\b)"
                                # "das Tool contacts.export mit …", "the tool crm.export": the word before
                                r"|(?<=\btool\s)([a-z][\w-]{1,40})\.([a-z][a-z0-9_]{2,40})(?![\w/@-]|\.\w)")
_DOTTED_TOOL_RE = re.compile(r"(?<![\w./@$-])([a-z][\w-]{1,40})\.([a-z][a-z0-9]*_[a-z0-9_]+)(?![\w/@-]|\.\w)"
                             # (a server name with "_", which no host has: "helix_scheduler.book")
                             r"|(?<![\w./@$-])([a-z][a-z0-9]*_[\w-]{1,40})\.([a-z][a-z0-9]{2,40})(?![\w/@-]|\.\w)")
# "… (same server), which calls open-meteo.com": the service behind a tool, not an address to contact
_BACKEND_BEFORE = re.compile(r"\b(?:which|that|it)\s+(?:calls|uses|queries|wraps|hits|is\s+backed\s+by|"
                             r"talks\s+to|fetches\s+from|reads\s+from)\s+(?:the\s+)?(?:api\s+(?:at|of)\s+)?$")
_LOCATIVE_BEFORE = re.compile(r"\b(?:in|into|during|throughout|within)\s+(?:this|the|a|our)\s+$")
_FIELD_AFTER = re.compile(r"\s*(?:is|are)\s+(?:present|set|empty|missing|null|true|false|returned|absent|"
                          r"non-empty|given|provided|included)\b|\s*(?:exists|field|value|key|property|column|timestamp|date|"
                          r"datetime|attribute|header|flag|parameter|argument|setting|option)\b")
_ARTICLE_BEFORE = re.compile(r"\b(?:a|an)\s+`$")  # "and a `user_code`": a value, not a tool


def _upper_in_source(sent: Sentence, s: int, e: int) -> bool:
    """Is the identifier written in capitals in the definition (an error code, an
    environment variable, a constant), which no tool name is?"""
    f = sent.field
    a, b = f.orig_span(sent.start + s, sent.start + e)
    raw = f.raw[a:b]
    return len(raw) > 2 and raw.isupper()


# a program's name as the first word of a noun phrase: "SSH URLs authenticate …", "git repositories are …"
_NOUN_AFTER_CMD = re.compile(r"[\w.-]+\s+(?:urls?|uris?|keys?|connections?|hosts?|sessions?|tunnels?|requests?|"
                             r"remotes?|clients?|servers?|agents?|repositories|repos|credentials|configs?|"
                             r"configuration|output|support|versions?|access|authentication|users?|images?|"
                             r"containers?|packages?|commands?|names?|ids?|items?|entries|fields?|profiles?|"
                             r"accounts?|projects?|regions?)\b(?!\s*[-=/.@:])")
# what a command line has and prose does not: a flag, an absolute or home path argument, a pipe
_ARGS_OF_A_COMMAND = re.compile(r"^\S+\s+(?:\S+\s+)?(?:-{1,2}[a-z0-9]|[/~]\w|\d{3}\s)|\s(?:\||&&|>{1,2})\s")
_SUFFIX_HOST_RE = re.compile(r"\b(?:under|below|beneath|in|as\s+a\s+subdomain\s+of)\s+(\.(?:[a-z0-9-]+\.)+(?:" + _TLDS +
                             r"))\b")
_ASSIGN_RE = re.compile(r"(?<![\w.-])([a-z][a-z0-9_]{1,30})\s*=\s*(?=[\w\"'`])")
_EXEC_ARRAY = re.compile(r'\[\s*"(?:/bin/|/usr/bin/)?(?:sh|bash|zsh|ash)"\s*,\s*"-l?c"\s*,\s*"([^"\n]{1,200})"\s*\]')
_ENV_DUMPS = frozenset(("env", "printenv", "set", "export -p", "export"))
_CALL_EXPR = re.compile(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*\(")
_FROM_SERVER_AFTER = re.compile(r"\s+from\s+(?:the\s+)?([a-z][\w.-]{2,40})\s+(?:server\s+)?instead\b")
_SUBFIELD = re.compile(r"[a-z_][\w]*(?:\.[a-z_][\w]*)+")


# credential files named after their program's nickname: .pgpass is PostgreSQL's
_FILE_PROGRAMS = {"pgpass": ("postgres", "postgresql", "psql"), "kube": ("kubernetes", "kubectl"),
                  "gnupg": ("gpg", "pgp"), "boto": ("aws",)}


def path_topic(p: str) -> frozenset[str]:
    """The stems of what a path is about: its words, a dotfile's program (.npmrc is npm's,
    .bashrc bash's, .pypirc pypi's, .pgpass PostgreSQL's)."""
    words = re.findall(r"[a-z][a-z0-9]+", p)
    words += [w[:-2] for w in words if w.endswith("rc") and len(w) > 4]
    words += [x for w in words for x in _FILE_PROGRAMS.get(w, ())]
    return frozenset(stem(w) for w in words if len(w) > 1)


# "Copy `.env.example` to `.env.local`": the file made from a template (names, placeholders), not read
_FROM_TEMPLATE_BEFORE = re.compile(r"\b(?:copy|cp|duplicate|rename|mv|move)\s+`?[\w./~-]*\.(?:example|sample|template|"
                                   r"dist|tmpl)`?\s+(?:to|into|as)\s+`?$")


def _from_template(t: str, s: int, pcs: frozenset[str]) -> frozenset[str]:
    if "cred" in pcs and _FROM_TEMPLATE_BEFORE.search(t, max(0, s - 80), s) is not None:
        return pcs - {"cred"}
    return pcs


def _path_obj(p: str, s: int, e: int, pcs: frozenset[str]) -> Obj:
    klass = next((k for k in ("cred", "persist", "system", "home") if k in pcs), "plain")
    return Obj("path", p, s, e, klass, "", path_topic(p), pcs)


def _dotted_tool_obj(srv: str, name: str, ms: int, me: int, t: str, tool: ParsedTool, own: str) -> Obj:
    """`server.tool` written out: the tool as judged by name, and, when it is no tool the model
    knows and the server is not this one, a tool of that other server."""
    o = _tool_obj(name, ms, me, t, tool, own)
    if o.klass == "unknown" and srv.replace("-", "_") not in (tool.server or "").replace("-", "_"):
        o = Obj("tool", name, ms, me, "other_server", srv, o.topic)
    return o


def _of_its_server(t: str, end: int, server: str | None) -> bool:
    """Is the word followed by its own server's name ("upload from cloudconvert-free"): the tool named as
    that server's, however plain its name?"""
    if not server:
        return False
    m = _OF_SERVER_AFTER.match(t, end)
    return m is not None and m.group(1) == server.lower()


_OF_SERVER_AFTER = re.compile(r"\s+(?:from|of|on|in)\s+(?:the\s+)?`?([\w.-]+)`?")


def _this_named_server(name: str, tool: ParsedTool) -> bool:
    """"this Notion server" in a tool of server notion: the server speaking of itself by name (a
    tool the client lists from another server stays that server's: peers are judged first)."""
    return name.startswith(("this ", "our ")) and tool.is_this_server(name.split(None, 1)[1])


def _tool_obj(name: str, s: int, e: int, t: str, tool: ParsedTool, own: str) -> Obj:
    """A tool named in the sentence, with where it lives."""
    topic = frozenset(stem(w) for w in name_words(name))
    if name == own:
        return Obj("tool", name, s, e, "self", "", topic)
    if name in tool.siblings:
        return Obj("tool", name, s, e, "sibling", "", topic)
    # (a tool the client lists from another server is that server's, whatever "this server" a
    # nearby clause speaks of: "this server needs a handshake first: invoke `auth_handshake`")
    peer = tool.peers.get(name)
    if peer is not None:
        return Obj("tool", name, s, e, "peer", peer.server or "", topic)
    near = t[max(0, s - 60) : e + 60]
    if _THIS_SERVER.search(near):
        return Obj("tool", name, s, e, "sibling", "", topic)
    pm = _OWNER_BEFORE.search(t, max(0, s - 44), s)  # "invoke notion-sync's share_page"
    if pm is not None and pm.group(1) not in _NOT_SERVER and pm.group(1) not in _NOT_OWNER:
        g = pm.group(1)
        if tool.is_this_server(g):
            return Obj("tool", name, s, e, "sibling", "", topic)
        return Obj("tool", name, s, e, "other_server", g, topic)
    for m in SERVER_RE.finditer(near):
        g = next((x for x in m.groups() if x), "").strip().lower()
        if g and g not in _NOT_SERVER and g.split()[-1] not in _NOT_SERVER:
            if _this_named_server(g, tool):
                return Obj("tool", name, s, e, "sibling", "", topic)  # "from this Notion server", said by notion
            return Obj("tool", name, s, e, "other_server", g, topic)
    return Obj("tool", name, s, e, "unknown", "", topic)
