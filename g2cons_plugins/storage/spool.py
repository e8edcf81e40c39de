"""Append-only arrays and text columns that live in unnamed temporary files, mapped read-only once written.

A streaming build (:mod:`g2cons_plugins.engine.streaming`) writes what it makes (chunk texts, unit columns, vectors)
batch by batch into spools instead of keeping it as Python objects or in anonymous memory; each spool ends as a
read-only array mapped from its file, so the kernel can write those pages back and drop them (they are clean
file pages), and the process holds only the pages a later step reads (:func:`.memory.drop_mapped_pages`).

The files are made in the temporary directory (``tempfile.gettempdir()``, ``TMPDIR`` honoured) and unlinked at
once: no name is left behind, whatever happens, and the space is freed when the last view of the map goes. Where
that directory is on a ``tmpfs`` / ``ramfs`` (its files are memory the kernel cannot drop) or a write fails (no
space), a spool keeps its bytes in memory instead: the arrays are the same either way.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import tempfile
import weakref
from array import array
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..arrays.columns import TextColumn
from .growable import register_file_map
from .spill import can_spill

__all__ = ["ArraySpool", "TextSpool"]


class _Bytes:
    """Bytes appended to an unnamed temporary file (or to memory, see module doc)."""

    def __init__(self) -> None:
        self.size = 0
        self._fh: IO[bytes] = io.BytesIO()
        if can_spill():  # POSIX, and a temporary directory that is not in memory
            self._fh = tempfile.TemporaryFile(prefix="g2cons-spool-")  # noqa: SIM115 - closed by finish

    def write(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        try:
            self._fh.write(view)
        except OSError:
            self._to_memory()
            self._fh.write(view)
        self.size += len(view)

    def _to_memory(self) -> None:
        """The bytes so far moved into memory (the file could not take more)."""
        old = self._fh
        old.flush()
        old.seek(0)
        buf = io.BytesIO()
        done = 0
        while done < self.size:
            part = old.read(min(1 << 24, self.size - done))
            if not part:
                break
            buf.write(part)
            done += len(part)
        old.close()
        self._fh = buf

    def read(self, a: int, b: int) -> bytes:
        """Bytes ``[a, b)`` written so far (a look back while writing: e.g. a duplicate's earlier text)."""
        self._fh.flush()
        pos = self._fh.tell()
        self._fh.seek(a)
        out = self._fh.read(b - a)
        self._fh.seek(pos)
        return out

    def finish(self, dtype: Any = np.uint8) -> np.ndarray:
        """The bytes as a read-only 1-d array of ``dtype`` (a map of the file, or memory); the spool is closed. Made
        with ``dtype`` directly, not as a view of bytes: SciPy copies a sparse matrix's part whose base array is
        more than twice its length (its ``prune``), as a float64 view of bytes would be."""
        fh = self._fh
        if isinstance(fh, io.BytesIO):
            out = np.frombuffer(fh.getbuffer().tobytes(), dtype=dtype)
        elif self.size == 0:
            out = np.zeros(0, dtype)
        else:
            fh.flush()
            m = mmap.mmap(fh.fileno(), self.size, access=mmap.ACCESS_READ)
            _growable(m, fh.fileno())
            out = np.frombuffer(m, dtype=dtype)
        fh.close()  # a map holds its own handle of the file
        out.flags.writeable = False
        return out


def _growable(m: mmap.mmap, fd: int) -> None:
    """Register the map ``m`` of the unnamed file open as ``fd`` so that arrays viewing it can grow without a copy
    (:func:`.growable.growable`: the first add after a build in the same process appended to the unit vectors by
    copying them, 127 MB at 80k passages): through a duplicate of ``fd`` kept open while ``m`` lives, by its
    ``/proc/self/fd`` name (Linux; elsewhere nothing is registered and an add copies, as before)."""
    proc = Path("/proc/self/fd")
    if not proc.is_dir():
        return
    try:
        keep = os.dup(fd)
    except OSError:
        return
    weakref.finalize(m, os.close, keep)
    with contextlib.suppress(OSError):  # the name cannot be read: nothing registered, an add copies
        register_file_map(m, proc / str(keep))


class ArraySpool:
    """Rows of one dtype and row shape appended in blocks; :meth:`finish` gives them as one read-only array."""

    def __init__(self, dtype: Any, row_shape: tuple[int, ...] = ()) -> None:
        self.dtype, self.row_shape, self.rows = np.dtype(dtype), tuple(row_shape), 0
        self._bytes = _Bytes()

    def append(self, block: Any) -> None:
        """Append rows (an array whose rows have this spool's shape; cast to its dtype)."""
        a = np.ascontiguousarray(block, dtype=self.dtype)
        if a.shape[1:] != self.row_shape:
            raise ValueError(f"rows of shape {a.shape[1:]} appended to a spool of rows {self.row_shape}")
        if a.size:  # an empty block adds nothing (and a memoryview of it cannot be cast to bytes)
            self._bytes.write(a.data)
        self.rows += len(a)

    def finish(self) -> np.ndarray:
        """All rows, read-only (see module doc); the spool is closed."""
        out: np.ndarray = self._bytes.finish(self.dtype).reshape((self.rows, *self.row_shape))
        return out


class TextSpool:
    """Texts appended one at a time; :meth:`finish` gives a :class:`~g2cons_plugins.arrays.columns.TextColumn`.
    The offsets stay in memory (8 bytes a text), the bytes in the spool."""

    def __init__(self) -> None:
        self._bytes = _Bytes()
        self._ends = array("q")

    def __len__(self) -> int:
        return len(self._ends)

    def append(self, text: str) -> int:
        """Append ``text``; returns its position."""
        self._bytes.write(text.encode("utf-8"))
        self._ends.append(self._bytes.size)
        return len(self._ends) - 1

    def text(self, i: int) -> str:
        """Text ``i``, read back while the spool is still written."""
        a = self._ends[i - 1] if i else 0
        return self._bytes.read(a, self._ends[i]).decode("utf-8")

    def finish(self) -> TextColumn:
        """The texts as a read-only column (see module doc); the spool is closed."""
        off = np.zeros(len(self._ends) + 1, np.int64)
        off[1:] = np.frombuffer(self._ends, dtype=np.int64) if len(self._ends) else off[1:]
        off.flags.writeable = False
        self._ends = array("q")
        return TextColumn(self._bytes.finish(), off)
