"""Adapter edge cases: the LangChain selector checks its arguments when it is made."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSConfig  # noqa: E402


# ----------------------------------------------------------------------------------- LangChain argument checks
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"kappa": 1.5}, "kappa"),
        ({"kappa": -0.1}, "kappa"),
        ({"kappa": "most"}, "kappa"),
        ({"kappa_by": "pages"}, "kappa_by"),
        ({"price_per_mtok": -1.0}, "price_per_mtok"),
        ({"prompt_tokens_per_call": -3}, "prompt_tokens_per_call"),
    ],
)
def test_langchain_selector_checks_its_arguments_when_made(kwargs: dict[str, Any], name: str) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    with pytest.raises(ValueError, match=rf"(?s)\b{name}\b.*{kwargs[name]!s}") as err:
        lc.CoreChunkSelector(embedder="hash", **kwargs)
    assert "CoreChunkSelector" in str(err.value)


def test_langchain_selector_keeps_valid_arguments_as_given(tmp_path: Path) -> None:
    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.embeddings import DeterministicFakeEmbedding

    cfg = G2ConSConfig(beta=500)
    sel = lc.CoreChunkSelector(
        1, kappa_by="chunks", embedder=DeterministicFakeEmbedding(size=8), config=cfg, cache_dir=tmp_path
    )
    assert (sel.kappa, sel.kappa_by, sel.config, sel.cache_dir) == (1.0, "chunks", cfg, tmp_path)
    assert sel.embedder.dim == 8
    params = inspect.signature(lc.CoreChunkSelector).parameters
    assert {"kappa", "kappa_by", "embedder", "skip_empty", "show_progress"} <= set(params)
    assert params["kappa"].default is None
