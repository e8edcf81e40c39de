"""Where the concept vectors come from (``vector_level``) and what a build therefore embeds: the default embeds only
the retrieval units (concept vectors from the unit vectors), paper mode also the sentences (Eq. 1, exactly);
persistence of both kinds, indexes of format version 3 (saved by the previous release), mixed settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.build import derive, with_vectors
from g2cons_plugins.embedders import CallableEmbedder, HashEmbedder
from g2cons_plugins.errors import InputError, PersistError
from g2cons_plugins.storage.persistence import FORMAT_VERSION, POINTER

DOCS = [
    {"id": "d1", "text": "Alice Moreau founded Acme Corp in Lisbon. Acme Corp builds harbor cranes."},
    {"id": "d2", "text": "Bob Tanaka joined Acme Corp in Lisbon. He met Alice Moreau at the harbor."},
    {"id": "d3", "text": "Lisbon lies on the Tagus river. The harbor of Lisbon is busy."},
    {"id": "d4", "text": "Acme Corp sold harbor cranes to Porto. Bob Tanaka designed the cranes."},
    {"id": "d5", "text": "Porto lies on the Douro river. Alice Moreau visited Porto in spring."},
    {"id": "d6", "text": "The Tagus and the Douro flow into the Atlantic. Cranes load ships in Porto and Lisbon."},
]
NEW = [{"id": "d7", "text": "Carla Souza repairs cranes in Porto. She met Bob Tanaka at the Douro harbor."}]
QUERY = "Where did Alice Moreau meet Bob Tanaka?"
V3 = Path(__file__).parent / "data" / "index_v3"  # saved by the release before format version 4 (hash:16)


class Counting(CallableEmbedder):
    """A hash embedder that records every text it is asked to embed."""

    def __init__(self, dim: int = 16) -> None:
        inner = HashEmbedder(dim)
        self.seen: list[str] = []

        def fn(texts: list[str]) -> np.ndarray:
            self.seen.extend(texts)
            return inner.embed(texts)

        super().__init__(fn, dim, inner.name)


def build(config: G2ConSConfig, emb: Counting | None = None) -> G2ConSIndex:
    return G2ConSIndex.build(DOCS, embedder=emb or Counting(), config=config)


def keys(idx: G2ConSIndex) -> list[tuple[str, float]]:
    return [(i.unit_id, round(i.score, 5)) for i in idx.retrieve(QUERY, beta=200)]


def version(path: Path) -> Path:
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


# ---------------------------------------------------------------------------------------------- what is embedded
def test_default_build_embeds_only_the_units() -> None:
    emb = Counting()
    idx = build(G2ConSConfig(theta_co=1), emb)
    assert idx.config.graph.vector_level == "unit"
    assert sorted(emb.seen) == sorted({u.text for u in idx.units})  # each unit once, no sentence
    assert idx.stored.sent_vecs is None
    assert len(idx.stored.sentences) > len(idx.units)  # sentences there were to embed
    assert idx.stats.n_edges > 0


def test_paper_mode_embeds_sentences_and_its_concept_vectors_are_eq_1() -> None:
    emb = Counting()
    idx = build(G2ConSConfig(mode="paper", theta_co=1), emb)
    st, dv = idx.stored, idx.derived
    assert idx.config.graph.vector_level == "sentence"
    assert sorted(emb.seen) == sorted(set(st.sentences) | {u.text for u in st.units})
    assert st.sent_vecs is not None
    for j, w in enumerate(dv.vocab):  # Eq. 1, concept by concept, from the sentence texts
        rows = np.flatnonzero(dv.sent_inc[:, j].toarray().ravel())
        assert len(rows) == dv.sentence_counts[j] >= 1
        mean = np.asarray(st.sent_vecs)[rows].mean(axis=0)
        np.testing.assert_allclose(dv.concept_vecs[j], mean / np.linalg.norm(mean), atol=1e-6, err_msg=w)


def test_unit_level_concept_vectors_weight_units_by_their_sentences_holding_the_concept() -> None:
    idx = build(G2ConSConfig(theta_co=1))
    st, dv = idx.stored, idx.derived
    unit_of = {s: [j for j, u in enumerate(st.units) if s in u.sentences] for s in st.sentences}
    for j, w in enumerate(dv.vocab):
        rows = np.flatnonzero(dv.sent_inc[:, j].toarray().ravel())
        total = sum(st.unit_vecs[u] for i in rows.tolist() for u in unit_of[st.sentences[i]])
        np.testing.assert_allclose(dv.concept_vecs[j], total / np.linalg.norm(total), atol=1e-6, err_msg=w)
        assert dv.sentence_counts[j] == len(rows)  # |S_w|, as with Eq. 1


def test_mode_change_re_resolves_the_vector_level() -> None:
    assert G2ConSConfig().graph.vector_level == "unit"
    assert G2ConSConfig().with_(mode="paper").graph.vector_level == "sentence"
    assert G2ConSConfig(mode="paper").with_(mode="default").graph.vector_level == "unit"
    assert G2ConSConfig(mode="paper", vector_level="chunk").graph.vector_level == "chunk"  # ablation C
    with pytest.raises(InputError, match="vector_level"):
        G2ConSConfig(vector_level="word")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- mixed settings
def test_paper_config_over_a_default_build_embeds_just_the_sentences() -> None:
    emb = Counting()
    default = build(G2ConSConfig(theta_co=1), emb)
    emb.seen.clear()
    paper_cfg = G2ConSConfig(mode="paper", theta_co=1)
    paper = G2ConSIndex(default.stored, default.embedder, paper_cfg, default.tokenizer)
    assert sorted(emb.seen) == sorted(default.stored.sentences)
    fresh = build(paper_cfg)
    np.testing.assert_allclose(paper.derived.concept_vecs, fresh.derived.concept_vecs, atol=1e-6)
    assert keys(paper) == keys(fresh)
    with pytest.raises(InputError, match="sentence vectors"):
        derive(default.stored, paper_cfg)  # derive itself never embeds: it says what is missing
    assert with_vectors(paper.stored, emb, paper_cfg) is paper.stored  # nothing missing: unchanged


def test_add_embeds_only_new_units_and_equals_a_rebuild() -> None:
    emb = Counting()
    idx = build(G2ConSConfig(theta_co=1), emb)
    emb.seen.clear()
    idx.add(NEW)
    fresh = G2ConSIndex.build(DOCS + NEW, embedder=Counting(), config=G2ConSConfig(theta_co=1))
    assert sorted(emb.seen) == sorted(u.text for u in fresh.units if u.parent_id == "d7")
    assert idx.stored.sent_vecs is None
    np.testing.assert_allclose(idx.derived.concept_vecs, fresh.derived.concept_vecs, atol=1e-6)
    assert keys(idx) == keys(fresh)


def test_sentence_vectors_of_a_previous_state_are_kept_complete_on_add() -> None:
    emb = Counting()
    idx = build(G2ConSConfig(mode="paper", theta_co=1), emb)
    emb.seen.clear()
    idx.add(NEW)
    new_units = [u for u in idx.units if u.parent_id == "d7"]
    assert sorted(emb.seen) == sorted({u.text for u in new_units} | {s for u in new_units for s in u.sentences})
    assert idx.stored.sent_vecs is not None and len(idx.stored.sent_vecs) == len(idx.stored.sentences)


# ---------------------------------------------------------------------------------------------- persistence
@pytest.mark.parametrize("mode", ["default", "paper"])
def test_save_load_round_trip(mode: str, tmp_path: Path) -> None:
    idx = build(G2ConSConfig(mode=mode, theta_co=1))  # type: ignore[arg-type]
    idx.save(tmp_path / "idx")
    folder = version(tmp_path / "idx")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == FORMAT_VERSION == 5
    has = mode == "paper"
    assert (folder / "sentence_vectors.npy").is_file() is has
    assert ("sentence_vectors.npy" in manifest["files"]) is has
    for verify in (False, True):
        got = G2ConSIndex.load(tmp_path / "idx", verify=verify)
        assert got.config == idx.config
        assert (got.stored.sent_vecs is not None) is has
        if has:
            np.testing.assert_array_equal(got.stored.sent_vecs, idx.stored.sent_vecs)
        np.testing.assert_array_equal(got.derived.concept_vecs, idx.derived.concept_vecs)
        assert keys(got) == keys(idx)
    rebuilt = G2ConSIndex.load(tmp_path / "idx", rebuild=True)
    np.testing.assert_allclose(rebuilt.derived.concept_vecs, idx.derived.concept_vecs, atol=1e-6)


def test_a_listed_sentence_vector_file_must_be_there(tmp_path: Path) -> None:
    build(G2ConSConfig(mode="paper", theta_co=1)).save(tmp_path / "idx")
    (version(tmp_path / "idx") / "sentence_vectors.npy").unlink()
    with pytest.raises(PersistError, match="sentence_vectors.npy"):
        G2ConSIndex.load(tmp_path / "idx")


def test_an_unlisted_sentence_vector_file_is_not_read(tmp_path: Path) -> None:
    """A file the manifest does not list is not part of the index (checksums cover only listed files)."""
    idx = build(G2ConSConfig(theta_co=1))
    idx.save(tmp_path / "idx")
    np.save(version(tmp_path / "idx") / "sentence_vectors.npy", np.ones((3, 16), np.float32))
    got = G2ConSIndex.load(tmp_path / "idx", verify=True)
    assert got.stored.sent_vecs is None and keys(got) == keys(idx)


def test_a_sentence_level_config_without_sentence_vectors_fails_clearly(tmp_path: Path) -> None:
    import hashlib

    build(G2ConSConfig(theta_co=1)).save(tmp_path / "idx")
    folder = version(tmp_path / "idx")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["config"]["vector_level"] = "sentence"
    data = json.dumps(manifest).encode("utf-8")
    (folder / "manifest.json").write_bytes(data)
    ptr = json.loads((tmp_path / "idx" / POINTER).read_text(encoding="utf-8"))
    ptr["manifest_sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / "idx" / POINTER).write_text(json.dumps(ptr), encoding="utf-8")
    with pytest.raises(PersistError, match="vector_level 'sentence'.*no sentence_vectors.npy"):
        G2ConSIndex.load(tmp_path / "idx")


def test_format_version_3_index_loads_adds_and_saves_as_version_4(tmp_path: Path) -> None:
    """An index saved by the previous release (format version 3, sentence vectors always written, config
    vector_level="sentence") loads as it was, keeps embedding sentences on add, and saves as version 4."""
    path = tmp_path / "old"
    shutil.copytree(V3, path)
    assert json.loads((path / POINTER).read_text(encoding="utf-8"))["version"] == 3
    old = G2ConSIndex.load(path, verify=True)
    assert old.config.graph.vector_level == "sentence" and old.stored.sent_vecs is not None
    assert [i.unit_id for i in old.retrieve(QUERY, beta=200)] == ["d2", "d4", "d5", "d1", "d6", "d3"]
    eq1 = G2ConSIndex.build(DOCS, embedder="hash:16", config=G2ConSConfig(theta_co=1, vector_level="sentence"))
    np.testing.assert_allclose(old.derived.concept_vecs, eq1.derived.concept_vecs, atol=1e-6)
    old.add(NEW)
    assert old.stored.sent_vecs is not None and len(old.stored.sent_vecs) == len(old.stored.sentences)
    old.save(path)
    assert json.loads((path / POINTER).read_text(encoding="utf-8"))["version"] == FORMAT_VERSION
    assert (version(path) / "sentence_vectors.npy").is_file()
    again = G2ConSIndex.load(path, verify=True)
    assert keys(again) == keys(old)


def test_a_saved_config_without_vector_level_is_eq_1() -> None:
    """A config saved before the field existed (a whole to_dict without it) meant Eq. 1; a partial dict gets the
    default."""
    saved = G2ConSConfig().to_dict()
    del saved["vector_level"]
    assert G2ConSConfig.from_dict(saved).graph.vector_level == "sentence"
    assert G2ConSConfig.from_dict({"beta": 4000}).graph.vector_level == "unit"
    assert G2ConSConfig.from_dict(G2ConSConfig(vector_level="chunk").to_dict()).graph.vector_level == "chunk"


@pytest.mark.parametrize("level", ["unit", "chunk", "sentence"])
def test_concept_vectors_read_in_blocks_are_the_one_call_product_bit_for_bit(
    level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """graph.concept_vectors reads the vectors in blocks of VECTOR_BLOCK_ROWS rows (the derive's hook called after
    each, so the engine can unmap them) and sums them with SciPy's own kernel block after block: the same float32
    sums as one product, on real passages and on random weights."""
    from test_build_speed import _passages

    from g2cons_plugins import graph

    idx = G2ConSIndex.build(_passages()[:120], embedder="hash", config=G2ConSConfig(mode="paper"))
    st, dv = idx.snapshot.stored, idx.snapshot.derived
    args = (level, dv.sent_inc, dv.unit_inc, st.sent_unit, st.sent_vecs, st.unit_vecs)
    whole = graph.concept_vectors(*args)
    monkeypatch.setattr(graph, "VECTOR_BLOCK_ROWS", 7)
    steps: list[str] = []
    blocked = graph.concept_vectors(*args, steps.append)
    rows = len(st.sent_vecs) if level == "sentence" else len(st.unit_vecs)
    assert steps == ["vectors.block"] * -(-rows // 7) and len(steps) > 10
    for name in ("vectors", "counts", "sum_norms"):
        a, b = getattr(whole, name), getattr(blocked, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    rng = np.random.default_rng(0)
    W = dv.unit_inc.astype(np.float32)
    W.data = rng.integers(1, 5, W.nnz).astype(np.float32) * np.float32(0.37)  # weights whose sums round
    V = rng.standard_normal(st.unit_vecs.shape).astype(np.float32)
    assert graph._transposed_product(W, V, steps.append).tobytes() == np.asarray(W.T @ V, np.float32).tobytes()
