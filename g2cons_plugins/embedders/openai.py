"""The OpenAI embeddings API (``[openai]`` extra): batched requests, exponential-backoff retries."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError, InputError
from .base import _as_text_list, _missing_extra, _positive_int, validate_embeddings

_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """OpenAI embeddings API: batched requests, exponential-backoff retries on transient errors."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        dim: int | None = None,
        batch_size: int = 256,
        max_retries: int = 5,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
    ) -> None:
        self.model = str(model)
        native = _OPENAI_DIMS.get(self.model)
        self.batch_size = _positive_int(batch_size, "OpenAI batch_size", upper=2048)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InputError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.max_retries = max_retries
        self._dimensions: int | None = None
        if dim is None:
            if native is None:
                raise InputError(
                    f"unknown OpenAI embedding model {self.model!r}: pass dim= "
                    f"(known models: {', '.join(sorted(_OPENAI_DIMS))})"
                )
            self.dim = native
        else:
            self.dim = _positive_int(dim, "OpenAI dim")
            if self.model == "text-embedding-ada-002" and self.dim != native:
                raise InputError(f"{self.model} has a fixed dimension of {native}; got dim={self.dim}")
            if native is not None and self.dim > native:
                raise InputError(f"{self.model} has at most {native} dimensions; got dim={self.dim}")
            if self.model.startswith("text-embedding-3") and self.dim != native:
                self._dimensions = self.dim
        self.name = f"openai-{self.model}" if self.dim == native else f"openai-{self.model}-dim{self.dim}"
        self._client = client
        self._own_client = client is None  # a client made here is left out of the pickled state
        self._api_key = api_key
        self._base_url = base_url
        self._sleep = sleep
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.n_requests = 0

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state: the settings; a client this embedder made (it holds connection pools and locks) is
        made again on first use. A ``client`` passed in is kept (it must be picklable itself)."""
        state = self.__dict__.copy()
        if state.get("_own_client", True):
            state["_client"] = None
        return state

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise _missing_extra("openai", "openai", exc) from exc
            # Retries are done here (with the injectable sleep), not inside the client.
            try:
                self._client = openai.OpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0)
            except openai.OpenAIError as exc:
                raise InputError(f"embedder {self.name!r}: cannot create the OpenAI client: {exc}") from exc
        return self._client

    @staticmethod
    def _transient_errors() -> tuple[type[BaseException], ...]:
        try:
            import openai
        except ImportError:
            return ()
        return (
            openai.RateLimitError,
            openai.APIConnectionError,
            openai.APITimeoutError,
            openai.InternalServerError,
        )

    def _request(self, batch: list[str]) -> np.ndarray:
        client = self._get_client()
        transient = self._transient_errors()
        kwargs: dict[str, Any] = {"model": self.model, "input": batch}
        if self._dimensions is not None:
            kwargs["dimensions"] = self._dimensions
        attempt = 0
        while True:
            try:
                self.n_requests += 1
                resp = client.embeddings.create(**kwargs)
                break
            except transient as exc:
                if attempt >= self.max_retries:
                    raise EmbeddingError(
                        f"embedder {self.name!r}: request failed after {attempt + 1} attempts: {exc}"
                    ) from exc
                self._sleep(min(self.backoff_max, self.backoff_base * 2.0**attempt))
                attempt += 1
        data = list(resp.data)
        if len(data) != len(batch):
            raise EmbeddingError(f"embedder {self.name!r} returned {len(data)} embeddings for {len(batch)} texts")
        data.sort(key=lambda d: d.index)
        if [d.index for d in data] != list(range(len(batch))):
            raise EmbeddingError(f"embedder {self.name!r} returned inconsistent result indices")
        return validate_embeddings([d.embedding for d in data], len(batch), self.dim, self.name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches of ``batch_size``; empty strings are sent as a single space."""
        items = [t if t else " " for t in _as_text_list(texts, self.name)]
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(items[k : k + self.batch_size]) for k in range(0, len(items), self.batch_size)]
        return np.ascontiguousarray(np.vstack(parts))

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, dim={self.dim}, batch_size={self.batch_size})"
