"""The LLM price a cost figure uses, and where it comes from.

``g2cons select`` prices the extraction calls it avoids. The price is, in order: the one given
(``--price-per-mtok``), else the list price of the model the host's settings name (MS GraphRAG ``settings.yaml``:
``completion_models.<id>.model`` in 3.x, ``models.<id>.model`` in 2.x, ``llm.model`` before), else
:data:`DEFAULT_PRICE` (gpt-4o-mini's). Every report states the price and its source.

The table holds OpenAI's published list prices (USD per 1M tokens, standard tier, input / output) as of 2025;
providers change them: pass ``--price-per-mtok`` for yours. A dated or suffixed model name (``gpt-4o-mini-2024-07-18``)
takes the price of its longest listed prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PRICE",
    "EXTRACTION_PROMPT_TOKENS",
    "LIST_PRICES",
    "Price",
    "graphrag_model",
    "model_price",
    "resolve_price",
]

LIST_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}
"""USD per 1M input / output tokens (OpenAI list prices, standard tier, 2025)."""
EXTRACTION_PROMPT_TOKENS: dict[str, int] = {
    "graphrag": 1736,  # graphrag 3.3.0 GRAPH_EXTRACTION_PROMPT, its default entity types, without the chunk
    "langchain": 426,  # langchain-experimental 0.4.2 LLMGraphTransformer default prompt (system + human), no input
    "llama-index": 112,  # llama-index-core 0.14 SimpleLLMPathExtractor default prompt (10 triplets), no text
}
"""Tokens (cl100k_base) of each host's default graph-extraction prompt, sent with every chunk: the part of an
extraction call's input that is not the chunk (most of it for GraphRAG). The adapters and the demo count it by
default; ``tests/adapters/test_adapter_prompt_tokens.py`` checks each figure against the installed package."""
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_PRICE = LIST_PRICES[DEFAULT_MODEL][0]


@dataclass(frozen=True)
class Price:
    """An input price and where it comes from."""

    per_mtok: float
    """USD per 1M input tokens."""
    model: str | None
    """The model it is the list price of (None for a price given by the user)."""
    source: str
    """Where it comes from, in words (printed and written to the report)."""


def model_price(model: str) -> tuple[float, float] | None:
    """List price (input, output) of ``model`` (exact name, else the longest listed prefix), or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]  # "openai/gpt-4.1" -> "gpt-4.1"
    if name in LIST_PRICES:
        return LIST_PRICES[name]
    best = max((k for k in LIST_PRICES if name.startswith(k + "-")), key=len, default=None)
    return None if best is None else LIST_PRICES[best]


def graphrag_model(settings: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(model, where)``: the completion model an MS GraphRAG ``settings.yaml`` gives graph extraction, or None."""
    if not settings:
        return None
    extract = settings.get("extract_graph") or settings.get("entity_extraction") or {}
    extract = extract if isinstance(extract, Mapping) else {}
    for section, id_key, default_id in (
        ("completion_models", "completion_model_id", "default_completion_model"),
        ("models", "model_id", "default_chat_model"),
    ):
        models = settings.get(section)
        if isinstance(models, Mapping) and models:
            mid = str(extract.get(id_key) or default_id)
            entry = models.get(mid)
            if not isinstance(entry, Mapping):
                entry = next((v for v in models.values() if isinstance(v, Mapping)), None)
                mid = next((k for k, v in models.items() if v is entry), mid)
            if isinstance(entry, Mapping) and isinstance(entry.get("model"), str):
                return entry["model"], f"{section}.{mid}.model"
    llm = settings.get("llm")
    if isinstance(llm, Mapping) and isinstance(llm.get("model"), str):
        return llm["model"], "llm.model"
    return None


def resolve_price(given: float | None, model: tuple[str, str] | None = None, where: str = "settings.yaml") -> Price:
    """The input price to use: ``given`` (the user's), else the list price of ``model`` (``(name, key)`` as
    :func:`graphrag_model` returns it) when listed, else :data:`DEFAULT_PRICE`; with its source in words."""
    if given is not None:
        return Price(float(given), None, "given (--price-per-mtok)")
    if model is not None:
        listed = model_price(model[0])
        if listed is not None:
            return Price(listed[0], model[0], f"{model[0]} list price ({where} {model[1]})")
        return Price(
            DEFAULT_PRICE,
            DEFAULT_MODEL,
            f"{DEFAULT_MODEL} list price: {model[0]!r} ({where} {model[1]}) has no listed price, "
            "pass --price-per-mtok",
        )
    return Price(DEFAULT_PRICE, DEFAULT_MODEL, f"{DEFAULT_MODEL} list price (default; pass --price-per-mtok)")
