"""The rows a removal keeps of a file-backed array, written to a temporary file and mapped read-only, so the new
snapshot's copy is file-backed like the array it replaces instead of anonymous memory.

Why: a removal renumbers the units, so the new snapshot needs the unit vectors without the removed rows. At 1M
passages that copy is 1.5 GB, and in memory it sat on top of everything else the removal holds (the old snapshot
stays whole until the swap: readers may hold it). Written to a file, the copy lives in the page cache, which the
kernel can write back and reclaim; the process maps only the pages a query reads, as it does for a loaded index.

The file is made in the temporary directory (``tempfile.gettempdir()``, ``TMPDIR`` honoured) and unlinked at once:
no name is left behind, and its space is freed when the last view of the map goes. Only on POSIX, only for an
array that is itself a view of a file map (a loaded index, or one an add grew) and of at least
:data:`SPILL_MIN_BYTES`, and only where the temporary directory is on a disk: a ``tmpfs`` or ``ramfs`` holds its
files in memory that the kernel cannot drop, so the copy would only change its name. Anywhere else, or when the
file cannot be written (no space), the rows are copied into memory as before. An add that later grows the
spilled array copies it (:mod:`g2cons_plugins.storage.growable` maps arrays from named files only).
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np

from ..arrays.mapped import is_file_backed
from .memory import drop_mapped_pages

__all__ = ["SPILL_MIN_BYTES", "in_memory_fs", "kept_rows"]

SPILL_MIN_BYTES = 64 * 2**20  # smaller arrays are copied into memory (a file for them is not worth it)
_BLOCK_BYTES = 32 * 2**20  # rows written per write call: the temporary copy of one block


def kept_rows(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``a[keep]`` (rows, a boolean mask), read-only and C-contiguous: file-backed (module doc) where ``a`` is a
    file-backed array of at least :data:`SPILL_MIN_BYTES`, else a copy in memory."""
    keep = np.asarray(keep, dtype=bool)
    if len(keep) != len(a):
        raise ValueError(f"keep has {len(keep)} items for {len(a)} rows")
    if (
        os.name == "posix"
        and a.ndim >= 1
        and a.nbytes >= SPILL_MIN_BYTES
        and is_file_backed(a)
        and not in_memory_fs(tempfile.gettempdir())
    ):
        try:
            return _spilled(a, keep)
        except OSError:
            pass  # no room in the temporary directory: in memory, as for any other array
    out = np.ascontiguousarray(a[keep])
    out.flags.writeable = False
    return out


_MEMORY_FS = frozenset({"tmpfs", "ramfs"})


def in_memory_fs(path: str, mounts: str = "/proc/mounts") -> bool:
    """``path`` is on a file system that keeps its files in memory (``tmpfs``, ``ramfs``), by the longest mount
    point of the table ``mounts`` that holds it; False where that table cannot be read (not Linux)."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return False
    where = os.path.realpath(path)
    best, fs = "", ""
    for row in rows:
        if len(row) < 3:
            continue
        mount = row[1].replace("\\040", " ")
        inside = where == mount or where.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fs = mount, row[2]
    return fs in _MEMORY_FS


def _spilled(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    n = int(np.count_nonzero(keep))
    shape = (n, *a.shape[1:])
    row_bytes = a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
    if n == 0 or row_bytes == 0:
        empty = np.zeros(shape, dtype=a.dtype)
        empty.flags.writeable = False
        return empty
    step = max(1, _BLOCK_BYTES // row_bytes)
    fd, path = tempfile.mkstemp(prefix="g2cons-rows-", suffix=".bin")
    try:
        os.unlink(path)  # nothing is left behind, whatever happens next
        with os.fdopen(fd, "wb", closefd=False) as f:
            for lo in range(0, len(a), step):
                block = np.ascontiguousarray(a[lo : lo + step][keep[lo : lo + step]])
                if len(block):
                    f.write(block.data.cast("B"))
        m = mmap.mmap(fd, n * row_bytes, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)  # the map keeps the file
    drop_mapped_pages([a])  # the source's file pages the blocks read
    out = np.frombuffer(m, dtype=a.dtype, count=n * row_bytes // a.itemsize).reshape(shape)
    return out  # read-only: the map is
