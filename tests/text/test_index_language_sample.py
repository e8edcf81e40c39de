"""The index's language is taken from a strided sample of its chunks, reading only the sampled ones."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from g2cons_plugins.chunks import Chunk
from g2cons_plugins.text.language import SAMPLE, corpus_language, index_language, sampled_texts


class _Counting:
    """Chunks that count which of them were read."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks, self.read = chunks, set()  # type: ignore[var-annotated]

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> Chunk:
        self.read.add(i)
        return self.chunks[i]

    def __iter__(self) -> Any:
        raise AssertionError("every chunk was read")


@pytest.mark.parametrize("n", [1, 255, 256, 257, 511, 700, 2_600])
def test_the_sample_is_the_one_over_all_texts(n: int) -> None:
    texts = [("Le chat dort sur le lit." if i % 3 else "The cat sleeps on the bed.") + f" {i}" for i in range(n)]
    chunks = [Chunk(id=str(i), text=t) for i, t in enumerate(texts)]
    got = sampled_texts(chunks)
    assert corpus_language(got) == corpus_language(texts)
    assert len(got) < 2 * SAMPLE


def test_index_language_reads_only_the_sampled_chunks() -> None:
    chunks = _Counting([Chunk(id=str(i), text=f"The river runs past the old mill number {i}.") for i in range(5_000)])
    memo: dict[str, Any] = {}
    snap = SimpleNamespace(
        stored=SimpleNamespace(chunks=chunks), memo=lambda k, make: memo[k] if k in memo else memo.setdefault(k, make())
    )
    assert index_language(snap) == "en"
    assert 0 < len(chunks.read) < 2 * SAMPLE
