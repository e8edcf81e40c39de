"""Dual-path fusion: the host KG retriever's results and the concept path in one context of at most beta tokens.

Three rules (``G2ConSConfig.fusion``):

- ``"share"`` (the default): lambda is the host's share of the budget. Candidates: the concept path's context at
  beta (its units) and the host's own context at beta (its items in its order while their tokens fit beta; a host
  chunk the graph holds stands for its units, a host text the graph lacks is one item). Selection:

  1. **overlap first**: the concept path's units of chunks the host also returned;
  2. the concept path's **head** (its first ``host_head`` passages, at most half of beta, as score fusion keeps it);
  3. the host's **first item whenever it fits** (its best unit by cosine to the query, or its text);
  4. every other candidate by its **fused score**, each within its path's share: host-only items at most
     ``lambda_h`` x beta tokens, the concept path's at most (1 - ``lambda_h``) x beta (a host chunk larger than the
     room left contributes its best units, by cosine to the query);
  5. the **spill**: what did not fit its share, by fused score, while the context stays within beta.

  ``lambda_h`` = lambda x :func:`share_scale` (``host_agreement``): the host's full share once 2 of its first 5
  graph chunks are the concept path's, less below. A host none of whose first five chunks the concept path places
  looks like noise for this query: it gets no share and no first item, and fills only what the concept path
  leaves (a host list of fewer than five chunks is trusted: its first item enters). The fused score of an item is
  ``lambda_h / (K + host rank) + (1 - lambda_h) / (K + concept rank)`` (weighted reciprocal rank fusion over the
  chunks' ranks, ``K`` = :data:`RANK_K`; a path that does not return the item adds nothing). The context is
  ordered by it, the concept path's head first; each item's ``score`` is that fused score (a head item's raised by
  1 / K), so scores never increase down the context.
- ``"score"`` (the default before share fusion): score-level fusion. Every host item is put on the concept path's
  scale: a host chunk the graph holds is *its units*, and the host's vote is evidence added to their scores:
  ``host_weight`` (h) x ``a`` / ((1 + r)(1 + j)) for the j-th best unit (by cosine to the query) of the host's r-th
  distinct chunk, in the unit of ``bridge_bonus`` (scaled by the query's spread of cosines). ``a``
  (``host_agreement``) is the share of the host's first five graph chunks that the concept path alone also places
  for this query. The concept path then ranks every unit once (seeds, bridges, evidence) and fills beta, its first
  ``host_head`` passages kept first. A host item the graph does not hold, with text, is scored by its embedding
  against the query plus the same evidence and placed whole where it fits. Lambda caps nothing here.
- ``"ensemble"`` (``mode="paper"``): the paper's Weighted Context Ensemble, :func:`g2cons_plugins.fusion.ensemble.fuse`:
  overlap first, the host capped at lambda x beta, the concept path at (1 - lambda) x beta.

Every host item that contributes nothing is reported with its reason in :class:`Fusion` (``dropped``): ranked
below the budget, not in the graph and longer than the room left, or an id-only item the graph does not know.
Measured against the old default and the ensemble on the same runs: benchmarks/dual_path/fusion_compare.sh.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputError, positive_int, real, unit_interval
from ..retrieval import SPREAD_REF, DenseScores, RetrievedItem, retrieve, score_spread
from ..snapshot import HasSnapshot, Snapshot, as_snapshot
from .ensemble import FusedItem, HostItem, _norm, context_tokens, fuse, resolve_host_items

FUSIONS = ("share", "score", "ensemble")
REASON_BELOW = "its units ranked below the budget"
REASON_TOO_LONG = "not in the concept graph and longer than the room left"
REASON_UNKNOWN = "id not in the concept graph and no text"
REASON_CAP = "did not fit the host share (lambda x beta)"


@dataclass(frozen=True)
class Fusion:
    """A fused context and what happened to each host item: ``items`` (the context, best first), ``host_items``
    (distinct host items given), ``contributed`` (of those, how many placed text in the context) and ``dropped``
    (reason -> count; ``dropped_examples``: reason -> up to 3 ids or text heads)."""

    items: list[FusedItem]
    host_items: int
    contributed: int
    dropped: Mapping[str, int] = field(default_factory=dict)
    dropped_examples: Mapping[str, list[str]] = field(default_factory=dict)
    rule: str = "score"

    @property
    def n_tokens(self) -> int:
        """Tokens of the fused context."""
        return context_tokens(self.items)

    def summary(self) -> str:
        """One line: items by source, tokens, and host items dropped with their reasons."""
        by = Counter(f.source for f in self.items)
        line = (
            f"{len(self.items)} items ({by['both']} both, {by['host']} host, {by['concept']} concept), "
            f"{self.n_tokens} tokens; host items: {self.host_items} given, {self.contributed} contributed"
        )
        if self.dropped:
            line += "; not placed: " + ", ".join(f"{n} {r}" for r, n in self.dropped.items())
        return line


_UNITS_OF: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(stored) -> table, dropped with the stored state


def chunk_units(snap: Snapshot, chunk_pos: int) -> np.ndarray:
    """Unit positions of one chunk (a chunk -> units table built once per stored state)."""
    st = snap.stored
    table = _UNITS_OF.get(id(st))
    if table is None:
        parent = np.asarray(st.unit_parent)
        order = np.argsort(parent, kind="stable")
        starts = np.searchsorted(parent[order], np.arange(len(st.chunks) + 1))
        table = _UNITS_OF[id(st)] = (order, starts)
        weakref.finalize(st, _UNITS_OF.pop, id(st), None)
    order, starts = table
    return order[starts[chunk_pos] : starts[chunk_pos + 1]]


def _host_label(h: HostItem) -> str:
    return h.chunk_id if h.chunk_id is not None else (h.text or "")[:40]


def _distinct(hosts: Sequence[HostItem]) -> list[HostItem]:
    seen: set[str] = set()
    out = []
    for h in hosts:
        key = h.chunk_id if h.chunk_id is not None else "\0" + (h.text or "")
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def _host_units(snap: Snapshot, h: HostItem) -> np.ndarray | None:
    """Unit positions a host item stands for (its chunk's units, or one unit), None when the graph lacks it."""
    if h.chunk_id is not None:
        if h.chunk_id in snap.chunk_pos:
            return chunk_units(snap, snap.chunk_pos[h.chunk_id])
        if h.chunk_id in snap.unit_pos:
            return np.asarray([snap.unit_pos[h.chunk_id]], dtype=np.int64)
    return None


_TEXT_OF: dict[int, dict[str, int]] = {}  # id(stored) -> normalised chunk text -> chunk position


def _chunk_by_text(snap: Snapshot, text: str) -> int | None:
    st = snap.stored
    table = _TEXT_OF.get(id(st))
    if table is None:
        table = _TEXT_OF[id(st)] = {}
        for pos, c in enumerate(st.chunks):
            table.setdefault(_norm(c.text), pos)
        weakref.finalize(st, _TEXT_OF.pop, id(st), None)
    return table.get(_norm(text))


def _match_text(snap: Snapshot, h: HostItem, alone: Sequence[RetrievedItem]) -> np.ndarray | None:
    """Units of the chunk a host text is (normalised equal), or the units of the concept path's own result whose
    text it contains (a host chunk covering ours, as the ensemble matches); None when neither."""
    assert h.text is not None
    pos = _chunk_by_text(snap, h.text)
    if pos is not None:
        return chunk_units(snap, pos)
    hn = _norm(h.text)
    hit = [snap.unit_pos[c.unit_id] for c in alone if len(_norm(c.text)) >= 20 and _norm(c.text) in hn]
    return np.asarray(hit, dtype=np.int64) if hit else None


def score_fuse(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    beta: int | None = None,
    host_weight: float | None = None,
    query_vector: np.ndarray | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    strategy: str | None = None,
    recount: Callable[[list[RetrievedItem]], list[RetrievedItem]] | None = None,
) -> Fusion:
    """Score-level fusion (module doc): host chunks as evidence on the concept path's unit scores, one ranking,
    one budget. ``host_weight`` defaults to the config's; ``concept``: the concept path alone
    for this query and beta when the caller already has it (same ``strategy``); ``recount``: gives the units their
    token counts as the LLM will see them (an adapter rendering metadata), the ranking is then cut to beta again."""
    snap = as_snapshot(index)
    cfg = snap.config
    beta = cfg.beta if beta is None else positive_int("beta", beta)
    w = cfg.host_weight if host_weight is None else real("host_weight", host_weight)
    if w < 0:
        raise InputError(f"host_weight must be >= 0, got {w}")
    hosts = _distinct(resolve_host_items(snap, host))
    qv = snap.embed_query(query) if query_vector is None else query_vector
    units_of = [_host_units(snap, h) for h in hosts]
    alone = list(concept) if concept is not None else retrieve(snap, query, beta, strategy, qv)
    # an item without an id is matched by its text (as the ensemble does); an unknown id is never matched by text
    units_of = [
        _match_text(snap, h, alone) if u is None and h.text and h.chunk_id is None else u
        for h, u in zip(hosts, units_of, strict=True)
    ]
    agree = _agreement(hosts, units_of, {c.parent_id for c in alone}) if cfg.host_agreement else 1.0
    w *= agree
    evidence: dict[int, float] = {}
    dense = DenseScores(snap, qv) if any(u is not None and len(u) > 1 for u in units_of) else None
    for r, units in enumerate(units_of):
        if units is None or not len(units):
            continue
        if dense is not None and len(units) > 1:  # a long host chunk: its units by their own cosine, best first
            units = units[np.argsort(-dense.of(units), kind="stable")]
        for j, u in enumerate(units.tolist()):
            e = w / ((1.0 + r) * (1.0 + j))  # the host's r-th chunk, the j-th best unit of it
            evidence[u] = max(evidence.get(u, 0.0), e)
    ranked = retrieve(snap, query, beta, strategy, qv, evidence=evidence) if evidence and w > 0 else alone
    n_head = len(_head(alone, cfg.host_head, beta))
    head_ids = _ids(alone[:n_head])
    if ranked is not alone and n_head:
        ranked = _cut(alone[:n_head] + [it for it in ranked if it.unit_id not in head_ids], beta)
    if recount is not None and ranked is not alone:
        ranked = _cut(recount(ranked), beta)
    foreign = [(r, h) for r, h in enumerate(hosts) if units_of[r] is None and h.text]
    placed: list[tuple[RetrievedItem | None, tuple[int, HostItem] | None]]
    if foreign:  # merged into the ranking after the protected head
        head = [it for it in ranked[:n_head] if it.unit_id in head_ids]
        placed = [(c, None) for c in head]
        placed += _merge_foreign(snap, ranked[len(head) :], foreign, qv, w, beta - sum(c.n_tokens for c in head))
    else:
        placed = [(c, None) for c in ranked]
    host_units = {u for units in units_of if units is not None for u in units.tolist()}
    alone_ids = {c.unit_id for c in alone}
    host_of = [(h, set(u.tolist())) for h, u in zip(hosts, units_of, strict=True) if u is not None]
    items = [_fused_item(snap, c, f, host_units, host_of, alone_ids) for c, f in placed]
    return _report(snap, items, hosts, units_of, beta, "score")


SHARE_FULL_AGREEMENT = 0.4  # agreement at which a host gets its whole lambda share (2 of its first 5 chunks)
SHARE_FLOOR = 0.0  # the host's share at agreement 0, as a fraction of lambda (its first item enters anyway)
RANK_K = 5.0  # the rank constant of the fused score (reciprocal rank fusion)


def share_scale(agreement: float, full_at: float = SHARE_FULL_AGREEMENT, floor: float = SHARE_FLOOR) -> float:
    """The fraction of lambda a host gets for a query: ``min(1, max(floor, agreement / full_at))``."""
    if full_at <= 0:
        return 1.0
    return min(1.0, max(floor, agreement / full_at))


def share_fuse(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    beta: int | None = None,
    lambda_: float | None = None,
    query_vector: np.ndarray | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    strategy: str | None = None,
    recount: Callable[[list[RetrievedItem]], list[RetrievedItem]] | None = None,
    full_at: float = SHARE_FULL_AGREEMENT,
    floor: float = SHARE_FLOOR,
    head: int | None = None,
) -> Fusion:
    """Share fusion (module doc): overlap first, then each path's best within its lambda share of the rest (the
    host's share scaled by its agreement, :func:`share_scale`), the host's first item whenever it fits, then a spill
    of what one path leaves to the other; the context ordered by its fused rank score. ``concept``: the concept
    path alone for this query and beta when the caller already has it (same ``strategy``); ``recount``: gives units
    their token counts as the LLM will see them (an adapter rendering metadata)."""
    snap = as_snapshot(index)
    cfg = snap.config
    beta = cfg.beta if beta is None else positive_int("beta", beta)
    lam = cfg.fusion_lambda if lambda_ is None else unit_interval("lambda_", lambda_)
    hosts = _distinct(resolve_host_items(snap, host))
    qv = snap.embed_query(query) if query_vector is None else query_vector
    alone = list(concept) if concept is not None else retrieve(snap, query, beta, strategy, qv)
    units_of = [_host_units(snap, h) for h in hosts]
    units_of = [
        _match_text(snap, h, alone) if u is None and h.text and h.chunk_id is None else u
        for h, u in zip(hosts, units_of, strict=True)
    ]
    agree = _agreement(hosts, units_of, {c.parent_id for c in alone}) if cfg.host_agreement else 1.0
    lam_h = lam * share_scale(agree, full_at, floor)
    plan = _SharePlan(snap, hosts, units_of, alone, qv, lam_h, recount, beta)
    # a host none of whose first AGREEMENT_TOP graph chunks the concept path places looks like noise for this
    # query: no share and no first item (what the concept path leaves is still its); a shorter list is trusted
    plan.first_item = agree > 0 or sum(u is not None for u in units_of) < AGREEMENT_TOP or not cfg.host_agreement
    n_head = len(_head(alone, cfg.host_head if head is None else head, beta))
    placed = plan.select(beta, n_head)
    items = plan.ordered(placed, n_head)
    return _report(snap, items, hosts, units_of, beta, "share")


def _host_prefix(snap: Snapshot, hosts: list[HostItem], units_of: list[np.ndarray | None], beta: int) -> int:
    """How many of the host's items its own context of ``beta`` tokens holds (in its order, at least one): the
    host's candidates, as the concept path's are its context at beta."""
    tokens = np.asarray(snap.stored.unit_tokens)
    used = 0
    for r, (h, units) in enumerate(zip(hosts, units_of, strict=True)):
        if units is not None:
            used += int(tokens[units].sum())
        elif h.text:
            used += snap.count_tokens([h.text])[0]
        if used > beta:
            return max(r, 1)
    return len(hosts)


@dataclass
class _Cand:
    """One candidate of share fusion: a unit of the graph (``item``) or a host text the graph lacks (``host``)."""

    key: Any  # unit position, or ("text", host rank)
    n_tokens: int
    item: RetrievedItem | None
    host_rank: int | None  # rank of the host item it belongs to (None: concept only)
    concept_rank: int | None  # rank of its chunk among the concept path's distinct chunks (None: host only)
    host: HostItem | None = None


class _SharePlan:
    """The candidates of both paths for one query, and the selection and order of share fusion."""

    def __init__(
        self,
        snap: Snapshot,
        hosts: list[HostItem],
        units_of: list[np.ndarray | None],
        alone: list[RetrievedItem],
        qv: np.ndarray,
        lam_h: float,
        recount: Callable[[list[RetrievedItem]], list[RetrievedItem]] | None,
        beta: int,
    ) -> None:
        self.snap, self.hosts, self.lam_h = snap, hosts, lam_h
        self.first_item = True
        st = snap.stored
        parents = list(dict.fromkeys(c.parent_id for c in alone))
        c_rank = {p: i for i, p in enumerate(parents)}
        n_host = _host_prefix(snap, hosts, units_of, beta)  # the host's own context at beta: its candidates
        hosts, units_of = hosts[:n_host], units_of[:n_host]
        h_rank: dict[int, int] = {}  # unit -> the best host rank holding it
        for r, units in enumerate(units_of):
            for u in [] if units is None else units.tolist():
                h_rank.setdefault(u, r)
        self.concept: list[_Cand] = []
        for c in alone:
            u = snap.unit_pos[c.unit_id]
            self.concept.append(_Cand(u, c.n_tokens, c, h_rank.get(u), c_rank[c.parent_id]))
        by_unit = {cand.key: cand for cand in self.concept}
        self.in_alone = set(by_unit)
        dense = DenseScores(snap, qv) if any(u is not None and len(u) > 1 for u in units_of) else None
        self.host: list[list[_Cand]] = []  # per host rank: its candidates, best unit first
        new: list[RetrievedItem] = []
        for r, (h, units) in enumerate(zip(hosts, units_of, strict=True)):
            if units is None:
                if h.text:
                    n = snap.count_tokens([h.text])[0]
                    self.host.append([_Cand(("text", r), n, None, r, None, h)])
                else:
                    self.host.append([])
                continue
            if dense is not None and len(units) > 1:  # a long host chunk: its units by their own cosine
                units = units[np.argsort(-dense.of(units), kind="stable")]
            row = []
            for u in units.tolist():
                cand = by_unit.get(u)
                if cand is None:
                    unit = st.units[u]
                    item = RetrievedItem(
                        unit.id, unit.parent_id, unit.text, 0.0, int(st.unit_tokens[u]), {"via": "host"}
                    )
                    cand = by_unit[u] = _Cand(u, item.n_tokens, item, r, c_rank.get(unit.parent_id))
                    new.append(item)
                row.append(cand)
            self.host.append(row)
        if recount is not None:  # tokens as the LLM will see them
            counted = {it.unit_id: it.n_tokens for it in recount([c.item for c in self.concept if c.item] + new)}
            for cand in by_unit.values():
                if cand.item is not None and counted.get(cand.item.unit_id, cand.n_tokens) != cand.n_tokens:
                    cand.n_tokens = counted[cand.item.unit_id]
                    cand.item = replace(cand.item, n_tokens=cand.n_tokens)

    def score(self, c: _Cand) -> float:
        """Fused rank score: lambda_h / (K + host rank) + (1 - lambda_h) / (K + concept rank), ranks of chunks from
        0 and ``K`` = :data:`RANK_K` (reciprocal rank fusion, weighted)."""
        s = 0.0
        if c.host_rank is not None:
            s += self.lam_h / (RANK_K + c.host_rank)
        if c.concept_rank is not None:
            s += (1.0 - self.lam_h) / (RANK_K + c.concept_rank)
        return s

    def select(self, beta: int, n_head: int = 0) -> list[_Cand]:
        """Overlap first; then every other candidate by fused score, each within its path's share (host-only
        lambda_h x beta, the concept path's (1 - lambda_h) x beta); the host's first item whenever it fits; then
        the spill (what did not fit its share, by fused score, within beta)."""
        placed: dict[Any, _Cand] = {}
        used = {"host": 0, "concept": 0, "both": 0}
        cap = {"host": self.lam_h * beta, "concept": (1.0 - self.lam_h) * beta, "both": float(beta)}

        def put(c: _Cand, path: str, capped: bool = True) -> bool:
            total = used["host"] + used["concept"] + used["both"]
            if c.key in placed or total + c.n_tokens > beta or (capped and used[path] + c.n_tokens > cap[path]):
                return False
            placed[c.key] = c
            used[path] += c.n_tokens
            return True

        def path(c: _Cand) -> str:
            return "concept" if c.host_rank is None else "both" if c.key in self.in_alone else "host"

        for c in self.concept:  # 1. overlap: the concept path's units of chunks the host also returned
            if c.host_rank is not None:
                put(c, "both")
        for c in self.concept[:n_head]:  # the concept path's head (its first passages)
            put(c, "concept", capped=False)
        first = next((row for row in self.host if row), []) if self.first_item else []
        if first and not any(c.key in placed for c in first):  # 2. the host's first item whenever it fits
            for c in first:
                if put(c, "host", capped=False):
                    break
        rest = [c for c in self.concept if c.key not in placed]
        rest += [c for row in self.host for c in row if c.key not in placed and c.key not in self.in_alone]
        rest.sort(key=lambda c: -self.score(c))  # stable: the concept path's order, then the host's, on ties
        left = [c for c in rest if not put(c, path(c))]  # 3. each path's best within its share
        for c in left:  # 4. the spill
            put(c, path(c), capped=False)
        return list(placed.values())

    def ordered(self, placed: list[_Cand], n_head: int = 0) -> list[FusedItem]:
        """The context best first: the concept path's head (its first ``n_head`` units), then by fused score. Each
        item's ``score`` is its fused score, a head item's raised by 1 / K (above any other): scores never increase
        down the context."""
        head = {c.key for c in self.concept[:n_head]}

        def key(i: int) -> tuple[int, float, int]:
            return (placed[i].key not in head, -self.score(placed[i]), i)

        out = []
        for i in sorted(range(len(placed)), key=key):
            c = placed[i]
            s = self.score(c) + (1.0 / RANK_K if c.key in head else 0.0)
            if c.item is None:
                assert c.host is not None
                text = c.host.text or ""
                out.append(FusedItem("host", c.host.chunk_id, None, text, c.n_tokens, s, c.host, None))
                continue
            h = self.hosts[c.host_rank] if c.host_rank is not None else None
            source = "concept" if h is None else "both" if c.key in self.in_alone else "host"
            out.append(FusedItem(source, c.item.parent_id, c.item.unit_id, c.item.text, c.n_tokens, s, h, c.item))
        return out


def _head(alone: list[RetrievedItem], n: int, beta: int) -> list[RetrievedItem]:
    """The concept path's own first ``n`` passages (its units up to the n-th distinct chunk, at most half of beta):
    kept first whatever the host says, so the host's evidence reorders the rest of the context, never the head the
    concept path is surest of."""
    head: list[RetrievedItem] = []
    parents: set[str] = set()
    used = 0
    for it in alone:
        if (it.parent_id not in parents and len(parents) >= n) or used + it.n_tokens > beta // 2:
            break
        parents.add(it.parent_id)
        head.append(it)
        used += it.n_tokens
    return head


def _ids(items: Sequence[RetrievedItem]) -> set[str]:
    return {it.unit_id for it in items}


def _cut(items: list[RetrievedItem], beta: int) -> list[RetrievedItem]:
    """Items in order while they fit in beta (one that does not fit is skipped)."""
    used, out = 0, []
    for it in items:
        if used + it.n_tokens <= beta:
            used += it.n_tokens
            out.append(it)
    return out


AGREEMENT_TOP = 5


def _agreement(hosts: list[HostItem], units_of: list[np.ndarray | None], concept_chunks: set[str]) -> float:
    """Share of the host's first ``AGREEMENT_TOP`` graph chunks that the concept path alone also places: how much
    this query's host results are worth (a host that returns noise for a query gets no say in its ranking)."""
    top = [h.chunk_id for h, u in zip(hosts, units_of, strict=True) if u is not None][:AGREEMENT_TOP]
    return sum(c in concept_chunks for c in top) / len(top) if top else 0.0


def _merge_foreign(
    snap: Snapshot,
    concept: list[RetrievedItem],
    foreign: list[tuple[int, HostItem]],
    qv: np.ndarray,
    w: float,
    beta: int,
) -> list[tuple[RetrievedItem | None, tuple[int, HostItem] | None]]:
    """Host items the graph does not hold, scored cos(q, item) + evidence, merged into the concept ranking by
    score; the merged list is cut to beta again (an item that does not fit is skipped, the next tried)."""
    texts = [h.text or "" for _, h in foreign]
    vecs = snap.embedder.embed(texts)
    scale = score_spread(DenseScores(snap, qv)) / SPREAD_REF if snap.config.score_scale == "spread" else 1.0
    f_scores = [float(v @ qv) + w * scale / (1.0 + r) for v, (r, _) in zip(vecs, foreign, strict=True)]
    f_tokens = snap.count_tokens(texts)
    merged: list[tuple[float, int, Any]] = [(c.score, 0, (c, None)) for c in concept]
    merged += [(s, 1, (None, fh)) for s, fh in zip(f_scores, foreign, strict=True)]
    merged.sort(key=lambda x: (-x[0], x[1]))
    used, out = 0, []
    n_of = {id(fh): n for fh, n in zip(foreign, f_tokens, strict=True)}
    for _, _, (c, fh) in merged:
        n = c.n_tokens if c is not None else n_of[id(fh)]
        if used + n <= beta:
            used += n
            out.append((c, fh))
    return out


def _fused_item(
    snap: Snapshot,
    c: RetrievedItem | None,
    fh: tuple[int, HostItem] | None,
    host_units: set[int],
    host_of: list[tuple[HostItem, set[int]]],
    alone_ids: set[str],
) -> FusedItem:
    """Sources: "both", a host chunk's unit the concept path alone also places; "host": one only the host's evidence
    placed (or a host item the graph does not hold); "concept": the rest."""
    if c is None:
        assert fh is not None
        h = fh[1]
        text = h.text or ""
        return FusedItem("host", h.chunk_id, None, text, snap.count_tokens([text])[0], 0.0, h, None)
    u = snap.unit_pos[c.unit_id]
    if u not in host_units:
        return FusedItem("concept", c.parent_id, c.unit_id, c.text, c.n_tokens, c.score, None, c)
    h = next(x for x, units in host_of if u in units)
    source = "both" if c.unit_id in alone_ids else "host"
    return FusedItem(source, c.parent_id, c.unit_id, c.text, c.n_tokens, c.score, h, c)


def _report(
    snap: Snapshot,
    items: list[FusedItem],
    hosts: list[HostItem],
    units_of: list[np.ndarray | None],
    beta: int,
    rule: str,
) -> Fusion:
    if rule == "ensemble":  # placed as the host's item ("host" or "both"), not by the concept path alone
        placed_chunks = {f.host.chunk_id for f in items if f.host is not None and f.host.chunk_id is not None}
        placed_units: set[int] = set()
    else:  # any of its units in the context
        placed_chunks = {f.chunk_id for f in items if f.chunk_id is not None and f.host is not None}
        placed_units = {
            snap.unit_pos[f.unit_id]
            for f in items
            if f.host is not None and f.unit_id is not None and f.unit_id in snap.unit_pos
        }
    placed_hosts = {id(f.host) for f in items if f.host is not None}
    dropped: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    contributed = 0
    for h, units in zip(hosts, units_of, strict=True):
        by_id = h.chunk_id is not None and h.chunk_id in placed_chunks
        if by_id or id(h) in placed_hosts or (units is not None and placed_units.intersection(units.tolist())):
            contributed += 1
            continue
        if units is not None:
            reason = REASON_BELOW
        elif h.text:
            reason = REASON_TOO_LONG
        else:
            reason = REASON_UNKNOWN
        dropped[reason] += 1
        examples.setdefault(reason, [])
        if len(examples[reason]) < 3:
            examples[reason].append(_host_label(h))
    return Fusion(items, len(hosts), contributed, dict(dropped), examples, rule)


def ensemble_fuse(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    beta: int | None = None,
    lambda_: float | None = None,
    spill: bool | None = None,
    query_vector: np.ndarray | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    strategy: str | None = None,
) -> Fusion:
    """The paper's Weighted Context Ensemble (:func:`~g2cons_plugins.fusion.ensemble.fuse`) with the same report."""
    snap = as_snapshot(index)
    cfg = snap.config
    beta = cfg.beta if beta is None else positive_int("beta", beta)
    lam = cfg.fusion_lambda if lambda_ is None else unit_interval("lambda_", lambda_)
    spl = cfg.fusion_spill if spill is None else spill
    hosts = _distinct(resolve_host_items(snap, host))
    if concept is None:
        concept = retrieve(snap, query, beta, strategy, query_vector)
    items = fuse(hosts, concept, beta=beta, lambda_=lam, tokenizer=snap.tokenizer, spill=spl)
    out = _report(snap, items, hosts, [_host_units(snap, h) for h in hosts], beta, "ensemble")
    dropped = {(REASON_CAP if r in (REASON_BELOW, REASON_TOO_LONG) else r): n for r, n in out.dropped.items()}
    examples = {(REASON_CAP if r in (REASON_BELOW, REASON_TOO_LONG) else r): e for r, e in out.dropped_examples.items()}
    return Fusion(out.items, out.host_items, out.contributed, dropped, examples, "ensemble")


def fuse_report(
    index: HasSnapshot,
    host: Sequence[Any],
    query: str,
    beta: int | None = None,
    lambda_: float | None = None,
    spill: bool | None = None,
    query_vector: np.ndarray | None = None,
    rule: str | None = None,
    host_weight: float | None = None,
    concept: Sequence[RetrievedItem] | None = None,
    strategy: str | None = None,
    recount: Callable[[list[RetrievedItem]], list[RetrievedItem]] | None = None,
) -> Fusion:
    """Fuse ``host`` with the concept path for ``query`` by the config's rule (``rule`` overrides it: "score" or
    "ensemble"); returns the context and the report of host items not placed. ``concept``: the concept path alone
    (same beta and ``strategy``) when the caller already ran it. Score fusion needs the ``bridge`` or ``dense``
    strategy; with another one the ensemble is used."""
    snap = as_snapshot(index)
    rule = snap.config.fusion if rule is None else rule
    if lambda_ is not None:  # the ensemble's settings are checked whatever the rule
        unit_interval("lambda_", lambda_)
    if spill is not None and not isinstance(spill, (bool, np.bool_)):
        raise InputError(f"spill must be True or False, got {spill!r}")
    if rule not in FUSIONS:
        raise InputError(f"unknown fusion rule {rule!r}; choose one of {FUSIONS}")
    if rule == "share":
        return share_fuse(snap, host, query, beta, lambda_, query_vector, concept=concept, strategy=strategy,
                          recount=recount)  # fmt: skip
    if rule == "score" and (strategy or snap.config.strategy) in ("bridge", "dense"):
        return score_fuse(
            snap, host, query, beta, host_weight, query_vector, concept=concept, strategy=strategy, recount=recount
        )
    return ensemble_fuse(snap, host, query, beta, lambda_, spill, query_vector, concept=concept, strategy=strategy)
