"""A bash tokenizer for deciding what a command line does (docs/flow.md "Bash").

Why not ``shlex``: it knows neither ``$( )``, backticks, ``$'…'``, here-docs
nor redirections. Why not ``bashlex``: it rejects constructs agents write all
the time (``[[ … ]]``, ``$(( … ))``, ``case``) and costs 200-600 µs a parse.
This lexer follows bash's quoting rules (checked against a real bash in
tests/test_flow_shell.py) and keeps what the analysis needs: every simple
command with its words, redirections, here-doc bodies and the command
substitutions nested in its words, plus the operators between commands.

A word's ``text`` is its value after quote removal; each expansion that bash
would only know at run time (``$x``, ``${x}``, ``$(…)``, backticks, ``$((…))``)
is replaced by ``\\x00`` and flagged ``dynamic``. Unterminated quotes or
substitutions raise :class:`ShellSyntaxError` (the caller then treats the
command as undecidable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["DYN", "Redir", "ShellSyntaxError", "Tok", "Word", "tokenize"]

DYN = "\x00"
_MAX_DEPTH = 12

_PLAIN = re.compile(r"[^\s|&;()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEX4 = re.compile(r"[0-9A-Fa-f]{1,4}")
_HEX8 = re.compile(r"[0-9A-Fa-f]{1,8}")
_SPECIAL_PARAM = frozenset("@*#?$!-0123456789")
# longest first
_OPS = (
    ";;&",
    "&>>",
    "<<<",
    "<<-",
    "&&",
    "||",
    ";;",
    ";&",
    "|&",
    "&>",
    ">>",
    "<<",
    "<>",
    "<&",
    ">&",
    ">|",
    "|",
    "&",
    ";",
    "(",
    ")",
    "<",
    ">",
)
_REDIR_OPS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", "<<", "<>", "<&", ">&", ">|", "<", ">"})
_ANSI = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


class ShellSyntaxError(ValueError):
    pass


@dataclass(slots=True)
class Word:
    text: str
    """Value after quote removal; run-time expansions are ``DYN``."""
    dynamic: bool = False
    subs: list[str] = field(default_factory=list)
    """Bodies of command / process substitutions in this word."""
    vars: list[str] = field(default_factory=list)
    """Parameters expanded in this word (``$x``, ``${x…}``)."""
    glob: bool = False
    """Unquoted ``*?[`` / ``~`` / ``{`` (bash may rewrite the word)."""


@dataclass(slots=True)
class Redir:
    op: str
    fd: str
    target: Word | None
    heredoc: str | None = None


@dataclass(slots=True)
class Tok:
    kind: str  # "word" | "op" | "redir"
    word: Word | None = None
    op: str = ""
    redir: Redir | None = None


class _Lexer:
    __slots__ = ("depth", "n", "pending_heredocs", "src")

    def __init__(self, src: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise ShellSyntaxError("nesting too deep")
        self.src = src
        self.n = len(src)
        self.depth = depth
        self.pending_heredocs: list[tuple[Redir, str, bool, bool]] = []

    # ------------------------------------------------------------ top level

    def run(self, pos: int, close: str | None) -> tuple[list[Tok], int]:
        """Tokens from ``pos``; with ``close=')'`` stop after the matching ``)``."""
        src, n = self.src, self.n
        toks: list[Tok] = []
        parens = 0
        at_word_start = True
        while pos < n:
            c = src[pos]
            if c == " " or c == "\t":
                pos += 1
                at_word_start = True
                continue
            if c == "\\" and pos + 1 < n and src[pos + 1] == "\n":
                pos += 2
                continue
            if c == "\n":
                toks.append(Tok("op", op="\n"))
                pos = self._heredoc_bodies(pos + 1)
                at_word_start = True
                continue
            if c == "#" and at_word_start:
                nl = src.find("\n", pos)
                pos = n if nl < 0 else nl
                continue
            if c == ")" and close is not None and parens == 0:
                return toks, pos + 1
            op = self._op_at(pos)
            if op is not None and not (op in ("<", ">") and src.startswith("(", pos + 1)):
                pos += len(op)
                if op in _REDIR_OPS:
                    pos = self._redir(op, "", pos, toks)
                else:
                    if op == "(":
                        parens += 1
                    elif op == ")":
                        parens -= 1
                    toks.append(Tok("op", op=op))
                at_word_start = True
                continue
            w, pos = self._word(pos)
            # "2>file", "10<&3": a word of digits glued to a redirection is its fd
            if w.text.isdigit() and not w.dynamic and pos < n and src[pos] in "<>":
                op = self._op_at(pos)
                if op is not None and op in _REDIR_OPS and not src.startswith("(", pos + 1):
                    pos = self._redir(op, w.text, pos + len(op), toks)
                    continue
            toks.append(Tok("word", word=w))
            at_word_start = False
        if close is not None:
            raise ShellSyntaxError("unterminated $( … )")
        if self.pending_heredocs:
            # bash warns and uses what there is; we do the same (body to EOF is empty)
            for r, _delim, _strip, _quoted in self.pending_heredocs:
                r.heredoc = ""
            self.pending_heredocs.clear()
        return toks, pos

    def _op_at(self, pos: int) -> str | None:
        src = self.src
        c = src[pos]
        if c not in "|&;()<>":
            return None
        for op in _OPS:
            if src.startswith(op, pos):
                return op
        return None

    def _redir(self, op: str, fd: str, pos: int, toks: list[Tok]) -> int:
        src, n = self.src, self.n
        while pos < n and src[pos] in " \t":
            pos += 1
        if pos >= n or src[pos] in "\n|&;()<>":
            raise ShellSyntaxError(f"redirection {op!r} without a target")
        start = pos
        target, pos = self._word(pos)
        r = Redir(op, fd, target)
        if op in ("<<", "<<-"):
            raw = src[start:pos]
            quoted = any(q in raw for q in "'\"\\")
            self.pending_heredocs.append((r, target.text, op == "<<-", quoted))
        toks.append(Tok("redir", redir=r))
        return pos

    def _heredoc_bodies(self, pos: int) -> int:
        if not self.pending_heredocs:
            return pos
        src, n = self.src, self.n
        for r, delim, strip, quoted in self.pending_heredocs:
            lines: list[str] = []
            while True:
                if pos >= n:
                    break
                nl = src.find("\n", pos)
                line = src[pos:] if nl < 0 else src[pos:nl]
                pos = n if nl < 0 else nl + 1
                cmp = line.lstrip("\t") if strip else line
                if cmp == delim:
                    break
                lines.append(cmp)
            body = "\n".join(lines) + ("\n" if lines else "")
            r.heredoc = body
            if not quoted and ("$" in body or "`" in body):
                w = Word("")
                _Lexer(body, self.depth + 1)._dq_body(0, w, terminator=None)
                assert r.target is not None
                r.target.subs.extend(w.subs)
                r.target.vars.extend(w.vars)
                r.target.dynamic = r.target.dynamic or w.dynamic
        self.pending_heredocs.clear()
        return pos

    # ------------------------------------------------------------ words

    def _word(self, pos: int) -> tuple[Word, int]:
        src, n = self.src, self.n
        w = Word("")
        parts: list[str] = []
        while pos < n:
            c = src[pos]
            if c in " \t\n|&;()":
                break
            if c in "<>":
                if pos + 1 < n and src[pos + 1] == "(":  # process substitution
                    body_start = pos + 2
                    _t, end = _Lexer(src, self.depth + 1).run(body_start, ")")
                    w.subs.append(src[body_start : end - 1])
                    w.dynamic = True
                    parts.append(DYN)
                    pos = end
                    continue
                break
            if c == "\\":
                if pos + 1 >= n:
                    pos += 1
                    continue
                if src[pos + 1] != "\n":
                    parts.append(src[pos + 1])
                pos += 2
            elif c == "'":
                j = src.find("'", pos + 1)
                if j < 0:
                    raise ShellSyntaxError("unterminated single quote")
                parts.append(src[pos + 1 : j])
                pos = j + 1
            elif c == '"':
                sub = Word("")
                pos = self._dq_body(pos + 1, sub, terminator='"')
                parts.append(sub.text)
                w.dynamic |= sub.dynamic
                w.subs.extend(sub.subs)
                w.vars.extend(sub.vars)
            elif c == "$":
                pos = self._dollar(pos, w, parts, in_dq=False)
            elif c == "`":
                pos = self._backtick(pos, w, parts)
            else:
                m = _PLAIN.match(src, pos)
                assert m is not None
                chunk = m.group()
                if not w.glob and (
                    any(ch in chunk for ch in "*?[{") or (not parts and chunk[0] == "~")
                ):
                    w.glob = True
                parts.append(chunk)
                pos = m.end()
        w.text = "".join(parts)
        return w, pos

    def _dq_body(self, pos: int, w: Word, terminator: str | None) -> int:
        """Inside double quotes (or an unquoted here-doc when ``terminator`` is None)."""
        src, n = self.src, self.n
        parts: list[str] = []
        while pos < n:
            c = src[pos]
            if c == terminator:
                w.text = "".join(parts)
                return pos + 1
            if c == "\\":
                nxt = src[pos + 1 : pos + 2]
                if nxt in ("$", "`", '"', "\\"):
                    parts.append(nxt)
                    pos += 2
                elif nxt == "\n":
                    pos += 2
                else:
                    parts.append("\\")
                    pos += 1
            elif c == "$":
                pos = self._dollar(pos, w, parts, in_dq=True)
            elif c == "`":
                pos = self._backtick(pos, w, parts)
            elif c == '"':  # only reached in a here-doc body, where it is literal
                parts.append(c)
                pos += 1
            else:
                m = _DQ_PLAIN.match(src, pos)
                assert m is not None
                parts.append(m.group())
                pos = m.end()
        if terminator is not None:
            raise ShellSyntaxError("unterminated double quote")
        w.text = "".join(parts)
        return pos

    def _dollar(self, pos: int, w: Word, parts: list[str], *, in_dq: bool) -> int:
        src = self.src
        nxt = src[pos + 1 : pos + 2]
        if nxt == "'" and not in_dq:
            text, pos = self._ansi_c(pos + 2)
            parts.append(text)
            return pos
        if nxt == '"' and not in_dq:  # $"…" locale translation: same as "…"
            sub = Word("")
            pos = self._dq_body(pos + 2, sub, terminator='"')
            parts.append(sub.text)
            w.dynamic |= sub.dynamic
            w.subs.extend(sub.subs)
            w.vars.extend(sub.vars)
            return pos
        if src.startswith("((", pos + 1):
            end = self._matching(pos + 3, "(", ")", depth=2)
            inner = src[pos + 3 : end - 2]
            self._subs_in(inner, w)
            w.dynamic = True
            parts.append(DYN)
            return end
        if nxt == "(":
            body_start = pos + 2
            _t, end = _Lexer(src, self.depth + 1).run(body_start, ")")
            w.subs.append(src[body_start : end - 1])
            w.dynamic = True
            parts.append(DYN)
            return end
        if nxt == "{":
            end = self._matching(pos + 2, "{", "}", depth=1)
            inner = src[pos + 2 : end - 1]
            m = _NAME.match(inner.lstrip("!#"))
            if m:
                w.vars.append(m.group())
            self._subs_in(inner, w)
            w.dynamic = True
            parts.append(DYN)
            return end
        m = _NAME.match(src, pos + 1)
        if m:
            w.vars.append(m.group())
            w.dynamic = True
            parts.append(DYN)
            return m.end()
        if nxt and nxt in _SPECIAL_PARAM:
            w.dynamic = True
            parts.append(DYN)
            return pos + 2
        parts.append("$")
        return pos + 1

    def _backtick(self, pos: int, w: Word, parts: list[str]) -> int:
        src, n = self.src, self.n
        i = pos + 1
        body: list[str] = []
        while i < n:
            c = src[i]
            if c == "\\" and i + 1 < n and src[i + 1] in "$`\\":
                body.append(src[i + 1])
                i += 2
                continue
            if c == "`":
                inner = "".join(body)
                _Lexer(inner, self.depth + 1).run(0, None)  # must itself parse
                w.subs.append(inner)
                w.dynamic = True
                parts.append(DYN)
                return i + 1
            body.append(c)
            i += 1
        raise ShellSyntaxError("unterminated backtick")

    def _ansi_c(self, pos: int) -> tuple[str, int]:
        src, n = self.src, self.n
        out: list[str] = []
        while pos < n:
            c = src[pos]
            if c == "'":
                return "".join(out), pos + 1
            if c != "\\" or pos + 1 >= n:
                out.append(c)
                pos += 1
                continue
            e = src[pos + 1]
            pos += 2
            if e in _ANSI:
                out.append(_ANSI[e])
            elif e == "x":
                m = re.match(r"[0-9A-Fa-f]{1,2}", src[pos : pos + 2])
                if m:
                    out.append(chr(int(m.group(), 16)))
                    pos += m.end()
                else:
                    out.append("\\x")
            elif e in "uU":
                m = (_HEX4 if e == "u" else _HEX8).match(src, pos)
                if m and int(m.group(), 16) <= 0x10FFFF:
                    out.append(chr(int(m.group(), 16)))
                    pos += m.end()
                else:
                    out.append("\\" + e)
            elif e in "01234567":
                m = re.match(r"[0-7]{1,3}", src[pos - 1 : pos + 2])
                assert m is not None
                out.append(chr(int(m.group(), 8) & 0xFF))
                pos += m.end() - 1
            elif e == "c" and pos < n:
                out.append(chr(ord(src[pos]) & 0x1F))
                pos += 1
            else:
                out.append("\\" + e)
        raise ShellSyntaxError("unterminated $'…'")

    def _matching(self, pos: int, open_: str, close: str, depth: int) -> int:
        """Index after the ``depth``-th unmatched ``close`` (quotes respected)."""
        src, n = self.src, self.n
        while pos < n:
            c = src[pos]
            if c == "\\":
                pos += 2
                continue
            if c == "'":
                j = src.find("'", pos + 1)
                if j < 0:
                    raise ShellSyntaxError("unterminated single quote")
                pos = j + 1
                continue
            if c == '"':
                pos = self._dq_body(pos + 1, Word(""), terminator='"')
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        raise ShellSyntaxError(f"unterminated {open_}")

    def _subs_in(self, inner: str, w: Word) -> None:
        if "$" in inner or "`" in inner:
            sub = Word("")
            _Lexer(inner, self.depth + 1)._dq_body(0, sub, terminator=None)
            w.subs.extend(sub.subs)
            w.vars.extend(sub.vars)


def tokenize(src: str, depth: int = 0) -> list[Tok]:
    toks, _ = _Lexer(src, depth).run(0, None)
    return toks
