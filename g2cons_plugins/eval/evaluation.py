"""Evaluation: Context Recall and supporting-passage recall exactly as ``shared/specs/evaluation.md``, the
baselines (dense, BM25, KET-RAG Keyword-RAG), selection quality against random controls, and ``run_eval``
behind ``g2cons eval``.

- CR: share of questions for which any gold answer, SQuAD-normalised, is a substring of the normalised context.
- Supporting-passage recall: share of gold passages whose id is the parent chunk of a retrieved unit.
- Every method of one run uses the same embedder, the same units, the same budgets and the same tokenizer.
"""

from __future__ import annotations

import json
import re
import statistics
import string
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays.wide_rows import row
from ..config import G2ConSConfig
from ..errors import InputError
from ..index import G2ConSIndex
from ..retrieval import RetrievedItem, fill_ranked, retrieve
from ..text.analysis import bm25_tokens

# the paper's Table 4 ablations of its own walk (mode="paper"), as config changes
ABLATIONS: dict[str, dict[str, Any]] = {
    "ablation-A": {"cooccurrence": "sentence"},  # A: sentence-level co-occurrence
    "ablation-B": {"theta_sem": -1.0},  # B: no similarity filter
    "ablation-C": {"vector_level": "chunk"},  # C: chunk-level concept vectors
    "ablation-D": {"rerank": "naive"},  # D: naive instead of local + global reranking
}
METHODS = (
    "dense",
    "bm25",
    "hybrid",
    "hybrid-weighted",
    "keyword",
    "concept",
    "concept-dense",
    "concept-paper",
    "concept-ppr",
    "concept-e2",
    *ABLATIONS,
)
RESULT_COLUMNS = (
    "method",
    "budget",
    "context_recall",
    "support_recall",
    "support_all_found",
    "latency_ms_p50",
    "latency_ms_p95",
)
RECALL_KS = (2, 5, 10)
RECALL_COLUMNS = ("method", *(f"recall@{k}" for k in RECALL_KS), "all_found@5", "n_with_support")
RRF_K = 60  # reciprocal-rank-fusion constant (Cormack et al. 2009; SPRIG's dense + BM25 hybrid)
HYBRID_DENSE_WEIGHT = 0.5  # hybrid-weighted: weight of the min-max normalised dense score (BM25 gets the rest)
SELECTION_COLUMNS = (
    "kappa",
    "selector",
    "answer_coverage",
    "random_answer_mean",
    "length_matched_answer_mean",
    "length_matched_answer_std",
)
_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation, drop a/an/the, collapse whitespace."""
    s = s.lower()
    s = s.translate(_DROP_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def answer_in_context(answers: Sequence[str], context: str) -> bool:
    ctx = normalize_answer(context)
    return any(normalize_answer(a) and normalize_answer(a) in ctx for a in answers)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"file not found: {p}")
    rows = []
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise InputError(f"{p}:{n}: not valid JSON ({e.msg})") from None
    if not rows:
        raise InputError(f"{p} holds no records")
    return rows


def load_questions(path: str | Path) -> list[dict[str, Any]]:
    qs = read_jsonl(path)
    for n, q in enumerate(qs, 1):
        if not q.get("question") or not q.get("answers"):
            raise InputError(f"{path}: record {n} lacks 'question' or 'answers'")
    return qs


class BM25Units:
    """BM25 (rank_bm25 Okapi) over the index's retrieval units; tokens = lower-cased words minus stop words, per
    language (:func:`g2cons_plugins.text.analysis.bm25_tokens`: English text exactly as before)."""

    def __init__(self, index: G2ConSIndex) -> None:
        from rank_bm25 import BM25Okapi

        self.index = index
        self._lang, self._seg = index.config.graph.language, index.config.graph.segmenter
        self.bm25 = BM25Okapi([self._tok(u.text) for u in index.stored.units])

    def _tok(self, text: str) -> list[str]:
        return bm25_tokens(text, self._lang, self._seg)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every unit for ``query``."""
        return np.asarray(self.bm25.get_scores(self._tok(query)), dtype=np.float64)

    def retrieve(self, query: str, beta: int) -> list[RetrievedItem]:
        scores = self.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return fill_ranked(self.index, order, scores, beta, {"via": "bm25"})


def _ranks(scores: np.ndarray) -> np.ndarray:
    """0-based rank of each position when sorted by score descending, ties by position."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    r = np.empty(len(scores), dtype=np.int64)
    r[order] = np.arange(len(scores))
    return r


def _minmax(x: np.ndarray) -> np.ndarray:
    if not len(x):
        return np.zeros(0, dtype=np.float64)
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x, dtype=np.float64)


def rrf_scores(dense: np.ndarray, lexical: np.ndarray, k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion of two score vectors over the same units: sum of 1 / (k + rank), rank from 1."""
    return 1.0 / (k + 1 + _ranks(dense)) + 1.0 / (k + 1 + _ranks(lexical))


def weighted_scores(dense: np.ndarray, lexical: np.ndarray, dense_weight: float = HYBRID_DENSE_WEIGHT) -> np.ndarray:
    """Convex combination of the min-max normalised dense and lexical scores."""
    return dense_weight * _minmax(np.asarray(dense, np.float64)) + (1 - dense_weight) * _minmax(lexical)


def hybrid_retrieve(
    index: G2ConSIndex, bm: BM25Units, query: str, qv: np.ndarray, beta: int, weighted: bool = False
) -> list[RetrievedItem]:
    """Dense + BM25 over the same units: RRF (k = 60) or, ``weighted``, a convex mix of normalised scores."""
    dense = index.stored.unit_vecs @ qv
    lexical = bm.scores(query)
    scores = weighted_scores(dense, lexical) if weighted else rrf_scores(dense, lexical)
    order = np.lexsort((np.arange(len(scores)), -scores))
    return fill_ranked(index, order, scores, beta, {"via": "hybrid-weighted" if weighted else "hybrid-rrf"})


def keyword_retrieve(
    index: G2ConSIndex, qv: np.ndarray, beta: int, pool_factor: float = 2.0, max_seed_concepts: int = 1000
) -> list[RetrievedItem]:
    """KET-RAG Keyword-RAG (Alg. 4) over ``index``'s concepts (build it with ``concept_mode="all_words"``):
    keywords by cosine, their units (best first) pooled until pool_factor x beta tokens, pool reranked."""
    dv, st = index.derived, index.stored
    dense = st.unit_vecs @ qv
    sims = dv.concept_vecs @ qv
    ranked = np.lexsort((np.arange(len(sims)), -sims))[:max_seed_concepts]
    pool: list[int] = []
    seen: set[int] = set()
    tok = 0
    cap = pool_factor * beta
    for c in ranked:
        us = row(dv.unit_concepts, c)
        stop = False
        for u in us[np.lexsort((us, -dense[us]))]:
            if u in seen:
                continue
            if tok + st.unit_tokens[u] > cap:
                stop = True
                break
            seen.add(int(u))
            pool.append(int(u))
            tok += int(st.unit_tokens[u])
        if stop:
            break
    pool.sort(key=lambda u: (-dense[u], u))
    return fill_ranked(index, pool, dense, beta, {"via": "keyword"})


def _method_fn(
    method: str, index: G2ConSIndex, cache: dict[str, Any]
) -> Callable[[str, np.ndarray, int], list[RetrievedItem]]:
    if method == "dense":
        return lambda q, v, b: retrieve(index, q, beta=b, strategy="dense", query_vector=v)
    if method == "concept":
        return lambda q, v, b: retrieve(index, q, beta=b, query_vector=v)
    if method == "concept-dense":  # the bridge on dense scores alone (the default before lexical evidence)
        if "concept-dense" not in cache:
            cfg = index.config.with_(lexical_weight=0.0, lexical_seeds=0, score_scale="cosine")
            cache["concept-dense"] = G2ConSIndex(index.stored, index.embedder, cfg, index.tokenizer)
        cd = cache["concept-dense"]
        return lambda q, v, b: retrieve(cd, q, beta=b, query_vector=v)
    if method == "concept-ppr":
        return lambda q, v, b: retrieve(index, q, beta=b, strategy="ppr", query_vector=v)
    if method == "concept-e2":
        return lambda q, v, b: retrieve(index, q, beta=b, strategy="e2", query_vector=v)
    if method == "concept-paper":
        if "paper" not in cache:
            cache["paper"] = G2ConSIndex(
                index.stored,
                index.embedder,
                G2ConSConfig(mode="paper", unit_tokens=index.config.graph.unit_tokens),
                index.tokenizer,
            )
        paper = cache["paper"]
        return lambda q, v, b: retrieve(paper, q, beta=b, query_vector=v)
    if method in ABLATIONS:
        if method not in cache:
            cfg = G2ConSConfig(mode="paper", unit_tokens=index.config.graph.unit_tokens, **ABLATIONS[method])
            cache[method] = G2ConSIndex(index.stored, index.embedder, cfg, index.tokenizer)
        ab = cache[method]
        return lambda q, v, b: retrieve(ab, q, beta=b, query_vector=v)
    if method == "keyword":
        if "keyword" not in cache:
            cache["keyword"] = G2ConSIndex(
                index.stored,
                index.embedder,
                index.config.with_(concept_mode="all_words", max_df=1.0),
                index.tokenizer,
            )
        kw = cache["keyword"]
        return lambda q, v, b: keyword_retrieve(kw, v, b)
    if method in ("bm25", "hybrid", "hybrid-weighted"):
        if "bm25" not in cache:
            cache["bm25"] = BM25Units(index)
        bm = cache["bm25"]
        if method == "bm25":
            return lambda q, v, b: bm.retrieve(q, b)
        weighted = method == "hybrid-weighted"
        return lambda q, v, b: hybrid_retrieve(index, bm, q, v, b, weighted=weighted)
    raise InputError(f"unknown method {method!r}; choose from {METHODS}")


def embed_queries(index: G2ConSIndex, texts: Sequence[str]) -> np.ndarray:
    """phi of many queries: the embedder's ``embed_queries`` (query prefix, e.g. e5's "query: ") when it has one."""
    fn = getattr(index.embedder, "embed_queries", None)
    return np.asarray(fn(list(texts)) if callable(fn) else index.embedder.embed(list(texts)))


def evaluate_retrieval(
    index: G2ConSIndex,
    questions: Sequence[dict[str, Any]],
    methods: Sequence[str],
    budgets: Sequence[int],
    show_progress: bool = False,
    per_question: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """CR (and supporting-passage recall where gold ids exist) per method and budget, plus query latency.

    ``per_question``: when a list, one record per question, method and budget is appended to it
    (``question_id``, ``method``, ``budget``, ``hit``, and ``support_share`` where gold ids exist), for paired
    comparisons (:func:`paired_test`)."""
    qtexts = [q["question"] for q in questions]
    qvecs = embed_queries(index, qtexts)
    cache: dict[str, Any] = {}
    results = []
    for method in methods:
        fn = _method_fn(method, index, cache)
        for beta in budgets:
            hits, sup, sup_all, n_sup, lat = 0, [], 0, 0, []
            it: Any = range(len(questions))
            if show_progress:
                from tqdm.auto import tqdm

                it = tqdm(it, desc=f"{method} @{beta}", unit="q", leave=False)
            for i in it:
                q = questions[i]
                t0 = time.perf_counter()
                items = fn(q["question"], qvecs[i], beta)
                lat.append(time.perf_counter() - t0)
                hit = answer_in_context(q["answers"], "\n".join(x.text for x in items))
                hits += hit
                rec: dict[str, Any] = {"question_id": q.get("id", i), "method": method, "budget": beta, "hit": hit}
                gold = q.get("supporting_passage_ids")
                if gold:
                    got = {x.parent_id for x in items}
                    share = sum(g in got for g in gold) / len(gold)
                    sup.append(share)
                    sup_all += share == 1.0
                    n_sup += 1
                    rec["support_share"] = round(share, 4)
                if per_question is not None:
                    per_question.append(rec)
            row: dict[str, Any] = {
                "method": method,
                "budget": beta,
                "context_recall": round(100.0 * hits / len(questions), 2),
                "n_questions": len(questions),
                "latency_ms_p50": round(1000 * statistics.median(lat), 3),
                "latency_ms_p95": round(1000 * float(np.percentile(lat, 95)), 3),
            }
            if n_sup:
                row["support_recall"] = round(100.0 * float(np.mean(sup)), 2)
                row["support_all_found"] = round(100.0 * sup_all / n_sup, 2)
                row["n_with_support"] = n_sup
            results.append(row)
    return results


def recall_budget(index: G2ConSIndex, k: int = max(RECALL_KS)) -> int:
    """A token budget that holds about ``k`` + 2 passages of the 90th-percentile size (for recall@k rankings)."""
    p90 = float(np.percentile(index.stored.chunk_tokens, 90)) if len(index.stored.chunk_tokens) else 1.0
    return max(4000, int((k + 2) * p90))


def passage_recall(
    index: G2ConSIndex,
    questions: Sequence[dict[str, Any]],
    methods: Sequence[str],
    ks: Sequence[int] = RECALL_KS,
    per_question: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Passage recall@k (HippoRAG 2's protocol): each method's units, in its own rank order, mapped to their
    parent passages; the first ``k`` distinct passages are its top k, and recall@k is the mean share of a
    question's gold passages among them (only questions with ``supporting_passage_ids``). ``all_found@5``:
    share of questions with every gold passage in the top 5. The ranking comes from one retrieval at
    :func:`recall_budget`; a method that returns fewer than k passages there is scored on what it returned.
    ``per_question``: records with ``budget`` = ``"rank"`` and ``recall@k`` are appended to it."""
    qs = [(i, q) for i, q in enumerate(questions) if q.get("supporting_passage_ids")]
    if not qs:
        return []
    qvecs = embed_queries(index, [q["question"] for _, q in qs])
    beta = recall_budget(index, max(ks))
    cache: dict[str, Any] = {}
    rows = []
    for method in methods:
        fn = _method_fn(method, index, cache)
        shares: dict[int, list[float]] = {k: [] for k in ks}
        all5 = 0
        for (i, q), v in zip(qs, qvecs, strict=True):
            ranked = list(dict.fromkeys(x.parent_id for x in fn(q["question"], v, beta)))
            gold = set(q["supporting_passage_ids"])
            rec: dict[str, Any] = {"question_id": q.get("id", i), "method": method, "budget": "rank"}
            for k in ks:
                share = len(gold & set(ranked[:k])) / len(gold)
                shares[k].append(share)
                rec[f"recall@{k}"] = round(share, 4)
            all5 += gold <= set(ranked[:5])
            if per_question is not None:
                per_question.append(rec)
        row: dict[str, Any] = {"method": method}
        row.update({f"recall@{k}": round(100.0 * float(np.mean(shares[k])), 2) for k in ks})
        row["all_found@5"] = round(100.0 * all5 / len(qs), 2)
        row["n_with_support"] = len(qs)
        row["ranking_budget"] = beta
        rows.append(row)
    return rows


def paired_test(
    records: Sequence[dict[str, Any]], method_a: str, method_b: str, budget: int | str, key: str = "hit"
) -> dict[str, Any]:
    """Paired comparison of two methods over the same questions from ``per_question`` records: mean difference
    of ``key`` (a - b, in points for 0/1 keys), wins / losses, and the two-sided exact sign-test p-value over
    the questions where they differ (McNemar's exact test for 0/1 ``key``)."""
    from scipy.stats import binomtest

    def pick(m: str) -> dict[Any, float]:
        return {r["question_id"]: float(r[key]) for r in records if r["method"] == m and r["budget"] == budget}

    a, b = pick(method_a), pick(method_b)
    common = sorted(set(a) & set(b), key=str)
    if not common:
        raise InputError(f"no common questions for {method_a!r} and {method_b!r} at budget {budget!r} ({key})")
    diff = [a[q] - b[q] for q in common]
    wins, losses = sum(d > 0 for d in diff), sum(d < 0 for d in diff)
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    return {
        "a": method_a,
        "b": method_b,
        "budget": budget,
        "key": key,
        "n": len(common),
        "mean_diff": round(100.0 * float(np.mean(diff)), 2),
        "wins": wins,
        "losses": losses,
        "p_value": round(float(p), 4),
    }


def method_contexts(
    index: G2ConSIndex, questions: Sequence[dict[str, Any]], methods: Sequence[str], beta: int
) -> dict[str, list[str]]:
    """Each method's retrieved context (units joined by newlines) per question at budget ``beta``."""
    qvecs = embed_queries(index, [q["question"] for q in questions])
    cache: dict[str, Any] = {}
    out = {}
    for method in methods:
        fn = _method_fn(method, index, cache)
        out[method] = [
            "\n".join(x.text for x in fn(q["question"], v, beta)) for q, v in zip(questions, qvecs, strict=True)
        ]
    return out


def selection_quality(
    index: G2ConSIndex,
    questions: Sequence[dict[str, Any]],
    kappas: Sequence[float] = (0.2, 0.8),
    selectors: Sequence[str] = ("coverage", "concept_coverage", "pagerank", "knn_pagerank", "shortest"),
    n_seeds: int = 10,
) -> list[dict[str, Any]]:
    """Answer (and gold-passage) coverage of the kept chunks, by tokens, against (a) uniform random selections
    of the same token size and (b) random selections with the same chunk-length profile as the selector's
    pick (each kept chunk replaced by a random chunk of the same length decile), mean of ``n_seeds`` seeds."""
    from ..selection import rank_chunks, take

    st = index.stored
    texts = [normalize_answer(c.text) for c in st.chunks]
    answers = [[normalize_answer(a) for a in q["answers"] if normalize_answer(a)] for q in questions]
    # which chunks hold each question's answer (precomputed once)
    holders = [{i for i, t in enumerate(texts) if any(a in t for a in ans)} for ans in answers]
    gold_pos = []
    pos = {c.id: i for i, c in enumerate(st.chunks)}
    for q in questions:
        g = q.get("supporting_passage_ids") or []
        gold_pos.append({pos[x] for x in g if x in pos})

    def cover(kept: set[int]) -> tuple[float, float]:
        a = 100.0 * sum(bool(h & kept) for h in holders) / max(len(holders), 1)
        gq = [g for g in gold_pos if g]
        gs = 100.0 * float(np.mean([len(g & kept) / len(g) for g in gq])) if gq else float("nan")
        return a, gs

    tokens = st.chunk_tokens
    deciles = np.searchsorted(np.quantile(tokens, np.linspace(0, 1, 11)[1:-1]), tokens, side="right")
    rows = []
    for kappa in kappas:
        rand = [
            cover(set(take(np.random.default_rng(s).permutation(len(tokens)).tolist(), tokens, kappa, "tokens")))
            for s in range(n_seeds)
        ]
        for sel in selectors:
            kept = take(rank_chunks(index, sel), tokens, kappa, "tokens")
            a, g = cover(set(kept))
            matched = []
            for s in range(n_seeds):
                rng = np.random.default_rng(1000 + s)
                pick: set[int] = set()
                for d in range(10):
                    need = int(sum(deciles[i] == d for i in kept))
                    pool = np.flatnonzero(deciles == d)
                    pick.update(rng.choice(pool, size=min(need, len(pool)), replace=False).tolist())
                matched.append(cover(pick))
            rows.append(
                {
                    "kappa": kappa,
                    "selector": sel,
                    "kept_token_share": round(float(tokens[kept].sum() / tokens.sum()), 4),
                    "kept_chunk_share": round(len(kept) / len(tokens), 4),
                    "answer_coverage": round(a, 2),
                    "gold_coverage": None if np.isnan(g) else round(g, 2),
                    "random_answer_mean": round(float(np.mean([r[0] for r in rand])), 2),
                    "random_answer_std": round(float(np.std([r[0] for r in rand])), 2),
                    "length_matched_answer_mean": round(float(np.mean([m[0] for m in matched])), 2),
                    "length_matched_answer_std": round(float(np.std([m[0] for m in matched])), 2),
                    "length_matched_gold_mean": None
                    if np.isnan(matched[0][1])
                    else round(float(np.mean([m[1] for m in matched])), 2),
                    "n_seeds": n_seeds,
                }
            )
    return rows


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A Markdown table of ``rows`` restricted to ``columns``."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join("" if r.get(c) is None else str(r.get(c)) for c in columns) + " |")
    return "\n".join(lines)
