"""Host-KG path and fused G2ConS, measured per kappa (KG built over the core chunks) and lambda (``--host``).

For each kappa the host KG is rebuilt over ``index.select(kappa=kappa)``'s kept chunks and its build cost
recorded (calls, input/output tokens, USD at the stated prices, share of the full build's tokens). Per question
and budget beta: the host alone (its results in rank order, within beta), the concept path alone (once; it does
not depend on kappa) and the fusion ``ensemble.fuse(host, concept, beta, lambda, spill)`` for every lambda and
both budget rules (hard caps, the paper's; ``spill``: a path's unused share goes to the other). Context Recall and
supporting-passage recall as in :mod:`g2cons_plugins.eval.evaluation`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ensemble import fuse
from ..errors import InputError
from ..index import G2ConSIndex
from ..retrieval import retrieve
from .evaluation import answer_in_context, embed_queries
from .hosts import HostKG

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
SWEEP_COLUMNS = ("kappa", "budget", "lambda", "spill", "context_recall", "support_recall")


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
        self.ms: list[float] = []

    def add(self, q: dict[str, Any], texts: Sequence[str], parents: Sequence[str | None], ms: float) -> None:
        self.n += 1
        self.ms.append(ms)
        self.hits += answer_in_context(q["answers"], "\n".join(texts))
        gold = q.get("supporting_passage_ids")
        if gold:
            got = set(parents)
            self.support.append(sum(g in got for g in gold) / len(gold))

    def row(self) -> dict[str, Any]:
        p50, p95 = _latency(self.ms)
        out: dict[str, Any] = {
            "context_recall": round(100.0 * self.hits / max(self.n, 1), 2),
            "n_questions": self.n,
            "latency_ms_p50": p50,
            "latency_ms_p95": p95,
        }
        if self.support:  # as evaluation.evaluate_retrieval: only where gold passage ids exist
            out["support_recall"] = round(100.0 * float(np.mean(self.support)), 2)
            out["support_all_found"] = round(100.0 * float(np.mean([s == 1.0 for s in self.support])), 2)
            out["n_with_support"] = len(self.support)
        return out


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
) -> dict[str, Any]:
    """Host builds per kappa, and CR of host / concept / fused per (kappa, budget, lambda, spill). Latency of a
    fused row = host retrieval + concept path + fusion (query embedding excluded). ``keep=(kappa, lambda, spill)``
    also returns the host and fused contexts of that setting (``contexts[(method, budget)]``, for EM/F1)."""
    from tqdm.auto import tqdm

    bad = [x for x in (*kappas, *lambdas) if not 0.0 <= x <= 1.0]
    if bad:
        raise InputError(f"kappas and lambdas must be in [0, 1], got {bad}")
    qvecs = embed_queries(index, [q["question"] for q in questions])
    concept: dict[int, list[Any]] = {b: [] for b in budgets}
    concept_ms: dict[int, list[float]] = {b: [] for b in budgets}
    for q, v in zip(questions, qvecs, strict=True):
        for b in budgets:
            t0 = time.perf_counter()
            concept[b].append(retrieve(index, q["question"], beta=b, query_vector=v))
            concept_ms[b].append(1000 * (time.perf_counter() - t0))
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
        for i, q in enumerate(
            tqdm(questions, desc=f"host+fusion kappa={kappa:g}", unit="q", disable=not show_progress)
        ):
            t0 = time.perf_counter()
            hitems = host.retrieve(q["question"])
            host_ms = 1000 * (time.perf_counter() - t0)
            lat.append(host_ms)
            for b in budgets:
                alone = fuse(hitems, [], b, 1.0, tokenizer=index.tokenizer, spill=False)
                rows.setdefault(("host", b, None, None), _Score()).add(
                    q, [f.text for f in alone], [f.chunk_id for f in alone], host_ms
                )
                if keep is not None and keep[0] == kappa:
                    contexts.setdefault(("host-kg", b), []).append("\n".join(f.text for f in alone))
                for spill in (False, True):
                    for lam in lambdas:
                        t1 = time.perf_counter()
                        fused = fuse(hitems, concept[b][i], b, lam, tokenizer=index.tokenizer, spill=spill)
                        ms = host_ms + concept_ms[b][i] + 1000 * (time.perf_counter() - t1)
                        rows.setdefault(("fused", b, lam, spill), _Score()).add(
                            q, [f.text for f in fused], [f.chunk_id for f in fused], ms
                        )
                        if keep is not None and keep == (kappa, lam, spill):
                            contexts.setdefault(("fused", b), []).append("\n".join(f.text for f in fused))
        p50, p95 = _latency(lat)
        builds.append(
            {
                "kappa": kappa,
                "kept_chunks": len(report.kept_ids),
                "kept_token_share": round(report.kept_share_tokens, 4),
                **{k: v for k, v in cost.to_dict().items() if k != "graph"},
                **{f"graph_{k}": v for k, v in cost.graph.items()},
                "share_of_full_input_tokens": round(cost.input_tokens / max(full_input, 1), 4),
                "usd": round(cost.usd(price_in_per_mtok, price_out_per_mtok), 6),
                "build_s": cost.seconds,
                "host_latency_ms_p50": p50,
                "host_latency_ms_p95": p95,
            }
        )
        for (method, b, lam, spill), sc in rows.items():
            sweep.append({"kappa": kappa, "method": method, "budget": b, "lambda": lam, "spill": spill, **sc.row()})
    concept_rows = []
    for b in budgets:
        sc = _Score()
        for q, items, ms in zip(questions, concept[b], concept_ms[b], strict=True):
            sc.add(q, [x.text for x in items], [x.parent_id for x in items], ms)
        concept_rows.append({"method": "concept", "budget": b, **sc.row()})
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
        "concept": concept_rows,
        "contexts": contexts,
    }
