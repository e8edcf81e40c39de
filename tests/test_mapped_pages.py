"""A loaded index unmaps the file pages its load checks read (storage.memory.drop_mapped_pages) and still answers
the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.storage.memory import drop_mapped_pages


def test_dropped_pages_read_back_the_same(corpus: list[dict[str, str]], tmp_path: Path) -> None:
    idx = G2ConSIndex.build(corpus, embedder="hash")
    idx.save(tmp_path / "i")
    loaded = G2ConSIndex.load(tmp_path / "i")
    before = [(r.unit_id, r.score) for r in loaded.retrieve("Who directed the film?")]
    A = loaded.derived.A
    arrays = [A, loaded.stored.unit_vecs, loaded.derived.unit_concepts, loaded.derived.edges.dice]
    assert drop_mapped_pages(arrays) >= 2  # derived.npz and unit_vectors.npy are maps
    assert drop_mapped_pages([np.zeros(3), "not an array"]) == 0
    np.testing.assert_array_equal(A.toarray(), idx.derived.A.toarray())
    np.testing.assert_array_equal(loaded.stored.unit_vecs, idx.stored.unit_vecs)
    assert [(r.unit_id, r.score) for r in loaded.retrieve("Who directed the film?")] == before
