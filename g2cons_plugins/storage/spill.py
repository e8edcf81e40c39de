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

:func:`to_file` does the same for a whole array in memory (a derive's step results, :mod:`.step_spill`): its values
in a read-only map of an unlinked file, or the array itself where no file can be written.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..arrays.mapped import is_file_backed
from .memory import drop_mapped_pages

__all__ = ["SPILL_MIN_BYTES", "can_spill", "in_memory_fs", "kept_rows", "to_file"]

SPILL_MIN_BYTES = 64 * 2**20  # smaller arrays are copied into memory (a file for them is not worth it)
_BLOCK_BYTES = 32 * 2**20  # rows written per write call: the temporary copy of one block


def kept_rows(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``a[keep]`` (rows, a boolean mask), read-only and C-contiguous: file-backed (module doc) where ``a`` is a
    file-backed array of at least :data:`SPILL_MIN_BYTES`, else a copy in memory."""
    keep = np.asarray(keep, dtype=bool)
    if len(keep) != len(a):
        raise ValueError(f"keep has {len(keep)} items for {len(a)} rows")
    if a.ndim >= 1 and a.nbytes >= SPILL_MIN_BYTES and is_file_backed(a) and can_spill():
        try:
            return _spilled(a, keep)
        except OSError:
            pass  # no room in the temporary directory: in memory, as for any other array
    out = np.ascontiguousarray(a[keep])
    out.flags.writeable = False
    return out


def to_file(a: np.ndarray) -> np.ndarray:
    """``a``'s values (same dtype and shape) in a read-only array mapped from an unlinked temporary file (module
    doc), written block by block; ``a`` itself where :func:`can_spill` says no, ``a`` is empty or the file cannot
    be written (no space). The caller decides which arrays are worth it (size, already file-backed)."""
    if a.ndim == 0 or a.size == 0 or not can_spill():
        return a
    rows = a.reshape(len(a), -1) if a.ndim > 1 else a
    step = max(1, _BLOCK_BYTES // max(1, a.itemsize * (a.size // len(a))))
    try:
        return _write_mapped((rows[lo : lo + step] for lo in range(0, len(a), step)), a.dtype, a.shape)
    except OSError:
        return a  # no room in the temporary directory: left in memory


def can_spill() -> bool:
    """Whether arrays may go to temporary files here: POSIX, and a temporary directory that is not in memory."""
    return os.name == "posix" and not in_memory_fs(tempfile.gettempdir())


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
    blocks = (a[lo : lo + step][keep[lo : lo + step]] for lo in range(0, len(a), step))
    out = _write_mapped(blocks, a.dtype, shape)
    drop_mapped_pages([a])  # the source's file pages the blocks read
    return out


def _write_mapped(blocks: Iterable[np.ndarray], dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """The ``blocks`` (row blocks, in order, of an array of ``shape``) written to an unlinked temporary file, mapped
    read-only as one array; OSError where the file cannot be made or written."""
    nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    fd, path = tempfile.mkstemp(prefix="g2cons-rows-", suffix=".bin")
    try:
        os.unlink(path)  # nothing is left behind, whatever happens next
        with os.fdopen(fd, "wb", closefd=False) as f:
            for block in blocks:
                if len(block):
                    f.write(np.ascontiguousarray(block).data.cast("B"))
        m = mmap.mmap(fd, nbytes, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)  # the map keeps the file
    return np.frombuffer(m, dtype=dtype, count=nbytes // dtype.itemsize).reshape(shape)  # read-only: the map is
