"""``G2ConSIndex``: the whole method behind one object.

The index holds one reference to an immutable :class:`~g2cons_plugins.snapshot.Snapshot` (stored + derived state,
config, tokenizer, embedder). Selection, retrieval and fusion are functions of a snapshot; the methods here read
the current snapshot once and call them.

Thread-safety contract:

- **Readers never lock.** ``retrieve``, ``select``, ``fuse``, ``save``, ``chunk``, ``stats``... read
  ``self.snapshot`` once at the start and use only that version: a reader sees the state before or after a
  concurrent ``add``/``remove``, never a mix.
- **Writers are serialised.** ``add``, ``remove`` and ``refresh`` take a writer lock, build the next snapshot aside
  (nothing known is re-embedded) and publish it with one assignment. A failed write leaves the index unchanged.
- Across processes, :meth:`save` and :meth:`load` are atomic (see :mod:`g2cons_plugins.storage.persistence`).

Order independence: chunks are stored sorted by id, so an index built from the same chunks in any order, or
reached by any sequence of ``add``/``remove``, is the same index and returns the same results.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .build import Derived, Stored, store, with_vectors
from .chunks import Chunk, Unit, make_chunks
from .config import G2ConSConfig
from .embedders import CachedEmbedder, Embedder, get_embedder
from .engine.snapshot_updates import refreshed, spilled_snapshot, with_added, with_removed
from .engine.streaming import SpooledChunks, spool_chunks, stream_store
from .errors import InputError
from .fusion import FusedItem, FuseOptions, Fusion, fuse_context
from .graph import GraphStats
from .retrieval import RetrievedItem
from .selection import SelectionReport
from .snapshot import Snapshot, make_snapshot
from .storage.memory import release_free_memory
from .storage.step_spill import derive_hooks
from .text import Tokenizer, get_tokenizer
from .text.language import AUTO, check_corpus, choose_embedder

__all__ = ["G2ConSIndex"]

log = logging.getLogger("g2cons_plugins")


class G2ConSIndex:
    """Concept graph + core-chunk selection + concept-path retrieval + fusion over one corpus (see module doc for
    the thread-safety contract)."""

    def __init__(
        self,
        stored: Stored,
        embedder: Embedder,
        config: G2ConSConfig,
        tokenizer: Tokenizer,
        derived: Derived | None = None,
    ) -> None:
        self._write_lock = threading.Lock()
        stored = with_vectors(stored, embedder, config)  # e.g. paper mode over a default build: embed the sentences
        self._snapshot = make_snapshot(
            stored, embedder, config, tokenizer, derived, **derive_hooks(stored)
        )
        log.info("%s", self._snapshot.stats)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> G2ConSIndex:
        """An index whose current state is ``snapshot``."""
        obj = cls.__new__(cls)
        obj._write_lock = threading.Lock()
        obj._snapshot = snapshot
        return obj

    # ------------------------------------------------------------------ pickling / copying (no lock in the state)
    def __getstate__(self) -> dict[str, Any]:
        return {"snapshot": self._snapshot}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._write_lock = threading.Lock()
        self._snapshot = state["snapshot"]

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        chunks: Iterable[Any],
        embedder: str | Embedder | Callable[..., Any] = "auto",
        config: G2ConSConfig | None = None,
        tokenizer: str | Tokenizer | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
        engine: str | Any = "local",
        ray_address: str | None = None,
        num_workers: int | None = None,
    ) -> G2ConSIndex:
        """Build from chunks: ``Chunk``s, strings, ``{"id", "text", "title"?, "metadata"?}`` dicts, or
        ``(id, text)`` pairs (ids: str, or int stored as its decimal string). ``embedder``: "auto" (the default:
        "wordllama", or "multilingual" for a corpus mostly not in English when it is installed), "wordllama",
        "minilm", "openai[:model]", "hash", or an Embedder; it is wrapped in a text-hash cache (on disk when
        ``cache_dir`` is given). The result does not depend on the order of ``chunks``.

        ``engine="ray"`` runs splitting, token counting and embedding as Ray Data ``map_batches`` over actor
        pools (``ray_address``: a cluster, default a local one; ``num_workers`` actors per stage; extra
        ``[ray]``), then derives here; the index equals a local build. The embedder must be a built-in name.
        ``engine="processes"`` splits and counts in ``num_workers`` worker processes (default: every usable
        core; :class:`~g2cons_plugins.engine.process_engine.ProcessEngine`) and embeds here; the index equals a
        local build."""
        config = config or G2ConSConfig()
        if not isinstance(config, G2ConSConfig):
            raise InputError(f"config must be a G2ConSConfig, got {type(config).__name__}")
        # batch by batch into columns (engine.streaming), unless the engine splits the whole corpus in one call (Ray)
        streamed = engine != "ray" and (isinstance(engine, str) or hasattr(engine, "submit_split"))
        t_read = time.perf_counter()
        chunk_list = spool_chunks(chunks) if streamed else make_chunks(chunks)
        t_read = time.perf_counter() - t_read
        texts = chunk_list.texts if isinstance(chunk_list, SpooledChunks) else [c.text for c in chunk_list]
        if isinstance(embedder, str) and embedder.strip().lower() == AUTO:
            embedder = choose_embedder(texts)
        emb = _cached(get_embedder(embedder), cache_dir)
        check_corpus(emb.name, texts)
        tok = get_tokenizer(tokenizer)
        runner = None if engine == "local" else _engine(engine, ray_address, num_workers, emb)
        if runner is not None and engine != "processes":  # the process engine embeds here, with ``emb`` itself
            try:
                get_embedder(emb.name)
            except Exception as e:  # noqa: BLE001 - any failure means workers cannot rebuild it
                raise InputError(
                    f"engine={engine!r} rebuilds the embedder in its workers from its name; {emb.name!r} is not a "
                    f"built-in embedder name ({e})"
                ) from None
        try:
            if isinstance(chunk_list, SpooledChunks):
                stored = stream_store(chunk_list, emb, tok, config, show_progress, engine=runner)
            else:
                stored = store(chunk_list, emb, tok, config, show_progress, engine=runner)
            stored = replace(stored, timings={"read": t_read, **stored.timings})
        finally:
            close = getattr(runner, "close", None)
            if isinstance(engine, str) and close is not None:  # the workers of an engine made here stop here
                close()
        if not show_progress:
            return cls(stored, emb, config, tok)
        from tqdm.auto import tqdm

        from .concepts import analyze

        stored = with_vectors(stored, emb, config, show_progress)
        with tqdm(total=len(stored.sentences), desc="term counts", unit="sentence") as bar:
            terms = analyze(stored.sentences, config, bar.update)
        # the last stage (concepts, edges, PageRank, unit index) reports as one step, with its time
        with tqdm(total=1, desc="concept graph", unit="stage") as bar:
            index = cls.from_snapshot(
                make_snapshot(
                    stored, emb, config, tok, terms=terms, **derive_hooks(stored)
                )
            )
            log.info("%s", index._snapshot.stats)
            bar.update(1)
        return index

    def add(self, chunks: Iterable[Any], show_progress: bool = False, exact: bool | None = None) -> None:
        """Add chunks without re-embedding anything known. Atomic: readers see the index before or after, never a
        mix. ``exact=True``: the derived state is recomputed, so the result equals a fresh build of all chunks;
        ``exact=False``: a trickle update, in time proportional to the new chunks, with a bounded drift from a
        fresh build until :meth:`refresh` (the concept vocabulary stays fixed; see :mod:`g2cons_plugins.engine.update`);
        None (default): a trickle update for a change of at most 1% of a corpus of at least 2,000 chunks while the
        chunks changed since the last exact derive stay within 10% of its size, else exact. On a corpus of 200,000+
        chunks a trickle add of a few chunks leaves the concept vectors, edges and PageRank of the concepts they
        touch to the add that passes 64 waiting chunks, the next removal or :meth:`refresh` (the new chunks are
        stored and retrievable at once; :class:`g2cons_plugins.engine.update.Deferred`). Chunks whose ids sort after
        every known id are appended without copying the index's arrays; others are inserted in id order (a copy)."""
        new = make_chunks(chunks)
        with self._write_lock:
            self._snapshot = with_added(self._snapshot, new, show_progress, exact)

    def remove(self, ids: Iterable[Any], exact: bool | None = None) -> None:
        """Remove chunks by id (unknown ids raise, nothing is removed then). Removed chunks are never retrieved
        again, even before a refresh. ``exact`` as in :meth:`add` (True: the result equals a fresh build of the
        remaining chunks). Atomic like :meth:`add`."""
        if isinstance(ids, (str, bytes)):
            raise InputError("remove() takes an iterable of ids; wrap a single id in a list")
        id_list = list(ids)
        with self._write_lock:
            self._spill_trickled()
            self._snapshot = with_removed(self._snapshot, id_list, exact)
            release_free_memory()  # the replaced snapshot's copies (see Scale: what an updating process gives back)
            self._spill_trickled()  # what the removal made (renumbered incidences, edges, vectors): ~2.7 GB at 1M

    def refresh(self) -> None:
        """Recompute the derived state after trickle updates, so the index equals a fresh build on its chunks
        exactly (nothing is re-embedded); a no-op when :attr:`refreshed`. Atomic like :meth:`add`."""
        with self._write_lock:
            self._spill_trickled()
            self._snapshot = refreshed(self._snapshot)
            release_free_memory()

    def _spill_trickled(self) -> None:
        """Before a removal or a refresh (which make the next state beside this one), and after a removal: the
        arrays earlier trickle updates made in memory moved to temporary file maps, the same state
        (``spilled_snapshot``)."""
        snap = spilled_snapshot(self._snapshot)
        if snap is not self._snapshot:
            self._snapshot = snap
            release_free_memory()

    @property
    def refreshed(self) -> bool:
        """True when the index equals a fresh build on its chunks (no trickle update since the last exact one)."""
        return self._snapshot.pending is None

    # ------------------------------------------------------------------ read access (one snapshot per call)
    @property
    def snapshot(self) -> Snapshot:
        """The current immutable snapshot (read it once and use it for a consistent view)."""
        return self._snapshot

    @property
    def config(self) -> G2ConSConfig:
        """The config (paper symbols: kappa, lambda_, beta, theta_sem, theta_co, k, n_hops)."""
        return self._snapshot.config

    @property
    def embedder(self) -> Embedder:
        """The embedder phi (wrapped in a text-hash cache)."""
        return self._snapshot.embedder

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer that counts every budget."""
        return self._snapshot.tokenizer

    @property
    def stats(self) -> GraphStats:
        """Graph statistics of the current snapshot."""
        return self._snapshot.stats

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per build stage."""
        return self._snapshot.timings

    @property
    def chunks(self) -> Sequence[Chunk]:
        """All chunks, sorted by id (read-only: a tuple, or the columns of a loaded index; ``list()`` it to edit)."""
        return self._snapshot.chunks

    @property
    def units(self) -> Sequence[Unit]:
        """All retrieval units, in chunk-id order (read-only, as :attr:`chunks`)."""
        return self._snapshot.units

    @property
    def stored(self) -> Stored:
        """Stored state of the current snapshot."""
        return self._snapshot.stored

    @property
    def derived(self) -> Derived:
        """Derived state of the current snapshot."""
        return self._snapshot.derived

    def chunk(self, chunk_id: Any) -> Chunk:
        """The chunk with this id (InputError if unknown)."""
        return self._snapshot.chunk(chunk_id)

    def concept_pagerank(self) -> dict[str, float]:
        """PageRank of every concept."""
        return self._snapshot.concept_pagerank()

    def embed_query(self, query: str) -> np.ndarray:
        """phi(query) as a unit vector."""
        return self._snapshot.embed_query(query)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts with the index's tokenizer."""
        return self._snapshot.count_tokens(texts)

    # ------------------------------------------------------------------ the three parts of the method
    def select(
        self,
        kappa: float | None = None,
        kappa_by: str | None = None,
        selector: str | None = None,
        chunk_score: str | None = None,
        price_per_mtok: float = 0.15,
        prompt_tokens_per_call: int = 0,
        seed: int | None = None,
    ) -> SelectionReport:
        """Core-chunk selection (see :func:`g2cons_plugins.selection.select`)."""
        from .selection import select

        return select(
            self._snapshot,
            kappa=kappa,
            kappa_by=kappa_by,
            selector=selector,
            chunk_score=chunk_score,
            price_per_mtok=price_per_mtok,
            prompt_tokens_per_call=prompt_tokens_per_call,
            seed=seed,
        )

    def retrieve(
        self,
        query: str,
        beta: int | None = None,
        strategy: str | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[RetrievedItem]:
        """Concept-path retrieval within ``beta`` tokens (see :func:`g2cons_plugins.retrieval.retrieve`)."""
        from .retrieval import retrieve

        return retrieve(self._snapshot, query, beta=beta, strategy=strategy, query_vector=query_vector)

    def fuse(
        self,
        host: Sequence[Any],
        query: str,
        beta: int | None = None,
        lambda_: float | None = None,
        spill: bool | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[FusedItem]:
        """Dual path: the concept path for ``query`` fused with ``host`` results into one context of at most
        ``beta`` tokens by the config's rule (``fusion``: "novel", the default, "share", "score", or the paper's
        "ensemble"; see :mod:`g2cons_plugins.fusion`). Id-only host items take their text from the graph.
        ``lambda_``: the host's tokens beyond its first novel passage (novel) or its share (share, ensemble) of beta
        (0.2; paper mode 0.6); ``spill``: the ensemble's (True; paper mode False).
        :meth:`fuse_report` also says which host items were not placed and why."""
        return self.fuse_report(host, query, beta, lambda_, spill, query_vector).items

    def fuse_report(
        self,
        host: Sequence[Any],
        query: str,
        beta: int | None = None,
        lambda_: float | None = None,
        spill: bool | None = None,
        query_vector: np.ndarray | None = None,
    ) -> Fusion:
        """:meth:`fuse` with its report: host items given, contributed, and not placed by reason."""
        snap = self._snapshot
        options = FuseOptions.of(snap.config, beta=beta, lambda_=lambda_, spill=spill)
        return fuse_context(snap, host, query, options, query_vector)

    # ------------------------------------------------------------------ export
    def to_networkx(self, chunks: bool = False, kept_ids: Iterable[str] | None = None) -> Any:
        """The concept graph as a ``networkx.Graph`` (concepts with PageRank, df and name flag; edges with Dice
        weight and co-occurrence; with ``chunks``, chunk nodes marked kept/dropped by ``kept_ids``); see
        :func:`g2cons_plugins.storage.export.to_networkx`."""
        from .storage.export import to_networkx

        return to_networkx(self._snapshot, chunks=chunks, kept_ids=kept_ids)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        """Write the current snapshot to ``path`` atomically (see :mod:`g2cons_plugins.storage.persistence`).
        After trickle updates it is saved as the exact snapshot they started from plus their log, where that
        snapshot is saved on the same file system (loaded from, or saved to, any index path there): nothing is
        re-derived, and a load replays the log to the same state. Otherwise the index is refreshed first
        (:meth:`refresh`) and saved whole."""
        from .storage.persistence import save_index

        snap = self._snapshot
        saved = save_index(snap, Path(path))
        with self._write_lock:
            if self._snapshot is snap:  # no update since: keep the saved one (refreshed, or noting where it is saved)
                self._snapshot = saved
        if snap.pending is not None and saved.pending is None:  # refreshed to be saved whole: as refresh() does
            release_free_memory()

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedder: str | Embedder | Callable[..., Any] | None = None,
        tokenizer: str | Tokenizer | None = None,
        verify: bool = False,
        rebuild: bool = False,
    ) -> G2ConSIndex:
        """Load an index saved by :meth:`save` (checksummed and validated; the embedder defaults to the one it
        was built with). ``verify``: also re-derive the graph and compare; ``rebuild``: re-derive instead of
        reading the stored derived state."""
        from .storage.persistence import load_snapshot

        return cls.from_snapshot(load_snapshot(Path(path), embedder, tokenizer, verify=verify, rebuild=rebuild))


def _engine(engine: str | Any, ray_address: str | None, num_workers: int | None, emb: Embedder) -> Any:
    """The build engine ``engine`` names (:func:`~g2cons_plugins.engine.build_engines.get_engine`)."""
    from .engine.build_engines import get_engine

    kw: dict[str, Any] = {}
    if engine == "ray":
        kw = {"address": ray_address, "num_workers": num_workers}
    elif engine == "processes":
        kw = {"num_workers": num_workers, "embedder": emb}
    return get_engine(engine, **kw)


def _cached(emb: Embedder, cache_dir: str | Path | None) -> Embedder:
    if isinstance(emb, CachedEmbedder) and cache_dir is None:
        return emb
    return CachedEmbedder(emb, cache_dir=cache_dir)
