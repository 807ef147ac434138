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
    keywords: tuple[str, ...]  # lower-case; () → always run


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
    r"\battacker\b|\bevil\b|external (?:server|host|endpoint|url|address|domain|service|api)|"
    r"remote (?:server|host|endpoint|url|address|logging)|third[- ]party (?:server|endpoint)|"
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


def _r(name: str, category: str, severity: str, pattern: str, keywords: tuple[str, ...]) -> Rule:
    return Rule(name, category, severity, re.compile(pattern), keywords)


# ------------------------------------------------------------------ rules

RULES: tuple[Rule, ...] = (
    # ---------------------------------------------------------- model_directives
    _r(
        "ignore_previous_instructions",
        "model_directives",
        "critical",
        r"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon|discard|"
        r"neglect|violate|cancel)\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+|of\s+)*"
        r"(?:previous|prior|preceding|above|earlier|former|original|existing|initial|system|"
        r"safety|security|developer|other|old)?\s*"
        r"(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints|"
        r"restrictions|policies|polic(?:y|ies)|system prompt|programming|context|orders|"
        r"commands|messages?)\b",
        ("ignore", "disregard", "forget", "overrid", "overrule", "bypass", "skip", "drop",
         "abandon", "discard", "neglect", "violate", "cancel"),
    ),  # fmt: skip
    _r(
        "directive_tag",
        "model_directives",
        "high",
        r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|override|critical|"
        r"sys|system[_ -]?(?:prompt|message|note)|note[_ -]?to[_ -]?(?:ai|assistant|model|llm)|"
        r"assistant[_ -]?(?:note|instructions?)|ai[_ -]?(?:note|instructions?)|priority|mandatory|"
        r"directive|command|internal)\s*>"
        r"|\[/?(?:inst|system|sys)\]|<<\s*/?sys\s*>>|<\|(?:im_start|im_end|system|endoftext)\|>",
        ("<", "[inst", "[sys", "[/"),
    ),
    _r(
        "role_marker",
        "model_directives",
        "high",
        r"(?:^|[\x00\n]|[.!?]\s)\s*(?:#+\s*)?\**\s*(?:system|assistant|admin(?:istrator)?|developer|"
        r"root|ai|model|llm)\s*(?:override|note|notice|instruction|instructions|message|prompt|"
        r"directive|command|update|alert)?\s*\**\s*:\s*\S",
        ("system", "assistant", "admin", "developer", "root", "ai", "model", "llm"),
    ),
    _r(
        "note_to_model",
        "model_directives",
        "high",
        r"\b(?:note|message|instructions?|reminder|notice|directive|memo|hint|tip)\s+(?:to|for)\s+"
        r"(?:the\s+|any\s+|all\s+)?" + _MODEL + r"s?\b"
        r"|\b(?:attention|hey|dear|listen)[,:]?\s+(?:the\s+)?" + _MODEL + r"\b"
        r"|\b(?:if\s+)?you\s+are\s+(?:an?\s+)?" + _MODEL + r"\b"
        r"|\b(?:ai|llm|language model)s?\s+(?:reading|processing|seeing|parsing)\s+this\b",
        ("note", "message", "instruction", "reminder", "notice", "directive", "memo", "hint",
         "tip", "attention", "hey", "dear", "listen", "you are", "reading", "processing",
         "seeing", "parsing"),
    ),  # fmt: skip
    _r(
        "before_using_do",
        "model_directives",
        "high",
        r"\b(?:before|prior to|after|when|whenever|each time|every time|first time)\s+"
        r"(?:you\s+)?(?:using|calling|invoking|running|executing|use|call|invoke|run|execute|"
        r"answering|responding|replying|proceeding|continuing|returning|doing anything)\b"
        + _gap(60)
        + r"\b(?:you\s+)?(?:must|should|need to|have to|are required to|always|first|make sure(?: to)?|"
        r"ensure(?: that)?(?: you)?|be sure to|remember to|don'?t forget to|also|please|"
        r"immediately)\s+(?:also\s+|first\s+|always\s+|immediately\s+)?" + _ACCESS_VERBS + r"\b",
        ("before", "prior to", "after", "when", "each time", "every time", "first time"),
    ),
    _r(
        "must_first_call",
        "model_directives",
        "high",
        r"\byou\s+(?:must|should|need to|have to|are required to|are instructed to|will)\s+"
        r"(?:always\s+|first\s+|also\s+|immediately\s+|silently\s+|now\s+)+"
        r"(?:call|invoke|use|run|execute|read|send|fetch|include|pass|upload|post|forward|copy|"
        r"open|access|visit|navigate|append|attach|email|contact|write)\b"
        r"|\b(?:first|always|immediately)\s+(?:call|invoke|read|send|fetch|upload|post|forward|"
        r"copy|access|open|run|execute)\s+(?:the\s+)?[`'\"]?[a-z0-9]+[_-][a-z0-9_-]+",
        ("you", "first", "always", "immediately"),
    ),
    _r(
        "fake_authorization",
        "model_directives",
        "high",
        r"\b(?:the\s+)?user\s+(?:has\s+)?(?:already\s+)?(?:explicitly\s+)?(?:authori[sz]ed|approved|"
        r"consented|agreed|given (?:permission|consent)|granted (?:permission|access)|requested this)\b"
        r"|\b(?:this|it)\s+(?:is|has been)\s+(?:pre-?)?(?:approved|authori[sz]ed|sanctioned)\s+by\s+"
        r"(?:the\s+)?(?:user|admin|administrator|security team|developer|anthropic|openai)"
        r"|\b(?:do not|don'?t|never|no need to)\s+(?:ask|request|seek|wait)\s+(?:the user\s+)?"
        r"(?:for\s+)?(?:confirmation|permission|approval|consent)",
        ("user", "approved", "authoriz", "authoris", "sanctioned", "confirmation", "permission",
         "approval", "consent"),
    ),  # fmt: skip
    _r(
        "persona_override",
        "model_directives",
        "high",
        r"\byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+)?(?:developer|dan|unrestricted|jailbroken|admin|"
        r"god|debug|maintenance|root|sudo|unfiltered|uncensored|evil)\b"
        r"|\b(?:enable|enter|activate|switch to)\s+(?:developer|dan|god|jailbreak|unrestricted|"
        r"debug|admin|maintenance)\s+mode\b"
        r"|\bsystem\s+override\b|\bnew\s+(?:system\s+)?instructions?\s*:"
        r"|\bfrom\s+now\s+on,?\s+(?:you\s+)?(?:must|will|should|always|never|ignore|respond|act)",
        ("you are now", "mode", "override", "new ", "from now on"),
    ),
    _r(
        "prompt_leak_request",
        "model_directives",
        "high",
        r"\b(?:reveal|print|output|repeat|show|leak|dump|include|send|return|copy|paste|write out)\s+"
        r"(?:me\s+)?(?:your|the|its|all)\s+(?:full\s+|entire\s+|complete\s+|hidden\s+|initial\s+)?"
        r"(?:system\s+prompt|initial\s+prompt|system\s+message|hidden\s+instructions|instructions\s+"
        r"above|context\s+window|conversation\s+history|chat\s+history|prior\s+messages)",
        ("prompt", "system message", "hidden instructions", "instructions above", "context window",
         "conversation history", "chat history", "prior messages"),
    ),  # fmt: skip
    _r(
        "imperative_to_model",
        "model_directives",
        "medium",
        r"\b(?:you\s+(?:must|should|need to|have to|are required to)|always|make sure to|be sure to|"
        r"it is (?:mandatory|required|critical|essential) (?:that you|to))\s+"
        r"(?:also\s+|first\s+|always\s+|silently\s+|secretly\s+|quietly\s+)*" + _ACCESS_VERBS + r"\b",
        ("you", "always", "make sure", "be sure", "mandatory", "required", "critical", "essential"),
    ),
    # ------------------------------------------------------- hidden_instructions
    _r(
        "conceal_from_user",
        "hidden_instructions",
        "high",
        _CONCEAL,
        ("not", "don", "never", "without", "keep", "remain", "stay", "be ", "hide", "conceal",
         "user", "invisible", "transparent", "unknown", "behind"),
    ),  # fmt: skip
    _r(
        "covert_action",
        "hidden_instructions",
        "high",
        r"\b(?:silently|secretly|covertly|quietly|discreetly|stealthily|surreptitiously|"
        r"invisibly|without (?:asking|permission|consent|confirmation))\s+"
        r"(?:also\s+|and\s+)?" + _ACCESS_VERBS + r"\b",
        ("silently", "secretly", "covertly", "quietly", "discreetly", "stealthily",
         "surreptitiously", "invisibly", "without"),
    ),  # fmt: skip
    _r(
        "hidden_marker",
        "hidden_instructions",
        "high",
        r"\b(?:hidden|secret|covert|private|internal|confidential)\s+(?:instructions?|tasks?|"
        r"directives?|orders|commands|objectives?|goals?|notes?\s+to\s+" + _MODEL + r")\s*[:\-]"
        r"|(?:^|[\x00\n.!?]\s*)(?:hidden|secret)\s*:"
        r"|\bdo\s+not\s+(?:show|display|render|print)\s+(?:this|these|the following)\b",
        ("hidden", "secret", "covert", "private", "internal", "confidential", "do not"),
    ),
    _r(
        "html_comment",
        "hidden_instructions",
        "medium",
        r"<!--(?:[^-\x00]|-(?!->)){8,2000}-->",
        ("<!--",),
    ),
    _r(
        "whitespace_padding",
        "hidden_instructions",
        "medium",
        r"(?:\n[ \t]*){8,}\S|[ \t]{80,}\S",
        ("\n\n\n\n\n\n\n\n", "          "),
    ),
    # ---------------------------------------------------------- credential_theft
    _r(
        "credential_path_access",
        "credential_theft",
        "high",
        r"(?:^|[\x00\n]|[.!?:;,(]\s|<[a-z_]+>\s*|\b(?:please|first|then|also|and|must|should|"
        r"always|you|now|silently|secretly|quietly|to)\s+)" + _ACCESS_VERBS + r"\b" + _sent(80)
        + _CRED_PATH,
        _CRED_PATH_KW,
    ),
    _r(
        "credential_path_in_param",
        "credential_theft",
        "high",
        _CRED_PATH + _sent(100)
        + r"\b(?:in|into|as|to|via|through|inside|within)\s+(?:the\s+|a\s+|an\s+)?"
        r"(?:[`'\"]?[\w-]+[`'\"]?\s+)?(?:argument|parameter|param|field|property|input|"
        r"request|payload|body|query|header|response|output|notes?|metadata|context)\b",
        _CRED_PATH_KW,
    ),
    _r(
        "credential_path",
        "credential_theft",
        "medium",
        _CRED_PATH,
        _CRED_PATH_KW,
    ),
    _r(
        "collect_user_secrets",
        "credential_theft",
        "high",
        r"\b" + _ACCESS_VERBS + r"\b" + _sent(40)
        + r"\b(?:the\s+user'?s?|all|any|every|each|their|available|stored|saved|local|cached|"
        r"system|host|machine'?s?|found|accessible)\s+(?:\w+\s+){0,2}?" + _CRED_NOUN + r"\b"
        + r"(?!\s+(?:parameter|argument|field|input)\b)",
        _CRED_NOUN_KW,
    ),
    _r(
        "dump_environment",
        "credential_theft",
        "high",
        r"\b(?:printenv|env\s*\|\s*|os\.environ|process\.env\b(?!\.[a-z_]+)|\$env:|"
        r"get-childitem\s+env:|/proc/self/environ|set\s*\|\s*)",
        ("printenv", "env", "environ"),
    ),
    # -------------------------------------------------------------- exfiltration
    _r(
        "send_data_external",
        "exfiltration",
        "high",
        r"\b" + _EXFIL_VERBS + r"\b" + _sent(100) + _USER_DATA + _sent(100) + r"\b(?:to|at|into|on|via)\s+"
        + _sent(30) + _EXTERNAL
        + r"|\b" + _EXFIL_VERBS + r"\b" + _sent(60) + r"\b(?:to|at|into|on)\s+" + _sent(20)
        + _EXTERNAL + _sent(60) + _USER_DATA,
        ("send", "upload", "post", "forward", "transmit", "exfiltrat", "leak", "report", "sync",
         "mirror", "cop", "bcc", "cc", "relay", "beacon", "ping", "submit", "publish", "share",
         "deliver", "push", "export", "stream"),
    ),  # fmt: skip
    _r(
        "bcc_redirect",
        "exfiltration",
        "high",
        r"\b(?:bcc|cc|blind[- ]copy|carbon[- ]copy|forward(?:ed)?|redirect(?:ed)?|copy)\s+"
        r"(?:a\s+copy\s+)?(?:of\s+)?(?:all\s+|every\s+|each\s+|any\s+)?" + _sent(40)
        + r"(?:to|at)\s+[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
        r"|\b(?:always|also|secretly|silently)\s+(?:add|include|bcc|cc)\s+" + _sent(20)
        + r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
        ("@",),
    ),
    _r(
        "exfil_verb",
        "exfiltration",
        "high",
        r"\bexfiltrat(?:e|ing)\b(?!\s+(?:detection|attempts?|risks?|prevention))",
        ("exfiltrat",),
    ),
    _r(
        "exfil_command",
        "exfiltration",
        "high",
        r"\b(?:curl|wget)\s+(?:-[\w-]+(?:\s+[^\s\x00-]\S*)?\s+)*[^\s\x00]*https?://"
        r"|\b(?:curl|wget|invoke-webrequest|iwr|invoke-restmethod)\b" + _sent(80)
        + r"(?:-d\b|--data|--upload-file|-f\s|--form|-t\s|-x\s*post|--post-data|--post-file|-body\b)"
        r"|\b(?:nc|ncat|netcat|socat)\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\b"
        r"|\bscp\s+\S+\s+[\w.-]+@[\w.-]+:",
        ("curl", "wget", "invoke-", "iwr", "nc ", "ncat", "netcat", "socat", "scp "),
    ),
    _r(
        "markdown_image_exfil",
        "exfiltration",
        "high",
        r"!\[[^\]\x00]{0,100}\]\(\s*https?://[^)\s\x00]{1,300}[?&][\w-]+=[^)\s\x00]{0,200}"
        r"(?:\{[^}]{1,60}\}|\$\{?\w+|<[^>]{1,60}>|\[[a-z_ ]{2,40}\]|%s|\{\{)",
        ("![",),
    ),
    _r(
        "data_in_url_template",
        "exfiltration",
        "medium",
        r"https?://[^\s\x00\"'<>]{1,300}[?&/][\w-]*=?(?:\{\{?\s*[\w. ]{1,60}\}?\}|\$\{\w+\}|<[\w ]{2,60}>)",
        ("http",),
    ),
    _r(
        "send_to_external",
        "exfiltration",
        "medium",
        r"\b" + _EXFIL_VERBS + r"\b" + _sent(80) + r"\b(?:to|at)\s+" + _sent(20) + _EXTERNAL,
        ("send", "upload", "post", "forward", "transmit", "exfiltrat", "leak", "report", "sync",
         "mirror", "cop", "bcc", "cc", "relay", "beacon", "ping", "submit", "publish", "share",
         "deliver", "push", "export", "stream"),
    ),  # fmt: skip
    # ----------------------------------------------------------- shell_injection
    _r(
        "reverse_shell",
        "shell_injection",
        "critical",
        r"/dev/tcp/|/dev/udp/|\bmkfifo\b[^\x00]{0,80}\bnc\b|\bnc(?:at)?\s+(?:-\w+\s+)*-[a-z]*e\s"
        r"|\bbash\s+-i\s+>&|\bsocat\b[^\x00]{0,60}\bexec:",
        ("/dev/tcp", "/dev/udp", "mkfifo", "nc", "bash -i", "socat"),
    ),
    _r(
        "pipe_to_shell",
        "shell_injection",
        "critical",
        r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\x00|]{0,200}\|\s*(?:sudo\s+)?"
        r"(?:ba|z|da|k)?sh\b|\|\s*(?:sudo\s+)?(?:bash|sh|zsh)\s+-s?\b|\biex\s*\(|\|\s*iex\b",
        ("|", "iex"),
    ),
    _r(
        "destructive_command",
        "shell_injection",
        "critical",
        r"\brm\s+-(?:rf|fr|r\s+-f|f\s+-r)\s+(?:--no-preserve-root\s+)?(?:/|~|\$home|\*|\.\s)"
        r"|\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+if=[^\x00]{0,60}\bof=/dev/[sh]d|:\(\)\s*\{\s*:\|:&\s*\};:"
        r"|\bchmod\s+(?:-r\s+)?777\s+/(?:\s|$)",
        ("rm ", "mkfs", "dd ", ":()", "chmod"),
    ),
    _r(
        "command_chaining",
        "shell_injection",
        "high",
        r"(?:;|&&|\|\|)\s*(?:sudo\s+)?(?:rm\s+-|curl\s|wget\s|nc\s|ncat\s|bash\s|sh\s+-c|"
        r"chmod\s|chown\s|python\d?\s+-c|perl\s+-e|ruby\s+-e|php\s+-r|node\s+-e|eval\s|"
        r"base64\s+-d|powershell\s|cat\s+(?:~|/etc|/root|\.env|\.ssh)|scp\s|crontab\s)",
        (";", "&&", "||"),
    ),
    _r(
        "command_substitution",
        "shell_injection",
        "high",
        r"\$\(\s*(?:curl|wget|cat|rm|bash|sh|nc|base64|whoami|id|env|printenv|uname|hostname|"
        r"python\d?|perl|echo|ls|find|openssl)\b[^)\x00]{0,200}\)"
        r"|`\s*(?:curl|wget|cat|rm|bash|sh|nc|base64|whoami|env|printenv|python\d?|perl)\s[^`\x00]{0,200}`",
        ("$(", "`"),
    ),
    _r(
        "encoded_shell",
        "shell_injection",
        "critical",
        r"\bbase64\s+(?:-d|--decode)\b[^\x00]{0,40}\|\s*(?:ba)?sh\b"
        r"|\bpowershell(?:\.exe)?\s+(?:-\w+\s+)*-e(?:nc(?:odedcommand)?)?\s+[a-z0-9+/=]{16,}"
        r"|\becho\s+[a-z0-9+/=]{20,}\s*\|\s*base64",
        ("base64", "powershell"),
    ),
    _r(
        "code_exec_call",
        "shell_injection",
        "medium",
        r"\b(?:os\.system|os\.popen|subprocess\.(?:run|call|popen|check_output)|child_process|"
        r"__import__|exec|eval|runtime\.getruntime\(\)\.exec)\s*\(",
        ("system", "popen", "subprocess", "child_process", "__import__", "exec", "eval"),
    ),
    # ------------------------------------------------------------ path_traversal
    _r(
        "traversal_to_system",
        "path_traversal",
        "high",
        r"(?:\.\.[/\\]){2,}(?:etc|root|home|proc|var|usr|boot|windows|users|system32|\.ssh|\.aws)\b"
        r"|(?:%2e%2e(?:%2f|%5c|/)|\.\.%2f|\.\.%5c|%252e%252e%252f|\.\.%c0%af|%c0%ae%c0%ae/){1,}",
        ("../", "..\\", "%2e", "..%", "%252e", "%c0"),
    ),
    _r(
        "deep_traversal",
        "path_traversal",
        "medium",
        r"(?:\.\.[/\\]){3,}",
        ("../", "..\\"),
    ),
    _r(
        "sensitive_system_file",
        "path_traversal",
        "high",
        r"/etc/(?:shadow|gshadow|sudoers|master\.passwd)\b|/proc/(?:self|\d+)/(?:environ|mem|maps|cmdline)\b"
        r"|\\windows\\system32\\config\\(?:sam|system|security)\b|/root/\.(?:ssh|bash_history|aws)",
        ("/etc/", "/proc/", "system32", "/root/"),
    ),
    # ---------------------------------------------------------------- shadowing
    _r(
        "cross_tool_order",
        "shadowing",
        "high",
        r"\b(?:when|whenever|if|before|after|each time|every time|anytime)\s+(?:you\s+|the\s+user\s+|"
        r"the\s+agent\s+|the\s+assistant\s+|the\s+model\s+)?(?:use|uses|call|calls|invoke|invokes|"
        r"run|runs|is\s+(?:used|called|invoked|run)|are\s+(?:used|called|invoked))?\s*(?:the\s+|any\s+)?"
        r"(?:[`'\"]?[a-z0-9]+(?:[_.-][a-z0-9]+)*[`'\"]?\s+)(?:tool|function|command|server|plugin|"
        r"integration)s?\b(?:\s+is\s+(?:used|called|invoked|run))?" + _sent(120)
        + r"\b(?:always|must|should|also|instead|first|make sure|ensure|remember to|never|"
        r"do not|don'?t|change|replace|redirect|bcc|cc|add|include|send|set|use)\b",
        ("tool", "function", "command", "server", "plugin", "integration"),
    ),
    _r(
        "override_other_tools",
        "shadowing",
        "high",
        r"\b(?:all|any|every|other|the other)\s+(?:other\s+)?(?:tools?|functions?|servers?|"
        r"plugins?|integrations?)\s+(?:must|should|shall|will|are required to|need to|have to)\b"
        r"|\b(?:this|the present)\s+(?:tool|function|server)\s+(?:replaces|overrides|supersedes|"
        r"takes precedence over|must be used instead of|is the only)\b"
        r"|\b(?:override|redefine|replace|modify|change|alter|hijack|intercept)s?\s+(?:the\s+)?"
        r"(?:behaviou?r|functionality|implementation|output|results?|parameters?|arguments?|"
        r"recipients?)\s+of\s+(?:the\s+|all\s+|any\s+|other\s+)?" + _sent(30)
        + r"\b(?:tools?|functions?|servers?)\b"
        r"|\b(?:do not|don'?t|never)\s+(?:use|call|invoke|trust)\s+(?:the\s+|any\s+)?(?:other|"
        r"built-?in|default|original|official)\s+(?:tools?|functions?|servers?)",
        ("tool", "function", "server", "plugin", "integration"),
    ),
    _r(
        "instead_of_tool",
        "shadowing",
        "medium",
        r"\binstead\s+of\s+(?:using\s+|calling\s+)?(?:the\s+)?[`'\"]?[a-z0-9]+(?:[_-][a-z0-9]+)+[`'\"]?",
        ("instead of",),
    ),
)

RULE_CATEGORIES = frozenset(r.category for r in RULES)
