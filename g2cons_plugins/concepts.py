"""The concept step (Section 3.1): which words are concepts, and which chunks they link to.

Concepts: TF-IDF keywords per chunk (Ramos 2003) or every non-stop word (KET-RAG's Keyword-RAG vocabulary).

Tokens: lower-cased words of two or more word characters (Unicode aware: accented Latin, Cyrillic, Greek;
scripts written without spaces, such as Chinese, give one token per run of characters), minus NLTK's English
stop words, optionally with n-grams up to ``ngram_max``.

TF-IDF (``concept_mode="tfidf"``): scikit-learn's ``TfidfVectorizer`` over the chunks (smooth idf, l2 norm,
raw term counts; computed by :mod:`g2cons_plugins.text.vectorizer`, scikit-learn's arithmetic without importing
it), ``min_df``/``max_df`` filters, then the ``top_n`` highest-scoring terms of each chunk (ties broken by the
term's alphabetical order, so the result is deterministic). The union over chunks is the
concept vocabulary W.

Incidence (which chunks a concept links to). ``"contains"`` (default): every chunk whose text contains the word,
as Section 1 of the paper defines a concept ("a word along with all chunks containing that word") and as the
co-occurrence Co(w_i, w_j) and T_w of the Dice weight need; ``"extracted"``: only the chunks the word was
extracted from (Section 3.2's "edges between w_i and its source chunk"). Measured on MuSiQue ketrag500 (minilm,
paper mode): "extracted" shortens each seed concept's chunk list, so the paper walk scores a little higher
(CR 48.0 / 56.6 / 74.0 at 2k / 4k / 12k against 46.0 / 55.4 / 71.4), but the graph collapses to 1,535 edges
with 96% of concepts isolated (16,673 edges with "contains"), so Co, Dice and PageRank lose their meaning. We
keep "contains", which also matches the calibration prototype.

In a derive (:func:`g2cons_plugins.build.derive`) this module is step 1, :func:`chunk_concepts` (TF-IDF over the
chunks' term counts, :func:`top_concepts`), step 2, :func:`concept_incidences`, and the bridge names,
:func:`bridge_names`; all three are sparse algebra over the per-sentence term counts.

Per-sentence term counts (:class:`TermIndex`): the one text analysis a derive needs, kept so an add analyses only
new sentences.

A :class:`TermIndex` holds, for every distinct sentence of the corpus, the counts of its words (the concept
analyzer above: lower-cased words of two or more word characters, stop words
removed) and how often each word occurs after the first word of the sentence, in all and written capitalised
(the ``name_share`` of a word). Everything else a derive needs is sparse algebra over these matrices:

- chunk term counts = (chunk x sentence occurrences) @ counts, hence TF-IDF and the top-n concepts per chunk;
- sentence / unit / chunk incidences of the concepts and of the bridge names;
- each word's name share = capitalised / non-initial occurrences, over distinct sentences.

:func:`update` re-uses the rows of known sentences and analyses only new ones; the result equals
:func:`analyze` of the new sentence list exactly (same words, same order, same counts), which is what keeps an
incrementally updated index equal to a fresh build. Unigrams only: with ``ngram_max > 1`` a derive analyses the
texts themselves (n-grams cross sentence boundaries).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .arrays.ones import binary
from .arrays.products import transposed_product
from .config import G2ConSConfig
from .errors import InputError
from .text import english_stopwords
from .text.vectorizer import TOKEN_PATTERN, binary_counts, tfidf_l2, word_analyzer

__all__ = [
    "TOKEN_PATTERN",
    "TOP_BLOCK_ROWS",
    "BridgeNames",
    "Incidences",
    "TermIndex",
    "analyze",
    "bridge_names",
    "chunk_concepts",
    "concept_incidences",
    "first_rows",
    "incidence",
    "later_words",
    "share",
    "top_concepts",
    "update",
]

_WORD = re.compile(TOKEN_PATTERN)


def _vectorizer_kwargs(config: G2ConSConfig) -> dict[str, object]:
    if config.graph.language != "english":  # language-aware (g2cons_plugins.text.analysis); same words for English text
        from .text.analysis import analyzer

        g = config.graph
        stop = g.stop_words is not None
        return {"analyzer": analyzer(g.language, g.segmenter, stop, g.ngram_max), "dtype": np.float32}
    return {
        "lowercase": True,
        "token_pattern": TOKEN_PATTERN,
        "stop_words": sorted(english_stopwords()) if config.graph.stop_words == "english" else None,
        "ngram_range": (1, config.graph.ngram_max),
        "dtype": np.float32,
    }



#: Sentences between two calls of :func:`analyze`'s ``progress``.
PROGRESS_EVERY = 10_000


@dataclass(frozen=True)
class TermIndex:
    """Word counts of each distinct sentence (rows aligned with ``Stored.sentences``)."""

    words: tuple[str, ...]  # sorted
    counts: sp.csr_matrix  # sentences x words, occurrences
    noninit: sp.csr_matrix  # sentences x words, occurrences after the sentence's first word
    caps: sp.csr_matrix  # sentences x words, of those, written with a capital first letter

    @property
    def n_sentences(self) -> int:
        """Rows."""
        return int(self.counts.shape[0])


def _analyzer(config: G2ConSConfig) -> Callable[[str], list[str]]:
    kw = _vectorizer_kwargs(config.with_(ngram_max=1))
    return word_analyzer(**kw)  # type: ignore[arg-type]


def analyze(
    sentences: Sequence[str], config: G2ConSConfig, progress: Callable[[int], object] | None = None
) -> TermIndex:
    """Analyse every sentence once (see module doc).

    One pass over the sentences gathers each word's column (in order of first use) into flat integer arrays (8
    bytes an entry, no word text kept per occurrence); numpy makes the counts at once. A word after a sentence's
    first word counts for the name share when the analyzer kept it in that sentence or an earlier one: the rows
    :func:`later_words` makes from the counts' first rows (the one definition an update uses too). ``progress``:
    called with the number of sentences analysed since its last call (e.g. a tqdm bar's ``update``), every
    :data:`PROGRESS_EVERY` sentences and at the end."""
    analyzer = _analyzer(config)
    vocab: dict[str, int] = {}
    setdefault = vocab.setdefault
    cols = array("q")
    n_words = np.zeros(len(sentences), dtype=np.int64)
    for i, s in enumerate(sentences):
        if progress is not None and i and i % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
        ws = analyzer(s)
        n_words[i] = len(ws)
        cols.extend([setdefault(w, len(vocab)) for w in ws])
    if progress is not None and len(sentences):
        progress(len(sentences) - (len(sentences) - 1) // PROGRESS_EVERY * PROGRESS_EVERY)
    words = sorted(vocab)
    remap = np.empty(len(vocab), dtype=np.int64)
    remap[[vocab[w] for w in words]] = np.arange(len(words))
    del vocab
    rows = np.arange(len(sentences), dtype=np.int64)
    c = remap[np.frombuffer(cols, dtype=np.int64)] if len(cols) else np.zeros(0, np.int64)
    shape = (len(sentences), len(words))
    counts = sp.csr_matrix((np.ones(len(c), np.int32), (np.repeat(rows, n_words), c)), shape=shape)
    counts.sum_duplicates()
    counts.sort_indices()
    noninit, caps = later_words(sentences, rows, words, first_rows(counts))
    return TermIndex(tuple(words), counts, noninit, caps)


def update(prev: TermIndex, prev_sentences: Sequence[str], sentences: Sequence[str], config: G2ConSConfig) -> TermIndex:
    """The TermIndex of ``sentences``, re-using the rows of ``prev`` (aligned with ``prev_sentences``) and
    analysing only the new sentences. Equals ``analyze(sentences, config)``.

    A sentence's word counts depend on it alone and are re-used; its name-share rows (``noninit``, ``caps``) do
    not: a word after the first counts there once the analyzer kept it in that sentence or an earlier one, so they
    depend on the order (a removed sentence that first used a word, a new one placed before). Where ``sentences``
    is ``prev_sentences`` with new ones appended, the old rows hold and only the new rows are made (each against
    every word used before it); otherwise both are made again for every sentence from the counts
    (:func:`later_words`: one tokenizer pass, no analyzer)."""
    if prev.n_sentences != len(prev_sentences):
        raise InputError(f"term index has {prev.n_sentences} rows for {len(prev_sentences)} sentences")
    old = {s: i for i, s in enumerate(prev_sentences)}
    src = np.fromiter((old.get(s, -1) for s in sentences), dtype=np.int64, count=len(sentences))
    new_pos = np.flatnonzero(src < 0)
    fresh = analyze([sentences[i] for i in new_pos.tolist()], config)
    words = sorted(set(prev.words).union(fresh.words))
    col = {w: j for j, w in enumerate(words)}
    old_cols = np.fromiter((col[w] for w in prev.words), dtype=np.int64, count=len(prev.words))
    new_cols = np.fromiter((col[w] for w in fresh.words), dtype=np.int64, count=len(fresh.words))
    known_pos = np.flatnonzero(src >= 0)
    n_old = len(prev_sentences)
    appended = len(known_pos) == n_old and bool((src[:n_old] == np.arange(n_old)).all())
    placed = (prev.counts, fresh.counts), (prev.noninit, fresh.noninit), (prev.caps, fresh.caps)
    parts = placed if appended else placed[:1]  # otherwise every name-share row is made again below
    mats = [_placed(a, b, src, known_pos, new_pos, old_cols, new_cols, len(words)) for a, b in parts]
    present = np.flatnonzero(np.asarray(mats[0].sum(axis=0)).ravel() > 0)  # words of removed sentences go
    if len(present) < len(words):
        mats = [M[:, present].tocsr() for M in mats]
        for M in mats:
            M.sort_indices()
        words = [words[j] for j in present.tolist()]
    first = first_rows(mats[0])
    redo = new_pos if appended else np.arange(len(sentences))  # appended: the old rows hold
    later = later_words([sentences[i] for i in redo.tolist()], redo, words, first)
    if appended:
        mats[1:] = [_joined(M, L, n_old) for M, L in zip(mats[1:], later, strict=True)]
    else:
        mats += list(later)
    return TermIndex(tuple(words), mats[0], mats[1], mats[2])


def _placed(
    a: sp.csr_matrix,
    b: sp.csr_matrix,
    src: np.ndarray,
    known_pos: np.ndarray,
    new_pos: np.ndarray,
    old_cols: np.ndarray,
    new_cols: np.ndarray,
    width: int,
) -> sp.csr_matrix:
    """The rows of ``a`` (old sentences, at ``known_pos``) and ``b`` (new, at ``new_pos``) in one matrix over the
    merged word columns."""
    A = a[src[known_pos]].tocoo()
    B = b.tocoo()
    M = sp.csr_matrix(
        (
            np.concatenate([A.data, B.data]).astype(np.int32),
            (np.concatenate([known_pos[A.row], new_pos[B.row]]), np.concatenate([old_cols[A.col], new_cols[B.col]])),
        ),
        shape=(len(src), width),
    )
    M.sort_indices()
    return M


def first_rows(counts: sp.csr_matrix) -> np.ndarray:
    """Per word (column), the first row (sentence) that holds it; the number of rows for none."""
    C = counts.tocoo()
    first = np.full(counts.shape[1], counts.shape[0], dtype=np.int64)
    np.minimum.at(first, C.col, C.row.astype(np.int64))
    return first


def later_words(
    texts: Sequence[str], row_at: np.ndarray, words: Sequence[str], first: np.ndarray
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``noninit`` and ``caps`` rows (one per text; ``row_at``: each text's row in its term index) as
    :func:`analyze` makes them: each word after a text's first, lowercased, counts where it is one of ``words``
    (a term index's columns) whose ``first`` row (:func:`first_rows`) is at or before the text's row (the analyzer
    kept it there or earlier); of those, the capitalised ones."""
    col = {w: j for j, w in enumerate(words)}
    get, findall = col.get, _WORD.findall
    cols, upper = array("q"), array("b")
    n_later = np.zeros(len(texts), dtype=np.int64)
    for k, text in enumerate(texts):
        rest = findall(text)[1:]
        if rest:
            n_later[k] = len(rest)
            cols.extend([get(w.lower(), -1) for w in rest])
            upper.extend([w[0].isupper() for w in rest])
    c = np.frombuffer(cols, dtype=np.int64) if len(cols) else np.zeros(0, np.int64)
    up = np.frombuffer(upper, dtype=np.int8).astype(bool) if len(upper) else np.zeros(0, bool)
    r = np.repeat(np.arange(len(texts), dtype=np.int64), n_later)
    keep = c >= 0
    r, c, up = r[keep], c[keep], up[keep]
    keep = first[c] <= np.asarray(row_at, dtype=np.int64)[r]
    r, c, up = r[keep], c[keep], up[keep]
    out = []
    for rr, cc in ((r, c), (r[up], c[up])):
        M = sp.csr_matrix((np.ones(len(rr), np.int32), (rr, cc)), shape=(len(texts), len(words)))
        M.sum_duplicates()
        M.sort_indices()
        out.append(M)
    return out[0], out[1]


def _joined(M: sp.csr_matrix, L: sp.csr_matrix, n: int) -> sp.csr_matrix:
    """The first ``n`` rows of ``M``, then the rows of ``L``."""
    out = sp.csr_matrix(
        (
            np.concatenate([M.data[: M.indptr[n]], L.data]),
            np.concatenate([M.indices[: M.indptr[n]], L.indices]),
            np.concatenate([M.indptr[:n], L.indptr + M.indptr[n]]),
        ),
        shape=(n + L.shape[0], M.shape[1]),
    )
    out.sort_indices()
    return out


def share(terms: TermIndex, cols: np.ndarray) -> np.ndarray:
    """Name share of the words ``cols``: capitalised / non-initial occurrences over distinct sentences (0 for a
    word never seen after a sentence's first word, and for n-grams)."""
    caps = np.asarray(terms.caps[:, cols].sum(axis=0)).ravel().astype(np.float64)
    total = np.asarray(terms.noninit[:, cols].sum(axis=0)).ravel().astype(np.float64)
    return np.divide(caps, total, out=np.zeros(len(cols)), where=total > 0).astype(np.float32)


#: Chunks scored at a time by :func:`top_concepts`: its temporaries (the block's kept counts as float32, their
#: TF-IDF scores and the sort keys, ~60 bytes an entry) are those of this many chunks, never of the whole corpus.
TOP_BLOCK_ROWS = 16_384


def chunk_concepts(
    terms: TermIndex, sent_unit: sp.csr_matrix, unit_chunk: sp.csr_matrix, config: G2ConSConfig
) -> tuple[np.ndarray, sp.csr_matrix]:
    """The concept step of a derive: each chunk's term counts (chunk x sentence occurrences, through its units,
    times the per-sentence counts of ``terms``), then :func:`top_concepts`. ``sent_unit``: sentences x units;
    ``unit_chunk``: units x chunks. Returns the concepts' columns of ``terms.words`` and the chunk x concept
    "extracted" mask.

    The chunk x sentence occurrences are whole numbers; when they are stored as such they are multiplied as int32
    with the int32 counts, so the chunk x word counts (the one matrix of corpus size this step holds) take 4
    bytes an entry instead of float64's 8, with the same values, entries and entry order."""
    chunk_sent = transposed_product(unit_chunk, sent_unit.T)
    if terms.counts.dtype == np.int32 and _whole(chunk_sent.data):
        chunk_sent.data = chunk_sent.data.astype(np.int32)
    chunk_counts = chunk_sent @ terms.counts
    del chunk_sent
    return top_concepts(sp.csr_matrix(chunk_counts), config, distinct=True)


def _whole(data: np.ndarray) -> bool:
    """Every value a whole number that int32 holds exactly (then int32 products equal the float ones)."""
    if data.dtype.kind in "iu":
        return bool(data.size == 0 or (int(data.min()) >= 0 and int(data.max()) < 2**31))
    return bool(data.size == 0 or (np.all(data >= 0) and np.all(data < 2**31) and np.array_equal(data, np.floor(data))))


def _smooth_idf(df: np.ndarray, n: int) -> np.ndarray:
    """scikit-learn's smooth idf, exactly as ``TfidfTransformer.fit`` makes it for float32 counts (same dtype,
    same operations in the same order): ``log((n + 1) / (df + 1)) + 1`` in float32."""
    d = df.astype(np.float32)
    d += 1.0
    idf = np.full_like(d, fill_value=n + 1, dtype=np.float32)
    idf /= d
    np.log(idf, out=idf)
    idf += 1.0
    return idf


def _fit_df(chunk_counts: sp.csr_matrix, keep: np.ndarray, df: np.ndarray, step: int, distinct: bool) -> np.ndarray:
    """Document frequencies of the kept words as the idf counts them: over the kept counts cast to float32, and
    scipy's cast of other dtypes first sums an entry stored twice into one (``df`` counts stored entries)."""
    if distinct or chunk_counts.dtype == np.float32:
        kept: np.ndarray = df[keep]
        return kept
    out = np.zeros(len(keep), dtype=np.int64)
    for r0 in range(0, chunk_counts.shape[0], step):
        block = chunk_counts[r0 : r0 + step][:, keep].astype(np.float32)  # a copy (casting sorts it in place)
        out += np.bincount(block.indices[: block.indptr[-1]], minlength=len(keep))
    return out


def _top_of_block(block: sp.csr_matrix, idf: np.ndarray, top_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows (block-local) and kept-word columns of the ``top_n`` best TF-IDF scores of each row of ``block`` (its
    kept columns' counts): every step is row-local, so blocks give the rows of one whole-matrix pass."""
    T = tfidf_l2(block, idf)  # idf: the whole matrix's (top_concepts)
    T.eliminate_zeros()  # every score left is > 0 (the sort key below needs it)
    T.sort_indices()
    row_of = np.repeat(np.arange(T.shape[0]), np.diff(T.indptr))
    # by chunk, score desc, then word order (T's rows have sorted indices). Scores are positive float32, whose
    # bit patterns sort like their values, so one stable sort of (row << 32 | ~bits) does it (measured 10x faster
    # than a 3-key lexsort on 2.5M entries; identical order).
    bits = np.asarray(T.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
    key = (row_of.astype(np.uint64) << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - bits)
    del bits
    order = np.argsort(key, kind="stable")
    del key
    rank = np.arange(len(order)) - T.indptr[row_of[order]]
    sel = order[rank < top_n]
    return row_of[sel], T.indices[sel]


def top_concepts(
    chunk_counts: sp.csr_matrix, config: G2ConSConfig, *, distinct: bool = False
) -> tuple[np.ndarray, sp.csr_matrix]:
    """Concept columns (sorted) and the chunk x concept 'extracted' mask from chunk term counts.

    ``tfidf``: the words kept by ``min_df``/``max_df`` (scikit-learn's rules), scored TF-IDF (smooth idf, l2
    rows: scikit-learn's ``TfidfTransformer``), the ``top_n`` best of each chunk (ties by word order); the union
    is the vocabulary. ``all_words``: every word kept by the df filters.

    Memory: the document frequencies are one count over the entries' columns; the scores and the per-chunk
    selection run over :data:`TOP_BLOCK_ROWS` chunks at a time (the same result as one pass over all chunks,
    bit for bit: the idf is the whole matrix's, everything else is row-local). ``distinct``: the caller knows no
    (chunk, word) entry is stored twice (a sparse product's output), which spares non-float32 counts a pass."""
    n = chunk_counts.shape[0]
    nnz = int(chunk_counts.indptr[-1])
    df = np.bincount(chunk_counts.indices[:nnz], minlength=chunk_counts.shape[1])  # stored entries per word
    max_count = config.graph.max_df * n if n * config.graph.max_df >= max(config.graph.min_df, 1) else n
    keep = np.flatnonzero((df >= max(config.graph.min_df, 1)) & (df <= max_count))
    if len(keep) == 0:
        raise InputError(
            "no concepts could be extracted from the corpus: every word is a stop word or fails min_df/max_df"
        )
    if config.graph.concept_mode == "all_words":
        mask = chunk_counts[:, keep].tocsr()  # a copy: its entries made 1 (astype sums duplicates, as before)
        mask.data = np.ones(len(mask.data), dtype=mask.dtype)
        return keep, mask.astype(np.float32, copy=False)
    step = max(int(TOP_BLOCK_ROWS), 1)
    idf = _smooth_idf(_fit_df(chunk_counts, keep, df, step, distinct), n)
    rows, local = [], []
    for r0 in range(0, n, step):
        r, c = _top_of_block(chunk_counts[r0 : r0 + step][:, keep], idf, config.graph.top_n)
        rows.append(r + r0)
        local.append(c)
    row_all, local_all = np.concatenate(rows), np.concatenate(local)
    del rows, local
    used = np.unique(local_all)
    remap = np.full(len(keep), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    mask = sp.csr_matrix((np.ones(len(row_all), np.float32), (row_all, remap[local_all])), shape=(n, len(used)))
    return keep[used], mask


@dataclass(frozen=True)
class Incidences:
    """Which sentences, units and chunks each concept links to (0/1 float32 csr matrices, concepts as columns)."""

    sentences: sp.csr_matrix  # sentences x concepts (S_w as columns)
    units: sp.csr_matrix  # units x concepts
    chunks: sp.csr_matrix  # chunks x concepts (T_w as columns)


def concept_incidences(
    terms: TermIndex,
    cols: np.ndarray,
    extracted: sp.csr_matrix,
    sent_unit: sp.csr_matrix,
    unit_chunk: sp.csr_matrix,
    config: G2ConSConfig,
) -> Incidences:
    """The incidence step of a derive (see module doc): with ``config.graph.incidence == "contains"`` every sentence,
    unit and chunk whose text holds the concept (columns ``cols`` of ``terms``); with ``"extracted"`` only those of
    the chunks it was extracted from (``extracted``: chunks x concepts)."""
    sent_inc = binary(terms.counts[:, cols])
    unit_inc = binary(transposed_product(sent_unit, sent_inc))
    chunk_inc = binary(transposed_product(unit_chunk, unit_inc))
    if config.graph.incidence == "extracted":
        chunk_inc = binary(chunk_inc.multiply(extracted))
        unit_inc = binary(unit_inc.multiply(unit_chunk @ extracted))
        sent_chunk = binary(sent_unit @ unit_chunk)
        sent_inc = binary(sent_inc.multiply(sent_chunk @ extracted))
    return Incidences(sent_inc, unit_inc, chunk_inc)


@dataclass(frozen=True)
class BridgeNames:
    """The bridge vocabulary (:func:`bridge_names`)."""

    names: list[str]
    unit_names: sp.csr_matrix  # units x names, 0/1
    df: np.ndarray  # per name: the chunks holding it (|T_w|)


def bridge_names(
    terms: TermIndex, sent_unit: sp.csr_matrix, unit_chunk: sp.csr_matrix, config: G2ConSConfig
) -> BridgeNames:
    """The names step of a derive. Bridge vocabulary: every word (KET-RAG's all-words vocabulary, unigrams) that
    is a *name* (written capitalised in at least half of its non-sentence-initial occurrences, or, with
    ``language="auto"``, a word of a script without case: :func:`g2cons_plugins.text.analysis.caseless`) and
    occurs in >= 2 chunks; with the units x names 0/1 matrix and each name's chunk frequency |T_w|. It depends on
    the term counts only (a derive makes it while the concept graph is built)."""
    words = np.flatnonzero(np.fromiter((" " not in w for w in terms.words), dtype=bool, count=len(terms.words)))
    is_name = share(terms, words) >= 0.5
    if config.graph.language != "english":  # scripts without case: every word is a candidate, rare ones bridge
        from .text.analysis import mark_caseless

        is_name |= np.asarray(mark_caseless([terms.words[j] for j in words.tolist()]), dtype=bool)
    # the units x words products over the name words only (the others are dropped anyway): the same columns, the
    # same entries in the same order; at 1M passages the products over every word held ~2.5 GB at once
    names = words[is_name]
    U = binary(transposed_product(sent_unit, terms.counts[:, names]))
    df = np.asarray(binary(transposed_product(unit_chunk, U)).sum(axis=0)).ravel().astype(np.int64)
    keep = np.flatnonzero(df >= 2)
    return BridgeNames([terms.words[j] for j in names[keep].tolist()], U[:, keep].tocsr(), df[keep])


def _incidence_kwargs(config: G2ConSConfig) -> dict[str, Any]:
    kw = _vectorizer_kwargs(config)
    if "analyzer" not in kw:
        kw["stop_words"] = None  # the vocabulary has none; n-grams must match the extraction analyzer
        if config.graph.stop_words == "english" and config.graph.ngram_max > 1:
            kw["stop_words"] = sorted(english_stopwords())
    return kw


def incidence(texts: Sequence[str], vocab: Sequence[str], config: G2ConSConfig) -> sp.csr_matrix:
    """texts x concepts 0/1 matrix: does the text contain the concept (same analyzer as extraction)."""
    return binary_counts(texts, list(vocab), text_analyzer(config))


def text_analyzer(config: G2ConSConfig) -> Callable[[str], list[str]]:
    """The analyzer :func:`incidence` reads a text with: its terms, which a vocabulary's concepts are matched to."""
    return word_analyzer(**_incidence_kwargs(config))


def text_terms(text: str, config: G2ConSConfig) -> set[str]:
    """The terms of ``text`` that :func:`incidence` matches against a vocabulary (a concept is in the text when it is
    one of them), without building the vocabulary's lookup: for one short text against a large vocabulary."""
    return set(text_analyzer(config)(text))
