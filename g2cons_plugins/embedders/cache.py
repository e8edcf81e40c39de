""":class:`CachedEmbedder`: memoises any embedder in memory and optionally on disk (one SQLite file)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .base import Embedder, _as_text_list, _positive_int, validate_embeddings


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

    def forget(self) -> None:
        """Empty the in-memory memo (the disk cache, where there is one, keeps its vectors). A build calls it once
        its texts are embedded: the memo then holds the last ~65k unit texts' vectors, which no query asks for
        again (~130 MB with their keys and the batches their rows are views of)."""
        with self._lock:
            self._rows.clear()

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
