"""Novel-first fusion (``fusion="novel"``, the default rule): the host's best passages the concept path lacks enter.

Candidates: the concept path's context at beta (its units, best first) and the host's items in its order (a host
chunk the graph holds stands for its units, best first by cosine to the query; a host text the graph lacks is one
piece). Passages are chunks. Selection (:func:`novel_first`):

1. **trust check**: share fusion's (:func:`~g2cons_plugins.fusion.share.host_trusted`): a host none of whose first
   five graph chunks the concept path places looks like noise for this query and gets no novel passage (only the
   spill, step 4); a shorter host list is trusted;
2. **the host's novel passages**: among the host's first :data:`NOVEL_WINDOW` (2) passages, those the concept
   path's context lacks, in the host's order, each as its best piece: the first always (when it fits in beta and
   lambda > 0), a second while the novel pieces' tokens stay within lambda x beta. In a long context (the concept
   path's holds at least :data:`NOVEL_ANY_RANK_FROM` (20) passages) the first novel passage may come from any
   rank of the host's list: there it displaces only the concept path's 20th passage or later, while in a short
   context (about 1,000 tokens of MuSiQue passages hold 11) a deep host passage would cost one the concept path
   ranks in its first ten;
3. **the concept path** fills the rest in its own order (a piece that does not fit is skipped): the novel passages
   displace its tail, never its head; the tail as the concept path ranked it before its linked head
   (:mod:`~g2cons_plugins.retrieval.linked` only reorders, so what fits is chosen in the order before it);
4. **spill**: what is left of beta goes to the host's remaining pieces, in the host's order.

The context: the concept path's first ``host_head`` (5) passages (:func:`~g2cons_plugins.fusion.matching.concept_head`
over the whole budget), the novel passages, the rest of the concept path, the spill; each item's ``score`` is
``1 / (K + position)`` (``K`` = :data:`~g2cons_plugins.fusion.share.RANK_K`), so scores strictly decrease down the
context. Host scores are not used, only the host's ranks. With the concept path's five passages first, supporting-
passage recall@5 is the concept path's wherever it places five passages.

What it follows: the paper's Weighted Context Ensemble (Section 3.2.1; :mod:`~g2cons_plugins.fusion.ensemble`) and
share fusion (:mod:`~g2cons_plugins.fusion.share`) split the budget by lambda; on MuSiQue the host's value at small
budgets is its best passage or two that the concept path *lacks* (bridge passages it ranks first that the concept
path ranks 10th-30th), so this rule spends lambda on those, behind the concept path's head; share fusion's "the
host's first item whenever it fits", made novel (a first item the concept path already holds adds nothing).

Measured (Context Recall at beta 1k / 2k / 4k, lambda 0.2, minilm; ``bash benchmarks/dual_path/fusion_novel.sh``,
both rules on the same ``g2cons eval --host`` runs: benchmarks/dual_path/results/novel_summary.md):

=====================================================  =================  =================  =================
set (host, kappa)                                      concept            share@0.2          novel@0.2
=====================================================  =================  =================  =================
MuSiQue train100, graph walk (gpt-3.5 KG), 1.0         70/81/89           68/80/92           73/85/89
MuSiQue train100, graph walk, 0.5                      70/81/89           69/79/89           73/83/89
the same in 1,200-token packs, 1.0                     65/82/89           63/84/92           65/82/89
the same in 1,200-token packs, 0.5                     65/82/89           65/87/93           67/84/89
MuSiQue train100, NER, 0.8                             70/81/89           69/81/90           73/81/89
HotpotQA train100, NER, 0.8                            91/94/98           89/94/99           91/95/98
MuSiQue KET-RAG 500 (held out, %), NER, 0.8            60.4/69.4/76.6     61.0/69.8/78.4     61.4/70.4/77.4
2Wiki KET-RAG 500 (held out, %), NER, 0.8              64.8/69.0/74.6     65.2/69.8/76.0     65.8/69.4/75.2
=====================================================  =================  =================  =================

At or above the concept path in all 24 cells (share fusion: below it in 7); over the 24 the two rules are close
(sum 1,914.6 against 1,903.2; the graph walk at kappa 0.5 links dropped chunks to the KG's entities,
``link_texts``): novel-first gains at 1k and 2k, share fusion at 4k and in packs (its host share takes host
passages ranked 5th-12th; a pack the concept path holds one unit of is not novel). recall@5 = the concept path's.
The rule (window 2, lambda 0.2) was chosen among about twenty variants on the train100 sets
(``bash benchmarks/dual_path/fusion_rules.sh`` compares them offline: results/fusion_rules.md); held out only with
the NER host. The first novel passage from any rank in a context of 20 passages or more
(:data:`NOVEL_ANY_RANK_FROM`) came later, from the same offline comparison: with the window alone 73/82/89 and
73/82/89 with the graph walk, 65.0/69.2/74.8 on 2Wiki, 61.4/70.6/77.6 on MuSiQue KET-RAG 500, 67/84/90 in packs at
kappa 0.5; the same from thresholds 16 to 24 (from any rank always: 75/85/89 at kappa 1.0 but 70/83/89 at 0.5,
89/95/98 on HotpotQA, below the concept path).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..retrieval import DenseScores, RetrievedItem
from ..retrieval.linked import position_before
from ..snapshot import Snapshot
from .items import FusedItem, HostItem
from .matching import both_paths, concept_head
from .options import FuseOptions, FuseRequest, Recount
from .report import Fusion, report
from .share import RANK_K, host_trusted

__all__ = ["NOVEL_ANY_RANK_FROM", "NOVEL_WINDOW", "Piece", "fuse_novel", "novel_first"]

NOVEL_WINDOW = 2
"""How many of the host's first passages may enter as novel (the host's rank is its confidence)."""

NOVEL_ANY_RANK_FROM = 20
"""From this many passages in the concept path's context on, the host's first novel passage may come from any rank
(the window then bounds only the passages after it)."""

Key = int | tuple[str, int]  # a unit position, or ("text", host rank) for a host text the graph lacks


@dataclass(frozen=True)
class Piece:
    """One piece a path offers: its ``key``, the ``passage`` (chunk id) it belongs to, its tokens, the unit
    (``item``; None for a host text the graph lacks) and the host item it came from (None: the concept path's)."""

    key: Key
    passage: str
    n_tokens: int
    item: RetrievedItem | None
    host: HostItem | None = None


def _distinct_keys(pieces: Sequence[Piece]) -> list[Piece]:
    seen: set[Key] = set()
    out = []
    for p in pieces:
        if p.key not in seen:  # a repeated key is the same piece: its first place counts
            seen.add(p.key)
            out.append(p)
    return out


def _passages(pieces: Sequence[Piece]) -> dict[str, list[Piece]]:
    """Pieces per passage, passages in order of first appearance."""
    groups: dict[str, list[Piece]] = {}
    for p in pieces:
        groups.setdefault(p.passage, []).append(p)
    return groups


class _Fill:
    """The context being filled: keys taken and tokens used, within beta."""

    def __init__(self, beta: int, concept_keys: set[Key]) -> None:
        self.beta, self.concept_keys = beta, concept_keys
        self.taken: set[Key] = set()
        self.used = 0

    def fits(self, p: Piece, host: bool = False) -> bool:
        """Not taken, fits beta; a host piece also not one of the concept path's (a key both give is its)."""
        if host and p.key in self.concept_keys:
            return False
        return p.key not in self.taken and self.used + p.n_tokens <= self.beta

    def take(self, p: Piece) -> None:
        self.taken.add(p.key)
        self.used += p.n_tokens


def _novel(
    fill: _Fill, concept: list[Piece], host: list[Piece], lambda_: float, window: int, any_rank_from: int
) -> list[Piece]:
    """The host's novel passages (module doc, step 2), each as its best piece, taken into ``fill``."""
    held = {p.passage for p in concept}
    first_anywhere = len(held) >= any_rank_from
    novel: list[Piece] = []
    tokens = 0
    for rank, (passage, pieces) in enumerate(_passages(host).items()):
        if rank >= window and (novel or not first_anywhere):
            break
        best = pieces[0]
        if passage in held or not fill.fits(best, host=True):
            continue
        if novel and tokens + best.n_tokens > lambda_ * fill.beta:
            break
        novel.append(best)
        fill.take(best)
        tokens += best.n_tokens
    return novel


def novel_first(
    concept: Sequence[Piece],
    host: Sequence[Piece],
    beta: int,
    lambda_: float,
    head: int,
    trusted: bool,
    window: int = NOVEL_WINDOW,
    any_rank_from: int = NOVEL_ANY_RANK_FROM,
) -> list[tuple[Piece, str]]:
    """The selection and order of novel-first fusion (module doc) over plain pieces: ``concept`` the concept path's
    context at ``beta``, best first; ``host`` the host's pieces, best passage first, a passage's pieces contiguous
    and best first. Returns the context with each piece's source ("concept", "both": a concept piece of a passage
    the host also returned, "host"), at most ``beta`` tokens, no key twice. ``window`` and ``any_rank_from``: where
    the host's novel passages may come from (module doc, step 2)."""
    concept, host = _distinct_keys(concept), _distinct_keys(host)
    fill = _Fill(beta, {p.key for p in concept})
    novel = _novel(fill, concept, host, lambda_, window, any_rank_from) if lambda_ > 0 and trusted else []
    # the concept path's units that fit, chosen in its order before the linked head (what the novel passages displace
    # is its tail as it ranked it), placed in its order
    fitting = set()
    for i in sorted(range(len(concept)), key=lambda i: _before(concept[i], i)):
        if fill.fits(concept[i]):
            fitting.add(i)
            fill.take(concept[i])
    kept = [p for i, p in enumerate(concept) if i in fitting]
    spill = []
    for p in host:
        if fill.fits(p, host=True):
            spill.append(p)
            fill.take(p)
    # the concept path's first `head` passages (over the whole budget: kept fits in it), the novel passages, the rest
    n_head = len(concept_head([_as_item(p) for p in kept], head, 2 * beta))
    host_passages = {p.passage for p in host}
    order = [(p, "both" if p.passage in host_passages else "concept") for p in kept]
    return order[:n_head] + [(p, "host") for p in novel] + order[n_head:] + [(p, "host") for p in spill]


def _before(p: Piece, position: int) -> int:
    """The piece's place in the concept path's list before the linked head (:mod:`~g2cons_plugins.retrieval.linked`)."""
    return position if p.item is None else position_before(p.item, position)


def _as_item(p: Piece) -> RetrievedItem:
    """A concept piece as the concept path's item (for :func:`concept_head`: its passage and tokens)."""
    assert p.item is not None  # the concept path's pieces are units
    return replace(p.item, n_tokens=p.n_tokens)


def _host_pieces(
    snap: Snapshot, hosts: list[HostItem], units_of: list[np.ndarray | None], qv: np.ndarray, concept: list[Piece]
) -> list[Piece]:
    """The host's items as pieces in its order: a graph chunk's units best first by cosine to the query (a unit the
    concept path holds keeps its concept item), a host text the graph lacks as one piece."""
    st = snap.stored
    by_unit = {p.key: p.item for p in concept}
    dense = DenseScores(snap, qv) if any(u is not None and len(u) > 1 for u in units_of) else None
    out = []
    for r, (h, units) in enumerate(zip(hosts, units_of, strict=True)):
        if units is None:
            if h.text:
                out.append(Piece(("text", r), h.chunk_id or f"text:{r}", snap.count_tokens([h.text])[0], None, h))
            continue
        if dense is not None and len(units) > 1:
            units = units[np.argsort(-dense.of(units), kind="stable")]
        for u in units.tolist():
            item = by_unit.get(u)
            if item is None:
                unit = st.units[u]
                item = RetrievedItem(unit.id, unit.parent_id, unit.text, 0.0, int(st.unit_tokens[u]), {"via": "host"})
            out.append(Piece(u, item.parent_id, item.n_tokens, item, h))
    return out


def _recounted(recount: Recount | None, pieces: list[Piece]) -> list[Piece]:
    """Pieces with their units' token counts as the LLM will see them (one ``recount`` call)."""
    items = [p.item for p in pieces if p.item is not None]
    if recount is None or not items:
        return pieces
    distinct = list({it.unit_id: it for it in items}.values())  # a host unit the concept path holds: its item
    counted = {it.unit_id: it.n_tokens for it in recount(distinct)}
    out = []
    for p in pieces:
        n = p.n_tokens if p.item is None else counted.get(p.item.unit_id, p.n_tokens)
        if p.item is not None and n != p.n_tokens:
            p = replace(p, n_tokens=n, item=replace(p.item, n_tokens=n))
        out.append(p)
    return out


def _fused(p: Piece, source: str, position: int, host_of: dict[str, HostItem]) -> FusedItem:
    score = 1.0 / (RANK_K + position)
    if p.item is None:  # a host text the graph lacks
        assert p.host is not None
        return FusedItem("host", p.host.chunk_id, None, p.host.text or "", p.n_tokens, score, p.host, None)
    h = p.host if source == "host" else host_of.get(p.passage)
    return FusedItem(source, p.item.parent_id, p.item.unit_id, p.item.text, p.n_tokens, score, h, p.item)


def fuse_novel(req: FuseRequest, opt: FuseOptions) -> Fusion:
    """Novel-first fusion (module doc): the host's first two passages the concept path lacks displace the concept
    path's tail (the first always, the second within lambda x beta; in a long context the first from any rank),
    behind the concept path's first ``host_head`` passages; then the spill; scores ``1 / (K + position)``."""
    snap, paths = req.snap, both_paths(req, opt)
    concept = [Piece(snap.unit_pos[c.unit_id], c.parent_id, c.n_tokens, c) for c in paths.alone]
    host = _host_pieces(snap, req.hosts, paths.units_of, paths.query_vector, concept)
    n = len(concept)
    pieces = _recounted(req.recount, concept + host)
    concept, host = pieces[:n], pieces[n:]
    order = novel_first(concept, host, opt.beta, opt.lambda_, opt.host_head, host_trusted(paths, opt))
    host_of: dict[str, HostItem] = {}
    for p in host:
        if p.host is not None:
            host_of.setdefault(p.passage, p.host)
    items = [_fused(p, src, pos, host_of) for pos, (p, src) in enumerate(order)]
    return report(snap, items, req.hosts, paths.units_of, "novel")
