"""Language-aware text analysis: the words behind concepts, names, BM25 and the keyword baseline.

One analyzer, applied to each sentence (or query) on its own, so an incremental add analyses only new text:

- **Language**, per text: by script first (Han -> Chinese, kana -> Japanese, Hangul -> Korean), then, for
  alphabetic scripts, the language whose stop-word list covers most of the text's words; ties and texts with no
  stop word are English. An English text therefore gets exactly the English analysis, so English corpora
  analyse as before (``G2ConSConfig(language="english")`` forces it for every text).
- **Words**: lower-cased runs of two or more word characters (scikit-learn's ``(?u)\\b\\w\\w+\\b``); runs of Chinese
  or Japanese characters, written without spaces, are segmented: Chinese by jieba (``rjieba``, the maintained
  jieba-rs binding, when installed) or by character bigrams (always available; Japanese always uses bigrams,
  as jieba's dictionary is Chinese). Single characters are dropped like single Latin letters.
- **Stop words**: the text's language list from the ``stop-words`` package (33 languages, bundled, offline;
  extra ``multilingual``) and NLTK's English list (vendored, always). Without the package only English stop
  words are known; frequent words are still kept out of the concepts by ``max_df``.
- **Names** in scripts without case (Chinese, Japanese, Korean, Arabic, Hebrew, Thai, ...): a capital letter
  cannot mark a name, so every word of such a script counts as a name candidate, and the bridge keeps only the
  rare ones (2..``bridge_max_df`` chunks, i.e. distinctive by document frequency): see :func:`caseless`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from ..errors import InputError
from . import english_stopwords

__all__ = [
    "SEGMENTERS",
    "analyzer",
    "bm25_tokens",
    "caseless",
    "detect_language",
    "has_jieba",
    "stopwords",
    "words",
]

SEGMENTERS = ("auto", "jieba", "bigram")
_WORD = re.compile(r"(?u)\b\w\w+\b")
_RUN = re.compile(r"\w+")
# Han (CJK unified + ext. A + compatibility), kana, Hangul
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_CJ = re.compile(f"[{_HAN}{_KANA}]+")
_HAS_HAN = re.compile(f"[{_HAN}]")
_HAS_KANA = re.compile(f"[{_KANA}]")
_HANGUL_RUN = re.compile(f"[{_HANGUL}]+")
# stop-words package names of the languages detected by their stop words (alphabetic scripts)
_LISTS = {
    "es": "spanish", "fr": "french", "de": "german", "it": "italian", "pt": "portuguese", "nl": "dutch",
    "ca": "catalan", "ro": "romanian", "sv": "swedish", "da": "danish", "no": "norwegian", "fi": "finnish",
    "pl": "polish", "cs": "czech", "sk": "slovak", "hu": "hungarian", "tr": "turkish", "id": "indonesian",
    "ru": "russian", "uk": "ukrainian", "bg": "bulgarian", "el": "greek", "ar": "arabic", "fa": "persian",
    "he": "hebrew", "hi": "hindi", "vi": "vietnamese", "zh": "chinese", "ja": "japanese", "ko": "korean",
}  # fmt: skip


@cache
def stopwords(language: str) -> frozenset[str]:
    """Stop words of ``language`` (ISO 639-1 code): English from NLTK (vendored); others from the ``stop-words``
    package when installed, else empty."""
    if language == "en":
        return english_stopwords()
    name = _LISTS.get(language)
    if name is None:
        return frozenset()
    try:
        from stop_words import get_stop_words
    except ImportError:
        return frozenset()
    try:
        return frozenset(w.lower() for w in get_stop_words(name))
    except Exception:  # a list missing from the installed version
        return frozenset()


@lru_cache(maxsize=1)
def _alphabetic() -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(code, stop words, those that are not English stop words) of each alphabetic language with a list."""
    en = english_stopwords()
    return tuple((code, ws, ws - en) for code in _LISTS if code not in ("zh", "ja", "ko") and (ws := stopwords(code)))


@lru_cache(maxsize=1)
def has_jieba() -> bool:
    """True when ``rjieba`` (jieba-rs) is installed."""
    try:
        import rjieba  # noqa: F401
    except ImportError:
        return False
    return True


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text``'s language. Script first: Chinese / Japanese (kana present) / Korean when their
    characters are at least a third of the word characters (an English sentence quoting a Chinese name stays
    English). Alphabetic scripts by stop words: another language wins with more stop-word hits than English, two
    of them words that are not English stop words (short English sentences share "was", "in" with German or
    Dutch lists; "la", "en", "del" are not English)."""
    letters = sum(map(len, _RUN.findall(text)))
    if letters:
        cj = sum(map(len, _CJ.findall(text)))
        if 3 * cj >= letters:
            return "ja" if _HAS_KANA.search(text) else "zh"
        if 3 * sum(map(len, _HANGUL_RUN.findall(text))) >= letters:
            return "ko"
    ws = _WORD.findall(text.lower())
    if not ws:
        return "en"
    # one look-up per word (most words are no language's stop word) instead of a scan of the words per language;
    # the same counts, hence the same answer (a language with no hit can never win)
    langs, hits, en_of = _stop_hits()
    n_en = 0
    n = [0] * len(langs)
    own = [0] * len(langs)
    for w in ws:
        found = hits.get(w)
        if found is None:
            continue
        n_en += en_of[w]
        for k, is_own in found:
            n[k] += 1
            own[k] += is_own
    best, best_n = "en", n_en
    for k, code in enumerate(langs):
        if n[k] and n[k] > max(best_n, 2 * n_en + 1) and own[k] >= 2:
            best, best_n = code, n[k]
    return best


@lru_cache(maxsize=1)
def _stop_hits() -> tuple[tuple[str, ...], dict[str, tuple[tuple[int, int], ...]], dict[str, int]]:
    """For :func:`detect_language`: the alphabetic languages in :func:`_alphabetic` order; for each word that is
    any language's (or English's) stop word, the (language position, 1 if not an English stop word) of each list
    holding it; and 1 for the English stop words among those words, 0 for the others."""
    en = english_stopwords()
    table = _alphabetic()
    words = set(en).union(*(stop for _, stop, _ in table))
    hits = {w: tuple((k, int(w in own)) for k, (_, stop, own) in enumerate(table) if w in stop) for w in words}
    return tuple(code for code, _, _ in table), hits, {w: int(w in en) for w in words}


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _segment(run: str, language: str, segmenter: str) -> list[str]:
    """Words of a run of Chinese / Japanese characters (single characters dropped)."""
    use_jieba = language == "zh" and (segmenter == "jieba" or (segmenter == "auto" and has_jieba()))
    if use_jieba:
        import rjieba

        return [w for w in rjieba.cut(run) if len(w) >= 2 and not w.isspace()]
    return _bigrams(run)


def words(text: str, language: str | None = None, segmenter: str = "auto", stop: bool = True) -> list[str]:
    """Lower-cased words of ``text`` (two or more word characters; Chinese / Japanese segmented), minus the stop
    words of its language (detected unless given) when ``stop``."""
    if segmenter not in SEGMENTERS:
        raise InputError(f"segmenter must be one of {SEGMENTERS}, got {segmenter!r}")
    if segmenter == "jieba" and not has_jieba():
        raise InputError("segmenter='jieba' needs rjieba: pip install 'g2cons-plugins[multilingual]'")
    lang = language or detect_language(text)
    low = text.lower()
    if lang not in ("zh", "ja") or not _CJ.search(low):
        out = _WORD.findall(low)
    else:
        out = []
        for run in _RUN.findall(low):
            if not _CJ.search(run):
                if len(run) >= 2:
                    out.append(run)
                continue
            pos = 0
            for m in _CJ.finditer(run):
                if m.start() - pos >= 2:
                    out.append(run[pos : m.start()])
                out.extend(_segment(m.group(), lang, segmenter))
                pos = m.end()
            if len(run) - pos >= 2:
                out.append(run[pos:])
    if stop:
        sw = stopwords(lang)
        if lang != "en":
            sw = sw | english_stopwords()  # English words inside other languages' texts (names, citations)
        out = [w for w in out if w not in sw]
    return out


@dataclass(frozen=True)
class Analyzer:
    """A scikit-learn ``analyzer`` callable (plain data, so indexes that hold one pickle and deep-copy):
    :func:`words` (language per text when ``fixed`` is None), plus word n-grams up to ``ngram_max`` joined by a
    space, in scikit-learn's order."""

    fixed: str | None
    segmenter: str
    stop: bool
    ngram_max: int

    def __call__(self, text: str) -> list[str]:
        toks = words(text, self.fixed, self.segmenter, self.stop)
        if self.ngram_max == 1:
            return toks
        out = list(toks)
        for n in range(2, min(self.ngram_max, len(toks)) + 1):
            out.extend(" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1))
        return out


def analyzer(
    language: str = "auto", segmenter: str = "auto", stop: bool = True, ngram_max: int = 1
) -> Callable[[str], list[str]]:
    """A scikit-learn ``analyzer`` callable: :func:`words` (language per text when ``language="auto"``), plus
    word n-grams up to ``ngram_max`` joined by a space, in scikit-learn's order."""
    if language not in ("auto", "english"):
        raise InputError(f"language must be 'auto' or 'english', got {language!r}")
    return Analyzer("en" if language == "english" else None, segmenter, stop, ngram_max)


_ANY_WORD = re.compile(r"\w+")


def bm25_tokens(text: str, language: str = "auto", segmenter: str = "auto") -> list[str]:
    r"""BM25 tokens: English text as the English BM25 baseline always tokenised it (lower-cased ``\w+`` runs, single
    characters included, minus NLTK's English stop words); other languages by :func:`words`."""
    lang = "en" if language == "english" else detect_language(text)
    if lang == "en":
        sw = english_stopwords()
        return [w for w in _ANY_WORD.findall(text.lower()) if w not in sw]
    return words(text, lang, segmenter)


def caseless(word: str) -> bool:
    """True for a word of a script without letter case (its first letter has no upper/lower form): such a word
    can be a name without being capitalised."""
    c = word[:1]
    return c.isalpha() and c.lower() == c.upper()


def mark_caseless(vocab: Sequence[str]) -> list[bool]:
    """:func:`caseless` of every word."""
    return [caseless(w) for w in vocab]
