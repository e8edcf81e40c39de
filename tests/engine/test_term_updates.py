"""The term index an update re-uses equals the one a fresh build analyses, name-share rows included.

A word after a sentence's first counts for the name share once the analyzer kept it in that sentence or an earlier
one (:func:`g2cons_plugins.concepts.analyze`), so those rows depend on the order of the sentences: re-using them
after a removal or an insertion (an exact update, ``refresh()``), or analysing appended sentences alone (a
trickle add), gave other counts than a fresh build on mixed-language text (Spanish "de", "la", "en": stop words
there, words in English sentences), and other name shares."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.concepts import TermIndex, analyze, update
from g2cons_plugins.storage.derived_io import differences
from tests.test_build_speed import _passages

CFG = G2ConSConfig()


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    idx = G2ConSIndex.build(_passages(), embedder="hash", config=CFG)
    return list(idx.stored.sentences)


def _same(a: TermIndex, b: TermIndex) -> None:
    assert a.words == b.words
    for name in ("counts", "noninit", "caps"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and x.dtype == y.dtype, name
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(x, part), getattr(y, part)), (name, part)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("change", ["appended", "removed", "mixed"])
def test_update_equals_analyze(sentences: list[str], seed: int, change: str) -> None:
    rng = random.Random(seed)
    before = rng.sample(sentences, rng.randint(20, len(sentences)))
    if change == "appended":  # the old rows hold, the new ones see every earlier word
        after = before + [s for s in rng.sample(sentences, 60) if s not in set(before)]
    elif change == "removed":  # a sentence that first used a word may go
        after = [s for s in before if rng.random() < 0.8]
        rng.shuffle(after)
    else:
        after = list(dict.fromkeys([s for s in before if rng.random() < 0.9] + rng.sample(sentences, 30)))
        rng.shuffle(after)
    _same(update(analyze(before, CFG), before, after, CFG), analyze(after, CFG))


WORDS = [
    "Paris",
    "London",
    "Alice",
    "Bob",
    "river",
    "castle",
    "king",
    "queen",
    "war",
    "peace",
    "music",
    "film",
    "city",
    "bank",
    "school",
]


def _text(rng: random.Random, passages: list[dict[str, str]]) -> str:
    kind = rng.random()
    if kind < 0.2:
        return rng.choice(WORDS) + "."
    if kind < 0.4:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) + "."
    return rng.choice(passages)["text"][: rng.randint(10, 600)]


@pytest.mark.parametrize("seed", [0, 17, 24, 29, 40])  # each gave a refresh unequal to a fresh build before
def test_trickle_adds_and_removals_then_refresh_equal_a_fresh_build(seed: int) -> None:
    """Random trickle adds (appended and inserted ids, one-word chunks) and removals on a small mixed-language
    corpus, a query after each; then ``refresh()``: the stored and derived state of a fresh build."""
    rng = random.Random(seed)
    passages = _passages()
    n = rng.randint(20, 120)
    docs = {f"d{i:04d}": {"id": f"d{i:04d}", "text": _text(rng, passages)} for i in range(n)}
    cfg = G2ConSConfig(theta_co=rng.choice([1, 2, 3]))
    idx = G2ConSIndex.build(list(docs.values()), embedder="hash", config=cfg)
    nxt = n
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.6 or len(docs) < 5:
            new = []
            for _ in range(rng.randint(1, 4)):
                i = nxt if rng.random() < 0.7 else rng.randint(0, nxt + 50) * 10 + 5  # appended or inserted
                nxt += 1
                if f"d{i:04d}" not in docs:
                    new.append({"id": f"d{i:04d}", "text": _text(rng, passages)})
            if new:
                idx.add(new, exact=False)
                docs.update({d["id"]: d for d in new})
        else:
            drop = rng.sample(sorted(docs), rng.randint(1, max(1, len(docs) // 10)))
            idx.remove(drop, exact=False)
            for d in drop:
                docs.pop(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a question in another language than the corpus: a LanguageWarning
            idx.retrieve(_text(rng, passages))
    idx.refresh()
    fresh = G2ConSIndex.build(list(docs.values()), embedder="hash", config=cfg)
    assert [c.id for c in idx.chunks] == [c.id for c in fresh.chunks]
    assert list(idx.stored.sentences) == list(fresh.stored.sentences)
    assert differences(idx.derived, fresh.derived) == []
