"""The unit index's HNSW graph, built while a streamed build embeds.

A build over enough units gets an HNSW graph over its unit vectors (:meth:`~g2cons_plugins.config.G2ConSConfig.
unit_index_kind`). Built after the stream, it was a stage of its own: at 3M passages (4.6M units, 2 cores) 1,145 s
of a 4,267 s build, with ~0.6 of a core idle while the stream split and embedded. :class:`StreamGraph` adds each
batch's unit vectors to the graph in a background thread (:class:`~g2cons_plugins.arrays.unit_hnsw.GraphBuilder`)
as soon as the batch is embedded, so the graph grows while the next batch is split and embedded.

It starts at the first batch after which the snapshot is sure or likely to get the graph: the units so far, and at
least one per chunk, reach the graph's size (a corpus of 400,000+ chunks from its first batch under the default
config), or the units per chunk so far, over every chunk, reach it with :data:`MARGIN` to spare; the rows before it
are read back from the vector spool. A graph started on a forecast the corpus then misses is dropped (the snapshot
gets the index its size calls for). Once built, the graph moves to a file (:func:`file_backed`).
Where the ANN library is missing it does nothing (the snapshot then warns, as a build without the stream does).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..config import G2ConSConfig
from ..errors import PersistError
from ..storage.memory import release_free_memory
from ..storage.spill import can_spill
from ..storage.spool import ArraySpool

__all__ = ["StreamGraph"]

#: rows read back from the vector spool per batch when the graph starts late
CATCH_UP_ROWS = 1 << 16
#: the forecast units (units per chunk so far x chunks) must pass the graph's size by this factor to start it
MARGIN = 1.1


class StreamGraph:
    """Feeds a unit graph builder batch by batch once the snapshot will have the graph (see module doc)."""

    def __init__(self, config: G2ConSConfig, n_chunks: int) -> None:
        self.config, self.n_chunks = config, n_chunks
        self._builder: Any = None
        self._no_library = False
        self.waited = 0.0  # seconds the stream and its end waited for the graph

    def after_batch(self, spool: ArraySpool, vecs: np.ndarray, chunks_done: int) -> None:
        """The batch ``vecs`` was just appended to ``spool`` (the unit vectors of the first ``chunks_done`` chunks):
        add it to the graph, starting the graph (with every earlier row) when it is sure or likely (module doc)."""
        if self._no_library:
            return
        if self._builder is None:
            forecast = MARGIN * spool.rows / max(1, chunks_done) * self.n_chunks
            kind = self.config.unit_index_kind
            if kind(max(spool.rows, self.n_chunks)) != "hnsw" and kind(int(forecast)) != "hnsw":
                return
            from ..arrays.unit_hnsw import GraphBuilder, unit_ann_params

            try:
                self._builder = GraphBuilder(spool.row_shape[0], unit_ann_params(self.config))
            except ImportError:
                self._no_library = True
                return
            earlier = spool.rows - len(vecs)
            for a in range(0, earlier, CATCH_UP_ROWS):
                self._builder.add(spool.read_rows(a, min(earlier, a + CATCH_UP_ROWS)))
        self._builder.add(vecs)

    def finish(self, n_units: int) -> Any:
        """The built unit index (a :class:`~g2cons_plugins.arrays.unit_hnsw.UnitANN`) over ``n_units`` rows, its graph
        in a file (:func:`file_backed`), or None when no graph was started or the corpus missed the forecast."""
        builder, self._builder = self._builder, None  # the graph in memory goes with the builder
        if builder is None:
            return None
        if self.config.unit_index_kind(n_units) != "hnsw":  # started on a forecast the corpus missed
            builder.close()
            return None
        ann = builder.finish()
        self.waited, dim = builder.waited, builder.dim
        del builder
        if len(ann) != n_units:
            raise RuntimeError(f"the unit graph holds {len(ann)} of {n_units} units")
        out = file_backed(ann, dim)
        del ann
        release_free_memory()  # the graph was made in its thread's malloc arena: freed there, returned only on ask
        return out

    def close(self) -> None:
        """Stop the builder (after a failure); idempotent."""
        if self._builder is not None:
            self._builder.close()


def file_backed(ann: Any, dim: int) -> Any:
    """``ann`` with its graph written to an unlinked temporary file and memory-mapped, as a loaded index's graph:
    clean file pages the kernel can drop, so the derive that follows the stream does not hold the graph in its
    memory (at 300k passages, 463k units: +252 MB on the build's peak otherwise). A later update copies it into
    memory, as after a load. ``ann`` itself where the temporary directory is in memory or the write fails."""
    from ..arrays.unit_hnsw import restored_unit_ann, save_unit_graph

    if not can_spill():
        return ann
    fd, name = tempfile.mkstemp(prefix="g2cons-graph-", suffix=".usearch")
    os.close(fd)
    try:
        save_unit_graph(ann, Path(name))
        return restored_unit_ann(Path(name), ann.keys, ann.params, dim, mmap=True)
    except (OSError, RuntimeError, PersistError):  # no space: the graph stays in memory
        return ann
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)  # the map keeps the pages: no name is left behind
