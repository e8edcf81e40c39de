"""The size of LlamaIndex's default KG extraction prompt, sent with every chunk (kappa by tokens counts it).

Its own module so that the selector (which needs the default) and the host plug-ins (which count it too) import
it in one direction.
"""

from __future__ import annotations

from g2cons_plugins.hosts.pipelines.integration import token_length

__all__ = ["default_prompt_tokens"]


def default_prompt_tokens(max_triplets: int) -> int:
    """cl100k tokens of ``SimpleLLMPathExtractor``'s default prompt with an empty text."""
    from llama_index.core.prompts.default_prompts import DEFAULT_KG_TRIPLET_EXTRACT_PROMPT

    return token_length()(DEFAULT_KG_TRIPLET_EXTRACT_PROMPT.format(text="", max_knowledge_triplets=max_triplets))
