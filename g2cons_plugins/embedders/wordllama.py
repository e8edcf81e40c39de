"""WordLlama static token embeddings (``[wordllama]`` extra): very fast, fully offline (the weights ship in the
wheel)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import _as_text_list, _LazyModel, _missing_extra, _no_global_side_effects, _positive_int, validate_embeddings


class WordLlamaEmbedder(_LazyModel):
    """WordLlama static embeddings (``config`` l2_supercat, Matryoshka ``dim`` 64..1024), offline."""

    def __init__(self, dim: int = 256, config: str = "l2_supercat") -> None:
        self.dim = _positive_int(dim, "WordLlama dim")
        self.config = str(config)
        self.name = f"wordllama-{self.config}-{self.dim}"
        self._model: Any = None
        self._lock = threading.Lock()

    def _unloaded(self) -> dict[str, Any]:
        return {"_model": None}

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    with _no_global_side_effects():  # wordllama's import calls logging.basicConfig(level=INFO)
                        import wordllama
                        from wordllama import WordLlama
                except ImportError as exc:
                    raise _missing_extra("wordllama", "wordllama", exc) from exc
                # The weights ship inside the wheel; pointing cache_dir at the package avoids any download.
                self._model = WordLlama.load(
                    config=self.config,
                    dim=self.dim,
                    cache_dir=Path(wordllama.__file__).parent,
                    disable_download=True,
                )
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; a text with no known token (e.g. empty) gets a fixed constant unit vector."""
        items = _as_text_list(texts, self.name)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = np.asarray(self._load().embed(items, norm=False), dtype=np.float32).reshape(len(items), -1)
        norms = np.linalg.norm(raw, axis=1)
        empty = ~np.isfinite(norms) | (norms == 0.0)
        if empty.any():
            raw[empty] = 1.0 / math.sqrt(raw.shape[1])
        return validate_embeddings(raw, len(items), self.dim, self.name)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(dim={self.dim}, config={self.config!r})"
