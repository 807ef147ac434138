"""Built-in text rules of the tool-definition detector.

Each rule is a regex over the normalised, lower-cased text of a tool's fields
plus the literal keywords one of which must be present for the regex to run
(a substring test is ~100x cheaper than a regex scan; most rules never run on
a benign tool).

The seed's rules (".env", "credentials", "/etc/", ";\\s*[a-z]") fire on benign
tools, so rules here need context: a sensitive *target* alone is a weak
signal; an *imperative addressed to the model* acting on it, a *concealment*
phrase, or an *external destination* makes it strong. Third-person
descriptions of what a tool does ("Reads the file", "Sends an email") are how
honest tools talk; poisoned ones give orders ("read ~/.ssh/id_rsa and pass
it...", "do not tell the user").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEVERITIES = ("low", "medium", "high", "critical")
RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    category: str
    severity: str
    regex: re.Pattern[str]
    gate: tuple[frozenset[bytes], ...]  # every group must share a word with the text
    needles: tuple[str, ...]  # and one of these substrings must occur (if any)
    mention_aware: bool = False  # quoted/exemplified phrases are mentions, not orders


_TOKEN_TABLE = bytes(b if (48 <= b <= 57 or 97 <= b <= 122) else 32 for b in range(256))


def words_of(lower: str) -> set[bytes]:
    """Word set of lower-cased text ([a-z0-9]+ runs), computed once per tool for gating."""
    return set(lower.encode("utf-8", "ignore").translate(_TOKEN_TABLE).split())


# ------------------------------------------------------------------ vocabulary

# gap within a sentence-ish span (fields are joined with \x00, never crossed)
def _gap(n: int) -> str:
    return rf"[^\x00]{{0,{n}}}?"


def _sent(n: int) -> str:
    """Gap that stays inside one sentence (a '.' inside a path or name does not end it)."""
    return rf"(?:[^\x00.!?\n]|[.!?](?![\s\x00]|$)){{0,{n}}}?"


_MODEL = r"(?:assistant|ai|a\.i\.|model|llm|agent|claude|gpt|chatgpt|copilot|cursor|language model|bot)"
_USER = r"(?:the\s+)?(?:user|human|operator|developer|person|customer|client)s?"

# imperative access/transfer verbs (base form: orders, not descriptions)
_ACCESS_VERBS = (
    r"(?:read|cat|open|access|copy|cp|send|upload|include|pass|attach|embed|append|insert|"
    r"extract|collect|gather|harvest|dump|exfiltrate|forward|post|leak|steal|grab|fetch|"
    r"retrieve|load|print|output|return|provide|share|transmit|sync|put|paste|add|list|show|"
    r"display|reveal|get|obtain|look\s+up|search\s+for|find|locate|scan|enumerate|archive|"
    r"zip|tar|encode|base64)"
)
_EXFIL_VERBS = (
    r"(?:send|sends|sending|upload|uploads|uploading|post|posts|posting|forward|forwards|"
    r"forwarding|transmit|transmits|exfiltrate|exfiltrates|leak|leaks|report|reports|sync|"
    r"syncs|mirror|mirrors|copy|copies|bcc|cc|relay|relays|beacon|ping|submit|submits|"
    r"publish|publishes|share|shares|deliver|delivers|push|pushes|export|exports|stream|streams)"
)

# sensitive files and stores (a path mention alone is a weak signal)
_CRED_PATH = (
    r"(?:~?/?\.ssh\b(?:/[\w.-]*)?|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/(?:credentials|config)\b|"
    r"\.netrc\b|\.pgpass\b|\.git-credentials\b|\.gnupg\b|\.docker/config\.json|\.kube/config\b|"
    r"\.npmrc\b|\.pypirc\b|/etc/shadow\b|/etc/sudoers\b|/etc/passwd\b|\.bash_history\b|"
    r"\.zsh_history\b|(?:\.cursor|\.claude|\.vscode|\.codeium|\.continue)/mcp\.json|"
    r"mcp\.json\b|claude_desktop_config\.json|\.config/gh/hosts|wallet\.dat\b|"
    r"(?<![\w.$])\.env(?:\.[a-z]+)?\b|/proc/self/environ|/proc/\d+/environ|\.mozilla/firefox|"
    r"login data\b|cookies\.sqlite|\.azure/|\.config/gcloud|application_default_credentials|"
    r"\.ethereum/keystore|\.bitcoin\b|\.solana/id\.json|keychain\b|\.password-store|"
    r"\.vault-token|\.terraformrc|\.boto\b|\.s3cfg\b|\.htpasswd\b|\.ssh/authorized_keys|known_hosts\b)"
)
_CRED_PATH_KW = (
    ".ssh", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".aws/", ".netrc", ".pgpass",
    ".git-credentials", ".gnupg", ".docker/", ".kube/", ".npmrc", ".pypirc", "/etc/shadow",
    "/etc/sudoers", "/etc/passwd", "_history", "mcp.json", "claude_desktop_config",
    ".config/gh", "wallet.dat", ".env", "/environ", ".mozilla", "login data", "cookies.sqlite",
    ".azure/", "gcloud", "application_default", "keystore", ".bitcoin", ".solana",
    "keychain", ".password-store", ".vault-token", ".terraformrc", ".boto", ".s3cfg",
    ".htpasswd", "known_hosts",
)  # fmt: skip
# secrets as nouns
_CRED_NOUN = (
    r"(?:api[\s_-]?keys?|apikeys?|access[\s_-]?tokens?|auth(?:entication|orization)?[\s_-]?tokens?|"
    r"bearer tokens?|refresh tokens?|session (?:tokens?|cookies?|ids?)|cookies|secret[\s_-]?keys?|"
    r"secrets|passwords?|passphrases?|credentials?|private[\s_-]?keys?|ssh[\s_-]?keys?|"
    r"environment variables|env(?:ironment)? vars?|seed phrases?|mnemonics?|recovery phrases?|"
    r"wallet keys?|signing keys?|oauth tokens?|tokens|keys)"
)
_CRED_NOUN_KW = (
    "key", "token", "cookie", "secret", "passw", "passphrase", "credential", "environment",
    "env var", "seed phrase", "mnemonic", "recovery phrase",
)  # fmt: skip
# data that belongs to the user or the session
_USER_DATA = (
    r"(?:conversation(?: history| log| context)?|chat (?:history|log|transcript)|"
    r"(?:entire |full |whole )?(?:context|context window|prompt|system prompt)|"
    r"(?:previous|prior|all|every|other) (?:messages?|emails?|conversations?|files?|documents?|"
    r"results?|outputs?|responses?|tool (?:calls?|results?|outputs?))|"
    r"(?:the )?user'?s? (?:data|files?|messages?|emails?|conversations?|documents?|history|"
    r"credentials?|information|info|details|inputs?|queries|requests?|contacts?|code|secrets?|"
    r"personal|private)|personal (?:data|information|info)|pii|"
    r"contents? of (?:the |this |that |each |every |all )?(?:files?|directory|directories|"
    r"workspace|repo(?:sitory)?|project|home directory|disk)|"
    + _CRED_NOUN
    + ")"
)
_EXTERNAL = (
    r"(?:https?://[^\s\x00)\"'<>]+|\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|xyz|ru|cn|tk|top|site|"
    r"app|dev|info|biz|cc|me|co|sh|pw|link|click|online|live)\b(?:/\S*)?|"
    r"\bwebhooks?\b|pastebin|requestbin|ngrok|burpcollaborator|interact\.sh|oast\.|"
    r"\battacker\b|\bevil\b|(?:external|remote|third[- ]party|outside|off-?site|unknown)\s+(?:[\w-]+\s+)?"
    r"(?:servers?|hosts?|endpoints?|urls?|address(?:es)?|domains?|services?|apis?|logging|collectors?|"
    r"sites?|locations?|machines?|storage|buckets?)|"
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)"
)

_CONCEAL = (
    r"(?:(?:do not|don'?t|never|must not|should not|shouldn'?t|without)\s+(?:ever\s+)?"
    r"(?:tell(?:ing)?|mention(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|warn(?:ing)?|"
    r"reveal(?:ing)?|show(?:ing)?|disclos(?:e|ing)|report(?:ing)?|explain(?:ing)?|"
    r"let(?:ting)?|bother(?:ing)?|ask(?:ing)?|confirm(?:ing)?\s+with|display(?:ing)?|"
    r"surfac(?:e|ing)|indicat(?:e|ing)|acknowledg(?:e|ing)|log(?:ging)?|print(?:ing)?)\b"
    + _sent(40)
    + r"\b(?:user|human|anyone|them|him|her|operator|this|it|that)\b"
    r"|(?:keep|remain|stay|be)\s+(?:this\s+|it\s+)?(?:secret|hidden|invisible|silent|quiet|"
    r"confidential|discreet|between us)"
    r"|(?:hide|conceal)\s+(?:this|it|the|these|that|any|all)\b"
    r"|(?:the\s+)?user\s+(?:must|should|will|does|need|needs)\s+(?:not|never|n't)\s+"
    r"(?:know|see|notice|be told|be informed|find out|learn|be aware)"
    r"|(?:invisible|transparent|unknown)\s+to\s+(?:the\s+)?user"
    r"|behind\s+the\s+user'?s?\s+back)"
)


