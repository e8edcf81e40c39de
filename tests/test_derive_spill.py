"""A derive whose step results go to files (storage.step_spill.SpillSteps as its ``keep`` hook, the size floor
forced to 0) gives the same derived state bit for bit on real passages: the build's stored digests hold, its
arrays are file-backed and read-only, nothing is left in the temporary directory, a save of it loads equal, and a
trickle add then ``refresh()`` (the derive over the updated state) spills too and equals a fresh derive."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from test_build_speed import EXPECTED, _feed, _passages, index_digest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.arrays.mapped import is_file_backed
from g2cons_plugins.build import Derived, derive
from g2cons_plugins.storage import spill, step_spill
from g2cons_plugins.storage.memory import state_arrays
from g2cons_plugins.storage.step_spill import SpillSteps


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every array of a derive spills (no size floor), into a temporary directory of its own on a disk."""
    d = tmp_path_factory.mktemp("spill")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(d))
        mp.setattr(spill, "in_memory_fs", lambda path: False)
        mp.setattr(step_spill, "SPILL_STEP_MIN_BYTES", 0)
        yield d


@pytest.fixture(scope="module")
def spilled(scratch: Path) -> G2ConSIndex:
    return G2ConSIndex.build(_passages(), embedder="hash", config=G2ConSConfig())


def _parts(dv: Derived) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for v in state_arrays(dv):
        if sp.issparse(v):
            out += [v.data, v.indices, v.indptr]
        elif hasattr(v, "base") and hasattr(v, "tail"):  # wide rows
            out += [v.base.indices, v.tail.indices]
        elif isinstance(v, np.ndarray):
            out.append(v)
    return out


def _digests(dv: Derived) -> dict[str, str]:
    out = {}
    for name in dv.__dataclass_fields__:
        h = hashlib.sha256()
        _feed(h, getattr(dv, name))
        out[name] = h.hexdigest()
    return out


def test_a_spilled_build_is_the_same_index_with_file_backed_read_only_arrays(
    spilled: G2ConSIndex, scratch: Path
) -> None:
    assert index_digest(spilled) == EXPECTED
    parts = _parts(spilled.derived)
    backed = [a for a in parts if is_file_backed(a)]
    assert len(backed) >= 20  # incidences, vectors, edges, adjacency, names, transposes, term counts
    assert is_file_backed(spilled.derived.concept_vecs) and is_file_backed(spilled.derived.A.data)
    assert all(not a.flags.writeable for a in parts)
    assert list(scratch.iterdir()) == []  # unlinked at once


def test_derive_with_the_spilling_hook_equals_the_plain_derive(spilled: G2ConSIndex, scratch: Path) -> None:
    st, config = spilled.snapshot.stored, spilled.config
    names: list[str] = []
    inner = SpillSteps(min_bytes=0)

    file_blocks = 0

    def keep(step: str, value: Any) -> Any:
        nonlocal file_blocks
        names.append(step)
        out = inner(step, value)
        if step == "edges.block":  # a candidate block, held by the edge step until its threshold is known
            made = [value.row, value.col, value.co, value.cos]
            held = [out.row, out.col, out.co, out.cos]
            assert not any(is_file_backed(a) for a in made)
            file_blocks += all(is_file_backed(a) for a in held if a.size)
        return out

    got = derive(st, config, keep=keep)
    steps = [n for n in names if n != "edges.block"]
    assert steps == [
        "terms",
        "concepts",
        "incidences",
        "vectors",
        "edges",
        "adjacency",
        "names",
        "unit_concepts",
        "name_units",
        "derived",
    ]
    assert file_blocks == names.count("edges.block") >= 1  # each block held in files, between vectors and edges
    assert names[names.index("vectors") + 1] == "edges.block" and names[names.index("edges") - 1] == "edges.block"
    assert len(inner.spilled) >= 20
    want = derive(st, config)
    assert not any(is_file_backed(a) for a in _parts(want))  # no hook: all in memory, as before
    assert _digests(got) == _digests(want)
    assert got.stats == want.stats


def test_a_saved_spilled_build_loads_equal(spilled: G2ConSIndex, scratch: Path, tmp_path: Path) -> None:
    spilled.save(tmp_path / "ix")
    loaded = G2ConSIndex.load(tmp_path / "ix", verify=True)  # verify: a (spilled) derive of the loaded state
    assert index_digest(loaded) == EXPECTED


def test_a_refresh_spills_and_equals_a_fresh_derive(
    spilled: G2ConSIndex, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from g2cons_plugins.engine import update as upd

    monkeypatch.setattr(upd, "MIN_CHUNKS", 50)
    rows = _passages()
    index = G2ConSIndex.build(rows[:-4], embedder="hash", config=G2ConSConfig())
    index.add(rows[-4:], exact=False)
    assert not index.refreshed  # a trickle add: the refresh derives again
    index.refresh()
    assert index_digest(index) == EXPECTED
    assert is_file_backed(index.derived.A.data) and is_file_backed(index.derived.edges.dice)
    del index
    assert list(scratch.iterdir()) == []


def test_a_removal_and_a_refresh_start_from_the_trickle_state_in_files(
    spilled: G2ConSIndex, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arrays trickle updates made in memory are moved to files before a refresh builds the next state beside
    them (engine.snapshot_updates.spilled_snapshot): the same state (digests), file-backed; then the refresh
    equals a fresh build."""
    from g2cons_plugins import index as index_mod
    from g2cons_plugins.engine import snapshot_updates as su
    from g2cons_plugins.engine import update as upd

    monkeypatch.setattr(upd, "MIN_CHUNKS", 50)
    rows = _passages()
    index = G2ConSIndex.build(rows[:-4], embedder="hash", config=G2ConSConfig())
    monkeypatch.setattr(step_spill, "SPILL_STEP_MIN_BYTES", 2**40)  # the trickle add keeps its arrays in memory
    index.add(rows[-4:], exact=False)
    trickled = index.snapshot
    assert not is_file_backed(trickled.derived.concept_vecs)
    want = _digests(trickled.derived)
    monkeypatch.setattr(step_spill, "SPILL_STEP_MIN_BYTES", 0)
    seen: list[Any] = []
    real = index_mod.refreshed
    monkeypatch.setattr(index_mod, "refreshed", lambda snap: seen.append(snap) or real(snap))
    index.refresh()
    (given,) = seen
    assert given is not trickled and given.pending is trickled.pending
    assert is_file_backed(given.derived.concept_vecs) and is_file_backed(given.derived.edges.dice)
    assert _digests(given.derived) == want
    assert index_digest(index) == EXPECTED
    assert su.spilled_snapshot(index.snapshot) is index.snapshot  # exact: nothing to move
