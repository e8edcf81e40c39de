"""Host-KG path and fused G2ConS, measured per kappa (KG built over the core chunks) and lambda (``--host``).

For each kappa the host KG is rebuilt over ``index.select(kappa=kappa)``'s kept chunks and its build cost
recorded (calls, input/output tokens, USD at the stated prices, share of the full build's tokens). Per question
and budget beta: the host alone (its results in rank order, within beta), the concept path alone (once; it does
not depend on kappa) and the fusion ``ensemble.fuse(host, concept, beta, lambda, spill)`` for every lambda and
both budget rules (hard caps, the paper's; ``spill``: a path's unused share goes to the other), novel-first and
share fusion for every lambda (:data:`LAMBDA_RULES`) and score fusion for every host weight. Context Recall and
supporting-passage recall as in :mod:`g2cons_plugins.eval.evaluation`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..fusion import FuseOptions, fuse, fuse_context, resolve_host_items
from ..hosts.protocol import HostKG
from ..index import G2ConSIndex
from ..retrieval import retrieve
from ..selection import SELECTORS, SelectionReport
from .evaluation import answer_in_context, embed_queries

__all__ = [
    "DOWNSTREAM_COLUMNS",
    "DOWNSTREAM_SELECTORS",
    "HOST_BUILD_COLUMNS",
    "LAMBDA_RULES",
    "evaluate_host",
    "selection_downstream",
]

LAMBDA_RULES = ("share", "novel")
"""The fusion rules swept over lambda (sweep methods ``fused-share`` and ``fused-novel``)."""

HOST_BUILD_COLUMNS = (
    "kappa",
    "kept_chunks",
    "calls",
    "input_tokens",
    "output_tokens",
    "share_of_full_input_tokens",
    "usd",
    "graph_entities",
    "graph_relations",
    "build_s",
    "host_latency_ms_p50",
    "host_latency_ms_p95",
)


def _latency(ms: list[float]) -> tuple[float | None, float | None]:
    if not ms:
        return None, None
    return round(statistics.median(ms), 3), round(float(np.percentile(ms, 95)), 3)


class _Score:
    """Accumulates CR, supporting-passage recall and latency for one row."""

    def __init__(self) -> None:
        self.hits = 0
        self.n = 0
        self.support: list[float] = []
        self.at5: list[float] = []
        self.per_question: list[int] = []
        self.ms: list[float] = []

    def add(self, q: dict[str, Any], texts: Sequence[str], parents: Sequence[str | None], ms: float) -> None:
        self.n += 1
        self.ms.append(ms)
        hit = int(answer_in_context(q["answers"], "\n".join(texts)))
        self.hits += hit
        self.per_question.append(hit)
        gold = q.get("supporting_passage_ids")
        if gold:
            got = set(parents)
            self.support.append(sum(g in got for g in gold) / len(gold))
            first = list(dict.fromkeys(p for p in parents if p is not None))[:5]  # the head of the context
            self.at5.append(sum(g in first for g in gold) / len(gold))

    def row(self) -> dict[str, Any]:
        p50, p95 = _latency(self.ms)
        out: dict[str, Any] = {
            "context_recall": round(100.0 * self.hits / max(self.n, 1), 2),
            "n_questions": self.n,
            "latency_ms_p50": p50,
            "latency_ms_p95": p95,
            "hits": "".join(map(str, self.per_question)),  # 0/1 per question, in order: paired tests
        }
        if self.support:  # as evaluation.evaluate_retrieval: only where gold passage ids exist
            out["support_recall"] = round(100.0 * float(np.mean(self.support)), 2)
            out["support_all_found"] = round(100.0 * float(np.mean([s == 1.0 for s in self.support])), 2)
            out["n_with_support"] = len(self.support)
            out["recall_at_5"] = round(100.0 * float(np.mean(self.at5)), 2)
        return out


@dataclass(frozen=True)
class _Run:
    """What every question of a host evaluation shares: the index, budgets, lambdas, one snapshot per score-fusion
    weight, the concept path per budget (and its latency), and which setting's contexts to keep."""

    index: G2ConSIndex
    budgets: Sequence[int]
    lambdas: Sequence[float]
    snaps: dict[float, Any]
    qvecs: Any
    concept: dict[int, list[Any]]
    concept_ms: dict[int, list[float]]
    keep: tuple[float, float, bool] | None


def evaluate_host(
    index: G2ConSIndex,
    questions: Sequence[dict[str, Any]],
    host: HostKG,
    kappas: Sequence[float],
    lambdas: Sequence[float],
    budgets: Sequence[int],
    price_in_per_mtok: float = 0.15,
    price_out_per_mtok: float = 0.60,
    show_progress: bool = False,
    keep: tuple[float, float, bool] | None = None,
    host_weights: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Host builds per kappa, and CR of host / concept / fused per (kappa, budget, lambda, spill) for the paper's
    ensemble (method ``fused``) and per host weight for score fusion (method ``fused-score``, ``host_weights``,
    default the config's; :mod:`g2cons_plugins.fusion`). Latency of a fused row = host retrieval + concept path +
    fusion (query embedding excluded). ``keep=(kappa, lambda, spill)`` also returns the host and fused contexts of
    that setting (``contexts[(method, budget)]``, for EM/F1): the config's rule (score fusion at the config's
    weight, or the ensemble at that lambda and spill)."""
    from dataclasses import replace

    from tqdm.auto import tqdm

    bad = [x for x in (*kappas, *lambdas) if not 0.0 <= x <= 1.0]
    if bad:
        raise InputError(f"kappas and lambdas must be in [0, 1], got {bad}")
    weights = [index.config.fusion_options.host_weight] if host_weights is None else list(host_weights)
    snaps = {w: replace(index.snapshot, config=index.config.with_(host_weight=w)) for w in weights}
    qvecs = embed_queries(index, [q["question"] for q in questions])
    concept, concept_ms = _concept_paths(index, questions, qvecs, budgets)
    run = _Run(index, budgets, lambdas, snaps, qvecs, concept, concept_ms, keep)
    contexts: dict[tuple[str, int], list[str]] = {}
    prompt = int(host.prompt_tokens_per_call)
    full = index.select(kappa=1.0, prompt_tokens_per_call=prompt)
    full_input = full.total_tokens + len(index.stored.chunks) * prompt
    builds: list[dict[str, Any]] = []
    sweep: list[dict[str, Any]] = []
    for kappa in kappas:
        report = index.select(kappa=kappa, prompt_tokens_per_call=prompt)
        cost = host.build(index, report, show_progress=show_progress)
        lat: list[float] = []
        rows: dict[tuple[Any, ...], _Score] = {}
        desc = f"host+fusion kappa={kappa:g}"
        for i, q in enumerate(tqdm(questions, desc=desc, unit="q", disable=not show_progress)):
            t0 = time.perf_counter()
            hitems = resolve_host_items(index, host.retrieve(q["question"]))  # id-only items get their text
            lat.append(1000 * (time.perf_counter() - t0))
            _score_question(run, kappa, i, q, hitems, lat[-1], rows, contexts)
        builds.append(_build_row(kappa, report, cost, lat, full_input, price_in_per_mtok, price_out_per_mtok))
        sweep += _sweep_rows(kappa, rows)
    return {
        "host": {"name": host.name, "label": host.label},
        "full_build": {
            "calls": len(index.stored.chunks),
            "chunk_tokens": full.total_tokens,
            "prompt_tokens_per_call": prompt,
            "input_tokens": full_input,
        },
        "prices_usd_per_mtok": {"input": price_in_per_mtok, "output": price_out_per_mtok},
        "builds": builds,
        "sweep": sweep,
        "concept": _concept_rows(questions, budgets, concept, concept_ms),
        "contexts": contexts,
    }


def _concept_paths(
    index: G2ConSIndex, questions: Sequence[dict[str, Any]], qvecs: Any, budgets: Sequence[int]
) -> tuple[dict[int, list[Any]], dict[int, list[float]]]:
    """The concept path of every question at every budget, and its latency in ms."""
    concept: dict[int, list[Any]] = {b: [] for b in budgets}
    concept_ms: dict[int, list[float]] = {b: [] for b in budgets}
    for q, v in zip(questions, qvecs, strict=True):
        for b in budgets:
            t0 = time.perf_counter()
            concept[b].append(retrieve(index, q["question"], beta=b, query_vector=v))
            concept_ms[b].append(1000 * (time.perf_counter() - t0))
    return concept, concept_ms


def _score_question(
    run: _Run,
    kappa: float,
    i: int,
    q: dict[str, Any],
    hitems: list[Any],
    host_ms: float,
    rows: dict[tuple[Any, ...], _Score],
    contexts: dict[tuple[str, int], list[str]],
) -> None:
    """One question's host-alone, ensemble (lambda x spill), share-fusion (per lambda) and score-fusion (per weight)
    rows at every budget."""
    index, keep, rule = run.index, run.keep, run.index.config.fusion
    for b in run.budgets:
        alone = fuse(hitems, [], b, 1.0, tokenizer=index.tokenizer, spill=False)
        rows.setdefault(("host", b, None, None), _Score()).add(
            q, [f.text for f in alone], [f.chunk_id for f in alone], host_ms
        )
        if keep is not None and keep[0] == kappa:
            contexts.setdefault(("host-kg", b), []).append("\n".join(f.text for f in alone))
        for spill in (False, True):
            for lam in run.lambdas:
                t1 = time.perf_counter()
                fused = fuse(hitems, run.concept[b][i], b, lam, tokenizer=index.tokenizer, spill=spill)
                ms = host_ms + run.concept_ms[b][i] + 1000 * (time.perf_counter() - t1)
                rows.setdefault(("fused", b, lam, spill), _Score()).add(
                    q, [f.text for f in fused], [f.chunk_id for f in fused], ms
                )
                if keep == (kappa, lam, spill) and rule == "ensemble":
                    contexts.setdefault(("fused", b), []).append("\n".join(f.text for f in fused))
        for lam_rule in LAMBDA_RULES:
            for lam in run.lambdas:
                t1 = time.perf_counter()
                opt = FuseOptions.of(index.config, rule=lam_rule, beta=b, lambda_=lam)
                sh = fuse_context(index, hitems, q["question"], opt, run.qvecs[i], run.concept[b][i]).items
                ms = host_ms + run.concept_ms[b][i] + 1000 * (time.perf_counter() - t1)
                rows.setdefault((f"fused-{lam_rule}", b, lam, None), _Score()).add(
                    q, [f.text for f in sh], [f.chunk_id for f in sh], ms
                )
                if keep is not None and keep[:2] == (kappa, lam) and rule == lam_rule:
                    contexts.setdefault(("fused", b), []).append("\n".join(f.text for f in sh))
        for w, snap in run.snaps.items():
            t1 = time.perf_counter()
            opt = FuseOptions.of(snap.config, rule="score", beta=b)
            sf = fuse_context(snap, hitems, q["question"], opt, run.qvecs[i]).items
            ms = host_ms + 1000 * (time.perf_counter() - t1)  # runs the concept path itself
            rows.setdefault(("fused-score", b, w, None), _Score()).add(
                q, [f.text for f in sf], [f.chunk_id for f in sf], ms
            )
            main_weight = index.config.fusion_options.host_weight
            if keep is not None and keep[0] == kappa and rule == "score" and w == main_weight:
                contexts.setdefault(("fused", b), []).append("\n".join(f.text for f in sf))


def _build_row(
    kappa: float, report: Any, cost: Any, lat: list[float], full_input: int, price_in: float, price_out: float
) -> dict[str, Any]:
    """One host build: what it kept, cost (tokens, USD, share of the full build), graph size, host latency."""
    p50, p95 = _latency(lat)
    return {
        "kappa": kappa,
        "kept_chunks": len(report.kept_ids),
        "kept_token_share": round(report.kept_share_tokens, 4),
        **{k: v for k, v in cost.to_dict().items() if k != "graph"},
        **{f"graph_{k}": v for k, v in cost.graph.items()},
        "share_of_full_input_tokens": round(cost.input_tokens / max(full_input, 1), 4),
        "usd": round(cost.usd(price_in, price_out), 6),
        "build_s": cost.seconds,
        "host_latency_ms_p50": p50,
        "host_latency_ms_p95": p95,
    }


def _sweep_rows(kappa: float, rows: dict[tuple[Any, ...], _Score]) -> list[dict[str, Any]]:
    """The sweep rows of one kappa; a score-fusion row carries its ``host_weight`` (no lambda, no spill)."""
    out = []
    for (method, b, lam, spill), sc in rows.items():
        if method == "fused-score":
            out.append(
                {"kappa": kappa, "method": method, "budget": b, "lambda": None, "spill": None, "host_weight": lam,
                 **sc.row()}
            )  # fmt: skip
        elif method in ("fused-share", "fused-novel"):
            out.append(
                {"kappa": kappa, "method": method, "budget": b, "lambda": lam, "spill": None, "host_weight": None,
                 **sc.row()}
            )  # fmt: skip
        else:
            out.append({"kappa": kappa, "method": method, "budget": b, "lambda": lam, "spill": spill, **sc.row()})
    return out


def _concept_rows(
    questions: Sequence[dict[str, Any]],
    budgets: Sequence[int],
    concept: dict[int, list[Any]],
    concept_ms: dict[int, list[float]],
) -> list[dict[str, Any]]:
    rows = []
    for b in budgets:
        sc = _Score()
        for q, items, ms in zip(questions, concept[b], concept_ms[b], strict=True):
            sc.add(q, [x.text for x in items], [x.parent_id for x in items], ms)
        rows.append({"method": "concept", "budget": b, **sc.row()})
    return rows


DOWNSTREAM_SELECTORS = ("default", "length-matched-random", "shortest", "uniform")
DOWNSTREAM_COLUMNS = (
    "kappa",
    "selector",
    "kept_chunks",
    "kept_token_share",
    "input_tokens",
    "budget",
    "host_cr",
    "fused_cr",
)


def _length_matched(index: G2ConSIndex, kept_ids: Sequence[str], seed: int) -> list[str]:
    """Random chunks with the same chunk-length profile as ``kept_ids`` (each replaced by a random chunk of the
    same token-length decile, as :func:`~g2cons_plugins.eval.evaluation.selection_quality`)."""
    st = index.stored
    tokens = st.chunk_tokens
    deciles = np.searchsorted(np.quantile(tokens, np.linspace(0, 1, 11)[1:-1]), tokens, side="right")
    pos = {c.id: i for i, c in enumerate(st.chunks)}
    kept = [pos[c] for c in kept_ids]
    rng = np.random.default_rng(seed)
    pick: list[int] = []
    for d in range(10):
        need = sum(int(deciles[i] == d) for i in kept)
        pool = np.flatnonzero(deciles == d)
        pick += rng.choice(pool, size=min(need, len(pool)), replace=False).tolist()
    return [st.chunks[i].id for i in sorted(pick)]


@dataclass(frozen=True)
class _Downstream:
    """What every (kappa, selector) cell of :func:`selection_downstream` shares: the questions with their query
    vectors, the concept path's items per budget (once; they do not depend on kappa), chunk tokens and the host's
    prompt tokens per call."""

    index: G2ConSIndex
    questions: Sequence[dict[str, Any]]
    pairs: list[tuple[dict[str, Any], Any]]
    concept: dict[int, list[Any]]
    budgets: Sequence[int]
    prompt: int
    tokens: dict[str, int]
    total: int
    full_input: int
    seed: int


def _check_selectors(selectors: Sequence[str]) -> None:
    """Raise :class:`InputError` for a name that is neither a downstream selector nor in ``SELECTORS``."""
    bad = [s for s in selectors if s not in ("default", "length-matched-random", *SELECTORS)]
    if bad:
        raise InputError(
            f"unknown downstream selectors {bad}; choose from {('default', 'length-matched-random', *SELECTORS)}"
        )


def _downstream_setup(
    index: G2ConSIndex, questions: Sequence[dict[str, Any]], host: HostKG, budgets: Sequence[int], seed: int
) -> _Downstream:
    """Embed the questions once, retrieve the concept path once per budget, count chunk tokens."""
    qvecs = embed_queries(index, [q["question"] for q in questions])
    pairs = list(zip(questions, qvecs, strict=True))
    concept = {b: [retrieve(index, q["question"], beta=b, query_vector=v) for q, v in pairs] for b in budgets}
    prompt = int(host.prompt_tokens_per_call)
    tokens = {c.id: int(t) for c, t in zip(index.stored.chunks, index.stored.chunk_tokens, strict=True)}
    total = sum(tokens.values())
    return _Downstream(
        index, questions, pairs, concept, budgets, prompt, tokens, total, total + prompt * len(tokens), seed
    )


def _selector_report(ctx: _Downstream, kappa: float, sel: str, default: SelectionReport) -> SelectionReport:
    """The kept chunks of selector ``sel`` at ``kappa`` (``default``: the index's selector's report)."""
    from dataclasses import replace

    if sel == "default":
        return default
    if sel == "length-matched-random":
        kept = _length_matched(ctx.index, default.kept_ids, ctx.seed)
        kept_set = set(kept)
        dropped = [c for c in ctx.tokens if c not in kept_set]
        kt = sum(ctx.tokens[c] for c in kept)
        return replace(
            default, selector=sel, kept_ids=kept, dropped_ids=dropped, kept_tokens=kt, dropped_tokens=ctx.total - kt
        )
    return ctx.index.select(kappa=kappa, selector=sel, prompt_tokens_per_call=ctx.prompt, seed=ctx.seed)


def _downstream_hits(
    ctx: _Downstream, host: HostKG, desc: str, show_progress: bool
) -> dict[int, tuple[list[int], list[int]]]:
    """Per budget, the per-question answer hits of the host alone and of the fused context (host KG built)."""
    from tqdm.auto import tqdm

    index = ctx.index
    lam, spill = index.config.fusion_lambda, index.config.fusion_spill
    hits: dict[int, tuple[list[int], list[int]]] = {b: ([], []) for b in ctx.budgets}
    for i, q in enumerate(tqdm(ctx.questions, desc=desc, disable=not show_progress)):
        hitems = resolve_host_items(index, host.retrieve(q["question"]))
        for b in ctx.budgets:
            alone = fuse(hitems, [], b, 1.0, tokenizer=index.tokenizer, spill=False)
            if index.config.fusion == "ensemble":
                fused = fuse(hitems, ctx.concept[b][i], b, lam, tokenizer=index.tokenizer, spill=spill)
            else:  # novel, share or score, with the index's settings
                opt = FuseOptions.of(index.config, beta=b)
                fused = fuse_context(index, hitems, q["question"], opt, ctx.pairs[i][1], ctx.concept[b][i]).items
            hits[b][0].append(int(answer_in_context(q["answers"], "\n".join(f.text for f in alone))))
            hits[b][1].append(int(answer_in_context(q["answers"], "\n".join(f.text for f in fused))))
    return hits


def _downstream_row(
    ctx: _Downstream,
    kappa: float,
    selector: str,
    report: SelectionReport,
    budget: int,
    build_s: float,
    hits: tuple[list[int], list[int]],
) -> dict[str, Any]:
    """One row of :data:`DOWNSTREAM_COLUMNS` (+ the per-question hits)."""
    host_hits, fused_hits = hits
    calls = len(report.kept_ids)
    n = len(ctx.questions)
    return {
        "kappa": kappa,
        "selector": selector,
        "kept_chunks": calls,
        "kept_token_share": round(report.kept_tokens / max(ctx.total, 1), 4),
        "calls": calls,
        "input_tokens": report.kept_tokens + ctx.prompt * calls,
        "input_share": round((report.kept_tokens + ctx.prompt * calls) / max(ctx.full_input, 1), 4),
        "prompt_tokens_per_call": ctx.prompt,
        "budget": budget,
        "host_cr": round(100.0 * sum(host_hits) / n, 2),
        "fused_cr": round(100.0 * sum(fused_hits) / n, 2),
        "n_questions": n,
        "build_s": round(build_s, 3),
        "host_hits": "".join(map(str, host_hits)),
        "fused_hits": "".join(map(str, fused_hits)),
    }


def selection_downstream(
    index: G2ConSIndex,
    questions: Sequence[dict[str, Any]],
    host: HostKG,
    kappas: Sequence[float] = (0.2, 0.5, 0.8),
    budgets: Sequence[int] = (2000,),
    selectors: Sequence[str] = DOWNSTREAM_SELECTORS,
    seed: int = 0,
    show_progress: bool = False,
) -> list[dict[str, Any]]:
    """Selection judged by what it is for: for each kappa and selector, the host KG is built over the kept chunks
    and measured alone (host-KG CR) and fused with the concept path (the index's lambda and spill). Selectors:
    ``default`` (the index's selector), ``length-matched-random`` (random chunks with the default's chunk-length
    profile, ``seed``), or any name in :data:`~g2cons_plugins.selection.SELECTORS` (e.g. ``shortest``: shortest
    chunks first; ``uniform``: random order, ``seed``).

    Each row also holds the build's cost: ``calls`` (one extraction call per kept chunk), ``input_tokens`` (kept
    chunk tokens + the host's prompt per call; with ``kappa_by="tokens"`` every selector is held to about the same
    input tokens at one kappa) and ``build_s``; and the per-question hits, ``host_hits`` / ``fused_hits``, as
    strings of 0/1 in question order, for paired tests between selectors."""
    _check_selectors(selectors)
    ctx = _downstream_setup(index, questions, host, budgets, seed)
    rows: list[dict[str, Any]] = []
    for kappa in kappas:
        default = index.select(kappa=kappa, prompt_tokens_per_call=ctx.prompt)
        for sel in selectors:
            report = _selector_report(ctx, kappa, sel, default)
            t0 = time.perf_counter()
            host.build(index, report, show_progress=False)
            build_s = time.perf_counter() - t0
            hits = _downstream_hits(ctx, host, f"{sel} kappa={kappa:g}", show_progress)
            name = sel if sel != "default" else f"default ({default.selector})"
            rows.extend(_downstream_row(ctx, kappa, name, report, b, build_s, hits[b]) for b in budgets)
    return rows
