"""Per-session flow state: data origins, their fingerprint index, flow counters.

Memory is bounded by ``max_origins_per_session`` counted in *index entries*
(every exact digest, window fingerprint, sensitive value and path label is one
entry; docs/flow.md "Sessions"). When a new
origin pushes the session over the budget the oldest origins are evicted
whole. One origin never takes more than an eighth of the budget: its window
fingerprints are thinned (a larger winnowing window) to fit.

Not thread-safe by itself: :class:`~agentsh.agent.core.flow.engine.FlowEngine`
holds the session's lock around every call.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from agentsh.agent.core.flow.content import digest, grams, is_strong_gram, normalize, winnow

__all__ = ["FlowSession", "Match", "Origin", "Prepared"]

WEAK_GRAMS_NEEDED = 3
"""Window hits on non-identifier text needed before an origin counts as matched."""


@dataclass(slots=True)
class Origin:
    """Where a piece of data was produced (an *origin*, docs/flow.md "Threat model")."""

    id: int
    tool: str
    server: str | None
    classification: str
    """Tool/server classification (internal/external/hybrid/unknown)."""
    source_class: str
    """internal | external: the side of the boundary the data comes from."""
    label: str | None
    """What was read: a file path, URL, query or command (shown in reasons)."""
    sensitive: tuple[str, ...]
    ts: float
    layer: str
    exact: list[bytes] = field(default_factory=list)
    windows: list[int] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Prepared:
    """Fingerprints of one response, computed outside the session lock."""

    exact: dict[bytes, tuple[str, ...]]
    windows: list[int]
    secrets: dict[str, str]  # normalized value → type
    sensitive: tuple[str, ...]
    window_w: int


@dataclass(slots=True)
class Match:
    origin: Origin
    how: str  # exact | normalized | sensitive | window | path
    sensitive: tuple[str, ...] = ()


class FlowSession:
    __slots__ = (
        "budget",
        "created",
        "edges",
        "exact",
        "flow_types",
        "has_hooks",
        "k",
        "last_active",
        "linked",
        "next_id",
        "origins",
        "paths",
        "risk_levels",
        "secrets",
        "tools",
        "total_origins",
        "windows",
    )

    def __init__(self, now: float, budget: int, k: int) -> None:
        self.created = now
        self.last_active = now
        self.budget = budget
        self.k = k
        self.origins: OrderedDict[int, Origin] = OrderedDict()
        self.exact: dict[bytes, tuple[Origin, tuple[str, ...], bool]] = {}
        self.windows: dict[int, Origin] = {}
        self.secrets: dict[str, tuple[Origin, str]] = {}
        self.paths: dict[str, Origin] = {}
        self.next_id = 1
        self.total_origins = 0
        self.edges = 0
        self.flow_types: dict[str, int] = {}
        self.risk_levels: dict[str, int] = {}
        self.tools: dict[str, None] = {}
        self.linked: dict[str, None] = {}
        self.has_hooks = False

    # ------------------------------------------------------------ size

    def entries(self) -> int:
        return len(self.exact) + len(self.windows) + len(self.secrets) + len(self.paths)

    # ------------------------------------------------------------ record

    def add(self, o: Origin, p: Prepared, paths: Iterable[str]) -> None:
        o.id = self.next_id
        self.next_id += 1
        self.total_origins += 1
        internal = o.source_class == "internal"
        for value, typ in p.secrets.items():
            cur = self.secrets.get(value)
            if cur is None or internal or cur[0].source_class != "internal":
                self.secrets[value] = (o, typ)
                o.secrets.append(value)
        for key, sens in p.exact.items():
            cur2 = self.exact.get(key)
            if cur2 is None or internal or cur2[0].source_class != "internal":
                self.exact[key] = (o, sens, False)
                o.exact.append(key)
        if internal:
            self.windows.update(dict.fromkeys(p.windows, o))
            o.windows = list(p.windows)
        else:
            win = self.windows
            keep = [
                h for h in p.windows if (c := win.get(h)) is None or c.source_class != "internal"
            ]
            win.update(dict.fromkeys(keep, o))
            o.windows = keep
        for path in paths:
            self.paths[path] = o
            o.paths.append(path)
        self.origins[o.id] = o
        while self.entries() > self.budget and len(self.origins) > 1:
            _oid, old = self.origins.popitem(last=False)
            self._drop(old)

    def _drop(self, o: Origin) -> None:
        for key in o.exact:
            cur = self.exact.get(key)
            if cur is not None and cur[0] is o:
                del self.exact[key]
        for h in o.windows:
            if self.windows.get(h) is o:
                del self.windows[h]
        for v in o.secrets:
            cur2 = self.secrets.get(v)
            if cur2 is not None and cur2[0] is o:
                del self.secrets[v]
        for path in o.paths:
            if self.paths.get(path) is o:
                del self.paths[path]

    def merge_from(self, other: FlowSession) -> None:
        """Adopt ``other``'s origins (an MCP session linked to this hook session)."""
        for o in other.origins.values():
            p = Prepared(
                {k: other.exact[k][1] for k in o.exact if k in other.exact},
                list(o.windows),
                {v: other.secrets[v][1] for v in o.secrets if v in other.secrets},
                o.sensitive,
                1,
            )
            o.exact, o.windows, o.secrets = [], [], []
            paths, o.paths = list(o.paths), []
            self.add(o, p, paths)
            self.total_origins -= 1
        self.total_origins += other.total_origins
        self.edges += other.edges
        for d_from, d_to in (
            (other.flow_types, self.flow_types),
            (other.risk_levels, self.risk_levels),
        ):
            for k2, v2 in d_from.items():
                d_to[k2] = d_to.get(k2, 0) + v2
        self.tools.update(other.tools)
        self.created = min(self.created, other.created)

    # ------------------------------------------------------------ match

    def match_text(self, texts: list[str], found: dict[int, Match]) -> None:
        """Look up each decoded view of an argument (already normalized or not)."""
        if not self.origins:
            return
        k = self.k
        exact = self.exact
        secrets = self.secrets
        windows = self.windows
        weak: dict[int, set[str]] = {}
        for t in texts:
            if len(t) >= k:
                hit = exact.get(digest(t))
                if hit is not None:
                    _add(found, hit[0], "exact", hit[1])
            nt = normalize(t)
            if len(nt) >= k:
                hit = exact.get(digest(nt))
                if hit is not None:
                    _add(found, hit[0], "normalized", hit[1])
            if secrets:
                for value, (o, typ) in secrets.items():
                    if value in nt:
                        _add(found, o, "sensitive", (typ,))
            if windows and len(nt) >= k:
                gs = grams(nt, k)
                hs = list(map(hash, gs))
                hits = windows.keys() & set(hs)  # C-level: the dict is not iterated
                if not hits:
                    continue
                for g, h in zip(gs, hs, strict=True):
                    if h not in hits:
                        continue
                    o2 = windows[h]
                    if o2.id in found:
                        continue
                    if is_strong_gram(g):
                        _add(found, o2, "window", ())
                    else:
                        ws = weak.setdefault(o2.id, set())
                        ws.add(g)
                        if len(ws) >= WEAK_GRAMS_NEEDED:
                            _add(found, o2, "window", ())

    def match_path(self, path: str) -> Origin | None:
        """An origin recorded for ``path`` (by suffix: ``.env`` ~ ``/home/u/p/.env``)."""
        p = path.strip()
        if p.startswith("~/") or p.startswith("./"):
            p = p[1:]
        o = self.paths.get(p)
        if o is not None:
            return o
        if not p.startswith("/"):
            p = "/" + p
        for label, o2 in self.paths.items():
            if label.endswith(p):
                return o2
        return None

    def count_edge(self, flow_type: str, risk: str) -> None:
        self.edges += 1
        self.flow_types[flow_type] = self.flow_types.get(flow_type, 0) + 1
        self.risk_levels[risk] = self.risk_levels.get(risk, 0) + 1


def _add(found: dict[int, Match], o: Origin, how: str, sens: tuple[str, ...]) -> None:
    m = found.get(o.id)
    if m is None:
        found[o.id] = Match(o, how, sens)
    elif sens:
        m.sensitive = tuple(dict.fromkeys(m.sensitive + sens))


def prepare(
    full: str,
    fields: list[str],
    found_secrets: list[tuple[str, str, int]],
    k: int,
    budget: int,
) -> Prepared:
    """Fingerprints of a response: ``full`` text, its string ``fields``, and the
    sensitive values found in them as ``(type, value, field_index)`` (-1: full)."""
    cap = max(16, budget // 8)
    secrets: dict[str, str] = {}
    field_sens: dict[int, list[str]] = {}
    for typ, value, idx in found_secrets:
        nv = normalize(value)
        if nv and len(secrets) < cap // 2:
            secrets.setdefault(nv, typ)
        field_sens.setdefault(idx, []).append(typ)
    all_types = tuple(dict.fromkeys(t for t, _v, _i in found_secrets))
    exact: dict[bytes, tuple[str, ...]] = {}

    def put(text: str, sens: tuple[str, ...]) -> None:
        if len(text) >= k and len(exact) < cap // 2:
            exact.setdefault(digest(text), sens)
            n = normalize(text)
            if len(n) >= k:
                exact.setdefault(digest(n), sens)

    put(full, all_types)
    for i, f in enumerate(fields):
        put(f, tuple(dict.fromkeys(field_sens.get(i, ()))))
    room = cap - len(exact) - len(secrets)
    text = normalize("\n".join(fields) if fields else full)
    gs = grams(text, k)
    windows: list[int] = []
    w = 1
    if gs and room > 0:
        hs = [hash(g) for g in gs]
        w = max(1, math.ceil(2 * len(hs) / room) - 1) if len(hs) > room else 1
        chosen = winnow(hs, w)
        if len(chosen) > room:
            # winnowing density is 2/(w+1) on average: thin further by smallest hashes
            chosen = set(sorted(chosen)[:room])
        windows = list(chosen)
    return Prepared(exact, windows, secrets, all_types, w)
