"""The analyzer, fixed-vocabulary counts and TF-IDF rows of g2cons_plugins.text.vectorizer equal scikit-learn's,
bit for bit, and building, loading and querying an index import no scikit-learn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.text import english_stopwords
from g2cons_plugins.text.vectorizer import TOKEN_PATTERN, binary_counts, tfidf_l2, word_analyzer

sk_text = pytest.importorskip("sklearn.feature_extraction.text")

# words, accented and non-Latin letters, digits, punctuation, stop words, single letters, apostrophes
_PIECES = ["The", "the", "of", "Paris", "café", "Ünïcode", "naïve", "東京", "Москва", "x", "A", "42", "3.5", "don't",
           "co-op", "U.S.", "and", "it", "Élan", "ß", "İstanbul", "ﬁne", "\u00a0", "  ", "\n", ",", "!"]  # fmt: skip
texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=30).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=texts, stop=st.booleans(), max_n=st.integers(1, 3), min_n=st.integers(1, 2), lowercase=st.booleans())
def test_word_analyzer_equals_scikit_learns(text: str, stop: bool, max_n: int, min_n: int, lowercase: bool) -> None:
    min_n = min(min_n, max_n)
    kw = {
        "lowercase": lowercase,
        "token_pattern": TOKEN_PATTERN,
        "stop_words": sorted(english_stopwords()) if stop else None,
        "ngram_range": (min_n, max_n),
        "dtype": np.float32,
    }
    assert word_analyzer(**kw)(text) == sk_text.CountVectorizer(**kw).build_analyzer()(text)  # type: ignore[arg-type]


def test_a_callable_analyzer_is_used_as_it_is() -> None:
    def own(t: str) -> list[str]:
        return t.split("|")

    assert word_analyzer(analyzer=own)("a|b|c") == ["a", "b", "c"]
    assert word_analyzer(analyzer=own)(b"x|y") == sk_text.CountVectorizer(analyzer=own).build_analyzer()(b"x|y")


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(texts, min_size=1, max_size=12), vocab=st.lists(st.sampled_from(_PIECES), min_size=1, unique=True))
def test_binary_counts_equal_scikit_learns(docs: list[str], vocab: list[str]) -> None:
    kw = {"lowercase": True, "token_pattern": TOKEN_PATTERN, "stop_words": None, "ngram_range": (1, 2)}
    vocabulary = sorted({w.lower() for w in vocab if len(w.strip()) > 0} | {"paris", "the paris"})
    ours = binary_counts(docs, vocabulary, word_analyzer(**kw))  # type: ignore[arg-type]
    cv = sk_text.CountVectorizer(vocabulary=vocabulary, binary=True, dtype=np.float32, **kw)
    theirs = cv.transform(docs).tocsr()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.float32
    assert ours.has_sorted_indices
    assert np.array_equal(ours.indptr, theirs.indptr) and np.array_equal(ours.indices, theirs.indices)
    assert np.array_equal(ours.data, theirs.data)


def test_binary_counts_refuse_what_scikit_learn_refuses() -> None:
    analyze = word_analyzer()
    with pytest.raises(ValueError, match="Duplicate term"):
        binary_counts(["a b"], ["ab", "ab"], analyze)
    with pytest.raises(ValueError, match="empty vocabulary"):
        binary_counts(["a b"], [], analyze)
    with pytest.raises(ValueError, match="string object received"):
        binary_counts("one text", ["one"], analyze)


def _counts(draw: st.DrawFn) -> sp.csr_matrix:
    rows, cols = draw(st.integers(1, 12)), draw(st.integers(1, 40))
    lengths = draw(st.lists(st.integers(0, 60), min_size=rows, max_size=rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    nnz = int(indptr[-1])
    # columns drawn freely: unsorted and repeated entries are kept, as scikit-learn keeps them
    indices = np.asarray(draw(st.lists(st.integers(0, cols - 1), min_size=nnz, max_size=nnz)), np.int32)
    values = st.sampled_from([0.0, 1.0, 2.0, 3.0, 7.0, 1e-3, 12345.0, 1e-30, 2e19])  # squares: 0, inf
    data = np.asarray(draw(st.lists(values, min_size=nnz, max_size=nnz)), np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(rows, cols))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_tfidf_rows_equal_scikit_learns_bit_for_bit(data: st.DataObject, seed: int) -> None:
    X = data.draw(st.composite(lambda draw: _counts(draw))())
    idf = (1.0 + np.random.default_rng(seed).random(X.shape[1]) * 9).astype(np.float32)
    t = sk_text.TfidfTransformer()
    t.idf_ = idf
    before = X.copy()
    theirs = t.transform(X.copy(), copy=False).tocsr()
    ours = tfidf_l2(X, idf)
    assert np.array_equal(X.data, before.data)  # the input is not changed
    assert np.array_equal(ours.indptr, theirs.indptr) and np.array_equal(ours.indices, theirs.indices)
    assert ours.data.dtype == np.float32 and ours.data.tobytes() == theirs.data.astype(np.float32).tobytes()


def test_tfidf_rows_of_real_counts_equal_scikit_learns() -> None:
    """Long rows (hundreds of words, the sum's order matters) from a real corpus's counts."""
    rng = np.random.default_rng(7)
    X = sp.random(300, 5000, density=0.08, format="csr", random_state=rng, dtype=np.float32)
    X.data = np.ceil(X.data * 20).astype(np.float32)
    idf = (1.0 + rng.random(5000) * 12).astype(np.float32)
    t = sk_text.TfidfTransformer()
    t.idf_ = idf
    assert tfidf_l2(X, idf).data.tobytes() == t.transform(X.copy(), copy=False).tocsr().data.tobytes()


def test_build_load_query_and_add_import_no_scikit_learn(tmp_path: Path) -> None:
    """What a serving process pays: no scikit-learn (with scipy.stats and pandas, ~130 MB and ~1.1 s), and no NLTK
    (whose package imports scikit-learn)."""
    code = f"""
import json, sys
from g2cons_plugins import G2ConSIndex
docs = [{{"id": f"d{{i}}", "text": f"Ada Lovelace wrote notes {{i}} on the Analytical Engine of Babbage. The engine "
          f"computed Bernoulli numbers in London {{i % 3}}."}} for i in range(40)]
idx = G2ConSIndex.build(docs, embedder="hash")
idx.retrieve("Who wrote notes on the engine?")
idx.save({str(tmp_path / "g")!r})
idx = G2ConSIndex.load({str(tmp_path / "g")!r})
idx.retrieve("Which numbers did the engine compute?")
idx.add([{{"id": "new", "text": "Charles Babbage designed the Difference Engine."}}])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("sklearn", "pandas", "nltk"))))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
