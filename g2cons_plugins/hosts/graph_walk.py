"""A graph walk over a host's own KG, LLM-free at query time, the way HippoRAG 2 walks its graph.

HippoRAG 2 (Gutiérrez et al., "From RAG to Memory", ICML 2025; ``OSU-NLP-Group/HippoRAG``,
``src/hipporag/HippoRAG.py``) retrieves in four steps, all followed here:

1. **Facts by embedding** (``get_fact_scores``): every distinct triple of the graph, written as text, is embedded at
   build; a query's scores against them are min-max normalised, and the ``top_facts`` best (``linking_top_k``, 5)
   are its facts. HippoRAG 2 then lets an LLM filter them ("recognition memory", ``rerank_facts``): that step needs
   an LLM and is **off** here, so the top facts are used as they are.
2. **Seed entities** (``graph_search_with_fact_entities``): each top fact gives its subject and object the fact's
   score divided by the number of chunks the entity occurs in; an entity's weight is the mean over the top facts
   that hold it, and only the ``top_entities`` heaviest (``link_top_k``, 5) are kept (``get_top_k_weights``).
3. **Dense passage prior**: every chunk's query similarity, min-max normalised, times ``passage_node_weight``
   (0.05), is added to the reset vector beside the seed entities.
4. **Personalized PageRank** (``run_ppr``, damping 0.5) over one undirected weighted graph of entity nodes and
   chunk nodes: an edge between an entity and each chunk whose triples hold it (``add_passage_edges``, weight 1),
   triple edges between subject and object (``add_fact_edges``: the number of times the triple was extracted, once
   per direction, so 2 per extraction as HippoRAG 2's graph holds both directions), and synonym edges between
   entities whose name embeddings have cosine >= ``synonym_threshold`` (0.8; ``add_synonymy_edges``: at most about
   100 per entity, names with more than 2 letters or digits, the cosine per direction). Chunks are ranked by their
   PageRank. A query no fact or chunk prior reaches falls back to dense chunk scores (as HippoRAG 2 does when no
   fact is left).

Names are normalised as HippoRAG 2's ``text_processing`` does (lower case, every character but a letter, digit or
space made a space), and runs of spaces are also collapsed; a fact's text is the Python ``str`` of its normalised
``(subject, relation, object)`` tuple, as HippoRAG 2 embeds it.

Where this differs from HippoRAG 2: no LLM filter (above); PageRank by sparse power iteration in SciPy (to a
1e-10 L1 change) instead of igraph's PRPACK solver: both reach the same fixed point (a walker stuck in a node with
no edge restarts by the reset vector), on MuSiQue train100's graph within 3e-12 and the same top 50 for all 100
questions, in 14 ms per query at the median against PRPACK's 143 ms on busy cores (6 against 58 on quieter ones;
``benchmarks/dual_path/results/graph_walk_sweep_musique_train100.md``), and it adds no dependency; a synonym edge is
added beside a triple edge between the same two entities (HippoRAG 2 keeps one of them); a chunk may carry several
vectors (e.g. its sentences, for a chunk longer than the embedder reads) and then its prior is the best one's (the
host's default: the index's unit vectors, which for a chunk of one unit is its own text's vector, as HippoRAG 2's);
entity names an extractor listed without a triple (``entities`` of a record) become nodes only with
``mention_nodes=True`` (HippoRAG 2 builds its nodes from triples only); with ``link_texts=True`` a chunk with no
triple is linked to the graph's entities its text names (HippoRAG 2 leaves it to its dense prior; the graph-walk
host turns it on when a selection keeps at least a third of the chunks, :class:`GraphWalkHost`, and the LlamaIndex /
LangChain retrievers when a third of their chunks hold triples, :func:`app_settings`).

:class:`GraphWalk` is framework-free: build it from :class:`GraphRecord` s (chunk id, text, triples, entities) and
any embedding function; :class:`GraphWalkHost` is the ``HostKG`` over a replayed extraction
(``g2cons eval --host graph-walk:PATH``, ``g2cons fuse DIR Q --host graph-walk:PATH``), built over a selection's kept
chunks' triples only (by default every chunk of the index stays a chunk node, found by its dense prior alone when
its extraction was not paid for, as HippoRAG 2 indexing a corpus with part of its OpenIE).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .protocol import HostBuildCost
from .registry import FALSE_WORDS, TRUE_WORDS, option_flag
from .replay import Extraction, read_extraction
from .replay_host import align_to_index

if TYPE_CHECKING:
    from ..fusion.items import HostItem
    from ..index import G2ConSIndex
    from ..selection import SelectionReport

__all__ = [
    "EmbedFn",
    "GraphRecord",
    "GraphWalk",
    "GraphWalkHost",
    "GraphWalkSettings",
    "app_settings",
    "graph_walk_host",
    "links_pay",
]

EmbedFn = Callable[[Sequence[str]], Any]
"""Texts -> an ``(n, dim)`` array of their vectors (normalised here to unit length)."""

_NON_ALNUM = re.compile(r"[^a-z0-9 ]")
_SPACES = re.compile(r"\s+")
_ALNUM = re.compile(r"[^A-Za-z0-9]")
DEFAULT_PROMPT_TOKENS = 112  # as ReplayHost: LlamaIndex SimpleLLMPathExtractor's prompt without the text (cl100k)
_EMBED_BATCH = 4096  # texts per call of the embedding function
LINK_MAX_WORDS = 8
"""``link_texts`` looks for entity names of at most this many words."""
LINK_MIN_KEPT_SHARE = 1 / 3
"""The graph-walk host links dropped chunks (``link_texts=None``) when the selection keeps at least this share of the
chunks (measured: it costs CR at kappa 0.2, gains at 0.5 and 0.8; :class:`GraphWalkHost`)."""
_KNN_CELLS = 1 << 25  # similarities per block of the synonym search (128 MiB of float32), whatever the entity count


def normalize_name(name: str) -> str:
    """An entity or relation as a graph key: HippoRAG 2's ``text_processing`` (lower case, non-alphanumerics made
    spaces), runs of spaces collapsed."""
    return _SPACES.sub(" ", _NON_ALNUM.sub(" ", name.lower())).strip()


@dataclass(frozen=True)
class GraphRecord:
    """What a host KG holds for one chunk: its id, its text (for the dense prior), its triples and entity names.

    Several records may share a chunk id (e.g. several extracted passages packed into one chunk); they are merged.
    """

    chunk_id: str
    text: str | None = None
    triples: Sequence[Sequence[str]] = ()
    """``(subject, relation, object)`` triples as the extractor wrote them."""
    entities: Sequence[str] = ()
    """Entity names the extractor listed (used as nodes only with ``mention_nodes=True``)."""


@dataclass(frozen=True)
class GraphWalkSettings:
    """The walk's parameters; the defaults are HippoRAG 2's (``BaseConfig``)."""

    damping: float = 0.5
    """PageRank damping (probability of following an edge rather than restarting)."""
    top_facts: int = 5
    """Facts taken per query (HippoRAG 2 ``linking_top_k``)."""
    top_entities: int = 5
    """Seed entities kept (the heaviest; HippoRAG 2 ``link_top_k``, same value)."""
    passage_node_weight: float = 0.05
    """Weight of the min-max normalised dense chunk score in the reset vector."""
    synonym_threshold: float = 0.8
    """Cosine of two entity names at or above which a synonym edge joins them (``> 1`` : none)."""
    synonym_max_neighbours: int = 100
    """At most this many synonym edges from one entity."""
    mention_nodes: bool = False
    """Also make nodes of the listed entities no triple holds (linked to their chunks)."""
    link_texts: bool | None = False
    """Link each chunk without triples to the graph's entities its text names (whole words, normalised). ``None``:
    automatic, on when at least :data:`LINK_MIN_KEPT_SHARE` of the chunks hold triples (:func:`links_pay`; the
    LlamaIndex / LangChain retrievers' default, :func:`app_settings`; the graph-walk host decides by its selection)."""
    tol: float = 1e-10
    """Power iteration stops when the L1 change falls below this."""
    max_iter: int = 200
    """... or after this many iterations."""

    def __post_init__(self) -> None:
        ints = ("top_facts", "top_entities", "synonym_max_neighbours", "max_iter")
        floats = ("damping", "passage_node_weight", "synonym_threshold", "tol")
        wrong = [k for k in ints if isinstance(getattr(self, k), bool) or not isinstance(getattr(self, k), int)]
        wrong += [k for k in floats if isinstance(getattr(self, k), bool) or not isinstance(getattr(self, k), Real)]
        wrong += ["mention_nodes"] if not isinstance(self.mention_nodes, bool) else []
        wrong += ["link_texts"] if self.link_texts is not None and not isinstance(self.link_texts, bool) else []
        if wrong:
            raise InputError(
                f"graph walk settings of the wrong type: {', '.join(f'{k}={getattr(self, k)!r}' for k in wrong)} "
                f"({', '.join(ints)}: int; {', '.join(floats)}: a number; mention_nodes: bool; "
                "link_texts: bool or None for automatic)"
            )
        checks = {
            "damping": 0.0 <= self.damping < 1.0,
            "top_facts": self.top_facts >= 1,
            "top_entities": self.top_entities >= 1,
            "passage_node_weight": self.passage_node_weight >= 0.0 and math.isfinite(self.passage_node_weight),
            "synonym_threshold": math.isfinite(self.synonym_threshold),
            "synonym_max_neighbours": self.synonym_max_neighbours >= 0,
            "tol": self.tol > 0.0,
            "max_iter": self.max_iter >= 1,
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise InputError(
                f"graph walk settings out of range: {', '.join(f'{k}={getattr(self, k)!r}' for k in bad)} "
                "(damping in [0, 1), top_facts/top_entities/max_iter >= 1, passage_node_weight >= 0, "
                "synonym_max_neighbours >= 0, tol > 0, all finite)"
            )


def links_pay(extracted_chunks: int, all_chunks: int) -> bool:
    """Whether ``link_texts`` pays when ``extracted_chunks`` of ``all_chunks`` were extracted: at least
    :data:`LINK_MIN_KEPT_SHARE` of them. The one automatic rule: the graph-walk host counts its selection's kept
    chunks, ``GraphWalkSettings(link_texts=None)`` (the adapters' retrievers) the chunks that hold triples."""
    return all_chunks > 0 and extracted_chunks >= LINK_MIN_KEPT_SHARE * all_chunks


def parse_link_texts(value: Any) -> bool | None:
    """A host option's ``link_texts``: ``True`` / ``False``, ``None`` (automatic) or their words as
    ``--host-option link_texts=true|false|auto`` gives them; anything else is an error naming it."""
    if isinstance(value, str):
        flag = value.strip().lower()
        if flag not in ("auto", "none", *TRUE_WORDS, *FALSE_WORDS):
            raise InputError(f"link_texts must be true, false or auto, got {value!r}")
        return None if flag in ("auto", "none") else option_flag("link_texts", flag)
    if value is not None and not isinstance(value, bool):
        raise InputError(f"link_texts must be true, false or auto (None), got {value!r}")
    return value


def app_settings(settings: GraphWalkSettings | None = None, **overrides: Any) -> GraphWalkSettings:
    """The walk's settings where an application walks its KG (the LlamaIndex and LangChain
    ``GraphWalkRetriever`` s): ``settings`` as given, else HippoRAG 2's defaults with ``link_texts`` automatic
    (``None``: measured to pay once the KG covers a third of the chunks, :data:`LINK_MIN_KEPT_SHARE`); then
    ``overrides`` (:class:`GraphWalkSettings` fields; an unknown one is an error naming it)."""
    unknown = sorted(set(overrides) - set(GraphWalkSettings.__dataclass_fields__))
    if unknown:
        raise InputError(
            f"unknown graph walk settings {unknown}; known: {sorted(GraphWalkSettings.__dataclass_fields__)}"
        )
    if settings is not None and not isinstance(settings, GraphWalkSettings):
        raise InputError(f"settings must be a GraphWalkSettings, got {type(settings).__name__}")
    base = settings if settings is not None else GraphWalkSettings(link_texts=None)
    return replace(base, **overrides) if overrides else base


@dataclass
class _Merged:
    text: str | None = None
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)


def _unit_rows(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    out = np.zeros_like(vecs)
    np.divide(vecs, norms, out=out, where=norms > 0)
    return out


def _minmax(x: np.ndarray) -> np.ndarray:
    """HippoRAG 2's ``min_max_normalize`` (all equal: ones)."""
    if not len(x):
        return x
    lo, hi = float(x.min()), float(x.max())
    return np.ones_like(x) if hi == lo else (x - lo) / (hi - lo)


def _matvec(mat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``mat @ v`` in one thread (einsum, no BLAS): a BLAS matrix-vector product wakes its thread pool, which took
    8 ms at the median for the 17,032 facts x 384 of MuSiQue train100 on 2 busy cores, against 1.2 ms here."""
    out: np.ndarray = np.einsum("ij,j->i", mat, v)
    return out.astype(np.float64)


def _embed(fn: EmbedFn, texts: Sequence[str], what: str) -> np.ndarray:
    """``fn`` over ``texts`` in batches, checked and normalised to float32 unit rows."""
    parts = []
    for i in range(0, len(texts), _EMBED_BATCH):
        batch = list(texts[i : i + _EMBED_BATCH])
        try:
            got = np.asarray(fn(batch), dtype=np.float32)
        except InputError:
            raise
        except Exception as e:  # the caller's function: say which vectors failed
            raise InputError(f"embed_fn failed on the {what} ({type(e).__name__}: {e})") from e
        if got.ndim != 2 or got.shape[0] != len(batch):
            raise InputError(
                f"embed_fn must return an (n, dim) array for n texts; got shape {got.shape} for {len(batch)} {what}"
            )
        if not np.isfinite(got).all():
            raise InputError(f"embed_fn returned non-finite values for the {what}")
        parts.append(got)
    return _unit_rows(np.concatenate(parts)) if parts else np.zeros((0, 0), np.float32)


class GraphWalk:
    """HippoRAG 2's graph search over a generic KG (see the module doc). Build with :meth:`from_records`."""

    def __init__(self) -> None:  # filled by from_records
        self.settings = GraphWalkSettings()
        self.chunk_ids: list[str] = []
        self.entities: list[str] = []
        self.facts: list[tuple[str, str, str]] = []
        self.n_synonym_edges = 0
        self._fact_vecs = np.zeros((0, 0), np.float32)
        self._fact_ends = np.zeros((0, 2), np.int64)
        self._ent_chunks = np.zeros(0, np.int64)
        self._pass_vecs: np.ndarray | None = None
        self._pass_owner: np.ndarray | None = None
        self._pass_starts = np.zeros(0, np.int64)
        self._adjacency: sp.csr_matrix = sp.csr_matrix((0, 0))
        self._transition: sp.csr_matrix = sp.csr_matrix((0, 0))
        self._dangling = np.zeros(0, bool)
        self._query_fn: Callable[[str], Any] | None = None
        self._dim = 0
        self.linked = False
        """Whether chunks without triples were linked by their texts (``link_texts``, resolved when automatic)."""

    # ------------------------------------------------------------------------------------------------ build
    @classmethod
    def from_records(
        cls,
        records: Iterable[GraphRecord | Mapping[str, Any]],
        embed_fn: EmbedFn,
        *,
        query_fn: Callable[[str], Any] | None = None,
        settings: GraphWalkSettings | None = None,
        passage_vectors: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GraphWalk:
        """The walk over ``records`` (:class:`GraphRecord` s or mappings with ``chunk_id`` / ``id``, ``text``,
        ``triples``, ``entities``).

        ``embed_fn`` embeds texts (facts, entity names and, unless ``passage_vectors`` gives them, chunk texts);
        ``query_fn`` embeds one query (default ``embed_fn([query])[0]``; give it for an embedder with a query
        prefix). ``passage_vectors``: chunk id -> its vector, or an ``(k, dim)`` array of vectors whose best cosine
        is its dense score (a chunk with neither vector nor text gets no prior). ``settings`` or keyword
        ``overrides`` (e.g. ``damping=0.5``) set :class:`GraphWalkSettings`.
        """
        if not callable(embed_fn):
            raise InputError("embed_fn must be a function from a list of texts to an (n, dim) array")
        if query_fn is not None and not callable(query_fn):
            raise InputError("query_fn must be a function from a query to its vector")
        if overrides:
            unknown = sorted(set(overrides) - set(GraphWalkSettings.__dataclass_fields__))
            if unknown:
                raise InputError(
                    f"unknown graph walk settings {unknown}; known: {sorted(GraphWalkSettings.__dataclass_fields__)}"
                )
            base = settings or GraphWalkSettings()
            settings = GraphWalkSettings(**{**base.__dict__, **overrides})
        walk = cls()
        walk.settings = settings or GraphWalkSettings()
        walk._query_fn = query_fn if query_fn is not None else (lambda q: np.asarray(embed_fn([q]))[0])
        merged = _merge_records(records)
        walk._build(merged, embed_fn, passage_vectors)
        return walk

    def _build(self, merged: dict[str, _Merged], embed_fn: EmbedFn, passage_vectors: Mapping[str, Any] | None) -> None:
        s = self.settings
        self.chunk_ids = list(merged)
        ent_pos: dict[str, int] = {}
        ent_chunks: list[set[int]] = []
        pair_count: Counter[tuple[int, int]] = Counter()
        chunk_ent: list[tuple[int, int]] = []
        facts: dict[tuple[str, str, str], None] = {}

        def node(name: str) -> int:
            if name not in ent_pos:
                ent_pos[name] = len(ent_pos)
                ent_chunks.append(set())
            return ent_pos[name]

        for c, rec in enumerate(merged.values()):
            here: set[int] = set()
            for subj, rel, obj in rec.triples:
                a, r, b = normalize_name(subj), normalize_name(rel), normalize_name(obj)
                if not a or not b:
                    continue
                facts.setdefault((a, r, b), None)
                i, j = node(a), node(b)
                here.update((i, j))
                if i != j:
                    pair_count[(min(i, j), max(i, j))] += 1
            if s.mention_nodes:
                here.update(node(k) for k in map(normalize_name, rec.mentions) if k)
            for e in here:
                ent_chunks[e].add(c)
                chunk_ent.append((e, c))
        link = s.link_texts
        if link is None:
            link = links_pay(sum(1 for rec in merged.values() if rec.triples), len(merged))
        self.linked = link
        if link:
            self._link_texts(merged, ent_pos, ent_chunks, chunk_ent)
        self.entities = list(ent_pos)
        self.facts = list(facts)
        self._ent_chunks = np.array([len(x) for x in ent_chunks], np.int64)
        self._fact_ends = np.array([(ent_pos[a], ent_pos[b]) for a, _, b in self.facts], np.int64).reshape(-1, 2)
        self._fact_vecs = _embed(embed_fn, [str(f) for f in self.facts], "facts")
        ent_vecs = _embed(embed_fn, self.entities, "entity names")
        self._passages(merged, embed_fn, passage_vectors)
        self._dim = max(self._fact_vecs.shape[1] if len(self.facts) else 0, ent_vecs.shape[1] if len(ent_vecs) else 0)
        syn = self._synonyms(ent_vecs)
        self._graph(pair_count, chunk_ent, syn)

    def _link_texts(
        self,
        merged: dict[str, _Merged],
        ent_pos: dict[str, int],
        ent_chunks: list[set[int]],
        chunk_ent: list[tuple[int, int]],
    ) -> None:
        """``link_texts``: each chunk with no triple gets an edge to every entity of the graph whose name (more than 2
        letters or digits, at most :data:`LINK_MAX_WORDS` words) its normalised text holds as whole words.
        The names are a vocabulary of word n-grams of the normalised text (scikit-learn's ``CountVectorizer`` with
        a vocabulary, :mod:`g2cons_plugins.text.vectorizer`)."""
        from ..text.vectorizer import binary_counts, word_analyzer

        names = [e for e in ent_pos if len(_ALNUM.sub("", e)) > 2 and e.count(" ") < LINK_MAX_WORDS]
        todo = [(c, rec.text) for c, rec in enumerate(merged.values()) if not rec.triples and rec.text]
        if not names or not todo:
            return
        analyze = word_analyzer(
            ngram_range=(1, max(e.count(" ") + 1 for e in names)),
            preprocessor=normalize_name,
            tokenizer=str.split,
            lowercase=False,
        )
        found = binary_counts([t for _, t in todo], names, analyze).tocoo()
        for r, j in sorted(zip(found.row.tolist(), found.col.tolist(), strict=True)):
            c, e = todo[r][0], ent_pos[names[j]]
            if c not in ent_chunks[e]:  # not already linked (a listed name, mention_nodes)
                ent_chunks[e].add(c)
                chunk_ent.append((e, c))

    def _passages(
        self, merged: dict[str, _Merged], embed_fn: EmbedFn, passage_vectors: Mapping[str, Any] | None
    ) -> None:
        """Each chunk's vectors for the dense prior: given, else its text embedded, else none."""
        given = dict(passage_vectors or {})
        unknown = [c for c in given if c not in merged]
        if unknown:
            raise InputError(f"passage_vectors names chunks no record holds: {unknown[:5]}")
        blocks: list[np.ndarray] = []
        owner: list[int] = []
        to_embed = [(c, rec.text) for c, rec in merged.items() if c not in given and rec.text]
        embedded = dict(
            zip([c for c, _ in to_embed], _embed(embed_fn, [t for _, t in to_embed], "chunk texts"), strict=False)
        )
        dim = None
        for c, cid in enumerate(merged):
            v = given.get(cid)
            if v is None:
                v = embedded.get(cid)
            if v is None:
                continue
            arr = np.asarray(v, np.float32)
            arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
            if arr.ndim != 2 or not arr.size or not np.isfinite(arr).all():
                raise InputError(f"passage vector of chunk {cid!r}: expected finite (dim,) or (k, dim) values")
            if dim is None:
                dim = arr.shape[1]
            elif arr.shape[1] != dim:
                raise InputError(f"passage vector of chunk {cid!r} has dim {arr.shape[1]}, others {dim}")
            blocks.append(_unit_rows(arr))
            owner += [c] * len(arr)
        if blocks:
            self._pass_vecs = np.concatenate(blocks).astype(np.float32)
            self._pass_owner = np.array(owner, np.int64)  # ascending: a chunk's vectors are contiguous
            self._pass_starts = np.flatnonzero(np.r_[True, self._pass_owner[1:] != self._pass_owner[:-1]])

    def _synonyms(self, vecs: np.ndarray) -> list[tuple[int, int, float]]:
        """``(a, b, cosine)`` for each entity ``a`` with > 2 letters/digits and its nearest ``b != a`` at or above
        the threshold (HippoRAG 2 ``add_synonymy_edges``). Exact, all pairs, as HippoRAG 2's: quadratic in the
        entities (MuSiQue train100's 16,227 built in 4.8 s with it, 1.2 s without), in blocks of bounded memory."""
        s = self.settings
        out: list[tuple[int, int, float]] = []
        if s.synonym_threshold > 1.0 or s.synonym_max_neighbours == 0 or len(vecs) < 2:
            return out
        eligible = np.array([len(_ALNUM.sub("", e)) > 2 for e in self.entities])
        rows = np.flatnonzero(eligible)
        k = s.synonym_max_neighbours
        step = max(1, min(1024, _KNN_CELLS // len(vecs)))
        for lo in range(0, len(rows), step):
            block = rows[lo : lo + step]
            sims = vecs[block] @ vecs.T
            sims[np.arange(len(block)), block] = -np.inf
            for r, a in enumerate(block.tolist()):
                hit = np.flatnonzero(sims[r] >= s.synonym_threshold)
                if len(hit) > k:
                    hit = hit[np.argsort(-sims[r, hit], kind="stable")[:k]]
                out += [(a, int(b), float(sims[r, b])) for b in hit.tolist()]
        return out

    def _graph(
        self,
        pair_count: Counter[tuple[int, int]],
        chunk_ent: list[tuple[int, int]],
        syn: list[tuple[int, int, float]],
    ) -> None:
        """The column-stochastic transition matrix of the undirected weighted graph (entities, then chunks)."""
        n_e, n = len(self.entities), len(self.entities) + len(self.chunk_ids)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for (i, j), cnt in pair_count.items():  # both directions, each weighted by the count
            rows += [i, j]
            cols += [j, i]
            vals += [2.0 * cnt, 2.0 * cnt]
        for e, c in chunk_ent:
            rows += [e, n_e + c]
            cols += [n_e + c, e]
            vals += [1.0, 1.0]
        for a, b, w in syn:  # one undirected edge per direction found: a symmetric pair counts twice
            rows += [a, b]
            cols += [b, a]
            vals += [w, w]
        self.n_synonym_edges = len(syn)
        adj = sp.csr_matrix((np.array(vals, np.float64), (rows, cols)), shape=(n, n))
        deg = np.asarray(adj.sum(axis=0)).ravel()
        inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
        self._adjacency = adj
        self._transition = sp.csr_matrix(adj @ sp.diags(inv))  # column j: where a walker at j goes
        self._dangling = deg == 0

    # ------------------------------------------------------------------------------------------------ query
    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector (``query_fn``, else ``embed_fn([query])[0]``)."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string")
        assert self._query_fn is not None
        try:
            v = np.asarray(self._query_fn(query), dtype=np.float32).ravel()
        except InputError:
            raise
        except Exception as e:  # the caller's function
            raise InputError(f"query_fn failed on the query ({type(e).__name__}: {e})") from e
        return self._check_query(v)

    def _check_query(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float32).ravel()
        dims = {x.shape[1] for x in (self._fact_vecs, self._pass_vecs) if x is not None and x.size}
        if dims and v.shape[0] not in dims:
            raise InputError(f"query vector has dim {v.shape[0]}, the graph's vectors {sorted(dims)}")
        if not np.isfinite(v).all():
            raise InputError("query vector has non-finite values")
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v

    def retrieve(self, query: str, top_k: int = 10) -> list[tuple[str, float]]:
        """The ``top_k`` chunks for ``query``, best first, as ``(chunk_id, score)`` (PageRank mass, or the dense
        score where the query reaches no fact)."""
        return self.retrieve_vector(self.embed_query(query), top_k)

    def retrieve_vector(self, query_vector: Any, top_k: int = 10) -> list[tuple[str, float]]:
        """:meth:`retrieve` for an embedded query."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InputError(f"top_k must be a positive int, got {top_k!r}")
        scores = self.scores(query_vector)
        k = min(top_k, len(scores))
        if k == 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        best = best[np.lexsort((best, -scores[best]))]
        return [(self.chunk_ids[i], float(scores[i])) for i in best.tolist()]

    def dense_scores(self, query_vector: Any) -> np.ndarray:
        """Every chunk's best cosine to the query (0 for a chunk without vectors)."""
        qv = self._check_query(query_vector)
        out = np.zeros(len(self.chunk_ids), np.float64)
        if self._pass_vecs is not None and self._pass_owner is not None:
            sims = _matvec(self._pass_vecs, qv)
            out[self._pass_owner[self._pass_starts]] = np.maximum.reduceat(sims, self._pass_starts)
        return out

    def seeds(self, query_vector: Any) -> dict[str, float]:
        """The seed entities of a query and their reset weights (steps 1 and 2 of the module doc)."""
        qv = self._check_query(query_vector)
        w = self._seed_weights(qv)
        return {self.entities[i]: float(w[i]) for i in np.flatnonzero(w).tolist()}

    def _seed_weights(self, qv: np.ndarray) -> np.ndarray:
        s = self.settings
        weights = np.zeros(len(self.entities), np.float64)
        if not len(self.facts):
            return weights
        fs = _minmax(_matvec(self._fact_vecs, qv))
        k = min(s.top_facts, len(fs))
        top = np.argpartition(-fs, k - 1)[:k] if k < len(fs) else np.arange(len(fs))
        top = top[np.lexsort((top, -fs[top]))]
        total: dict[int, float] = defaultdict(float)
        count: dict[int, int] = defaultdict(int)
        for f in top.tolist():
            for e in set(self._fact_ends[f].tolist()):
                total[e] += fs[f] / max(int(self._ent_chunks[e]), 1)
                count[e] += 1
        mean = {e: total[e] / count[e] for e in total}
        keep = sorted(mean, key=lambda e: (-mean[e], e))[: s.top_entities]
        for e in keep:
            weights[e] = mean[e]
        return weights

    def scores(self, query_vector: Any) -> np.ndarray:
        """Every chunk's score for the query, in :attr:`chunk_ids` order."""
        qv = self._check_query(query_vector)
        dense = self.dense_scores(qv)
        if not len(self.chunk_ids):
            return dense
        seeds = self._seed_weights(qv)
        prior = _minmax(dense) * self.settings.passage_node_weight if self._pass_vecs is not None else dense * 0
        reset = np.concatenate([seeds, prior])
        if not len(self.facts) or seeds.sum() <= 0:
            return dense  # no fact reached: the dense ranking (HippoRAG 2's fallback)
        return self._pagerank(reset)[len(self.entities) :]

    def _pagerank(self, reset: np.ndarray) -> np.ndarray:
        """Personalized PageRank by power iteration; a walker at a node with no edge restarts by ``reset``."""
        s = self.settings
        r = reset / reset.sum()
        p: np.ndarray = r.copy()
        d = s.damping
        sinks = np.flatnonzero(self._dangling)
        for _ in range(s.max_iter):
            nxt = self._transition @ p
            nxt *= d
            nxt += (d * float(p[sinks].sum()) + 1.0 - d) * r
            delta = float(np.abs(nxt - p).sum())
            p = nxt
            if delta < s.tol:
                break
        return p

    # ------------------------------------------------------------------------------------------------ about
    def stats(self) -> dict[str, int]:
        """Sizes: chunks, entities, facts (distinct triples), synonym edges, graph edges (undirected pairs)."""
        return {
            "chunks": len(self.chunk_ids),
            "entities": len(self.entities),
            "facts": len(self.facts),
            "synonym_edges": self.n_synonym_edges,
            "edges": int(self._transition.nnz // 2),
        }


def _merge_records(records: Iterable[GraphRecord | Mapping[str, Any]]) -> dict[str, _Merged]:
    """Records by chunk id (first-seen order), validated; triples and names of a repeated id are merged."""
    if isinstance(records, (str, bytes, Mapping)):
        raise InputError("records must be an iterable of GraphRecord or mappings, one per chunk")
    out: dict[str, _Merged] = {}
    for n, raw in enumerate(records):
        where = f"record {n}"
        if isinstance(raw, GraphRecord):
            cid, text, triples, names = raw.chunk_id, raw.text, raw.triples, raw.entities
        elif isinstance(raw, Mapping):
            cid = raw.get("chunk_id", raw.get("id"))
            text, triples, names = raw.get("text"), raw.get("triples") or (), raw.get("entities") or ()
        else:
            raise InputError(f"{where}: expected a GraphRecord or a mapping, got {type(raw).__name__}")
        if not isinstance(cid, str) or not cid:
            raise InputError(f"{where}: chunk_id must be a non-empty string, got {cid!r}")
        where = f"record {n} (chunk {cid!r})"
        if text is not None and not isinstance(text, str):
            raise InputError(f"{where}: text must be a string or None, got {type(text).__name__}")
        if isinstance(triples, (str, bytes)) or isinstance(names, (str, bytes)):
            raise InputError(f"{where}: triples and entities must be lists, not strings")
        m = out.setdefault(cid, _Merged())
        if text and not m.text:
            m.text = text
        for t in triples:
            if isinstance(t, (str, bytes)) or len(t) != 3 or not all(isinstance(x, str) for x in t):
                raise InputError(f"{where}: a triple must be 3 strings (subject, relation, object), got {t!r}")
            m.triples.append((t[0], t[1], t[2]))
        for name in names:
            if not isinstance(name, str):
                raise InputError(f"{where}: entity names must be strings, got {name!r}")
            m.mentions.append(name)
    if not out:
        raise InputError("records is empty: a graph walk needs at least one chunk")
    return out


# ---------------------------------------------------------------------------------------------------- host
class GraphWalkHost:
    """``HostKG`` over a replayed extraction, retrieved by :class:`GraphWalk` (``--host graph-walk:PATH``).

    ``build`` makes the walk over the KG of a selection's kept chunks (only their triples; chunk vectors from the
    index's embedder, cached by it); ``retrieve`` returns the best ``limit`` chunk ids. Options: the extraction
    (``path`` / ``extraction``, ``format``, ``model``), ``limit``, ``passages`` (``"all"``: every chunk of the index
    is a chunk node, a dropped one without triples, as HippoRAG 2 indexing the whole corpus with the extraction of
    the kept chunks only; ``"kept"``: the kept chunks only), ``passage_prior`` (``"units"``, the default: the best of
    the index's unit vectors of the chunk, no extra embedding; a chunk of one unit has its own text's vector, as
    HippoRAG 2, and a longer one is not cut at what the embedder reads: on 1,200-token chunks at kappa 0.5, 84 CR at
    4k against 82 (79 against 70 without ``link_texts``); ``"text"``: each chunk's whole text embedded, HippoRAG
    2's) and any :class:`GraphWalkSettings` field (``damping``, ``top_facts``, ``synonym_threshold``, ...).

    ``link_texts`` (``None``, the default here: automatic; ``GraphWalkSettings``' default, HippoRAG 2's graph, is
    off): a chunk the selection dropped has no triple, and with it on is linked to the kept chunks' entities its
    text names, so the walk reaches it from the facts a query finds (KET-RAG's keyword-chunk links, with the KG's
    own entity names as the keywords). Automatic: on when the selection keeps at least
    :data:`LINK_MIN_KEPT_SHARE` (a third) of the chunks. Measured on MuSiQue train100, host alone, mean CR of 1k /
    2k / 4k, off -> on: kappa 0.5 coverage 71.3 -> 76.7, length-matched random (10 seeds) 69.4 -> 71.5; kappa 0.8
    75.7 -> 75.0 and 73.5 -> 76.0; kappa 1.0 78.3 -> 78.7; but kappa 0.2 68.7 -> 64.3 and 66.3 -> 65.3 (a small KG
    whose few entities each gain many linked chunks): hence off below a third
    (``benchmarks/dual_path/results/link_texts_musique_train100.md``).
    """

    def __init__(
        self,
        path: str | None = None,
        extraction: Extraction | None = None,
        model: str | None = None,
        format: str = "auto",
        prompt_tokens_per_call: int = DEFAULT_PROMPT_TOKENS,
        limit: int = 50,
        passage_prior: str = "units",
        passages: str = "all",
        **settings: Any,
    ) -> None:
        if extraction is None:
            if path is None:
                raise InputError(
                    "host graph-walk needs a path: --host graph-walk:PATH (JSONL, HippoRAG, GraphRAG, LightRAG)"
                )
            extraction = read_extraction(path, format=format, model=model)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError(f"limit must be a positive int, got {limit!r}")
        if passage_prior not in ("text", "units"):
            raise InputError(f"passage_prior must be 'text' or 'units', got {passage_prior!r}")
        if passages not in ("all", "kept"):
            raise InputError(f"passages must be 'all' or 'kept', got {passages!r}")
        unknown = sorted(set(settings) - set(GraphWalkSettings.__dataclass_fields__))
        if unknown:
            raise InputError(
                f"unknown graph-walk host options {unknown}; known: path, model, format, prompt_tokens_per_call, "
                f"limit, passage_prior, {', '.join(sorted(GraphWalkSettings.__dataclass_fields__))}"
            )
        if isinstance(settings.get("mention_nodes"), str):  # --host-option mention_nodes=true
            settings["mention_nodes"] = option_flag("mention_nodes", settings["mention_nodes"])
        self.link_texts = parse_link_texts(settings.pop("link_texts", None))  # None: automatic, per selection
        self.extraction = extraction
        self.settings = GraphWalkSettings(**settings)
        self.name = "graph-walk"
        self.label = (
            extraction.label() + "; retrieval: HippoRAG 2's graph walk (facts by embedding -> seed entities -> "
            "personalized PageRank over entities and chunks, dense chunk prior; no LLM)"
        )
        self.prompt_tokens_per_call = int(prompt_tokens_per_call)
        self.limit = limit
        self.passage_prior = passage_prior
        self.passages = passages
        self.walk: GraphWalk | None = None
        self._aligned: tuple[int, Extraction] | None = None
        self._index: G2ConSIndex | None = None

    def _align(self, index: G2ConSIndex) -> Extraction:
        if self._aligned is None or self._aligned[0] != id(index):
            self._aligned = (id(index), align_to_index(self.extraction, index))
        return self._aligned[1]

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """The walk over the KG of ``selection.kept_ids``: the kept chunks' triples only; chunk nodes for every chunk
        of the index (``passages="all"``; a dropped chunk has no triple: its dense prior, and with ``link_texts``
        edges to the KG entities its text names) or for the kept chunks only (``passages="kept"``)."""
        t0 = time.perf_counter()
        graphs = self._align(index).restrict(selection.kept_ids).chunk_graphs()
        nodes = [c.id for c in index.stored.chunks] if self.passages == "all" else list(selection.kept_ids)
        link = self.link_texts
        if link is None:
            link = links_pay(len(selection.kept_ids), len(index.stored.chunks))
        records = []
        for cid in nodes:
            names, triples = graphs.get(cid, ((), ()))
            records.append(GraphRecord(cid, index.chunk(cid).text, triples, names))
        vectors = self._unit_vectors(index, nodes) if self.passage_prior == "units" else None
        self.walk = GraphWalk.from_records(
            records,
            index.embedder.embed,
            query_fn=index.embed_query,
            settings=replace(self.settings, link_texts=link),
            passage_vectors=vectors,
        )
        self._index = index
        kept_texts = [index.chunk(c).text for c in selection.kept_ids]
        out_texts = ["\n".join(" | ".join(t) for t in graphs[c][1]) for c in selection.kept_ids if c in graphs]
        calls = len(selection.kept_ids)
        st = self.walk.stats()
        return HostBuildCost(
            calls=calls,
            input_tokens=int(sum(index.count_tokens(kept_texts))) + self.prompt_tokens_per_call * calls,
            output_tokens=int(sum(index.count_tokens(out_texts))) if out_texts else 0,
            chunks=calls,
            seconds=round(time.perf_counter() - t0, 3),
            llm=True,
            graph={
                "entities": st["entities"],
                "relations": st["facts"],
                "chunks": sum(1 for c in selection.kept_ids if c in graphs),
                "synonym_edges": st["synonym_edges"],
            },
        )

    @staticmethod
    def _unit_vectors(index: G2ConSIndex, kept: Sequence[str]) -> dict[str, np.ndarray]:
        st = index.stored
        pos = {c.id: i for i, c in enumerate(st.chunks)}
        want = {pos[c] for c in kept}
        by_chunk: dict[int, list[int]] = defaultdict(list)
        for u, parent in enumerate(np.asarray(st.unit_parent).tolist()):
            if parent in want:
                by_chunk[parent].append(u)
        return {st.chunks[c].id: np.asarray(st.unit_vecs[us]) for c, us in by_chunk.items()}

    def retrieve(self, query: str) -> list[HostItem]:
        """The best ``limit`` kept chunks for ``query`` (ids of the index's chunks), best first."""
        from ..fusion.items import HostItem

        if self.walk is None:
            raise InputError("the host KG is not built yet: call build(index, index.select(kappa=...)) first")
        return [HostItem(chunk_id=c, score=s) for c, s in self.walk.retrieve(query, self.limit)]


def graph_walk_host(path: str | None = None, **options: Any) -> GraphWalkHost:
    """Entry point ``graph-walk`` (``--host graph-walk:PATH``)."""
    return GraphWalkHost(path=path, **options)
