"""Fault injection for persistence (issue 10, classes 4, 6, 8, 11): kill -9 during saves, loads racing saves
from another process, the corrupted-file matrix (with and without recomputed checksums), umask, file
descriptors, and the version-1 layout."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.storage import persistence
from g2cons_plugins.storage.persistence import POINTER, read_manifest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    {
        "id": f"d{i:02d}",
        "text": f"Alice Moreau{i % 3} met Bob Tanaka in Paris{i % 4}. They founded Acme{i % 5} in Lisbon.",
    }
    for i in range(24)
]
A_IDS, B_IDS = sorted(d["id"] for d in DOCS[:12]), sorted(d["id"] for d in DOCS[8:])

SAVER = textwrap.dedent(
    """
    import json, sys
    from g2cons_plugins import G2ConSConfig, G2ConSIndex
    docs = json.loads(sys.argv[2])
    cfg = G2ConSConfig(theta_co=1)
    a = G2ConSIndex.build(docs[:12], embedder="hash:32", config=cfg)
    b = G2ConSIndex.build(docs[8:], embedder="hash:32", config=cfg)
    print("ready", flush=True)
    for i in range(int(sys.argv[3])):
        (a if i % 2 == 0 else b).save(sys.argv[1])
    print("done", flush=True)
    """
)


def _saver(path: Path, rounds: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(path), json.dumps(DOCS), str(rounds)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def _ids(path: Path) -> list[str]:
    return [c.id for c in G2ConSIndex.load(path).chunks]


def _build(docs: list[dict[str, str]]) -> G2ConSIndex:
    # with sentence vectors: every file a save can write is there to be forged
    return G2ConSIndex.build(docs, embedder="hash:32", config=G2ConSConfig(theta_co=1, vector_level="sentence"))


def _save_forever(a: G2ConSIndex, b: G2ConSIndex, path: Path) -> None:
    i = 0
    while True:
        (a if i % 2 == 0 else b).save(path)
        i += 1


def test_kill_9_during_saves_always_leaves_a_loadable_index(tmp_path: Path) -> None:
    import multiprocessing as mp

    path = tmp_path / "idx"
    a, b = _build(DOCS[:12]), _build(DOCS[8:])
    a.save(path)
    rng = random.Random(1234)
    ctx = mp.get_context("fork")  # the child starts with the indexes built: kills land anywhere in a save
    for _ in range(24):
        p = ctx.Process(target=_save_forever, args=(a, b, path))
        p.start()
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(p.pid or 0, signal.SIGKILL)
        p.join()
        assert _ids(path) in (A_IDS, B_IDS)  # the old or the new index, never an error
    _build(DOCS).save(path)  # the next save cleans up every leftover of the killed writers
    names = [q.name for q in path.iterdir()]
    assert not [n for n in names if n.startswith(".tmp-")], names
    assert len([n for n in names if n.startswith("v-")]) <= 2
    assert _ids(path) == sorted(d["id"] for d in DOCS)


def test_a_first_save_killed_before_its_pointer_does_not_block_the_path(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    (path / ".lock").touch()
    (path / ".tmp-v-20260101T000000-0123456789ab").mkdir()
    (path / "v-20260101T000000-0123456789ab").mkdir()
    _build(DOCS[:6]).save(path)
    assert _ids(path) == sorted(d["id"] for d in DOCS[:6])
    assert not [p for p in path.iterdir() if p.name.endswith("0123456789ab")]


def test_loads_racing_saves_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    _build(DOCS[:12]).save(path)
    p = _saver(path, 40)
    errors, loads = [], 0
    try:
        while p.poll() is None:
            try:
                assert _ids(path) in (A_IDS, B_IDS)
            except Exception as e:  # noqa: BLE001 - every failure counts
                errors.append(repr(e))
            loads += 1
    finally:
        p.kill()
        p.wait()
    assert not errors, errors[:3]
    assert loads > 3


# ---------------------------------------------------------------------------------------------- corrupted files
@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index in format version 4 (texts as JSON columns): the forgeries below test that reader; format 5's
    ``stored.npz`` has its own in test_stored_npz.py."""
    path = tmp_path_factory.mktemp("fi") / "idx"
    was, persistence.WRITE_VERSION = persistence.WRITE_VERSION, 4
    try:
        _build(DOCS).save(path)
    finally:
        persistence.WRITE_VERSION = was
    return path


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "idx"
    shutil.copytree(saved, dst, symlinks=True)
    return dst


def V(path: Path) -> Path:
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


def _forge(path: Path, name: str, edit: Callable[[bytes], bytes]) -> None:
    """Rewrite a data file and recompute every checksum above it (manifest and pointer): only the
    validation of the content itself can catch it."""
    f = V(path) / name
    f.write_bytes(edit(f.read_bytes()))
    mf = V(path) / "manifest.json"
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    if name != "manifest.json":
        manifest["files"][name] = hashlib.sha256(f.read_bytes()).hexdigest()
    data = json.dumps(manifest).encode("utf-8") if name != "manifest.json" else f.read_bytes()
    mf.write_bytes(data)
    ptr = json.loads((path / POINTER).read_text(encoding="utf-8"))
    ptr["manifest_sha256"] = hashlib.sha256(data).hexdigest()
    (path / POINTER).write_text(json.dumps(ptr), encoding="utf-8")


def _col_edit(fn: Callable[[dict], object]) -> Callable[[bytes], bytes]:
    """An edit of a column file (chunks.json, units.json): ``fn`` changes the parsed object in place."""

    def edit(data: bytes) -> bytes:
        obj = json.loads(data)
        fn(obj)
        return json.dumps(obj).encode("utf-8")

    return edit


def _npy_edit(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        import io

        arr = np.load(io.BytesIO(data), allow_pickle=False)
        out = io.BytesIO()
        np.save(out, fn(arr.copy()), allow_pickle=False)
        return out.getvalue()

    return edit


def _cell(column: str, i: int, value: object) -> Callable[[dict], None]:
    def fn(obj: dict) -> None:
        obj[column][i] = value

    return fn


def _manifest_edit(fn: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        m = json.loads(data)
        fn(m)
        return json.dumps(m).encode("utf-8")

    return edit


def _nan(a: np.ndarray) -> np.ndarray:
    a[0, 0] = np.nan
    return a


def _zero(a: np.ndarray) -> np.ndarray:
    a[1] = 0.0
    return a


CASES = [
    ("chunks.json", _col_edit(_cell("n_tokens", 0, -1)), "n_tokens"),
    ("chunks.json", _col_edit(_cell("n_tokens", 0, 10**9)), "n_tokens"),
    ("chunks.json", _col_edit(_cell("n_tokens", 0, "many")), "n_tokens"),
    ("chunks.json", _col_edit(_cell("n_tokens", 0, True)), "n_tokens"),
    ("chunks.json", _col_edit(_cell("id", 1, "d00")), "repeated"),
    ("chunks.json", _col_edit(_cell("id", 1, "")), "empty"),
    ("chunks.json", _col_edit(_cell("text", 0, 42)), "text"),
    ("chunks.json", _col_edit(lambda o: o["text"].pop()), "lengths"),
    ("chunks.json", _col_edit(lambda o: o.pop("id")), "'id'"),
    ("chunks.json", _col_edit(lambda o: o.update(metadata={"999": {}})), "metadata"),
    ("chunks.json", _col_edit(lambda o: o.update(metadata={"0": [1]})), "metadata"),
    ("chunks.json", _col_edit(lambda o: o.update(metadata={"\u00b2": {}})), "metadata"),
    ("chunks.json", _col_edit(_cell("n_tokens", 0, 10**30)), "n_tokens"),
    ("chunks.json", lambda b: b"[]", "object"),
    ("chunks.json", _col_edit(lambda o: o.update(metadata={"0": {"a": 1}, "00": {"a": 2}})), "'00'"),
    ("units.json", _col_edit(_cell("parent", 0, 10**6)), "parent"),
    ("units.json", _col_edit(_cell("parent", 0, -1)), "parent"),
    ("units.json", _col_edit(_cell("parent", 0, 10**30)), "parent"),
    ("units.json", _col_edit(_cell("sentences", 0, -(10**30))), "sentences"),
    ("units.json", _col_edit(lambda o: o.update(parent=[0] * len(o["parent"]))), "no retrieval unit"),
    ("units.json", _col_edit(_cell("sentences", 0, 10**6)), "sentences"),
    ("units.json", _col_edit(_cell("sentences", 0, -1)), "sentences"),
    ("units.json", _col_edit(_cell("n_tokens", 0, 0)), "n_tokens"),
    ("units.json", _col_edit(_cell("n_sentences", 0, 0)), "n_sentences"),
    ("units.json", _col_edit(lambda o: o["sentences"].append(0)), "n_sentences"),
    ("units.json", _col_edit(_cell("text", 0, 7)), "text"),
    ("units.json", _col_edit(_cell("id", 1, "")), "empty"),
    ("sentences.json", lambda b: b"[1, 2, 3]", "sentences.json"),
    ("unit_vectors.npy", _npy_edit(_nan), "NaN"),
    ("unit_vectors.npy", _npy_edit(_zero), "zero"),
    ("unit_vectors.npy", _npy_edit(lambda a: a.astype(np.float64)), "float32"),
    ("unit_vectors.npy", _npy_edit(lambda a: a[:-1]), "shape"),
    ("sentence_vectors.npy", _npy_edit(lambda a: a[:, :16].copy()), "shape"),
    ("manifest.json", _manifest_edit(lambda m: m["config"].update(theta_co=7)), "another config"),
    ("manifest.json", _manifest_edit(lambda m: m["config"].update(kappa="0.5")), "kappa"),
    ("manifest.json", _manifest_edit(lambda m: m.update(tokenizer="gpt2")), "tokenizer"),
    ("manifest.json", _manifest_edit(lambda m: m.pop("tokenizer")), "tokenizer"),
    ("manifest.json", _manifest_edit(lambda m: m["config"].update(theta_co_typo=3)), "theta_co_typo"),
    ("manifest.json", _manifest_edit(lambda m: m["embedder"].update(name="no-such-model")), "no-such-model"),
    ("manifest.json", _manifest_edit(lambda m: m["embedder"].update(dim="32")), "embedder.dim"),
    ("manifest.json", _manifest_edit(lambda m: m.update(config=[[[]]])), "config"),
    ("manifest.json", _manifest_edit(lambda m: m["counts"].update(chunks=3)), "counts"),
    ("derived.json", lambda b: b.replace(b'"vocab": [', b'"vocab": ["zzz", '), "derived"),
]


@pytest.mark.parametrize(("name", "edit", "what"), CASES, ids=[f"{c[0]}:{c[2]}" for c in CASES])
def test_forged_files_name_file_and_field(copy: Path, name: str, edit: Callable[[bytes], bytes], what: str) -> None:
    _forge(copy, name, edit)
    with pytest.raises(PersistError, match=what) as exc:
        G2ConSIndex.load(copy)
    assert str(V(copy)) in str(exc.value) or POINTER in str(exc.value)


@pytest.mark.parametrize("name", ["manifest.json", "chunks.json", "units.json", "derived.npz", "unit_vectors.npy"])
def test_edits_without_recomputed_checksums(copy: Path, name: str) -> None:
    f = V(copy) / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(PersistError, match="checksum"):
        G2ConSIndex.load(copy)


def test_symlink_out_of_the_folder(copy: Path, tmp_path: Path) -> None:
    f = V(copy) / "chunks.json"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(f.read_bytes())
    f.unlink()
    f.symlink_to(outside)
    with pytest.raises(PersistError, match="symbolic link"):
        G2ConSIndex.load(copy)


def test_pointer_to_a_folder_outside(copy: Path) -> None:
    ptr = json.loads((copy / POINTER).read_text(encoding="utf-8"))
    ptr["data"] = "../../etc"
    (copy / POINTER).write_text(json.dumps(ptr), encoding="utf-8")
    with pytest.raises(PersistError, match="data"):
        G2ConSIndex.load(copy)


def test_truncated_pointer(copy: Path) -> None:
    (copy / POINTER).write_bytes((copy / POINTER).read_bytes()[:10])
    with pytest.raises(PersistError, match=POINTER):
        G2ConSIndex.load(copy)


def test_verify_and_rebuild(saved: Path) -> None:
    a = G2ConSIndex.load(saved, verify=True)
    b = G2ConSIndex.load(saved, rebuild=True)
    assert a.stats == b.stats and a.derived.vocab == b.derived.vocab


def test_config_digest_covers_only_what_the_derived_state_depends_on() -> None:
    from g2cons_plugins.storage.derived_io import config_digest

    base = G2ConSConfig()
    retrieval_only = base.with_(beta=3000, lexical_weight=0.5, score_scale="cosine", ann_threshold=10, lambda_=0.9)
    assert config_digest(retrieval_only) == config_digest(base)
    assert config_digest(base.with_(theta_co=5)) != config_digest(base)
    assert config_digest(base.with_(language="english")) != config_digest(base)


def test_an_index_saved_before_newer_retrieval_knobs_loads_its_derived_state(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older save: its manifest's config lacks the newer retrieval knobs and its derived.json holds the
    whole-config digest of that config. It must load without re-deriving, with the knobs at their defaults."""
    import g2cons_plugins.build as build  # make_snapshot reads build.derive when it runs
    import g2cons_plugins.storage.persistence as persistence

    old_keys = ("score_scale", "lexical_weight", "lexical_seeds", "hybrid_seeds")
    _forge(copy, "manifest.json", _manifest_edit(lambda m: [m["config"].pop(k, None) for k in old_keys]))
    cfg = json.loads((V(copy) / "manifest.json").read_text(encoding="utf-8"))["config"]
    legacy = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode("utf-8")).hexdigest()

    def legacy_digest(data: bytes) -> bytes:
        d = json.loads(data)
        d["config_sha256"] = legacy
        return json.dumps(d).encode("utf-8")

    _forge(copy, "derived.json", legacy_digest)

    def no_derive(*args: object, **kwargs: object) -> None:
        raise AssertionError("the load re-derived")

    stats = G2ConSIndex.load(copy, rebuild=True).stats
    monkeypatch.setattr(persistence, "derive", no_derive)
    monkeypatch.setattr(build, "derive", no_derive)
    idx = G2ConSIndex.load(copy)
    assert idx.config.retrieval.score_scale == G2ConSConfig().retrieval.score_scale
    assert idx.stats == stats
    assert idx.retrieve("Where is it?")  # usable


# ---------------------------------------------------------------------------------------------- file system
def test_umask_is_respected(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "idx"
        _build(DOCS[:6]).save(path)
        _build(DOCS[:7]).save(path)  # saving over an existing 0755 index keeps it 0755
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o755
    for p in path.rglob("*"):
        want = 0o755 if p.is_dir() else 0o644
        assert (p.stat().st_mode & 0o777) == want, p


def test_no_file_descriptor_leaks(tmp_path: Path) -> None:
    idx = _build(DOCS[:6])
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        pytest.skip("no /proc/self/fd")
    idx.save(tmp_path / "idx")
    G2ConSIndex.load(tmp_path / "idx")
    before = len(list(fd_dir.iterdir()))
    for _ in range(25):
        idx.save(tmp_path / "idx")
        G2ConSIndex.load(tmp_path / "idx")
    assert len(list(fd_dir.iterdir())) <= before


def _write_jsonl_records(index: G2ConSIndex, folder: Path) -> dict[str, str]:
    """``chunks.jsonl`` and ``units.jsonl`` as format versions 1 and 2 wrote them (one JSON object per record);
    returns their sha256."""
    st = index.stored
    pos = {s: i for i, s in enumerate(st.sentences)}
    chunks = [
        {"id": c.id, "text": c.text, "metadata": dict(c.metadata), "n_tokens": int(n)}
        for c, n in zip(st.chunks, st.chunk_tokens.tolist(), strict=True)
    ]
    units = [
        {
            "id": u.id,
            "parent_id": u.parent_id,
            "text": u.text,
            "n_tokens": u.n_tokens,
            "sentences": [pos[s] for s in u.sentences],
        }
        for u in st.units
    ]
    sums = {}
    for name, rows in (("chunks.jsonl", chunks), ("units.jsonl", units)):
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        (folder / name).write_bytes(data)
        sums[name] = hashlib.sha256(data).hexdigest()
    return sums


_TOO_OLD = (
    r"format version {v}, saved by a version before 0\.1\.0.*"
    r"rebuild it, or load and save it with g2cons-plugins 0\.1\.x first"
)


def test_version_1_layout_is_refused_and_a_save_over_it_removes_its_files(saved: Path, tmp_path: Path) -> None:
    """An index saved by format version 1 (files in the folder itself, before 0.1.0) is refused by name, format
    and what to do; a save of a rebuilt index into that folder removes exactly the files version 1 wrote."""
    old = tmp_path / "old"
    old.mkdir()
    src = V(saved)
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    stored = ("sentences.json", "sentence_vectors.npy", "unit_vectors.npy")
    for name in stored:
        (old / name).write_bytes((src / name).read_bytes())
    manifest["version"] = 1
    manifest["files"] = {k: v for k, v in manifest["files"].items() if k in stored}
    want = G2ConSIndex.load(saved)
    manifest["files"].update(_write_jsonl_records(want, old))
    (old / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (old / "notes.txt").write_text("mine")  # not ours: must survive the save
    for load in (G2ConSIndex.load, read_manifest):
        with pytest.raises(PersistError, match=re.escape(str(old)) + ": an index of " + _TOO_OLD.format(v=1)):
            load(old)
    want.save(old)
    names = sorted(p.name for p in old.iterdir())
    assert "notes.txt" in names and "manifest.json" not in names and "chunks.jsonl" not in names
    assert G2ConSIndex.load(old).stats == want.stats


def test_version_2_layout_is_refused(copy: Path) -> None:
    """An index saved by format version 2 (records as JSON lines, before 0.1.0) is refused with an error that
    names the folder, its format and what to do, never read; the files are left as they were."""
    want = G2ConSIndex.load(copy)
    v2 = V(copy)
    for name in ("chunks.json", "units.json"):
        (v2 / name).unlink()
    manifest = json.loads((v2 / "manifest.json").read_text(encoding="utf-8"))
    manifest["version"] = 2
    del manifest["files"]["chunks.json"], manifest["files"]["units.json"]
    manifest["files"].update(_write_jsonl_records(want, v2))
    data = json.dumps(manifest).encode("utf-8")
    (v2 / "manifest.json").write_bytes(data)
    ptr = json.loads((copy / POINTER).read_text(encoding="utf-8"))
    ptr.update(version=2, manifest_sha256=hashlib.sha256(data).hexdigest())
    (copy / POINTER).write_text(json.dumps(ptr), encoding="utf-8")
    before = sorted((p.relative_to(copy), p.read_bytes()) for p in copy.rglob("*") if p.is_file())
    for load in (G2ConSIndex.load, read_manifest):
        with pytest.raises(PersistError, match=re.escape(str(copy)) + ": an index of " + _TOO_OLD.format(v=2)):
            load(copy)
    assert sorted((p.relative_to(copy), p.read_bytes()) for p in copy.rglob("*") if p.is_file()) == before


def test_a_version_folder_is_not_loaded_as_an_index(saved: Path) -> None:
    """A version folder (a manifest of a format still read, no pointer) is refused with the folder to load."""
    with pytest.raises(PersistError, match=re.escape(str(V(saved))) + r": no CURRENT: a version folder\?"):
        G2ConSIndex.load(V(saved))
