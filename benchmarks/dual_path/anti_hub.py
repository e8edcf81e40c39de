"""A research candidate core-chunk selector, ``anti_hub``: the chunks the concept graph ranks LEAST central go to
the host's KG extraction first. Not in the package: it did not beat ``coverage``
(results/selection_candidate_summary.md).

What it follows and why. The G2ConS paper ranks chunks by the PageRank of their concepts and sends the top kappa
share to the host's LLM extraction (the ``pagerank`` selector of :mod:`g2cons_plugins.selection`); KET-RAG ranks
them by PageRank over a chunk kNN graph (``knn_pagerank``). Judged by the KG they produce with the graph-walk host
(:mod:`g2cons_plugins.hosts.graph_walk`: HippoRAG 2's personalized PageRank over the extracted entities and the
chunk nodes), both fall below a length-matched random draw on MuSiQue train100: the walk spreads the query's mass
from its seed entities to every chunk linked to them, so a chunk holding many central concepts becomes a hub that
is pulled into the context of many questions and crowds out the passage a question needs. ``anti_hub`` inverts the
paper's ranking: the lowest sum of concept PageRank first (specific, peripheral content; short chunks rank early,
which the token budget pays for: each chunk costs its tokens plus the extraction prompt). Chunks with no concept
(nothing for the extractor to link) come last. Ties are broken by chunk position, so the order is deterministic.

Measured (``benchmarks/dual_path/selection_candidate_research.py``, results in
``benchmarks/dual_path/results/selection_candidate_musique.md``, ``selection_candidate_summary.md``): on MuSiQue
train100, host alone, mean CR of 1k/2k/4k, +2.7 / +3.3 / +2.8 over the 10-seed mean of length-matched random at
kappa 0.2 / 0.5 / 0.8 (one random draw's sd 1.5 to 2.4; the default ``coverage`` +2.4 / +2.0 / +2.2), and not
different from ``coverage`` question by question. NOT the +6 that was sought; over 1,200-token packs it is at
random's level (+0.3 / -1.2 at kappa 0.2 / 0.5, where ``coverage`` is +1.3 / +5.5), and on HotpotQA train100 it
keeps fewer supporting passages than its length-matched random (a proxy, no host KG there): a candidate measured
and not better than the default, kept for reproduction.

Plugging into :mod:`g2cons_plugins.selection`: :func:`anti_hub_order` needs what ``rank_chunks`` already has from
the snapshot: ``index.derived.chunk_inc`` (chunks x concepts), ``index.derived.pagerank`` (per concept) and
``index.stored.chunk_tokens`` (the latter for validation only); its result is a list of chunk positions best first,
to be cut by ``selection.take`` like every other selector. :func:`select_anti_hub` is the same with the
token budget applied (chunk ids in, kept chunk ids out), for use without an index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from g2cons_plugins.errors import InputError, non_negative_int, unit_interval

__all__ = ["anti_hub_order", "select_anti_hub"]


def _check(
    chunk_tokens: Any, chunk_concepts: Any, concept_pagerank: Any
) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray]:
    tokens = np.asarray(chunk_tokens)
    if tokens.ndim != 1 or (tokens.size and not np.issubdtype(tokens.dtype, np.integer)):
        raise InputError(f"chunk_tokens must be a 1-d array of integers, got dtype {tokens.dtype} shape {tokens.shape}")
    if (tokens < 0).any():
        raise InputError(f"chunk_tokens must be >= 0; chunk position {int(np.argmin(tokens))} has {int(tokens.min())}")
    if not sp.issparse(chunk_concepts) and not isinstance(chunk_concepts, np.ndarray):
        raise InputError(f"chunk_concepts must be a chunks x concepts matrix, got {type(chunk_concepts).__name__}")
    inc = sp.csr_matrix(chunk_concepts)
    pr = np.asarray(concept_pagerank, dtype=np.float64)
    if inc.shape[0] != len(tokens):
        raise InputError(f"chunk_concepts has {inc.shape[0]} rows for {len(tokens)} chunk_tokens")
    if pr.ndim != 1 or len(pr) != inc.shape[1]:
        raise InputError(f"concept_pagerank must hold one value per concept ({inc.shape[1]}), got shape {pr.shape}")
    if not np.isfinite(pr).all() or (pr < 0).any():
        raise InputError("concept_pagerank must be finite and >= 0")
    if inc.nnz and (not np.isfinite(inc.data).all() or (inc.data < 0).any()):
        raise InputError("chunk_concepts must be finite and >= 0")
    return tokens, inc, pr


def anti_hub_order(chunk_tokens: Any, chunk_concepts: Any, concept_pagerank: Any) -> list[int]:
    """Chunk positions, best first: ascending sum of the PageRank of the chunk's concepts (its presence counted
    once, whatever the incidence weight); chunks with no concept last; ties by position.

    ``chunk_tokens``: tokens per chunk (checked, one per row of ``chunk_concepts``); ``chunk_concepts``: the
    chunks x concepts incidence (``index.derived.chunk_inc``); ``concept_pagerank``: one non-negative value per
    concept (``index.derived.pagerank``)."""
    _, inc, pr = _check(chunk_tokens, chunk_concepts, concept_pagerank)
    binary = inc.copy()
    binary.data = (binary.data > 0).astype(np.float64)
    binary.eliminate_zeros()
    score = np.asarray(binary @ pr).ravel()
    has_concept = np.diff(binary.indptr) > 0
    # lexsort: the last key is the primary one
    return np.lexsort((np.arange(len(score)), score, ~has_concept)).tolist()


def select_anti_hub(
    chunk_ids: Sequence[str],
    chunk_tokens: Any,
    chunk_concepts: Any,
    concept_pagerank: Any,
    kappa: float,
    prompt_tokens_per_call: int = 0,
) -> list[str]:
    """The chunk ids kept at ``kappa`` of the extraction's input tokens (each chunk costs its tokens plus
    ``prompt_tokens_per_call``), in rank order: chunks are taken in :func:`anti_hub_order` while they fit, a chunk
    that does not fit is skipped and the next tried (as ``selection.take`` with ``kappa_by="tokens"``); kappa > 0
    keeps at least the top-ranked chunk of a non-empty corpus, kappa = 0 keeps nothing."""
    kappa = unit_interval("kappa", kappa)
    prompt = non_negative_int("prompt_tokens_per_call", prompt_tokens_per_call)
    ids = [str(c) for c in chunk_ids]
    if len(set(ids)) != len(ids):
        dup = next(c for i, c in enumerate(ids) if c in ids[:i])
        raise InputError(f"chunk_ids must be unique; {dup!r} occurs more than once")
    order = anti_hub_order(chunk_tokens, chunk_concepts, concept_pagerank)
    if len(ids) != len(order):
        raise InputError(f"chunk_ids has {len(ids)} ids for {len(order)} chunk_tokens")
    if kappa == 0.0 or not order:
        return []
    cost = np.asarray(chunk_tokens, dtype=np.int64) + prompt
    cap = kappa * float(cost.sum())
    kept: list[int] = []
    used = 0
    for i in order:
        if used + int(cost[i]) <= cap:
            kept.append(i)
            used += int(cost[i])
    return [ids[i] for i in (kept or order[:1])]
