"""The texts as columns in stored.npz (index format version 5): a loaded index holds its chunks and units as
columns equal to the built ones, and every forged column is refused naming the file and the column."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.arrays.columns import inserted
from g2cons_plugins.arrays.tables import ChunkTable, UnitTable, unit_fields, unit_fields_of, unit_text, unit_texts
from g2cons_plugins.storage.derived_io import savez
from g2cons_plugins.storage.persistence import POINTER

DOCS = [
    {"id": f"d{i:02d}", "title": f"Title {i}", "text": f"Alice Moreau{i % 3} met Bob in Paris. " * (1 + 2 * (i % 4))}
    for i in range(14)
] + [{"id": "m", "text": "Ünïcode text: 北京 is a city. It is large.", "metadata": {"k": [1, "x"], "é": None}}]


@pytest.fixture(scope="module")
def built() -> G2ConSIndex:
    return G2ConSIndex.build(DOCS, embedder="hash", config=G2ConSConfig(theta_co=1, unit_tokens=16))


@pytest.fixture(scope="module")
def saved(built: G2ConSIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("npz") / "idx"
    built.save(path)
    return path


def V(path: Path) -> Path:
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


def test_loaded_columns_equal_the_built_lists(built: G2ConSIndex, saved: Path) -> None:
    got = G2ConSIndex.load(saved)
    assert isinstance(got.stored.chunks, ChunkTable) and isinstance(got.stored.units, UnitTable)
    assert any(u.id != u.parent_id for u in built.units)  # chunks of several units are in the test
    assert got.chunks == built.chunks and got.units == built.units and got.stored.sentences == built.stored.sentences
    assert got.chunk("m").metadata == {"k": [1, "x"], "é": None}
    for j in range(len(built.units)):
        u = built.units[j]
        assert unit_text(got.stored.units, j) == u.text
        assert unit_fields(got.stored.units, j) == (u.id, u.parent_id, u.text)
    q = "Where did Alice Moreau1 meet Bob?"
    key = lambda idx: [(r.unit_id, r.text, r.score) for r in idx.retrieve(q)]  # noqa: E731
    assert key(got) == key(built)
    assert all(got.snapshot.unit_pos[u.id] == j for j, u in enumerate(built.units))


def _fields(units: Sequence[Any], js: np.ndarray) -> list[tuple[str, str, str]]:
    return [(units[j].id, units[j].parent_id, units[j].text) for j in js.tolist()]


def test_unit_texts_equal_the_texts_read_one_at_a_time(built: G2ConSIndex, tmp_path: Path) -> None:
    two = G2ConSIndex.build(DOCS, embedder="hash", config=G2ConSConfig(theta_co=1, unit_tokens=24))
    assert any(len(u.sentences) > 1 for u in two.units)  # units of several sentences
    two.save(tmp_path / "idx")
    got = G2ConSIndex.load(tmp_path / "idx")
    units = got.stored.units
    assert isinstance(units, UnitTable)
    js = np.random.default_rng(0).permutation(np.repeat(np.arange(len(units)), 2))  # any order, repeats
    assert unit_texts(units, js) == [two.units[j].text for j in js.tolist()]
    assert unit_fields_of(units, js) == _fields(two.units, js)  # ids of one-unit and many-unit chunks
    # the same units with no text written out (an older save): each text is its sentences joined, or its chunk's
    joined = UnitTable(
        got.stored.chunks, units.parent, units.n_tokens, units.sentences, (units.sent_off, units.sent_flat),
        (np.zeros(0, np.int64), []),
    )
    one = np.diff(joined._starts)[joined.parent] == 1
    assert one.any() and not one.all()  # both kinds of unit are read
    assert unit_texts(joined, js) == [joined.text(j) for j in js.tolist()]
    assert unit_fields_of(joined, js) == [joined.fields(j) for j in js.tolist()] == _fields(two.units, js)
    # as a trickle update holds them: pieces of the mapped table and new units in a list
    rope = inserted(units, [2, 2, len(units)], [built.units[5], built.units[0], built.units[1]])
    js = np.random.default_rng(1).permutation(len(rope))
    assert unit_texts(rope, js) == [rope[j].text for j in js.tolist()]
    assert unit_texts(list(rope), js) == [rope[j].text for j in js.tolist()]
    assert unit_fields_of(rope, js) == unit_fields_of(list(rope), js) == _fields(rope, js)


def test_updates_of_a_loaded_index_equal_updates_of_the_built_one(built: G2ConSIndex, saved: Path) -> None:
    got = G2ConSIndex.load(saved)
    new = [{"id": "d05a", "text": "Carol Diaz went to Rome. She met Alice Moreau1 there."}]
    for idx in (got, built):
        idx.add(new)
        idx.remove(["d03"])
    ref = G2ConSIndex.build([d for d in DOCS if d["id"] != "d03"] + new, embedder="hash", config=built.config)
    assert got.chunks == ref.chunks and got.units == ref.units
    assert got.derived.vocab == ref.derived.vocab and got.stats == ref.stats


def _forge(path: Path, edit: Callable[[dict[str, np.ndarray]], None], name: str = "stored.npz") -> None:
    """Rewrite the .npz ``name`` with ``edit`` applied to its arrays, and every checksum above it."""
    f = V(path) / name
    with np.load(f, allow_pickle=False) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    edit(arrays)
    buf = io.BytesIO()
    savez(buf, arrays)
    f.write_bytes(buf.getvalue())
    mf = V(path) / "manifest.json"
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    manifest["files"][name] = hashlib.sha256(f.read_bytes()).hexdigest()
    data = json.dumps(manifest).encode("utf-8")
    mf.write_bytes(data)
    ptr = json.loads((path / POINTER).read_text(encoding="utf-8"))
    ptr["manifest_sha256"] = hashlib.sha256(data).hexdigest()
    (path / POINTER).write_text(json.dumps(ptr), encoding="utf-8")


def _set(name: str, i: int, value: int) -> Callable[[dict[str, np.ndarray]], None]:
    def edit(a: dict[str, np.ndarray]) -> None:
        a[name][i] = value

    return edit


def _swap_ids(a: dict[str, np.ndarray]) -> None:
    b = a["chunk.id.buf"]
    b[0:3], b[3:6] = b[3:6].copy(), b[0:3].copy()  # "d00" "d01" -> "d01" "d00"


FORGERIES = [
    ("chunk.id", _swap_ids, "out of order"),
    ("chunk.id.off", _set("chunk.id.off", 1, 0), "empty id"),
    ("chunk.text.buf", _set("chunk.text.buf", 0, 0xFF), "not UTF-8"),
    ("chunk.text.off", _set("chunk.text.off", -1, 10**6), "offsets"),
    ("chunk.meta", lambda a: a.update({"chunk.meta.buf": np.full_like(a["chunk.meta.buf"], ord("x"))}), "JSON object"),
    ("chunk.n_tokens", _set("chunk.n_tokens", 0, 0), "chunk.n_tokens"),
    ("chunk.n_tokens-big", _set("chunk.n_tokens", 0, 10**9), "impossible"),
    ("unit.parent", _set("unit.parent", 0, 10**6), "unit.parent"),
    ("unit.parent-order", _set("unit.parent", 0, 5), "ascending"),
    ("unit.sent.off", _set("unit.sent.off", 1, 0), "at least one sentence"),
    ("unit.sent.flat", _set("unit.sent.flat", 0, 10**6), "sentence positions"),
    ("unit.text_at", _set("unit.text_at", 0, 10**6), "unit.text_at"),
    ("missing", lambda a: a.pop("unit.n_tokens"), "unit.n_tokens is missing"),
    ("dtype", lambda a: a.update({"unit.parent": a["unit.parent"].astype(np.float64)}), "expected integers"),
]


@pytest.mark.parametrize(("edit", "what"), [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES])
def test_forged_columns_name_file_and_column(
    saved: Path, tmp_path: Path, edit: Callable[[dict[str, np.ndarray]], None], what: str
) -> None:
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(saved, copy)
    _forge(copy, edit)
    with pytest.raises(PersistError, match="stored.npz") as exc:
        G2ConSIndex.load(copy)
    assert what in str(exc.value)


def test_stored_npz_is_a_plain_zip_of_npy(saved: Path) -> None:
    with zipfile.ZipFile(V(saved) / "stored.npz") as zf:
        assert all(i.compress_type == zipfile.ZIP_STORED and i.filename.endswith(".npy") for i in zf.infolist())


def test_bm25_weights_are_saved_and_mapped(saved: Path) -> None:
    from g2cons_plugins.retrieval.lexical import LexicalIndex, SortedColumns

    got = G2ConSIndex.load(saved)
    assert got.snapshot.bm25 is not None
    want = LexicalIndex.build(got.stored, got.derived.terms, got.config)
    weights = got.snapshot.lexical.weights
    for part in ("data", "indices", "indptr"):  # the same bits
        assert np.array_equal(getattr(weights, part), getattr(want.weights, part)), part
    assert isinstance(got.snapshot.lexical.column, SortedColumns)
    assert dict(got.snapshot.lexical.column) == want.column
    q = "Alice Moreau2 Paris"
    assert np.array_equal(got.snapshot.lexical.scores(q), want.scores(q))


def test_a_save_right_after_a_build_makes_the_weights_in_files_and_keeps_them(tmp_path: Path) -> None:
    """The save of a fresh build makes the BM25 weights with their blocks in temporary files (not all in memory)
    and keeps them on the saved snapshot, as a first query would: the same bits as made in memory, and no second
    computation for the next query."""
    from g2cons_plugins.arrays.mapped import is_file_backed
    from g2cons_plugins.retrieval.lexical import LexicalIndex
    from g2cons_plugins.storage.spill import can_spill

    idx = G2ConSIndex.build(DOCS, embedder="hash", config=G2ConSConfig(theta_co=1, unit_tokens=16))
    assert "lexical" not in idx.snapshot.__dict__  # nothing asked for BM25 yet
    idx.save(tmp_path / "i")
    assert "lexical" in idx.snapshot.__dict__  # made by the save, kept
    weights = idx.snapshot.lexical.weights
    want = LexicalIndex.build(idx.stored, idx.derived.terms, idx.config).weights
    for part in ("data", "indices", "indptr"):
        assert getattr(weights, part).dtype == getattr(want, part).dtype, part
        assert np.array_equal(getattr(weights, part), getattr(want, part)), part
    if can_spill():
        assert is_file_backed(weights.data) and is_file_backed(weights.indices)
    loaded = G2ConSIndex.load(tmp_path / "i").snapshot.lexical.weights
    assert np.array_equal(loaded.data, want.data) and np.array_equal(loaded.indices, want.indices)


@pytest.mark.parametrize(
    ("edit", "what"),
    [
        (lambda a: a.update(shape=np.asarray([1, 1])), "shape"),
        (lambda a: a.update(data=-a["data"]), "positive"),
        (lambda a: a.update(indices=a["indices"][::-1].copy()), "lexical.npz"),
    ],
)
def test_forged_bm25_weights_are_refused(saved: Path, tmp_path: Path, edit: Callable[..., None], what: str) -> None:
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(saved, copy)
    _forge(copy, edit, "lexical.npz")
    with pytest.raises(PersistError, match=what):
        G2ConSIndex.load(copy)


def test_a_trickled_term_index_maps_words_by_dict(built: G2ConSIndex) -> None:
    from g2cons_plugins.concepts import TermIndex
    from g2cons_plugins.retrieval.lexical import LexicalIndex

    t = built.derived.terms
    shuffled = TermIndex(tuple(reversed(t.words)), t.counts, t.noninit, t.caps)
    lex = LexicalIndex.from_weights(built.snapshot.lexical.weights, shuffled, built.config)
    assert isinstance(lex.column, dict) and lex.column[t.words[0]] == len(t.words) - 1
