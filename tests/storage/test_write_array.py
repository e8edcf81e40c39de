"""Arrays mapped from files are saved in blocks with the same bytes as NumPy writes them."""

from __future__ import annotations

import io
import mmap
import tempfile

import numpy as np
import pytest

from g2cons_plugins.arrays.mapped import is_file_backed
from g2cons_plugins.storage import derived_io
from g2cons_plugins.storage.derived_io import write_array


@pytest.mark.parametrize("shape", [(1000, 7), (5000,), (3, 0)])
def test_a_mapped_array_is_written_in_blocks_with_numpys_bytes(
    monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...]
) -> None:
    monkeypatch.setattr(derived_io, "_WRITE_BLOCK", 64)  # many blocks
    want = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    with tempfile.TemporaryFile() as fh:
        fh.write(want.tobytes())
        fh.flush()
        mapped = want if want.nbytes == 0 else np.frombuffer(
            mmap.mmap(fh.fileno(), want.nbytes, access=mmap.ACCESS_READ), dtype=np.float32
        ).reshape(shape)
    assert want.nbytes == 0 or is_file_backed(mapped)
    a, b = io.BytesIO(), io.BytesIO()
    np.lib.format.write_array(a, want, allow_pickle=False)
    write_array(b, mapped)
    assert a.getvalue() == b.getvalue()
    np.testing.assert_array_equal(np.load(io.BytesIO(b.getvalue())), want)
