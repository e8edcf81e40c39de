"""Whether an array is a view of a file map: a loaded index's array (``np.load(mmap_mode="r")``, an
:mod:`~g2cons_plugins.storage.npz_view` member) or one an add grew from it (the ``ctypes`` buffer of
:func:`~g2cons_plugins.storage.growable.growable`). Read by :func:`~g2cons_plugins.arrays.ones.share_ones` (a
file's pages are left as they are) and by :mod:`g2cons_plugins.storage.memory` (which unmaps them)."""

from __future__ import annotations

import ctypes
import mmap
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["file_maps", "is_file_backed", "unmap_read_pages"]


def file_maps(a: Any) -> Iterator[Any]:
    """The memory map (if any) at the end of the ``base`` chain of array ``a``: an ``mmap.mmap``, or the buffer of
    a grown loaded array (a ``ctypes`` array)."""
    while isinstance(a, np.ndarray):
        a = a.base
    if isinstance(a, memoryview):  # np.frombuffer's base
        a = a.obj
    if isinstance(a, mmap.mmap | ctypes.Array):
        yield a


def is_file_backed(a: Any) -> bool:
    """Array ``a`` is a view of a file map (a loaded index's array, or one an add grew from it)."""
    return any(True for _ in file_maps(a))


def unmap_read_pages(m: Any) -> bool:
    """Unmap the resident pages of the read-only ``mmap.mmap`` ``m`` (``madvise(MADV_DONTNEED)``: a page read later
    is mapped again from the page cache or the file); False for anything else, a closed or empty map, or where
    ``madvise`` is missing."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None or not isinstance(m, mmap.mmap) or m.closed or not len(m):
        return False
    m.madvise(advice)
    return True
