"""Reading a saved ``.npy`` file only once its header agrees with what the index expects and with the file's size.

A file whose checksum was recomputed after an edit passes the manifest's check, so what ``np.load`` would do with
it is what the header says: a 0-byte file raises ``EOFError`` and a header claiming 2^40 rows makes ``np.load``
allocate 256 TiB (``MemoryError``) before reading a byte of data. :func:`load_npy` reads the header itself
(``numpy.lib.format``), compares its dtype and shape with the expected ones (a ``None`` axis: any length) and the
size of its data with the bytes the file holds after the header, and only then reads or maps the array; every
mismatch raises :class:`~g2cons_plugins.errors.PersistError` naming the file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PersistError

__all__ = ["load_npy", "npy_header"]

_MAX_HEADER = 10_000  # numpy's own bound on a header it reads (np.lib.format, max_header_size)


def npy_header(path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """The dtype, shape and data offset of the ``.npy`` file ``path``, checked: a version 1.0 / 2.0 / 3.0 header
    of a C-ordered array of a plain dtype (no Python objects) whose data is exactly the rest of the file; else
    :class:`PersistError` naming the file."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=_MAX_HEADER)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=_MAX_HEADER)
            else:
                raise ValueError(f"format version {version[0]}.{version[1]}")
            offset = fh.tell()
    except OSError as e:
        raise PersistError(f"{path}: cannot be read ({e.strerror or e})") from None
    except (ValueError, EOFError, SyntaxError, TypeError) as e:  # a short, empty or garbled header
        raise PersistError(f"{path}: not a .npy array file ({e}; {size:,} bytes)") from None
    if dtype.hasobject:
        raise PersistError(f"{path}: holds Python objects (dtype {dtype}); only plain arrays are read")
    if fortran:
        raise PersistError(f"{path}: a Fortran-ordered array; the index writes C order")
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise PersistError(f"{path}: invalid shape {shape} in its header")
    want = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if size - offset != want:
        raise PersistError(
            f"{path}: its header claims a {dtype} array of shape {shape} ({want:,} bytes of data) but the file holds "
            f"{size - offset:,} bytes after the header"
        )
    return dtype, tuple(shape), offset


def load_npy(path: Path, dtype: Any, shape: tuple[int | None, ...], what: str = "array", mmap: bool = False) -> Any:
    """The array of ``path`` once :func:`npy_header` and the expected ``dtype`` and ``shape`` (``None``: any length
    on that axis) agree (else :class:`PersistError` naming the file and ``what`` it should hold); memory-mapped
    read-only when ``mmap``, else read into memory."""
    got_dtype, got_shape, _ = npy_header(path)
    want = np.dtype(dtype)
    if (
        got_dtype != want
        or len(got_shape) != len(shape)
        or any(w is not None and w != g for w, g in zip(shape, got_shape, strict=True))
    ):
        shown = "(" + ", ".join("any" if w is None else str(w) for w in shape) + ")"
        raise PersistError(f"{path}: expected {want} {what} of shape {shown}, got {got_dtype} {got_shape}")
    if math.prod(got_shape) == 0:  # nothing to map (an empty map is refused by the OS)
        return np.zeros(got_shape, want)
    try:
        out = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (OSError, ValueError, EOFError) as e:
        raise PersistError(f"{path}: not a readable .npy array ({e})") from None
    return out
