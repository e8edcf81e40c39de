"""Tests of g2cons_plugins.storage.persistence: round trip, no pickle, atomic overwrite, corruption, embedder checks."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import dataclasses
import gc
import hashlib
import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2cons_plugins.config import G2ConSConfig
from g2cons_plugins.embedders import HashEmbedder
from g2cons_plugins.errors import PersistError
from g2cons_plugins.index import G2ConSIndex
from g2cons_plugins.storage import persistence
from g2cons_plugins.storage.persistence import FILES, FORMAT_VERSION, POINTER, load_snapshot, read_manifest, save_index

CONFIG = G2ConSConfig(theta_co=2, unit_tokens=40, vector_level="sentence")  # every file (test_vector_level.py: others)

CORPUS: list[dict[str, Any]] = [
    {
        "id": "c01",
        "text": "Alice Moreau founded Acme Corp in Lisbon. Acme Corp builds harbor cranes.",
        "metadata": {"source": "wiki", "year": 2019},
    },
    {"id": "c02", "text": "Bob Tanaka joined Acme Corp in Lisbon as chief engineer. He met Alice Moreau there."},
    {"id": "c03", "text": "Globex opened an office in Berlin. Carla Nunes leads Globex research in Berlin."},
    {"id": "c04", "text": "Carla Nunes studied in Paris before moving to Berlin to join Globex."},
    {
        "id": "c05",
        "text": (
            "Acme Corp and Globex signed a crane contract in Rotterdam. The Rotterdam port authority approved it. "
            "Bob Tanaka negotiated for Acme Corp while Carla Nunes represented Globex. The deal covered twelve "
            "harbor cranes and a maintenance plan lasting ten years."
        ),
    },
    {"id": "c06", "text": "The Rotterdam port authority ordered cranes from Acme Corp after the Lisbon trial."},
    {"id": "c07", "text": "Initech sells payroll software in Paris. David Okafor runs Initech in Paris."},
    {"id": "c08", "text": "David Okafor met Alice Moreau in Lisbon to discuss payroll software for Acme Corp."},
    {"id": "c09", "text": "Initech and Globex compete for payroll contracts in Berlin and Paris."},
    {
        "id": "c10",
        "text": (
            "Emma Schulz is a journalist in Berlin. She wrote about Globex and Initech. Emma Schulz interviewed "
            "Carla Nunes about research budgets. Her article on Berlin startups was widely read in Paris and "
            "Lisbon, and it mentioned David Okafor twice."
        ),
        "metadata": {"source": "news"},
    },
    {"id": "c11", "text": "Emma Schulz later interviewed Bob Tanaka about harbor cranes in Rotterdam."},
    {"id": "c12", "text": "The Seine flows through Paris. Tourists in Paris visit the Louvre museum."},
    {"id": "c13", "text": "The Louvre museum bought software from Initech to manage tickets."},
    {"id": "c14", "text": "Lisbon hosts a technology fair every winter; Acme Corp and Initech exhibit there."},
    {"id": "c15", "text": "Frank Idowu manages the Rotterdam port authority and praised Acme Corp cranes."},
    {"id": "c16", "text": "Frank Idowu and Emma Schulz spoke at the Lisbon technology fair."},
    {"id": "c17", "text": "Globex research in Berlin focuses on battery chemistry, Carla Nunes said."},
    {"id": "c18", "text": "Battery chemistry startups in Berlin attract investors from Paris."},
]
NEW_CHUNKS: list[dict[str, Any]] = [
    {"id": "n01", "text": "Grace Lindqvist founded Umbrella Labs in Oslo. Umbrella Labs studies battery chemistry."},
    {"id": "n02", "text": "Grace Lindqvist visited Globex in Berlin and met Carla Nunes."},
    {"id": "n03", "text": "Umbrella Labs in Oslo hired Bob Tanaka to design harbor cranes."},
]
QUERIES = [
    "Who founded Acme Corp?",
    "Where does Carla Nunes work?",
    "payroll software in Paris",
    "Which journalist interviewed the engineer who negotiated the crane contract?",
    "battery chemistry in Berlin",
    "Rotterdam port authority cranes",
    "Emma Schulz journalist Berlin",
    "David Okafor Initech payroll Lisbon",
]
STRATEGIES = ("bridge", "paper", "dense", "ppr")


class CountingEmbedder:
    """An Embedder delegating to HashEmbedder that records every text it is asked to embed."""

    def __init__(self, dim: int = 32, name: str | None = None) -> None:
        self.inner = HashEmbedder(dim)
        self.dim = dim
        self.name = name or self.inner.name
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.embed(texts)


def build(chunks: Sequence[Any] = CORPUS) -> G2ConSIndex:
    return G2ConSIndex.build(chunks, embedder=HashEmbedder(dim=32), config=CONFIG)


def results(index: G2ConSIndex) -> list[Any]:
    out = []
    for q in QUERIES:
        for s in STRATEGIES:
            items = index.retrieve(q, beta=300, strategy=s)
            out.append([(r.unit_id, r.parent_id, r.text, r.score, r.n_tokens, r.reason) for r in items])
    return out


def stats(index: G2ConSIndex) -> dict[str, Any]:
    d = dict(index.stats.to_dict())
    return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def tie_free(index: G2ConSIndex) -> list[str]:
    """Queries whose dense unit scores have no two values within float32 rounding of each other."""
    out = []
    for q in QUERIES:
        dense = np.sort(index.stored.unit_vecs @ index.embed_query(q))
        if np.all(np.diff(dense) > 1e-6):
            out.append(q)
    return out


def assert_equal_up_to_rounding(got: G2ConSIndex, want: G2ConSIndex) -> None:
    """Retrieval of an updated loaded index equals a rebuild's, up to float32 rounding.

    Only up to rounding: embedders.validate_embeddings renormalises in float32 on every pass, and loaded vectors
    pass through it more often than freshly built ones, so exactly tied units may swap (which then moves
    reciprocal-rank and budget decisions). Queries without ties must give the very same ranking."""
    clean = tie_free(want)
    assert len(clean) >= 4, "the test needs queries without tied units"
    for q in QUERIES:
        np.testing.assert_allclose(
            got.stored.unit_vecs @ got.embed_query(q), want.stored.unit_vecs @ want.embed_query(q), atol=1e-6
        )
        for s in STRATEGIES:
            g = got.retrieve(q, beta=300, strategy=s)
            w = want.retrieve(q, beta=300, strategy=s)
            if q in clean:
                assert [(r.unit_id, r.text, r.n_tokens, r.reason.get("via")) for r in g] == [
                    (r.unit_id, r.text, r.n_tokens, r.reason.get("via")) for r in w
                ], (q, s)
                assert [r.score for r in g] == pytest.approx([r.score for r in w], rel=1e-5, abs=1e-6)
            else:
                assert sum(r.n_tokens for r in g) <= 300


def assert_close_stats(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == (pytest.approx(v, rel=1e-5, abs=1e-6) if isinstance(v, float) else v), k


def selection(index: G2ConSIndex) -> tuple[list[str], list[str]]:
    rep = index.select(kappa=0.6)
    return rep.kept_ids, rep.dropped_ids


@pytest.fixture(scope="module")
def original() -> G2ConSIndex:
    idx = build()
    assert idx.stats.n_edges > 0, "the test corpus must give a graph with edges"
    assert any(u.id != u.parent_id for u in idx.units), "some chunk must be split into several units"
    return idx


@pytest.fixture(scope="module")
def saved(original: G2ConSIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "idx"
    original.save(path)
    return path


def V(path: Path) -> Path:
    """The folder of the current version of the index at ``path``."""
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    """A private copy of the saved index, free to corrupt."""
    dst = tmp_path / "idx"
    shutil.copytree(saved, dst)
    return dst


# ---------------------------------------------------------------------------------------------- round trip
def test_load_equals_saved(original: G2ConSIndex, saved: Path) -> None:
    loaded = G2ConSIndex.load(saved)
    assert loaded.embedder.name == "hash-32" and loaded.embedder.dim == 32
    assert loaded.config == original.config
    assert loaded.tokenizer.name == original.tokenizer.name
    assert loaded.chunks == original.chunks  # ids, texts and metadata
    assert loaded.units == original.units
    np.testing.assert_array_equal(loaded.stored.unit_vecs, original.stored.unit_vecs)
    np.testing.assert_array_equal(loaded.stored.sent_vecs, original.stored.sent_vecs)
    np.testing.assert_array_equal(loaded.stored.chunk_tokens, original.stored.chunk_tokens)
    assert loaded.derived.vocab == original.derived.vocab
    assert loaded.concept_pagerank() == original.concept_pagerank()
    assert stats(loaded) == stats(original)
    assert results(loaded) == results(original)
    assert selection(loaded) == selection(original)


def test_load_accepts_str_and_path(saved: Path, original: G2ConSIndex) -> None:
    for p in (str(saved), saved):
        assert load_snapshot(p).stored.chunks == original.stored.chunks  # type: ignore[arg-type]
        assert G2ConSIndex.load(p).chunks == original.chunks


def test_the_deprecated_load_index_is_gone() -> None:
    with pytest.raises(AttributeError):
        persistence.load_index  # noqa: B018  (removed in 0.2.0: G2ConSIndex.load)


def test_no_pickle_and_manifest(saved: Path, original: G2ConSIndex) -> None:
    top = sorted(p.name for p in saved.iterdir())
    assert top == sorted([".lock", POINTER, V(saved).name])
    names = sorted(p.name for p in V(saved).iterdir())
    assert names == sorted([*FILES, "manifest.json"])
    assert not [n for n in names if n.endswith((".pkl", ".pickle"))]
    for npy in V(saved).glob("*.npy"):
        arr = np.load(npy, allow_pickle=False)
        assert arr.dtype == np.float32 and arr.ndim == 2 and arr.shape[1] == 32
    manifest = json.loads((V(saved) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "g2cons-index"
    assert manifest["version"] == FORMAT_VERSION
    assert manifest["embedder"] == {"name": "hash-32", "dim": 32}
    assert manifest["counts"] == {
        "chunks": len(original.chunks),
        "units": len(original.units),
        "sentences": len(original.stored.sentences),
    }
    for name in FILES:
        assert manifest["files"][name] == hashlib.sha256((V(saved) / name).read_bytes()).hexdigest()
    assert read_manifest(saved) == manifest
    pointer = json.loads((saved / POINTER).read_text(encoding="utf-8"))
    assert pointer["manifest_sha256"] == hashlib.sha256((V(saved) / "manifest.json").read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------- atomic writes
def test_overwrite_replaces_and_leaves_nothing_behind(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    target = parent / "idx"
    first = build(CORPUS[:10])
    first.save(target)
    second = build(CORPUS[5:])
    second.save(target)
    assert [p.name for p in parent.iterdir()] == ["idx"]
    inside = sorted(p.name for p in target.iterdir())
    assert not [n for n in inside if n.startswith(".tmp-")] and len(inside) <= 4  # lock, pointer, <= 2 versions
    loaded = G2ConSIndex.load(target)
    assert [c.id for c in loaded.chunks] == [c.id for c in second.chunks]
    assert results(loaded) == results(second)


def test_refuses_a_foreign_directory(tmp_path: Path, original: G2ConSIndex) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("precious")
    (target / "data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(PersistError, match="not a g2cons index"):
        original.save(target)
    assert sorted(p.name for p in target.iterdir()) == ["data.csv", "notes.txt"]
    assert (target / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_refuses_a_directory_with_someone_elses_manifest(tmp_path: Path, original: G2ConSIndex) -> None:
    target = tmp_path / "webapp"
    target.mkdir()
    (target / "manifest.json").write_text(json.dumps({"name": "my web app", "start_url": "/"}))
    (target / "index.html").write_text("<html></html>")
    with pytest.raises(PersistError):
        original.save(target)
    assert sorted(p.name for p in target.iterdir()) == ["index.html", "manifest.json"]
    assert json.loads((target / "manifest.json").read_text())["name"] == "my web app"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["webapp"]


def test_save_into_an_empty_directory_and_onto_a_file(tmp_path: Path, original: G2ConSIndex) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    original.save(empty)
    assert G2ConSIndex.load(empty).chunks == original.chunks
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(PersistError, match="not a directory"):
        original.save(afile)
    assert afile.read_text() == "x"


def test_failed_save_keeps_the_old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "idx"
    old = build(CORPUS[:8])
    old.save(target)
    real_rename = os.rename

    def failing_rename(src: Any, dst: Any) -> None:
        if Path(src).name.startswith(".tmp-v-"):
            raise OSError("disk full")
        real_rename(src, dst)

    monkeypatch.setattr(persistence.os, "rename", failing_rename)
    with pytest.raises(OSError, match="disk full"):
        build(CORPUS[8:]).save(target)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]
    assert not [p for p in target.iterdir() if p.name.startswith(".tmp-")]
    assert [c.id for c in G2ConSIndex.load(target).chunks] == [c.id for c in old.chunks]


def test_unserialisable_metadata_fails_cleanly(tmp_path: Path) -> None:
    idx = G2ConSIndex.build(
        [{"id": "a", "text": "Alice met Bob in Paris.", "metadata": {"when": object()}}],
        embedder=HashEmbedder(dim=32),
        config=CONFIG,
    )
    with pytest.raises(PersistError, match="JSON"):
        idx.save(tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []


def test_unserialisable_metadata_among_many_names_its_chunk(tmp_path: Path) -> None:
    """Only the metadata a streaming build kept as objects is checked before a save (the rest is JSON text
    already): the bad chunk is named, a tuple (JSON gives a list) is saved, and a good corpus saves."""
    rows = [{"id": r["id"], "text": r["text"], "metadata": {"day": i}} for i, r in enumerate(CORPUS)]
    rows[2]["metadata"] = {"pages": (1, 2)}
    rows[4]["metadata"] = {"when": object()}
    idx = G2ConSIndex.build(rows, embedder=HashEmbedder(dim=32), config=CONFIG)
    with pytest.raises(PersistError, match=f"chunk '{rows[4]['id']}'.*JSON"):
        idx.save(tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []
    del rows[4]
    G2ConSIndex.build(rows, embedder=HashEmbedder(dim=32), config=CONFIG).save(tmp_path / "ok")
    loaded = {c.id: c.metadata for c in G2ConSIndex.load(tmp_path / "ok").chunks}
    assert loaded[rows[2]["id"]] == {"pages": [1, 2]} and loaded[rows[0]["id"]] == {"day": 0}


# ---------------------------------------------------------------------------------------------- bad directories
def test_flipped_bytes_in_vectors(copy: Path) -> None:
    f = V(copy) / "unit_vectors.npy"
    data = bytearray(f.read_bytes())
    data[-3] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(PersistError, match="unit_vectors.npy"):
        G2ConSIndex.load(copy)


def test_truncated_chunks(copy: Path) -> None:
    f = V(copy) / "stored.npz"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(PersistError, match="stored.npz"):
        G2ConSIndex.load(copy)


@pytest.mark.parametrize("name", FILES)
def test_missing_file(copy: Path, name: str) -> None:
    (V(copy) / name).unlink()
    with pytest.raises(PersistError, match=name.replace(".", r"\.")):
        G2ConSIndex.load(copy)


@pytest.mark.parametrize("name", FILES)
def test_modified_file(copy: Path, name: str) -> None:
    with (V(copy) / name).open("ab") as fh:
        fh.write(b"\n")
    with pytest.raises(PersistError, match=name.replace(".", r"\.")):
        G2ConSIndex.load(copy)


@pytest.mark.parametrize("name", ["stored.npz", "derived.json", "derived.npz"])
def test_checksum_is_reported_before_the_parse_error_it_causes(copy: Path, name: str) -> None:
    # the checksums run on a thread while the files are parsed: the corruption, not its symptom, is reported
    f = V(copy) / name
    f.write_bytes(b"{not json" + f.read_bytes())
    with pytest.raises(PersistError, match=name.replace(".", r"\.") + ": checksum mismatch"):
        G2ConSIndex.load(copy)


@pytest.mark.parametrize("enabled", [True, False])
def test_load_restores_the_garbage_collector_state(saved: Path, enabled: bool) -> None:
    # a load pauses the cyclic collector while it parses: the caller's setting comes back, also after an error
    (gc.enable if enabled else gc.disable)()
    try:
        G2ConSIndex.load(saved)
        assert gc.isenabled() is enabled
        with pytest.raises(PersistError):
            G2ConSIndex.load(saved, embedder=HashEmbedder(dim=8))
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_unit_texts_splitting_does_not_make_are_written_out(original: G2ConSIndex, tmp_path: Path) -> None:
    # stored.npz writes a unit's text out where it is not its chunk's (an edited text, a chunk of several units)
    snap = original.snapshot
    units = list(snap.stored.units)
    units[0] = dataclasses.replace(units[0], text=units[0].text + "  (edited)")
    units[-1] = dataclasses.replace(units[-1], text=units[-1].text + "\n")
    odd = dataclasses.replace(snap, stored=dataclasses.replace(snap.stored, units=units))
    save_index(odd, tmp_path / "odd")
    parent = snap.stored.unit_parent
    multi = [j for j, p in enumerate(parent.tolist()) if (parent == p).sum() > 1]
    with np.load(V(tmp_path / "odd") / "stored.npz") as npz:
        assert npz["unit.text_at"].tolist() == sorted({0, len(units) - 1, *multi})
    assert list(G2ConSIndex.load(tmp_path / "odd").units) == units


def test_missing_manifest(copy: Path) -> None:
    (V(copy) / "manifest.json").unlink()
    with pytest.raises(PersistError, match="manifest.json"):
        G2ConSIndex.load(copy)


def _edit_manifest(path: Path, recompute: bool = True, **changes: Any) -> None:
    """Edit the manifest of the current version; ``recompute``: also fix the pointer's checksum (a deliberate
    forgery), else the edit is caught by the checksum."""
    mf = V(path) / "manifest.json"
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    manifest.update(changes)
    _write_manifest(path, json.dumps(manifest).encode("utf-8"), recompute)


def _write_manifest(path: Path, data: bytes, recompute: bool = True) -> None:
    (V(path) / "manifest.json").write_bytes(data)
    if recompute:
        ptr = json.loads((path / POINTER).read_text(encoding="utf-8"))
        ptr["manifest_sha256"] = hashlib.sha256(data).hexdigest()
        (path / POINTER).write_text(json.dumps(ptr), encoding="utf-8")


def test_foreign_manifest(copy: Path) -> None:
    _edit_manifest(copy, format="something-else")
    with pytest.raises(PersistError, match="something-else"):
        G2ConSIndex.load(copy)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "1", None])
def test_other_version(copy: Path, version: Any) -> None:
    _edit_manifest(copy, version=version)
    with pytest.raises(PersistError, match="version"):
        G2ConSIndex.load(copy)


def test_manifest_not_json(copy: Path) -> None:
    _write_manifest(copy, b"{not json")
    with pytest.raises(PersistError, match="manifest.json"):
        G2ConSIndex.load(copy)
    _write_manifest(copy, b"[1, 2]")
    with pytest.raises(PersistError, match="manifest.json"):
        G2ConSIndex.load(copy)


def test_not_a_directory(tmp_path: Path, saved: Path) -> None:
    with pytest.raises(PersistError):
        G2ConSIndex.load(tmp_path / "nowhere")
    with pytest.raises(PersistError):
        G2ConSIndex.load(saved / "manifest.json")
    with pytest.raises(PersistError):
        read_manifest(saved / "chunks.jsonl")


def test_errors_are_oserrors(copy: Path) -> None:
    (V(copy) / "stored.npz").unlink()
    with pytest.raises(OSError):
        G2ConSIndex.load(copy)


# ---------------------------------------------------------------------------------------------- embedders
def test_embedder_of_another_dimension(saved: Path) -> None:
    with pytest.raises(PersistError) as exc:
        G2ConSIndex.load(saved, embedder=HashEmbedder(dim=16))
    assert "32" in str(exc.value) and "16" in str(exc.value)
    with pytest.raises(PersistError, match="64"):
        G2ConSIndex.load(saved, embedder="hash")
    liar = CountingEmbedder(dim=16, name="hash-32")  # the right name is not enough
    with pytest.raises(PersistError, match="dimension") as exc:
        G2ConSIndex.load(saved, embedder=liar)
    assert "32" in str(exc.value) and "16" in str(exc.value)
    assert liar.seen == []


def test_embedder_of_another_name(saved: Path) -> None:
    other = CountingEmbedder(dim=32, name="other-model-32")
    with pytest.raises(PersistError) as exc:
        G2ConSIndex.load(saved, embedder=other)
    assert "other-model-32" in str(exc.value) and "hash-32" in str(exc.value)
    assert other.seen == []


def test_load_embeds_only_the_query(saved: Path, original: G2ConSIndex) -> None:
    counter = CountingEmbedder(dim=32)
    loaded = G2ConSIndex.load(saved, embedder=counter)
    assert counter.seen == []
    q = "Who founded Acme Corp?"
    got = loaded.retrieve(q, beta=300)
    assert counter.seen == [q]
    want = original.retrieve(q, beta=300)
    assert [(r.unit_id, r.score) for r in got] == [(r.unit_id, r.score) for r in want]


def test_add_after_load_embeds_only_new_texts_and_equals_a_rebuild(saved: Path, original: G2ConSIndex) -> None:
    counter = CountingEmbedder(dim=32)
    loaded = G2ConSIndex.load(saved, embedder=counter)
    loaded.add(NEW_CHUNKS)
    fresh = build(CORPUS + NEW_CHUNKS)
    new_ids = {c["id"] for c in NEW_CHUNKS}
    new_units = [u for u in fresh.units if u.parent_id in new_ids]
    known = set(original.stored.sentences) | {u.text for u in original.units}
    expected = ({u.text for u in new_units} | {s for u in new_units for s in u.sentences}) - known
    assert expected
    assert set(counter.seen) == expected
    assert len(counter.seen) == len(set(counter.seen))  # nothing embedded twice

    # equal to a rebuild; vectors only up to float32 rounding, because validate_embeddings renormalises
    # every time a vector passes through it (the loaded ones pass more often than freshly built ones)
    assert [c.id for c in loaded.chunks] == [c.id for c in fresh.chunks]
    assert loaded.units == fresh.units
    assert loaded.stored.sentences == fresh.stored.sentences
    np.testing.assert_allclose(loaded.stored.unit_vecs, fresh.stored.unit_vecs, rtol=0, atol=1e-6)
    np.testing.assert_allclose(loaded.stored.sent_vecs, fresh.stored.sent_vecs, rtol=0, atol=1e-6)
    assert loaded.derived.vocab == fresh.derived.vocab
    assert_close_stats(stats(loaded), stats(fresh))
    assert_equal_up_to_rounding(loaded, fresh)
    assert selection(loaded) == selection(fresh)

    # and that state saves and loads again, equal to the rebuild
    counter.seen.clear()
    loaded.remove(["c12", "n03"])
    assert counter.seen == []  # removing embeds nothing
    smaller = build([c for c in CORPUS + NEW_CHUNKS if c["id"] not in {"c12", "n03"}])
    assert [c.id for c in loaded.chunks] == [c.id for c in smaller.chunks]
    assert_close_stats(stats(loaded), stats(smaller))
    assert_equal_up_to_rounding(loaded, smaller)
    assert selection(loaded) == selection(smaller)


def test_resave_after_update_round_trips(saved: Path, tmp_path: Path) -> None:
    loaded = G2ConSIndex.load(saved)
    loaded.add(NEW_CHUNKS)
    loaded.save(tmp_path / "updated")
    again = G2ConSIndex.load(tmp_path / "updated")
    assert [c.id for c in again.chunks] == [c.id for c in loaded.chunks]
    assert stats(again) == stats(loaded)
    assert results(again) == results(loaded)


def test_save_index_function_matches_method(original: G2ConSIndex, saved: Path, tmp_path: Path) -> None:
    save_index(original, tmp_path / "fn")
    for name in FILES:
        assert (V(tmp_path / "fn") / name).read_bytes() == (V(saved) / name).read_bytes()
