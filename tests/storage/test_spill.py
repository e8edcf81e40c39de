"""A removal's kept rows of a file-backed array (g2cons_plugins.storage.spill): equal to ``a[keep]``, read-only,
file-backed where the source is, nothing left in the temporary directory, in memory otherwise; a loaded index that
removes chunks by trickle keeps its unit vectors file-backed and still refreshes to exactly a fresh build."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.arrays.mapped import is_file_backed
from g2cons_plugins.storage import spill
from g2cons_plugins.storage.derived_io import differences

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every array spills (no size floor), into a temporary directory of its own."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    monkeypatch.setattr(spill, "SPILL_MIN_BYTES", 0)
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: False)  # whatever this machine's /tmp is
    return d


def _mapped(tmp_path: Path, a: np.ndarray) -> np.ndarray:
    f = tmp_path / "a.npy"
    np.save(f, a)
    return np.load(f, mmap_mode="r")


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=300),
    st.sampled_from([(), (3,), (2, 5)]),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.sampled_from([1, 7, 4096]),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_kept_rows_equal_the_mask_and_leave_no_file(
    n: int, tail: tuple[int, ...], seed: int, block: int, share: float
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, *tail)).astype(np.float32)
    keep = rng.random(n) < share
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        scratch = Path(tmp) / "spill"
        scratch.mkdir()
        mp.setattr(tempfile, "tempdir", str(scratch))
        mp.setattr(spill, "SPILL_MIN_BYTES", 0)
        mp.setattr(spill, "in_memory_fs", lambda path: False)
        mp.setattr(spill, "_BLOCK_BYTES", block)  # blocks of one row up to every row at once
        got = spill.kept_rows(_mapped(Path(tmp), a), keep)
        assert got.shape == a[keep].shape and got.dtype == a.dtype
        np.testing.assert_array_equal(got, a[keep])
        assert not got.flags.writeable and got.flags.c_contiguous
        assert is_file_backed(got) == bool(keep.any())  # no rows kept: an empty array, no file
        assert list(scratch.iterdir()) == []  # unlinked at once: nothing left behind
        del got


def test_arrays_in_memory_small_ones_and_a_full_disk_are_copied(
    scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.arange(40, dtype=np.float64).reshape(20, 2)
    keep = np.arange(20) % 3 != 0
    for src in (a, a[::1]):  # anonymous memory: never spilled
        got = spill.kept_rows(src, keep)
        np.testing.assert_array_equal(got, a[keep])
        assert not is_file_backed(got) and not got.flags.writeable
    mapped = _mapped(tmp_path, a)
    monkeypatch.setattr(spill, "SPILL_MIN_BYTES", a.nbytes + 1)  # below the floor
    assert not is_file_backed(spill.kept_rows(mapped, keep))
    monkeypatch.setattr(spill, "SPILL_MIN_BYTES", 0)
    assert is_file_backed(spill.kept_rows(mapped, keep))
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: True)  # a tmpfs: the file would be memory too
    assert not is_file_backed(spill.kept_rows(mapped, keep))
    monkeypatch.setattr(spill, "in_memory_fs", lambda path: False)

    def full(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    got = spill.kept_rows(mapped, keep)  # no room: in memory, as for any other array
    np.testing.assert_array_equal(got, a[keep])
    assert not is_file_backed(got)
    with pytest.raises(ValueError, match="keep has 3 items for 20 rows"):
        spill.kept_rows(mapped, keep[:3])
    assert list(scratch.iterdir()) == []


def test_a_loaded_index_removes_by_trickle_with_file_backed_vectors(
    scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from g2cons_plugins.engine import update as upd

    monkeypatch.setattr(upd, "MIN_CHUNKS", 50)
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows[:110]]
    cfg = G2ConSConfig(theta_co=2, theta_sem=0.1)
    G2ConSIndex.build(docs[:100], embedder="hash", config=cfg).save(tmp_path / "ix")
    idx = G2ConSIndex.load(tmp_path / "ix")
    assert is_file_backed(idx.stored.unit_vecs)
    idx.remove([docs[3]["id"]], exact=False)
    assert not idx.refreshed  # the trickle path, the one that spills
    vecs = idx.stored.unit_vecs
    assert is_file_backed(vecs) and not vecs.flags.writeable
    kept = [d for d in docs[:100] if d["id"] != docs[3]["id"]]
    fresh = G2ConSIndex.build(kept, embedder="hash", config=cfg)
    np.testing.assert_array_equal(vecs, fresh.stored.unit_vecs)
    idx.add(docs[100:102], exact=False)  # grows the spilled array (a copy: it has no file name)
    idx.refresh()
    fresh = G2ConSIndex.build(kept + docs[100:102], embedder="hash", config=cfg)
    np.testing.assert_array_equal(idx.stored.unit_vecs, fresh.stored.unit_vecs)
    assert differences(idx.derived, fresh.derived) == []
    idx.save(tmp_path / "ix")  # the index it was loaded from, replaced by a save of the spilled state
    again = G2ConSIndex.load(tmp_path / "ix", verify=True)
    np.testing.assert_array_equal(again.stored.unit_vecs, fresh.stored.unit_vecs)
    del idx, vecs
    assert list(scratch.iterdir()) == []


def test_memory_file_systems_are_told_by_the_longest_mount_point(tmp_path: Path) -> None:
    table = tmp_path / "mounts"
    table.write_text(
        "/dev/vda / ext4 rw 0 0\n"
        "tmpfs /tmp tmpfs rw 0 0\n"
        "/dev/vdb /tmp/disk\\040here ext4 rw 0 0\n"
        "none /run/r ramfs rw 0 0\n"
        "short\n",
        encoding="utf-8",
    )
    got = {p: spill.in_memory_fs(p, str(table)) for p in ("/", "/home/x", "/tmp", "/tmp/a/b", "/tmp/disk here/f",
                                                              "/tmp/disky", "/run/r/q", "/run/rr")}
    assert got == {"/": False, "/home/x": False, "/tmp": True, "/tmp/a/b": True, "/tmp/disk here/f": False,
                   "/tmp/disky": True, "/run/r/q": True, "/run/rr": False}
    assert spill.in_memory_fs("/tmp", str(tmp_path / "no-such-table")) is False  # no table (not Linux): a disk
