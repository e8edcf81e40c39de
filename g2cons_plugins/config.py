"""All G2ConS parameters in one validated, frozen dataclass: the paper's symbols at the top, the rest by component.

| paper symbol | field | paper value | our default |
|---|---|---|---|
| kappa (share of the KG build's input: chunk + prompt tokens, or chunks) | ``kappa`` | 0.8 | 0.8 |
| lambda (the host KG's part of the budget) | ``lambda_`` | 0.6 | 0.2 (``fusion="novel"``, ``"share"``, ensemble) |
| beta (context budget, tokens) | ``beta`` | 12,000 | 12,000 |
| theta_sem (cosine threshold of an edge) | ``theta_sem`` | 0.65 | ``None``: calibrated (see below) |
| theta_co (chunk co-occurrence threshold) | ``theta_co`` | 3 | 3 |
| k (seed concepts) | ``k`` | 25 | 25 |
| N (BFS hops) | ``n_hops`` | 2 | 2 |

Beside them at the top: the choices ``mode``, ``strategy``, ``selector`` and ``fusion``. Every other parameter sits
in the option object of its component: :class:`GraphOptions` (``graph``: units, concepts, edges, concept vectors,
PageRank), :class:`SelectionOptions` (``selection``), :class:`RetrievalOptions` (``retrieval``: the bridge walk and
the other strategies), :class:`FusionOptions` (``fusion_options``) and :class:`EngineOptions` (``engine``: the unit
index). Every parameter keeps one name in the whole config, so ``G2ConSConfig(ann_kind="pq")``,
``G2ConSConfig(**{"engine.ann_kind": "pq"})`` and ``G2ConSConfig(engine=EngineOptions(ann_kind="pq"))`` are the
same config; :meth:`G2ConSConfig.to_dict` (what an index saves) writes every parameter by that flat name, and
:meth:`G2ConSConfig.from_dict` reads every manifest a released version wrote.

``mode="paper"`` forces the paper's literal choices (theta_sem = 0.65, PageRank ``sum`` chunk score, the local/global
reranked concept walk, lambda = 0.6 with hard budget caps); the default mode keeps the same graph but uses the
choices our measurements support (docs/decisions.md). Both are a :class:`Preset` in :data:`PRESETS`, applied in one
place (:func:`resolve`). Fusion (:mod:`g2cons_plugins.fusion`): the default rule is ``fusion="novel"``: the concept
path's first ``host_head`` (5) passages, the host's first two passages the concept path lacks (the first always, the
second within lambda x beta, lambda 0.2), the rest of the concept path, the spill; at or above the concept path in every
cell measured against a replayed gpt-3.5 extraction of MuSiQue walked as HippoRAG 2 walks it (passages and 1,200-token
packs) and the LLM-free NER host on four sets (docs/dual-path.md, benchmarks/dual_path/fusion_novel.sh).
``fusion="share"`` (the default before) gives the host lambda of beta, scaled per query by ``host_agreement``, and gains
more at 4k and in packs; ``fusion="score"`` puts host chunks as evidence on the concept path's unit scores
(``host_weight``). ``fusion="ensemble"``
(forced by paper mode) is the paper's Weighted Context Ensemble: ``lambda_=None`` and ``spill=None`` resolve to 0.2
and True (default mode) or 0.6 and False (paper mode); ``spill`` lets one path use the budget the other leaves unused
(still within beta). Selection: ``selector="coverage"`` (greedy name coverage per token) in the default mode,
``"pagerank"`` in paper mode. Judged by the LLM-free host KG built from the kept chunks on four multi-hop sets
(benchmarks/default_vs_baselines/results/selection_downstream_summary.md), coverage is best in 15 of 24 (set, kappa,
budget) cells and, pooled over the questions, is ahead of shortest-first and uniform random at every kappa and of a
length-matched random selection by ~5 points at kappa 0.5; shortest-first wins only where the supporting passages
are the short ones (HotpotQA). Judged by the strong host (HippoRAG 2's graph walk over the replayed gpt-3.5
extraction of the kept chunks, MuSiQue train100; benchmarks/dual_path/selection_compare.sh), coverage is again the
best of coverage, ``pagerank``, ``knn_pagerank`` and length-matched random at kappa 0.2 / 0.5 / 0.8 and at kappa
0.5 in 1,200-token packs, but by little where every passage is its own chunk (+2.0 CR at kappa 0.5 over ten
random draws, whose spread is 2.1; +5 in packs).
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from .errors import InputError, real

__all__ = [
    "DEFAULT_LAMBDA",
    "FLAT_NAMES",
    "GROUPS",
    "PQ_RETURN",
    "PRESETS",
    "SAVED_KEYS",
    "VECTOR_LEVEL",
    "ChunkScore",
    "ConceptMode",
    "EngineOptions",
    "FusionOptions",
    "FusionRule",
    "G2ConSConfig",
    "GraphOptions",
    "Incidence",
    "KappaBy",
    "Mode",
    "Preset",
    "RetrievalOptions",
    "SelectionOptions",
    "Selector",
    "Strategy",
    "VectorLevel",
    "dotted_name",
    "parameter_defaults",
    "resolve",
]

Mode = Literal["default", "paper"]
ConceptMode = Literal["tfidf", "all_words"]
Incidence = Literal["contains", "extracted"]
ChunkScore = Literal["sum", "max", "mean"]
Selector = Literal["coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank"]
Strategy = Literal["bridge", "paper", "ppr", "dense", "e2"]
KappaBy = Literal["tokens", "chunks"]
VectorLevel = Literal["sentence", "chunk", "unit"]
FusionRule = Literal["share", "score", "ensemble", "novel"]
DEFAULT_LAMBDA = 0.2  # default-mode lambda (novel, share): benchmarks/dual_path/fusion_novel.sh, fusion_compare.sh

VECTOR_LEVEL: VectorLevel = "unit"  # the default mode's concept vectors (benchmarks/embedding_work/)


# an index that has the HNSW graph keeps it while it holds at least this share of ann_pq_max_units units
PQ_RETURN = 0.75


# ---------------------------------------------------------------------------------------------- validation
class _Rule(NamedTuple):
    """How one parameter is checked: its kind (``"real"``, ``"int"``, ``"bool"``, ``"choice"``; ``"?"`` appended:
    ``None`` is allowed too), a test of the value and the message when it fails (``{name}``: the parameter's dotted
    name, ``{value}``: its value)."""

    kind: str
    ok: Callable[[Any], bool] | None = None
    message: str = ""
    allowed: tuple[Any, ...] = ()


def _choice(alias: Any, *, optional: bool = False, message: str = "") -> _Rule:
    allowed = get_args(alias) if not isinstance(alias, tuple) else alias
    return _Rule("choice?" if optional else "choice", None, message or "{name} must be one of {allowed}, got {value!r}",
                 allowed)


def _integer(name: str, value: Any) -> int:
    """An integer: ints and numpy integers, or a finite float with an integral value (not bool, not str)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        raise InputError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _coerce(rule: _Rule, name: str, value: Any) -> Any:
    """``value`` of the rule's kind (numbers normalised to float / int), or an :class:`InputError` naming ``name``."""
    kind = rule.kind.rstrip("?")
    if value is None and rule.kind.endswith("?"):
        return None
    if kind == "real":
        return real(name, value)
    if kind == "int":
        return _integer(name, value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError(rule.message.format(name=name, value=value))
        return value
    if value not in rule.allowed:
        raise InputError(rule.message.format(name=name, value=value, allowed=rule.allowed))
    return value


def _check(values: Mapping[str, Any], rules: Mapping[str, _Rule], prefix: str) -> dict[str, Any]:
    """The values coerced and checked in ``rules``' order; errors name the parameter (``prefix`` + its name)."""
    out = dict(values)
    for field_name, rule in rules.items():
        name = prefix + field_name
        value = _coerce(rule, name, values[field_name])
        if rule.ok is not None and value is not None and not rule.ok(value):
            raise InputError(rule.message.format(name=name, value=value))
        out[field_name] = value
    return out


def _validated(options: Any, group: str) -> None:
    """Check a frozen option object in place (its fields coerced: ``4000.0`` -> 4000, numpy numbers -> Python)."""
    values = {f.name: getattr(options, f.name) for f in fields(options)}
    for name, value in _check(values, _RULES[group], group + ".").items():
        object.__setattr__(options, name, value)


_TOP_RULES: dict[str, _Rule] = {
    "mode": _choice(Mode, message="{name} must be 'default' or 'paper', got {value!r}"),
    "kappa": _Rule("real", lambda v: 0.0 <= v <= 1.0, "{name} must be in [0, 1], got {value}"),
    "lambda_": _Rule("real?", lambda v: 0.0 <= v <= 1.0, "{name} must be in [0, 1], got {value}"),
    "beta": _Rule("int", lambda v: v > 0, "{name} must be a positive token count, got {value}"),
    "theta_sem": _Rule("real?", lambda v: -1.0 <= v <= 1.0, "{name} must be in [-1, 1], got {value}"),
    "theta_co": _Rule("int", lambda v: v >= 1, "{name} must be >= 1, got {value}"),
    "k": _Rule("int", lambda v: v >= 1, "{name} must be >= 1, got {value}"),
    "n_hops": _Rule("int", lambda v: v >= 0, "{name} (N) must be >= 0, got {value}"),
    "strategy": _choice(Strategy),
    "selector": _choice(Selector),
    "fusion": _choice(FusionRule, message="{name} must be 'share', 'score', 'ensemble' or 'novel', got {value!r}"),
}


def _between(lo: float, hi: float) -> _Rule:
    return _Rule("real", lambda v: lo <= v <= hi, f"{{name}} must be in [{lo:g}, {hi:g}], got {{value}}")


def _at_least(lo: int, kind: str = "int") -> _Rule:
    return _Rule(kind, lambda v: v >= lo, f"{{name}} must be >= {lo}, got {{value}}")


_BOOL = "{name} must be True or False, got {value!r}"
_RULES: dict[str, dict[str, _Rule]] = {
    "graph": {
        "unit_tokens": _Rule("int?", lambda v: v >= 16, "{name} must be None or >= 16, got {value}"),
        "concept_mode": _choice(ConceptMode),
        "top_n": _at_least(1),
        "min_df": _Rule("int", lambda v: v >= 1, "{name} must be >= 1 (chunks a concept occurs in), got {value}"),
        "max_df": _Rule("real", lambda v: 0.0 < v <= 1.0, "{name} must be in (0, 1], got {value}"),
        "ngram_max": _Rule("int", lambda v: v in (1, 2, 3), "{name} must be 1, 2 or 3, got {value}"),
        "stop_words": _choice(("english", None), message="{name} must be 'english' or None, got {value!r}"),
        "language": _choice(("auto", "english"), message="{name} must be 'auto' or 'english', got {value!r}"),
        "segmenter": _choice(("auto", "jieba", "bigram"),
                             message="{name} must be 'auto', 'jieba' or 'bigram', got {value!r}"),
        "incidence": _choice(Incidence),
        "cooccurrence": _choice(("chunk", "sentence"), message="{name} must be 'chunk' or 'sentence', got {value!r}"),
        "vector_level": _choice(VectorLevel, optional=True),
        "theta_sem_percentile": _between(0.0, 100.0),
        "pagerank_damping": _Rule("real", lambda v: 0.0 < v < 1.0, "{name} must be in (0, 1), got {value}"),
    },
    "selection": {
        "kappa_by": _choice(KappaBy),
        "chunk_score": _choice(ChunkScore),
        "seed": _Rule("int"),
    },
    "retrieval": {
        "n_seed_units": _at_least(1),
        "bridge_rounds": _at_least(0),
        "bridge_bonus": _Rule("real"),
        "bridge_max_df": _Rule("int"),
        "bridge_vocab": _choice(("all_words", "concepts"), message="{name} must be 'all_words' or 'concepts'"),
        "bridge_link": _choice(("seed_score", "indicator"), message="{name} must be 'seed_score' or 'indicator'"),
        "lexical_seeds": _at_least(0),
        "lexical_weight": _between(0.0, 10.0),
        "hybrid_seeds": _Rule("bool", None, _BOOL),
        "score_scale": _choice(("cosine", "spread"), message="{name} must be 'cosine' or 'spread', got {value!r}"),
        "entity_weight": _between(0.0, 10.0),
        "entity_head_share": _between(0.0, 1.0),
        "link_head": _Rule("int", lambda v: 0 <= v <= 100, "{name} must be in [0, 100], got {value}"),
        "link_pool": _Rule("int", lambda v: 1 <= v <= 1000, "{name} must be in [1, 1000], got {value}"),
        "link_weight": _between(0.0, 10.0),
        "ppr_damping": _Rule("real", lambda v: 0.0 < v < 1.0, "{name} must be in (0, 1), got {value}"),
        "rerank": _choice(("local_global", "naive"), message="{name} must be 'local_global' or 'naive'"),
        "e2_hops": _at_least(1),
        "e2_max_units": _at_least(1),
    },
    "fusion_options": {
        "host_weight": _between(0.0, 10.0),
        "host_agreement": _Rule("bool", None, "{name} must be a bool, got {value!r}"),
        "host_head": _Rule("int", lambda v: 0 <= v <= 1000, "{name} must be in [0, 1000], got {value}"),
        "spill": _Rule("bool?", None, "{name} must be True, False or None, got {value!r}"),
    },
    "engine": {
        "ann_threshold": _Rule("int?", lambda v: v >= 1, "{name} must be None or >= 1, got {value}"),
        "ann_quantization": _choice(("f32", "f16", "i8"),
                                    message="{name} must be 'f32', 'f16' or 'i8', got {value!r}"),
        "ann_connectivity": _at_least(2),
        "ann_expansion_add": _at_least(2),
        "ann_expansion_search": _at_least(2),
        "ann_kind": _choice(("auto", "pq", "hnsw"), message="{name} must be 'auto', 'pq' or 'hnsw', got {value!r}"),
        "ann_pq_max_units": _at_least(0),
        "ann_pq_dims_per_code": _at_least(1),
        "ann_pq_rerank": _at_least(1, "real"),
    },
}


# ---------------------------------------------------------------------------------------------- option objects
@dataclass(frozen=True)
class GraphOptions:
    """How the graph is built (Section 3.2): retrieval units, concepts, edges, concept vectors and PageRank. With
    ``theta_co`` and ``theta_sem`` these are every value a saved index's graph depends on."""

    unit_tokens: int | None = 150  # retrieval units (KET-RAG's tau split); None = retrieve whole chunks
    concept_mode: ConceptMode = "tfidf"  # Ramos 2003 TF-IDF keywords; "all_words": KET-RAG's vocabulary
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
    cooccurrence: Literal["chunk", "sentence"] = "chunk"  # Table 4 ablation A: "sentence"
    # concept vectors: "sentence" = Eq. 1 (mean of the sentence vectors; sentences are embedded too), "chunk" = Table 4
    # ablation C (mean of the unit vectors holding the concept), "unit" = the unit vectors weighted by how many of
    # their sentences hold it (only units are embedded); None resolves by the mode (PRESETS)
    vector_level: VectorLevel | None = None
    theta_sem_percentile: float = 70.0  # keep the top 30% of candidate pairs when theta_sem is None
    pagerank_damping: float = 0.85

    def __post_init__(self) -> None:
        _validated(self, "graph")


@dataclass(frozen=True)
class SelectionOptions:
    """How core chunks are chosen beside ``kappa`` and ``selector``."""

    kappa_by: KappaBy = "tokens"  # kappa is a share of the extraction input tokens, or of the chunks
    chunk_score: ChunkScore = "sum"  # the pagerank selector: sum / max / mean of a chunk's concepts' PageRank
    seed: int = 42  # the random selectors

    def __post_init__(self) -> None:
        _validated(self, "selection")


@dataclass(frozen=True)
class RetrievalOptions:
    """The concept path's strategies (Section 3.2.1): the bridge walk (the default) and the others' knobs."""

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
    # bridge: the first link_head passages (of the first link_pool) in the linked order, each next one chosen by
    # 1 / (5 + rank) + link_weight x shared / (2 + its names), shared >= 2 of its names the passages before it hold
    # (retrieval.linked; 0 = off)
    link_head: int = 5
    link_pool: int = 10
    link_weight: float = 0.2
    ppr_damping: float = 0.5  # the ppr strategy (TERAG)
    rerank: Literal["local_global", "naive"] = "local_global"  # paper walk; Table 4 ablation D: "naive"
    e2_hops: int = 4  # E2GraphRAG router: initial hop threshold h
    e2_max_units: int = 25  # ... tighten h until at most this many local units

    def __post_init__(self) -> None:
        _validated(self, "retrieval")


@dataclass(frozen=True)
class FusionOptions:
    """The dual path's fusion beside the rule (``fusion``) and the host's share (``lambda_``)."""

    host_weight: float = 0.6  # score fusion: evidence of the host's best chunk, in bridge_bonus units
    host_agreement: bool = True  # scale the host's share (share) / weight (score) by its top 5's agreement
    host_head: int = 5  # share/score fusion: the concept path's first host_head passages stay first (0: none)
    spill: bool | None = None  # None resolves by the mode (PRESETS): True, or the paper's hard lambda caps

    def __post_init__(self) -> None:
        _validated(self, "fusion_options")


@dataclass(frozen=True)
class EngineOptions:
    """The unit index that serves dense candidates at scale (:mod:`g2cons_plugins.arrays`); results do not depend
    on it below ``ann_threshold`` units.

    From ``ann_threshold`` units on, dense candidates come from a unit index (extra [ann]); None: always exact. It is
    saved with the snapshot and updated in place on add/remove. 100k units (~65k wordllama passages): below it the
    exact scan keeps a query under ~10 ms; at 154k units the HNSW graph took the default query from 13.6 to 3.9 ms
    p50 (context unit recall 0.977), and an i8 graph costs ~9.6 CPU s per 100k units with ef_add 64, about twice
    that with ef_add 128 (benchmarks/scale/results/ann_graph_80k.md); on MuSiQue ketrag500 with the index forced on,
    Context Recall at 1k-4k equals the exact path's within 0.4 (benchmarks/scale/results/ann_default.md). ``ann_kind``
    "auto" scans product-quantised codes of every unit (faiss fast scan) below ``ann_pq_max_units`` units and uses
    the HNSW graph from there on; "pq" / "hnsw" always that one. At 123k wordllama units the scan's 850 candidates
    hold 0.997 of the exact top 150 (0.76 ms a search), the graph's 640 hold 0.968 (2.2 ms); the scan is linear in
    the units, the graph is not (benchmarks/scale/results/unit_index_kinds_80k.md, unit_pq_80k.md)."""

    ann_threshold: int | None = 100_000
    ann_quantization: Literal["f32", "f16", "i8"] = "i8"  # the graph's scalar type (candidates re-scored in f32)
    ann_connectivity: int = 16  # HNSW M
    ann_expansion_add: int = 128  # HNSW ef_construction (a better graph: fewer candidates for the same recall)
    ann_expansion_search: int = 128  # HNSW ef of a search (widened to the candidates asked for)
    ann_kind: Literal["auto", "pq", "hnsw"] = "auto"
    ann_pq_max_units: int = 400_000
    ann_pq_dims_per_code: int = 2  # dimensions per 4-bit code (64 bytes a 256-d unit)
    ann_pq_rerank: float = 2.0  # a search passes on max(ann_pq_rerank x k, 256) candidates, re-scored exactly

    def __post_init__(self) -> None:
        _validated(self, "engine")


# the option objects by field name of G2ConSConfig
GROUPS: Mapping[str, type[Any]] = MappingProxyType({
    "graph": GraphOptions,
    "selection": SelectionOptions,
    "retrieval": RetrievalOptions,
    "fusion_options": FusionOptions,
    "engine": EngineOptions,
})
_TOP = tuple(_TOP_RULES)
_GROUP_OF: dict[str, str] = {f.name: group for group, cls in GROUPS.items() for f in fields(cls)}

# every parameter by its one flat name, in the order a saved config (to_dict) lists them: the order of 0.1.x
FLAT_NAMES: tuple[str, ...] = (
    "mode", "unit_tokens", "concept_mode", "top_n", "min_df", "max_df", "ngram_max", "stop_words", "language",
    "segmenter", "incidence", "cooccurrence", "vector_level", "theta_co", "theta_sem", "theta_sem_percentile",
    "pagerank_damping", "kappa", "kappa_by", "selector", "chunk_score", "seed", "beta", "k", "n_hops", "strategy",
    "n_seed_units", "bridge_rounds", "bridge_bonus", "bridge_max_df", "bridge_vocab", "bridge_link", "lexical_seeds",
    "lexical_weight", "hybrid_seeds", "score_scale", "entity_weight", "entity_head_share", "link_head", "link_pool",
    "link_weight", "ppr_damping", "rerank",
    "e2_hops", "e2_max_units", "ann_threshold", "ann_quantization", "ann_connectivity", "ann_expansion_add",
    "ann_expansion_search", "ann_kind", "ann_pq_max_units", "ann_pq_dims_per_code", "ann_pq_rerank", "fusion",
    "host_weight", "host_agreement", "host_head", "lambda_", "spill",
)
# the keys a saved config may hold: the parameters, and ``extra`` (a free-form dict 0.1.x saved; never read)
SAVED_KEYS = frozenset(FLAT_NAMES) | {"extra"}


def dotted_name(name: str) -> str:
    """A parameter's full name: ``"kappa"``, ``"engine.ann_kind"``; from its flat or its dotted name (an
    :class:`InputError` for neither)."""
    group, _, field_name = name.rpartition(".")
    if not group and name in _TOP:
        return name
    if (not group or group == _GROUP_OF.get(field_name)) and field_name in _GROUP_OF:
        return f"{_GROUP_OF[field_name]}.{field_name}"
    raise InputError(f"unknown G2ConSConfig fields: [{name!r}]")


def parameter_defaults() -> dict[str, Any]:
    """Every parameter's default as given (before the mode resolves the ``None``s), by dotted name, in
    :data:`FLAT_NAMES` order."""
    signature = inspect.signature(G2ConSConfig.__init__).parameters
    defaults: dict[str, Any] = {name: signature[name].default for name in _TOP}
    for group, cls in GROUPS.items():
        defaults.update({f"{group}.{f.name}": f.default for f in fields(cls)})
    return {dotted_name(n): defaults[dotted_name(n)] for n in FLAT_NAMES}


# ---------------------------------------------------------------------------------------------- the mode presets
@dataclass(frozen=True)
class Preset:
    """What a mode decides. ``forced``: values it sets whatever was given; ``defaults``: the values of parameters
    given as ``None`` (dotted names); ``reset``: those of them a change of mode (:meth:`G2ConSConfig.with_`) resolves
    again unless given; ``near_pairs``: whether the graph keeps the near-threshold pairs incremental updates use."""

    forced: Mapping[str, Any]
    defaults: Mapping[str, Any]
    near_pairs: bool
    reset: tuple[str, ...] = ("lambda_", "fusion_options.spill", "graph.vector_level")


PRESETS: Mapping[str, Preset] = MappingProxyType({
    "default": Preset(
        forced={},
        defaults={"lambda_": DEFAULT_LAMBDA, "fusion_options.spill": True, "graph.vector_level": VECTOR_LEVEL},
        near_pairs=True,
    ),
    "paper": Preset(  # the paper's literal choices; theta_sem only where not given (it stays on a change of mode)
        forced={"selector": "pagerank", "strategy": "paper", "fusion": "ensemble"},
        defaults={"theta_sem": 0.65, "lambda_": 0.6, "fusion_options.spill": False, "graph.vector_level": "sentence"},
        near_pairs=False,
    ),
})


def resolve(top: dict[str, Any], groups: dict[str, Any]) -> None:
    """Apply the preset of ``top["mode"]`` in place: its forced values, then its defaults for the ``None``s. The one
    place a mode is resolved."""
    preset = PRESETS[top["mode"]]
    top.update(preset.forced)
    for name, value in preset.defaults.items():
        group, _, field_name = name.rpartition(".")
        if not group:
            top[field_name] = value if top[field_name] is None else top[field_name]
        elif getattr(groups[group], field_name) is None:
            groups[group] = replace(groups[group], **{field_name: value})


def _grouped(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat or dotted parameter names -> their values by option group (a ``TypeError`` names unknown ones)."""
    out: dict[str, dict[str, Any]] = {}
    unknown = []
    for name, value in params.items():
        group, _, field_name = name.rpartition(".")
        if field_name not in _GROUP_OF or (group and group != _GROUP_OF[field_name]):
            unknown.append(name)
            continue
        out.setdefault(_GROUP_OF[field_name], {})[field_name] = value
    if unknown:
        raise TypeError(f"G2ConSConfig got unknown parameters {sorted(unknown)}")
    return out


# ---------------------------------------------------------------------------------------------- the config
@dataclass(frozen=True, init=False)
class G2ConSConfig:
    """Parameters of the concept graph, core-chunk selection, retrieval and fusion: the paper's symbols and the
    four choices at the top, the rest in one option object per component. Every parameter may also be given by its
    flat name (``G2ConSConfig(ann_kind="pq")``) or its dotted name (``**{"engine.ann_kind": "pq"}``): these apply
    on top of the option objects given."""

    mode: Mode
    kappa: float
    lambda_: float | None  # None -> 0.2 (default mode) / 0.6 (paper mode); the host's share (share, ensemble)
    beta: int
    theta_sem: float | None  # None -> percentile of candidate-pair cosines (embedder-calibrated)
    theta_co: int
    k: int
    n_hops: int
    strategy: Strategy
    selector: Selector
    # "novel" (default): the host's first two passages the concept path lacks displace its tail, behind its head
    # (g2cons_plugins.fusion); "share" (the default before): overlap first, then each path's best within its lambda
    # share, then the spill; "score": host chunks as evidence on the concept path's unit scores; "ensemble": the
    # paper's Weighted Context Ensemble with lambda caps (forced by mode="paper")
    fusion: FusionRule
    graph: GraphOptions
    selection: SelectionOptions
    retrieval: RetrievalOptions
    fusion_options: FusionOptions
    engine: EngineOptions

    def __init__(
        self,
        mode: Mode = "default",
        kappa: float = 0.8,
        lambda_: float | None = None,
        beta: int = 12_000,
        theta_sem: float | None = None,
        theta_co: int = 3,
        k: int = 25,
        n_hops: int = 2,
        strategy: Strategy = "bridge",
        selector: Selector = "coverage",
        fusion: FusionRule = "novel",
        graph: GraphOptions | None = None,
        selection: SelectionOptions | None = None,
        retrieval: RetrievalOptions | None = None,
        fusion_options: FusionOptions | None = None,
        engine: EngineOptions | None = None,
        **params: Any,
    ) -> None:
        top = {"mode": mode, "kappa": kappa, "lambda_": lambda_, "beta": beta, "theta_sem": theta_sem,
               "theta_co": theta_co, "k": k, "n_hops": n_hops, "strategy": strategy, "selector": selector,
               "fusion": fusion}
        given = {"graph": graph, "selection": selection, "retrieval": retrieval, "fusion_options": fusion_options,
                 "engine": engine}
        changes = _grouped(params)
        groups: dict[str, Any] = {}
        for name, cls in GROUPS.items():
            options = cls() if given[name] is None else given[name]
            if not isinstance(options, cls):
                raise InputError(f"{name} must be a {cls.__name__}, got {type(options).__name__}")
            groups[name] = replace(options, **changes[name]) if name in changes else options
        top = _check(top, _TOP_RULES, "")
        resolve(top, groups)
        for name, value in {**top, **groups}.items():
            object.__setattr__(self, name, value)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            """Deprecated (0.2; the flat names go in 0.3): ``config.ann_kind`` reads ``config.engine.ann_kind``."""
            group = _GROUP_OF.get(name)
            if group is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            warnings.warn(
                f"G2ConSConfig.{name} is G2ConSConfig.{group}.{name} since 0.2 (the flat name goes in 0.3)",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(object.__getattribute__(self, group), name)

    @property
    def preset(self) -> Preset:
        """The :class:`Preset` of this config's mode."""
        return PRESETS[self.mode]

    @property
    def near_pairs(self) -> bool:
        """Whether the graph keeps the near-threshold pairs incremental updates use (not in paper mode)."""
        return self.preset.near_pairs

    @property
    def fusion_lambda(self) -> float:
        """lambda_, resolved (never None after construction)."""
        return float(self.lambda_ if self.lambda_ is not None else DEFAULT_LAMBDA)

    @property
    def fusion_spill(self) -> bool:
        """spill, resolved (never None after construction)."""
        return bool(self.fusion_options.spill)

    def value(self, name: str) -> Any:
        """A parameter's value by its flat or dotted name (``"kappa"``, ``"ann_kind"``, ``"engine.ann_kind"``)."""
        group, _, field_name = dotted_name(name).rpartition(".")
        return getattr(getattr(self, group) if group else self, field_name)

    def with_(self, **changes: Any) -> G2ConSConfig:
        """A copy with some parameters changed, by flat or dotted name, or whole option objects (validated again).
        A change of ``mode`` resolves the mode's defaults (:attr:`Preset.reset`) again unless they are given."""
        unknown = sorted(n for n in changes if n not in GROUPS and not _known(n))
        if unknown:
            raise InputError(f"unknown G2ConSConfig fields: {unknown}")
        if "mode" in changes and changes["mode"] != self.mode:
            named = {dotted_name(n) for n in changes if n not in GROUPS} | set(changes)
            for name in PRESETS[changes["mode"]].reset:
                if name not in named and name.partition(".")[0] not in changes:
                    changes[name] = None
        current: dict[str, Any] = {name: getattr(self, name) for name in (*_TOP, *GROUPS)}
        for name in [n for n in changes if n in current]:
            current[name] = changes.pop(name)
        return G2ConSConfig(**current, **changes)

    def unit_index_kind(self, n_units: int, current: str | None = None) -> str | None:
        """The unit index a snapshot of ``n_units`` units gets: None (the exact scan), ``"pq"`` or ``"hnsw"``.
        ``current``: the kind the snapshot it is made from has (or a loaded one); with ``ann_kind="auto"`` an index
        with the graph keeps it down to :data:`PQ_RETURN` x ``ann_pq_max_units`` units, so an index near the limit
        does not switch kinds (and rebuild) back and forth."""
        engine = self.engine
        if engine.ann_threshold is None or n_units < engine.ann_threshold:
            return None
        if engine.ann_kind != "auto":
            return engine.ann_kind
        if current == "hnsw" and n_units >= PQ_RETURN * engine.ann_pq_max_units:
            return "hnsw"
        return "pq" if n_units < engine.ann_pq_max_units else "hnsw"

    def to_dict(self) -> dict[str, Any]:
        """Every parameter by its flat name (:data:`FLAT_NAMES` order), as plain JSON-serialisable values: what an
        index saves, and what :meth:`from_dict` reads."""
        return {name: self.value(name) for name in FLAT_NAMES}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> G2ConSConfig:
        """A config from :meth:`to_dict` output, or a saved config of any released version (unknown keys ignored;
        every value validated)."""
        if not isinstance(data, dict):
            raise InputError(f"config must be a mapping, got {type(data).__name__}")
        data = {k: v for k, v in data.items() if k in FLAT_NAMES}
        if "lambda_" in data and "spill" not in data:
            data["spill"] = False  # saved before ``spill`` existed: fusion used hard caps then
        if "lambda_" in data and "vector_level" not in data:
            data["vector_level"] = "sentence"  # saved before ``vector_level`` existed: Eq. 1 then
        return cls(**data)


def _known(name: str) -> bool:
    try:
        dotted_name(name)
    except InputError:
        return False
    return True
