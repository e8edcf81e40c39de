"""Arrays viewing an index file grow without a copy (g2cons_plugins.storage.growable): the grown buffer reads the
file's bytes, writes never reach the file or the views of it, its file pages can be unmapped without losing a row,
a replaced file is never mapped, and a loaded index trickle-added this way equals the same adds on the built
index."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.arrays.wide_rows import as_csr
from g2cons_plugins.engine.trickle_store import appended
from g2cons_plugins.storage.growable import growable
from g2cons_plugins.storage.memory import drop_mapped_pages
from g2cons_plugins.storage.npz_view import NpzView

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="growable maps are Linux only")
EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
CFG = G2ConSConfig(theta_co=2, theta_sem=0.1)


def _npz(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    a = np.arange(3000 * 7, dtype=np.float32).reshape(3000, 7)
    b = np.arange(12345, dtype=np.int32)
    np.savez(tmp_path / "x.npz", a=a, b=b)
    return tmp_path / "x.npz", a, b


@linux
def test_growable_reads_the_file_and_writes_nowhere_else(tmp_path: Path) -> None:
    path, a, b = _npz(tmp_path)
    before = path.read_bytes()
    view = NpzView(path)
    va, vb = view["a"], view["b"]
    g = growable(va, 4000)
    assert g is not None and g.shape == (4000, 7) and g.flags.writeable
    np.testing.assert_array_equal(g[:3000], a)
    g[:] = -1.0  # every row, the file's too: private pages
    np.testing.assert_array_equal(va, a)
    np.testing.assert_array_equal(vb, b)
    assert path.read_bytes() == before
    h = growable(vb[100:], len(vb))  # a view that starts inside the file
    assert h is not None
    np.testing.assert_array_equal(h[: len(vb) - 100], b[100:])


@linux
def test_appended_grows_a_loaded_array_in_place(tmp_path: Path) -> None:
    path, a, b = _npz(tmp_path)
    va = NpzView(path)["a"]
    x = appended(va, np.ones((2, 7), np.float32))
    y = appended(x, np.full((1, 7), 2.0, np.float32))  # in x's buffer: x holds every row
    assert y.base is x.base and not y.base.flags.owndata  # the file-backed buffer, not a copy
    np.testing.assert_array_equal(y[:3000], a)
    np.testing.assert_array_equal(y[3000:], [[1.0] * 7, [1.0] * 7, [2.0] * 7])
    np.testing.assert_array_equal(x[3000:], np.ones((2, 7)))  # the older snapshot's rows did not change
    m = np.load(_saved_npy(tmp_path, b), mmap_mode="r")  # a np.memmap, as unit vectors are loaded
    z = appended(m, np.array([7], np.int32))
    assert not z.base.flags.owndata
    np.testing.assert_array_equal(z, np.append(b, 7))


def _saved_npy(tmp_path: Path, b: np.ndarray) -> Path:
    np.save(tmp_path / "b.npy", b)
    return tmp_path / "b.npy"


def _rss_file_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))


@linux
def test_dropped_file_pages_of_a_grown_array_read_back_the_same(tmp_path: Path) -> None:
    """drop_mapped_pages unmaps the file pages of a grown loaded array (its resident file memory falls) but not the
    page where appended rows start: every row, the file's and the appended ones, reads back the same."""
    big = np.random.default_rng(0).random((100_003, 7)).astype(np.float32)  # 2.8 MB, not a whole number of pages
    np.savez(tmp_path / "big.npz", a=big)
    va = NpzView(tmp_path / "big.npz")["a"]
    y = appended(va, np.full((3, 7), 5.0, np.float32))  # the first appended rows share the file's last page
    assert y.base is not None and not y.base.flags.owndata
    assert float(y.sum()) > 0  # every page read: resident
    before = _rss_file_kb()
    assert drop_mapped_pages([y]) == 1
    assert before - _rss_file_kb() >= 2_000  # KB: most of the 2.8 MB of file pages
    np.testing.assert_array_equal(y[: len(big)], big)
    np.testing.assert_array_equal(y[len(big) :], np.full((3, 7), 5.0))
    assert drop_mapped_pages([np.arange(3), np.ones((2, 2))[1:]]) == 0  # arrays of plain memory: nothing


@linux
def test_a_replaced_file_is_copied_not_mapped(tmp_path: Path) -> None:
    path, a, _ = _npz(tmp_path)
    va = NpzView(path)["a"]
    other = tmp_path / "y.npz"
    np.savez(other, a=a + 1, b=np.zeros(3))
    os.replace(other, path)  # the same path, another file
    assert growable(va, 4000) is None
    x = appended(va, np.ones((1, 7), np.float32))  # the copy, as before
    assert x.base.flags.owndata
    np.testing.assert_array_equal(x[:3000], a)


def test_non_file_arrays_are_not_growable() -> None:
    assert growable(np.arange(10), 20) is None


def test_adds_to_a_loaded_index_equal_adds_to_the_built_one(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [{"id": f"d{i:04d}", "text": f"{r['title']}\n{r['text']}"} for i, r in enumerate(rows[:120])]
    built = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    built.save(tmp_path / "i")
    n_saved = len(built.units)
    loaded = G2ConSIndex.load(tmp_path / "i")
    for idx in (built, loaded):
        idx.add(docs[100:105], exact=False)
        idx.add(docs[105:120], exact=False)
    a, b = built.snapshot, loaded.snapshot
    np.testing.assert_array_equal(a.stored.unit_vecs, b.stored.unit_vecs)
    np.testing.assert_array_equal(a.stored.unit_tokens, b.stored.unit_tokens)
    for name in ("chunk_inc", "unit_inc", "extracted", "unit_names", "unit_concepts"):
        assert (as_csr(getattr(a.derived, name)) != as_csr(getattr(b.derived, name))).nnz == 0, name
    np.testing.assert_array_equal(a.derived.pagerank, b.derived.pagerank)
    q = "Who founded the company?"
    assert [r.unit_id for r in built.retrieve(q)] == [r.unit_id for r in loaded.retrieve(q)]
    again = G2ConSIndex.load(tmp_path / "i")  # the files are as saved
    assert again.snapshot.stored.unit_vecs.shape[0] == n_saved
    np.testing.assert_array_equal(again.snapshot.stored.unit_vecs, a.stored.unit_vecs[:n_saved])
    for idx in (built, loaded):  # a removal unmaps the grown arrays' file pages as it copies them
        idx.remove([d["id"] for d in docs[10:14]] + ["d0102"], exact=False)
    a, b = built.snapshot, loaded.snapshot
    np.testing.assert_array_equal(a.stored.unit_vecs, b.stored.unit_vecs)
    for name in ("chunk_inc", "unit_inc", "unit_concepts"):
        assert (as_csr(getattr(a.derived, name)) != as_csr(getattr(b.derived, name))).nnz == 0, name
    np.testing.assert_array_equal(a.derived.concept_vecs, b.derived.concept_vecs)
    np.testing.assert_array_equal(a.derived.pagerank, b.derived.pagerank)
    assert [r.unit_id for r in built.retrieve(q)] == [r.unit_id for r in loaded.retrieve(q)]
