"""A non-English corpus under an English-only embedder, and a question in another script, are said out loud."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import warnings

import numpy as np
import pytest

from g2cons_plugins import CallableEmbedder, G2ConSIndex
from g2cons_plugins.text.language import LanguageWarning, corpus_language, english_only

ZH = [
    {"id": f"z{i}", "text": t}
    for i, t in enumerate(
        [
            "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
            "长江是亚洲最长的河流，流经中国的许多省份。",
            "孔子是中国古代著名的思想家和教育家。",
            "故宫位于北京市中心，是明清两代的皇家宫殿。",
        ]
    )
]


def fake(name: str) -> CallableEmbedder:
    """A cheap embedder carrying a built-in model's name (only the name matters to the check)."""

    def fn(texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng([len(t) for t in texts])
        return rng.normal(size=(len(texts), 16))

    return CallableEmbedder(fn, dim=16, name=name)


def test_corpus_language_and_english_only_names() -> None:
    assert corpus_language([r["text"] for r in ZH]) == ("zh", 1.0)
    assert english_only("wordllama-l2_supercat-256") and english_only("minilm-l6-v2-int8")
    assert not english_only("multilingual-e5-small-q4") and not english_only("hash-64")


def test_non_english_corpus_with_an_english_only_embedder_warns_with_the_fix() -> None:
    with pytest.warns(LanguageWarning, match=r"'zh'.*English-only.*g2cons-plugins\[multilingual\]"):
        G2ConSIndex.build(ZH, embedder=fake("minilm-l6-v2-int8"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LanguageWarning)
        G2ConSIndex.build(ZH, embedder=fake("multilingual-e5-small-q4"))  # a multilingual model: no warning


def test_a_question_in_another_script_warns_once(corpus: list[dict[str, str]]) -> None:
    index = G2ConSIndex.build(corpus, embedder="hash")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LanguageWarning)
        index.retrieve("Where was Marie Curie born?")  # same language: silent
    with pytest.warns(LanguageWarning, match="looks 'zh'.*mostly 'en'"):
        index.retrieve("居里夫人出生在哪里？")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LanguageWarning)
        index.retrieve("居里夫人出生在哪里？")  # once per index, not per query


def test_auto_embedder_picks_the_multilingual_model_for_a_non_english_corpus(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from g2cons_plugins.text.language import choose_embedder, has_multilingual

    en = ["The Lantern Guild met in Ostravel.", "Mira Quell was born in Dunmere."]
    assert choose_embedder(en) == "wordllama"
    if not has_multilingual():
        assert choose_embedder([r["text"] for r in ZH]) == "wordllama"  # and check_corpus warns with the install
        return
    with pytest.warns(LanguageWarning, match="uses the multilingual embedder"):
        assert choose_embedder([r["text"] for r in ZH]) == "multilingual"
    with pytest.warns(LanguageWarning, match="uses the multilingual embedder"):
        index = G2ConSIndex.build(ZH)  # the default embedder is "auto"
    assert index.embedder.name.startswith("multilingual")
    index.save(tmp_path / "zh")
    assert G2ConSIndex.load(tmp_path / "zh", embedder="auto").embedder.name == index.embedder.name
