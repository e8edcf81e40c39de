"""scikit-learn's word analyzer, fixed-vocabulary counts and TF-IDF rows, reproduced for the options this library
uses, so that building, loading and querying an index never import scikit-learn.

What it follows: ``sklearn.feature_extraction.text`` (1.x): ``CountVectorizer.build_analyzer`` for
``analyzer="word"`` (decode, the preprocessor or ``str.lower``, the tokenizer or the token pattern's ``findall``,
stop words removed, then word n-grams joined by a space, as ``_word_ngrams``) or a callable analyzer (decode, then
the callable);
``CountVectorizer(vocabulary=..., binary=True).transform`` (each text's vocabulary columns, sorted, value 1);
``TfidfTransformer(norm="l2").transform`` with a fitted ``idf_`` on float32 counts (each stored entry times its
word's idf in float32, then ``sklearn.utils.sparsefuncs_fast._inplace_csr_row_normalize_l2``: each row's float32
squares summed in float64 in the row's stored order, the entries divided by the square root, a row summing to 0 left
as it is). Where it differs: only those options (no ``char`` analyzers, accents, ``min_df`` fitting), and stop
words are a ``frozenset`` given once.

Why not import scikit-learn: the import costs a process about 130 MB resident and 1.1 s (it pulls ``scipy.stats``
and, where installed, pandas and pyarrow), against a few dozen lines here; a query process (load + retrieve) and
the ``g2cons`` commands paid it for the analyzer alone. The outputs are scikit-learn's bit for bit
(``tests/text/test_vectorizer.py`` compares them on generated text and matrices), and scikit-learn is no longer a
dependency of the package.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["TOKEN_PATTERN", "binary_counts", "tfidf_l2", "word_analyzer"]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""scikit-learn's default token pattern: runs of two or more word characters."""


def _decode(doc: str | bytes) -> str:
    if isinstance(doc, bytes):
        return doc.decode("utf-8")
    if not isinstance(doc, str):
        raise TypeError(f"expected a text, got {type(doc).__name__}")
    return doc


def _words(
    doc: str | bytes,
    find: Callable[[str], list[Any]],
    preprocess: Callable[[str], str] | None,
    lowercase: bool,
    stop: frozenset[str] | None,
    min_n: int,
    max_n: int,
) -> list[str]:
    text = _decode(doc)
    if preprocess is not None:
        text = preprocess(text)
    elif lowercase:
        text = text.lower()
    tokens: list[str] = find(text)
    if stop is not None:
        tokens = [w for w in tokens if w not in stop]
    if max_n == 1:
        return tokens
    original = tokens
    if min_n == 1:
        tokens = list(original)
        min_n += 1
    else:
        tokens = []
    n_orig = len(original)
    for n in range(min_n, min(max_n + 1, n_orig + 1)):
        for i in range(n_orig - n + 1):
            tokens.append(" ".join(original[i : i + n]))
    return tokens


def _called(doc: str | bytes, analyzer: Callable[[str], list[str]]) -> list[str]:
    return analyzer(_decode(doc))


def word_analyzer(
    *,
    analyzer: Callable[[str], list[str]] | None = None,
    preprocessor: Callable[[str], str] | None = None,
    tokenizer: Callable[[str], list[str]] | None = None,
    lowercase: bool = True,
    token_pattern: str | None = TOKEN_PATTERN,
    stop_words: Collection[str] | None = None,
    ngram_range: tuple[int, int] = (1, 1),
    dtype: Any = None,
) -> Callable[[str], list[str]]:
    """The terms of a text, as ``CountVectorizer(**kwargs).build_analyzer()`` gives them for these keyword
    arguments (``dtype`` is accepted and ignored, so one dict of options serves both). As there, a
    ``preprocessor`` replaces the lower-casing and a ``tokenizer`` the token pattern."""
    del dtype
    if analyzer is not None:
        return partial(_called, analyzer=analyzer)
    if tokenizer is not None:
        find = tokenizer
    else:
        pattern = re.compile(TOKEN_PATTERN if token_pattern is None else token_pattern)
        if pattern.groups > 1:
            raise ValueError("more than 1 capturing group in token pattern; only a single group should be captured")
        find = pattern.findall
    min_n, max_n = ngram_range
    if min_n < 1 or max_n < min_n:
        raise ValueError(f"invalid ngram_range {ngram_range!r}")
    stop = None if stop_words is None else frozenset(stop_words)
    return partial(
        _words, find=find, preprocess=preprocessor, lowercase=lowercase, stop=stop, min_n=min_n, max_n=max_n
    )


def binary_counts(
    texts: Iterable[str], vocabulary: Sequence[str] | Mapping[str, int], analyze: Callable[[str], list[str]]
) -> sp.csr_matrix:
    """texts x vocabulary float32 0/1 matrix (sorted column indices): which vocabulary terms ``analyze`` finds in
    each text, as ``CountVectorizer(vocabulary=vocabulary, binary=True, dtype=np.float32).transform(texts)``."""
    if isinstance(texts, (str, bytes)):
        raise ValueError("Iterable over raw text documents expected, string object received.")
    if isinstance(vocabulary, Mapping):
        column = dict(vocabulary)
    else:
        column = {}
        for i, term in enumerate(vocabulary):
            if column.setdefault(term, i) != i:
                raise ValueError(f"Duplicate term in vocabulary: {term!r}")
    if not column:
        raise ValueError("empty vocabulary passed to fit")
    indices: list[int] = []
    indptr = [0]
    for doc in texts:
        found = {column[t] for t in analyze(doc) if t in column}
        indices.extend(sorted(found))
        indptr.append(len(indices))
    wide = len(indices) > np.iinfo(np.int32).max or len(column) > np.iinfo(np.int32).max
    itype = np.int64 if wide else np.int32
    return sp.csr_matrix(
        (np.ones(len(indices), np.float32), np.asarray(indices, itype), np.asarray(indptr, itype)),
        shape=(len(indptr) - 1, len(column)),
    )


def tfidf_l2(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    """``TfidfTransformer(norm="l2")`` with ``idf_ = idf`` (float32) applied to float32 ``counts`` (a copy; the
    stored entries stay where they are, duplicates included): every entry times its column's idf, every row
    divided by its L2 norm (float32 squares summed in float64 in stored order, as scikit-learn's Cython loop)."""
    X = sp.csr_matrix(counts, dtype=np.float32, copy=True)
    d = X.data
    d *= np.asarray(idf, dtype=np.float32)[X.indices]
    lengths = np.diff(X.indptr).astype(np.int64)
    norms = np.ones(len(lengths), dtype=np.float64)  # a row summing to 0 is divided by 1: left as it is
    if len(d):
        # each row's sum in its stored order, all rows at once: rows by length (longest first), so the rows holding a
        # k-th entry are a prefix; the entries laid out k by k, each k's run in that row order (a position, no sort)
        by_length = np.argsort(-lengths, kind="stable")
        place = np.empty(len(lengths), np.int64)
        place[by_length] = np.arange(len(lengths))
        has = np.searchsorted(-lengths[by_length], -np.arange(1, int(lengths.max()) + 1), side="right")
        first = np.concatenate([[0], np.cumsum(has)])
        where = np.arange(len(d), dtype=np.int64)
        where -= np.repeat(X.indptr[:-1].astype(np.int64), lengths)  # k: the entry's place in its row
        where = first[where]
        where += np.repeat(place, lengths)
        laid = np.empty(len(d), np.float32)
        with np.errstate(over="ignore"):  # a square past float32's range is inf there too
            laid[where] = d * d  # float32 products, as the loop's
        del where
        acc = np.zeros(len(lengths), np.float64)
        for i, m in enumerate(has.tolist()):  # + the k-th entry of every row that has one, k = 0, 1, ...
            acc[:m] += laid[first[i] : first[i] + m]
        positive = acc > 0.0
        norms[by_length[positive]] = np.sqrt(acc[positive])
    d[:] = (d / np.repeat(norms, lengths)).astype(np.float32)  # float32 / float64: divided in float64
    return X
