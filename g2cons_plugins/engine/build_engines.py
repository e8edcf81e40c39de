"""Engines for the embarrassingly parallel stages of a build: splitting chunks into units, counting tokens, embedding.

Three engines with one interface (and the same results):

- :class:`LocalEngine` runs in this process.
- :class:`~g2cons_plugins.engine.process_engine.ProcessEngine` (``"processes"``) splits and counts in worker
  processes on every core of this machine (Punkt is pure Python: threads cannot spread it) and embeds here.
- :class:`RayEngine` runs each stage as Ray Data ``map_batches`` over blocks of rows, in a fixed pool of actors
  (``concurrency=num_workers``) that load the tokenizer or the embedding model once and keep it. Rows carry their
  position, and results are put back in input order on the driver. Ray is an optional extra
  (``pip install "g2cons-plugins[ray]"``), imported only when a :class:`RayEngine` first runs a stage.

Both engines take plain names rather than objects, so workers can rebuild what they need: a tiktoken encoding name
(``"cl100k_base"``) and an embedder spec understood by :func:`g2cons_plugins.embedders.get_embedder`
(``"wordllama"``, ``"minilm"``, ``"hash"``, ``"hash:64"``, or a built-in embedder's ``name``). Derivation (concepts,
graph, PageRank) stays on the driver.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..chunks import Chunk, Unit, split_units
from ..embedders import get_embedder, validate_embeddings
from ..embedders.factory import get_embedder_in_threads
from ..errors import InputError
from ..text import count_tokens_batch, get_tokenizer

DEFAULT_BATCH = 1024
#: Blocks per Ray actor a stage is cut into at least (while a block keeps one row): enough that the actors finish
#: together, few enough that the cost of each block (scheduling, moving rows) stays small beside its work.
BLOCKS_PER_WORKER = 4


class Engine(Protocol):
    """What a build asks of an engine. Every method returns results in input order.

    Optional: ``submit_split(chunks, tokenizer_name, unit_tokens) -> concurrent.futures.Future[list[list[Unit]]]``,
    the asynchronous form of ``split`` (same result, through the future; a failure is raised by its ``result()``).
    A streaming build that finds it submits the next batch before it embeds the current one, so splitting runs
    elsewhere (other processes) while this process embeds; it may keep a few futures pending, and expects each to
    finish whatever it submits after (:class:`~g2cons_plugins.engine.process_engine.ProcessEngine` has it). An
    engine with ``close()`` holds workers; the build closes an engine it made from a name."""

    name: str

    def split(self, chunks: Sequence[Chunk], tokenizer_name: str, unit_tokens: int | None) -> list[list[Unit]]: ...

    def count(self, texts: Sequence[str], tokenizer_name: str) -> list[int]: ...

    def embed(self, texts: Sequence[str], embedder_spec: str) -> np.ndarray: ...


def _check_batch(batch_size: int) -> int:
    if int(batch_size) < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    return int(batch_size)


class LocalEngine:
    """Runs every stage in this process (``embed`` in batches of ``batch_size`` texts, bounding peak memory)."""

    name = "local"

    def __init__(self, batch_size: int = 4096) -> None:
        self.batch_size = _check_batch(batch_size)

    def split(self, chunks: Sequence[Chunk], tokenizer_name: str, unit_tokens: int | None) -> list[list[Unit]]:
        """Units of each chunk (:func:`g2cons_plugins.chunks.split_units`), one list per chunk."""
        tok = get_tokenizer(tokenizer_name)
        return [split_units(c, tok, unit_tokens) for c in chunks]

    def count(self, texts: Sequence[str], tokenizer_name: str) -> list[int]:
        """Token count of each text."""
        return count_tokens_batch(get_tokenizer(tokenizer_name), list(texts))

    def embed(self, texts: Sequence[str], embedder_spec: str) -> np.ndarray:
        """``len(texts) x dim`` float32 vectors from the embedder named by ``embedder_spec``."""
        emb = get_embedder(embedder_spec)
        items = list(texts)
        out = np.empty((len(items), emb.dim), dtype=np.float32)
        for s in range(0, len(items), self.batch_size):
            part = items[s : s + self.batch_size]
            out[s : s + len(part)] = validate_embeddings(emb.embed(part), len(part), emb.dim, emb.name)
        return out

    def __repr__(self) -> str:
        return f"LocalEngine(batch_size={self.batch_size})"


# ------------------------------------------------------------------------------------------------ Ray
# Callable classes for ``map_batches``: Ray builds one per actor and calls it on each batch (a dict of arrays).


class _SplitWorker:
    def __init__(self, tokenizer_name: str, unit_tokens: int | None) -> None:
        self.tok = get_tokenizer(tokenizer_name)
        self.unit_tokens = unit_tokens

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = []
        for cid, text in zip(batch["id"].tolist(), batch["text"].tolist(), strict=True):
            units = split_units(Chunk(id=cid, text=text), self.tok, self.unit_tokens)
            out.append(json.dumps([[u.id, u.parent_id, u.text, u.n_tokens, list(u.sentences)] for u in units]))
        return {"i": batch["i"], "units": np.array(out, dtype=object)}


class _CountWorker:
    def __init__(self, tokenizer_name: str) -> None:
        self.tok = get_tokenizer(tokenizer_name)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        counts = count_tokens_batch(self.tok, batch["text"].tolist())
        return {"i": batch["i"], "n": np.asarray(counts, dtype=np.int64)}


class _EmbedWorker:
    def __init__(self, embedder_spec: str, threads: int) -> None:
        self.emb = get_embedder_in_threads(embedder_spec, threads)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = batch["text"].tolist()
        vecs = validate_embeddings(self.emb.embed(texts), len(texts), self.emb.dim, self.emb.name)
        return {"i": batch["i"], "vec": vecs}


def _block_rows(n_rows: int, workers: int, batch_size: int) -> int:
    """Rows per block: ``batch_size`` at most, and small enough for :data:`BLOCKS_PER_WORKER` blocks per actor."""
    return max(1, min(batch_size, -(-n_rows // (BLOCKS_PER_WORKER * workers))))


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError('the Ray engine needs Ray Data: pip install "g2cons-plugins[ray]"') from exc
    return ray


class RayEngine:
    """Runs the stages on a Ray cluster (``address``; ``None`` starts or joins a local one).

    ``num_workers``: actors per stage (default: as many as the cluster's live nodes can hold).
    ``cpus_per_worker``: the CPUs Ray reserves for each actor (``num_cpus``); an embedder with its own thread pool
    (MiniLM's onnxruntime) runs that many threads in each actor, so actors side by side share the cores instead of
    each starting a thread per core (MiniLM on 2 cores: 2 actors embedded at 0.77x the speed of 1 when each ran a
    thread per core, at 1.66x with one thread each; ``docs/scale.md``). Pass the engine itself to a build for a
    share other than 1: ``G2ConSIndex.build(chunks, engine=RayEngine(cpus_per_worker=4))``. ``batch_size``: the
    most rows per ``map_batches`` call (fewer where a stage has too few rows for :data:`BLOCKS_PER_WORKER` blocks
    per actor; wordllama on 2 cores embedded 77k units 1.6x faster on 2 workers than on 1 in 1,024-row blocks,
    1.2x in 256-row blocks). ``init_kwargs`` go to ``ray.init`` when this engine starts Ray.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        num_workers: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        cpus_per_worker: int = 1,
        **init_kwargs: Any,
    ) -> None:
        if num_workers is not None and int(num_workers) < 1:
            raise InputError(f"num_workers must be >= 1, got {num_workers}")
        if int(cpus_per_worker) < 1:
            raise InputError(f"cpus_per_worker must be >= 1, got {cpus_per_worker}")
        self.address = address
        self.num_workers = None if num_workers is None else int(num_workers)
        self.cpus_per_worker = int(cpus_per_worker)
        self.batch_size = _check_batch(batch_size)
        self.init_kwargs = init_kwargs

    def _start(self) -> Any:
        ray = _ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            }
            kwargs.update(self.init_kwargs)
            ray.init(address=self.address, **kwargs)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        return ray

    def _workers(self, ray: Any) -> int:
        """``num_workers``, else the actors of ``cpus_per_worker`` CPUs the cluster's live nodes can hold."""
        nodes = [n.get("Resources", {}).get("CPU", 0.0) for n in ray.nodes() if n.get("Alive")]
        if max(nodes, default=0.0) < self.cpus_per_worker:  # Ray would wait for ever for an actor it cannot place
            raise InputError(
                f"cpus_per_worker={self.cpus_per_worker} is more than any node of the Ray cluster has "
                f"(the most: {max(nodes, default=0.0):g} CPUs)"
            )
        if self.num_workers is not None:
            return self.num_workers
        return max(1, sum(int(c) // self.cpus_per_worker for c in nodes))

    def _run(self, rows: list[dict[str, Any]], worker: type, args: tuple[Any, ...]) -> dict[str, np.ndarray]:
        """``map_batches`` of ``worker(*args)`` over ``rows`` (each with a position ``i``); columns in input order."""
        ray = self._start()
        workers = self._workers(ray)
        size = _block_rows(len(rows), workers, self.batch_size)
        ds = ray.data.from_items(rows, override_num_blocks=-(-len(rows) // size))
        ds = ds.map_batches(
            worker,
            fn_constructor_args=args,
            batch_size=size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=self.cpus_per_worker,
        )
        parts = list(ds.iter_batches(batch_size=None, batch_format="numpy"))
        if not parts:
            raise RuntimeError("Ray returned no batches")
        cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        order = np.argsort(cols["i"], kind="stable")
        if not np.array_equal(cols["i"][order], np.arange(len(rows))):
            raise RuntimeError(f"Ray returned {len(order)} rows for {len(rows)} inputs")
        return {k: v[order] for k, v in cols.items()}

    def split(self, chunks: Sequence[Chunk], tokenizer_name: str, unit_tokens: int | None) -> list[list[Unit]]:
        """Units of each chunk, one list per chunk, computed by Ray actors (equal to :class:`LocalEngine`)."""
        if not chunks:
            return []
        rows = [{"i": i, "id": c.id, "text": c.text} for i, c in enumerate(chunks)]
        out = self._run(rows, _SplitWorker, (tokenizer_name, unit_tokens))
        return [
            [Unit(uid, pid, text, int(n), tuple(sents)) for uid, pid, text, n, sents in json.loads(s)]
            for s in out["units"].tolist()
        ]

    def count(self, texts: Sequence[str], tokenizer_name: str) -> list[int]:
        """Token count of each text, computed by Ray actors."""
        if not texts:
            return []
        rows = [{"i": i, "text": t} for i, t in enumerate(texts)]
        return [int(n) for n in self._run(rows, _CountWorker, (tokenizer_name,))["n"]]

    def embed(self, texts: Sequence[str], embedder_spec: str) -> np.ndarray:
        """``len(texts) x dim`` float32 vectors, embedded by Ray actors that each hold one model."""
        if not texts:
            return np.zeros((0, get_embedder(embedder_spec).dim), dtype=np.float32)
        rows = [{"i": i, "text": t} for i, t in enumerate(texts)]
        vecs = self._run(rows, _EmbedWorker, (embedder_spec, self.cpus_per_worker))["vec"]
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return (
            f"RayEngine(address={self.address!r}, num_workers={self.num_workers}, "
            f"cpus_per_worker={self.cpus_per_worker}, batch_size={self.batch_size})"
        )


ENGINE_NAMES = ("local", "processes", "ray")


def get_engine(spec: str | Engine | None = None, **kwargs: Any) -> Engine:
    """``None``/"local" -> :class:`LocalEngine`; "processes" -> :class:`~.process_engine.ProcessEngine`; "ray" ->
    :class:`RayEngine` (``kwargs`` go to the constructor); an object with ``split``/``count``/``embed`` is returned
    as is."""
    if spec is None or spec == "local":
        return LocalEngine(**kwargs)
    if spec == "processes":
        from .process_engine import ProcessEngine

        return ProcessEngine(**kwargs)
    if spec == "ray":
        return RayEngine(**kwargs)
    if isinstance(spec, str):
        raise InputError(f"unknown engine {spec!r}; choose one of {', '.join(map(repr, ENGINE_NAMES))}")
    if not all(hasattr(spec, m) for m in ("split", "count", "embed")):
        raise InputError(
            f"engine must be one of {', '.join(map(repr, ENGINE_NAMES))} or have split/count/embed; "
            f"got {type(spec).__name__}"
        )
    return spec
