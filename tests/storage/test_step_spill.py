"""A derive's step results moved to files (g2cons_plugins.storage.step_spill, spill.to_file): the same values,
dtypes and shapes, read-only and file-backed above the size floor, nothing left in the temporary directory, in
memory below the floor, on a tmpfs or when no file can be written; the pages read are unmapped at the next call."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins.arrays.mapped import is_file_backed
from g2cons_plugins.arrays.ones import is_shared_ones
from g2cons_plugins.graph import EdgeSet, NearPairs
from g2cons_plugins.storage import spill, step_spill
from g2cons_plugins.storage.step_spill import SpillSteps


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of its own, on a disk whatever this machine's /tmp is."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: False)
    return d


@pytest.mark.parametrize("shape", [(1,), (7,), (1000,), (3, 5), (200, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.float64, bool])
def test_to_file_keeps_values_dtype_shape_and_leaves_no_file(
    scratch: Path, monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...], dtype: type
) -> None:
    monkeypatch.setattr(spill, "_BLOCK_BYTES", 40)  # many blocks, a partial last one
    a = (np.random.default_rng(0).random(shape) * 100).astype(dtype)
    for src in (a, a.T if a.ndim > 1 else a[::-1]):  # a strided source too
        got = spill.to_file(src)
        assert got is not src and is_file_backed(got) and not got.flags.writeable
        assert got.dtype == src.dtype and got.shape == src.shape
        np.testing.assert_array_equal(got, src)
    assert list(scratch.iterdir()) == []


def test_to_file_leaves_the_array_on_a_tmpfs_or_a_full_disk(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = np.arange(100.0)
    assert spill.to_file(np.zeros(0)).size == 0
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: True)  # a tmpfs: the file would be memory too
    assert spill.to_file(a) is a
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: False)

    def full(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    assert spill.to_file(a) is a


def test_a_write_that_fails_halfway_leaves_the_array_and_no_file(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.arange(10_000, dtype=np.int64)
    monkeypatch.setattr(spill, "_BLOCK_BYTES", 8 * 1000)
    calls = []

    def blocks_then_full(block: np.ndarray) -> np.ndarray:
        calls.append(1)
        if len(calls) > 3:
            raise OSError(28, "No space left on device")
        return np.ascontiguousarray(block)

    monkeypatch.setattr(spill.np, "ascontiguousarray", blocks_then_full)
    assert spill.to_file(a) is a
    assert len(calls) == 4 and list(scratch.iterdir()) == []


def _edges(n: int) -> EdgeSet:
    rng = np.random.default_rng(1)
    r = np.arange(n, dtype=np.int32)
    near = NearPairs(r, r + 1, r, rng.random(n).astype(np.float32), 0.05)
    return EdgeSet(r, r + 1, r.copy(), rng.random(n).astype(np.float32), rng.random(n).astype(np.float32), 0.5, n, near)


def test_spill_steps_follows_matrices_and_dataclasses(scratch: Path) -> None:
    keep = SpillSteps(min_bytes=0)
    ones = sp.random(50, 40, density=0.2, format="csr", random_state=0, dtype=np.float32)
    ones.data[:] = 1.0
    weights = sp.random(50, 40, density=0.2, format="csr", random_state=1)
    weights.sort_indices()
    edges = _edges(300)
    got_ones, got_weights, got_edges = keep("a", ones), keep("b", weights), keep("c", edges)
    # a 0/1 matrix's data goes to a file too: as the shared ones (what freeze makes) it would stay in memory
    assert all(is_file_backed(getattr(got_ones, k)) for k in ("data", "indices", "indptr"))
    assert not is_shared_ones(got_ones.data)
    assert all(is_file_backed(getattr(got_weights, k)) for k in ("data", "indices", "indptr"))
    assert got_weights.has_sorted_indices and got_weights.indices.dtype == weights.indices.dtype
    assert (got_weights != weights).nnz == 0 and (got_ones != ones).nnz == 0
    assert type(got_edges) is EdgeSet and got_edges.theta_sem == 0.5 and got_edges.n_candidates == 300
    for name in ("rows", "cols", "co", "cosine", "dice"):
        assert is_file_backed(getattr(got_edges, name))
        np.testing.assert_array_equal(getattr(got_edges, name), getattr(edges, name))
    assert is_file_backed(got_edges.near.cosine) and got_edges.near.margin == 0.05
    assert keep("d", got_edges) is got_edges  # already in files: nothing written again
    assert keep("e", [1, 2]) == [1, 2] and keep("f", "x") == "x"
    assert len(keep.spilled) == 3 + 3 + 9  # the 0/1 matrix's data too
    assert list(scratch.iterdir()) == []


def test_small_arrays_stay_in_memory_by_default(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below SPILL_STEP_MIN_BYTES (16 MB) nothing goes to a file: a small index is built as before."""
    a = np.zeros(1000)
    assert SpillSteps()("x", a) is a
    monkeypatch.setattr(step_spill, "SPILL_STEP_MIN_BYTES", a.nbytes)
    assert is_file_backed(SpillSteps()("x", a))
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: True)  # a tmpfs: in memory
    keep = SpillSteps()
    assert keep("x", a) is a and keep.spilled == []


def test_each_call_unmaps_what_the_steps_read_and_gives_the_heap_back(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dropped: list[int] = []
    released: list[bool] = []
    monkeypatch.setattr(step_spill, "drop_mapped_pages", lambda arrays: dropped.append(len(list(arrays))) or 0)
    monkeypatch.setattr(step_spill, "release_free_memory", lambda: released.append(True) or True)
    keep = SpillSteps(min_bytes=0)
    keep("a", np.arange(10.0))
    keep("b", np.arange(5))
    keep("c", "nothing")
    keep("d", "nothing")
    assert dropped == [0, 1, 2, 2]
    assert released == [True, True]  # after a call that spilled: the caller has let the in-memory array go since


def test_each_call_unmaps_the_pages_read_of_the_derives_mapped_inputs(
    scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SpillSteps(stored)``: the file-mapped arrays of the state the derive reads (a loaded index's unit vectors)
    are unmapped at each call as well; arrays in memory are not followed."""
    from dataclasses import dataclass

    np.save(tmp_path / "v.npy", np.ones((64, 4), np.float32))
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    matrix = sp.csr_matrix(np.eye(4, dtype=np.float32))

    @dataclass(frozen=True)
    class State:
        vecs: np.ndarray
        inc: sp.csr_matrix
        small: np.ndarray

    seen: list[list[object]] = []
    monkeypatch.setattr(step_spill, "drop_mapped_pages", lambda arrays: seen.append(list(arrays)) or 0)
    keep = SpillSteps(State(mapped, matrix, np.zeros(3)))
    keep("a", "nothing")
    keep("b", "nothing")
    assert [[id(a) for a in s] for s in seen] == [[id(mapped)], [id(mapped)]]


def test_a_kept_array_that_is_a_file_map_already_is_not_written_and_its_pages_are_unmapped(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh keeps term counts shared with the state it refreshes (file maps already): not written again, and
    at the next step the pages read of them are unmapped like those of the spilled arrays."""
    from g2cons_plugins.storage import step_spill

    shared = spill.to_file(np.arange(50_000, dtype=np.float64))
    assert is_file_backed(shared)
    seen: list[list[np.ndarray]] = []
    monkeypatch.setattr(step_spill, "drop_mapped_pages", lambda arrays: seen.append(list(arrays)) or 0)
    keep = SpillSteps(min_bytes=0)
    assert keep("terms", shared) is shared and keep.spilled == []
    own = keep("concepts", np.arange(1000, dtype=np.int64))
    assert is_file_backed(own) and len(keep.spilled) == 1
    keep("incidences", np.arange(10))
    assert any(a is shared for a in seen[-1]) and any(a is own for a in seen[-1])
