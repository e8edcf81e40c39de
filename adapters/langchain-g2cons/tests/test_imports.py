"""Adapter-local: the public names of langchain-g2cons (run from this folder: ``python -m pytest tests``)."""

from __future__ import annotations

import langchain_g2cons

EXPECTED = [
    "DEFAULT_ID_KEY",
    "ConceptGraphRetriever",
    "CoreChunkSelector",
    "G2ConSRetriever",
    "GraphWalkRetriever",
    "as_core_embedder",
    "assign_ids",
    "embedder_name",
    "graph_documents",
    "token_length",
]


def test_all_imports() -> None:
    assert sorted(langchain_g2cons.__all__) == sorted(EXPECTED)
    for name in EXPECTED:
        assert getattr(langchain_g2cons, name) is not None
