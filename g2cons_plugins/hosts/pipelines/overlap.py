"""Noticing a corpus whose chunks overlap heavily (a splitter's ``chunk_overlap`` near its ``chunk_size``, or the
same text loaded twice), before it multiplies the extraction bill.

Every chunk a host sends to its LLM extractor costs a call. A splitter that repeats most of each chunk in the next
one (LangChain's ``RecursiveCharacterTextSplitter`` defaults to ``chunk_overlap=200``, as large as a 200-token
``chunk_size``) turns 60 passages into 323 chunks, and a selection keeps most of them: more calls than not using
the library. Both adapters call :func:`warn_if_overlapping` on the chunks they first see.

Measure: a chunk *overlaps* when at least half of its distinct runs of ``window`` consecutive words (lower-cased,
split on white space) also occur in another chunk. Runs are hashed with numpy over the whole corpus at once (one
pass, memory linear in the corpus' words). Ordinary overlaps (10-20% of a chunk) and distinct passages that share
a phrase stay below the mark; a chunk shorter than ``window`` words counts as one run (its whole text), so exact
duplicates are caught too.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["OverlapReport", "chunk_overlap", "warn_if_overlapping"]

WINDOW = 8
"""Words per run: long enough that distinct passages rarely share one, short enough for 30-word chunks."""
SHARED = 0.5
"""A chunk overlaps when at least this share of its runs occur in another chunk."""
WARN_SHARE = 0.2
"""Warn when at least this share of the chunks overlap."""


@dataclass(frozen=True)
class OverlapReport:
    """How many chunks repeat text of another chunk (:func:`chunk_overlap`)."""

    n_chunks: int
    """Chunks measured (empty ones are not counted)."""
    overlapping: list[int]
    """Positions (in the input) of the chunks at least half of whose text occurs in another chunk."""

    @property
    def share(self) -> float:
        """Share of the chunks that overlap (0 for no chunk)."""
        return len(self.overlapping) / self.n_chunks if self.n_chunks else 0.0


def _word_ids(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every word of every text as an int id (same word, same id) and each text's word count."""
    vocab: dict[str, int] = {}
    ids: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for k, text in enumerate(texts):
        words = text.lower().split()
        lengths[k] = len(words)
        ids.extend(vocab.setdefault(w, len(vocab)) for w in words)
    return np.asarray(ids, dtype=np.uint64), lengths


def chunk_overlap(texts: Sequence[str], window: int = WINDOW, shared: float = SHARED) -> OverlapReport:
    """Which chunks repeat at least ``shared`` of their text in another chunk (module doc)."""
    words, lengths = _word_ids(texts)
    n = len(texts)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if n else np.zeros(0, dtype=np.int64)
    # one hash per run of `window` words (a polynomial over 64-bit ints, wrapping), runs inside one chunk only
    total = len(words)
    if total >= window:
        h = np.zeros(total - window + 1, dtype=np.uint64)
        mult = np.uint64(1099511628211)
        with np.errstate(over="ignore"):
            for j in range(window):
                h = h * mult + (words[j : total - window + 1 + j] + np.uint64(1))
    else:
        h = np.zeros(0, dtype=np.uint64)
    owner_parts, hash_parts = [], []
    for k in range(n):
        m, s = int(lengths[k]), int(starts[k])
        if m == 0:
            continue
        if m >= window:
            runs = np.unique(h[s : s + m - window + 1])
        else:  # a short chunk: its whole text is one run (exact duplicates are caught)
            acc = np.uint64(14695981039346656037)
            with np.errstate(over="ignore"):
                for w in words[s : s + m]:
                    acc = acc * np.uint64(1099511628211) + (w + np.uint64(1))
            runs = np.asarray([acc ^ np.uint64(m)], dtype=np.uint64)
        hash_parts.append(runs)
        owner_parts.append(np.full(len(runs), k, dtype=np.int64))
    if not hash_parts:
        return OverlapReport(0, [])
    hashes, owners = np.concatenate(hash_parts), np.concatenate(owner_parts)
    _, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    repeated = counts[inverse] > 1  # this run of this chunk occurs in another chunk too (runs are unique per chunk)
    per_chunk = np.bincount(owners, minlength=n)
    per_chunk_repeated = np.bincount(owners, weights=repeated, minlength=n)
    measured = per_chunk > 0
    over = measured & (per_chunk_repeated >= shared * np.maximum(per_chunk, 1))
    return OverlapReport(int(measured.sum()), [int(k) for k in np.flatnonzero(over)])


def warn_if_overlapping(
    texts: Sequence[str], who: str, kind: str = "chunk", warn_share: float = WARN_SHARE
) -> OverlapReport:
    """Measure ``texts`` (:func:`chunk_overlap`) and, when at least ``warn_share`` of them overlap, warn once
    (``UserWarning``) naming how many and what share, and what to do. Returns the measure either way."""
    report = chunk_overlap(texts)
    if report.n_chunks >= 2 and report.share >= warn_share:
        k = len(report.overlapping)
        warnings.warn(
            f"{who}: {k} of {report.n_chunks} {kind}s ({report.share:.0%}) repeat at least half of their text in "
            f"another {kind}: the corpus was likely split with a large chunk_overlap (LangChain's "
            "RecursiveCharacterTextSplitter defaults to chunk_overlap=200, as large as a 200-token chunk) or holds "
            f"duplicates. Every {kind} kept costs an extraction call for text already sent: split with "
            "chunk_overlap=0 (or a small one) and remove duplicates.",
            UserWarning,
            stacklevel=3,
        )
    return report
