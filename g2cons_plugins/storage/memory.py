"""Giving memory back to the operating system: freed heap pages, and the pages of memory-mapped index files.

The concept graph is built on worker threads (:func:`g2cons_plugins.graph.build_edges`). glibc gives each thread
its own malloc arena and keeps what a thread freed there for later use, so after a threaded pass the resident
memory stays up to ~40% above what the result holds (measured at 80k passages: derive kept 686 MB instead of
479 MB single-threaded; 424 MB after :func:`release_free_memory`). ``malloc_trim(0)`` returns those free pages;
it takes milliseconds. Elsewhere (another C library, another OS) this is a no-op. A build or exact derive calls it
through its memory hook (:func:`after_build_step`, passed as ``derive``'s ``after_step``: the method itself knows
nothing of memory) at the step boundaries in :data:`RELEASE_AFTER`. A trickle update calls it before
the unit index is updated, and ``remove`` / ``refresh`` once the new snapshot replaced the old one (not every
``add``: the next update would fault fresh pages again).

A loaded index reads its arrays from read-only memory maps of its files (:mod:`~g2cons_plugins.storage.npz_view`,
``np.load(mmap_mode="r")``). Checking them on load reads every page once, and each page read stays mapped into the
process: at 100k passages 566 MB of clean file pages counted as resident after a load that needed none of them.
:func:`drop_mapped_pages` unmaps those pages (``madvise(MADV_DONTNEED)``; the file and the page cache are untouched,
a later read maps the page again from the cache), so the process holds only what queries touch. It also unmaps the
unwritten file pages of arrays an add grew (:func:`~g2cons_plugins.storage.growable.drop_clean_pages`); a removal
calls it as soon as it has copied each group of arrays.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys
from collections.abc import Iterable, Iterator
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

import numpy as np

from ..arrays.mapped import file_maps, unmap_read_pages
from ..arrays.tables import column_arrays
from .growable import drop_clean_pages

__all__ = ["RELEASE_AFTER", "after_build_step", "drop_mapped_pages", "release_free_memory", "state_arrays"]


@cache
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Return the free pages of every malloc arena to the OS (glibc); True when it could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


# the steps of a derive (:func:`g2cons_plugins.build.derive`, :func:`g2cons_plugins.graph.build_edges`) after which
# the free heap is given back: where the worker threads' arenas hold the most freed memory
RELEASE_AFTER = frozenset(
    {
        "edges.candidates",  # the candidate blocks are computed: what the threads' products freed
        "edges.pairs",  # the kept pairs are sorted: the candidate blocks (~3x the edges) are freed
        "names",  # the bridge-name thread is done: what it and the graph's temporaries freed
    }
)


def after_build_step(step: str) -> None:
    """The memory hook of a derive (its ``after_step``): after each step in :data:`RELEASE_AFTER`,
    :func:`release_free_memory`; nothing after the others."""
    if step in RELEASE_AFTER:
        release_free_memory()


def drop_mapped_pages(arrays: Iterable[Any]) -> int:
    """Unmap the resident pages of every read-only file map behind ``arrays`` (NumPy arrays, sparse matrices and
    columns of texts or tables of chunks and units, :func:`~g2cons_plugins.arrays.tables.column_arrays`; other
    objects are skipped); returns how many maps were advised. The arrays stay valid: a page read later is
    mapped again from the page cache or the file. A no-op where ``madvise`` is missing."""
    seen: dict[int, Any] = {}
    for a in arrays:
        if hasattr(a, "indptr"):
            parts = [getattr(a, k, None) for k in ("data", "indices", "indptr")]
        elif isinstance(a, np.ndarray):
            parts = [a]
        else:
            parts = list(column_arrays(a))  # a column of texts, a table of chunks or units: its arrays
        for part in parts:
            for m in file_maps(part):
                seen.setdefault(id(m), m)
    if getattr(mmap, "MADV_DONTNEED", None) is None:
        return 0
    done = 0
    for m in seen.values():
        if isinstance(m, mmap.mmap):
            done += unmap_read_pages(m)
        elif drop_clean_pages(m):  # the file pages of a grown loaded array (no-op for any other buffer)
            done += 1
    return done


def state_arrays(*states: Any) -> Iterator[Any]:
    """The fields of dataclass instances ``states`` (arrays, sparse matrices, ...), nested dataclasses followed
    down (an index state's edge set, its near pairs and the term index)."""
    for obj in states:
        for f in fields(obj):
            v = getattr(obj, f.name)
            if is_dataclass(v) and not isinstance(v, type):
                yield from state_arrays(v)
            else:
                yield v
