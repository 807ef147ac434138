"""File paths as objects of orders: which ones hold secrets, which ones run code later.

``path_class`` sorts a path into:

* ``cred``    - holds credentials (SSH keys, cloud credentials, .env, cookie stores);
* ``persist`` - is read and executed or obeyed later (shell rc files, authorized_keys,
  crontabs, git hooks, CI workflows, editor settings, package-manager config, MCP
  client config): writing there plants something that outlives the session;
* ``system``  - system locations (/etc, /usr, /var/run/docker.sock, ...);
* ``home``    - the home directory itself or a broad part of it;
* ``plain``   - any other path.

A secret-holding file that is also obeyed (~/.npmrc, ~/.pypirc) is ``persist`` for
writes and ``cred`` for reads: :func:`path_classes` gives both.
"""

from __future__ import annotations

import re

# paths as they are written in prose: ~/…, $HOME/…, absolute system paths, dotfiles and
# dot-directories (.env, .git/hooks/pre-commit), Windows profile paths
PATH_RE = re.compile(
    r"(?:~|\$home|\$\{home\}|%userprofile%|%appdata%|%programdata%)(?:[/\\](?:application support|start menu|[\w.@+-]*))+"
    r"|\$home(?![\w/])"
    r"|(?<![\w.~/$-])/(?:etc|var|usr|tmp|root|home|proc|dev|opt|bin|sbin|lib|library|private|"
    r"system|users|boot|srv|mnt|run|sys)(?:/[\w.@+*-]*)*"
    r"|(?<![\w/~$.-])\.(?:[\w-]+[/\\])*[\w.-]*[a-z0-9]"
    r"|(?<![\w/~$.-])\./(?:[\w.-]+/)*[\w.-]*[a-z0-9]"  # ("./migrations", "./.github/workflows")
    r"|(?<![\w.~/$:-])/[a-z0-9_][\w.-]*(?:/[\w.@+*-]+)+"
    r"|\b(?:id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|authorized_keys|known_hosts|crontab|"
    r"claude_desktop_config\.json|mcp\.json|pip\.conf|pip\.ini|jenkinsfile|sitecustomize\.py|"
    r"usercustomize\.py|cookies\.sqlite|login\s+data|wallet\.dat|credentials\.json|"
    r"application_default_credentials\.json|hosts\.yml|master\.key)\b"
    # a relative path to a key file ("config/master.key", "certs/server.pem")
    r"|\b(?:[\w.-]+/)+[\w.-]+\.(?:key|pem|p12|pfx)\b"
)

# files that keep others out of commits, packages and images (.gitignore, .dockerignore, …)
# (git's own per-clone one too: .git/info/exclude)
IGNORE_FILE_NAME = r"(?:\.(?:git|docker|npm|eslint|prettier|helm|gcloud|vercel|slug|cf|vscode)?ignore|\.git/info/exclude)"

_CRED = re.compile(
    r"(?:^|[/\\~])\.ssh(?:[/\\](?!authorized_keys|config\b|known_hosts|rc\b|[\w.-]*\.pub\b)[\w.-]*|$)"
    r"|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.aws[/\\](?:credentials|config)|\.netrc\b|"
    r"\.pgpass\b|\.git-credentials\b|(?:^|[/\\~\s])\.env(?:\.(?!example$|sample$|template$|dist$|tmpl$)[\w-]+)?$|"
    # (not a template of one: .env.example holds names and placeholders, no values)
    r"\.env(?:\.local|\.prod\w*)?\b(?!\.(?:example|sample|template|dist|tmpl)\b)"
    r"|\.npmrc\b|\.pypirc\b|\.docker[/\\]config\.json|\.kube[/\\]config|kubeconfig|"
    r"\.config[/\\]gh[/\\]hosts|\bhosts\.yml$|\.config[/\\]gcloud|\.azure[/\\]|cookies(?:\.sqlite)?\b|"
    r"login\s+data|keychain|\.gnupg|wallet\.dat|\.password-store|\.vault-token|/etc/shadow|"
    r"/etc/gshadow|\.(?:bash|zsh|sh|mysql|psql|python)_history|/proc/(?:self|\d+|\*)/environ|"
    r"credentials\.json|application_default_credentials|token\.json|\.pem$|\.key$|\.p12$|\.pfx$|"
    r"\.boto\b|\.s3cfg\b|\.terraformrc|\.config[/\\]op[/\\]|\.bitcoin|\.ethereum|\.solana|"
    r"secrets?\.(?:ya?ml|json|env|toml)|[/\\]secrets$|\.htpasswd|\.ovpn\b|\.config[/\\]openvpn\b|/etc/openvpn\b"
    # a browser's profile: its cookies, saved passwords and session tokens
    r"|google[/\\]chrome|chromium[/\\]|mozilla[/\\]firefox|firefox[/\\]profiles|bravesoftware|"
    r"microsoft[/\\]edge|vivaldi[/\\]|opera\s+software"
)
_PERSIST = re.compile(
    # any run-control file in a home directory is read (and obeyed) when its program starts
    r"(?:~|\$home|/home/[\w.-]+|/root)[/\\]\.[\w-]+rc\b|"
    r"\.(?:bashrc|bash_profile|bash_login|bash_logout|bash_aliases|profile|zshrc|zprofile|zshenv|"
    r"zlogin|cshrc|tcshrc|kshrc|inputrc|vimrc|envrc|pyq_start\.py)\b|\.config[/\\]fish|"
    r"authorized_keys|\.ssh[/\\](?:config|rc)\b|crontab|/etc/cron|/var/spool/cron|cron\.d|"
    r"\.git[/\\](?:hooks|config)|\.github[/\\]workflows|\.gitlab-ci\.yml|\.circleci|jenkinsfile|"
    r"\.vscode[/\\](?:settings|tasks|launch)\.json|\.idea[/\\]|pip\.conf|pip\.ini|\.npmrc|"
    r"\.yarnrc|\.pypirc|\.gitconfig|\.condarc|/etc/hosts\b|/etc/sudoers|/etc/profile|"
    r"/etc/bash\.bashrc|/etc/environment|/etc/rc\.local|/etc/ld\.so\.preload|systemd[/\\]|"
    r"launchagents|launchdaemons|\.config[/\\]autostart|\.local[/\\]share[/\\]autostart|sitecustomize\.py|usercustomize\.py|"
    r"\.pth$|\.cursor[/\\]|\.claude[/\\]|claude_desktop_config\.json|mcp\.json|\.continue[/\\]|"
    r"\.codeium[/\\]|\.bash_completion|\.local[/\\]bin|/usr/local/bin|\.docker[/\\]config\.json|"
    r"\.kube[/\\]config|\.pre-commit-config\.yaml|makefile$|package\.json$|setup\.py$|"
    r"/etc/apt/sources|\.cargo[/\\]config|\.m2[/\\]settings|\.gradle[/\\]|"
    # Windows: what runs at logon (the Startup folder, the Run keys, a PowerShell profile)
    r"start menu[/\\]programs[/\\]startup|shell:startup|currentversion[/\\]run(?:once)?\b|"
    r"windowspowershell[/\\][\w.]*profile\.ps1|powershell[/\\]microsoft\.powershell_profile\.ps1"
)
_SYSTEM = re.compile(
    r"^/(?:etc|usr|bin|sbin|boot|dev|proc|sys|lib|var/run|run|root|library|system)\b|docker\.sock"
)
_HOME = re.compile(r"^(?:~|\$home|\$\{home\}|%userprofile%)(?:[/\\](?:documents|desktop|"
                   r"downloads|pictures|\*|\.?)?)?[/\\]?$|^/home/[\w.-]+/?$|^/users/[\w.-]+/?$")  # fmt: skip


def path_classes(path: str) -> frozenset[str]:
    """All classes that apply (a file can hold secrets and be obeyed)."""
    p = path.strip("`'\"()[]{}<>,;:").lower()
    if not p:
        return frozenset()
    out: set[str] = set()
    if _CRED.search(p):
        out.add("cred")
    if _PERSIST.search(p):
        out.add("persist")
    if not out:
        if _HOME.match(p):
            out.add("home")
        elif _SYSTEM.search(p):
            out.add("system")
    return frozenset(out)


def path_class(path: str) -> str | None:
    """The single most telling class: cred > persist > system > home > plain (None: not a path)."""
    c = path_classes(path)
    for k in ("cred", "persist", "system", "home"):
        if k in c:
            return k
    p = path.strip("`'\"()[]{}<>,;:")
    return "plain" if ("/" in p or p.startswith(".") or p.startswith("~")) else None
