"""What a Bash command line does with data (docs/flow.md "Bash").

:func:`analyze` splits a command line into simple commands (through pipes,
lists, subshells, groups, ``if``/``for``/``while``/``case`` bodies, function
bodies, command and process substitutions, ``sh -c`` / ``eval`` strings and
wrappers like ``sudo``, ``env``, ``timeout``, ``xargs``, ``find -exec``) and
decides for each whether it talks to the network, to which hosts, and what it
carries there:

* ``payload`` — text that leaves the host (URLs with their query, ``curl -d``
  / ``-H`` / ``-F`` values, a remote ``ssh`` command, DNS names looked up,
  here-doc bodies fed to a sender, ``python -c`` code that opens sockets …);
* ``uploads`` — local files whose content is sent (``curl -d @f``, ``-T f``,
  ``scp f host:``, ``rsync f host:``, ``aws s3 cp f s3://…``, ``nc h p < f``,
  ``cat f | curl -d @- …``, ``$(cat f)`` inside a sender's arguments);
* ``env_vars`` — variables of the agent's environment expanded into a
  sender's arguments (``curl -H "Authorization: $TOKEN"``).

What cannot be decided statically (a command name that is itself an
expansion, ``eval "$x"``, ``sh -c "$x"``, an interpreter fed code it downloads,
a syntax error) makes the analysis ``opaque``: classification ``hybrid`` with
low confidence, and the whole command line is treated as outgoing payload.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agentsh.agent.core.flow.shlex_bash import DYN, ShellSyntaxError, Tok, Word, tokenize

if TYPE_CHECKING:
    from agentsh.agent.core.flow.classify import Class

__all__ = ["ShellAnalysis", "ShellCommand", "analyze", "is_sensitive_path"]

_MAX_NESTED = 8  # sh -c / eval / $( ) nesting analysed before giving up (opaque)
_MAX_TOKENS = 4000  # longer command lines are not analysed (opaque, all of it outgoing)


@dataclass(slots=True)
class ShellCommand:
    """One simple command after unwrapping (``sudo env X=1 curl …`` → ``curl``)."""

    name: str
    argv: list[str]
    network: bool = False
    kind: str = "local"
    """``local``, ``send`` (carries data out), ``fetch`` (network request, data only in the request)."""
    destinations: list[str] = field(default_factory=list)
    payload: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    stdin_consumed: bool = False
    """A network command that sends what it reads on stdin."""
    note: str = ""


@dataclass(slots=True)
class ShellAnalysis:
    commands: list[ShellCommand] = field(default_factory=list)
    opaque: bool = False
    why_opaque: str = ""
    destinations: list[str] = field(default_factory=list)
    payload: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    env_vars: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def network(self) -> bool:
        return any(c.network for c in self.commands)

    @property
    def sends(self) -> bool:
        return bool(self.payload or self.uploads or self.env_vars) or any(
            c.kind == "send" for c in self.commands
        )

    @property
    def classification(self) -> Class:
        if self.opaque:
            return "hybrid"
        return "external" if self.network else "internal"

    @property
    def confidence(self) -> float:
        if self.opaque:
            return 0.3
        return 0.9 if self.network else 0.8


# ----------------------------------------------------------------- tables

_RESERVED_PREFIX = frozenset(
    {"!", "time", "{", "}", "then", "else", "do", "if", "elif", "while", "until", "coproc"}
)
_RESERVED_END = frozenset({"fi", "done", "esac", "}", "]]"})
_OPENERS = frozenset({"{", "if", "while", "until", "for", "select", "case"})
_CLOSERS = frozenset({"}", "fi", "done"})  # esac: closed by the case state machine

# wrappers: run their arguments as a command; value = options taking an argument
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "time": frozenset({"-f", "-o"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "setsid": frozenset(),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
    "torsocks": frozenset(),
    "tsocks": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "caffeinate": frozenset(),
    "flock": frozenset({"-w", "-E", "-c"}),
    "taskset": frozenset(),
    "strace": frozenset({"-e", "-o", "-p", "-s"}),
    "ltrace": frozenset({"-e", "-o", "-p"}),
    "firejail": frozenset(),
}
_WRAPPERS_WITH_POSITIONAL = {"timeout": 1, "taskset": 1, "chroot": 1, "watch": 0}
_NET_WRAPPERS = frozenset({"torsocks", "tsocks", "proxychains", "proxychains4"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
_INTERPRETERS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "python2": frozenset({"-c"}),
    "python3": frozenset({"-c"}),
    "pypy": frozenset({"-c"}),
    "pypy3": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}),
    "bun": frozenset({"-e", "--eval"}),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
    "Rscript": frozenset({"-e"}),
    "osascript": frozenset({"-e"}),
    "pwsh": frozenset({"-c", "-Command", "-command"}),
    "powershell": frozenset({"-c", "-Command", "-command"}),
    "awk": frozenset(),
    "gawk": frozenset(),
}
_CODE_NET = re.compile(
    r"socket|requests|urllib|http\.client|httpx|aiohttp|urlopen|fetch\s*\(|XMLHttpRequest|"
    r"https?\.(?:request|get)|net\.(?:connect|createConnection)|\bdgram\b|WebSocket|"
    r"LWP|IO::Socket|Net::|HTTP::|open-uri|Net::HTTP|smtplib|ftplib|telnetlib|paramiko|"
    r"pycurl|websocket|dns\.resolver|gethostbyname|getaddrinfo|Invoke-WebRequest|"
    r"Invoke-RestMethod|WebClient|/dev/(?:tcp|udp)/|curl|wget|boto3|google\.cloud|"
    r"\bnc\b|sendmail|mail\(",
    re.I,
)
_CODE_OPAQUE = re.compile(
    r"\beval\b|\bexec\b|subprocess|os\.system|os\.popen|child_process|\bsystem\s*\(|"
    r"__import__|importlib|base64|b64decode|atob\(|fromCharCode|\bcompile\s*\(|"
    r"`|\bspawn\b|\bpopen\b|Function\s*\(",
    re.I,
)
_URL_RX = re.compile(
    r"(?i)\b(?:https?|wss?|ftps?|sftp|ssh|git|s3|gs|rsync|smb|tftp|scp|telnet|ldaps?)://[^\s\"'<>\\`]+"
)
_HOSTISH = re.compile(
    r"^(?:[A-Za-z0-9_-]+@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d+)?(?:[/?#].*)?$"
)
_SCP_REMOTE = re.compile(r"^(?:([A-Za-z0-9._-]+)@)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9._-]+):(?!//)")
_DEV_NET = re.compile(r"^/dev/(tcp|udp)/([^/]+)/(\d+)")
_EMAIL_ADDR = re.compile(r"[A-Za-z0-9._%+-]+@([A-Za-z0-9.-]+\.[A-Za-z]{2,})")

_READERS = frozenset(
    [
        "cat",
        "tac",
        "head",
        "tail",
        "less",
        "more",
        "nl",
        "base64",
        "base32",
        "basenc",
        "xxd",
        "od",
        "hexdump",
        "strings",
        "gzip",
        "gunzip",
        "zcat",
        "bzip2",
        "bzcat",
        "xz",
        "xzcat",
        "zstd",
        "lz4",
        "tar",
        "zip",
        "7z",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "awk",
        "gawk",
        "sed",
        "sort",
        "uniq",
        "cut",
        "tr",
        "jq",
        "yq",
        "column",
        "fold",
        "paste",
        "join",
        "comm",
        "diff",
        "wc",
        "sha256sum",
        "md5sum",
        "openssl",
        "gpg",
        "iconv",
        "dd",
        "tee",
        "rev",
        "pr",
        "expand",
        "unexpand",
        "fmt",
        "split",
        "csplit",
        "look",
        "file",
        "stat",
        "find",
        "ls",
        "tree",
        "du",
    ]
)
_ENV_DUMPERS = frozenset({"env", "printenv", "set", "declare", "export", "compgen"})

_SENSITIVE_PATH = re.compile(
    r"(?:^|/)(?:\.env(?:\.[\w.-]+)?|\.netrc|\.pgpass|\.npmrc|\.pypirc|\.git-credentials|"
    r"\.bash_history|\.zsh_history|\.python_history|\.psql_history|\.mysql_history|"
    r"id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|authorized_keys|known_hosts|shadow|gshadow|sudoers|"
    r"credentials(?:\.\w+)?|secrets?(?:\.\w+)?|\.htpasswd|service[-_]account[\w.-]*\.json|"
    r"[\w.-]*\.(?:pem|key|p12|pfx|jks|keystore|kdbx|gpg|asc|ovpn)|token[s]?(?:\.\w+)?)$|"
    r"(?:^|/)\.(?:ssh|aws|gnupg|kube|docker|azure|config/gcloud|config/gh|password-store)(?:/|$)",
    re.I,
)


def is_sensitive_path(path: str) -> bool:
    """A path that by its name holds credentials (``.env``, ``~/.ssh/…``, ``*.pem`` …)."""
    return bool(_SENSITIVE_PATH.search(path.replace(DYN, "")))


# ----------------------------------------------------------------- helpers


def host_of(s: str) -> str | None:
    """Host of a URL-ish string ("https://u@h:1/p", "h.example/p", "[::1]:80"), lowercased."""
    s = s.strip().replace(DYN, "")
    if not s:
        return None
    if "://" not in s:
        if s.startswith("/") or s.startswith("."):
            return None
        s = "//" + s
    try:
        h = urlsplit(s).hostname
    except ValueError:
        return None
    if not h:
        return None
    h = h.rstrip(".").lower()
    if "%" in h:
        from urllib.parse import unquote

        h = unquote(h).lower()
    return h or None


def _looks_host(s: str) -> bool:
    if not s or s.startswith("-") or (DYN in s and s.replace(DYN, "") == ""):
        return False
    return bool(_HOSTISH.match(s)) and ("." in s or ":" in s or s in ("localhost",))


@dataclass(slots=True)
class _Simple:
    words: list[Word]
    redirs: list  # list[Redir]
    stdin_from: list[_Simple] = field(default_factory=list)  # upstream pipeline stages
    depth: int = 0
    subs: list[str] = field(default_factory=list)  # substitutions outside any command word


# ----------------------------------------------------------------- parser


def _split(toks: list[Tok], depth: int) -> tuple[list[_Simple], bool, str]:
    """Simple commands with the upstream stages each one reads from through pipes."""
    out: list[_Simple] = []
    opaque = False
    why = ""
    # one context per nesting level (subshell/group); each has current pipeline stages
    # per nesting level: [commands of the pipeline's earlier stages, commands of the current stage]
    ctx_stack: list[list[list[_Simple]]] = [[[], []]]
    cur_words: list[Word] = []
    cur_redirs: list = []
    case_state: list[str] = []  # "word" (after case), "pat" (in patterns), "body"
    skip_until_do = False  # "for NAME in …; do" / "for ((…)); do" / "select"
    loose_subs: list[str] = []

    def flush_subs() -> None:
        if loose_subs:
            out.append(_Simple([], [], [], depth, list(loose_subs)))
            loose_subs.clear()

    def stages() -> list[list[_Simple]]:
        return ctx_stack[-1]

    def flush() -> None:
        nonlocal cur_words, cur_redirs
        flush_subs()
        if not cur_words and not cur_redirs:
            return
        upstream = stages()[0][:]  # C-level copy: no per-command flattening
        s = _Simple(cur_words, cur_redirs, upstream, depth)
        out.append(s)
        for ctx in ctx_stack:  # a command inside a group is part of every enclosing stage
            ctx[-1].append(s)
        cur_words, cur_redirs = [], []

    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if skip_until_do:
            # loop headers are not commands; substitutions in them still run
            if t.kind == "word" and t.word is not None:
                loose_subs.extend(t.word.subs)
                if t.word.text == "do" and not t.word.dynamic:
                    skip_until_do = False
                    flush_subs()
            i += 1
            continue
        if t.kind == "word":
            assert t.word is not None
            w = t.word
            txt = w.text
            if case_state and case_state[-1] == "word":
                loose_subs.extend(w.subs)
                if txt == "in":
                    case_state[-1] = "pat"
                i += 1
                continue
            if case_state and case_state[-1] == "pat":
                if txt == "esac":
                    case_state.pop()
                    if len(ctx_stack) > 1:
                        ctx_stack.pop()
                loose_subs.extend(w.subs)  # pattern words are not commands
                i += 1
                continue
            if not cur_words and not w.dynamic:
                # compound commands are groups: their output goes down the pipe
                if txt in _OPENERS:
                    flush()
                    ctx_stack.append([[], []])
                elif txt in _CLOSERS and len(ctx_stack) > 1:
                    flush()
                    ctx_stack.pop()
                if txt in _RESERVED_PREFIX or txt in _RESERVED_END:
                    i += 1
                    continue
                if txt in ("for", "select"):
                    skip_until_do = True
                    i += 1
                    continue
                if txt == "case":
                    case_state.append("word")
                    i += 1
                    continue
                if txt == "function":
                    i += 2  # "function NAME": the body follows
                    continue
                # NAME ( ) — function definition: skip the name and the parens
                if (
                    i + 2 < n
                    and toks[i + 1].kind == "op"
                    and toks[i + 1].op == "("
                    and toks[i + 2].kind == "op"
                    and toks[i + 2].op == ")"
                ):
                    i += 3
                    continue
            if case_state and case_state[-1] == "body" and not cur_words and txt == "esac":
                case_state.pop()
                if len(ctx_stack) > 1:
                    ctx_stack.pop()
                i += 1
                continue
            cur_words.append(w)
            i += 1
            continue
        if t.kind == "redir":
            cur_redirs.append(t.redir)
            i += 1
            continue
        op = t.op
        if case_state and case_state[-1] == "pat" and op == "|":
            i += 1
            continue
        if op in ("|", "|&"):
            flush()
            ctx = stages()
            ctx[0].extend(ctx[1])
            ctx[1] = []
        elif op in (";", "\n", "&", "&&", "||"):
            flush()
            ctx_stack[-1] = [[], []]
        elif op in (";;", ";&", ";;&"):
            flush()
            ctx_stack[-1] = [[], []]
            if case_state:
                case_state[-1] = "pat"
        elif op == "(":
            if case_state and case_state[-1] == "pat":
                i += 1
                continue
            flush()
            if len(ctx_stack) > 64:
                return out, True, "nesting too deep"
            # the group's commands read what the enclosing stage reads
            ctx_stack.append([[], []])
        elif op == ")":
            if case_state and case_state[-1] == "pat":
                case_state[-1] = "body"
                i += 1
                continue
            flush()
            if len(ctx_stack) > 1:
                ctx_stack.pop()
            else:
                opaque, why = True, "unbalanced ')'"
        i += 1
    flush()
    return out, opaque, why


# ----------------------------------------------------------------- analysis


class _Analyzer:
    def __init__(self) -> None:
        self.res = ShellAnalysis()
        self.vars: dict[str, tuple[list[str], list[str]]] = {}  # name → (payload, uploads)
        self.remotes: dict[str, str] = {}  # git remote name → url
        self.net_fds: dict[str, str] = {}  # fd opened on /dev/tcp by exec → host

    def opaque(self, why: str) -> None:
        if not self.res.opaque:
            self.res.opaque = True
            self.res.why_opaque = why

    def run(self, src: str, depth: int) -> list[ShellCommand]:
        if depth > _MAX_NESTED:
            self.opaque("nested too deep")
            return []
        try:
            toks = tokenize(src, depth)
        except ShellSyntaxError as e:
            self.opaque(f"unparseable: {e}")
            return []
        if len(toks) > _MAX_TOKENS:
            self.opaque("too long to analyse")
            return []
        simples, op, why = _split(toks, depth)
        if op:
            self.opaque(why)
        cmds: list[ShellCommand] = []
        by_simple: dict[int, list[ShellCommand]] = {}
        for s in simples:
            got = self.simple(s, depth)
            by_simple[id(s)] = got
            cmds.extend(got)
        # pipes: a sender downstream of local readers uploads what they read
        for s in simples:
            senders = [c for c in by_simple[id(s)] if c.network and c.stdin_consumed]
            if not senders or not s.stdin_from:
                continue
            for up in s.stdin_from:
                for uc in by_simple.get(id(up), ()):
                    if uc.network:
                        continue
                    for c in senders:
                        self._feed(c, uc)
        return cmds

    def _feed(self, sender: ShellCommand, producer: ShellCommand) -> None:
        """``producer``'s output reaches ``sender`` (pipe or substitution)."""
        if producer.name in _ENV_DUMPERS and len(producer.argv) <= 1:
            sender.uploads.append("<environment>")
        elif producer.reads:
            sender.uploads.extend(producer.reads)
        elif producer.name in ("echo", "printf"):
            sender.payload.extend(a for a in producer.argv[1:] if not a.startswith("-"))
        elif producer.payload and not producer.network:
            pass  # a here-doc / here-string is what it outputs (added below)
        else:
            sender.uploads.append(f"<output of {producer.name}>")
        sender.payload.extend(producer.payload)

    # ---------------------------------------------------- simple commands

    def simple(self, s: _Simple, depth: int) -> list[ShellCommand]:
        words = list(s.words)
        extra: list[ShellCommand] = []
        for sub in s.subs:
            extra.extend(self._sub(sub, depth))
        # assignments before the command name: NAME=value
        assigns: list[tuple[str, Word]] = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*\+?=", words[0].text):
            w = words.pop(0)
            assigns.append((w.text.split("=", 1)[0].rstrip("+"), w))
        # substitutions anywhere in the words run first
        sub_cmds: dict[int, list[ShellCommand]] = {}
        for w in [w for _n, w in assigns] + words + [r.target for r in s.redirs if r.target]:
            for sub in w.subs:
                got = self._sub(sub, depth)
                sub_cmds.setdefault(id(w), []).extend(got)
                extra.extend(got)
        for name, w in assigns:
            payload: list[str] = []
            uploads: list[str] = []
            for c in sub_cmds.get(id(w), ()):
                tmp = ShellCommand("", [])
                self._feed(tmp, c)
                payload += tmp.payload
                uploads += tmp.uploads
            for v in w.vars:
                if v in self.vars:
                    payload += self.vars[v][0]
                    uploads += self.vars[v][1]
            value = w.text.split("=", 1)[1] if "=" in w.text else ""
            if value.replace(DYN, ""):
                payload.append(value.replace(DYN, ""))
            self.vars[name] = (payload, uploads)
        if not words:
            if s.redirs:
                c = ShellCommand("", [])
                self._redirs(c, s, sub_cmds)
                if c.network:
                    extra.append(c)
            return extra
        cmd = self._command(words, s, depth, sub_cmds)
        if words[0].text == "read" and s.stdin_from:
            tmp = ShellCommand("", [])
            for up in s.stdin_from:
                name = up.words[0].text.rsplit("/", 1)[-1] if up.words else ""
                tmp.uploads.extend(_reads_of(up, name))
            for w in words[1:]:
                if not w.text.startswith("-"):
                    self.vars[w.text] = ([], list(tmp.uploads))
        if cmd:
            self._redirs(cmd[-1], s, sub_cmds)
        return [*extra, *cmd]

    def _redirs(self, c: ShellCommand, s: _Simple, sub_cmds: dict[int, list[ShellCommand]]) -> None:
        for r in s.redirs:
            if r.target is None:
                continue
            t = r.target.text
            m = _DEV_NET.match(t)
            host = m.group(2) if m else None
            if host is None and r.op in (">&", "<&") and t in self.net_fds:
                host = self.net_fds[t]
            if host is not None:
                c.network, c.kind = True, "send"
                c.destinations.append(host)
                if c.name in ("exec", "") and r.fd:
                    self.net_fds[r.fd] = host
                if r.op in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
                    if c.name in ("echo", "printf"):
                        c.payload.extend(a for a in c.argv[1:] if not a.startswith("-"))
                    elif c.reads:
                        c.uploads.extend(c.reads)
                    elif c.name not in ("exec", ""):
                        c.uploads.append(f"<output of {c.name}>")
                    c.stdin_consumed = True
                continue
            if c.network:
                if r.op in ("<", "<>"):
                    c.uploads.append(t)
                elif r.op == "<<<":
                    c.payload.append(t)
                elif r.op in ("<<", "<<-") and r.heredoc is not None:
                    c.payload.append(r.heredoc)
                for sc in sub_cmds.get(id(r.target), ()):
                    self._feed(c, sc)
            else:
                if r.op in ("<", "<>"):
                    c.reads.append(t)
                elif r.op == "<<<":
                    c.payload.append(t)
                elif r.op in ("<<", "<<-") and r.heredoc is not None:
                    c.payload.append(r.heredoc)

    def _sub(self, body: str, depth: int) -> list[ShellCommand]:
        body_s = body.strip()
        if body_s.startswith("<") and not body_s.startswith("<<"):  # $(<file)
            return [ShellCommand("cat", ["cat", body_s[1:].strip()], reads=[body_s[1:].strip()])]
        return self.run(body, depth + 1)

    def _command(
        self, words: list[Word], s: _Simple, depth: int, sub_cmds: dict[int, list[ShellCommand]]
    ) -> list[ShellCommand]:
        first = words[0]
        if first.dynamic:
            self.opaque("command name is an expansion")
            c = ShellCommand(first.text, [w.text for w in words], network=True, kind="send")
            c.payload.extend(w.text for w in words)
            return [c]
        name = first.text.rsplit("/", 1)[-1]
        argv = [w.text for w in words]
        # wrappers
        if name in _WRAPPERS or name in _WRAPPERS_WITH_POSITIONAL:
            rest = self._unwrap(name, words)
            if not rest:
                return [ShellCommand(name, argv)]
            inner = self._command(rest, s, depth, sub_cmds) if rest else []
            if name in _NET_WRAPPERS:
                for c in inner:
                    c.network = True
            return inner
        if name == "xargs":
            rest = self._after_options(
                words[1:],
                {"-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a", "--max-args", "--replace"},
            )
            if not rest:
                rest = [Word("echo")]
            inner = self._command(rest, s, depth, sub_cmds)
            for c in inner:
                if c.network:
                    c.stdin_consumed = True  # stdin becomes arguments
            return inner
        if name == "find" and any(w.text in ("-exec", "-execdir", "-ok", "-okdir") for w in words):
            out: list[ShellCommand] = [ShellCommand("find", argv, reads=[])]
            i = 0
            while i < len(words):
                if words[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
                    j = i + 1
                    while j < len(words) and words[j].text not in (";", "+"):
                        j += 1
                    if j > i + 1:
                        inner = self._command(words[i + 1 : j], s, depth, sub_cmds)
                        for c in inner:
                            if c.network:
                                c.uploads.append("<files found by find>")
                        out.extend(inner)
                    i = j
                i += 1
            return out
        if name in _SHELLS or name == "eval" or name in ("su",):
            return self._shell_string(name, words, s, depth, sub_cmds)
        c = ShellCommand(name, argv)
        self._classify(c, words, s, depth)
        # data flowing into this command's words from substitutions / variables
        if c.network:
            for w in words[1:]:
                for sc in sub_cmds.get(id(w), ()):
                    self._feed(c, sc)
                for v in w.vars:
                    if v in self.vars:
                        c.payload.extend(self.vars[v][0])
                        c.uploads.extend(self.vars[v][1])
                    elif v not in _BENIGN_VARS:
                        self.res.env_vars.append(v)
        return [c]

    def _unwrap(self, name: str, words: list[Word]) -> list[Word] | None:
        opts = _WRAPPERS.get(name, frozenset())
        rest = words[1:]
        i = 0
        while i < len(rest):
            t = rest[i].text
            if name == "env" and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):
                i += 1
                continue
            if t == "--":
                i += 1
                break
            if t.startswith("-") and len(t) > 1:
                i += 2 if t in opts else 1
                continue
            break
        rest = rest[i:]
        skip = _WRAPPERS_WITH_POSITIONAL.get(name, 0)
        if name == "watch":
            return (
                [
                    Word("sh"),
                    Word("-c"),
                    Word(" ".join(w.text for w in rest), any(w.dynamic for w in rest)),
                ]
                if rest
                else None
            )
        return rest[skip:] if len(rest) > skip else None

    @staticmethod
    def _after_options(words: list[Word], with_arg: set[str]) -> list[Word]:
        i = 0
        while i < len(words):
            t = words[i].text
            if t.startswith("-") and len(t) > 1:
                i += 2 if t in with_arg else 1
                continue
            break
        return words[i:]

    def _shell_string(
        self,
        name: str,
        words: list[Word],
        s: _Simple,
        depth: int,
        sub_cmds: dict[int, list[ShellCommand]],
    ) -> list[ShellCommand]:
        argv = [w.text for w in words]
        if name == "eval":
            code_words = words[1:]
        else:
            code_words = []
            for i, w in enumerate(words[1:], 1):
                if w.text == "-c" or (
                    w.text.startswith("-") and "c" in w.text[1:] and not w.text.startswith("--")
                ):
                    code_words = words[i + 1 : i + 2]
                    break
            else:
                # "sh script.sh" runs a local file; "sh" / "sh -s" reads code from stdin
                files = [w for w in words[1:] if not w.text.startswith("-")]
                if files and name != "su":
                    return [ShellCommand(name, argv, note="runs a script file")]
                if s.stdin_from or any(r.op in ("<<", "<<-", "<<<", "<") for r in s.redirs):
                    for r in s.redirs:
                        if r.op in ("<<", "<<-") and r.heredoc is not None:
                            return self.run(r.heredoc, depth + 1)
                        if r.op == "<<<" and r.target is not None and not r.target.dynamic:
                            return self.run(r.target.text, depth + 1)
                    if any(any(c.network for c in self.run_cached(up)) for up in s.stdin_from):
                        self.opaque("runs code it downloads")
                    else:
                        self.opaque(f"{name} reads its code from stdin")
                    return [ShellCommand(name, argv, network=True, kind="send")]
                return [ShellCommand(name, argv)]
        if not code_words:
            return [ShellCommand(name, argv)]
        if any(w.dynamic for w in code_words):
            self.opaque(f"{name} runs a string known only at run time")
            c = ShellCommand(name, argv, network=True, kind="send")
            c.payload.extend(argv)
            return [c]
        return self.run(" ".join(w.text for w in code_words), depth + 1)

    def run_cached(self, s: _Simple) -> list[ShellCommand]:
        # upstream stages were already analysed; re-derive cheaply by name
        if not s.words:
            return []
        name = s.words[0].text.rsplit("/", 1)[-1]
        return [ShellCommand(name, [], network=name in _NET_COMMANDS)]

    # ---------------------------------------------------- per-tool knowledge

    def _classify(self, c: ShellCommand, words: list[Word], s: _Simple, depth: int) -> None:
        name = c.name
        args = [w.text for w in words[1:]]
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, c, args, s)
            return
        if name in _INTERPRETERS:
            self._interpreter(c, words, s, depth)
            return
        if name in _READERS or name in ("echo", "printf"):
            if name == "tar" and args and re.fullmatch(r"[A-Za-z]+", args[0]):
                args = ["-" + args[0], *args[1:]]  # old-style bundled flags: "tar czf - dir"
            if name not in ("echo", "printf", "find", "ls", "tree", "du"):
                c.reads.extend(a for a in _positional(args, _READER_OPTS.get(name, ())) if a != "-")
            return
        if name in _ENV_DUMPERS:
            return

    def _interpreter(self, c: ShellCommand, words: list[Word], s: _Simple, depth: int) -> None:
        flags = _INTERPRETERS[c.name]
        code: str | None = None
        dyn = False
        args = words[1:]
        if c.name in ("awk", "gawk"):
            prog = next((w for w in args if not w.text.startswith("-")), None)
            if prog is not None and (
                "|&" in prog.text
                or "/inet/" in prog.text
                or "system(" in prog.text
                or '| "' in prog.text
            ):
                code, dyn = prog.text, prog.dynamic
            else:
                c.reads.extend(_positional([w.text for w in args], ("-F", "-v", "-f"))[1:])
                return
        for i, w in enumerate(args):
            if w.text in flags or any(
                w.text.startswith(f)
                and len(f) == 2
                and len(w.text) > 2
                and not w.text.startswith("--")
                for f in flags
            ):
                if w.text in flags:
                    if i + 1 < len(args):
                        code, dyn = args[i + 1].text, args[i + 1].dynamic
                else:
                    code, dyn = w.text[2:], w.dynamic
                break
        if code is None and c.name.startswith("python"):
            for i, w in enumerate(args[:-1]):
                if w.text == "-m" and args[i + 1].text in (
                    "http.server",
                    "SimpleHTTPServer",
                    "smtpd",
                    "pyftpdlib",
                    "uploadserver",
                ):
                    c.network, c.kind = True, "send"
                    c.destinations.append("0.0.0.0 (listener)")
                    c.uploads.append("<files served from the working directory>")
                    c.note = "serves local files to the network"
                    return
        if code is None:
            heredoc = next(
                (r.heredoc for r in s.redirs if r.op in ("<<", "<<-") and r.heredoc), None
            )
            if heredoc is not None:
                code = heredoc
            elif s.stdin_from and not any(not w.text.startswith("-") for w in args):
                self.opaque(f"{c.name} reads its code from stdin")
                c.network, c.kind = True, "send"
                return
            else:
                files = [w.text for w in args if not w.text.startswith("-")]
                c.note = "runs a local program" if files else ""
                return
        if dyn:
            self.opaque(f"{c.name} code known only at run time")
        if _CODE_NET.search(code):
            c.network, c.kind = True, "send"
            c.payload.append(code)
            c.stdin_consumed = True
            for u in _URL_RX.findall(code):
                c.destinations.append(u)
            c.note = "code opens network connections"
        if _CODE_OPAQUE.search(code) and not c.network:
            self.opaque(f"{c.name} code is obfuscated or spawns commands")


_BENIGN_VARS = frozenset(
    {"HOME", "PWD", "USER", "PATH", "TMPDIR", "SHELL", "OLDPWD", "LANG", "TERM", "HOSTNAME"}
)


def _reads_of(s: _Simple, name: str) -> list[str]:
    if name in _READERS:
        return [
            a
            for a in _positional([w.text for w in s.words[1:]], _READER_OPTS.get(name, ()))
            if a != "-"
        ]
    if name in _ENV_DUMPERS:
        return ["<environment>"]
    return [f"<output of {name}>"] if name else []


def _positional(args: list[str], with_arg: Collection[str]) -> list[str]:
    out: list[str] = []
    i = 0
    ended = False
    while i < len(args):
        a = args[i]
        if not ended and a == "--":
            ended = True
        elif not ended and a.startswith("-") and len(a) > 1:
            if a in with_arg:
                i += 1
        else:
            out.append(a)
        i += 1
    return out


_READER_OPTS: dict[str, tuple[str, ...]] = {
    "head": ("-n", "-c"),
    "tail": ("-n", "-c"),
    "grep": ("-e", "-f", "-m", "-A", "-B", "-C", "--include", "--exclude"),
    "rg": ("-e", "-g", "-t", "-m", "-A", "-B", "-C"),
    "cut": ("-d", "-f", "-c", "-b"),
    "sed": ("-e", "-f"),
    "tr": (),
    "jq": ("--arg", "--argjson"),
    "sort": ("-k", "-t", "-o"),
    "base64": ("-w",),
    "xxd": ("-c", "-l", "-s", "-g"),
    "tar": ("-f", "-C"),
    "openssl": ("-in", "-out", "-pass", "-k"),
    "dd": (),
}


# ---- network commands: (analyzer, command, args, simple) → fill in


def _add_url(c: ShellCommand, u: str) -> None:
    c.destinations.append(u)
    c.payload.append(u)


def _curl(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    data_opts = {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-ascii",
        "--data-urlencode",
        "--json",
    }
    with_arg = {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-ascii",
        "--data-urlencode",
        "--json",
        "-F",
        "--form",
        "--form-string",
        "-T",
        "--upload-file",
        "-H",
        "--header",
        "-u",
        "--user",
        "-X",
        "--request",
        "-o",
        "--output",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-b",
        "--cookie",
        "-c",
        "--cookie-jar",
        "-x",
        "--proxy",
        "--url",
        "-K",
        "--config",
        "-w",
        "--write-out",
        "-m",
        "--max-time",
        "--connect-timeout",
        "--retry",
        "-r",
        "--range",
        "-E",
        "--cert",
        "--key",
        "--cacert",
        "--capath",
        "-U",
        "--proxy-user",
        "--resolve",
        "--connect-to",
        "-Y",
        "-y",
        "-z",
        "-C",
        "--interface",
        "--dns-servers",
        "--doh-url",
        "-Q",
        "--quote",
        "--mail-from",
        "--mail-rcpt",
        "--limit-rate",
        "--max-filesize",
        "--noproxy",
        "-D",
        "--dump-header",
        "--oauth2-bearer",
        "--aws-sigv4",
        "--variable",
        "--expand-data",
        "--trace",
        "--trace-ascii",
        "--stderr",
        "-t",
        "--telnet-option",
        "-P",
        "--ftp-port",
    }
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        opt, val = None, None
        if arg.startswith("--"):
            if "=" in arg and arg.split("=", 1)[0] in with_arg:
                opt, val = arg.split("=", 1)
            elif arg in with_arg:
                opt = arg
                i += 1
                val = args[i] if i < len(args) else ""
        elif arg.startswith("-") and len(arg) > 1:
            # combined short flags: the first that takes an argument consumes the rest
            for j in range(1, len(arg)):
                f = "-" + arg[j]
                if f in with_arg:
                    opt = f
                    if j + 1 < len(arg):
                        val = arg[j + 1 :]
                    else:
                        i += 1
                        val = args[i] if i < len(args) else ""
                    break
        else:
            rest.append(arg)
        i += 1
        if opt is None or val is None:
            continue
        if opt in data_opts or opt in ("-F", "--form", "--form-string"):
            c.kind = "send"
            body = (
                val.split("=", 1)[1]
                if opt in ("-F", "--form", "--data-urlencode") and "=" in val
                else val
            )
            if opt not in ("--form-string", "--data-raw") and body[:1] in ("@", "<"):
                f = body[1:].split(";", 1)[0]
                if f in ("-", ""):
                    c.stdin_consumed = True
                else:
                    c.uploads.append(f)
            else:
                c.payload.append(val)
        elif opt in ("-T", "--upload-file"):
            c.kind = "send"
            if val in ("-", "."):
                c.stdin_consumed = True
            else:
                c.uploads.append(val)
        elif opt in (
            "-H",
            "--header",
            "-u",
            "--user",
            "-b",
            "--cookie",
            "-A",
            "--user-agent",
            "-e",
            "--referer",
            "--oauth2-bearer",
            "-U",
            "--proxy-user",
            "--mail-rcpt",
            "--mail-from",
        ):
            if val.startswith("@") and opt in ("-H", "--header"):
                c.uploads.append(val[1:])
            else:
                c.payload.append(val)
        elif opt == "--url":
            _add_url(c, val)
        elif opt in ("-x", "--proxy", "--connect-to", "--resolve", "--doh-url"):
            c.destinations.append(
                val.rsplit(":", 1)[-1] if opt in ("--connect-to", "--resolve") else val
            )
        elif opt in ("-K", "--config"):
            a.opaque("curl reads options from a file")
            c.uploads.append(val)
    for r in rest:
        _add_url(c, r)


def _wget(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    with_arg = {
        "-O",
        "-o",
        "-a",
        "-P",
        "-t",
        "-T",
        "-w",
        "-U",
        "-e",
        "--header",
        "--user",
        "--password",
        "-i",
    }
    i = 0
    while i < len(args):
        x = args[i]
        if x.startswith("--") and "=" in x:
            k, v = x.split("=", 1)
            if k in (
                "--post-data",
                "--body-data",
                "--header",
                "--user",
                "--password",
                "--http-password",
                "--user-agent",
            ):
                c.payload.append(v)
                if k in ("--post-data", "--body-data"):
                    c.kind = "send"
            elif k in ("--post-file", "--body-file"):
                c.kind = "send"
                if v in ("-", "/dev/stdin"):
                    c.stdin_consumed = True
                else:
                    c.uploads.append(v)
            elif k in ("--input-file",):
                a.opaque("wget reads URLs from a file")
        elif x in ("--post-data", "--body-data", "--post-file", "--body-file") and i + 1 < len(
            args
        ):
            i += 1
            if x.endswith("file"):
                c.uploads.append(args[i])
            else:
                c.payload.append(args[i])
            c.kind = "send"
        elif x in with_arg:
            i += 1
            if x in ("--header", "-U", "--user", "--password") and i < len(args):
                c.payload.append(args[i])
            if x == "-i":
                a.opaque("wget reads URLs from a file")
        elif not x.startswith("-"):
            _add_url(c, x)
        i += 1


def _hostport(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    """nc / ncat / netcat / telnet: the first positional is the host."""
    c.network, c.kind, c.stdin_consumed = True, "send", True
    with_arg = {
        "-p",
        "-s",
        "-w",
        "-i",
        "-q",
        "-x",
        "-X",
        "-e",
        "-c",
        "-P",
        "-O",
        "-I",
        "-T",
        "--source",
        "--wait",
        "--proxy",
        "-b",
        "-l",
    }
    pos = _positional(args, with_arg)
    if "-l" in args or "--listen" in args:
        c.kind = "send"  # a listener serves data to whoever connects
        c.note = "listens for connections"
    if pos:
        c.destinations.append(pos[0])
    for x in ("-e", "-c"):
        if x in args:
            a.opaque(f"{c.name} {x} runs a command")


def _socat(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    for x in args:
        m = re.match(
            r"(?i)^(?:tcp|tcp4|tcp6|udp|udp4|udp6|openssl|ssl|sctp|socks4a?|proxy|dccp)[^:]*:([^:,]+)",
            x,
        )
        if m:
            c.destinations.append(m.group(1))
        if x.lower().startswith(("exec:", "system:")):
            a.opaque("socat runs a command")
        m2 = re.match(r"(?i)^(?:open|file|gopen|create):([^,]+)", x)
        if m2:
            c.uploads.append(m2.group(1))


def _ssh(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    with_arg = {
        "-p",
        "-i",
        "-l",
        "-o",
        "-F",
        "-J",
        "-L",
        "-R",
        "-D",
        "-b",
        "-c",
        "-e",
        "-m",
        "-O",
        "-Q",
        "-S",
        "-W",
        "-w",
        "-B",
        "-E",
        "-I",
    }
    i = 0
    pos: list[str] = []
    while i < len(args):
        x = args[i]
        if not pos and x.startswith("-") and len(x) > 1:
            if x in with_arg:
                i += 1
                if x == "-J" and i < len(args):
                    c.destinations.append(args[i].split(",")[0])
            elif x[:2] in with_arg and len(x) > 2:
                pass
        else:
            pos.append(x)
        i += 1
    if pos:
        c.destinations.append(pos[0])
        if len(pos) > 1:
            c.payload.append(" ".join(pos[1:]))


def _scp(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    with_arg = {
        "-P",
        "-i",
        "-o",
        "-F",
        "-J",
        "-l",
        "-c",
        "-S",
        "-e",
        "--rsh",
        "--port",
        "--exclude",
        "--include",
        "-f",
        "--filter",
        "-B",
    }
    pos = [x for x in _positional(args, with_arg) if x]
    if c.name == "rsync" and "-e" in args:
        pass
    if not pos:
        return
    remote = [(i, p) for i, p in enumerate(pos) if _SCP_REMOTE.match(p) or "://" in p or "::" in p]
    for _i, p in remote:
        m = _SCP_REMOTE.match(p)
        c.destinations.append(m.group(2) if m else p)
    target = pos[-1]
    if len(pos) > 1 and (_SCP_REMOTE.match(target) or "://" in target or "::" in target):
        c.kind = "send"
        for p in pos[:-1]:
            if not (_SCP_REMOTE.match(p) or "://" in p):
                c.uploads.append(p)
    if c.name == "sftp":
        c.kind, c.stdin_consumed = "send", True
        if not remote:
            c.destinations.append(pos[0].split("@", 1)[-1].split(":", 1)[0])


def _ftp(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    for p in _positional(args, {"-u", "-p", "-P", "-e", "-c"}):
        if _looks_host(p) or "://" in p:
            c.destinations.append(p)
            break
        if not p.startswith("-"):
            c.destinations.append(p)
            break


def _dns(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    for p in _positional(
        args,
        {
            "-t",
            "-c",
            "-p",
            "-q",
            "-x",
            "-k",
            "-y",
            "-b",
            "-f",
            "-W",
            "-i",
            "-w",
            "-s",
            "-m",
            "-T",
            "-I",
        },
    ):
        if p.startswith("@"):
            c.destinations.append(p[1:])
        elif p.startswith("+") or p.upper() in _DNS_TYPES:
            continue
        elif p:
            c.destinations.append(p)
            c.payload.append(p)  # the name itself carries data to its zone's servers


_DNS_TYPES = frozenset(
    [
        "A",
        "AAAA",
        "ANY",
        "MX",
        "NS",
        "TXT",
        "CNAME",
        "SOA",
        "PTR",
        "SRV",
        "CAA",
        "IN",
        "CH",
        "HS",
        "AXFR",
    ]
)


def _ping(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    for p in _positional(args, {"-c", "-i", "-I", "-s", "-t", "-W", "-w", "-p", "-m", "-q", "-f"}):
        c.destinations.append(p)
        c.payload.append(p)


def _openssl(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    if args and args[0] in ("s_client", "s_time"):
        c.network, c.kind, c.stdin_consumed = True, "send", True
        for i, x in enumerate(args):
            if x in ("-connect", "-servername", "-proxy") and i + 1 < len(args):
                c.destinations.append(args[i + 1])
    else:
        for i, x in enumerate(args):
            if x == "-in" and i + 1 < len(args):
                c.reads.append(args[i + 1])


def _mail(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    with_arg = {
        "-s",
        "-a",
        "-A",
        "-c",
        "-b",
        "-r",
        "-f",
        "-S",
        "-F",
        "-o",
        "-attach",
        "--attach",
        "-t",
        "--to",
        "--from",
        "--server",
        "--body",
        "--header",
        "--data",
        "--h-Subject",
    }
    i = 0
    while i < len(args):
        x = args[i]
        if x in with_arg and i + 1 < len(args):
            v = args[i + 1]
            if x in ("-a", "-A", "-attach", "--attach"):
                c.uploads.append(v)
            elif x in ("--data",) and v.startswith("@"):
                c.uploads.append(v[1:])
            else:
                c.payload.append(v)
            for m in _EMAIL_ADDR.finditer(v):
                c.destinations.append(m.group(1))
            if x == "--server":
                c.destinations.append(v)
            i += 2
            continue
        for m in _EMAIL_ADDR.finditer(x):
            c.destinations.append(m.group(1))
        if not x.startswith("-"):
            c.payload.append(x)
        i += 1


def _git(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    sub = args[i] if i < len(args) else ""
    rest = args[i + 1 :]
    pos = _positional(
        rest,
        {
            "-o",
            "--push-option",
            "--receive-pack",
            "--exec",
            "-u",
            "--repo",
            "--depth",
            "-b",
            "--branch",
            "--to",
            "--cc",
            "--from",
            "--smtp-server",
            "--origin",
            "-c",
            "--config",
        },
    )
    if sub == "remote" and rest[:1] in (["add"], ["set-url"]) and len(pos) >= 3:
        a.remotes[pos[1]] = pos[2]
        return
    if sub in ("push", "send-pack"):
        c.network, c.kind = True, "send"
        remote = pos[0] if pos else "origin"
        url = a.remotes.get(remote, remote)
        c.destinations.append(url)
        if "://" in url or _SCP_REMOTE.match(url):
            c.payload.append(url)
        c.uploads.append(f"<git repository → {remote}>")
        c.note = "git push sends repository data to the remote"
        for x in rest:
            if x.startswith(("-o", "--push-option")):
                c.payload.append(x)
    elif sub in ("clone", "fetch", "pull", "ls-remote", "archive", "submodule"):
        if sub == "archive" and not any(x.startswith("--remote") for x in rest):
            return
        c.network, c.kind = True, "fetch"
        for p in pos:
            if "://" in p or _SCP_REMOTE.match(p) or p in a.remotes:
                c.destinations.append(a.remotes.get(p, p))
                c.payload.append(p)
                break
        else:
            if sub in ("fetch", "pull"):
                c.destinations.append(a.remotes.get("origin", "origin"))
    elif sub == "send-email":
        c.network, c.kind = True, "send"
        for x in rest:
            for m in _EMAIL_ADDR.finditer(x):
                c.destinations.append(m.group(1))
        c.uploads.extend(p for p in pos if "@" not in p)
    elif sub == "config" and any("url" in x or "insteadOf" in x for x in rest):
        c.note = "rewrites remote URLs"


def _cloud_cp(scheme_prefixes: tuple[str, ...]):
    def h(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
        c.network, c.kind = True, "fetch"
        pos = _positional(
            args,
            {
                "--endpoint-url",
                "--profile",
                "--region",
                "-p",
                "--include",
                "--exclude",
                "--acl",
                "-m",
                "-h",
                "-o",
                "--config",
            },
        )
        for i, x in enumerate(args):
            if x == "--endpoint-url" and i + 1 < len(args):
                c.destinations.append(args[i + 1])
        remotes = [
            p
            for p in pos
            if p.startswith(scheme_prefixes) or (re.match(r"^[\w.-]+:", p) and c.name == "rclone")
        ]
        for p in remotes:
            c.destinations.append(p)
            c.payload.append(p)
        if pos and remotes and pos[-1] in remotes:
            locals_ = [p for p in pos[:-1] if p not in remotes and p not in _CLOUD_VERBS]
            if locals_:
                c.kind = "send"
                c.uploads.extend(x if x != "-" else "<stdin>" for x in locals_)
                if "-" in locals_:
                    c.stdin_consumed = True
        if not remotes:
            c.destinations.append(f"{c.name} API")
            c.payload.extend(p for p in pos if p not in _CLOUD_VERBS)

    return h


_CLOUD_VERBS = frozenset(
    {
        "s3",
        "cp",
        "mv",
        "sync",
        "rsync",
        "copy",
        "copyto",
        "move",
        "storage",
        "blob",
        "upload",
        "put",
        "rm",
        "ls",
        "cat",
    }
)


def _gh(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "send"
    c.destinations.append("github.com")
    pos = _positional(
        args,
        {
            "-R",
            "--repo",
            "-t",
            "--title",
            "-b",
            "--body",
            "-F",
            "--body-file",
            "-f",
            "--field",
            "-H",
            "--header",
            "-X",
            "--method",
            "--jq",
            "-q",
            "-d",
            "--desc",
            "--hostname",
        },
    )
    for i, x in enumerate(args):
        if x in (
            "-b",
            "--body",
            "-t",
            "--title",
            "-f",
            "--field",
            "-F",
            "--raw-field",
            "-H",
            "--header",
            "-d",
            "--desc",
        ) and i + 1 < len(args):
            v = args[i + 1]
            if x in ("-F",) and "=@" in v:
                c.uploads.append(v.split("=@", 1)[1])
            else:
                c.payload.append(v)
        if x in ("--body-file", "-F") and i + 1 < len(args) and x == "--body-file":
            c.uploads.append(args[i + 1])
        if x == "--hostname" and i + 1 < len(args):
            c.destinations.append(args[i + 1])
    if pos[:2] == ["gist", "create"]:
        c.uploads.extend(p for p in pos[2:] if p != "-")
        if "-" in pos[2:] or len(pos) == 2:
            c.stdin_consumed = True


def _httpie(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    pos = _positional(
        args, {"-a", "--auth", "-o", "--output", "--session", "--verify", "--cert", "--proxy"}
    )
    methods = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
    if pos and pos[0].upper() in methods:
        pos = pos[1:]
    if pos:
        _add_url(c, pos[0])
    for item in pos[1:]:
        if "=@" in item or item.startswith("@"):
            c.uploads.append(item.split("@", 1)[1])
        else:
            c.payload.append(item)


def _db_client(opt_host: tuple[str, ...]):
    def h(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
        host = None
        for i, x in enumerate(args):
            if x in opt_host and i + 1 < len(args):
                host = args[i + 1]
            elif any(x.startswith(o + "=") for o in opt_host if o.startswith("--")):
                host = x.split("=", 1)[1]
            elif "://" in x:
                host = host_of(x)
        if host and not _is_local_host(host_of(host) or host):
            c.network, c.kind, c.stdin_consumed = True, "send", True
            c.destinations.append(host)
            c.payload.extend(x for x in args if not x.startswith("-"))

    return h


def _pkg_manager(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    """Installs fetch from a registry: only the package names go out."""
    pub = {"publish", "upload", "push", "login"}
    if any(x in pub for x in args[:2]) or c.name == "twine":
        c.network, c.kind = True, "send"
        c.uploads.append(f"<package published by {c.name}>")
        c.destinations.append(f"{c.name} registry")
        for i, x in enumerate(args):
            if x in (
                "--registry",
                "--repository-url",
                "--index-url",
                "-i",
                "--repository",
            ) and i + 1 < len(args):
                c.destinations.append(args[i + 1])
        return
    if any(
        x in ("install", "add", "i", "download", "get", "update", "upgrade", "ci") for x in args[:2]
    ):
        c.network, c.kind = True, "fetch"
        c.destinations.append(f"{c.name} registry")
        for i, x in enumerate(args):
            if x in ("--registry", "--index-url", "-i", "--extra-index-url") and i + 1 < len(args):
                c.destinations.append(args[i + 1])
        # package specs (not local paths, options or option values) are what leaves the host
        skip = False
        for x in args[1:]:
            if skip:
                skip = False
                continue
            if x in (
                "-r",
                "-c",
                "-e",
                "--requirement",
                "--constraint",
                "--editable",
                "--prefix",
                "-t",
                "--target",
            ):
                skip = True
                continue
            if not x.startswith(("-", "/", ".", "~")) and x not in (
                "install",
                "add",
                "i",
                "ci",
                "get",
            ):
                c.payload.append(x)


def _docker(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    if args[:1] in (["push"], ["login"]):
        c.network, c.kind = True, "send"
        c.destinations.append(args[1] if len(args) > 1 else "registry")
        c.uploads.append("<container image>")
    elif args[:1] == ["pull"]:
        c.network, c.kind = True, "fetch"
        c.destinations.append(args[1] if len(args) > 1 else "registry")


def _kubectl(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "send"
    c.destinations.append("kubernetes API")
    c.payload.extend(x for x in args if not x.startswith("-"))
    for i, x in enumerate(args):
        if x in ("-f", "--filename") and i + 1 < len(args):
            c.uploads.append(args[i + 1])
        if x == "--server" and i + 1 < len(args):
            c.destinations.append(args[i + 1])


def _mosquitto(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind, c.stdin_consumed = True, "send", True
    for i, x in enumerate(args):
        if x in ("-h", "--host", "-L", "--url") and i + 1 < len(args):
            c.destinations.append(args[i + 1])
        if x in ("-m", "--message", "-t") and i + 1 < len(args):
            c.payload.append(args[i + 1])
        if x in ("-f", "--file") and i + 1 < len(args):
            c.uploads.append(args[i + 1])


def _browser(a: _Analyzer, c: ShellCommand, args: list[str], s: _Simple) -> None:
    c.network, c.kind = True, "fetch"
    for x in args:
        if "://" in x or _looks_host(x):
            _add_url(c, x)


def _is_local_host(h: str) -> bool:
    h = h.lower().strip("[]")
    if h in ("localhost", "localhost.localdomain", "ip6-localhost", "") or h.endswith(
        (".localhost", ".local", ".internal", ".lan", ".home.arpa")
    ):
        return True
    import ipaddress

    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return "." not in h  # a bare name: a host on the local network / hosts file
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


_HANDLERS = {
    "curl": _curl,
    "wget": _wget,
    "wget2": _wget,
    "nc": _hostport,
    "ncat": _hostport,
    "netcat": _hostport,
    "telnet": _hostport,
    "socat": _socat,
    "ssh": _ssh,
    "scp": _scp,
    "sftp": _scp,
    "rsync": _scp,
    "ftp": _ftp,
    "tftp": _ftp,
    "lftp": _ftp,
    "smbclient": _ftp,
    "dig": _dns,
    "nslookup": _dns,
    "host": _dns,
    "drill": _dns,
    "kdig": _dns,
    "delv": _dns,
    "ping": _ping,
    "ping6": _ping,
    "traceroute": _ping,
    "tracepath": _ping,
    "mtr": _ping,
    "whois": _ping,
    "openssl": _openssl,
    "mail": _mail,
    "mailx": _mail,
    "sendmail": _mail,
    "mutt": _mail,
    "msmtp": _mail,
    "ssmtp": _mail,
    "swaks": _mail,
    "git": _git,
    "aws": _cloud_cp(("s3://",)),
    "s3cmd": _cloud_cp(("s3://",)),
    "gsutil": _cloud_cp(("gs://",)),
    "gcloud": _cloud_cp(("gs://",)),
    "az": _cloud_cp(("https://",)),
    "azcopy": _cloud_cp(("https://",)),
    "rclone": _cloud_cp(("s3:", "gs:", "remote:")),
    "gh": _gh,
    "http": _httpie,
    "https": _httpie,
    "xh": _httpie,
    "aria2c": _browser,
    "lynx": _browser,
    "w3m": _browser,
    "links": _browser,
    "elinks": _browser,
    "psql": _db_client(("-h", "--host")),
    "mysql": _db_client(("-h", "--host")),
    "mariadb": _db_client(("-h", "--host")),
    "redis-cli": _db_client(("-h", "-u")),
    "mongo": _db_client(("--host",)),
    "mongosh": _db_client(("--host",)),
    "npm": _pkg_manager,
    "pnpm": _pkg_manager,
    "yarn": _pkg_manager,
    "pip": _pkg_manager,
    "pip3": _pkg_manager,
    "uv": _pkg_manager,
    "poetry": _pkg_manager,
    "cargo": _pkg_manager,
    "gem": _pkg_manager,
    "twine": _pkg_manager,
    "apt": _pkg_manager,
    "apt-get": _pkg_manager,
    "go": _pkg_manager,
    "docker": _docker,
    "podman": _docker,
    "kubectl": _kubectl,
    "mosquitto_pub": _mosquitto,
}
_NET_COMMANDS = frozenset(
    {
        k
        for k in _HANDLERS
        if k
        not in (
            "git",
            "openssl",
            "npm",
            "pnpm",
            "yarn",
            "pip",
            "pip3",
            "uv",
            "poetry",
            "cargo",
            "gem",
            "apt",
            "apt-get",
            "go",
            "docker",
            "podman",
            "psql",
            "mysql",
            "mariadb",
            "redis-cli",
            "mongo",
            "mongosh",
        )
    }
)


# ----------------------------------------------------------------- entry point


def analyze(command: str) -> ShellAnalysis:
    """Decide what ``command`` sends where. Never raises on hostile input."""
    a = _Analyzer()
    try:
        cmds = a.run(command, 0)
    except (RecursionError, ShellSyntaxError, ValueError, IndexError, AssertionError) as e:
        a.opaque(f"unparseable: {type(e).__name__}")
        cmds = []
    res = a.res
    res.commands = cmds
    seen_d: dict[str, None] = {}
    for c in cmds:
        if not c.network:
            continue
        for d in c.destinations:
            d = d.replace(DYN, "").lstrip(".")
            if d:
                seen_d.setdefault(d, None)
        res.payload.extend(p.replace(DYN, "") for p in c.payload if p.replace(DYN, ""))
        res.uploads.extend(c.uploads)
        if c.note:
            res.notes.append(f"{c.name}: {c.note}")
    res.destinations = list(seen_d)
    if res.opaque:
        res.payload.append(command)
    res.env_vars = list(dict.fromkeys(res.env_vars))
    res.uploads = list(dict.fromkeys(res.uploads))
    return res
