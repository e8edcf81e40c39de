"""Trickle adds of chunks whose ids sort after every known one grow the stored arrays and csr matrices in place
(g2cons_plugins.engine.trickle_store.appended): each snapshot still equals a fresh build on its chunks after refresh,
and an older snapshot's arrays never change when a later one (or a sibling branch) grows them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.arrays.wide_rows import as_csr, row
from g2cons_plugins.chunks import make_chunks
from g2cons_plugins.engine import trickle_store
from g2cons_plugins.engine.snapshot_updates import refreshed, with_added, with_removed
from g2cons_plugins.engine.trickle_store import appended, spliced, with_spare
from g2cons_plugins.graph import adjacency
from g2cons_plugins.snapshot import Snapshot
from g2cons_plugins.storage.derived_io import differences

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
CFG = G2ConSConfig(theta_co=2, theta_sem=0.1)


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": f"d{i:04d}", "text": f"{r['title']}\n{r['text']}"} for i, r in enumerate(rows[:130])]


def _arrays(snap: Snapshot) -> dict[str, np.ndarray]:
    st, dv = snap.stored, snap.derived
    out = {f: np.array(getattr(st, f)) for f in ("chunk_tokens", "unit_parent", "unit_tokens", "unit_vecs")}
    for name in ("chunk_inc", "unit_inc", "extracted", "unit_names"):
        M = getattr(dv, name)
        out.update({f"{name}.{a}": np.array(getattr(M, a)) for a in ("data", "indices", "indptr")})
    S = st.sent_unit
    out.update({f"sent_unit.{a}": np.array(getattr(S, a)) for a in ("data", "indices", "indptr")})
    return out


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_appends_in_place_keep_every_snapshot_right(docs: list[dict[str, str]]) -> None:
    """base -> first -> third (in place into first's buffers), first -> fourth (a sibling: copies), base ->
    second; a removal after them. Every snapshot's arrays stay as they were, and each refreshes to a fresh build."""
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).snapshot
    first = with_added(base, make_chunks(docs[100:105]), exact=False)
    kept = {"base": _arrays(base), "first": _arrays(first)}
    third = with_added(first, make_chunks(docs[105:110]), exact=False)
    assert np.shares_memory(third.stored.unit_vecs, first.stored.unit_vecs)  # grown in place
    fourth = with_added(first, make_chunks(docs[110:113]), exact=False)
    assert not np.shares_memory(fourth.stored.unit_vecs, third.stored.unit_vecs)
    second = with_added(base, make_chunks(docs[113:116]), exact=False)
    fifth = with_removed(third, [docs[3]["id"], docs[102]["id"]], exact=False)
    _same(_arrays(base), kept["base"])
    _same(_arrays(first), kept["first"])
    cases = (
        (first, docs[:105]),
        (third, docs[:110]),
        (fourth, docs[:105] + docs[110:113]),
        (second, docs[:100] + docs[113:116]),
        (fifth, [d for d in docs[:110] if d["id"] not in (docs[3]["id"], docs[102]["id"])]),
    )
    for snap, rows in cases:
        dv = snap.derived
        assert (adjacency(dv.edges, len(dv.vocab)) != dv.A).nnz == 0
        for W, M in ((dv.unit_concepts, dv.unit_inc), (dv.name_units, dv.unit_names)):
            T = as_csr(W)
            assert T.shape == M.T.shape and (M.T.tocsr() != T).nnz == 0 and T.has_sorted_indices
            for i in range(T.shape[0]):
                np.testing.assert_array_equal(row(W, i), T.indices[T.indptr[i] : T.indptr[i + 1]])
            np.testing.assert_array_equal(T.indptr, M.T.tocsr().indptr)
        fresh = G2ConSIndex.build(rows, embedder="hash", config=CFG)
        r = refreshed(snap)
        assert differences(r.derived, fresh.derived) == []
        np.testing.assert_array_equal(snap.stored.unit_vecs, fresh.stored.unit_vecs)
        st = snap.stored
        by_unit = st.sent_unit.T.tocsr()  # each unit's sentence rows are its sentences
        for j, u in enumerate(st.units):
            assert {st.sentences[i] for i in by_unit[j].indices} == set(u.sentences)
        assert st.sent_unit.has_sorted_indices and st.sent_unit.shape == (len(st.sentences), len(st.units))
        assert [u.id for u in snap.stored.units] == [u.id for u in fresh.stored.units]


def test_appended_copies_unless_it_holds_every_row() -> None:
    """In place only from the view holding every row in use; 2-D rows too; the result is read-only."""
    a = appended(np.arange(3.0), [3.0])
    b = appended(a, [4.0, 5.0])
    assert np.shares_memory(a, b) and not b.flags.writeable
    c = appended(a, [9.0])  # a sibling of b: a copy, b unchanged
    assert not np.shares_memory(c, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(c, [0, 1, 2, 3, 9])
    m = appended(np.zeros((2, 3), np.float32), np.ones((1, 3)))
    assert m.shape == (3, 3) and m.dtype == np.float32 and m[2].sum() == 3


def test_with_spare_makes_the_first_append_in_place() -> None:
    """An array given spare rows grows in place at the first append; one already with them is not copied."""
    a = with_spare(np.arange(6, dtype=np.int64).reshape(3, 2))
    assert with_spare(a).base is a.base and not a.flags.writeable
    b = appended(a, [[6, 7]])
    assert np.shares_memory(a, b)
    np.testing.assert_array_equal(b, np.arange(8).reshape(4, 2))


@pytest.mark.parametrize("n_points", [0, 1, 7, 300])
def test_spliced_equals_np_insert(n_points: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The slice-copy insertion equals np.insert (ascending points, repeats, both ends), and so does its fallback."""
    rng = np.random.default_rng(n_points)
    a = rng.integers(0, 1000, 500).astype(np.int32)
    where = np.sort(np.concatenate([rng.integers(0, len(a) + 1, n_points), [0, len(a)][: min(n_points, 2)]]))
    where = where.astype(np.int64)
    values = rng.integers(0, 1000, len(where))
    want = np.insert(a, where, values.astype(a.dtype))
    got = spliced(a, where, values)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, want)
    monkeypatch.setattr(trickle_store, "SLICED_MAX", 0)
    np.testing.assert_array_equal(spliced(a, where, values), want)
