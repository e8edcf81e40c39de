"""LangChain ``Embeddings`` as the core's embedder, and offline token counting.

Token counting: LangChain's ``BaseLanguageModel.get_num_tokens`` falls back to a GPT-2 tokenizer that it downloads
(it fails offline), and ``TextSplitter.from_tiktoken_encoder`` downloads its encoding file. The core ships
``cl100k_base`` inside the package; :func:`token_length` (the core's
``g2cons_plugins.hosts.pipelines.integration.token_length``) counts with it, so it can serve as a splitter's
``length_function`` offline. The retrievers count host texts with the index's own tokenizer (the same one by default).
"""

from __future__ import annotations

from typing import Any

from g2cons_plugins import CallableEmbedder
from g2cons_plugins.hosts.pipelines.integration import token_length
from langchain_core.embeddings import Embeddings


def embedder_name(embeddings: Embeddings) -> str:
    """Stable name of a LangChain embeddings object: ``langchain-<Class>[:<model>]`` (the core keys its cache and
    checks ``G2ConSIndex.load`` against this name, so it must not change between runs)."""
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    base = f"langchain-{type(embeddings).__name__}"
    return f"{base}:{model}" if isinstance(model, str) and model else base


def as_core_embedder(embedder: Any, name: str | None = None) -> Any:
    """Translate an embedder spec for the core: a LangChain ``Embeddings`` becomes a ``CallableEmbedder`` over its
    ``embed_documents`` (queries too go through ``embed_documents``, so both sides share one space); its dimension
    comes from one probe call. Anything else (``"wordllama"``, ``"hash"``, a core ``Embedder``) is returned as is."""
    if isinstance(embedder, Embeddings):
        probe = embedder.embed_documents(["dimension probe"])
        dim = len(probe[0])
        return CallableEmbedder(embedder.embed_documents, dim=dim, name=name or embedder_name(embedder))
    if name is not None:
        raise ValueError("name= is only used to wrap a LangChain Embeddings object")
    return embedder


__all__ = ["as_core_embedder", "embedder_name", "token_length"]
