"""Array layouts and unit indexes: how an index's columns sit in memory and on disk, and the vector indexes over
its units.

- :mod:`.columns`, :mod:`.wide_rows`: plain array helpers (ropes of columns, row-wise sparse matrices);
- :mod:`.tables`, :mod:`.positions`: the chunk and unit tables read as sequences, and id -> position lookups;
- :mod:`.unit_hnsw`, :mod:`.unit_pq`: the unit indexes (an HNSW graph; a product-quantised scan).

Nothing is imported here: each module is imported where it is used.
"""
