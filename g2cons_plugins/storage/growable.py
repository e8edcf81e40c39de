"""Growing a memory-mapped array without copying it: the buffer of :func:`growable` maps the array's bytes from its
file privately (copy-on-write: the file never changes, and a page is copied only when written) and continues with
anonymous memory for the rows to come, in one contiguous range of addresses.

Why: the first trickle add of a loaded index appends rows to arrays that are views of the index files (unit
vectors, token counts, the csr incidences). A copy of each into memory with spare rows took 6.4 s at 1M passages
(about 3.5 GB written, on this machine at about 0.55 GB/s for memory a process touches for the first time) and
held those GB as private memory from then on. With :func:`growable` the unchanged rows stay the file's pages.

Linux only (``mmap`` with ``MAP_FIXED`` through the C library); anywhere else, or for an array that is not a view
of a file map registered here (:func:`register_file_map`, or a ``np.memmap``), or whose file changed since it was
mapped, :func:`growable` returns None and the caller copies, as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["drop_clean_pages", "growable", "register_file_map"]

_PROT_RW = 0x1 | 0x2
_MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x02, 0x10, 0x20, 0x4000
_FAILED = ctypes.c_void_p(-1).value

_LOCK = threading.Lock()
FileId = tuple[int, int, int, int]  # device, inode, size, modification time (ns)
_MAPS: dict[int, tuple[weakref.ref[Any], str, int, FileId]] = {}  # id(mmap) -> (it, its file, its address, file id)
# id(buffer of growable) -> (it, address, bytes): its whole file pages before the one where appended rows start
_CLEAN: dict[int, tuple[weakref.ref[Any], int, int]] = {}
_MADV_DONTNEED = 4


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.munmap.restype = ctypes.c_int
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.madvise.restype = ctypes.c_int
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return libc


_LIBC = _libc()


def _file_id(path: str) -> FileId:
    s = os.stat(path)
    return (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)


def register_file_map(m: mmap.mmap, path: Path) -> None:
    """Record that ``m`` maps the whole file ``path`` from offset 0 (arrays viewing it can then grow, see module
    doc); forgotten when ``m`` is."""
    if not len(m):
        return
    addr = int(np.frombuffer(m, np.uint8, count=1).ctypes.data)
    with _LOCK:
        _MAPS[id(m)] = (weakref.ref(m), str(path), addr, _file_id(str(path)))
    weakref.finalize(m, _forget, id(m))


def _forget(key: int) -> None:
    with _LOCK:
        _MAPS.pop(key, None)


def _source(a: np.ndarray) -> tuple[str, int, FileId | None] | None:
    """The file and byte offset of ``a``'s first byte (and the file's identity when it was mapped), where ``a`` is a
    view of a file map this module knows."""
    ptr = int(a.ctypes.data)
    b: Any = a
    while b is not None:
        if isinstance(b, np.memmap) and isinstance(b.base, mmap.mmap) and getattr(b, "filename", None):
            return str(b.filename), int(b.offset) + ptr - int(b.ctypes.data), None
        if isinstance(b, mmap.mmap):
            with _LOCK:
                entry = _MAPS.get(id(b))
            if entry is None or entry[0]() is not b:
                return None
            return entry[1], ptr - entry[2], entry[3]
        b = b.obj if isinstance(b, memoryview) else getattr(b, "base", None)
    return None


def growable(a: np.ndarray, rows: int) -> np.ndarray | None:
    """A writable array of ``rows`` rows (at least ``len(a)``) whose first ``len(a)`` rows are ``a``'s, mapped
    privately from the file ``a`` views, the rest anonymous memory (the rows after ``len(a)`` hold whatever the
    file or the memory held there until the caller writes them); None where that cannot be made (module doc). The
    map is released when no view of the result is left."""
    if _LIBC is None or a.ndim == 0 or not a.flags.c_contiguous or rows < len(a) or a.nbytes == 0:
        return None
    src = _source(a)
    if src is None:
        return None
    path, offset, file_id = src
    try:
        if file_id is not None and _file_id(path) != file_id:
            return None  # the file was replaced since it was mapped: its bytes may differ from the map's
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    page = mmap.PAGESIZE
    start = offset - offset % page
    lead = offset - start
    row_bytes = a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
    total = -(-(lead + rows * row_bytes) // page) * page
    in_file = -(-(lead + a.nbytes) // page) * page
    try:
        addr = _LIBC.mmap(None, total, _PROT_RW, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if addr in (None, _FAILED):
            return None
        got = _LIBC.mmap(addr, in_file, _PROT_RW, _MAP_PRIVATE | _MAP_FIXED, fd, start)
        if got != addr:
            _LIBC.munmap(addr, total)
            return None
    finally:
        os.close(fd)
    raw = (ctypes.c_char * (rows * row_bytes)).from_address(addr + lead)
    release = weakref.finalize(raw, _LIBC.munmap, addr, total)
    release.atexit = False  # at exit the process's maps go with it; unmapping then could pull memory from under views
    with _LOCK:  # no write ever reaches these pages: rows are appended after len(a) only
        _CLEAN[id(raw)] = (weakref.ref(raw), addr, (lead + a.nbytes) // page * page)
    weakref.finalize(raw, _CLEAN.pop, id(raw), None)
    out: np.ndarray = np.ndarray((rows, *a.shape[1:]), dtype=a.dtype, buffer=memoryview(raw))  # views: their base
    if len(a) and not (np.array_equal(out[0], a[0]) and np.array_equal(out[len(a) - 1], a[-1])):
        return None  # not the bytes the view reads (the map was not of this file): copy instead
    return out


def drop_clean_pages(buffer: Any) -> bool:
    """Unmap the resident file pages of a :func:`growable` buffer (the object at the end of its arrays' ``base``
    chain) that no write reaches: the whole pages before the one where appended rows start. They hold the file's
    bytes, so a later read maps them again from the page cache (``madvise(MADV_DONTNEED)`` on a private file map),
    as :func:`~g2cons_plugins.storage.memory.drop_mapped_pages` does for read-only maps. False where ``buffer`` is
    not such a buffer."""
    with _LOCK:
        entry = _CLEAN.get(id(buffer))
    if entry is None or entry[0]() is not buffer or _LIBC is None:
        return False
    if entry[2] > 0:
        _LIBC.madvise(entry[1], entry[2], _MADV_DONTNEED)
    return True
