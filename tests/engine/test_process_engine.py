"""ProcessEngine: splitting and counting in worker processes give the local units, counts and index bit for bit;
a worker that dies fails the call clearly (never a hang) and the next call works; no worker outlives close()."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.chunks import Chunk, make_chunks
from g2cons_plugins.embedders import CallableEmbedder
from g2cons_plugins.engine.build_engines import LocalEngine, get_engine
from g2cons_plugins.engine.process_engine import COUNT_HERE_BELOW, ProcessEngine
from g2cons_plugins.errors import InputError
from tests.test_build_speed import EXPECTED, _passages, index_digest

LONG = " ".join(["Radium"] + ["glows"] * 60) + ". It was found in Paris."  # one sentence longer than a unit
ENC = "cl100k_base"


def _children() -> set[int]:
    return {p.pid for p in multiprocessing.active_children() if p.pid is not None}


@pytest.fixture(scope="module")
def engine() -> Iterator[ProcessEngine]:
    """One engine (2 workers, small parts so every call spreads over both) shared by the module's tests."""
    before = _children()
    eng = ProcessEngine(num_workers=2, batch_size=7)
    yield eng
    eng.close()
    assert _children() <= before  # no worker outlives close()


@pytest.fixture(scope="module")
def chunks(corpus) -> list[Chunk]:  # type: ignore[no-untyped-def]
    extra = [
        {"id": "long", "text": LONG},
        {"id": "blank", "text": "First block.\n\nSecond block here."},
        {"id": "zh", "text": "北京是中国的首都。上海是最大的城市！你去过吗？"},
    ]
    return make_chunks(list(corpus) + extra + _passages()[::7])


def test_get_engine_and_bad_arguments() -> None:
    eng = get_engine("processes", num_workers=1)
    assert isinstance(eng, ProcessEngine) and eng.num_workers == 1 and eng.name == "processes"
    assert ProcessEngine().num_workers == len(os.sched_getaffinity(0))
    for bad in (
        lambda: ProcessEngine(num_workers=0),
        lambda: ProcessEngine(batch_size=0),
        lambda: ProcessEngine(start_method="fork"),
        lambda: get_engine("threads"),
    ):
        with pytest.raises(InputError):
            bad()
    with pytest.raises(InputError, match="tokenizer"):
        eng.split([Chunk("a", "A text.")], "no-such-encoding", 16)  # caught here, before any worker starts
    assert eng._pool is None


def test_split_and_submit_split_equal_local(engine: ProcessEngine, chunks: list[Chunk]) -> None:
    for unit_tokens in (16, None):
        local = LocalEngine().split(chunks, ENC, unit_tokens)
        got = engine.split(chunks, ENC, unit_tokens)
        assert got == local
        # as a streaming build: two batches pending at once, each its own future, results in order
        half = len(chunks) // 2
        first, second = (
            engine.submit_split(chunks[:half], ENC, unit_tokens),
            engine.submit_split(chunks[half:], ENC, unit_tokens),
        )
        assert second.result(timeout=60) == local[half:] and first.result(timeout=60) == local[:half]
        if unit_tokens == 16:
            assert any(len(us) > 1 for us in local)  # multi-unit chunks are exercised
            single = next(i for i, us in enumerate(got) if len(us) == 1)
            assert got[single][0].text is chunks[single].text  # a one-unit chunk keeps the chunk's own string
    assert engine.split([], ENC, 16) == []


def test_count_equals_local(engine: ProcessEngine, chunks: list[Chunk]) -> None:
    texts = [c.text for c in chunks]
    engine.split(chunks, ENC, 16)
    assert engine.count(texts, ENC) == LocalEngine().count(texts, ENC)  # from the split's own counts
    many = [f"Text number {i} says {'much ' * (i % 9)}and ends." for i in range(COUNT_HERE_BELOW + 5)]
    assert engine.count(many, ENC) == LocalEngine().count(many, ENC)  # counted in the workers
    assert engine.count(["Not split before."], ENC) == LocalEngine().count(["Not split before."], ENC)


def test_embed_here_equals_local(engine: ProcessEngine, chunks: list[Chunk]) -> None:
    texts = [c.text for c in chunks]
    assert (engine.embed(texts, "hash:32") == LocalEngine().embed(texts, "hash:32")).all()


def test_a_worker_error_is_raised_as_locally(engine: ProcessEngine) -> None:
    bad = [Chunk("a", "Fine text."), Chunk("b", 42)]  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LocalEngine().split(bad, ENC, 16)
    with pytest.raises(TypeError):
        engine.split(bad, ENC, 16)
    assert engine.split(bad[:1], ENC, 16) == LocalEngine().split(bad[:1], ENC, 16)  # the pool is still usable


def test_index_equals_local_build_with_two_workers(engine: ProcessEngine) -> None:
    index = G2ConSIndex.build(_passages(), embedder="hash", config=G2ConSConfig(), engine=engine)
    assert index_digest(index) == EXPECTED
    assert engine._pool is not None  # an engine passed in stays open: its owner closes it


def test_index_equals_local_build_with_one_worker_by_name() -> None:
    before = _children()
    index = G2ConSIndex.build(_passages(), embedder="hash", engine="processes", num_workers=1)
    assert index_digest(index) == EXPECTED
    assert _children() <= before  # the engine the build made from its name was closed


def test_any_embedder_works_by_name_since_embedding_stays_here() -> None:
    emb = CallableEmbedder(lambda t: np.array([[len(x), x.count(" ") + 1.0] for x in t]), dim=2, name="lengths")
    docs = _passages()[:30]
    got = G2ConSIndex.build(docs, embedder=emb, engine="processes", num_workers=1)
    assert index_digest(got) == index_digest(G2ConSIndex.build(docs, embedder=emb))


def test_a_killed_worker_fails_the_call_clearly_then_new_workers_start() -> None:
    """What the system's out-of-memory killer does to a worker: SIGKILL while it splits."""
    big = [Chunk(f"big{i}", "A sentence about radium and Paris. " * 20_000) for i in range(2)]
    before = _children()
    with ProcessEngine(num_workers=2, batch_size=1) as eng:
        eng.split([Chunk("warm", "Warm up.")] * 2, ENC, 16)
        mine = _children() - before
        assert len(mine) == 2
        job = eng.submit_split(big, ENC, 64)
        time.sleep(0.3)
        for pid in mine:
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="died"):
            job.result(timeout=60)
        small = [Chunk("s", "Marie Curie was born in Warsaw. She studied in Paris.")]
        assert eng.split(small, ENC, 8) == LocalEngine().split(small, ENC, 8)  # new workers
    assert _children() <= before
