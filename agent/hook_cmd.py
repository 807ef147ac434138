"""The agent hook command: what Claude Code runs for PreToolUse, PostToolUse
and PostToolUseFailure (docs/flow.md "Hooks"; ``agentshctl hook install``
writes it into ``.claude/settings.json``)::

    /path/to/python -S -E /path/to/agentsh/agent/hook_cmd.py --event PreToolUse [--socket S]

It reads the hook's JSON on stdin, hands it to agentshd over the agent
channel (``op: hook``: the daemon decides with its one pipeline and writes
the ``hook_evaluation`` event) and answers in Claude Code's hook protocol on
stdout: for PreToolUse ``hookSpecificOutput.permissionDecision`` ``deny`` or
``ask`` with the daemon's reason, ``systemMessage`` for a warning, nothing at
all for allow (an explicit "allow" would bypass Claude Code's own permission
rules). PostToolUse answers nothing: Claude Code runs it asynchronously and
it only records the tool's result.

**Import-light by design.** It runs before every tool call, so it imports only
modules built into the interpreter or its C extensions (``posix``,
``_socket``, ``_signal``, ``_json``, ``time``, ``sys``) and runs with ``-S
-E`` (no site-packages, no ``PYTHON*`` variables): start-up is the
interpreter's own, a few milliseconds (bench/hooks.py). Nothing of agentsh,
pydantic or aiohttp is imported; the request line is spliced from the raw
stdin bytes (JSON cannot hold a raw newline inside a string, so newlines are
whitespace and become spaces) and the daemon parses it.

**Fails open** (docs/flow.md "Hooks"): when the daemon is unreachable, answers an error, the
payload is malformed, or the hard deadline (``--timeout``, well under Claude
Code's hook timeout) passes, it prints nothing and exits 0, so Claude Code
applies its normal permissions; one line on stderr says why. Unless the
daemon's policy says ``flow.hooks.fail_open: false`` (the daemon writes
``<socket stem>-hooks.conf`` on every policy load): then a PreToolUse is
denied with the reason. It always exits 0 and never hangs: a timer ends it.
"""

import _json
import _signal
import _socket
import posix
import sys
import time

DEFAULT_SOCKET = "/run/agentsh/agentsh.sock"
AGENTS = ("claude-code",)
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
DEADLINES = {"PreToolUse": 8.0, "PostToolUse": 5.0, "PostToolUseFailure": 2.0}
"""Seconds before the command gives up (fails open). The daemon may hold a
PreToolUse up to 3 s for earlier results still being recorded."""
MAX_PAYLOAD = 15 << 20
"""The daemon's channel takes lines up to 16 MiB."""

_state = {"event": "PreToolUse", "socket": DEFAULT_SOCKET, "done": False}


def sibling(socket_path: str, suffix: str) -> str:
    """``<dir>/<stem><suffix>`` beside the control socket (like
    ``Path(p).with_name(Path(p).stem + suffix)``)."""
    head, sep, name = socket_path.rpartition("/")
    dot = name.rfind(".")
    stem = name[:dot] if dot > 0 else name
    return head + sep + stem + suffix


def _write(fd: int, data: bytes) -> None:
    while data:
        try:
            n = posix.write(fd, data)
        except OSError:
            return
        data = data[n:]


def _jstr(s: str) -> bytes:
    return _json.encode_basestring_ascii(s).encode()


def output(event: str, decision: str, reason: str | None) -> bytes:
    """Claude Code's hook protocol for the daemon's answer."""
    if event != "PreToolUse":
        return b""
    if decision in ("deny", "ask"):
        return (
            b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":'
            + _jstr(decision)
            + b',"permissionDecisionReason":'
            + _jstr(reason or "agentsh: " + decision)
            + b"}}\n"
        )
    if decision == "warn" and reason:
        return b'{"systemMessage":' + _jstr("agentsh warning: " + reason) + b"}\n"
    return b""


def fail_open(socket_path: str) -> bool:
    """What the daemon last said about ``flow.hooks.fail_open`` (default: open)."""
    try:
        fd = posix.open(sibling(socket_path, "-hooks.conf"), posix.O_RDONLY)
    except OSError:
        return True
    try:
        return b"fail_open=0" not in posix.read(fd, 256)
    except OSError:
        return True
    finally:
        posix.close(fd)


def _finish(out: bytes) -> None:
    if not _state["done"]:
        _state["done"] = True
        _write(1, out)
    posix._exit(0)


def _fail(why: str) -> None:
    event, sock = str(_state["event"]), str(_state["socket"])
    if event == "PreToolUse" and not fail_open(sock):
        _write(2, ("agentsh hook: " + why + ": denied (flow.hooks.fail_open is false)\n").encode())
        _finish(
            output(
                event,
                "deny",
                "agentsh: the daemon could not evaluate this tool call (" + why + ") and "
                "flow.hooks.fail_open is false, so tool calls are refused until agentshd answers",
            )
        )
    _write(2, ("agentsh hook: " + why + ": not evaluated, allowed (fail open)\n").encode())
    _finish(b"")


def _on_alarm(signum: int, frame: object) -> None:
    _fail("timed out")


def _read_stdin() -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        b = posix.read(0, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        total += len(b)
        if total > MAX_PAYLOAD:
            raise ValueError("hook payload larger than 15 MiB")


def _field(ans: bytes, name: bytes) -> str | None:
    """A string field of the daemon's answer line (its JSON is ours: orjson
    escapes every quote inside strings, so ``"name":`` only matches a key)."""
    key = b'"' + name + b'":'
    i = ans.find(key)
    if i < 0:
        return None
    j = i + len(key)
    if ans[j : j + 1] != b'"':
        return None
    text = ans.decode("utf-8", "replace")
    # the same offset in characters: everything before it is the ASCII-only key prefix
    k = len(ans[:j].decode("utf-8", "replace"))
    return str(_json.scanstring(text, k + 1, True)[0])


def request_line(event: str, agent: str, raw: bytes, deadline: float | None) -> bytes:
    flat = raw.replace(b"\n", b" ").replace(b"\r", b" ")
    head = b'{"op":"hook","agent":' + _jstr(agent) + b',"event":' + _jstr(event)
    if deadline is not None:
        head += b',"deadline":' + repr(deadline).encode()
    return head + b',"payload":' + flat + b"}\n"


def ask_daemon(socket_path: str, line: bytes, timeout: float) -> bytes:
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(sibling(socket_path, "-decide.sock"))
        s.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            b = s.recv(1 << 16)
            if not b:
                break
            buf += b
        return buf
    finally:
        s.close()


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--event", "--socket", "--agent", "--timeout") and i + 1 < len(argv):
            out[a[2:]] = argv[i + 1]
            i += 2
            continue
        if "=" in a and a.startswith("--"):
            k, _, v = a[2:].partition("=")
            out[k] = v
        i += 1
    return out


def main(argv: list[str] | None = None) -> None:
    """Run one hook. Never returns: exits 0 with the answer on stdout."""
    try:
        opts = _args(sys.argv[1:] if argv is None else argv)
        event = opts.get("event", "PreToolUse")
        _state["event"] = event
        env = posix.environ.get(b"AGENTSH_SOCKET")
        sock = opts.get("socket") or (env.decode() if env else DEFAULT_SOCKET)
        _state["socket"] = sock
        agent = opts.get("agent", "claude-code")
        limit = float(opts.get("timeout") or DEADLINES.get(event, 5.0))
        _signal.signal(_signal.SIGALRM, _on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, limit)
        end = time.time() + limit
        if event not in EVENTS or agent not in AGENTS:
            _fail(f"unsupported --event {event!r} / --agent {agent!r}")
        try:
            raw = _read_stdin()
        except (OSError, ValueError) as e:
            _fail(f"cannot read the hook payload ({e})")
        if raw.lstrip()[:1] != b"{":
            _fail("malformed hook payload (not a JSON object)")
        # the daemon drops a PreToolUse it reaches after we stopped waiting
        deadline = end - 0.2 if event == "PreToolUse" else None
        try:
            line = request_line(event, agent, raw, deadline)
            ans = ask_daemon(sock, line, max(0.05, end - time.time()))
        except OSError as e:
            _fail(f"agentshd unreachable at {sock} ({e.__class__.__name__})")
        decision = _field(ans, b"decision")
        if decision is None:
            err = _field(ans, b"error") or ("no answer" if not ans else "unreadable answer")
            _fail("agentshd did not evaluate the hook: " + err)
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _finish(output(event, str(decision), _field(ans, b"reason")))
    except BaseException as e:  # never a traceback, never a non-zero exit
        _fail(f"hook error ({e.__class__.__name__}: {e})")


if __name__ == "__main__":
    main()
