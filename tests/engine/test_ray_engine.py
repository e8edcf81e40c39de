"""Engines: LocalEngine and RayEngine (Ray's local mode) give the same units, counts and vectors."""

from __future__ import annotations

import numpy as np
import pytest

from g2cons_plugins.chunks import Chunk, make_chunks
from g2cons_plugins.engine.build_engines import LocalEngine, RayEngine, get_engine
from g2cons_plugins.errors import InputError

LONG = " ".join(["Radium"] + ["glows"] * 60) + ". It was found in Paris."  # one sentence longer than a unit


@pytest.fixture(scope="module")
def chunks(corpus) -> list[Chunk]:  # type: ignore[no-untyped-def]
    extra = [{"id": "long", "text": LONG}, {"id": "blank", "text": "First block.\n\nSecond block here."}]
    return make_chunks(list(corpus) + extra)


def test_get_engine_and_bad_arguments() -> None:
    assert isinstance(get_engine(None), LocalEngine)
    assert isinstance(get_engine("ray", num_workers=1), RayEngine)
    bad_ones = (
        lambda: get_engine("spark"),
        lambda: RayEngine(num_workers=0),
        lambda: RayEngine(cpus_per_worker=0),
        lambda: LocalEngine(batch_size=0),
    )
    for bad in bad_ones:
        with pytest.raises(InputError):
            bad()


def test_local_engine_batches_do_not_change_vectors(chunks: list[Chunk]) -> None:
    texts = [c.text for c in chunks]
    whole = LocalEngine(batch_size=10_000).embed(texts, "hash")
    assert np.array_equal(LocalEngine(batch_size=3).embed(texts, "hash"), whole)
    split = LocalEngine().split(chunks, "cl100k_base", 16)
    assert any(len(us) > 1 for us in split)  # the test corpus does exercise multi-unit chunks


def test_ray_blocks_are_big_but_spread_over_the_actors() -> None:
    from g2cons_plugins.engine.build_engines import BLOCKS_PER_WORKER, _block_rows

    assert _block_rows(1_000_000, 2, 1024) == 1024  # many rows: full blocks
    assert _block_rows(4_600, 2, 1024) == 575  # few rows: BLOCKS_PER_WORKER blocks per actor
    assert -(-4_600 // _block_rows(4_600, 2, 1024)) == BLOCKS_PER_WORKER * 2
    assert _block_rows(3, 4, 1024) == 1 and _block_rows(0, 2, 1024) == 1


class _Cluster:
    def __init__(self, *cpus: int) -> None:
        self.cpus = cpus

    def nodes(self) -> list[dict[str, object]]:
        dead = {"Alive": False, "Resources": {"CPU": 64.0}}
        return [{"Alive": True, "Resources": {"CPU": float(c)}} for c in self.cpus] + [dead]


def test_ray_actors_per_cluster_and_an_actor_larger_than_any_node() -> None:
    """The default actor count is what the live nodes can hold; a share no live node has is an error (Ray itself
    would wait for the actor for ever: tried, it hung)."""
    assert RayEngine(cpus_per_worker=2)._workers(_Cluster(8)) == 4
    assert RayEngine(cpus_per_worker=2)._workers(_Cluster(3, 3)) == 2  # one actor per 3-CPU node, not 6 // 2
    assert RayEngine(num_workers=5, cpus_per_worker=1)._workers(_Cluster(2)) == 5
    with pytest.raises(InputError, match="cpus_per_worker=4 is more than any node of the Ray cluster has"):
        RayEngine(num_workers=1, cpus_per_worker=4)._workers(_Cluster(3, 3))  # 6 CPUs in all, 3 at most on one


def test_ray_embed_worker_takes_its_cpus_as_threads() -> None:
    """An embed actor's MiniLM session runs the actor's CPUs worth of threads, not one per core of the machine."""
    from g2cons_plugins.engine.build_engines import _EmbedWorker

    assert _EmbedWorker("minilm", 1).emb.threads == 1
    assert _EmbedWorker("minilm", 4).emb.threads == 4
    assert "cpus_per_worker=2" in repr(RayEngine(cpus_per_worker=2))


def test_cli_cpus_per_worker_needs_ray(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from g2cons_plugins.cli import main

    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "in.txt").write_text("Marie Curie studied radium in Paris.", encoding="utf-8")
    code = main(["build", str(tmp_path / "input"), "--graph", str(tmp_path / "g"), "--cpus-per-worker", "2", "--quiet"])
    assert code != 0 and "--cpus-per-worker is for --engine ray" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()


ray = pytest.importorskip("ray", reason="the Ray engine needs the 'ray' extra")


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    started = not ray.is_initialized()
    yield RayEngine(num_workers=2, batch_size=4, num_cpus=2)
    if started:
        ray.shutdown()


def test_ray_split_equals_local(engine: RayEngine, chunks: list[Chunk]) -> None:
    for unit_tokens in (16, None):
        assert engine.split(chunks, "cl100k_base", unit_tokens) == LocalEngine().split(
            chunks, "cl100k_base", unit_tokens
        )


def test_ray_count_and_embed_equal_local(engine: RayEngine, chunks: list[Chunk]) -> None:
    texts = [c.text for c in chunks] * 3  # more rows than one batch, in several blocks
    assert engine.count(texts, "cl100k_base") == LocalEngine().count(texts, "cl100k_base")
    specs = ["hash:32"]
    try:
        import wordllama  # noqa: F401

        specs.append("wordllama")
    except ImportError:
        pass
    for spec in specs:
        got, want = engine.embed(texts, spec), LocalEngine().embed(texts, spec)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() <= 1e-6


def test_ray_empty_inputs(engine: RayEngine) -> None:
    assert engine.split([], "cl100k_base", 16) == []
    assert engine.count([], "cl100k_base") == []
    assert engine.embed([], "hash:8").shape == (0, 8)


def test_cli_build_on_ray_equals_local(engine: RayEngine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``g2cons build --engine ray`` saves the same data files as a local build (Ray's local mode)."""
    from g2cons_plugins.cli import main

    src = tmp_path / "input"
    src.mkdir()
    for i in range(12):
        (src / f"doc{i}.txt").write_text(
            f"Marie Curie studied radium number {i}. Pierre Curie worked in Paris with her. " * 3, encoding="utf-8"
        )
    opts = ["--embedder", "hash", "--quiet"]
    assert main(["build", str(src), "--graph", str(tmp_path / "local"), *opts]) == 0
    ray_opts = ["--engine", "ray", "--num-workers", "1", "--cpus-per-worker", "1", *opts]
    assert main(["build", str(src), "--graph", str(tmp_path / "ray"), *ray_opts]) == 0
    for name in ("stored.npz", "unit_vectors.npy", "derived.npz"):
        a = next((tmp_path / "local").glob(f"v-*/{name}")).read_bytes()
        b = next((tmp_path / "ray").glob(f"v-*/{name}")).read_bytes()
        assert a == b, name
