"""All G2ConS parameters in one validated dataclass, named after the paper's symbols.

| paper symbol | field | paper value | our default |
|---|---|---|---|
| kappa (share of the KG build's input: chunk + prompt tokens, or chunks) | ``kappa`` | 0.8 | 0.8 |
| lambda (host-KG share of the budget) | ``lambda_`` | 0.6 | 0.2 (``fusion="share"``; the ensemble with ``spill``) |
| beta (context budget, tokens) | ``beta`` | 12,000 | 12,000 |
| theta_sem (cosine threshold of an edge) | ``theta_sem`` | 0.65 | ``None``: calibrated (see below) |
| theta_co (chunk co-occurrence threshold) | ``theta_co`` | 3 | 3 |
| k (seed concepts) | ``k`` | 25 | 25 |
| N (BFS hops) | ``n_hops`` | 2 | 2 |

``mode="paper"`` forces the paper's literal choices (theta_sem = 0.65, PageRank ``sum`` chunk score,
the local/global reranked concept walk, lambda = 0.6 with hard budget caps); the default mode keeps the same
graph but uses the choices our measurements support (docs/decisions.md). Fusion (:mod:`g2cons_plugins.fusion`):
the default rule is ``fusion="share"``: lambda is the host's share (0.2, scaled per query by ``host_agreement``):
items both paths return first, the concept path's first ``host_head`` (5) passages, the host's first item, then each
path's best by fused rank score within its share and the spill; measured against a replayed gpt-3.5 extraction of
MuSiQue walked as HippoRAG 2 walks it, the replay host and the LLM-free NER host (docs/dual-path.md,
benchmarks/dual_path/fusion_compare.sh). ``fusion="score"`` (the default before) puts host chunks as evidence on
the concept path's unit scores (``host_weight``). ``fusion="ensemble"`` (forced by paper mode) is the paper's
Weighted Context Ensemble: ``lambda_=None`` and ``spill=None`` resolve to 0.2 and True (default mode) or 0.6 and
False (paper mode); ``spill`` lets one path use the budget the other leaves unused (still within beta).
Selection: ``selector="coverage"`` (greedy name coverage per token) in the default mode, ``"pagerank"`` in paper
mode. Judged by the LLM-free host KG built from the kept chunks on four multi-hop sets
(benchmarks/default_vs_baselines/results/selection_downstream_summary.md), coverage is best in 15 of 24 (set, kappa,
budget) cells and, pooled over the questions, is ahead of shortest-first and uniform random at every kappa and of a
length-matched random selection by ~5 points at kappa 0.5; shortest-first wins only where the supporting passages
are the short ones (HotpotQA). Judged by the strong host (HippoRAG 2's graph walk over the replayed gpt-3.5
extraction of the kept chunks, MuSiQue train100; benchmarks/dual_path/selection_compare.sh), coverage is again the
best of coverage, ``pagerank``, ``knn_pagerank`` and length-matched random at kappa 0.2 / 0.5 / 0.8 and at kappa
0.5 in 1,200-token packs, but by little where every passage is its own chunk (+0.6 CR at kappa 0.5; +5 in packs).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, get_args

from .errors import InputError

Mode = Literal["default", "paper"]
ConceptMode = Literal["tfidf", "all_words"]
Incidence = Literal["contains", "extracted"]
ChunkScore = Literal["sum", "max", "mean"]
Selector = Literal["coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank"]
Strategy = Literal["bridge", "paper", "ppr", "dense", "e2"]
KappaBy = Literal["tokens", "chunks"]
VectorLevel = Literal["sentence", "chunk", "unit"]
DEFAULT_LAMBDA = 0.2  # default-mode lambda (share fusion): the sweep of benchmarks/dual_path/fusion_compare.sh

VECTOR_LEVEL: VectorLevel = "unit"  # the default mode's concept vectors (benchmarks/embedding_work/)


# an index that has the HNSW graph keeps it while it holds at least this share of ann_pq_max_units units
PQ_RETURN = 0.75


@dataclass(frozen=True)
class G2ConSConfig:
    """Parameters of the concept graph, core-chunk selection, retrieval and fusion."""

    mode: Mode = "default"
    # --- retrieval units (KET-RAG's tau split; None = retrieve whole chunks) -----------------------------
    unit_tokens: int | None = 150
    # --- concepts (Section 3.2; Ramos 2003 TF-IDF) --------------------------------------------------------
    concept_mode: ConceptMode = "tfidf"
    top_n: int = 10  # TF-IDF keywords kept per chunk
    min_df: int = 1  # a concept must occur in >= min_df chunks
    max_df: float = 0.5  # ... and in <= max_df share of chunks
    ngram_max: int = 1  # 1 = single words; 2 adds bigrams
    stop_words: Literal["english"] | None = "english"  # None: keep stop words; else per-language lists
    # "auto": each sentence's language (script, then stop words) picks its stop words and, for Chinese /
    # Japanese, word segmentation (g2cons_plugins.text.analysis); English text analyses exactly as "english"
    language: Literal["auto", "english"] = "auto"
    segmenter: Literal["auto", "jieba", "bigram"] = "auto"  # Chinese: jieba (rjieba) when installed, or bigrams
    incidence: Incidence = "contains"
    # --- edges ------------------------------------------------------------------------------------------
    cooccurrence: Literal["chunk", "sentence"] = "chunk"  # Table 4 ablation A: "sentence"
    # concept vectors: "sentence" = Eq. 1 (mean of the sentence vectors; sentences are embedded too), "chunk" = Table 4
    # ablation C (mean of the unit vectors holding the concept), "unit" = the unit vectors weighted by how many of
    # their sentences hold it (only units are embedded); None resolves to "sentence" (paper mode) or VECTOR_LEVEL
    vector_level: VectorLevel | None = None
    theta_co: int = 3
    theta_sem: float | None = None  # None -> percentile of candidate-pair cosines (embedder-calibrated)
    theta_sem_percentile: float = 70.0  # keep the top 30% of candidate pairs when theta_sem is None
    # --- ranking and selection --------------------------------------------------------------------------
    pagerank_damping: float = 0.85
    kappa: float = 0.8
    kappa_by: KappaBy = "tokens"
    selector: Selector = "coverage"
    chunk_score: ChunkScore = "sum"
    seed: int = 42
    # --- retrieval (Section 3.2.1) ----------------------------------------------------------------------
    beta: int = 12_000
    k: int = 25
    n_hops: int = 2
    strategy: Strategy = "bridge"
    n_seed_units: int = 3  # bridge: dense seed units kept first
    bridge_rounds: int = 2
    bridge_bonus: float = 0.2
    bridge_max_df: int = 5  # bridge concepts occur in 2..bridge_max_df chunks
    bridge_vocab: Literal["all_words", "concepts"] = "all_words"
    bridge_link: Literal["seed_score", "indicator"] = "seed_score"
    lexical_seeds: int = 1  # bridge: the top BM25 units (retrieval.lexical) also seed bridges, after dense
    lexical_weight: float = 0.075  # bridge: cos + lexical_weight x BM25 / max BM25 (0 = dense only; not with ANN)
    hybrid_seeds: bool = True  # bridge with lexical_weight > 0: seed units by the hybrid score (False: by cos)
    # bridge: the unit of bridge_bonus and lexical_weight. "cosine": added to cos as they are; "spread": scaled by
    # the query's spread of cos over the units (std / 0.1, ~1 for MiniLM; e5's cosines spread ~5x less)
    score_scale: Literal["cosine", "spread"] = "spread"
    # bridge, names the query writes (capitalised spans, quoted spans; g2cons_plugins.retrieval.entities): the first
    # n_seed_units places go to units chosen one at a time by score + entity_weight x bridge_bonus x (spread) x the
    # specificity of each name not yet held by a chosen unit, so each named entity's passage comes first; the seeds,
    # bridges and the rest of the ranking are those without names (0 = off). entity_head_share: the share of a
    # name's bonus given only where the unit's first line is the name (a title; half where it opens the text)
    entity_weight: float = 2.0
    entity_head_share: float = 0.5
    ppr_damping: float = 0.5
    rerank: Literal["local_global", "naive"] = "local_global"  # paper walk; Table 4 ablation D: "naive"
    e2_hops: int = 4  # E2GraphRAG router: initial hop threshold h
    e2_max_units: int = 25  # ... tighten h until at most this many local units
    # --- scale ------------------------------------------------------------------------------------------
    # From this many units on, dense candidates come from an HNSW index (usearch, extra [ann]); None: always exact.
    # The index is saved with the snapshot and updated in place on add/remove (g2cons_plugins.arrays.unit_hnsw).
    # 100k units (~65k wordllama passages): below it the exact scan keeps a query under ~10 ms; at 154k units the
    # index took the default query from 13.6 to 3.9 ms p50 (context unit recall 0.977), and an i8 graph costs
    # ~9.6 CPU s per 100k units with ef_add 64 (~72 s of a 1M-passage build on 2 cores), about twice that with
    # ef_add 128 (benchmarks/scale/results/ann_graph_80k.md); on MuSiQue ketrag500
    # with the index forced on, Context Recall at 1k-4k equals the exact path's within 0.4
    # (benchmarks/scale/results/ann_default.md).
    ann_threshold: int | None = 100_000
    ann_quantization: Literal["f32", "f16", "i8"] = "i8"  # the graph's scalar type (candidates re-scored in f32)
    ann_connectivity: int = 16  # HNSW M
    ann_expansion_add: int = 128  # HNSW ef_construction (a better graph: fewer candidates for the same recall)
    ann_expansion_search: int = 128  # HNSW ef of a search (widened to the candidates asked for)
    # The kind of unit index: "auto" (default) scans product-quantised codes of every unit (faiss fast scan,
    # g2cons_plugins.arrays.unit_pq) below ann_pq_max_units units and uses the HNSW graph from there on; "pq" / "hnsw"
    # always that one. At 123k wordllama units the scan's 850 candidates hold 0.997 of the exact top 150 (0.76 ms
    # a search), the graph's 640 hold 0.968 (2.2 ms); the scan is linear in the units, the graph is not
    # (benchmarks/scale/results/unit_index_kinds_80k.md, unit_pq_80k.md).
    ann_kind: Literal["auto", "pq", "hnsw"] = "auto"
    ann_pq_max_units: int = 400_000
    ann_pq_dims_per_code: int = 2  # dimensions per 4-bit code (64 bytes a 256-d unit)
    ann_pq_rerank: float = 2.0  # a search passes on max(ann_pq_rerank x k, 256) candidates, re-scored exactly
    # --- fusion -----------------------------------------------------------------------------------------
    # "share" (default): overlap first, then each path's best within its lambda share, then the spill
    # (g2cons_plugins.fusion); "score": host chunks as evidence on the concept path's unit scores (the default
    # before share fusion); "ensemble": the paper's Weighted Context Ensemble with lambda caps (forced by mode="paper")
    fusion: Literal["share", "score", "ensemble"] = "share"
    host_weight: float = 0.6  # score fusion: evidence of the host's best chunk, in bridge_bonus units
    host_agreement: bool = True  # scale the host's share (share) / weight (score) by its top 5's agreement
    host_head: int = 5  # share/score fusion: the concept path's first host_head passages stay first (0: none)
    lambda_: float | None = None  # None -> 0.2 (default mode) / 0.6 (paper mode); the host's share (share, ensemble)
    spill: bool | None = None  # None -> True (default mode) / False (paper mode: hard lambda caps)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check_types()
        if self.mode not in ("default", "paper"):
            raise InputError(f"mode must be 'default' or 'paper', got {self.mode!r}")
        if self.mode == "paper":
            object.__setattr__(self, "theta_sem", 0.65 if self.theta_sem is None else self.theta_sem)
            object.__setattr__(self, "selector", "pagerank")
            object.__setattr__(self, "strategy", "paper")
            object.__setattr__(self, "fusion", "ensemble")
        if self.lambda_ is None:
            object.__setattr__(self, "lambda_", 0.6 if self.mode == "paper" else DEFAULT_LAMBDA)
        if self.vector_level is None:
            object.__setattr__(self, "vector_level", "sentence" if self.mode == "paper" else VECTOR_LEVEL)
        if self.spill is None:
            object.__setattr__(self, "spill", self.mode != "paper")
        checks: list[tuple[bool, str]] = [
            (0.0 <= self.kappa <= 1.0, f"kappa must be in [0, 1], got {self.kappa}"),
            (0.0 <= self.fusion_lambda <= 1.0, f"lambda_ must be in [0, 1], got {self.lambda_}"),
            (self.beta > 0, f"beta must be a positive token count, got {self.beta}"),
            (self.k >= 1, f"k must be >= 1, got {self.k}"),
            (self.n_hops >= 0, f"n_hops (N) must be >= 0, got {self.n_hops}"),
            (self.theta_co >= 1, f"theta_co must be >= 1, got {self.theta_co}"),
            (self.top_n >= 1, f"top_n must be >= 1, got {self.top_n}"),
            (self.min_df >= 1, f"min_df must be >= 1 (chunks a concept occurs in), got {self.min_df}"),
            (0.0 < self.max_df <= 1.0, f"max_df must be in (0, 1], got {self.max_df}"),
            (self.ngram_max in (1, 2, 3), f"ngram_max must be 1, 2 or 3, got {self.ngram_max}"),
            (0.0 < self.pagerank_damping < 1.0, "pagerank_damping must be in (0, 1)"),
            (0.0 < self.ppr_damping < 1.0, "ppr_damping must be in (0, 1)"),
            (0.0 <= self.theta_sem_percentile <= 100.0, "theta_sem_percentile must be in [0, 100]"),
            (self.unit_tokens is None or self.unit_tokens >= 16, "unit_tokens must be None or >= 16"),
            (self.ann_threshold is None or self.ann_threshold >= 1, "ann_threshold must be None or >= 1"),
            (self.ann_quantization in ("f32", "f16", "i8"),
             f"ann_quantization must be 'f32', 'f16' or 'i8', got {self.ann_quantization!r}"),
            (min(self.ann_connectivity, self.ann_expansion_add, self.ann_expansion_search) >= 2,
             "ann_connectivity, ann_expansion_add and ann_expansion_search must be >= 2"),
            (self.ann_kind in ("auto", "pq", "hnsw"),
             f"ann_kind must be 'auto', 'pq' or 'hnsw', got {self.ann_kind!r}"),
            (self.ann_pq_max_units >= 0, f"ann_pq_max_units must be >= 0, got {self.ann_pq_max_units}"),
            (self.ann_pq_dims_per_code >= 1, f"ann_pq_dims_per_code must be >= 1, got {self.ann_pq_dims_per_code}"),
            (self.ann_pq_rerank >= 1.0, f"ann_pq_rerank must be >= 1, got {self.ann_pq_rerank}"),
            (self.n_seed_units >= 1 and self.bridge_rounds >= 0, "n_seed_units must be >= 1, bridge_rounds >= 0"),
            (self.bridge_vocab in ("all_words", "concepts"), "bridge_vocab must be 'all_words' or 'concepts'"),
            (self.bridge_link in ("seed_score", "indicator"), "bridge_link must be 'seed_score' or 'indicator'"),
            (self.cooccurrence in ("chunk", "sentence"), "cooccurrence must be 'chunk' or 'sentence'"),
            (
                self.vector_level in get_args(VectorLevel),
                f"vector_level must be one of {get_args(VectorLevel)}, got {self.vector_level!r}",
            ),
            (self.rerank in ("local_global", "naive"), "rerank must be 'local_global' or 'naive'"),
            (self.e2_hops >= 1 and self.e2_max_units >= 1, "e2_hops and e2_max_units must be >= 1"),
            (self.lexical_seeds >= 0, f"lexical_seeds must be >= 0, got {self.lexical_seeds}"),
            (0.0 <= self.entity_weight <= 10.0, f"entity_weight must be in [0, 10], got {self.entity_weight}"),
            (0.0 <= self.entity_head_share <= 1.0,
             f"entity_head_share must be in [0, 1], got {self.entity_head_share}"),
            (0.0 <= self.lexical_weight <= 10.0, f"lexical_weight must be in [0, 10], got {self.lexical_weight}"),
            (self.theta_sem is None or -1.0 <= self.theta_sem <= 1.0, "theta_sem must be in [-1, 1]"),
            (isinstance(self.spill, bool), f"spill must be True or False, got {self.spill!r}"),
            (self.fusion in ("share", "score", "ensemble"),
             f"fusion must be 'share', 'score' or 'ensemble', got {self.fusion!r}"),
            (0.0 <= self.host_weight <= 10.0, f"host_weight must be in [0, 10], got {self.host_weight}"),
            (0 <= self.host_head <= 1000, f"host_head must be in [0, 1000], got {self.host_head}"),
            (isinstance(self.host_agreement, bool), f"host_agreement must be a bool, got {self.host_agreement!r}"),
            (isinstance(self.hybrid_seeds, bool), f"hybrid_seeds must be True or False, got {self.hybrid_seeds!r}"),
            (self.score_scale in ("cosine", "spread"),
             f"score_scale must be 'cosine' or 'spread', got {self.score_scale!r}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise InputError(msg)

    def _check_types(self) -> None:
        """Numbers must be numbers (not bool, not str, finite); errors name the field."""
        from .errors import real

        floats = ("kappa", "max_df", "theta_sem_percentile", "pagerank_damping", "bridge_bonus", "ppr_damping",
                  "lexical_weight", "host_weight", "entity_weight", "entity_head_share", "ann_pq_rerank")
        ints = ("top_n", "min_df", "ngram_max", "theta_co", "seed", "beta", "k", "n_hops", "n_seed_units",
                "bridge_rounds", "bridge_max_df", "e2_hops", "e2_max_units", "lexical_seeds", "host_head",
                "ann_connectivity", "ann_expansion_add", "ann_expansion_search", "ann_pq_max_units",
                "ann_pq_dims_per_code")
        for name in floats + ("theta_sem", "lambda_"):
            value = getattr(self, name)
            if value is not None or name in floats:
                object.__setattr__(self, name, real(name, value))
        for name in ints + ("unit_tokens", "ann_threshold"):
            value = getattr(self, name)
            if value is None and name in ("unit_tokens", "ann_threshold"):
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                    value = int(value)
                else:
                    raise InputError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
            object.__setattr__(self, name, int(value))
        for name, alias in (
            ("concept_mode", ConceptMode), ("incidence", Incidence), ("chunk_score", ChunkScore),
            ("selector", Selector), ("strategy", Strategy), ("kappa_by", KappaBy),
        ):
            allowed = get_args(alias)
            if getattr(self, name) not in allowed:
                raise InputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.stop_words not in ("english", None):
            raise InputError(f"stop_words must be 'english' or None, got {self.stop_words!r}")
        if self.language not in ("auto", "english"):
            raise InputError(f"language must be 'auto' or 'english', got {self.language!r}")
        if self.segmenter not in ("auto", "jieba", "bigram"):
            raise InputError(f"segmenter must be 'auto', 'jieba' or 'bigram', got {self.segmenter!r}")
        if self.spill is not None and not isinstance(self.spill, bool):
            raise InputError(f"spill must be True, False or None, got {self.spill!r}")
        if not isinstance(self.extra, dict):
            raise InputError(f"extra must be a dict, got {type(self.extra).__name__}")

    @property
    def fusion_lambda(self) -> float:
        """lambda_, resolved (never None after construction)."""
        return float(self.lambda_ if self.lambda_ is not None else DEFAULT_LAMBDA)

    @property
    def fusion_spill(self) -> bool:
        """spill, resolved (never None after construction)."""
        return bool(self.spill)

    def with_(self, **changes: Any) -> G2ConSConfig:
        """A copy with some fields changed (validated again)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise InputError(f"unknown G2ConSConfig fields: {unknown}")
        if "mode" in changes and changes["mode"] != self.mode:  # re-resolve the mode-dependent defaults
            for name in ("lambda_", "spill", "vector_level"):
                changes.setdefault(name, None)
        return replace(self, **changes)

    def unit_index_kind(self, n_units: int, current: str | None = None) -> str | None:
        """The unit index a snapshot of ``n_units`` units gets: None (the exact scan), ``"pq"`` or ``"hnsw"``.
        ``current``: the kind the snapshot it is made from has (or a loaded one); with ``ann_kind="auto"`` an index
        with the graph keeps it down to :data:`PQ_RETURN` x ``ann_pq_max_units`` units, so an index near the limit
        does not switch kinds (and rebuild) back and forth."""
        if self.ann_threshold is None or n_units < self.ann_threshold:
            return None
        if self.ann_kind != "auto":
            return self.ann_kind
        if current == "hnsw" and n_units >= PQ_RETURN * self.ann_pq_max_units:
            return "hnsw"
        return "pq" if n_units < self.ann_pq_max_units else "hnsw"

    def to_dict(self) -> dict[str, Any]:
        """All fields as plain JSON-serialisable values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> G2ConSConfig:
        """A config from :meth:`to_dict` output (unknown keys ignored; every value validated)."""
        if not isinstance(data, dict):
            raise InputError(f"config must be a mapping, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}
        if "lambda_" in data and "spill" not in data:
            data["spill"] = False  # saved before ``spill`` existed: fusion used hard caps then
        if "lambda_" in data and "vector_level" not in data:
            data["vector_level"] = "sentence"  # saved before ``vector_level`` existed: Eq. 1 then
        return cls(**data)
