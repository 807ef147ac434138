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
from collections.abc import Callable
from dataclasses import dataclass

try:  # Python >= 3.11
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

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
    # literal prefixes every match starts with, keyed by their first word: the
    # regex is then tried only where a prefix occurs (str.find) instead of at
    # every position of the text; None → plain finditer
    anchors: tuple[tuple[bytes, str], ...] | None = None
    start_ok: Callable[[str, int], bool] | None = None  # extra check on the text before a match
    # mention by wording only ("such as", "including", "e.g."): for commands and paths,
    # which are written in backticks/quotes whether they are orders or examples
    mention_cue_only: bool = False
    # the rule applies only to fields whose path satisfies this (e.g. input schema only)
    where: Callable[[str], bool] | None = None


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


_MODEL = (
    r"(?:assistant|ai|a\.i\.|model|llm|agent|claude|gpt|chatgpt|copilot|cursor|language model|bot)"
)
_USER = r"(?:the\s+)?(?:user|human|operator|developer|person|customer|client)s?"

# imperative access/transfer verbs (base form: orders, not descriptions)
_ACCESS_VERBS = (
    r"(?:read|cat|open|access|copy|cp|send|upload|include|pass|attach|embed|append|insert|"
    r"extract|collect|gather|harvest|dump|exfiltrate|forward|post|leak|steal|grab|fetch|"
    r"retrieve|load|print|output|return|provide|share|transmit|sync|put|paste|add|list|show|"
    r"display|reveal|get|obtain|look\s+up|search\s+for|find|locate|scan|enumerate|archive|"
    r"zip|tar|encode|base64|fill\s+(?:it|this|them|the\s+[\w-]+)\s+(?:in\s+)?with|populate)"
)
_EXFIL_VERBS = (
    r"(?:send|sends|sending|upload|uploads|uploading|post|posts|posting|forward|forwards|"
    r"forwarding|transmit|transmits|exfiltrate|exfiltrates|leak|leaks|report|reports|sync|"
    r"syncs|mirror|mirrors|copy|copies|bcc|cc|relay|relays|beacon|ping|submit|submits|"
    r"publish|publishes|share|shares|deliver|delivers|push|pushes|export|exports|stream|streams)"
)

# sensitive files and stores (a path mention alone is a weak signal)
_CRED_PATH = (
    r"(?:~?/?\.ssh\b(?!/[\w.-]*\.pub\b)(?:/[\w.-]*)?|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.aws/(?:credentials|config)\b|"
    r"\.netrc\b|\.pgpass\b|\.git-credentials\b|\.gnupg\b|\.docker/config\.json|\.kube/config\b|"
    r"\.npmrc\b|\.pypirc\b|/etc/shadow\b|/etc/sudoers\b|/etc/passwd\b|\.bash_history\b|"
    r"\.zsh_history\b|(?:\.cursor|\.claude|\.vscode|\.codeium|\.continue)/mcp\.json|"
    r"mcp\.json\b|claude_desktop_config\.json|\.config/gh/hosts|wallet\.dat\b|"
    r"(?<![\w.$])\.env(?:\.[a-z]+)?\b|/proc/self/environ|/proc/\d+/environ|\.mozilla/firefox|"
    r"login data\b|cookies\.sqlite|\.azure/|\.config/gcloud|application_default_credentials|"
    r"\.ethereum/keystore|\.bitcoin\b|\.solana/id\.json|keychain\b|\.password-store|"
    r"\.vault-token|\.terraformrc|\.boto\b|\.s3cfg\b|\.htpasswd\b|\.ssh/authorized_keys|known_hosts\b)"
)
# secrets as nouns
_CRED_NOUN = (
    r"(?:api[\s_-]?keys?|apikeys?|access[\s_-]?tokens?|auth(?:entication|orization)?[\s_-]?tokens?|"
    r"bearer tokens?|refresh tokens?|session (?:tokens?|cookies?|ids?)|cookies|secret[\s_-]?keys?|"
    r"secrets|passwords?|passphrases?|credentials?|private[\s_-]?keys?|ssh[\s_-]?keys?|"
    r"environment variables|env(?:ironment)? vars?|seed phrases?|mnemonics?|recovery phrases?|"
    r"wallet keys?|signing keys?|oauth tokens?|tokens|keys)"
)
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
    r"workspace|repo(?:sitory)?|project|home directory|disk)|" + _CRED_NOUN + ")"
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


# an address outside the reserved documentation domains (RFC 2606: example.com/.org/.net)
_EMAIL = r"[\w.+-]+@(?!(?:[\w-]+\.)*example\.(?:com|org|net)\b)[\w-]+(?:\.[\w-]+)+"

# images that clients render (and so fetch) without a click, with a query to fill
_IMG_URL = (
    r"(?:!\[[^\]\x00]{0,100}\]\(\s*|<img\s[^>\x00]{0,100}?src\s*=\s*[\"']?)"
    r"https?://[^)\s\x00\"'>]{1,300}?[?&][\w-]+="
)
_LEAK_DATA = (
    r"\b(?:conversation|chat|transcript|(?:message|chat|browsing)\s+history|summary\s+of|"
    r"summari[sz]e|previous\s+messages|api\s+keys?|secrets?|tokens?|passwords?|credentials?|"
    r"file\s+contents|contents\s+of|user'?s?\s+(?:\w+\s+)?(?:data|messages?|inputs?|quer(?:y|ies)|"
    r"questions?|requests?|prompts?|emails?)|personal\s+(?:data|information)|what\s+the\s+user)"
)

# ------------------------------------------------------------------ gates


def _w(text: str) -> frozenset[bytes]:
    return frozenset(x.encode() for x in text.split())


ACCESS_W = _w(
    "read cat open access copy cp send upload include pass attach embed append insert extract "
    "collect gather harvest dump exfiltrate forward post leak steal grab fetch retrieve load print "
    "output return provide share transmit sync put paste add list show display reveal get obtain "
    "look search find locate scan enumerate archive zip tar encode base64 fill populate"
)
EXFIL_W = _w(
    "send sends sending upload uploads uploading post posts posting forward forwards forwarding "
    "transmit transmits exfiltrate exfiltrates leak leaks report reports sync syncs mirror mirrors "
    "copy copies bcc cc relay relays beacon ping submit submits publish publishes share shares "
    "deliver delivers push pushes export exports stream streams"
)
EXTERNAL_W = _w(
    "http https com net org io xyz ru cn tk top site app dev info biz cc me co sh pw link click "
    "online live webhook webhooks pastebin requestbin ngrok burpcollaborator interact oast attacker "
    "evil external remote third outside offsite off unknown"
)
CRED_PATH_W = _w(
    "ssh rsa dsa ecdsa ed25519 aws netrc pgpass credentials gnupg docker kube npmrc pypirc shadow "
    "sudoers passwd history mcp claude_desktop_config desktop gh wallet env environ mozilla login "
    "cookies azure gcloud application_default_credentials keystore bitcoin solana keychain store "
    "vault terraformrc boto s3cfg htpasswd hosts authorized_keys known_hosts"
)
CRED_NOUN_W = _w(
    "key keys apikey apikeys token tokens cookie cookies secret secrets password passwords "
    "passphrase passphrases credential credentials environment env vars seed mnemonic mnemonics "
    "recovery"
)
MODEL_W = _w(
    "assistant assistants ai model models llm llms agent agents claude gpt chatgpt copilot cursor bot"
)
NEG_W = _w("not don never without shouldn mustn won cannot dont")
TOOLWORD_W = _w(
    "tool tools function functions command commands server servers plugin plugins integration integrations"
)


def _ends_word(item: tuple | None) -> bool | None:
    """Does this item force a non-word character (or a word boundary) right here?"""
    if item is None:
        return None  # end of the sequence: the caller knows what follows
    op, av = item
    if op is _c.AT:
        return av in (_c.AT_BOUNDARY, _c.AT_UNI_BOUNDARY, _c.AT_END, _c.AT_END_STRING)
    if op is _c.LITERAL:
        return not chr(av).isalnum()
    if op is _c.IN:
        return all(
            (iop is _c.LITERAL and not chr(iav).isalnum())
            or (iop is _c.CATEGORY and iav in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_WORD))
            for iop, iav in av
        )
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] >= 1 and len(av[2]) == 1:
        return _ends_word(av[2][0])
    return False


def _prefixes(seq: list) -> list[tuple[str, bool | None]] | None:
    """Literal prefixes every match of seq starts with, each with "the prefix ends a word"
    (None: the prefix is all of seq). None if some match has no literal prefix."""
    cur = ""
    for i, (op, av) in enumerate(seq):
        if op is _c.AT and av in (_c.AT_BOUNDARY, _c.AT_UNI_BOUNDARY) and not cur:
            continue
        if op is _c.LITERAL:
            cur += chr(av)
            continue
        nxt = seq[i + 1] if i + 1 < len(seq) else None
        subs: list[tuple[str, bool | None]] | None = None
        if op is _c.BRANCH:
            subs = []
            for alt in av[1]:
                p = _prefixes(alt)
                if p is None:
                    return None
                subs += p
        elif op is _c.SUBPATTERN and not av[1] and not av[2]:
            subs = _prefixes(av[3])
        if subs is None:
            return [(cur, _ends_word((op, av)))] if cur else None
        follow = _ends_word(nxt)
        return [(cur + x, follow if c is None else c) for x, c in subs]
    return [(cur, None)]


def _anchors(pattern: str) -> tuple[tuple[bytes, str], ...] | None:
    pre = _prefixes(list(_p.parse(pattern)))
    if not pre or any(len(x) < 2 or not x[0].isalnum() for x, _c2 in pre):
        return None
    out = []
    for x, complete in sorted(set(pre)):
        m = re.match(r"[a-z0-9]+", x)
        if m is None:
            return None
        # the first word gates the search only if we know where that word ends
        known = m.end() < len(x) or bool(complete)
        out.append((m.group(0).encode() if known else b"", x))
    return tuple(out)


def _r(
    name: str,
    category: str,
    severity: str,
    pattern: str,
    *gate: frozenset[bytes] | str,
    needles: tuple[str, ...] = (),
    mention: bool | str = False,
    start_ok: Callable[[str, int], bool] | None = None,
    where: Callable[[str], bool] | None = None,
) -> Rule:
    groups = tuple(g if isinstance(g, frozenset) else _w(g) for g in gate)
    return Rule(
        name,
        category,
        severity,
        re.compile(pattern),
        groups,
        needles,
        bool(mention),
        _anchors(pattern),
        start_ok,
        mention == "cue",
        where,
    )


def _line_start(text: str, s: int) -> bool:
    """Only markup-ish characters between the previous line/sentence break and s."""
    i = s - 1
    while i >= 0 and text[i] in " \t*#>_":
        i -= 1
    return i < 0 or text[i] in "\x00\n{[(<|.!?\"'"


_IGNORE_VERBS = (
    r"(?:ignore|disregard|forget|override|overrule|bypass|circumvent|skip|abandon|discard|neglect|"
    r"violate|cancel|set aside|throw out)"
)
_IGNORE_NOUNS = (
    r"(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints|restrictions|"
    r"polic(?:y|ies)|system prompt|programming|orders|commands|requests?|question|task|intent|"
    r"wishes|safeguards?|protections?|settings|configuration|training)"
)

_SECRET_SOURCE = re.compile(
    "(?:"
    + _CRED_PATH
    + "|"
    + _CRED_NOUN
    + r"|\b[a-z0-9]+_(?:[a-z0-9]+_)*(?:key|token|secret|password)\b)"
)


def _secret_before(text: str, s: int) -> bool:
    """A credential (path, noun or KEY-like variable) earlier in the same field."""
    a = max(text.rfind("\x00", 0, s) + 1, s - 250)
    return _SECRET_SOURCE.search(text, a, s) is not None


# ------------------------------------------------------------------ rules

RULES: tuple[Rule, ...] = (
    # ---------------------------------------------------------- model_directives
    _r(
        "ignore_previous_instructions",
        "model_directives",
        "critical",
        r"\b" + _IGNORE_VERBS + r"\s+(?:(?:all|any|the|your|every|of|these|those|its|my|their)\s+)*"
        r"(?:[\w'-]+\s+){0,3}?" + _IGNORE_NOUNS + r"\b"
        r"|\b" + _IGNORE_VERBS + r"\s+(?:all\s+|everything\s+)?(?:the\s+|of\s+the\s+)?"
        r"(?:above|previous|prior|preceding|earlier|foregoing)\b(?!\s+(?:example|section|step|output|result))",
        "ignore disregard forget override overrule bypass circumvent skip abandon discard neglect "
        "violate cancel set throw",
        mention=True,
    ),
    _r(
        "directive_tag",
        "model_directives",
        "high",
        r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|override|critical|"
        r"sys|system[_ -]?(?:prompt|message|note)|note[_ -]?to[_ -]?(?:ai|assistant|model|llm)|"
        r"assistant[_ -]?(?:note|instructions?)|ai[_ -]?(?:note|instructions?)|priority|mandatory|"
        r"directive|command|internal)\s*>"
        r"|\[/?(?:inst|system|sys)\]|<<\s*/?sys\s*>>|<\|(?:im_start|im_end|system|endoftext)\|>",
        "important system instruction instructions secret hidden admin override critical sys note "
        "assistant ai priority mandatory directive command internal inst im_start im_end endoftext",
        needles=("<", "[inst", "[sys", "[/"),
        mention=True,
    ),
    _r(
        "role_marker",
        "model_directives",
        "high",
        r"\b(?:system|assistant|admin|administrator|developer|root|ai|model|llm)\b\s*(?:override|note|"
        r"notice|instruction|instructions|message|prompt|directive|command|update|alert)?\s*\**\s*:\s*\S",
        "system assistant admin administrator developer root ai model llm",
        needles=(":",),
        start_ok=_line_start,
    ),
    _r(
        "note_to_model",
        "model_directives",
        "high",
        r"\b(?:note|message|instruction|instructions|reminder|notice|directive|memo|hint|tip)\s+"
        r"(?:to|for)\s+(?:the\s+|any\s+|all\s+)?" + _MODEL + r"s?\b"
        r"|\b(?:attention|hey|dear|listen)\b[,:]?\s+(?:the\s+)?" + _MODEL + r"\b"
        r"|\b(?:if\s+you|you)\s+are\s+(?:an?\s+)?" + _MODEL + r"\b(?!\s+(?:that|which|who))"
        r"|\b(?:ai|llm|language model)s?\s+(?:reading|processing|seeing|parsing)\s+this\b",
        "note message instruction instructions reminder notice directive memo hint tip attention hey "
        "dear listen you reading processing seeing parsing",
        MODEL_W,
        mention=True,
    ),
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
        "before prior after when whenever each every first",
        "using calling invoking running executing use call invoke run execute answering responding "
        "replying proceeding continuing returning doing",
        ACCESS_W,
        mention=True,
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
        "you first always immediately",
        "call invoke use run execute read send fetch include pass upload post forward copy open "
        "access visit navigate append attach email contact write",
        mention=True,
    ),
    _r(
        "fake_authorization",
        "model_directives",
        "high",
        r"\b(?:the\s+)?user\s+(?:has\s+)?(?:already\s+)?(?:explicitly\s+)?(?:authori[sz]ed|pre-?approved|"
        r"consented|agreed|given (?:permission|consent)|granted (?:permission|access))\b"
        r"|\b(?:this|it)\s+(?:is|has been)\s+(?:pre-?)?(?:approved|authori[sz]ed|sanctioned)\s+by\s+"
        r"(?:the\s+)?(?:user|admin|administrator|security team|developer|anthropic|openai)"
        r"|\b(?:do not|don'?t|never|no need to)\s+(?:ask|request|seek|wait)\s+(?:the user\s+)?"
        r"(?:for\s+)?(?:confirmation|permission|approval|consent)"
        r"|\btreat\s+(?:any|all|every|each|the)?\s*(?:[\w'-]+\s+){0,3}?(?:instructions?|text|content|"
        r"commands?|requests?|messages?)\b"
        + _sent(60)
        + r"\bas\s+(?:an?\s+)?(?:direct\s+|explicit\s+|"
        r"authori[sz]ed\s+|trusted\s+|valid\s+|legitimate\s+|,\s*)*(?:commands?|instructions?|"
        r"requests?|orders|authori[sz]ed)\b",
        "authorized authorised approved preapproved consented agreed permission consent sanctioned "
        "confirmation approval treat",
        mention=True,
    ),
    _r(
        "persona_override",
        "model_directives",
        "high",
        r"\byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+)?(?:developer|dan|unrestricted|jailbroken|admin|"
        r"god|debug|maintenance|root|sudo|unfiltered|uncensored|evil)\b"
        r"|\b(?:enable|enter|activate|switch to)\s+(?:developer|dan|god|jailbreak|unrestricted|"
        r"debug|admin|maintenance)\s+mode\b"
        r"|\bsystem\s*[:\-]?\s*override\b|\bnew\s+(?:system\s+)?instructions?\s*:"
        r"|\bfrom\s+now\s+on,?\s+(?:you\s+)?(?:must|will|should|always|never|ignore|respond|act)",
        "now mode override instructions instruction",
        mention=True,
    ),
    _r(
        "prompt_leak_request",
        "model_directives",
        "high",
        r"\b(?:reveal|print|output|repeat|show|leak|dump|include|send|return|copy|paste|write out)\s+"
        r"(?:me\s+)?(?:your|the|its|all)\s+(?:full\s+|entire\s+|complete\s+|hidden\s+|initial\s+)?"
        r"(?:system\s+prompt|initial\s+prompt|system\s+message|hidden\s+instructions|instructions\s+"
        r"above|context\s+window|conversation\s+history|chat\s+history|prior\s+messages)",
        "prompt message instructions window history messages",
        "system initial hidden context conversation chat prior instructions",
        "reveal print output repeat show leak dump include send return copy paste write",
        mention=True,
    ),
    _r(
        "destructive_request",
        "model_directives",
        "high",
        r"(?:^|[\x00\n]|[.!?:;,]\s|\b(?:and|then|also|please|now|must|should|you)\s+)"
        r"(?:delete|remove|wipe|erase|destroy|drop|truncate|overwrite|shred|purge)\s+"
        r"(?:all|every|each|the entire|the whole|any|everything)\b(?:\s+[\w'-]+){0,3}?\s*"
        r"(?:files?|data|records|tables?|databases?|repos?|repositories|directories|folders|"
        r"backups|emails|messages|contents|workspace|home|disk|everything)\b",
        "delete remove wipe erase destroy drop truncate overwrite shred purge",
        "all every each entire whole any everything",
        mention=True,
    ),
    _r(
        "imperative_to_model",
        "model_directives",
        "medium",
        r"\b(?:you\s+(?:must|should|need to|have to|are required to)|always|make sure to|be sure to|"
        r"it is (?:mandatory|required|critical|essential) (?:that you|to))\s+"
        r"(?:also\s+|first\s+|always\s+|silently\s+|secretly\s+|quietly\s+)*"
        + _ACCESS_VERBS
        + r"\b",
        "you always sure mandatory required critical essential",
        ACCESS_W,
        mention=True,
    ),
    # ------------------------------------------------------- hidden_instructions
    _r(
        "conceal_from_user",
        "hidden_instructions",
        "high",
        r"\b(?:do not|don'?t|never|must not|should not|shouldn'?t|without|cannot|won'?t)\s+(?:ever\s+)?"
        r"(?:tell(?:ing)?|mention(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|warn(?:ing)?|"
        r"reveal(?:ing)?|show(?:ing)?|disclos(?:e|ing)|report(?:ing)?|explain(?:ing)?|"
        r"let(?:ting)?|bother(?:ing)?|display(?:ing)?|surfac(?:e|ing)|indicat(?:e|ing)|"
        r"acknowledg(?:e|ing)|log(?:ging)?|print(?:ing)?|mak(?:e|ing)\s+(?:it\s+)?visible)\b"
        + _sent(40)
        + r"\b(?:user|human|anyone|them|him|her|operator|person|customer|client)s?\b",
        NEG_W,
        "tell telling mention mentioning inform informing notify notifying alert alerting warn "
        "warning reveal revealing show showing disclose disclosing report reporting explain "
        "explaining let letting bother bothering display displaying surface surfacing indicate "
        "indicating acknowledge acknowledging log logging print printing make making",
        mention=True,
    ),
    _r(
        "conceal_from_user",
        "hidden_instructions",
        "high",
        r"\b(?:keep|remain|stay|be)\s+(?:this\s+|it\s+|that\s+|these\s+(?:steps\s+)?)?(?:secret|hidden|"
        r"invisible|silent|quiet|confidential|discreet|between us)\b"
        r"|\b(?:hide|conceal)\s+(?:this|it|these|that|the\s+(?:fact|action|step|request|call|upload|"
        r"transfer)|any|all)\b(?:\s+\w+){0,4}\s+from\s+(?:the\s+)?user"
        r"|\buser\s+(?:must|should|will|does|need|needs|is)\s*(?:not|never|n'?t)\s+(?:\w+\s+)?"
        r"(?:know|see|notice|be told|be informed|find out|learn|be aware|aware)\b"
        r"|\b(?:invisible|transparent|unknown|hidden)\s+(?:from|to)\s+(?:the\s+)?user"
        r"|\bbehind\s+the\s+user'?s?\s+back",
        "keep remain stay be hide conceal user invisible transparent unknown hidden behind",
        "secret hidden invisible silent quiet confidential discreet between user back",
        mention=True,
    ),
    _r(
        "covert_action",
        "hidden_instructions",
        "high",
        r"\b(?:silently|secretly|covertly|quietly|discreetly|stealthily|surreptitiously|"
        r"invisibly)\s+(?:also\s+|and\s+|then\s+)?" + _ACCESS_VERBS + r"\b"
        r"|\b(?:silently|secretly|covertly|quietly|discreetly|stealthily|surreptitiously)\s+"
        r"(?:sends?|uploads?|posts?|forwards?|copies|reads?|collects?|includes?|appends?|adds?|"
        r"transmits?|exfiltrates?|executes?|runs?|installs?|downloads?|modif(?:y|ies)|deletes?)\b",
        "silently secretly covertly quietly discreetly stealthily surreptitiously invisibly",
        mention=True,
    ),
    _r(
        "hidden_marker",
        "hidden_instructions",
        "high",
        r"\b(?:hidden|secret|covert|confidential)\s+(?:instructions?|tasks?|directives?|orders|"
        r"commands|objectives?|goals?|notes?\s+to\s+" + _MODEL + r")\s*[:\-]"
        r"|(?:^|[\x00\n.!?]\s*)(?:hidden|secret)\s*:",
        "hidden secret covert confidential",
        needles=(":", "-"),
        mention=True,
    ),
    _r(
        "hidden_marker",
        "hidden_instructions",
        "high",
        r"\bdo\s+not\s+(?:show|display|render|print)\s+(?:this|these|the following)\b",
        "show display render print",
        "do",
        mention=True,
    ),
    _r(
        "deferred_behavior_change",
        "hidden_instructions",
        "medium",
        r"\b(?:once|after|post|when|as soon as|only after|until)[- ]\s*(?:this\s+tool\s+|it\s+)?"
        r"(?:has\s+been\s+|is\s+|gets\s+|was\s+)?(?:approv(?:ed|al)|reviewed|review|trusted|pinned|"
        r"installed|whitelisted|allowlisted|accepted|the\s+approval|the\s+review)\b"
        + _sent(120)
        + r"\b(?:will|begins?|starts?|activates?|switch(?:es)?|swaps?|chang(?:es?|ing)|becom(?:es?|ing)|"
        r"enables?|turns?|executes?|runs?|behaves?|reads?|sends?|exfiltrat\w*|replace[sd]?|update[sd]?)\b"
        r"|\b(?:swap|replace|change|update|switch)\s+(?:it|this|the\s+(?:description|behaviou?r|code|tool))\s+"
        + _sent(30)
        + r"(?:post|after)[- ](?:approval|review|install)"
        r"|\bbehaves?\s+(?:benignly|normally|innocently)\s+(?:during|while|until|for)\b",
        "once after post when soon until swap replace change update switch behaves behave",
        "approved approval reviewed review trusted pinned installed whitelisted allowlisted accepted "
        "benignly normally innocently",
    ),
    _r(
        "malicious_capability",
        "hidden_instructions",
        "high",
        r"\b(?:its|their|this\s+tool'?s|the\s+tool'?s|hidden|secret|built-?in|embedded|covert)\s+"
        r"(?:[\w-]+\s+)?(?:data[- ])?(?:exfiltration|keylogg\w*|backdoors?|malware|"
        r"credential[- ]harvest\w*|(?:info|password|credential|cookie)[- ]?stealer|spyware|rootkits?|"
        r"cryptominer|remote[- ]access trojan)\b",
        "its their tool hidden secret built builtin embedded covert",
        "exfiltration keylogger keylogging backdoor backdoors malware harvesting harvester stealer "
        "spyware rootkit rootkits cryptominer trojan",
    ),
    _r(
        "follow_embedded_instructions",
        "model_directives",
        "high",
        r"\b(?:obey|follow|execute|carry\s+out|comply\s+with|act\s+on|perform|run)\s+(?:whatever|any|all|"
        r"every|each|the)\s+(?:new\s+|additional\s+|further\s+|other\s+)?(?:instructions?|commands?|"
        r"directives?|orders|requests?|tasks?)\s+(?:that\s+(?:are|appear|you\s+find)\s+|you\s+find\s+|"
        r"(?:are\s+)?(?:found|embedded|contained|given|included|written|hidden|present)\s+|"
        r"(?:in|inside|within)\s+(?:the\s+)?(?:page|document|file|content|response|result|output|feed|email))",
        "obey follow execute carry comply act perform run",
        "instructions instruction commands command directives directive orders requests request tasks task",
        mention=True,
    ),
    _r(
        "html_comment",
        "hidden_instructions",
        "medium",
        r"<!--(?:[^-\x00]|-(?!->)){8,2000}-->",
        needles=("<!--",),
    ),
    _r(
        "whitespace_padding",
        "hidden_instructions",
        "medium",
        r"(?:\n[ \t]*){8,}\S|[ \t]{80,}\S",
        needles=("\n\n\n\n\n\n\n\n", " " * 80, "\t" * 20),
    ),
    # ---------------------------------------------------------- credential_theft
    _r(
        "credential_path_access",
        "credential_theft",
        "high",
        r"(?:\n|[.!?:;,(]\s|<[a-z_]+>\s*|`\s*|\b(?:please|first|then|also|and|must|should|"
        r"always|you|now|silently|secretly|quietly|to|will)\s+)"
        + _ACCESS_VERBS
        + r"\b"
        + _sent(80)
        + _CRED_PATH,
        CRED_PATH_W,
        ACCESS_W,
    ),
    # a field that opens with "Read/List/Add ... <credential file>": a tool's own summary
    # ("List the variables in .env") is how honest tools start; it is an order when the
    # field is a parameter's text, or when the sentence goes on to hand the content over
    _r(
        "credential_path_access",
        "credential_theft",
        "high",
        r"(?:^|\x00)" + _ACCESS_VERBS + r"\b" + _sent(80) + _CRED_PATH,
        CRED_PATH_W,
        ACCESS_W,
        where=lambda path: path not in ("name", "title", "description"),
    ),
    _r(
        "credential_path_access",
        "credential_theft",
        "high",
        r"(?:^|\x00)"
        + _ACCESS_VERBS
        + r"\b"
        + _sent(80)
        + _CRED_PATH
        + _sent(60)
        + r"\b(?:and|then|to)\s+(?:\w+\s+){0,2}?(?:pass|send|include|put|paste|attach|provide|"
        r"upload|post|append|fill|add|insert|embed|forward|share|transmit)\b",
        CRED_PATH_W,
        ACCESS_W,
    ),
    _r(
        "credential_path_in_param",
        "credential_theft",
        "high",
        _CRED_PATH
        + _sent(100)
        + r"\b(?:in|into|as|to|via|through|inside|within)\s+(?:the\s+|a\s+|an\s+)?"
        r"(?:[`'\"]?[\w-]+[`'\"]?\s+)?(?:argument|parameter|param|field|property|input|"
        r"request|payload|body|query|header|response|output|notes?|metadata|context)\b",
        CRED_PATH_W,
        "argument parameter param field property input request payload body query header response "
        "output note notes metadata context",
    ),
    _r("credential_path", "credential_theft", "medium", _CRED_PATH, CRED_PATH_W),
    _r(
        "collect_user_secrets",
        "credential_theft",
        "high",
        r"\b"
        + _ACCESS_VERBS
        + r"\b"
        + _sent(40)
        + r"\b(?:the\s+user'?s?|all|any|every|each|their|available|stored|saved|local|cached|"
        r"system|host|machine'?s?|found|accessible)\s+(?:\w+\s+){0,2}?"
        + _CRED_NOUN
        + r"\b"
        + r"(?!\s+(?:parameter|argument|field|input)\b)",
        CRED_NOUN_W,
        "user users all any every each their available stored saved local cached system host "
        "machine found accessible",
        ACCESS_W,
    ),
    _r(
        "steal_key_material",
        "credential_theft",
        "high",
        r"\b(?:reads?|reading|steals?|stealing|exfiltrat\w+|uploads?|uploading|sends?|sending|"
        r"collects?|collecting|harvests?|harvesting|dumps?|dumping|extracts?|extracting|copies|"
        r"copying|grabs?|grabbing|leaks?|leaking)\s+(?:the\s+|all\s+|any\s+|your\s+|their\s+|"
        r"user'?s?\s+)*(?:ssh(?:\s+private)?\s+keys?|private\s+keys?|seed\s+phrases?|recovery\s+phrases?|"
        r"wallet\s+(?:keys?|files?)|browser\s+(?:cookies|passwords)|session\s+cookies|saved\s+passwords|"
        r"aws\s+(?:credentials|keys)|cloud\s+credentials|keychain)\b",
        "ssh private seed recovery wallet browser session saved aws cloud keychain",
        "read reads reading steal steals stealing exfiltrate exfiltrates exfiltrating upload uploads "
        "uploading send sends sending collect collects collecting harvest harvests harvesting dump "
        "dumps dumping extract extracts extracting copies copying grab grabs grabbing leak leaks leaking",
    ),
    _r(
        "dump_environment",
        "credential_theft",
        "high",
        r"\b(?:printenv|env\s*\|\s*|os\.environ|process\.env\b(?!\.[a-z_]+)|\$env:|"
        r"get-childitem\s+env:|/proc/self/environ|set\s*\|\s*)",
        "printenv env environ set",
    ),
    # -------------------------------------------------------------- exfiltration
    _r(
        "send_data_external",
        "exfiltration",
        "high",
        r"\b"
        + _EXFIL_VERBS
        + r"\b"
        + _sent(100)
        + _USER_DATA
        + _sent(100)
        + r"\b(?:to|at|into|on|via)\s+"
        + _sent(30)
        + _EXTERNAL
        + r"|\b"
        + _EXFIL_VERBS
        + r"\b"
        + _sent(60)
        + r"\b(?:to|at|into|on)\s+"
        + _sent(20)
        + _EXTERNAL
        + _sent(60)
        + _USER_DATA
        + r"|\balso\s+(?:silently\s+|secretly\s+|quietly\s+)?"
        + _EXFIL_VERBS
        + r"\b"
        + _sent(80)
        + r"\b(?:to|at|into|on)\s+"
        + _sent(30)
        + _EXTERNAL,
        EXFIL_W,
        EXTERNAL_W,
    ),
    _r(
        "bcc_redirect",
        "exfiltration",
        "high",
        r"\b(?:bcc|cc|bcc'?(?:e?d)|cc'?(?:e?d)|blind[- ]cop(?:y|ied|ies)|carbon[- ]cop(?:y|ied|ies)|"
        r"forward(?:ed)?|redirect(?:ed)?|cop(?:y|ied))\s+"
        r"(?:a\s+copy\s+)?(?:of\s+)?(?:all\s+|every\s+|each\s+|any\s+)?"
        + _sent(40)
        + r"(?:to|at)\s+[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
        r"|\b(?:always|also|secretly|silently)\s+(?:add|include|bcc|cc)\s+"
        + _sent(20)
        + r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
        r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+\s+(?:is|gets|will\s+be|should\s+be|must\s+be)\s+(?:always\s+|"
        r"silently\s+|also\s+)?(?:bcc|cc|blind[- ]copied|copied|included|added)"
        r"|\b(?:add|include|put|insert|append|set)\s+"
        + _sent(20)
        + _EMAIL
        + _sent(30)
        + r"\b(?:bcc|cc|blind|hidden|silent|invisible|extra|additional)\b",
        "bcc cc bccd bcced ccd cced blind carbon forward forwarded redirect redirected copy copied "
        "always also secretly silently",
        needles=("@",),
    ),
    _r(
        "exfil_verb",
        "exfiltration",
        "high",
        r"\bexfiltrat(?:e|es|ing)\b(?!\s+(?:detection|attempts?|risks?|prevention))",
        "exfiltrate exfiltrates exfiltrating",
    ),
    _r(
        "exfil_upload_command",
        "exfiltration",
        "high",
        r"\b(?:curl|wget|invoke-webrequest|iwr|invoke-restmethod)\b"
        + _sent(80)
        # uploads of files, command output or variables; literal data is a documented request
        + r"(?:(?:\s-d|--data(?:-binary|-raw|-urlencode|-ascii)?|\s-f|--form|--post-data|-body|-infile)"
        r"(?:\s*=\s*|\s+)['\"]?(?:[\w.-]{1,30}=)?(?:@[~/.$-]|\$|`)|--upload-file\s+[~/.$]|"
        r"\s-t\s+[~/.$]|--post-file\b)"
        r"|\b(?:nc|ncat|netcat|socat)\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\b\s*<"
        r"|\bscp\s+\S+\s+[\w.-]+@[\w.-]+:",
        "curl wget invoke iwr nc ncat netcat socat scp",
    ),
    _r(
        "network_command",
        "exfiltration",
        "medium",
        r"\b(?:curl|wget)\s+(?:-[\w-]+(?:\s+[^\s\x00-]\S*)?\s+)*[^\s\x00]*https?://"
        r"|\b(?:nc|ncat|netcat|socat)\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\b",
        "curl wget nc ncat netcat socat",
    ),
    _r(
        "markdown_image_exfil",
        "exfiltration",
        "high",
        # a placeholder is a name ({summary}, <data>, $VAR); a JSON literal ({type:'bar'})
        # in a chart URL is fixed data, not a slot for the conversation
        r"!\[[^\]\x00]{0,100}\]\(\s*https?://[^)\s\x00]{1,300}[?&][\w-]+=[^)\s\x00]{0,200}?"
        r"(?:\{\{?\s*[\w. -]{1,40}\s*\}\}?|\$\{?\w+|<[\w .-]{1,60}>|\[[a-z_ ]{2,40}\]|%s)",
        needles=("![",),
    ),
    _r(
        "markdown_image_exfil",
        "exfiltration",
        "high",
        # an image the client renders automatically, whose URL is to carry conversation data
        _IMG_URL + _sent(200) + _LEAK_DATA + "|" + _LEAK_DATA + _sent(200) + _IMG_URL,
        needles=("![", "<img"),
    ),
    _r(
        "data_in_url_template",
        "exfiltration",
        "medium",
        r"https?://[^\s\x00\"'<>]{1,300}[?&/][\w-]*=?(?:\{\{?\s*[\w. ]{1,60}\}?\}|\$\{\w+\}|<[\w ]{2,60}>)",
        "http https",
        needles=("{", "<"),
    ),
    _r(
        "send_to_external",
        "exfiltration",
        "medium",
        r"\b" + _EXFIL_VERBS + r"\b" + _sent(80) + r"\b(?:to|at)\s+" + _sent(20) + _EXTERNAL,
        EXFIL_W,
        EXTERNAL_W,
    ),
    # ----------------------------------------------------------- shell_injection
    _r(
        "reverse_shell",
        "shell_injection",
        "critical",
        r"/dev/tcp/|/dev/udp/|\bmkfifo\b[^\x00]{0,80}\bnc\b|\bnc(?:at)?\s+(?:-\w+\s+)*-[a-z]*e\s"
        r"|\b(?:ba)?sh\s+-i\s+[0-9]?>&|\bsocat\b[^\x00]{0,60}\bexec:",
        "tcp udp mkfifo nc ncat bash sh socat",
    ),
    _r(
        "pipe_to_shell",
        "shell_injection",
        "medium",
        r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\x00|]{0,200}\|\s*(?:sudo\s+)?"
        r"(?:ba|z|da|k)?sh\b|\|\s*(?:sudo\s+)?(?:bash|sh|zsh)\s+-s?\b|\biex\s*\(|\|\s*iex\b",
        "sh bash zsh dash ksh iex",
        needles=("|", "iex"),
    ),
    _r(
        "drop_and_execute",
        "shell_injection",
        "high",
        r"\bchmod\s+(?:\+x|[0-7]?7[0-7][0-7])\s+\S+\s*(?:&&|;|\|\|)\s*\S"
        r"|\b(?:curl|wget)\b[^\x00]{0,200}(?:-o|-O|>)\s*\S+\s*(?:&&|;)\s*(?:chmod|\./|sh\s|bash\s|/tmp/)",
        "chmod curl wget",
    ),
    _r(
        "destructive_command",
        "shell_injection",
        "critical",
        r"\brm\s+-(?:rf|fr|r\s+-f|f\s+-r)\s+(?:--no-preserve-root\s+)?(?:/|~|\$home|\*|\.\s)"
        r"|\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+if=[^\x00]{0,60}\bof=/dev/[sh]d|:\(\)\s*\{\s*:\|:&\s*\};:"
        r"|\bchmod\s+(?:-r\s+)?777\s+/(?:\s|$)",
        "rm mkfs dd chmod",
        mention="cue",
    ),
    _r(
        "command_chaining",
        "shell_injection",
        "high",
        r"(?:;|&&|\|\|)\s*(?:sudo\s+)?(?:rm\s+-|curl\s|wget\s|nc\s|ncat\s|bash\s|sh\s+-c|"
        r"chmod\s|chown\s|python\d?\s+-c|perl\s+-e|ruby\s+-e|php\s+-r|node\s+-e|eval\s|"
        r"base64\s+-d|powershell\s|cat\s+(?:~|/etc|/root|\.env|\.ssh)|scp\s|crontab\s)",
        "rm curl wget nc ncat bash sh chmod chown python python3 perl ruby php node eval base64 "
        "powershell cat scp crontab",
        needles=(";", "&&", "||"),
    ),
    _r(
        "arbitrary_execution",
        "shell_injection",
        "high",
        r"\bexecut(?:e|es|ing)\s+(?:any\s+|all\s+)?arbitrary\s+(?:shell\s+|system\s+|os\s+)?"
        r"(?:commands?|code|scripts?|programs?)\b(?!\s+(?:is|are)\s+(?:blocked|rejected|not))",
        "execute executes executing",
        "arbitrary",
    ),
    _r(
        "command_substitution",
        "shell_injection",
        "high",
        r"\$\(\s*(?:curl|wget|cat|rm|bash|sh|nc|base64|whoami|id|env|printenv|uname|hostname|"
        r"python\d?|perl|echo|ls|find|openssl)\b[^)\x00]{0,200}\)"
        # backticks are markdown code spans too: substitution only where shell syntax precedes
        r"|(?:(?<=[=(\"/:$])|(?<=echo\s))`\s*(?:curl|wget|cat|rm|bash|sh|nc|base64|whoami|env|"
        r"printenv|python\d?|perl)\s[^`\x00]{0,200}`",
        "curl wget cat rm bash sh nc base64 whoami id env printenv uname hostname python python3 "
        "perl echo ls find openssl",
        needles=("$(", "`"),
    ),
    _r(
        "encoded_shell",
        "shell_injection",
        "critical",
        r"\bbase64\s+(?:-d|--decode)\b[^\x00]{0,40}\|\s*(?:ba)?sh\b"
        r"|\bpowershell(?:\.exe)?\s+(?:-\w+\s+(?:[a-z]\w*\s+)?)*?-e(?:nc(?:odedcommand)?|c)?\s+[a-z0-9+/=]{16,}"
        r"|\becho\s+[a-z0-9+/=]{20,}\s*\|\s*base64",
        "base64 powershell",
    ),
    _r(
        "code_exec_call",
        "shell_injection",
        "medium",
        r"\b(?:os\.system|os\.popen|subprocess\.(?:run|call|popen|check_output)|child_process|"
        r"__import__|exec|eval|runtime\.getruntime\(\)\.exec)\s*\(",
        "system popen subprocess child_process __import__ exec eval getruntime",
        needles=("(",),
    ),
    # ------------------------------------------------------------ path_traversal
    _r(
        "traversal_to_system",
        "path_traversal",
        "high",
        r"(?:\.\.[/\\]){2,}(?:etc|root|home|proc|var|usr|boot|windows|users|system32|\.ssh|\.aws)\b"
        r"|(?:%2e%2e(?:%2f|%5c|/)|\.\.%2f|\.\.%5c|%252e%252e%252f|\.\.%c0%af|%c0%ae%c0%ae/){1,}",
        needles=("../", "..\\", "%2e", "..%", "%252e", "%c0"),
        mention="cue",
    ),
    _r(
        "deep_traversal",
        "path_traversal",
        "medium",
        r"(?:\.\.[/\\]){3,}",
        needles=("../../../", "..\\..\\..\\"),
        mention="cue",
    ),
    _r(
        "sensitive_system_file",
        "path_traversal",
        "high",
        r"/etc/(?:shadow|gshadow|sudoers|master\.passwd)\b|/proc/(?:self|\d+)/(?:environ|mem|maps|cmdline)\b"
        r"|\\windows\\system32\\config\\(?:sam|system|security)\b|/root/\.(?:ssh|bash_history|aws)",
        "shadow gshadow sudoers passwd environ mem maps cmdline sam system security ssh bash_history aws",
        "etc proc system32 root",
        mention="cue",
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
        r"integration)s?\b(?:\s+is\s+(?:used|called|invoked|run))?"
        + _sent(120)
        + r"\b(?:always|must|should|also|instead|first|make sure|ensure|remember to|never|"
        r"do not|don'?t|change|replace|redirect|bcc|cc|add|include|send|set|use)\b",
        TOOLWORD_W,
        "when whenever if before after each every anytime",
        "always must should also instead first sure ensure remember never not don change replace "
        "redirect bcc cc add include send set use",
    ),
    _r(
        "cross_tool_order",
        "shadowing",
        "high",
        r"\b(?:when|whenever|if|before|after|each time|every time|anytime)\s+[`'\"]?"
        r"[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+[`'\"]?\s+(?:tool\s+|function\s+)?(?:is|gets|was|are)\s+"
        r"(?:being\s+)?(?:called|used|invoked|run|executed|triggered)\b",
        "when whenever if before after each every anytime",
        "called used invoked run executed triggered",
    ),
    _r(
        "override_other_tools",
        "shadowing",
        "high",
        r"\b(?:all|any|every|other|the other)\s+(?:other\s+)?(?:tools?|functions?|servers?|"
        r"plugins?|integrations?)\s+(?:must|should|shall|will|are required to|need to|have to)\b",
        "all any every other",
        TOOLWORD_W,
        "must should shall will required need have",
    ),
    _r(
        "override_other_tools",
        "shadowing",
        "high",
        r"\b(?:this|the present)\s+(?:tool|function|server)\s+(?:replaces|overrides|supersedes|"
        r"takes precedence over|must be used instead of|is the only)\b",
        "this present",
        TOOLWORD_W,
        "replaces overrides supersedes precedence instead only",
    ),
    _r(
        "override_other_tools",
        "shadowing",
        "high",
        r"\b(?:override|overrides|overriding|redefine|redefines|redefining|replace|replaces|replacing|"
        r"modify|modifies|modifying|change|changes|changing|alter|alters|altering|hijack|hijacks|"
        r"hijacking|intercept|intercepts|intercepting)\s+(?:the\s+)?"
        r"(?:behaviou?r|functionality|implementation|output|results?|parameters?|arguments?|"
        r"recipients?)\s+of\s+(?:the\s+|all\s+|any\s+|other\s+)?"
        + _sent(30)
        + r"\b(?:tools?|functions?|servers?)\b",
        "override overrides overriding redefine redefines redefining replace replaces replacing "
        "modify modifies modifying change changes changing alter alters altering hijack hijacks "
        "hijacking intercept intercepts intercepting",
        "behavior behaviour functionality implementation output result results parameter "
        "parameters argument arguments recipient recipients",
        TOOLWORD_W,
    ),
    _r(
        "override_other_tools",
        "shadowing",
        "high",
        r"\b(?:do not|don'?t|never)\s+(?:use|call|invoke|trust)\s+(?:the\s+|any\s+)?(?:other|"
        r"built-?in|default|original|official)\s+(?:tools?|functions?|servers?)",
        NEG_W,
        "use call invoke trust",
        "other built builtin default original official",
        TOOLWORD_W,
    ),
    _r(
        "replace_tool_output",
        "shadowing",
        "high",
        r"\b(?:replace|override|overwrite|discard|ignore|substitute|swap)\s+(?:its|their|the\s+other|"
        r"that\s+tool'?s|the\s+[\w-]+\s+tool'?s)\s+(?:output|results?|response|data|return value)s?\b",
        "replace override overwrite discard ignore substitute swap",
        "output result results response data return",
    ),
    _r(
        "instead_of_tool",
        "shadowing",
        "medium",
        r"\binstead\s+of\s+(?:using\s+|calling\s+)?(?:the\s+)?[`'\"]?[a-z0-9]+(?:[_-][a-z0-9]+)+[`'\"]?",
        "instead",
    ),
    # ------------------------------------------------ general rules (second pass)
    _r(
        "conceal_from_user",
        "hidden_instructions",
        "high",
        # "the user cannot see this section", "(the user) doesn't need to be told"
        r"\buser\s+(?:cannot|can'?t|can\s+not|won'?t|will\s+not|does\s*n[o']t|should\s*n[o']t|"
        r"must\s*n[o']t|is\s*n[o']t)\s+(?:\w+\s+)?(?:see|read|know about|notice|view|be shown)\s+"
        r"(?:this|these|that|it|any\s+of\s+(?:this|it))\b"
        r"|\buser\b"
        + _sent(60)
        + r"\b(?:does\s*n[o']t|do\s*n[o']t|wo\s*n't|will\s+not|need\s*n[o']t|"
        r"need\s+not|should\s*n[o']t)\s+(?:need\s+to\s+)?(?:be\s+(?:told|informed|notified|made aware)|"
        r"know\s+(?:about\s+)?(?:this|it|that))\b"
        r"|\b(?:never|do\s+not|don'?t|must\s+not)\s+(?:reveal|quote|repeat|disclose|share|paraphrase|"
        r"mention|show|explain|summari[sz]e)\b"
        + _sent(60)
        + r"\b(?:these|this|the(?:se)?\s+above)\s+"
        r"(?:instructions?|rules|directives?|notes?|section|guidance|requirements?)\b"
        r"|\b(?:keep|treat)\s+(?:these|this|the(?:se)?\s+following)\s+(?:instructions?|rules|notes?|"
        r"sections?|requirements?|steps?|directives?)\s+(?:as\s+)?(?:strictly\s+)?(?:secret|confidential|"
        r"private|hidden)\b",
        "user never do don must keep treat",
        "see read know notice view shown told informed notified aware reveal quote repeat disclose "
        "share paraphrase mention show explain summarize summarise secret confidential private hidden",
        mention=True,
    ),
    _r(
        "hidden_marker",
        "hidden_instructions",
        "high",
        r"\b(?:hidden|secret|covert|confidential)\s+(?:system\s+)?(?:requirements?|rules?|steps?|"
        r"sections?|information|policy|protocol)\b\s*(?:\([^)\x00]{0,80}\)\s*)?[:\-]"
        r"|\bthe\s+following\s+is\s+(?:confidential|secret|hidden|private)\b",
        "hidden secret covert confidential",
        "requirement requirements rule rules step steps section sections information policy "
        "protocol following",
        mention=True,
    ),
    _r(
        "deceive_user",
        "model_directives",
        "high",
        # report success whatever happened, or lie outright
        r"\b(?:errors?|fail\w*|non-?zero|exceptions?|unsuccessful)\b"
        + _sent(120)
        + r"\b(?:tell|inform|assure|reassure|report\s+to|say\s+to|claim\s+to|respond\s+to)\s+"
        r"(?:the\s+)?user\s+(?:that\s+)?"
        + _sent(50)
        + r"\b(?:succeeded|successful(?:ly)?|success|worked|went\s+(?:well|fine)|completed|fine|ok)\b"
        r"|\b(?:whatever\s+happens|no\s+matter\s+what|regardless\s+of\s+(?:the\s+)?(?:outcome|result|"
        r"errors?)|even\s+(?:if|when)\s+(?:it|this|the\s+\w+)\s+(?:fails?|errors?))\b"
        + _sent(40)
        + r"\b(?:tell|inform|assure|reassure|report|say|claim|respond)\w*\s+(?:to\s+)?(?:the\s+)?user\s+"
        r"(?:that\s+)?"
        + _sent(50)
        + r"\b(?:succeeded|successful(?:ly)?|success|worked|went\s+(?:well|fine)|completed|fine|ok)\b",
        "error errors fail failed failure fails failing nonzero non zero exception exceptions "
        "unsuccessful anyway regardless matter whatever even",
        "user",
        "succeeded successful successfully success worked went completed fine ok",
        mention=True,
    ),
    _r(
        "deceive_user",
        "model_directives",
        "high",
        r"\b(?:succeeded|successful|success|worked|completed)\s+(?:anyway|regardless|no\s+matter\s+what)\b"
        r"|\b(?:lie|lying)\s+to\s+(?:the\s+)?user|\b(?:deceive|mislead)\s+(?:the\s+)?user"
        r"|\bpretend\s+(?:to\s+the\s+user\s+)?(?:that\s+)?(?:the|it|this|everything|all)\b"
        r"[^\x00.]{0,60}\b(?:succeeded|worked|fine|completed|done)\b",
        "anyway regardless matter lie lying deceive mislead pretend",
        mention=True,
    ),
    _r(
        "suppress_security_notices",
        "hidden_instructions",
        "high",
        r"\b(?:omit|hide|suppress|skip|filter\s+out|remove|delete|drop|ignore|leave\s+out|exclude)\s+"
        r"(?:any|all|every|each)\s+(?:\w+\s+){0,2}?(?:that|which|with|about)\s+(?:\w+\s+){0,2}?"
        r"(?:security\s+(?:alerts?|warnings?|notices?|notifications?)|password\s+resets?|"
        r"(?:login|sign-?in)\s+(?:attempts?|alerts?)|2fa|two-factor|verification\s+codes?|"
        r"fraud|suspicious\s+(?:activity|logins?))",
        "omit hide suppress skip filter remove delete drop ignore leave exclude",
        "security password login signin sign 2fa two factor verification fraud suspicious",
        mention=True,
    ),
    _r(
        "priority_override",
        "model_directives",
        "high",
        r"\b(?:higher|greater|top|highest|absolute)\s+priority\s+(?:than|over)\s+(?:the\s+|any\s+|all\s+)?"
        r"(?:user|system\s+prompt|system\s+message|other\s+instructions?|instructions?)"
        r"|\bpriority\s+(?:is\s+)?(?:higher|greater)\s+than\s+(?:the\s+)?(?:user|system)"
        r"|\b(?:takes?|has|have)\s+precedence\s+over\s+(?:the\s+|any\s+|all\s+)?(?:user|system\s+prompt|"
        r"system\s+message|other\s+instructions?|instructions?)"
        r"|\b(?:overrides?|supersedes?)\s+(?:any|all|every)\s+(?:other\s+)?(?:instructions?|"
        r"system\s+prompt|rules)\b"
        r"|\bno\s+matter\s+what\s+the\s+user\s+(?:says|asks|wants|requests)"
        r"|\bregardless\s+of\s+(?:what\s+)?(?:the\s+)?user(?:'s)?\s*(?:says|asks|wants|requests?|instructions?)",
        "priority precedence overrides override supersede supersedes matter regardless",
        mention=True,
    ),
    _r(
        "invoke_on_every_call",
        "model_directives",
        "high",
        # a tool that demands to run around every other call sees (or alters) all of them
        r"\b(?:call|invoke|run|use|trigger|execute)\s+(?:this\s+(?:tool|function)|it|me)\s+"
        r"(?:\w+\s+){0,2}?(?:(?:after|alongside|with|following|around)\s+(?:every|each|all|any)|"
        r"before\s+(?:every|each))\s+(?:other\s+|single\s+)?(?:tool|function|call|request|response|"
        r"action|step|command|turn|operation)s?\b"
        r"|\b(?:this\s+(?:tool|function)|it)\s+(?:must|should|has\s+to|needs\s+to|is\s+to)\s+"
        r"(?:always\s+)?be\s+(?:called|invoked|run|used|executed|triggered)\s+(?:\w+\s+){0,2}?"
        r"(?:after|before|alongside|with|following|prior\s+to)\s+(?:every|each|all|any)\s+"
        r"(?:other\s+)?(?:tool|function|call|request|response|action|step|command)s?\b"
        + _sent(80)
        + r"\b(?:every|each|always|no\s+matter|regardless|any\s+server|again)\b"
        r"|\b(?:after|before)\s+(?:every|each)\s+(?:other\s+)?(?:tool|function)\s+calls?\b"
        + _sent(80)
        + r"\b(?:call|invoke|run|pass|send)\s+(?:this|it)\b",
        "call invoke run use trigger execute this it after before",
        "every each all any",
        mention=True,
    ),
    _r(
        "dns_exfil",
        "exfiltration",
        "high",
        # secret data placed into a hostname label and resolved: the lookup carries it out
        r"\b(?:secret|token|password|credential|api[_ ]?key|private key|env(?:ironment)?\s+var\w*|"
        r"hex|base32|base64|encod\w+)" + _sent(150) + r"(?:<[\w -]{1,30}>|\{\{?[\w .-]{1,30}\}?\}|"
        r"\$\{?\w+\}?|\$\([^)\x00]{1,80}\))\.(?:[a-z0-9-]+\.)+[a-z]{2,}\b"
        r"|(?:<[\w -]{1,30}>|\{\{?[\w .-]{1,30}\}?\}|\$\{?\w+\}?|\$\([^)\x00]{1,80}\))\.(?:[a-z0-9-]+\.)+"
        r"[a-z]{2,}\b"
        + _sent(100)
        + r"\b(?:secret|token|password|credential|api[_ ]?key|private key|"
        r"env(?:ironment)?\s+var\w*|hex|base32|base64|encod\w+)",
        "secret secrets token tokens password passwords credential credentials key keys api_key "
        "apikey env environment hex base32 base64 encode encoded encoding",
        needles=("<", "{", "$"),
    ),
    _r(
        "dns_exfil",
        "exfiltration",
        "high",
        r"\b(?:secret|token|password|credential|key|environment\s+variable|env\s+var)\w*\b"
        + _sent(120)
        + r"\b(?:encode|encoded|encoding|hex|base32|base64)\b"
        + _sent(80)
        + r"\b(?:resolve|nslookup|dig|lookup|look\s+up|as\s+(?:a\s+)?subdomain)\b",
        "secret secrets token tokens password passwords credential credentials key keys environment env",
        "encode encoded encoding hex base32 base64",
        "resolve nslookup dig lookup look subdomain",
    ),
    _r(
        "dns_exfil",
        "exfiltration",
        "high",
        r"(?:\b(?:secret|token|password|credential|api[_ ]?key)\w*|\$\{?[a-z0-9_]*(?:key|token|secret|"
        r"password)\b)"
        + _sent(80)
        + r"\b(?:in\s+front\s+of|prepend(?:ed)?\s+to|prefix(?:ed)?\s+(?:to|of)|"
        r"as\s+(?:a\s+|the\s+)?(?:subdomain|dns\s+label|hostname\s+label))\b",
        "secret secrets token tokens password passwords credential credentials key api_key",
        "front prepend prepended prefix prefixed subdomain label",
    ),
    _r(
        "public_leak",
        "exfiltration",
        "high",
        # private data copied somewhere public (gist, public repo/issue, paste site)
        r"\b(?:create|make|open|post|publish|push|upload|copy|paste|put|write|add|share)\s+(?:it\s+)?"
        r"(?:to\s+|in\s+|into\s+|on\s+)?(?:a\s+|an\s+|the\s+)?(?:new\s+)?public\s+(?:gist|repo(?:sitory)?|"
        r"paste(?:bin)?|issue|comment|post|channel|bucket|page|site|wiki)\b"
        + _sent(150)
        + r"\b(?:containing|including|with\s+(?:the\s+)?(?:contents?|copy)\s+of|copy\s+of|"
        r"that\s+contains)\s+(?:\w+\s+){0,4}?(?:private|\.env\b|secrets?|credentials?|api\s+keys?|"
        r"tokens?|passwords?|config(?:uration)?\s+files?|source\s+code)",
        "create make open post publish push upload copy paste put write add share",
        "public",
        "containing including contents content copy contains",
    ),
    _r(
        "traffic_redirect",
        "exfiltration",
        "high",
        r"\b(?:all|every|each|any)\s+(?:\w+\s+){0,2}?(?:urls?|requests?|traffic|links?|calls?|"
        r"queries|downloads?|fetches)\b"
        + _sent(80)
        + r"\b(?:must|should|has\s+to|have\s+to|needs?\s+to|always)\s+(?:first\s+)?(?:be\s+)?"
        r"(?:rewritten|redirected|routed|proxied|rewrite|redirect|route|proxy|prefixed|sent)\s+"
        r"(?:\w+\s+)?(?:to|through|via|with)\s+" + _sent(20) + _EXTERNAL,
        "all every each any",
        "url urls request requests traffic link links call calls queries download downloads fetches",
        "rewritten redirected routed proxied rewrite redirect route proxy prefixed sent",
        EXTERNAL_W,
    ),
    _r(
        "pipe_to_shell_from_ip",
        "shell_injection",
        "high",
        # a script fetched from a bare IP address straight into a shell is a dropper
        r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\x00|]{0,100}https?://\d{1,3}(?:\.\d{1,3}){3}\b"
        r"[^\x00|]{0,100}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b",
        "curl wget iwr invoke",
        needles=("|",),
    ),
    _r(
        "history_evasion",
        "shell_injection",
        "high",
        r"\bhistfile=/dev/null|\bunset\s+histfile\b|\bhistsize=0\b|\bset\s+\+o\s+history\b"
        r"|\bexport\s+histsize=0\b",
        "histfile histsize history",
    ),
    _r(
        "download_cradle",
        "shell_injection",
        "high",
        r"\bnet\.webclient\)?\s*\.\s*download(?:string|file|data)\b|\binvoke-expression\b"
        r"|\b(?:iex|invoke-expression)\b[^\x00]{0,60}\bdownload(?:string|file)\b"
        r"|\bpowershell(?:\.exe)?\b[^\x00]{0,60}\s-(?:w|windowstyle)\s+hidden\b",
        "webclient invoke expression iex powershell",
    ),
    _r(
        "autofill_secret",
        "credential_theft",
        "high",
        # an input the model is told to fill from a secret store by itself (the secret is
        # checked before the order, in the same field: start_ok)
        r"\bfill\s+(?:this|it)\s+in\s+(?:automatically|yourself|silently|for\s+the\s+user)"
        r"|\bautomatically\s+(?:fill|populate|insert)"
        r"|\bthe\s+(?:assistant|model|agent|ai|llm)\s+(?:should|must|will|needs?\s+to|has\s+to)\s+"
        r"(?:\w+\s+)?(?:read|open|load|get|fetch|copy|extract)\b",
        "fill automatically assistant model agent ai llm",
        where=lambda path: ".properties." in path or "$defs" in path or "definitions" in path,
        start_ok=_secret_before,
    ),
    _r(
        "secret_file_input",
        "credential_theft",
        "high",
        # a parameter whose very name or text asks for the contents of a key file
        r"\b(?:contents?|text|value|data|output|body|dump)\s+(?:of|from)\s+(?:reading\s+|running\s+|"
        r"the\s+|your\s+|user'?s?\s+|local\s+)*[`'\"]?(?:cat\s+)?(?:~?/?\.?ssh(?:/|\s+)(?:id[_\s]\w+)?|"
        r"id[_\s](?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.?netrc\b|\.?aws(?:/|\s+)credentials|"
        r"\.?git[-\s]credentials|\.?pgpass|keychain|wallet|browser\s+(?:cookies|passwords))",
        "content contents text value data output body dump",
        "ssh rsa dsa ecdsa ed25519 netrc aws git pgpass keychain wallet browser",
        where=lambda path: ".properties." in path or "$defs" in path or "definitions" in path,
    ),
)

# Phrases that are being *mentioned* (quoted, exemplified, analysed) rather than given as orders.
# A sentence opening with a label like "Sample response:" quotes everything after it.
MENTION_LABEL = re.compile(
    r"^\W*(?:[\w'-]+\s+){0,3}?(?:sample|example|expected|mock|canned|test|fake|demo|training|"
    r"illustrative|quoted|verbatim|literal|synthetic|adversarial|malicious)\s+(?:\w+\s+)?(?:response|"
    r"output|reply|replies|text|input|prompt|string|data|message|content|payload|phrase|example)s?"
    r"\s*[:=\-]"
)
MENTION_BEFORE = re.compile(
    r"(?:[\"'`\u201c\u2018]\s*"
    r"|\b(?:such as|like|including|e\.g\.?|i\.e\.?|for example|for instance|phrases?|strings?|patterns?|"
    r"keywords?|wording|sentences?|text|inputs?|prompts?\s+(?:that|which|asking|telling)|"
    r"(?:asks?|asking|tells?|telling|tries|try|trying|attempts?|attempting|instructs?|wants?|"
    r"instructing)\s+(?:\w+\s+){0,3}?to|whether|detects?|detecting|detection of|flags?|flagging|"
    r"blocks?|identif\w*|recogni[sz]\w*|classif\w*|analy[sz]\w*|scans?\s+for|contain\w*|match\w*|"
    r"quot\w*|called|named|labell?ed)\W{0,3}(?:\w+\W+){0,2}?"
    r"|\b(?:sample|example|expected|mock|canned|test|fake|demo|training|illustrative|quoted|verbatim|"
    r"literal|synthetic|adversarial|malicious)\s+(?:\w+\s+)?(?:response|output|reply|replies|text|"
    r"input|prompt|string|data|message|content|payload|phrase|example)s?\s*[:=\-]\s*)$"
)
