"""The arrays of an uncompressed ``.npz`` read in place: one copy-on-write memory map of the file, each member a
NumPy view of its bytes, instead of a copy per member through :mod:`zipfile` (which also recomputes every CRC).

Measured on the 2.5 GB ``derived.npz`` of a 1M-passage index: reading its 39 arrays took 4.4 s with ``np.load``
(3.2 s copying, 0.8 s CRC-32), against well under a second here. A member that is compressed, or whose ``.npy``
header is not version 1.0 or 2.0, is read with ``np.load`` as before; object arrays are refused either way (no
pickle). Every array is read-only (the map is ``ACCESS_READ``; a fallback array is frozen): an index's arrays are
shared by every reader, so none may change them. A file that is not an ``.npz`` (empty, truncated, garbage, a bare
``.npy``) raises ``ValueError`` naming it. Integrity is the caller's business (the index manifest holds the file's
sha256).
"""

from __future__ import annotations

import io
import math
import mmap
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .growable import register_file_map

__all__ = ["NpzView"]

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra field length (30 bytes)


class NpzView:
    """Read-only access to the members of ``path`` by name (without the ``.npy`` suffix), like ``np.load``'s
    ``NpzFile``: ``files`` lists them, ``view[name]`` gives the array."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            npz = np.load(self.path, allow_pickle=False)  # the fallback, and the member list
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - np.load's many failures on garbage (EOFError, BadZipFile, ...)
            raise ValueError(f"{self.path}: not a readable .npz file ({type(e).__name__}: {e})") from None
        if not isinstance(npz, np.lib.npyio.NpzFile) or npz.zip is None:
            raise ValueError(f"{self.path}: not a .npz file (a single {type(npz).__name__})")
        self._npz = npz
        self.files: list[str] = list(npz.files)
        infos = npz.zip.infolist()  # the central directory np.load has read already
        self._infos = {i.filename[: -len(".npy")]: i for i in infos if i.filename.endswith(".npy")}
        with self.path.open("rb") as fh:
            size = fh.seek(0, 2)
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        if self._map is not None:
            register_file_map(self._map, self.path)  # its arrays can grow without a copy (storage.growable)

    def __getitem__(self, name: str) -> np.ndarray:
        info = self._infos.get(name)
        a = None
        if info is not None and self._map is not None and info.compress_type == zipfile.ZIP_STORED:
            start = info.header_offset + _LOCAL_HEADER.size
            if start > len(self._map):
                raise ValueError(f"member {name!r}: its header lies past the end of the file")
            sig, n_name, n_extra = _LOCAL_HEADER.unpack_from(self._map, info.header_offset)
            if sig != b"PK\x03\x04":
                raise ValueError(f"member {name!r}: no local file header at offset {info.header_offset}")
            a = _array(self._map, start + n_name + n_extra, info.file_size, name)
        if a is None:
            a = self._fallback(name)
        a.flags.writeable = False
        return a

    def _fallback(self, name: str) -> np.ndarray:
        """``np.load``'s reading of a member (compressed, or a header version read here does not handle), once its
        header's shape and dtype agree with the member's uncompressed size (a forged header claiming 2^40 rows
        would make ``np.load`` allocate them first)."""
        info = self._infos.get(name)
        if info is not None:
            _check_member(self._npz, info, name)
        try:
            return np.asarray(self._npz[name])
        except (KeyError, OSError):
            raise
        except Exception as e:  # noqa: BLE001 - zipfile / zlib / numpy errors of a damaged member
            raise ValueError(f"member {name!r}: unreadable ({type(e).__name__}: {e})") from None


def _check_member(npz: Any, info: zipfile.ZipInfo, name: str) -> None:
    """ValueError unless member ``name``'s ``.npy`` header describes exactly its uncompressed size."""
    try:
        with npz.zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fh)
            head = fh.tell()
    except Exception as e:  # noqa: BLE001 - zipfile / zlib / numpy errors of a damaged member
        raise ValueError(f"member {name!r}: unreadable header ({type(e).__name__}: {e})") from None
    bad_shape = any(not isinstance(d, int) or d < 0 for d in shape)
    if bad_shape or head + math.prod(shape) * dtype.itemsize != info.file_size:
        raise ValueError(f"member {name!r}: a {dtype} array of shape {shape} does not fit its {info.file_size} bytes")


def _array(buf: mmap.mmap, start: int, size: int, name: str) -> np.ndarray | None:
    """The array of the ``.npy`` bytes ``buf[start:start + size]``, or None where this reader does not apply."""
    head = io.BytesIO(buf[start : start + min(size, 65_536 + 16)])
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    else:
        return None
    if dtype.hasobject:
        raise ValueError(f"member {name!r} holds Python objects (not read without pickle)")
    if any(d < 0 for d in shape):
        raise ValueError(f"member {name!r}: negative dimension in shape {shape}")
    count = math.prod(shape)  # Python ints: a forged shape cannot wrap around to a small count
    offset = start + head.tell()
    if head.tell() + count * dtype.itemsize > size or offset + count * dtype.itemsize > len(buf):
        raise ValueError(f"member {name!r}: {count} x {dtype} does not fit in its {size} bytes")
    a = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
    return a.reshape(shape, order="F" if fortran else "C")
