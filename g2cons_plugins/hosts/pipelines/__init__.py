"""Host pipelines: what connects the method to the frameworks and projects around it.

- :mod:`.corpus_io` -- corpus readers (files, folders, JSONL/CSV/Parquet...), chunking, and the selection writers.
- :mod:`.host_projects` -- GraphRAG and LightRAG projects: their settings, input files and chunking profiles.
- :mod:`.integration` -- what the LlamaIndex and LangChain adapters share (incremental selection, settings files,
  event counts).
- :mod:`.overlap`, :mod:`.prices` -- the overlapping-chunks check, and the extraction prices of host models.
- :mod:`.param_types` -- the core's number rules as pydantic types, for the adapters' parameters.

Nothing is imported here: each module is imported where it is used.
"""
