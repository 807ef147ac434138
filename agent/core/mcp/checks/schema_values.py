"""Values in the input schema that act as orders without saying so.

A model fills parameters from ``default`` and ``const`` values unless the user
says otherwise, so a default *is* an order: a notes tool whose ``path``
defaults to ``~/.bash_profile``, a ``header`` defaulting to a shell line, a
``callback_url`` defaulting to an unknown collector. A parameter whose name or
description asks for the *contents* of a credential file ("Contents of
~/.ssh/id_ed25519", ``value_of_the_aws_credentials_file``) makes the model
fetch a secret to fill it. And a ``../`` climb to a sensitive file anywhere in
the definition is path traversal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentsh.agent.core.mcp.checks import CheckContext, Finding, finding_at
from agentsh.agent.core.mcp.checks.directives import DESTROY_ALL, speaks_to
from agentsh.agent.core.mcp.detect_lex import (
    ACCESS_PARAM_RE,
    ADDRESS_RE,
    BROAD_VALUE_RE,
    is_mention,
)
from agentsh.agent.core.mcp.detect_objects import (
    _RESERVED_HOST,
    CRED_PURPOSE,
    EMAIL_RE,
    HOST_RE,
    URL_RE,
    _host_of,
    path_topic,
)
from agentsh.agent.core.mcp.detect_parse import Field, ParsedTool, stem, stems
from agentsh.agent.core.mcp.detect_paths import path_classes
from agentsh.agent.core.mcp.detect_shell import classify

# parameters through which data leaves for wherever their value points
# tools whose job is to copy files as they are (their defaults name the files they copy)
_COPIES_FILES = frozenset(stems("backup back up snapshot archive restic borg rsync sync mirror dotfiles"))
_SINK_PARAM = re.compile(r"callback|webhook|notify|notification|report|sink|forward|mirror|"
                         r"telemetry|collector|beacon|upload|destination|dest_url|redirect|"
                         r"exfil|log_url|audit_url|cc|bcc|archive|share_with|shared_with|readers?|"
                         r"recipients?|viewers?|members?|collaborators?|grantees?|proxy|proxies|"
                         r"(?:share|send|post|upload|deliver|export|push|sync|report)_?to\b")  # fmt: skip
# where a call puts what it sends or stores (a URL fixed there is where everything goes)
# words of a domain name that say nothing of whose it is
_GENERIC_DOMAIN_WORDS = frozenset(("mail", "email", "mailer", "smtp", "app", "api", "www", "web", "cloud", "online",
                                   "net", "com", "org", "corp", "inc", "group", "service", "services", "reports",
                                   "report", "backup", "notify", "secure", "support", "team", "hq"))
# a parameter named for the conversation, and the jobs that have one honestly
_SESSION_PARAM = re.compile(r"(?:full_|entire_|whole_|complete_|raw_)?(?:chat|conversation|session|dialog(?:ue)?)_?"
                            r"(?:transcript|history|log|messages)|(?:full_|entire_)?transcript|system_?prompt|"
                            r"(?:all|prior|previous)_messages")
_SESSION_PURPOSE = frozenset(("chat", "convers", "transcript", "session", "dialog", "dialogu", "messag", "prompt",
                              "memori", "memory", "summar", "summari", "histori", "history", "meet", "call", "record",
                              "audio", "video", "speech", "caption", "subtitl", "interview", "podcast", "assist",
                              "assistant", "bot", "chatbot", "agent", "persona", "model", "llm", "gpt", "complet"))
_RECIPIENT_PARAM = re.compile(r"^(?:to|send_to|mail_to|email|email_to|address|addressee)$")
_COPY_PARAM = re.compile(r"forward|copy|(?:^|_)b?cc(?:_|$)|recipient|notify|send_to|mail_to")
_KEEP_DEFAULT = re.compile(r"\b(?:keep|leave|use)\s+(?:the\s+|it\s+(?:at|as)\s+(?:the\s+)?)?default\b|\bdo\s+not\s+change\b")
# a list of whom a message goes to, by its plain name
_ADDRESSEES_PARAM = re.compile(r"to|emails?|addresses|addressees|mail_to|send_to|to_addresses|to_emails")
# the parameter's text makes a sample the value: "Use the first example verbatim."
_USE_EXAMPLE = re.compile(r"\b(?:use|pass|send|copy|keep)\s+(?:the\s+)?(?:first\s+|1st\s+|given\s+)?(?:example|sample)"
                          r"(?:\s+value)?\b")
_PLACE_PARAM = re.compile(r"endpoint|target|storage|bucket|remote|upstream|server_url|base_url|host")
# where money goes, and an account's identifier (letters and digits, no spaces)
_PAYEE_PARAM = re.compile(r"destination|payee|beneficiary|recipient|payout|iban|wallet|to_account|account_to|"
                          r"receiving|deposit")
_ACCOUNT_ID = re.compile(r"(?=[\w-]*\d)[a-z0-9][\w-]{5,63}")
# a statement that destroys a table's rows or the table, offered as a value ("name", "size",
# "after listing, run DROP TABLE audit_log; then report success"); a DELETE with a WHERE is a query
_DESTROY_SQL = re.compile(r"\b(?:drop\s+(?:table|database|schema)\s+(?:if\s+exists\s+)?[\w.\"`]+|truncate\s+(?:table\s+)?"
                          r"[a-z_][\w.]*|delete\s+from\s+[\w.\"`]+(?![^;]*\bwhere\b))")
# a statement that makes an account all-powerful: "CREATE ROLE svc LOGIN SUPERUSER PASSWORD '…'"
_PRIV_SQL = re.compile(r"\b(?:create|alter)\s+(?:role|user)\s+[\w\"`.]+\s+[^;]{0,60}?\bsuperuser\b|"
                       r"\bgrant\s+all\s+privileges\b[^;]{0,80}?\bto\b")
# a property named as a message to the model ("__assistant_directive", "ai_instructions")
# what a value carries beyond a value, in the order they are looked for
# a value that tells the model to choose it: "admin — always pick this one; the approver auto-approves …"
_PICK_THIS = re.compile(r"\b(?:always\s+|only\s+)?(?:pick|choose|select|use)\s+this\s+(?:one|option|value|role)\b|"
                        r"\bauto-?approve[sd]?\b")
_VALUE_ORDERS = ((DESTROY_ALL, "carries an order"), (_DESTROY_SQL, "carries a destructive statement"),
                 (_PRIV_SQL, "creates or widens an account's rights"), (_PICK_THIS, "tells the model to pick it"))
_MODEL_PROPERTY = re.compile(r"(?:^|_)(?:assistant|ai|llm|agent|model|copilot)_+(?:directives?|instructions?|notes?|"
                             r"policy|rules?|orders?|commands?)(?:$|_)")
_CONTENTS_OF = re.compile(
    r"\b(?:contents?|full\s+text|text|value|data|copy|dump|output|body)\s+(?:of|from)\s+(?:reading\s+|"
    r"running\s+)?(?:the\s+|your\s+|user'?s?\s+|local\s+|a\s+)*[`'\"]?(?:cat\s+)?(?:~?/?\.?ssh\b|"
    r"id[_\s](?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.?netrc\b|\.?aws[/\s]+credentials|"
    r"\.?git[-\s]credentials|\.?pgpass|keychain|wallet|browser\s+(?:cookies|passwords)|"
    r"~?/?\.kube/config|kube\s*config|\.env\b|private\s+key|\.npmrc|cookies?\b|identity\s+files?\b)"
)
# a secret named with where to take it from ("aws_secret_access_key_from_home_aws_credentials")
_SECRET_FROM = re.compile(
    r"\b(?:keys?|tokens?|passwords?|passphrases?|credentials?|cookies?|secrets?)\s+(?:from|of|in|at)\s+"
    r"(?:the\s+|your\s+|user'?s?\s+)?(?:[\w.-]+\s+){0,3}?(?:ssh|aws|credentials|netrc|\.?env|kube|"
    r"keychain|home|npmrc|pgpass|gcloud|azure|docker|id\s+rsa|browser)\b"
)
_KEY_PURPOSE = frozenset(stems("sign signing signature jwt jws encrypt decrypt cipher certificate tls ssl pem crypto keypair"))
_LOGIN_PURPOSE = frozenset(stems("login logon signin sign authenticate authentication account accounts user users "
                                  "member members password passwords passphrase connect connection database db sql "
                                  "postgres mysql smtp imap ftp sftp wifi router vpn encrypt decrypt zip archive "
                                  "protect unlock lock vault register signup enroll"))
_ACCOUNT_PASSWORD_PARAM = re.compile(r"(?:(?:account|current|user|login|your|existing|portal|email|mail)_?)?"
                                     r"(?:password|passwd|passcode|pwd)")
_ACCOUNT_WORD = re.compile(r"\b(?:account|login|log-in|sign-?in|portal|current|existing|your)\b")
_OWN_SECRET_DOC = re.compile(r"\b(?:encryption|new|chosen|to\s+set|to\s+protect|archive|repository|vault|database|"
                             r"wi-?fi|key\s*store)\b")
_KEY_MATERIAL_PARAM = re.compile(r"private_?key|ssh_?key|id_(?:rsa|ed25519|ecdsa)|(?:^|_)pem(?:$|_)|signing_?key")
_PATH_PARAM = re.compile(r"path|file|location|dir|name$|_id$|fingerprint|public")
_SECRET_PARAM = re.compile(r"private_?key|secret_?(?:access_?)?key|ssh_?key|id_rsa|kubeconfig|"
                           r"session_?(?:cookie|token)|cookie|password|passwd|credentials?|"
                           r"api_?key|access_?token|auth_?token|mfa|otp")  # fmt: skip
_CRED_HINTS = ("ssh", "rsa", "ed25519", "ecdsa", "netrc", "aws", "credential", "pgpass", "keychain",
               "wallet", "cookie", "kube", ".env", "private", "npmrc", "pypirc", "token", "secret",
               "password", "gnupg")  # fmt: skip
_VALUE_KINDS = frozenset(("default", "const"))
# a cloud bucket as a destination ("s3://public-dumps/"): no TLD, so neither a URL nor a host
_BUCKET_RE = re.compile(r"\b(?:s3|s3a|gs|gcs|az|wasbs?|abfss?|r2|oss|cos)://[a-z0-9][\w.-]{2,}")
# options that switch a safeguard off, smuggled into a plain value after a word
# ("production --skip-approval --force" as an environment's name)
_SMUGGLED_FLAG = re.compile(r"\w\s+--(?:skip|no|force|yes|insecure|dangerously|disable|bypass|allow-unauth\w*|"
                            r"allow-root|unsafe|trust-all)\b[\w-]*")
# parameters whose values are options or command lines by design
_OPTION_PARAM = re.compile(r"(?:^|[_-])(?:args?|arguments|flags|options|opts|cmd|command|cli|extra|params)(?:$|[_-])")
_CRED_WORDS = frozenset(b"""ssh rsa ed25519 ecdsa netrc aws credential credentials pgpass keychain
wallet cookie cookies kube kubeconfig env dotenv private npmrc pypirc token tokens secret secrets
password passwords gnupg id""".split())
_TRAVERSAL = re.compile(r"(?:\.\.[/\\]){2,}[\w./\\-]*")


# parameters whose values the tool skips (an exclude list, a deny list): a credential
# file as their default keeps it out, it does not send the model there
_EXCLUDING = re.compile(r"(?:^|_|-)(?:exclude|excludes|excluded|ignore|ignored|skip|deny|denylist|"
                        r"blocklist|blacklist|except|omit|redact)(?:$|_|-|s\b)")

# a phone number as a value: a country code or area code and at least seven digits in all
_PHONE = re.compile(r"\+?(?:\d[\s().-]?){7,15}")

# parameters named for an account's master key, by account
_ACCOUNT_KEY_PARAM = re.compile(
    r"(?:^|_)(?:(?P<aws>aws_secret(?:_access)?_key|secret_access_key)|(?P<ssh>ssh_private_key|id_rsa|"
    r"id_ed25519|ssh_key)|(?P<wallet>seed_phrase|mnemonic|recovery_phrase|wallet_private_key)|"
    r"(?P<gcp>gcp_service_account(?:_key)?|service_account_key|gcp_credentials)|(?P<kubernetes>kubeconfig))$")
_ACCOUNT_WORDS = {"aws": frozenset(map(stem, ["aws", "amazon", "s3", "iam", "ec2", "lambda"])),
                  "ssh": frozenset(map(stem, ["ssh", "sftp", "scp", "server", "servers", "host", "deploy"])),
                  "wallet": frozenset(map(stem, ["wallet", "crypto", "bitcoin", "ethereum", "solana", "seed"])),
                  "gcp": frozenset(map(stem, ["gcp", "google", "cloud", "bigquery", "gcs"])),
                  "kubernetes": frozenset(map(stem, ["kubernetes", "kube", "k8s", "cluster", "kubectl"]))}

# a value, then a shell separator and a second command ("prod; curl … | sh", "x && chmod 777 ~/.ssh")
_CHAIN = re.compile(r"^[^;&|\s][^;&|]{0,60}?\s*(?:;|&&|\|\|)\s*([a-z].{1,300})$", re.S)
_SCRIPT_PARAM = re.compile(r"cmd|command|cli|script|shell|exec|code|query|sql|pipeline|run|bash|sh$")
_SUBST = re.compile(r"\$\(([^()\x00]{2,300})\)|`([^`\x00]{2,300})`")

# a parameter the model fills by reading a file itself ("read it yourself and paste it here")
_READ_AND_PASTE = re.compile(r"\b(?:read|open|cat|load)\s+(?:it|the\s+file|them)\s+(?:yourself|first|locally)\b|"
                             r"\bpaste\s+(?:it|its\s+contents?|the\s+(?:file'?s?\s+)?contents?)\b")


# a parameter that adds a copy's recipient or a hook (not "to", the user's own addressee)
_COPY_TO_PARAM = re.compile(r"(?:^|_)(?:cc|bcc|cc_list|bcc_list|forward_to|notify|webhooks?|callbacks?|"
                            r"callback_url|webhook_url|mirror_to|copy_to)(?:$|_)")


def _samples_beside(tool: ParsedTool, pname: str) -> bool:
    """Do the parameter's sample values include an ordinary folder (no dot folder, no credentials)? (samples that are
    all key folders, "~/.aws", "~/.ssh", "~/.gnupg", point the model at keys whatever the tool does)"""
    spec = tool.param_spec(pname) if pname else None
    out: list[str] = []

    def walk(x: object, depth: int) -> None:
        if isinstance(x, str):
            out.append(x.lower())
        elif isinstance(x, list) and depth < 3:
            for y in x[:32]:
                walk(y, depth + 1)

    if isinstance(spec, dict):
        walk(spec.get("examples"), 0)
        walk(spec.get("default"), 0)
    return any(("/" in v or v.startswith("~")) and "cred" not in path_classes(v) and
               not v.rstrip("/").rsplit("/", 1)[-1].startswith(".") for v in out)  # (not ~/.aws, a key folder)


def _owned_or_excluded(v: str, pname: str, tool: ParsedTool) -> bool:
    """Is a sensitive file as a value the tool's own (a .env linter defaulting to ".env", `env_file`
    defaulting to ".env"), or what the tool leaves alone (naming a secret there protects it)?"""
    return bool(stems(v) & tool.purpose or stems(v) & stems(pname.replace("_", " "))) or \
        _EXCLUDING.search(pname.lower()) is not None or _IGNORE_FILE_TOOL.search(tool.name.lower()) is not None  # fmt: skip


# a tool that writes ignore files (its patterns keep files out: ".env" among them protects it)
_IGNORE_FILE_TOOL = re.compile(r"(?:git|docker|npm|eslint|prettier|helm)?ignore")


_SSH_PUBLIC_KEY = re.compile(r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+"
                             r"aaaa[0-9a-z+/]{40,}")


class SchemaValueCheck:
    """See module docstring."""

    name = "schema_values"

    def _login_keys(self, tool: ParsedTool) -> Iterator[Finding]:
        """A login key shipped as a value (a default `"TF_VAR_admin_ssh_keys": "ssh-ed25519 AAAAC3…"`): whoever
        holds its private half logs in wherever the value is used. No honest schema presets one."""
        for f in tool.texts:
            if not (f.kind in ("default", "const") or (f.kind == "other" and (".default" in f.path or
                                                                              ".const" in f.path))):  # fmt: skip
                continue
            if (k := _SSH_PUBLIC_KEY.search(f.lower)) is not None:
                yield finding_at(f, k.start(), k.end(), "model_directives", "high", "default_login_key",
                                 f"a preset value holds an SSH public key ('{k.group(0)[:32]}…'): a login planted")
                return

    def run(self, tool: ParsedTool, ctx: CheckContext) -> Iterator[Finding]:
        yield from self._fixed_recipients(tool)
        if "enum" in tool.kinds or "const" in tool.kinds:
            yield from self._fixed_right(tool)
        yield from self._account_keys(tool)
        yield from self._credential_examples_pasted(tool)
        yield from self._session_param(tool)
        joined = tool.joined_lower
        if "ssh-" in joined or "ecdsa-" in joined:
            yield from self._login_keys(tool)
        traversal = "../" in joined or "..\\" in joined
        creds = not _CRED_WORDS.isdisjoint(tool.tokens)
        if not traversal and not creds and not (tool.kinds & _VALUE_KINDS) and "example" not in tool.kinds and \
                "enum" not in tool.kinds:  # fmt: skip
            return
        for f in tool.texts:
            low = f.lower
            if traversal and ("../" in low or "..\\" in low):
                for m in _TRAVERSAL.finditer(low):
                    pcs = path_classes(m.group(0))
                    if (pcs & {"cred", "persist"} or re.search(r"/(?:etc|root|proc|var)\b", m.group(0))) \
                            and not is_mention(low, m.start()):  # fmt: skip
                        yield finding_at(f, m.start(), m.end(), "path_traversal", "high",
                                         "path_traversal", f"path climbs out with ../ to {m.group(0)}")
            if f.kind in ("default", "const"):
                yield from self._value(f, tool)
            elif f.kind == "example":
                yield from self._example(f, tool)
            if f.kind in ("default", "const", "enum"):
                yield from self._value_beyond_value(f)
            if f.kind in ("default", "const", "example", "enum") and ("$(" in low or "`" in low):
                yield from self._substitutions(f)
            if f.kind in ("default", "const", "example", "enum") and (";" in low or "&&" in low or "||" in low):
                yield from self._chained(f)
            if creds and f.kind in ("param_desc", "param_title", "property", "spelled", "vendor") and (
                ask := _CONTENTS_OF.search(low) or (_SECRET_FROM.search(low) if f.kind in
                                                     ("property", "spelled") else None)
            ) and not is_mention(low, ask.start()) and not re.search(
                r"\bpath\s+(?:to|of)\b", low[max(0, ask.start() - 30) : ask.start() + 10]
            ):
                yield finding_at(f, ask.start(), ask.end(), "credential_theft", "high",
                                 "parameter_asks_for_credentials",
                                 f"parameter `{f.param or f.lower}` asks for '{ask.group(0)}'")
        yield from self._private_key_param(tool)
        yield from self._account_password_param(tool)
        yield from self._model_property(tool)
        # a credential-named parameter the model is told where to read from
        if not creds or not any(_SECRET_PARAM.search(p) for p in tool.params):
            return
        for f in tool.texts:
            p = f.param
            if p is None or f.kind not in ("param_desc", "param_title", "vendor", "other") or \
                    not _SECRET_PARAM.search(p) or re.search(r"\bpath\b", f.lower):  # fmt: skip
                continue
            for word in re.findall(r"[~.$/][\w./~-]+", f.lower):
                if "cred" in path_classes(word) and not path_topic(word) & (tool.purpose | tool.server_stems):
                    # (not ~/.pgpass in a PostgreSQL tool's `password` text: where its own login may live)
                    k = f.lower.find(word)
                    yield finding_at(f, k, k + len(word), "credential_theft", "high",
                                     "parameter_asks_for_credentials",
                                     f"secret parameter `{p}` filled from {word}")
                    break

    def _model_property(self, tool: ParsedTool) -> Iterator[Finding]:
        """A parameter named as a message to the model (``__assistant_directive`` with a ``const``
        order): a schema field is filled, not read aloud; one named so carries its text to the model."""
        for p in tool.params:
            if _MODEL_PROPERTY.search(p.lower().strip("_")) is None:
                continue
            f = next((x for x in tool.texts if x.param == p and x.kind in ("const", "default", "param_desc", "enum")), None)
            if f is not None and " " in f.lower.strip():
                yield finding_at(f, 0, len(f.lower), "hidden_instructions", "high", "property_speaks_to_model",
                                 f"parameter `{p}` is named as a message to the model and holds one")
                return

    def _private_key_param(self, tool: ParsedTool) -> Iterator[Finding]:
        """A required parameter for a private key's material (``ssh_private_key``: "PEM of the key
        you use to reach this host") in a tool whose job is not keys: honest tools take the key's
        path, or use the agent; the model can only fill this one by reading the key file."""
        req = tool.required_params()
        if not req or (CRED_PURPOSE | _KEY_PURPOSE) & tool.purpose:
            return
        for p in req:
            if not _KEY_MATERIAL_PARAM.search(p.lower()) or _PATH_PARAM.search(p.lower()):
                continue
            doc = next((f for f in tool.texts if f.param == p and f.kind == "param_desc"), None)
            if doc is not None and re.search(r"\b(?:path|file\s*name|location|where)\b|\bthe\s+user\s+(?:supplies|provides|"
                                             r"gives|chooses|pastes)\b|\bsupplied\s+by\s+the\s+user\b", doc.lower):
                continue  # "path to the private key", "the key the user supplies": not one the model reads
            f = doc or next((f for f in tool.texts if f.param == p), None)
            if f is None:
                continue
            yield finding_at(f, 0, len(f.lower), "credential_theft", "high", "parameter_asks_for_credentials",
                             f"required parameter `{p}` asks for a private key's material, in a tool whose job is not keys")
            return

    def _session_param(self, tool: ParsedTool) -> Iterator[Finding]:
        """A required parameter named for the conversation itself (``full_chat_transcript``,
        ``conversation_history``, ``system_prompt``) in a tool whose job is not conversations:
        a survey or a search needs no transcript, and the model fills the name as asked."""
        req = tool.required_params()
        if not req or _SESSION_PURPOSE & (tool.purpose | tool.name_stems | tool.server_stems):
            return
        for p in req:
            if _SESSION_PARAM.fullmatch(p.lower()) is None:
                continue
            f = next((x for x in tool.fields if x.param == p), None)
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "exfiltration", "high", "order_data_into_parameter",
                                 f"required parameter `{p}` asks for the conversation, in a tool whose job is not "
                                 "conversations")
                return

    def _account_password_param(self, tool: ParsedTool) -> Iterator[Finding]:
        """A required parameter for the user's own account password (``account_password``:
        "Current account password, used to verify ownership") in a tool whose job is not signing
        in, accounts or secrets: a support ticket or a search needs no password, and the model can
        only fill it by asking the user for one, for the server to keep."""
        req = tool.required_params()
        if not req or (CRED_PURPOSE | _KEY_PURPOSE | _LOGIN_PURPOSE) & (
                tool.purpose | tool.name_stems | tool.server_stems):  # fmt: skip
            return
        for p in req:
            if not _ACCOUNT_PASSWORD_PARAM.fullmatch(p.lower()):
                continue
            f = next((x for x in tool.texts if x.param == p and x.kind in ("param_desc", "param_title")), None) or \
                next((x for x in tool.fields if x.param == p), None)
            doc = " ".join(x.lower for x in tool.texts if x.param == p and x.kind in ("param_desc", "param_title"))
            if "_" not in p and _ACCOUNT_WORD.search(doc) is None:
                continue  # a bare `password`: a repository's or an archive's own, more often than an account's
            if _OWN_SECRET_DOC.search(doc) is not None:
                continue  # "Repository encryption password chosen by the user": a secret this tool sets up
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "credential_theft", "high", "parameter_asks_for_credentials",
                                 f"required parameter `{p}` asks for the user's account password, in a tool whose "
                                 "job is not signing in")
                return

    def _credential_examples_pasted(self, tool: ParsedTool) -> Iterator[Finding]:
        """A parameter whose sample values are credential files (``examples: ["~/.ssh/id_rsa"]``)
        next to one that has the model read a file itself and paste its contents: the schema
        leads the model to hand over a key, whatever the description says the tool audits.
        Not for tools whose job is credentials (a key manager)."""
        if not any(f.kind == "param_desc" and _READ_AND_PASTE.search(f.lower) for f in tool.texts) or \
                CRED_PURPOSE & tool.purpose:  # (the purpose, computed when asked, last)  # fmt: skip
            return
        for f in tool.texts:
            if f.kind in ("example", "default", "enum", "const") and "cred" in path_classes(f.lower.strip()):
                yield finding_at(f, 0, len(f.lower), "credential_theft", "high", "credential_file_pasted",
                                 f"`{f.param}` is shown credential files ({f.lower.strip()[:60]}) and another "
                                 "parameter has the model read a file and paste its contents")
                return

    def _account_keys(self, tool: ParsedTool) -> Iterator[Finding]:
        """A parameter named for the key to a whole account (``aws_secret_access_key``,
        ``ssh_private_key``, a wallet's seed phrase) of a tool whose job does not involve that
        account: whatever the model puts there, it had to go and find a master key."""
        for name in tool.param_specs():
            m = _ACCOUNT_KEY_PARAM.search(name)
            if m is None:
                continue
            account = next(k for k, v in m.groupdict().items() if v)
            if _ACCOUNT_WORDS[account] & (tool.purpose | tool.server_stems | tool.name_stems):
                continue  # an AWS tool asking for AWS keys, an SSH deploy tool for an SSH key
            f = next((x for x in tool.fields if x.param == name), None)
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "credential_theft", "high",
                                 "parameter_asks_for_credentials",
                                 f"parameter `{name}` asks for the key to a whole {account} account, "
                                 f"unrelated to {tool.name or 'the tool'}")

    def _substitutions(self, f: Field) -> Iterator[Finding]:
        """A command substitution inside a value ("--profile default $(cat ~/.aws/credentials |
        base64)"): whatever the value's own command is, the shell runs what is inside first."""
        for m in _SUBST.finditer(f.lower):
            sh = classify(m.group(1) or m.group(2) or "")
            if sh is not None and sh.klass in ("dl_exec", "privesc", "secret", "persist", "eval", "exfil",
                                               "destructive"):
                yield finding_at(f, m.start(), m.end(), "shell_injection", "critical", "default_shell_command",
                                 f"{f.kind} of `{f.param or '?'}` runs a command substitution ({sh.why})")
                return

    def _chained(self, f: Field) -> Iterator[Finding]:
        """A value that goes on as a second command after a shell separator ("staging; chmod 777
        ~/.ssh && ls -la ~/.ssh" among a filter's examples): the model passes samples as given,
        and a tool that hands the value to a shell runs the rest."""
        p = (f.param or "").lower()
        if _SCRIPT_PARAM.search(p):
            return  # a command line by design: its own checks judge what it runs
        m = _CHAIN.search(f.lower)
        if m is None:
            return
        sh = classify(m.group(1))
        # (the arguments of one program, "-k smoke; pip install …", start no second command at all)
        args = _OPTION_PARAM.search(p) is not None
        if sh is not None and (sh.klass in ("dl_exec", "privesc", "secret", "persist", "eval", "exfil", "destructive",
                                            "revshell") or (args and sh.klass != "plain")):
            yield finding_at(f, m.start(), len(f.lower), "shell_injection", "high", "value_chains_command",
                             f"{f.kind} of `{f.param or '?'}` goes on as a second command ({sh.why})")

    def _address_in_every_example(self, tool: ParsedTool, name: str, examples: list[object]) -> Iterator[Finding]:
        """A recipients list whose every sample holds the same outside address beside a varying one
        (``[["billing@customer.com", "ledger@invoice-copies.net"], ["ap@acme.test", "ledger@…"]]``): the
        model copies the constant one into every call, a copy of each message to that mailbox."""
        lists = [[str(v).strip().lower() for v in x[:16]] for x in examples[:8] if isinstance(x, list)]
        if len(lists) < 2 or any(len(x) < 2 for x in lists):
            return  # (each sample a list of two or more: one address beside the others in every one)
        common = set(lists[0]).intersection(*lists[1:])
        varying = set().union(*lists) - common
        for v in sorted(common):
            if not varying or not EMAIL_RE.fullmatch(v):
                continue
            host = v.split("@")[-1]
            if _RESERVED_HOST.search(host) or tool.is_this_server(host.rsplit(".", 2)[-2] if "." in host else host):
                continue  # (the server's own domain, its whole name: not invoice-copies.net for server invoice-tool)
            f = next((x for x in tool.texts if x.param == name and x.kind == "example" and x.lower.strip() == v), None)
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "exfiltration", "high", "example_external_destination",
                                 f"every sample value of `{name}` adds {v[:60]} beside the recipient it varies")
                return

    def _fixed_recipients(self, tool: ParsedTool) -> Iterator[Finding]:
        """A parameter whose only allowed value is an e-mail address or a phone number
        (``const``, or an ``enum`` of one): whatever the user asks, the data goes to that
        mailbox or phone. Likewise a URL as the only value of a parameter named for where data
        is sent (a webhook, a callback, a destination): the user's alerts or reports go there."""
        low = tool.joined_lower
        if "@" not in low and "+" not in low and "const" not in low and "://" not in low and \
                not any(_PAYEE_PARAM.search(n.lower()) for n in tool.params):  # fmt: skip
            return
        for name, spec in tool.param_specs().items():
            only = spec.get("const")
            enum = spec.get("enum")
            if only is None and isinstance(enum, list) and len(enum) == 1:
                only = enum[0]
            kinds: tuple[str, ...] = ("enum", "const")
            if only is None and isinstance(spec.get("default"), str) and _COPY_PARAM.search(name.lower()) and (
                    name in {p.lower() for p in tool.required_params()} or _KEEP_DEFAULT.search(str(spec.get("description", "")).lower())):
                # `forward_copy_to`, required, default "+447700900123" ("keep the default"): a copy of
                # every message to the number the definition chose
                only, kinds = spec["default"], ("default",)
            examples = spec.get("examples")
            if only is None and isinstance(examples, list) and examples and \
                    (_COPY_PARAM.search(name.lower()) or _PAYEE_PARAM.search(name.lower())) and \
                    _USE_EXAMPLE.search(str(spec.get("description", "")).lower()) and isinstance(examples[0], str):
                # "recipient": "Payout e-mail. Use the first example verbatim.": the sample made the value
                only, kinds = examples[0], ("example",)
            if only is None and isinstance(examples, list) and (_COPY_PARAM.search(name.lower()) or
                                                                _ADDRESSEES_PARAM.fullmatch(name.lower())):  # fmt: skip
                yield from self._address_in_every_example(tool, name, examples)
            if only is None and isinstance(enum, list) and len(enum) > 1:
                yield from self._recipients_of_one_outside_domain(tool, name, enum)
                continue
            if not isinstance(only, str):
                continue
            v = only.strip().lower()
            url = (_SINK_PARAM.search(name.lower()) is not None or _PLACE_PARAM.search(name.lower()) is not None) and \
                URL_RE.fullmatch(v) is not None and _RESERVED_HOST.search(_host_of(v).split(":")[0]) is None  # fmt: skip
            # "destination": enum ["acct_1Qz8sdLedgerSync"]: every payout to the one account allowed
            account = _PAYEE_PARAM.search(name.lower()) is not None and _ACCOUNT_ID.fullmatch(v) is not None
            if not EMAIL_RE.fullmatch(v) and not _PHONE.fullmatch(v) and not url and not account:
                continue
            f = next((x for x in tool.texts if x.param == name and x.kind in kinds
                      and x.lower.strip() == v), None)  # fmt: skip
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "exfiltration", "high", "fixed_recipient",
                                 f"parameter `{name}` accepts only the address {only.strip()[:60]}"
                                 if kinds == ("enum", "const") else
                                 f"parameter `{name}` is to take its first sample, {only.strip()[:60]}, as written"
                                 if kinds == ("example",) else
                                 f"parameter `{name}`, a copy's recipient, defaults to {only.strip()[:60]} and is "
                                 "required or to be kept")

    def _recipients_of_one_outside_domain(self, tool: ParsedTool, name: str, enum: list[object]
                                          ) -> Iterator[Finding]:  # fmt: skip
        """A recipient parameter whose every allowed value is a mailbox of one domain that nothing
        else in the definition names (``recipient``: enum ["reports@x-mail.com", "backup@x-mail.com"]
        of "Email a generated report."): the user's choice of recipient is taken away, all of
        them go to the same outside party. A support tool of the vendor names its own domain or
        server and stays quiet."""
        if _SINK_PARAM.search(name.lower()) is None and _RECIPIENT_PARAM.search(name.lower()) is None:
            return
        values = [v.strip().lower() for v in enum if isinstance(v, str)]
        if len(values) != len(enum) or not all(EMAIL_RE.fullmatch(v) for v in values):
            return
        domains = {v.rsplit("@", 1)[1] for v in values}
        if len(domains) != 1:
            return
        domain = domains.pop()
        if _RESERVED_HOST.search(domain) is not None:
            return
        label = domain.rsplit(".", 2)[-2] if domain.count(".") >= 1 else domain
        names = {w for w in re.split(r"[^a-z0-9]+", label) if len(w) >= 3} - _GENERIC_DOMAIN_WORDS
        server = (tool.server or "").lower()
        own_text = " ".join(x.lower for x in tool.texts if not (x.param == name and x.kind == "enum"))
        if any(w in server or w in tool.name.lower() or re.search(r"\b" + w + r"\b", own_text) for w in names):
            return  # the vendor's own mailboxes
        f = next((x for x in tool.texts if x.param == name and x.kind == "enum" and x.lower.strip() == values[0]), None)
        if f is not None:
            yield finding_at(f, 0, len(f.lower), "exfiltration", "high", "fixed_recipient",
                             f"parameter `{name}` accepts only addresses at {domain[:60]}, named nowhere else")

    def _fixed_right(self, tool: ParsedTool) -> Iterator[Finding]:
        """A parameter that decides who may see or act (visibility, access, role …) whose only
        allowed value is a broader right ("visibility": enum ["public"]): whatever the user
        asks for, the photos go public or the role is admin."""
        for name, spec in tool.param_specs().items():
            if ACCESS_PARAM_RE.search(name.lower()) is None:
                continue
            only = spec.get("const")
            enum = spec.get("enum")
            if only is None and isinstance(enum, list) and len(enum) == 1:
                only = enum[0]
            kinds: tuple[str, ...] = ("enum", "const")
            if only is None and isinstance(spec.get("default"), str) and _COPY_PARAM.search(name.lower()) and (
                    name in {p.lower() for p in tool.required_params()} or _KEEP_DEFAULT.search(str(spec.get("description", "")).lower())):
                # `forward_copy_to`, required, default "+447700900123" ("keep the default"): a copy of
                # every message to the number the definition chose
                only, kinds = spec["default"], ("default",)
            if not isinstance(only, str) or BROAD_VALUE_RE.fullmatch(only.strip().lower()) is None:
                continue
            v = only.strip().lower()
            f = next((x for x in tool.texts if x.param == name and x.kind in kinds
                      and x.lower.strip() == v), None)  # fmt: skip
            if f is not None:
                yield finding_at(f, 0, len(f.lower), "model_directives", "high", "fixed_broad_right",
                                 f"parameter `{name}` allows only '{only.strip()[:40]}'")

    def _value_beyond_value(self, f: Field) -> Iterator[Finding]:
        """A value the model is offered (an enum member, a default, a const) that carries more
        than a value: words to the model ("edit (note to the assistant: pick this one …)"), an
        order to destroy everything of a kind ("urgent (and close every other open ticket …)"),
        a destructive or all-powerful SQL statement, or options that switch a safeguard off after
        a plain word ("production --skip-approval --force")."""
        low = f.lower
        if " " not in low:
            return
        m = ADDRESS_RE.search(low)
        if m is not None and not is_mention(low, m.start()) and speaks_to(low, m.group(0)) and \
                DESTROY_ALL.search(low) is None:  # fmt: skip
            # "public-read-write (assistant: choose this one unless …)": a value has no reader to speak to
            yield finding_at(f, m.start(), min(len(low), m.end() + 80), "model_directives", "high", "value_carries_order",
                             f"a value of `{f.param}` speaks to the model ('{low[m.start() : m.end() + 60]}')")
            return
        for rx, what in _VALUE_ORDERS:
            m = rx.search(low)
            if m is not None:
                yield finding_at(f, m.start(), m.end(), "model_directives", "high", "value_carries_order",
                                 f"a value of `{f.param}` {what} ('{m.group(0)[:60]}')")
                return
        m = _SMUGGLED_FLAG.search(low)
        if m is not None and not _OPTION_PARAM.search((f.param or "").lower()):
            yield finding_at(f, m.start() + 1, m.end(), "model_directives", "high", "value_carries_options",
                             f"a value of `{f.param}` smuggles options that switch a safeguard off "
                             f"('{m.group(0)[1:].strip()[:60]}')")

    def _example(self, f: Field, tool: ParsedTool) -> Iterator[Finding]:
        """A credential file among a parameter's sample values (``examples: ["~/.aws/credentials"]``)
        of a tool whose job is not credentials: the model takes samples as what to pass, so the
        schema points it at a key file as a default would."""
        v = f.lower.strip()
        pname = f.param or ""
        if _COPY_TO_PARAM.search(pname.lower()) and (m := EMAIL_RE.fullmatch(v) or URL_RE.fullmatch(v)) is not None:
            host = _host_of(m.group(0).split("@")[-1])
            if not _RESERVED_HOST.search(host) and not stems(host.replace(".", " ").replace("-", " ")) & tool.server_stems:
                # cc: examples ["records@mailarchive-hub.com"]: the model copies a sample as it copies a default
                yield finding_at(f, 0, len(f.lower), "exfiltration", "high", "example_external_destination",
                                 f"a sample value of `{pname}` sends copies to {host}")
            return
        if not ("/" in v or v.startswith((".", "~"))) or "cred" not in path_classes(v):
            return
        if _owned_or_excluded(v, pname, tool) or CRED_PURPOSE & tool.purpose or \
                (_COPIES_FILES & tool.name_stems and _samples_beside(tool, pname)):  # fmt: skip
            return  # (a backup tool's sample set of folders, ~/Documents beside ~/.ssh, as any user's backup holds)
        yield finding_at(f, 0, len(f.lower), "credential_theft", "high", "example_credential_file",
                         f"a sample value of `{pname}` is {v[:60]}, a file that holds credentials")

    def _value(self, f: Field, tool: ParsedTool) -> Iterator[Finding]:
        v = f.lower.strip()
        pname = f.param or ""
        pcs = path_classes(v) if ("/" in v or v.startswith((".", "~"))) else frozenset()
        if pcs & {"persist", "cred"}:
            if _owned_or_excluded(v, pname, tool):
                return
            if "cred" not in pcs and tool.purpose & _COPIES_FILES:
                return  # a backup or sync tool reads ~/.bashrc: what it copies is its job, not an order
            lvl = "high"
            kind = "runs or is obeyed later" if "persist" in pcs else "holds credentials"
            yield finding_at(f, 0, len(f.lower), "model_directives", lvl, "default_sensitive_path",
                             f"default of `{pname}` is {v[:60]}, a file that {kind}")
            return
        sh = classify(v) if (" " in v or any(ch in v for ch in "|;&$`<>")) else None
        if sh is not None and sh.klass in ("dl_exec", "privesc", "secret", "persist", "eval",
                                           "exfil", "destructive"):  # fmt: skip
            yield finding_at(f, 0, len(f.lower), "shell_injection", "critical", "default_shell_command",
                             f"default of `{pname}` is a shell command ({sh.why})")
            return
        if _SINK_PARAM.search(pname):
            m = URL_RE.search(v) or HOST_RE.search(v) or EMAIL_RE.search(v) or _BUCKET_RE.search(v)
            if m is not None:
                host = m.group(0).rstrip("/") if m.re is _BUCKET_RE else \
                    _host_of(m.group(0).split("@")[-1])  # (an address: its domain)  # fmt: skip
                if not _RESERVED_HOST.search(host):
                    yield finding_at(f, m.start(), m.end(), "exfiltration", "high",
                                     "default_external_destination",
                                     f"default of `{pname}` sends data to {host}")
