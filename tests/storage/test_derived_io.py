"""The derived state round-trips without pickle and is checked on read (issue 12 item 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.storage.derived_io import read_derived, write_derived


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(theta_co=2))


def test_round_trip_equals(index: G2ConSIndex, tmp_path: Path) -> None:
    write_derived(tmp_path, index.derived, index.config)
    dv, want = read_derived(tmp_path, index.stored, index.embedder.dim, index.config), index.derived
    assert dv.vocab == want.vocab and dv.names == want.names and dv.terms.words == want.terms.words
    for name in ("extracted", "sent_inc", "unit_inc", "chunk_inc", "A", "unit_names", "unit_concepts"):
        assert (getattr(dv, name) != getattr(want, name)).nnz == 0, name
    for name in ("concept_vecs", "pagerank", "df", "name_share", "name_df", "sentence_counts"):
        np.testing.assert_array_equal(getattr(dv, name), getattr(want, name))
    np.testing.assert_array_equal(dv.edges.dice, want.edges.dice)
    assert dv.stats == want.stats


def test_equal_state_gives_equal_bytes(index: G2ConSIndex, tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        write_derived(tmp_path / d, index.derived, index.config)
    for f in ("derived.npz", "derived.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_corruption_names_file_and_field(index: G2ConSIndex, tmp_path: Path) -> None:
    write_derived(tmp_path, index.derived, index.config)
    arrays = dict(np.load(tmp_path / "derived.npz", allow_pickle=False))
    arrays["pagerank"] = np.full_like(arrays["pagerank"], np.nan)
    (tmp_path / "derived.npz").unlink()
    np.savez(tmp_path / "derived.npz", **arrays)
    with pytest.raises(PersistError, match="pagerank"):
        read_derived(tmp_path, index.stored, index.embedder.dim, index.config)
    arrays["pagerank"] = index.derived.pagerank
    arrays["A.indices"] = arrays["A.indices"] + 10**6
    (tmp_path / "derived.npz").unlink()
    np.savez(tmp_path / "derived.npz", **arrays)
    with pytest.raises(PersistError, match="'A'"):
        read_derived(tmp_path, index.stored, index.embedder.dim, index.config)
    with pytest.raises(PersistError, match="another config"):
        read_derived(tmp_path, index.stored, index.embedder.dim, index.config.with_(theta_co=7))
    (tmp_path / "derived.json").write_text("[1, 2", encoding="utf-8")
    with pytest.raises(PersistError, match="derived.json"):
        read_derived(tmp_path, index.stored, index.embedder.dim, index.config)


def test_transposes_are_saved_mapped_and_checked(index: G2ConSIndex, tmp_path: Path) -> None:
    """The units' concept lists and the names' unit lists are read from the file (not rebuilt in memory), checked
    equal to the transposes; a save without them (older versions) still reads."""
    import json

    write_derived(tmp_path, index.derived, index.config)
    dv = read_derived(tmp_path, index.stored, index.embedder.dim, index.config)
    for name, of in (("unit_concepts", "unit_inc"), ("name_units", "unit_names")):
        assert (getattr(dv, name) != getattr(dv, of).T).nnz == 0
        base = getattr(dv, name).indices
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(base, memoryview), f"{name} was copied, not mapped"
    arrays = dict(np.load(tmp_path / "derived.npz", allow_pickle=False))
    flipped = arrays["unit_concepts.indices"].copy()
    row = np.flatnonzero(np.diff(arrays["unit_concepts.indptr"]) >= 2)[0]
    lo = arrays["unit_concepts.indptr"][row]
    flipped[lo] = next(u for u in range(index.stored.unit_parent.size) if u not in set(flipped[lo : lo + 2]))
    flipped[lo : arrays["unit_concepts.indptr"][row + 1]].sort()
    (tmp_path / "derived.npz").unlink()
    np.savez(tmp_path / "derived.npz", **{**arrays, "unit_concepts.indices": flipped})
    with pytest.raises(PersistError, match="unit_concepts"):
        read_derived(tmp_path, index.stored, index.embedder.dim, index.config)
    meta = json.loads((tmp_path / "derived.json").read_text(encoding="utf-8"))
    for name in ("unit_concepts", "name_units"):
        del meta["shapes"][name]
    (tmp_path / "derived.json").write_text(json.dumps(meta), encoding="utf-8")
    old = read_derived(tmp_path, index.stored, index.embedder.dim, index.config)
    assert (old.unit_concepts != index.derived.unit_concepts).nnz == 0
