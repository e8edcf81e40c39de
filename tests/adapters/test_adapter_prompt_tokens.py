"""The extraction prompt is priced by default: both adapters' selectors count their host's default extraction
prompt with every chunk (not 0), and the figures the core keeps for each host (``EXTRACTION_PROMPT_TOKENS``) are
the installed packages' prompts."""

from __future__ import annotations

import os
import warnings

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins.hosts.pipelines.prices import EXTRACTION_PROMPT_TOKENS  # noqa: E402
from g2cons_plugins.text import get_tokenizer  # noqa: E402


def _count(text: str) -> int:
    return len(get_tokenizer("cl100k_base").encode(text))


def test_llama_index_selector_prices_simple_llm_path_extractors_prompt() -> None:
    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.prompts.default_prompts import DEFAULT_KG_TRIPLET_EXTRACT_PROMPT

    want = _count(DEFAULT_KG_TRIPLET_EXTRACT_PROMPT.format(text="", max_knowledge_triplets=10))
    assert want == EXTRACTION_PROMPT_TOKENS["llama-index"] > 0
    assert li.CoreChunkSelector().prompt_tokens_per_call == want
    assert li.CoreChunkSelector.from_defaults().prompt_tokens_per_call == want
    assert li.CoreChunkSelector(prompt_tokens_per_call=0).prompt_tokens_per_call == 0  # given: kept


def test_langchain_selector_prices_llm_graph_transformers_prompt() -> None:
    lc = pytest.importorskip("langchain_g2cons")
    assert lc.CoreChunkSelector().prompt_tokens_per_call == EXTRACTION_PROMPT_TOKENS["langchain"] > 0
    assert lc.CoreChunkSelector(prompt_tokens_per_call=7).prompt_tokens_per_call == 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-experimental says it is being sunset
        llm = pytest.importorskip("langchain_experimental.graph_transformers.llm")
    messages = llm.get_default_prompt().format_messages(input="")
    assert sum(_count(m.content) for m in messages) == EXTRACTION_PROMPT_TOKENS["langchain"]


def test_graphrag_figure_is_its_default_prompt() -> None:
    prompt = pytest.importorskip("graphrag.prompts.index.extract_graph")
    from g2cons_plugins.hosts.pipelines.host_projects import (
        _GRAPHRAG_FORMAT,
        GRAPHRAG_DEFAULT_ENTITY_TYPES,
        parse_template,
    )

    values = {**_GRAPHRAG_FORMAT, "entity_types": ",".join(GRAPHRAG_DEFAULT_ENTITY_TYPES)}
    parts = parse_template(prompt.GRAPH_EXTRACTION_PROMPT, values, "input_text", "graphrag")
    assert _count("".join(parts)) == EXTRACTION_PROMPT_TOKENS["graphrag"]
