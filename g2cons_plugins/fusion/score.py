"""Score fusion (``fusion="score"``, the default before share fusion): score-level fusion.

Every host item is put on the concept path's scale: a host chunk the graph holds is *its units*, and the host's vote
is evidence added to their scores: ``host_weight`` (h) x ``a`` / ((1 + r)(1 + j)) for the j-th best unit (by cosine
to the query) of the host's r-th distinct chunk, in the unit of ``bridge_bonus`` (scaled by the query's spread of
cosines). ``a`` (``host_agreement``) is the share of the host's first five graph chunks that the concept path alone
also places for this query. The concept path then ranks every unit once (seeds, bridges, evidence) and fills beta,
its first ``host_head`` passages kept first. A host item the graph does not hold, with text, is scored by its
embedding against the query plus the same evidence and placed whole where it fits. Lambda caps nothing here.

Only a strategy that takes host evidence (:data:`STRATEGIES`) can rank with it: another one raises an
``InputError`` naming the rule and the strategy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..retrieval import SPREAD_REF, DenseScores, RetrievedItem, retrieve, score_spread
from ..retrieval.linked import before_linked
from ..retrieval.strategies import EVIDENCE_STRATEGIES, lookup
from ..snapshot import Snapshot
from .items import FusedItem, HostItem
from .matching import BothPaths, both_paths, concept_head, cut
from .options import FuseOptions, FuseRequest
from .report import Fusion, report

__all__ = ["STRATEGIES", "check_strategy", "fuse_score"]

STRATEGIES = EVIDENCE_STRATEGIES
"""The concept-path strategies that rank with host evidence (their ``evidence`` flag in
:data:`g2cons_plugins.retrieval.strategies.TABLE`)."""

_Placed = tuple[RetrievedItem | None, tuple[int, HostItem] | None]  # a concept unit, or (host rank, host item)


def check_strategy(opt: FuseOptions) -> None:
    """Score fusion needs a strategy that takes host evidence: an ``InputError`` naming both otherwise (an unknown
    strategy: the retrieval table's own error)."""
    if not lookup(opt.strategy).evidence:
        raise InputError(
            f"fusion rule 'score' does not work with strategy {opt.strategy!r} (it needs one that takes host "
            f"evidence: {STRATEGIES}); choose fusion 'share' or 'ensemble', or another strategy"
        )


def fuse_score(req: FuseRequest, opt: FuseOptions) -> Fusion:
    """Score fusion (module doc): host chunks as evidence on the concept path's unit scores, one ranking, one budget;
    ``req.recount`` gives the units their token counts as the LLM will see them, the ranking is then cut to beta
    again."""
    check_strategy(opt)
    snap, paths = req.snap, both_paths(req, opt)
    w = opt.host_weight * paths.agreement
    evidence = _evidence(snap, paths, w)
    alone = before_linked(paths.alone)  # the concept path's order before its linked head (retrieval.linked)
    if evidence and w > 0:
        ranked = before_linked(retrieve(snap, req.query, opt.beta, opt.strategy, paths.query_vector, evidence=evidence))
    else:
        ranked = alone
    n_head = len(concept_head(alone, opt.host_head, opt.beta))
    head_ids = {it.unit_id for it in alone[:n_head]}
    if ranked is not alone and n_head:  # the concept path's head first, the host's evidence reorders the rest
        ranked = cut(alone[:n_head] + [it for it in ranked if it.unit_id not in head_ids], opt.beta)
    if req.recount is not None and ranked is not alone:
        ranked = cut(req.recount(ranked), opt.beta)
    foreign = [(r, h) for r, h in enumerate(req.hosts) if paths.units_of[r] is None and h.text]
    placed: list[_Placed]
    if foreign:  # merged into the ranking after the protected head
        head = [it for it in ranked[:n_head] if it.unit_id in head_ids]
        placed = [(c, None) for c in head]
        room = opt.beta - sum(c.n_tokens for c in head)
        placed += _merge_foreign(snap, ranked[len(head) :], foreign, paths.query_vector, w, room)
    else:
        placed = [(c, None) for c in ranked]
    items = _fused_items(snap, placed, req.hosts, paths)
    return report(snap, items, req.hosts, paths.units_of, "score")


def _evidence(snap: Snapshot, paths: BothPaths, w: float) -> dict[int, float]:
    """Unit position -> the host's vote: ``w`` / ((1 + r)(1 + j)) for the j-th best unit of its r-th chunk (a unit
    of several host chunks keeps its largest)."""
    units_of = paths.units_of
    evidence: dict[int, float] = {}
    dense = DenseScores(snap, paths.query_vector) if any(u is not None and len(u) > 1 for u in units_of) else None
    for r, units in enumerate(units_of):
        if units is None or not len(units):
            continue
        if dense is not None and len(units) > 1:  # a long host chunk: its units by their own cosine, best first
            units = units[np.argsort(-dense.of(units), kind="stable")]
        for j, u in enumerate(units.tolist()):
            e = w / ((1.0 + r) * (1.0 + j))  # the host's r-th chunk, the j-th best unit of it
            evidence[u] = max(evidence.get(u, 0.0), e)
    return evidence


def _merge_foreign(
    snap: Snapshot,
    concept: list[RetrievedItem],
    foreign: list[tuple[int, HostItem]],
    qv: np.ndarray,
    w: float,
    beta: int,
) -> list[_Placed]:
    """Host items the graph does not hold, scored cos(q, item) + evidence, merged into the concept ranking by
    score; the merged list is cut to beta again (an item that does not fit is skipped, the next tried)."""
    texts = [h.text or "" for _, h in foreign]
    vecs = snap.embedder.embed(texts)
    spread = snap.config.retrieval.score_scale == "spread"
    scale = score_spread(DenseScores(snap, qv)) / SPREAD_REF if spread else 1.0
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


def _fused_items(snap: Snapshot, placed: list[_Placed], hosts: list[HostItem], paths: BothPaths) -> list[FusedItem]:
    """Sources: "both", a host chunk's unit the concept path alone also places; "host": one only the host's evidence
    placed (or a host item the graph does not hold); "concept": the rest."""
    host_units = {u for units in paths.units_of if units is not None for u in units.tolist()}
    alone_ids = {c.unit_id for c in paths.alone}
    host_of = [(h, set(u.tolist())) for h, u in zip(hosts, paths.units_of, strict=True) if u is not None]
    out = []
    for c, fh in placed:
        if c is None:
            assert fh is not None
            h = fh[1]
            text = h.text or ""
            out.append(FusedItem("host", h.chunk_id, None, text, snap.count_tokens([text])[0], 0.0, h, None))
            continue
        u = snap.unit_pos[c.unit_id]
        if u not in host_units:
            out.append(FusedItem("concept", c.parent_id, c.unit_id, c.text, c.n_tokens, c.score, None, c))
            continue
        h = next(x for x, units in host_of if u in units)
        source = "both" if c.unit_id in alone_ids else "host"
        out.append(FusedItem(source, c.parent_id, c.unit_id, c.text, c.n_tokens, c.score, h, c))
    return out
