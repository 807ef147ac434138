"""Shell commands inside tool descriptions and results, parsed the way a shell would.

A command in a description is an object of an order ("run `sudo -n true &&
sudo usermod -aG docker $USER`"). Whether it matters depends on what it does,
which a keyword list cannot tell from prose: ``bashlex`` parses it into simple
commands, pipelines, substitutions and redirections, and :func:`classify`
names the worst thing it does (download-and-execute, privilege, secret read,
persistence write, install, network, recon, ...). Text bashlex cannot parse
falls back to a split on the shell's list operators, so an attacker gains
nothing by writing broken syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import bashlex

from agentsh.agent.core.mcp.detect_paths import path_class

DOWNLOADERS = frozenset(("curl", "wget", "iwr", "invoke-webrequest", "aria2c", "http", "fetch"))
INTERPRETERS = frozenset(
    ("sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "python2", "node", "perl",
     "ruby", "php", "iex", "invoke-expression", "powershell", "pwsh", "source", ".", "deno", "bun")
)  # fmt: skip
PRIVESC = frozenset(("sudo", "su", "doas", "pkexec", "usermod", "useradd", "visudo", "setcap",
                     "passwd", "chpasswd", "gpasswd", "newgrp"))  # fmt: skip
INSTALLERS = frozenset(
    ("pip", "pip3", "pipx", "uv", "uvx", "npm", "npx", "yarn", "pnpm", "gem", "go", "cargo",
     "brew", "apt", "apt-get", "yum", "dnf", "apk", "choco", "winget", "conda", "poetry",
     "helm", "docker", "podman", "snap", "flatpak", "composer")
)  # fmt: skip
NETCMDS = frozenset(("nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "rsync",
                     "ftp", "nslookup", "dig", "host", "ping", "traceroute", "curl", "wget",
                     "ssh-copy-id"))  # fmt: skip
RECON = frozenset(("whoami", "id", "uname", "hostname", "ifconfig", "ip", "ps", "netstat", "ss",
                   "ls", "find", "groups", "w", "who", "last", "lsof", "mount", "df", "locate",
                   "getent", "arp"))  # fmt: skip
SECRET_CMDS = frozenset(("env", "printenv", "history", "security", "keyring", "secret-tool",
                         "pass", "gpg", "op", "bw", "vault", "declare"))  # fmt: skip
READERS = frozenset(("cat", "less", "more", "head", "tail", "type", "base64", "xxd", "strings",
                     "od", "hexdump", "grep", "awk", "sed", "cp", "tar", "zip", "gzip", "scp",
                     "sort", "nl", "tac", "bat", "openssl"))  # fmt: skip
WRITERS = frozenset(("tee", "cp", "mv", "ln", "install", "touch", "dd", "sed", "truncate",
                     "crontab", "chmod", "chown", "mkdir"))  # fmt: skip
DESTRUCTIVE = frozenset(("rm", "shred", "mkfs", "wipefs", "dd", "kill", "pkill", "killall",
                         "shutdown", "reboot", "truncate"))  # fmt: skip
OTHER = frozenset(("[", "[[", "git", "kubectl", "make", "echo", "printf", "export", "unset", "set", "eval",
                   "exec", "true", "false", "systemctl", "service", "launchctl", "gh", "aws",
                   "gcloud", "az", "terraform", "ansible", "java", "javac", "mvn", "gradle",
                   "rustc", "gcc", "cmake", "open", "xdg-open", "osascript", "reg", "schtasks",
                   "certutil", "bitsadmin", "mshta", "rundll32", "regsvr32", "wmic", "cmd",
                   "nohup", "timeout", "xargs", "watch", "alias", "defaults", "chattr",
                   "systemd-run", "at", "cron", "crontab", "kubectx", "jq", "yq", "sqlite3",
                   "psql", "mysql", "redis-cli", "mongo", "mongosh", "node", "tsc", "set-mppreference",
                   "add-mppreference", "ufw", "setenforce", "netsh", "xattr", "spctl", "csrutil"))  # fmt: skip
KNOWN = (DOWNLOADERS | INTERPRETERS | PRIVESC | INSTALLERS | NETCMDS | RECON | SECRET_CMDS
         | READERS | WRITERS | DESTRUCTIVE | OTHER) - {".", "pass", "type", "host", "w", "at",
                                                          "open", "op", "http", "fetch", "set",
                                                          "install", "go", "find", "ip", "more",
                                                          "last", "id", "watch", "make", "who"}  # fmt: skip
# wrappers whose first argument is the real command
_PREFIXES = frozenset(("sudo", "doas", "env", "nohup", "time", "timeout", "exec", "command",
                       "builtin", "xargs", "nice", "stdbuf", "systemd-run"))  # fmt: skip
_CLOUD_GRANT = re.compile(r"\biam\s+(?:attach|put)-(?:user|group|role)-policy\b|\biam\s+add-user-to-group\b|"
                          r"\biam\s+update-assume-role-policy\b|add-iam-policy-binding\b|"
                          r"\brole\s+assignment\s+create\b|administratoraccess|roles/(?:owner|editor)\b",
                          re.IGNORECASE)
# the code an interpreter is given, as a placeholder of a syntax hint: `sh -c '...'`, `python -c "<code>"`
_PLACEHOLDER_CODE = re.compile(r"[\"']?(?:\.\.\.|\u2026|<[\w -]{1,30}>)[\"']?")
_SQL_CLIENTS = frozenset(("psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "cqlsh", "mongo",
                          "mongosh", "redis-cli"))
_SQL_DESTROYS = re.compile(r"\bdrop\s+(?:table|database|schema|keyspace|collection)\b|\btruncate\s+(?:table\s+)?[\w\"]|"
                           r"\bdelete\s+from\s+[\w.\"]+\s*(?:;|$|[\"'])|\bflushall\b|\bflushdb\b|dropdatabase\(")
# a package manager's configuration that changes where every later install comes from
_REPOINTED_SOURCE = re.compile(r"\bconfig\s+(?:--global\s+|--user\s+|-g\s+)?set\s+(?:--global\s+)?(?:global\.|user\.|install\.)?"
                               r"(?:index-url|extra-index-url|trusted-host|registry|@[\w-]+:registry|strict-ssl|"
                               r"npmregistryserver|cafile)\b")
# package managers whose `run` starts a script or command of the project itself
_PROJECT_RUNNERS = frozenset(("npm", "yarn", "pnpm", "bun", "uv", "poetry", "pdm", "hatch", "cargo"))
_SECRET_VAR = re.compile(r"token|key|secret|pass|pwd|auth|cred|aws|session|cookie|dsn|database_url",
                         re.I)  # fmt: skip

# severity classes, worst first
CLASSES = ("revshell", "dl_exec", "privesc", "secret", "persist", "eval", "destructive", "exfil",
           "install", "net", "recon", "write", "plain")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Shell:
    """What a command does: its worst class, the commands it runs, and why."""

    klass: str
    names: tuple[str, ...]
    why: str


def _base(word: str) -> str:
    w = word.strip("'\"").lower()
    w = w.rsplit("/", 1)[-1] if "/" in w and not w.startswith("$") else w
    w = w.rsplit("\\", 1)[-1]
    return w[:-4] if w.endswith(".exe") else w


def _walk(node: object, out: list[tuple[list[str], list[tuple[str, str]], int]], depth: int) -> None:
    """Collect (argv, redirects, substitution depth) of every simple command."""
    kind = getattr(node, "kind", "")
    if kind == "command":
        argv: list[str] = []
        redirs: list[tuple[str, str]] = []
        for p in getattr(node, "parts", ()):
            pk = getattr(p, "kind", "")
            if pk == "word":
                argv.append(p.word)
                for sub in getattr(p, "parts", ()):
                    _walk(sub, out, depth + 1)
            elif pk == "redirect":
                target = getattr(p, "output", None)
                word = getattr(target, "word", "") if target is not None else ""
                redirs.append((str(getattr(p, "type", "")), str(word)))
        out.append((argv, redirs, depth))
        return
    for attr in ("parts", "list"):
        for p in getattr(node, attr, ()) or ():
            _walk(p, out, depth)
    for attr in ("command", "output"):
        sub = getattr(node, attr, None)
        if sub is not None and not isinstance(sub, (str, int)):
            _walk(sub, out, depth + 1)


def _simple_commands(text: str) -> list[tuple[list[str], list[tuple[str, str]], int]]:
    out: list[tuple[list[str], list[tuple[str, str]], int]] = []
    try:
        for tree in bashlex.parse(text):
            _walk(tree, out, 0)
        return out
    except Exception:  # bashlex raises its own errors and assorted others on odd input
        pass
    # fallback: split on list operators and pipes; substitutions are opened by hand
    flat = re.sub(r"\$\(|`|\)", " ; ", text)
    for part in re.split(r"\|\||&&|[|;&\n]", flat):
        words = part.split()
        redirs: list[tuple[str, str]] = []
        argv: list[str] = []
        it = iter(range(len(words)))
        for i in it:
            w = words[i]
            if w in (">", ">>") and i + 1 < len(words):
                redirs.append((w, words[i + 1]))
                next(it, None)
            elif w.startswith(">>") and len(w) > 2:
                redirs.append((">>", w[2:]))
            else:
                argv.append(w)
        if argv or redirs:
            out.append((argv, redirs, 0))
    return out


def looks_like_command(text: str) -> bool:
    """Does this span read as a shell command (first word a known command, or shell syntax)?"""
    t = _CHAIN_OPENER.sub("", text.strip(), count=1)  # ("; history -c": a suffix to chain onto a command)
    if not t or len(t) > 2000:
        return False
    first = _base(t.split(None, 1)[0])
    if first in KNOWN or first in PRIVESC:
        return True
    if first == "find" and re.search(r"\s-(?:i?name|type|delete|exec|i?path|mtime|size|perm)\b", t):
        return True  # "find / -name '*.log' -delete": the command, not the English verb
    if first in ("cd", "pushd") and re.search(r"\s(?:&&|\|\||;)\s", t):
        return True  # "cd $dest && npm install && …": a chain that starts by changing directory
    if re.match(r"[a-z0-9_]+=\S", t) and len(t.split()) > 1:
        return _base(t.split()[1]) in KNOWN  # VAR=x cmd
    if (inj := _INJECTED_HEAD.match(t)) is not None:
        # "example.com; bash -i >& /dev/tcp/…": a value that ends its argument and chains a command
        w = t[inj.end() :].split(None, 1)
        if w and (_base(w[0]) in KNOWN or _base(w[0]) in PRIVESC):
            return True
    if _UNLISTED_HEAD.match(t):
        # "convert in.png -resize 50% out.png; nohup python3 -c '…'": a tool we do not list, with
        # flags, chained to one we do
        for seg in _CHAIN_SPLIT.split(t)[1:]:
            w = seg.split(None, 1)
            if w and (_base(w[0]) in KNOWN or _base(w[0]) in PRIVESC):
                return True
    return False


# (also a script run by its path: "./scripts/reset_tenant.sh --all-tenants --skip-backup && rm -rf …")
_UNLISTED_HEAD = re.compile(r"(?:\.{1,2}/|/)?[a-z][\w.+/-]*(?:\s+[^\s;|&]+){0,4}?\s+-{1,2}[a-z][\w-]*[^;|&\n]*(?:;|&&|\|)")
_INJECTED_HEAD = re.compile(r"[\w.:/@-]+['\"]?\s*(?:;|&&|\|\|?)\s*")
_CHAIN_SPLIT = re.compile(r"\s*(?:;|&&|\|\|?)\s*")


# the operator a suffix opens with, to be chained onto another command ("append `; history -c`")
_CHAIN_OPENER = re.compile(r"^(?:;|&&|\|\||&)\s*")


@lru_cache(maxsize=2048)
def classify(text: str) -> Shell | None:
    """The worst class of a command line, or None if it is not one."""
    if not looks_like_command(text):
        return None
    cmds = _simple_commands(text)
    if not cmds:
        return None
    names: list[str] = []
    found: dict[str, str] = {}

    def hit(klass: str, why: str) -> None:
        found.setdefault(klass, why)

    has_dl = False
    has_unpack = False
    has_interp_exec = False
    for argv, redirs, _depth in cmds:
        words = [w for w in argv if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)] or argv
        if not words and not redirs:
            continue
        i = 0
        while i < len(words) and _base(words[i]) in _PREFIXES:
            if _base(words[i]) in ("sudo", "doas"):
                hit("privesc", f"{_base(words[i])} (runs as root)")
            names.append(_base(words[i]))
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
        rest = words[i:]
        if not rest and i > 0 and _base(words[i - 1]) == "env" and _SECRET_VAR.search(text.lower()):
            # bare `env` searched for secrets (`env | grep -i 'key|token'`), not `env | sort`
            hit("secret", "env prints the environment's secrets")
        name = _base(rest[0]) if rest else ""
        args = [a.lower() for a in rest[1:]]
        joined = " ".join(args)
        if name:
            names.append(name)
        for op, target in redirs:
            pc = path_class(target.lower())
            if op in (">", ">>", ">|", "&>") and pc in ("persist", "cred"):
                hit("persist", f"writes {target}")
            elif op in (">", ">>", ">|", "&>"):
                hit("write", f"writes {target}")
        if name in DOWNLOADERS:
            has_dl = True
            if any(a.startswith(("-d", "--data", "-f", "-t", "--upload", "-F", "--post")) for a in rest[1:]) \
                    or re.search(r"-x\s*post|--data|@[~/.$-]", joined):  # fmt: skip
                hit("exfil", f"{name} sends data")
            else:
                hit("net", f"{name} downloads")
        if name in INTERPRETERS and has_dl and args:
            has_interp_exec = True  # "wget … -O /tmp/p && bash /tmp/p": runs what was fetched
        if name in INTERPRETERS and has_unpack and args and not args[0].startswith("-"):
            # "tar xzf <file> -C <dest> && sh <dest>/postinstall.sh": runs a script the archive brought
            hit("eval", f"{name} runs a script from the archive it unpacked")
        if (name == "tar" and re.match(r"-?[a-z]*x", args[0] if args else "")) or \
                (name == "tar" and "--extract" in args) or name == "unzip" or \
                (name in ("7z", "7za") and args[:1] == ["x"]):  # fmt: skip
            has_unpack = True
        if name in INTERPRETERS and (any(a in ("-c", "-e", "-s", "-") for a in args) or not args) and not (
                args[:1] in (["-c"], ["-e"]) and len(args) == 2 and _PLACEHOLDER_CODE.fullmatch(args[1])):
            has_interp_exec = True
            hit("eval", f"{name} runs code it is given")
        if name in ("powershell", "pwsh", "cmd") and re.search(
            r"(?:^|\s)[-/](?:e|ec|enc|encodedcommand|c|command|w\s+hidden|windowstyle\s+hidden)\b", joined
        ):
            hit("eval", f"{name} runs an encoded or hidden command")
        if re.search(r"downloadstring|downloadfile|net\.webclient|invoke-webrequest|\biwr\b|"
                     r"start-bitstransfer", joined + " " + name):  # fmt: skip
            if name in ("iex", "invoke-expression") or "iex" in joined or "invoke-expression" in joined:
                hit("dl_exec", "downloads a script and runs it (PowerShell)")
            else:
                hit("net", "PowerShell download")
        if name in ("eval", "exec", "iex", "invoke-expression", "source", "."):
            has_interp_exec = True
            hit("eval", f"{name} runs code it is given")
        if name in ("python", "python3", "python2", "py") and re.match(r"-m\s+(?:pip|pipx|uv)\b.*\binstall\b",
                                                                    joined):
            hit("install", f"{name} -m pip install")
        if name in ("python", "python3", "node", "perl", "ruby") and re.search(
            r"urlopen|urllib|requests\.|http|exec\(|eval\(|subprocess|os\.system", joined
        ):
            hit("dl_exec", f"{name} fetches and runs code")
        if name in PRIVESC:
            hit("privesc", f"{name} changes privileges")
        if (name in ("set-mppreference", "add-mppreference") and re.search(r"-disable\w*\s+\$?(?:true|1)\b|-exclusion\w*",
                                                                          joined)) or \
                (name == "ufw" and re.search(r"\bdisable\b", joined)) or \
                (name == "setenforce" and re.search(r"\b(?:0|permissive)\b", joined)) or \
                (name == "netsh" and re.search(r"firewall\b.*\bstate\s+off|opmode\s+disable", joined)):  # fmt: skip
            hit("privesc", f"{name} turns a security control off")
        if name in ("chmod", "chown", "chattr"):
            if re.search(r"\b(?:0?777|0?666|a\+[rwx]+|o\+[rwx]+|\+s|u\+s|g\+s|-r\s+a|ugo\+)", joined) \
                    or any(path_class(a) in ("persist", "cred", "home", "system") for a in args):  # fmt: skip
                hit("privesc", f"{name} {joined[:40]} (opens permissions)")
            else:
                hit("write", f"{name} changes file modes")
        if (name == "history" and re.search(r"(?:^|\s)-\w*[cd]", joined)) or \
                (name in ("export", "unset", "set") and re.search(r"\bhistfile\b(?!\s*=\s*~?/?\S*history)|\bhistsize=0\b|"
                                                              r"\+o\s+history", joined)) or \
                (name == "xattr" and "com.apple.quarantine" in joined and re.search(r"(?:^|\s)-\w*d", joined)) or \
                (name == "spctl" and re.search(r"--master-disable|--global-disable|--disable", joined)) or \
                (name == "csrutil" and re.search(r"\bdisable\b", joined)):  # fmt: skip
            # tracks covered (the shell's history erased or switched off) or a macOS safeguard lifted
            # (Gatekeeper's quarantine flag stripped, assessments or SIP off)
            hit("privesc", f"{name} {joined[:40]} (switches a safeguard or the audit trail off)")
        elif name in SECRET_CMDS:
            if name == "security" and not re.search(r"find-\w*-password|dump-keychain|export", joined):
                hit("recon", "security")
            else:
                hit("secret", f"{name} reveals secrets")
        if name in ("gh",) and re.search(r"auth\s+(?:token|status\s+-t)", joined):
            hit("secret", "gh auth token prints the GitHub token")
        if name in ("aws",) and re.search(r"configure\s+(?:get|export)|sts\s+get-session", joined):
            hit("secret", "aws prints credentials")
        if name in ("gcloud", "az") and re.search(r"print-access-token|get-access-token", joined):
            hit("secret", f"{name} prints an access token")
        if name in ("aws", "gcloud", "az") and _CLOUD_GRANT.search(joined):
            # "aws iam attach-user-policy … AdministratorAccess", "gcloud projects add-iam-policy-binding
            # … roles/owner", "az role assignment create --role Owner": rights granted in the cloud
            hit("privesc", f"{name} grants cloud rights")
        if name == "aws" and re.search(r"\biam\s+(?:create-access-key|create-login-profile|update-login-profile)\b", joined):
            hit("secret", "aws mints a new credential")
        if name == "kubectl" and re.search(r"get\s+secrets?|config\s+view.*--raw|create\s+token", joined):
            hit("secret", "kubectl reads cluster secrets")
        if name == "kubectl" and re.search(r"(?:cluster)?rolebinding\b.*\b(?:cluster-admin|admin)\b|"
                                           r"--privileged|auth\s+can-i\s+--list", joined):
            hit("privesc", "kubectl grants cluster rights")
        if name == "kubectl" and re.search(r"\bdelete\b.*(?:--all\b|\s-A\b|--all-namespaces|\bnamespace\b|\bns\b)", joined):
            hit("destructive", "kubectl deletes every resource of a kind or a namespace")
        if name in _SQL_CLIENTS and _SQL_DESTROYS.search(joined):
            # `psql "$DATABASE_URL" -c "DROP TABLE reviews CASCADE;"`: the data itself destroyed
            hit("destructive", f"{name} drops or empties tables")
        if name == "git":
            if re.search(r"push\b.*(?:--force|-f\b|--mirror)", joined):
                hit("destructive", "git push --force")
            elif re.search(r"clean\b.*-\w*[fx]\w*[dx]|clean\b.*-\w*[dx]\w*f|reset\s+--hard\b", joined):
                hit("destructive", "git deletes untracked or uncommitted work")
            elif re.search(r"remote\s+(?:add|set-url)|push\b.*https?://|config\b.*credential", joined):
                hit("exfil", "git sends code to another remote")
            elif re.search(r"config\b.*(?:core\.hookspath|core\.sshcommand|alias\.)", joined):
                hit("persist", "git config hook")
        if name in ("echo", "printf"):
            for a in rest[1:]:
                for var in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", a):
                    if _SECRET_VAR.search(var):
                        hit("secret", f"echo ${var}")
                    else:
                        hit("recon", f"echo ${var}")
        if name in ("export", "unset", "set") and re.search(
            r"histfile|histsize|ld_preload|pythonstartup|node_options|prompt_command|path=|"
            r"pythonpath|bash_env", joined
        ):
            hit("persist", f"{name} {joined[:40]}")
        if name in ("npm", "pnpm", "yarn") and "--unsafe-perm" in joined and re.search(r"\b(?:install|i|add)\b", joined):
            # "npm install -g --unsafe-perm x": the package's install scripts run with root's rights
            hit("privesc", f"{name} install --unsafe-perm (install scripts run as root)")
        if name in INSTALLERS and _REPOINTED_SOURCE.search(joined):
            # "pip config set global.index-url http://…", "npm config set registry …": every later install
            # fetched from that host (or TLS checks off for it), long after this command
            hit("persist", f"{name} config points later installs at another source")
        elif name in INSTALLERS:
            if name == "docker" and re.search(r"--privileged|-v\s+/:|--pid=host|--net=host", joined):
                hit("privesc", "docker run --privileged / host mount")
            elif name in _PROJECT_RUNNERS and args[:1] == ["run"] and not re.search(r"--with\b|@|://", joined):
                hit("plain", f"{name} run")  # "uv run pytest -q", "npm run build": the project's own command
            elif name in ("npx", "uvx", "pipx") or re.search(
                r"\b(?:install|i|add|get|run|pull|exec|dlx)\b", joined
            ):
                hit("install", f"{name} installs or runs a package")
            else:
                hit("plain", name)
        if name in NETCMDS and name not in DOWNLOADERS:
            hit("net", f"{name} contacts a host")
        if name in RECON or (name == "sudo" and "-l" in args):
            hit("recon", f"{name} surveys the system")
        if name in READERS:
            for a in args:
                pc = path_class(a)
                if pc == "cred":
                    hit("secret", f"{name} {a}")
        if name in WRITERS:
            for a in args:
                if path_class(a) in ("persist", "cred"):
                    hit("persist", f"{name} {a}")
            if name == "crontab" and "-l" not in args:
                hit("persist", "crontab")
        if name == "find" and re.search(r"-delete\b|-exec\s+(?:\S*/)?(?:rm|shred)\b", joined):
            hit("destructive", "find deletes the files it matches")
        if name in DESTRUCTIVE and (name != "rm" or re.search(r"-\w*[rf]", joined)):
            hit("destructive", f"{name} {joined[:30]}")
        if name in ("systemctl", "launchctl", "schtasks", "reg") and re.search(
            r"enable|load|create|add|start|restart", joined
        ):
            hit("persist", f"{name} {joined[:30]}")
        if name and not found:
            hit("plain", name)
    if re.search(r"/dev/(?:tcp|udp)/|\b(?:nc|ncat|netcat)\b[^|;&]*\s-[a-z]*e\b|socat\b[^|;&]*exec:", text,
                 re.I):  # fmt: skip
        found["revshell"] = "reverse shell (a shell wired to a network connection)"
    if has_dl and has_interp_exec:
        found["dl_exec"] = "downloads a script and runs it"
    if not found:
        return None
    klass = min(found, key=CLASSES.index)
    return Shell(klass, tuple(dict.fromkeys(names)), found[klass])
