"""A loaded index unmaps the file pages its load checks read (storage.memory.drop_mapped_pages) and still answers
the same; an update gives the freed heap back (storage.memory.release_free_memory)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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


def test_updates_give_freed_memory_back(corpus: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A trickle update returns the freed heap pages (malloc_trim) before the unit index is updated; a removal
    also before it starts and once the edge merge is done (its peak holds a second copy of most derived arrays);
    remove and refresh return them again once the new snapshot replaced the old one, so the replaced snapshot's
    arrays are given back, not kept by the process."""
    import g2cons_plugins.engine.snapshot_updates as snapshot_mod
    import g2cons_plugins.engine.update as update_mod
    import g2cons_plugins.index as index_mod

    idx = G2ConSIndex.build(corpus, embedder="hash")
    seen: list[tuple[str, object]] = []
    monkeypatch.setattr(index_mod, "release_free_memory", lambda: seen.append(("swap", idx.snapshot)) or True)
    monkeypatch.setattr(snapshot_mod, "release_free_memory", lambda: seen.append(("update", None)) or True)
    monkeypatch.setattr(update_mod, "release_free_memory", lambda: seen.append(("edges", None)) or True)
    before = idx.snapshot
    idx.add([{"id": "zz-new", "text": "A new passage about the film's director and its studio."}], exact=False)
    assert [w for w, _ in seen] == ["update"]
    idx.remove(["zz-new"], exact=False)
    assert [w for w, _ in seen] == ["update", "update", "edges", "update", "swap"]
    assert seen[-1][1] is idx.snapshot and seen[-1][1] is not before  # after the swap
    idx.refresh()
    assert seen[-1] == ("swap", idx.snapshot)


def test_the_pages_of_a_loaded_index_texts_are_dropped_too(corpus: list[dict[str, str]], tmp_path: Path) -> None:
    """drop_mapped_pages follows a loaded index's chunk and unit tables down to their mapped text columns
    (arrays.tables.column_arrays); the texts read back the same."""
    from g2cons_plugins.arrays.mapped import is_file_backed
    from g2cons_plugins.arrays.tables import column_arrays

    idx = G2ConSIndex.build(corpus, embedder="hash")
    idx.save(tmp_path / "i")
    loaded = G2ConSIndex.load(tmp_path / "i")
    st = loaded.stored
    texts = [c.text for c in st.chunks]
    arrays = list(column_arrays(st.chunks)) + list(column_arrays(st.units))
    assert any(is_file_backed(a) for a in arrays)
    assert list(column_arrays(["a", "list", "of", "texts"])) == []
    assert drop_mapped_pages([st.chunks, st.units, st.sentences]) >= 1
    assert [c.text for c in st.chunks] == texts == [c.text for c in idx.stored.chunks]
    assert [u.text for u in st.units] == [u.text for u in idx.stored.units]
