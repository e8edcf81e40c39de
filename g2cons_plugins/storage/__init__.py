"""Storage: an index on disk and the memory it holds.

- :mod:`.persistence` -- save and load an index snapshot (versioned folder, atomic, checksummed; no pickle).
- :mod:`.stored_io` -- the stored state's texts (chunks, retrieval units) as JSON columns.
- :mod:`.derived_io` -- the derived state (concept graph, vectors, statistics) as ``derived.npz`` + ``derived.json``.
- :mod:`.npz_view` -- an uncompressed ``.npz`` read in place (one read-only memory map).
- :mod:`.memory` -- freed memory given back to the operating system after threaded passes.
- :mod:`.spill` -- the rows a removal keeps of a file-backed array, written to an unlinked file and mapped.
- :mod:`.ones` -- one read-only buffer of ones, shared as the data of every 0/1 sparse matrix in memory.
- :mod:`.index_entry` -- the manifest entry of a saved unit index, checked on load.
- :mod:`.unit_index_io` -- a snapshot's unit index (HNSW graph or PQ codes) saved and loaded.
- :mod:`.trickle_io` -- the trickle log's files (the updates a save writes beside a saved exact snapshot).

- :mod:`.outputs` -- atomic single-file outputs and their stamps (what g2cons wrote, and may replace).
- :mod:`.export` -- the concept graph as networkx, GraphML, CSV or JSON.

Nothing is imported here: each module is imported where it is used.
"""
