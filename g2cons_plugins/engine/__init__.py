"""The update engine: how an index changes after its build, and how a build runs beyond one process.

- :mod:`.update`, :mod:`.edge_update`: a derived state updated for added and removed chunks;
- :mod:`.trickle_store`, :mod:`.trickle_log`: stored rows spliced in place, and the log of small updates;
- :mod:`.build_engines`: the local build engine, or Ray Data for splitting, token counting and embedding.

The method (concepts, graph, selection, retrieval, fusion) never imports this package; the index does, for its
updates. Nothing is imported here: each module is imported where it is used.
"""
