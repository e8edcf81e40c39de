"""Share fusion (``fusion="share"``, the default before novel-first fusion): lambda is the host's share of the budget.

Candidates: the concept path's context at beta (its units) and the host's own context at beta (its items in its
order while their tokens fit beta; a host chunk the graph holds stands for its units, a host text the graph lacks is
one item). Selection (:meth:`SharePlan.select`):

1. **overlap first**: the concept path's units of chunks the host also returned;
2. the concept path's **head** (its first ``host_head`` passages, at most half of beta, as score fusion keeps it);
3. the host's **first item whenever it fits** (its best unit by cosine to the query, or its text);
4. every other candidate by its **fused score**, each within its path's share: host-only items at most
   ``lambda_h`` x beta tokens, the concept path's at most (1 - ``lambda_h``) x beta (a host chunk larger than the
   room left contributes its best units, by cosine to the query);
5. the **spill**: what did not fit its share, by fused score, while the context stays within beta.

``lambda_h`` = lambda x :func:`share_scale` (``host_agreement``): the host's full share once 2 of its first 5 graph
chunks are the concept path's, less below. A host none of whose first five chunks the concept path places looks
like noise for this query: it gets no share and no first item, and fills only what the concept path leaves (a host
list of fewer than five chunks is trusted: its first item enters). The fused score of an item is
``lambda_h / (K + host rank) + (1 - lambda_h) / (K + concept rank)`` (weighted reciprocal rank fusion over the
chunks' ranks, ``K`` = :data:`RANK_K`; a path that does not return the item adds nothing). The context is ordered by
it, the concept path's head first; each item's ``score`` is that fused score (a head item's raised by 1 / K), so
scores never increase down the context.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..retrieval import DenseScores, RetrievedItem
from ..retrieval.linked import before_linked
from ..snapshot import Snapshot
from .items import FusedItem, HostItem
from .matching import AGREEMENT_TOP, BothPaths, both_paths, concept_head
from .options import FuseOptions, FuseRequest, Recount
from .report import Fusion, report

__all__ = ["RANK_K", "SHARE_FLOOR", "SHARE_FULL_AGREEMENT", "SharePlan", "fuse_share", "host_trusted", "share_scale"]

SHARE_FULL_AGREEMENT = 0.4  # agreement at which a host gets its whole lambda share (2 of its first 5 chunks)
SHARE_FLOOR = 0.0  # the host's share at agreement 0, as a fraction of lambda (its first item enters anyway)
RANK_K = 5.0  # the rank constant of the fused score (reciprocal rank fusion)


def share_scale(agreement: float, full_at: float = SHARE_FULL_AGREEMENT, floor: float = SHARE_FLOOR) -> float:
    """The fraction of lambda a host gets for a query: ``min(1, max(floor, agreement / full_at))``."""
    if full_at <= 0:
        return 1.0
    return min(1.0, max(floor, agreement / full_at))


def host_trusted(paths: BothPaths, opt: FuseOptions) -> bool:
    """The trust check: a host none of whose first :data:`AGREEMENT_TOP` graph chunks the concept path places looks
    like noise for this query (no share and no first item; what the concept path leaves is still its). A shorter
    list is trusted, and every host is with ``host_agreement`` off."""
    return paths.agreement > 0 or sum(u is not None for u in paths.units_of) < AGREEMENT_TOP or not opt.host_agreement


def fuse_share(req: FuseRequest, opt: FuseOptions) -> Fusion:
    """Share fusion (module doc): overlap first, then each path's best within its lambda share of the rest (the
    host's share scaled by its agreement, :func:`share_scale`), the host's first item whenever it fits, then a spill
    of what one path leaves to the other; the context ordered by its fused rank score."""
    paths = both_paths(req, opt)
    alone = before_linked(paths.alone)  # the concept path's order before its linked head (retrieval.linked)
    lam_h = opt.lambda_ * share_scale(paths.agreement)
    plan = SharePlan(req.snap, req.hosts, paths.units_of, alone, paths.query_vector, lam_h, req.recount, opt.beta)
    plan.first_item = host_trusted(paths, opt)
    n_head = len(concept_head(alone, opt.host_head, opt.beta))
    items = plan.ordered(plan.select(opt.beta, n_head), n_head)
    return report(req.snap, items, req.hosts, paths.units_of, "share")


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


class SharePlan:
    """The candidates of both paths for one query, and the selection and order of share fusion."""

    def __init__(
        self,
        snap: Snapshot,
        hosts: list[HostItem],
        units_of: list[np.ndarray | None],
        alone: list[RetrievedItem],
        qv: np.ndarray,
        lam_h: float,
        recount: Recount | None,
        beta: int,
    ) -> None:
        self.snap, self.hosts, self.lam_h = snap, hosts, lam_h
        self.first_item = True
        parents = list(dict.fromkeys(c.parent_id for c in alone))
        self.c_rank = {p: i for i, p in enumerate(parents)}
        n_host = _host_prefix(snap, hosts, units_of, beta)  # the host's own context at beta: its candidates
        hosts, units_of = hosts[:n_host], units_of[:n_host]
        h_rank: dict[int, int] = {}  # unit -> the best host rank holding it
        for r, units in enumerate(units_of):
            for u in [] if units is None else units.tolist():
                h_rank.setdefault(u, r)
        self.concept: list[_Cand] = []
        for c in alone:
            u = snap.unit_pos[c.unit_id]
            self.concept.append(_Cand(u, c.n_tokens, c, h_rank.get(u), self.c_rank[c.parent_id]))
        self.by_unit = {cand.key: cand for cand in self.concept}
        self.in_alone = set(self.by_unit)
        dense = DenseScores(snap, qv) if any(u is not None and len(u) > 1 for u in units_of) else None
        self.host: list[list[_Cand]] = []  # per host rank: its candidates, best unit first
        new: list[RetrievedItem] = []
        for r, (h, units) in enumerate(zip(hosts, units_of, strict=True)):
            self.host.append(self._host_row(r, h, units, dense, new))
        if recount is not None:  # tokens as the LLM will see them
            self._recount(recount, new)

    def _host_row(
        self, r: int, h: HostItem, units: np.ndarray | None, dense: DenseScores | None, new: list[RetrievedItem]
    ) -> list[_Cand]:
        """The host's r-th item as candidates: its text (the graph lacks it), or its units, best first."""
        if units is None:
            if not h.text:
                return []
            return [_Cand(("text", r), self.snap.count_tokens([h.text])[0], None, r, None, h)]
        if dense is not None and len(units) > 1:  # a long host chunk: its units by their own cosine
            units = units[np.argsort(-dense.of(units), kind="stable")]
        st = self.snap.stored
        row = []
        for u in units.tolist():
            cand = self.by_unit.get(u)
            if cand is None:
                unit = st.units[u]
                item = RetrievedItem(unit.id, unit.parent_id, unit.text, 0.0, int(st.unit_tokens[u]), {"via": "host"})
                cand = self.by_unit[u] = _Cand(u, item.n_tokens, item, r, self.c_rank.get(unit.parent_id))
                new.append(item)
            row.append(cand)
        return row

    def _recount(self, recount: Recount, new: list[RetrievedItem]) -> None:
        counted = {it.unit_id: it.n_tokens for it in recount([c.item for c in self.concept if c.item] + new)}
        for cand in self.by_unit.values():
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

        def key(i: int) -> tuple[bool, float, int]:
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
