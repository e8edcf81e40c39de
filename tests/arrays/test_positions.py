"""Id -> position maps without hash tables (g2cons_plugins.arrays.positions) equal the dicts they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.arrays.positions import ChunkPositions, UnitPositions, first_mismatch, unit_id, unit_ids
from g2cons_plugins.chunks import Chunk, Unit

_ids = st.text(alphabet="ab:0123", min_size=1, max_size=7)


def _corpus(spec: dict[str, int]) -> tuple[list[Chunk], list[Unit], np.ndarray]:
    chunks = [Chunk(cid, "t") for cid in sorted(spec)]
    units, parent = [], []
    for p, c in enumerate(chunks):
        for i in range(spec[c.id]):
            units.append(Unit(unit_id(c.id, i, spec[c.id]), c.id, "t", 1, ("t",)))
            parent.append(p)
    return chunks, units, np.asarray(parent, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_ids, st.integers(1, 12), min_size=1, max_size=12), st.lists(_ids, max_size=10))
def test_maps_equal_the_dicts(spec: dict[str, int], probes: list[str]) -> None:
    chunks, units, parent = _corpus(spec)
    want_u: dict[str, int] = {}
    for j, u in enumerate(units):
        want_u.setdefault(u.id, j)
    if len(want_u) < len(units) or any(u.id != u.parent_id and u.id in spec for u in units):
        return  # colliding ids: refused by the stores (check_unit_ids), never in a snapshot
    cp = ChunkPositions(chunks)
    up = UnitPositions(units, parent, cp)
    assert dict(cp) == {c.id: i for i, c in enumerate(chunks)} and len(cp) == len(chunks)
    assert {k: up[k] for k in up} == want_u and len(up) == len(units)
    for key in probes + [u.id + "::0" for u in units[:3]] + ["::", ""]:
        assert (key in cp) == (key in spec) and cp.get(key) == {c.id: i for i, c in enumerate(chunks)}.get(key)
        assert up.get(key) == want_u.get(key)
    assert first_mismatch([u.id for u in units], [c.id for c in chunks], parent) is None
    assert unit_ids([c.id for c in chunks], parent) == [u.id for u in units]


def test_non_string_keys_are_missing() -> None:
    chunks, units, parent = _corpus({"a": 2, "b": 1})
    cp = ChunkPositions(chunks)
    up = UnitPositions(units, parent, cp)
    assert 3 not in cp and None not in up and up["a::1"] == 1 and up["b"] == 2 and cp["b"] == 1
    with pytest.raises(KeyError):
        up["a"]  # a chunk of two units: its id is no unit's


def test_first_mismatch_names_the_unit() -> None:
    chunks, units, parent = _corpus({"a": 2, "b": 1})
    ids = [u.id for u in units]
    assert first_mismatch(["a::0", "a::x", "b"], ["a", "b"], parent) == 1
    assert first_mismatch(ids, ["a", "b"], np.asarray([0, 1, 0])) == 2  # units out of chunk order
