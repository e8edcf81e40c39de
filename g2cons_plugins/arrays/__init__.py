"""Array layouts and unit indexes: how an index's columns sit in memory and on disk, and the vector indexes over
its units.

- :mod:`.columns`, :mod:`.wide_rows`: plain array helpers (ropes of columns, row-wise sparse matrices);
- :mod:`.tables`, :mod:`.positions`: the chunk and unit tables read as sequences, and id -> position lookups;
- :mod:`.first_use`: texts numbered in order of first use without keeping the texts (a streaming build's sentences);
- :mod:`.unit_index`: the :class:`~.unit_index.UnitIndex` protocol and the choice of kind; :mod:`.unit_hnsw`,
  :mod:`.unit_pq`: the two unit indexes (an HNSW graph; a product-quantised scan);
- :mod:`.npy_file`: a saved ``.npy`` file read only once its header agrees with what is expected.

Nothing is imported here: each module is imported where it is used.
"""
