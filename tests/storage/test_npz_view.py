"""NpzView: the arrays of an uncompressed .npz read in place equal np.load's, any dtype, shape and order;
compressed members fall back; arrays are read-only; object arrays, truncated members and files that are not .npz are
refused with ValueError."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins.storage.derived_io import savez
from g2cons_plugins.storage.npz_view import NpzView

ARRAYS = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "f64_fortran": np.asfortranarray(np.linspace(0, 1, 20).reshape(4, 5)),
    "i32": np.array([3, -1, 7], dtype=np.int32),
    "i64_empty": np.zeros(0, dtype=np.int64),
    "u8_3d": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
    "scalar": np.float64(2.5),
    "big_endian": np.arange(5, dtype=">i4"),
}


@pytest.mark.parametrize("writer", ["savez", "ours", "compressed"])
def test_members_equal_np_load(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "a.npz"
    if writer == "ours":
        with path.open("wb") as fh:
            savez(fh, {k: np.asarray(v) for k, v in ARRAYS.items()})
    else:
        (np.savez if writer == "savez" else np.savez_compressed)(path, **ARRAYS)
    view, ref = NpzView(path), np.load(path, allow_pickle=False)
    assert sorted(view.files) == sorted(ARRAYS)
    for name in ARRAYS:
        got, want = view[name], ref[name]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.flags.f_contiguous == want.flags.f_contiguous


def test_our_members_are_aligned(tmp_path: Path) -> None:
    """savez pads each member's local header so its array data starts at a multiple of 64 bytes in the file (an
    array at an odd offset is unaligned, and NumPy copies it whole for e.g. searchsorted); np.savez's members are
    not (the reason for the padding); np.load still reads the file."""
    arrays = {"n" * k + str(k): np.arange(100 + k, dtype=dt) for k, dt in enumerate([np.int64, np.int32, np.float32,
              np.float64, np.int16, np.uint8] * 3)}  # fmt: skip  # names of every length mod 8
    ours, numpys = tmp_path / "ours.npz", tmp_path / "numpy.npz"
    with ours.open("wb") as fh:
        savez(fh, arrays)
    np.savez(numpys, **arrays)
    view = NpzView(ours)
    base = np.frombuffer(view._map, dtype=np.uint8).ctypes.data
    for name, want in arrays.items():
        got = view[name]
        np.testing.assert_array_equal(got, want)
        assert got.flags.aligned and (got.ctypes.data - base) % 64 == 0, name
    assert not all(NpzView(numpys)[n].flags.aligned for n in arrays)
    loaded = np.load(ours, allow_pickle=False)
    assert all(np.array_equal(loaded[n], a) for n, a in arrays.items())


@pytest.mark.parametrize("writer", ["savez", "compressed"])
def test_arrays_are_read_only(tmp_path: Path, writer: str) -> None:
    """An index's arrays are shared by every reader: none may change them (in place or through the fallback)."""
    path = tmp_path / "a.npz"
    (np.savez if writer == "savez" else np.savez_compressed)(path, x=np.zeros(1000, dtype=np.float32))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    a = NpzView(path)["x"]
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[:] = 7.0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert NpzView(path)["x"].max() == 0.0


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage" * 10, b"PK\x03\x04" + b"\x00" * 40, "npy"],
    ids=["empty", "garbage", "broken-zip", "bare-npy"],
)
def test_a_file_that_is_not_an_npz_raises_value_error_naming_it(tmp_path: Path, content: bytes | str) -> None:
    path = tmp_path / "a.npz"
    if content == "npy":
        with path.open("wb") as fh:
            np.save(fh, np.arange(3))
    else:
        path.write_bytes(content)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a.npz"):
        NpzView(path)


def test_object_arrays_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="object"):
        NpzView(path)["x"]


def test_a_truncated_member_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(1000, dtype=np.int64))
    data = bytearray(path.read_bytes())
    # the .npy header claims more elements than the member holds (the zip directory stays valid)
    i = data.index(b"(1000,)")
    data[i : i + 7] = b"(9000,)"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not fit"):
        NpzView(path)["x"]
