"""Host pipelines: what connects the method to the frameworks and projects around it.

- :mod:`.corpus_io` -- corpus readers (files, folders, JSONL/CSV/Parquet...), chunking, and the selection writers.
- :mod:`.host_projects` -- GraphRAG and LightRAG projects: their settings, input files and chunking profiles.
- :mod:`.integration` -- what the LlamaIndex and LangChain adapters share (incremental selection, settings files,
  event counts).
- :mod:`.engines` -- build engines: local, or Ray Data for splitting, token counting and embedding.

Nothing is imported here: each module is imported where it is used. Their old paths
(``g2cons_plugins.corpus_io``, ...) still import, with a :class:`DeprecationWarning` (:mod:`g2cons_plugins._compat`).
"""
