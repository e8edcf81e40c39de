"""The disk embedding cache: one SQLite file however it is called, safe with concurrent processes, and a damaged
cache never yields a wrong vector (it warns and recomputes)."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2cons_plugins.embedders import CachedEmbedder, HashEmbedder

DIM = 256


class Counting:
    """HashEmbedder that records what it is asked to embed."""

    def __init__(self) -> None:
        self.name, self.dim = "counting", DIM
        self.calls: list[list[str]] = []
        self._h = HashEmbedder(DIM)

    def embed(self, texts: Any) -> np.ndarray:
        self.calls.append(list(texts))
        return self._h.embed(texts)


def texts(n: int) -> list[str]:
    return [f"text number {i} about topic {i % 7}" for i in range(n)]


def ref(items: list[str]) -> np.ndarray:
    return HashEmbedder(DIM).embed(items)


def folder(tmp_path: Path) -> Path:
    return tmp_path / "counting"


def fill(tmp_path: Path, items: list[str]) -> None:
    c = CachedEmbedder(Counting(), cache_dir=tmp_path)
    for t in items:  # one call per text: the call pattern of a held-out evaluation
        c.embed([t])
    c.close()


def test_single_text_calls_fill_one_file_and_reload(tmp_path: Path) -> None:
    items = texts(300)
    c = CachedEmbedder(Counting(), cache_dir=tmp_path)
    for t in items:
        c.embed([t])
    assert len(list(folder(tmp_path).iterdir())) <= 3  # the database and, while open, its -wal / -shm files
    c.close()
    assert [p.name for p in folder(tmp_path).iterdir()] == ["vectors.sqlite"]
    inner = Counting()
    again = CachedEmbedder(inner, cache_dir=tmp_path)
    assert len(again) == 300 and items[5] in again and "never seen" not in again
    np.testing.assert_array_equal(again.embed(items), ref(items))
    assert inner.calls == [] and again.n_computed == 0


def test_memo_is_bounded_and_the_rest_comes_from_disk(tmp_path: Path) -> None:
    items = texts(50)
    fill(tmp_path, items)
    inner = Counting()
    c = CachedEmbedder(inner, cache_dir=tmp_path, max_items=10)
    np.testing.assert_array_equal(c.embed(items), ref(items))
    assert len(c._rows) == 10 and inner.calls == []
    np.testing.assert_array_equal(c.embed(items[:3]), ref(items[:3]))  # evicted ones are read again
    assert inner.calls == []


def _worker(cache: CachedEmbedder, seed: int, out: Any) -> None:
    items = texts(120)
    order = np.random.default_rng(seed).permutation(len(items)).tolist()
    bad = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in order:
            got = cache.embed([items[i]])  # write (or read what another process wrote)
            bad += int(not np.array_equal(got, ref([items[i]])))
            j = order[(i * 7) % len(order)]
            bad += int(not np.array_equal(cache.embed([items[j]]), ref([items[j]])))  # read
    out.put((seed, bad, [str(w.message) for w in caught]))


def test_concurrent_processes_read_and_write_one_cache(tmp_path: Path) -> None:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    cache = CachedEmbedder(Counting(), cache_dir=tmp_path)
    cache.embed(["opened in the parent"])  # with fork, the children inherit this connection and must not use it
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(cache, seed, out)) for seed in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [(bad, msgs) for _, bad, msgs in results] == [(0, [])] * 3
    inner = Counting()
    after = CachedEmbedder(inner, cache_dir=tmp_path)
    np.testing.assert_array_equal(after.embed(texts(120)), ref(texts(120)))
    assert inner.calls == [] and len(after) == 121


def _damage_row(db: Path, key: str, how: str) -> None:
    conn = sqlite3.connect(db)
    (vec,) = conn.execute("SELECT vec FROM vectors WHERE key = ?", (key,)).fetchone()
    if how == "flipped_byte":  # a bit flip inside the vector: still a float, still finite
        b = bytearray(vec)
        b[9] ^= 0x01
        conn.execute("UPDATE vectors SET vec = ? WHERE key = ?", (bytes(b), key))
    elif how == "short_row":
        conn.execute("UPDATE vectors SET vec = ? WHERE key = ?", (vec[:-4], key))
    else:  # "bad_digest"
        conn.execute("UPDATE vectors SET digest = ? WHERE key = ?", (b"\x00" * 16, key))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("how", ["flipped_byte", "short_row", "bad_digest"])
def test_a_damaged_row_is_recomputed_with_a_warning(tmp_path: Path, how: str) -> None:
    items = texts(20)
    fill(tmp_path, items)
    key = CachedEmbedder(Counting()).key(items[4])
    _damage_row(folder(tmp_path) / "vectors.sqlite", key, how)
    inner = Counting()
    c = CachedEmbedder(inner, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match=rf"damaged row.*{key}"):
        out = c.embed(items)
    np.testing.assert_array_equal(out, ref(items))  # never the damaged vector
    assert inner.calls == [[items[4]]]  # only the damaged one is computed again ...
    c.close()
    inner2 = Counting()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(CachedEmbedder(inner2, cache_dir=tmp_path).embed(items), ref(items))
    assert inner2.calls == []  # ... and written over the damaged row


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty_file"])
def test_a_damaged_database_is_ignored_with_a_warning(tmp_path: Path, how: str) -> None:
    items = texts(400)  # about 0.5 MB: many pages, so a cut loses rows
    fill(tmp_path, items)
    db = folder(tmp_path) / "vectors.sqlite"
    data = db.read_bytes()
    if how == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    elif how == "truncated":
        db.write_bytes(data[: len(data) // 2])
    else:
        db.write_bytes(b"")
    c = CachedEmbedder(Counting(), cache_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = c.embed(items)
        out2 = c.embed(items[:5])
    np.testing.assert_array_equal(out, ref(items))
    np.testing.assert_array_equal(out2, ref(items[:5]))
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    if how != "empty_file":  # an empty file is a valid new database
        assert msgs and all("vectors.sqlite" in m for m in msgs), msgs


def test_shards_of_the_earlier_format_are_imported_once(tmp_path: Path) -> None:
    items = texts(40)
    d = folder(tmp_path)
    d.mkdir()
    key = CachedEmbedder(Counting()).key
    for n, t in enumerate(items):  # the earlier format: one .npy + .keys.json pair per call
        np.save(d / f"shard-{n:05d}.npy", ref([t]))
        (d / f"shard-{n:05d}.keys.json").write_text(json.dumps([key(t)]))
    inner = Counting()
    c = CachedEmbedder(inner, cache_dir=tmp_path)
    np.testing.assert_array_equal(c.embed(items), ref(items))
    assert inner.calls == []
    c.close()
    assert [p.name for p in d.iterdir()] == ["vectors.sqlite"]


def test_queries_and_seeded_vectors_stay_in_memory(tmp_path: Path) -> None:
    c = CachedEmbedder(Counting(), cache_dir=tmp_path)
    c.embed(["a"])
    c.add(["b"], ref(["b"]))
    assert len(c) == 2 and "b" in c
    assert "b" not in CachedEmbedder(Counting(), cache_dir=tmp_path)
