"""Core-chunk selection: which kappa share of the chunks goes to the host's LLM-driven KG build.

Selectors (``G2ConSConfig.selector``):
- ``"pagerank"`` (the paper): chunk score = sum / max / mean (``chunk_score``) of the PageRank of the concepts the
  chunk contains, top chunks first. ``sum`` favours long chunks.
- ``"coverage"`` (default): greedy maximum coverage of *names* per token. The next chunk is the one holding the
  most not-yet-covered names (the bridge vocabulary: capitalised words in >= 2 chunks, the entities a KG
  extractor would pull out) per token; once every name is covered, the rest follow by names per token. It beat
  a length-matched random control on every set we measured (README); PageRank top-k did not beat plain random.
  With the strong host (the graph walk over a replayed gpt-3.5 extraction of the kept chunks, the dropped chunks
  linked to its entities by name from kappa a third up; MuSiQue train100,
  ``benchmarks/dual_path/selection_compare.sh``) it has the highest mean lead over length-matched random (mean of
  three seeds) of twelve rankings over five settings (kappa 0.2 / 0.5 / 0.8, and 0.2 / 0.5 over 1,200-token
  packs; -0.7 at kappa 0.8 to +6.8 in packs at 0.5, mean +2.8, above random in four of five), ahead of
  ``pagerank`` and ``knn_pagerank`` (mean -0.6 and -1.4) and of nine rankings tried in its place (bridging
  names, title links, entity density, longest first...; entity density is above random in all five, by +1.6 on
  average). With ten random seeds: +5.2 at kappa 0.5, +6.8 in packs (``results/link_texts_musique_train100.md``).
- ``"concept_coverage"``: the same greedy over the TF-IDF concepts, each worth its PageRank (the concept graph's
  ranking put to a coverage use); better than PageRank top-k, but not reliably above the length-matched control.
- ``"shortest"`` (a control: shortest chunks first) and ``"uniform"`` (seeded random: KET-RAG-U).
- ``"knn_pagerank"`` (KET-RAG's selector): PageRank over a chunk graph with one lexical (most shared concepts)
  and one semantic (most similar vector) neighbour per chunk.

kappa is a share of chunks (``kappa_by="chunks"``, ceil(kappa * n)) or of tokens (``"tokens"``: chunks are taken
in rank order while they fit in kappa x (total tokens + prompt_tokens_per_call per chunk), each costing its
tokens plus the prompt; a chunk that does not fit is skipped and the next tried).
Rounding: any kappa > 0 keeps at least one chunk of a non-empty corpus. By chunks the count is rounded up (never
to 0); by tokens, when no chunk fits in the budget (a one-chunk corpus, or every chunk longer than kappa x the
total), the top-ranked chunk is kept anyway, so the kept share can then exceed kappa. kappa = 0 keeps nothing.
Ties are broken by chunk id (chunks are stored sorted by id), never by
input order. Selection deletes nothing: dropped chunks stay in the concept graph and
stay retrievable.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sp

from .errors import InputError, non_negative_float, non_negative_int, unit_interval
from .graph import pagerank
from .text import format_usd

if TYPE_CHECKING:
    from .snapshot import HasSnapshot, Snapshot

SELECTORS = ("coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank")


@dataclass(frozen=True)
class SelectionReport:
    """What a selection kept and dropped, and the LLM cost it avoids."""

    kappa: float
    kappa_by: str
    selector: str
    kept_ids: list[str]
    dropped_ids: list[str]
    kept_tokens: int
    dropped_tokens: int
    total_tokens: int
    price_per_mtok: float
    prompt_tokens_per_call: int

    @property
    def kept_share_tokens(self) -> float:
        """Kept tokens / all chunk tokens."""
        return self.kept_tokens / max(self.total_tokens, 1)

    @property
    def calls_avoided(self) -> int:
        """Extraction calls not made: one per dropped chunk."""
        return len(self.dropped_ids)

    @property
    def input_tokens_avoided(self) -> int:
        """Chunk tokens plus the extraction prompt template per avoided call."""
        return self.dropped_tokens + self.calls_avoided * self.prompt_tokens_per_call

    @property
    def usd_avoided(self) -> float:
        """``input_tokens_avoided`` at ``price_per_mtok``."""
        return self.input_tokens_avoided / 1e6 * self.price_per_mtok

    def to_dict(self) -> dict[str, Any]:
        """The fields plus the derived numbers, JSON-ready."""
        d = asdict(self)
        d.update(
            n_kept=len(self.kept_ids),
            n_dropped=len(self.dropped_ids),
            kept_share_tokens=self.kept_share_tokens,
            calls_avoided=self.calls_avoided,
            input_tokens_avoided=self.input_tokens_avoided,
            usd_avoided=self.usd_avoided,
        )
        return d

    def summary(self) -> str:
        """One line: kept chunks and tokens, calls / tokens / USD avoided."""
        n = len(self.kept_ids) + len(self.dropped_ids)
        return (
            f"kept {len(self.kept_ids):,}/{n:,} chunks, {self.kept_tokens:,}/{self.total_tokens:,} tokens "
            f"({self.kept_share_tokens:.1%}); avoided {self.calls_avoided:,} LLM calls, "
            f"{self.input_tokens_avoided:,} input tokens, {format_usd(self.usd_avoided)} at ${self.price_per_mtok}/1M"
        )


def _snapshot_of(obj: HasSnapshot) -> Snapshot:
    """The snapshot of a ``Snapshot`` or a ``G2ConSIndex`` (both have ``.snapshot``), read once. Duck-typed, so
    that selection imports no index machinery: it needs the concept graph and the chunks' token counts only."""
    snap = getattr(obj, "snapshot", None)
    if snap is None or not hasattr(snap, "derived") or not hasattr(snap, "stored"):
        raise InputError(f"expected a G2ConSIndex or Snapshot, got {type(obj).__name__}")
    return snap  # type: ignore[no-any-return]


def chunk_scores(index: HasSnapshot, how: str = "sum") -> np.ndarray:
    """Chunk score from its concepts' PageRank: sum, max or mean."""
    index = _snapshot_of(index)
    C, pr = index.derived.chunk_inc, index.derived.pagerank
    if how == "sum":
        return np.asarray(C @ pr).ravel()
    if how == "mean":
        cnt = np.asarray(C.sum(axis=1)).ravel()
        return cast(np.ndarray, np.asarray(C @ pr).ravel() / np.maximum(cnt, 1))
    if how == "max":
        W = C.multiply(pr[None, :]).tocsr()
        return np.asarray(W.max(axis=1).todense()).ravel()
    raise InputError(f"chunk_score must be 'sum', 'max' or 'mean', got {how!r}")


def _desc(scores: np.ndarray) -> list[int]:
    return cast(list[int], np.lexsort((np.arange(len(scores)), -scores)).tolist())


def coverage_order(C: sp.csr_matrix, weights: np.ndarray, tokens: np.ndarray) -> list[int]:
    """Lazy greedy weighted max-coverage by marginal gain per token; the rest by total weight per token."""
    n = C.shape[0]
    covered = np.zeros(C.shape[1], dtype=bool)
    tok = np.maximum(tokens.astype(np.float64), 1.0)

    def gain(i: int) -> float:
        idx = C.indices[C.indptr[i] : C.indptr[i + 1]]
        return cast(float, float(weights[idx[~covered[idx]]].sum()) / tok[i])

    heap = [(-gain(i), i) for i in range(n)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        g = gain(i)
        if heap and g < -heap[0][0] - 1e-15:  # stale bound: re-insert with the fresh gain
            heapq.heappush(heap, (-g, i))
            continue
        if g <= 0:  # the best remaining gain is 0: every concept is covered
            heapq.heappush(heap, (0.0, i))
            break
        order.append(i)
        idx = C.indices[C.indptr[i] : C.indptr[i + 1]]
        covered[idx] = True
    total = np.asarray(C @ weights).ravel() / tok
    rest = sorted((i for _, i in heap), key=lambda i: (-total[i], i))
    return order + rest


def knn_pagerank_order(index: HasSnapshot, damping: float = 0.85) -> list[int]:
    """KET-RAG's selector: chunk graph with one lexical and one semantic neighbour per chunk, PageRank."""
    index = _snapshot_of(index)
    st, C = index.stored, index.derived.chunk_inc
    n = C.shape[0]
    # chunk vectors: token-weighted mean of their units' vectors
    W = sp.csr_matrix(
        (st.unit_tokens.astype(np.float32), (st.unit_parent, np.arange(len(st.units)))),
        shape=(n, len(st.units)),
    )
    V = np.asarray(W @ st.unit_vecs)
    V /= np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    lex = (C @ C.T).tolil()
    lex.setdiag(0)
    lex = lex.tocsr()
    rows, cols = [], []
    for i in range(n):
        lo, hi = lex.indptr[i], lex.indptr[i + 1]
        if hi > lo:
            j = lex.indices[lo:hi][np.lexsort((lex.indices[lo:hi], -lex.data[lo:hi]))[0]]
            rows.append(i)
            cols.append(int(j))
        sims = V @ V[i]
        sims[i] = -np.inf
        rows.append(i)
        cols.append(int(np.argmax(sims)))
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float64)
    return _desc(pagerank(A.tocsr(), damping=damping))


def rank_chunks(index: HasSnapshot, selector: str, chunk_score: str = "sum", seed: int = 42) -> list[int]:
    """Chunk positions, best first, for one selector."""
    index = _snapshot_of(index)
    st, dv = index.stored, index.derived
    n = len(st.chunks)
    if selector == "pagerank":
        return _desc(chunk_scores(index, chunk_score))
    if selector == "coverage":
        unit_chunk = sp.csr_matrix(
            (np.ones(len(st.units), np.float32), (np.arange(len(st.units)), st.unit_parent)),
            shape=(len(st.units), n),
        )
        names = (unit_chunk.T @ dv.unit_names).tocsr()
        names.data[:] = 1.0
        return coverage_order(names, np.ones(names.shape[1]), st.chunk_tokens)
    if selector == "concept_coverage":
        return coverage_order(dv.chunk_inc, dv.pagerank, st.chunk_tokens)
    if selector == "shortest":
        return cast(list[int], np.lexsort((np.arange(n), st.chunk_tokens)).tolist())
    if selector == "uniform":
        return cast(list[int], np.random.default_rng(seed).permutation(n).tolist())
    if selector == "knn_pagerank":
        return knn_pagerank_order(index)
    raise InputError(f"unknown selector {selector!r}; choose one of {SELECTORS}")


def take(order: list[int], tokens: np.ndarray, kappa: float, by: str) -> list[int]:
    """Positions kept at kappa, in rank order (see module doc); kappa > 0 keeps at least ``order[0]``."""
    kappa = unit_interval("kappa", kappa)
    if by not in ("chunks", "tokens"):
        raise InputError(f"kappa_by must be 'tokens' or 'chunks', got {by!r}")
    if kappa == 0.0 or not order:
        return []
    if by == "chunks":
        return order[: max(1, math.ceil(kappa * len(order) - 1e-9))]
    cap = kappa * float(tokens.sum())
    kept, used = [], 0
    for i in order:
        if used + tokens[i] <= cap:
            kept.append(i)
            used += int(tokens[i])
    return kept or order[:1]  # nothing fits in the budget: the top-ranked chunk alone


def select(
    index: HasSnapshot,
    kappa: float | None = None,
    kappa_by: str | None = None,
    selector: str | None = None,
    chunk_score: str | None = None,
    price_per_mtok: float = 0.15,
    prompt_tokens_per_call: int = 0,
    seed: int | None = None,
) -> SelectionReport:
    """Select the core chunks. ``price_per_mtok``: LLM input price in USD per 1M tokens (GPT-4o-mini: 0.15);
    ``prompt_tokens_per_call``: tokens of the host's extraction prompt template, sent with every chunk. With
    ``kappa_by="tokens"`` kappa is the share of the extraction's input tokens (chunk + prompt per call), so the
    KG build is sent kappa of the full build's tokens whatever the prompt size.

    Rounding: kappa > 0 keeps at least one chunk. ``kappa_by="chunks"`` keeps ceil(kappa x n) chunks, at least 1;
    ``kappa_by="tokens"`` keeps the top-ranked chunk alone when no chunk fits in the budget (a one-chunk corpus at
    kappa < 1, or every chunk longer than the budget), so the kept share can then exceed kappa. kappa = 0 keeps
    nothing."""
    index = _snapshot_of(index)
    cfg, st = index.config, index.stored
    kappa = cfg.kappa if kappa is None else unit_interval("kappa", kappa)
    by = kappa_by or cfg.selection.kappa_by
    price_per_mtok = non_negative_float("price_per_mtok", price_per_mtok)
    prompt_tokens_per_call = non_negative_int("prompt_tokens_per_call", prompt_tokens_per_call)
    seed = cfg.selection.seed if seed is None else non_negative_int("seed", seed)
    order = rank_chunks(index, selector or cfg.selector, chunk_score or cfg.selection.chunk_score, seed)
    # kappa by tokens is a share of the extraction's input: each kept chunk costs its tokens plus the prompt
    kept = take(order, st.chunk_tokens + int(prompt_tokens_per_call), kappa, by)
    keep_set = set(kept)
    ids = [c.id for c in st.chunks]
    dropped = [i for i in range(len(ids)) if i not in keep_set]
    return SelectionReport(
        kappa=kappa,
        kappa_by=by,
        selector=selector or cfg.selector,
        kept_ids=[ids[i] for i in kept],
        dropped_ids=[ids[i] for i in dropped],
        kept_tokens=int(st.chunk_tokens[kept].sum()) if kept else 0,
        dropped_tokens=int(st.chunk_tokens[dropped].sum()) if dropped else 0,
        total_tokens=int(st.chunk_tokens.sum()),
        price_per_mtok=price_per_mtok,
        prompt_tokens_per_call=prompt_tokens_per_call,
    )
