"""Save and load an index snapshot: JSON + .npy/.npz (no pickle), versioned, atomic, verified.

Layout of an index directory (format version 5)::

    CURRENT                  {"format", "version", "data": "v-...", "manifest_sha256"}: the one pointer
    v-<utc time>-<random>/   one immutable version, never modified after it is published:
        manifest.json          format, version, config, embedder name/dim, tokenizer, counts, sha256 of each file
        stored.npz             chunks (ids, texts, metadata, token counts), units (parents, token counts, sentence
                               positions, the texts of units that are not their chunk's only one) and the distinct
                               sentences as UTF-8 columns; read in place, no object per text
                               (:mod:`~g2cons_plugins.storage.stored_npz`)
        sentence_vectors.npy   float32 (n_sentences, dim), memory-mapped on load; only where the sentences were
                               embedded (``vector_level="sentence"``: Eq. 1), listed in the manifest's files then
        unit_vectors.npy       float32 (n_units, dim), memory-mapped on load
        derived.npz/.json      the derived state (:mod:`~g2cons_plugins.storage.derived_io`), so a load does not
                               re-derive
        unit_ann.usearch       only where the snapshot had a unit index (``ann_threshold``): its HNSW graph in
        unit_ann_keys.npy      usearch's format and the units' keys (uint64); the manifest's ``unit_ann`` entry
                               names its format (``g2cons-unit-ann/1``), count and parameters. Checksummed like
                               the rest, read only after every checksum matched, memory-mapped, never rebuilt on
                               load (:mod:`~g2cons_plugins.arrays.unit_hnsw`); a version without them still loads
                               (the index is then built), and a reader that knows no ``unit_ann`` ignores them
        unit_pq_codes.npy      or, where the snapshot's unit index was a product-quantised scan (``ann_kind``):
        unit_pq_centroids.npy  its 4-bit codes (uint8, a row per unit, memory-mapped on load) and its codebook
                               (float32); the manifest's ``unit_pq`` entry names its format (``g2cons-unit-pq/1``),
                               count and parameters (:mod:`~g2cons_plugins.arrays.unit_pq`)
        trickle_log.json       format version 6 only: a version 5 folder's files (hard links to the files of the
        trickle_vectors.npy    saved exact snapshot) plus the trickle updates made since, in order; the manifest's
                               ``trickle`` entry gives the counts after them (see **Trickle log** below)
    .lock                    taken by a saving process (``fcntl.flock``); loaders never take it (they pin a
                             version folder with a shared lock on the folder itself)

Format versions 4 and 3 (the texts as JSON columns ``chunks.json``, ``units.json``, ``sentences.json``; in 3
``sentence_vectors.npy`` always there) are still read; the next save writes version 5. Versions 1 (files in the
index folder itself) and 2 (``chunks.jsonl`` and ``units.jsonl``: one JSON object per record), written before
0.1.0, are refused with a :class:`PersistError` that says what to do (rebuild, or load and save with 0.1.x).

**Mapped, not held.** Every array of a loaded index is a read-only view of its file's memory map; the checks read
every page once, then those pages are unmapped again (:func:`~g2cons_plugins.storage.memory.drop_mapped_pages`),
so after a load the process holds only what it built in memory, and queries map back the pages they read.

**Atomic.** A save writes a new version folder under a temporary name, fsyncs every file, renames the folder
into place, then replaces ``CURRENT`` in one ``os.replace`` (write, fsync, rename, fsync the directory). The
path therefore always holds a complete index: the old one until the rename, the new one after. The previous
version is kept (a loader that read the old pointer can still finish); older versions and the leftovers of a
crashed writer (temporary names of ours) are removed by the next save, under the lock. Only names this module
writes are ever removed. Files and folders are created with the process umask.

**Loads never fail because of saves.** A loader pins the version it reads with a shared ``flock`` on the version
folder (nothing is written: a read-only index loads too; the lock goes with the process), and a save removes an
old version only if it gets the folder's exclusive lock at once: a pinned version stays until a later save finds
it free, however many saves a long load (19 s at 1M passages) overlaps. A loader that finds its version removed
before it could pin it (two saves within that instant) reads the pointer again. Where ``flock`` is not available,
a loader retries like that for up to :data:`RACE_RETRY_S` seconds.

**Trickle log.** A snapshot with trickle updates pending (:mod:`g2cons_plugins.engine.update`) is not re-derived to be
saved. Its updates started from an exact snapshot; where that one is saved (the index was loaded from, or saved
to, a version that is still there as it was), the new version holds that version's data files as hard links (no
byte copied) plus the log of the updates (:mod:`g2cons_plugins.engine.trickle_log`: an add's chunks and the vectors it
embedded, a removal's ids). A load reads the exact snapshot, then makes the same updates again in the same order:
the very state that was saved, bit for bit, with nothing embedded. Such a version is format version 6 (a
library that reads only up to 5 refuses it rather than take the log's base for the index). Where the exact
snapshot is not saved, its version is gone or changed, or the file system refuses hard links (another device),
the save refreshes the index (``refresh()``: the trickle drift is gone) and writes it whole, as version 5. The
log is as long as the updates since the last exact derive, which the drift budget bounds.

**Verified.** ``CURRENT`` holds the sha256 of the manifest and the manifest holds the sha256 of every file, so no
byte goes unchecked (the config included); the checksums are computed on a thread while the files are parsed, and
nothing is returned, nor any parse error reported, before every file matched. Every field is validated and every
error names the file and the field; cross-file checks: ids unique, parents known, sentence positions in range,
token counts in [1, 10 x characters + 16], vectors float32, finite, non-zero and of the manifest's shapes; no data
file may be a symbolic link. Load never touches the network: the tokenizer must be a bundled one, the embedder a
known name (built and probed at load) unless one is passed. The derived state is validated array by array
(:func:`~g2cons_plugins.storage.derived_io.read_derived`) and every loaded array is read-only. ``verify=True`` also
re-derives the graph and compares every field of it with the stored derived state (PageRank, vectors and weights
within a relative 1e-5); ``rebuild=True`` ignores the stored derived state. A save into a folder of format
version 1 (files directly in the folder, refused by load) removes exactly the files version 1 wrote.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays.tables import ChunkTable
from ..arrays.unit_hnsw import UNIT_ANN_FILES, UnitANN
from ..arrays.unit_pq import UNIT_PQ_FILES, UnitPQ
from ..build import Stored, derive, needs_sentence_vectors
from ..config import SAVED_KEYS, G2ConSConfig
from ..embedders import CachedEmbedder, Embedder, get_embedder
from ..engine.snapshot_updates import refreshed, replayed, with_origin
from ..engine.trickle_log import Origin
from ..errors import G2ConSError, PersistError
from ..retrieval.lexical import LexicalIndex
from ..snapshot import HasSnapshot, Snapshot, as_snapshot, make_snapshot
from ..text import Tokenizer, get_tokenizer
from .derived_io import DERIVED_FILES, differences, read_derived, write_array, write_derived
from .lexical_io import LEXICAL_NPZ, read_lexical, write_lexical
from .memory import drop_mapped_pages, state_arrays
from .outputs import NO_ROOM
from .spool import ArraySpool
from .step_spill import derive_hooks
from .stored_io import (
    SENTENCE_VECTORS,
    STORED_FILES,
    encode_json,
    fsync_write,
    read_stored,
    read_vectors,
    write_stored,
)
from .stored_npz import STORED_NPZ, read_stored_npz, write_stored_npz
from .trickle_io import LOG_FILES, read_log, write_log
from .unit_index_io import read_unit_ann, read_unit_pq, write_unit_ann, write_unit_pq

__all__ = ["FORMAT", "FORMAT_VERSION", "load_snapshot", "read_manifest", "save_index"]

FORMAT = "g2cons-index"
FORMAT_VERSION = 5  # 5: the texts as columns in stored.npz (read in place); 4: sentence_vectors.npy optional
WRITE_VERSION = FORMAT_VERSION  # what a save writes (4 still can be written, for tests of the older reader)
POINTER = "CURRENT"
log = logging.getLogger("g2cons_plugins")
LOCK = ".lock"
FILES = (STORED_NPZ, SENTENCE_VECTORS, "unit_vectors.npy") + DERIVED_FILES + (LEXICAL_NPZ,)  # format version 5
FILES_V3 = STORED_FILES + DERIVED_FILES  # format versions 3 and 4: the texts as JSON columns
OPTIONAL_FILES = (SENTENCE_VECTORS, LEXICAL_NPZ)  # from format version 4 on: written where there is something to write
LEGACY_FILES = (  # what format version 1 (before 0.1.0; no longer read) wrote into the folder itself
    "manifest.json",
    "chunks.jsonl",
    "units.jsonl",
    "sentences.json",
    SENTENCE_VECTORS,
    "unit_vectors.npy",
)
LOG_VERSION = 6  # 6: a version 5 snapshot (exact) + the trickle updates since (trickle_log.json / trickle_vectors.npy)
READ_VERSIONS = (3, 4, FORMAT_VERSION, LOG_VERSION)  # 3: written by 0.1.0; 4, 5, 6 since
PRE_0_1_VERSIONS = (1, 2)  # written before 0.1.0 and refused (:func:`too_old`): 1 files in the folder, 2 JSON lines
BUNDLED_TOKENIZERS = ("cl100k_base", "o200k_base")
_VERSION = re.compile(r"^v-\d{8}T\d{6}-[0-9a-f]{12}$")
_TMP = re.compile(r"^\.tmp-(v-\d{8}T\d{6}-[0-9a-f]{12}|CURRENT-[0-9a-f]{12})$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
POINTER_MAX_BYTES = 64 << 10  # CURRENT holds ~200 bytes; anything larger (or not a regular file) is refused
MANIFEST_MAX_BYTES = 16 << 20  # a manifest holds the config and a checksum per file: a few kilobytes


# ---------------------------------------------------------------------------------------------- file helpers
def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_write = fsync_write
_NOFOLLOW, _NONBLOCK, _CLOEXEC, _DIRECTORY = (
    getattr(os, f, 0) for f in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_DIRECTORY")
)


def _read_small(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, which must be a regular file (not a symbolic link, device, FIFO or folder) of at
    most ``limit`` bytes: a pointer or manifest replaced by a link to ``/dev/zero`` or by a huge file is refused
    at once instead of read without end. Opened without following a link and without blocking (a FIFO), then
    checked on the open descriptor, so a file swapped in between cannot get past the check."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        if path.is_symlink():
            raise PersistError(
                f"{path}: is a symbolic link; index files must be real files inside the index folder"
            ) from None
        raise PersistError(f"{path}: unreadable ({e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PersistError(f"{path}: not a regular file; refusing to read it")
        if st.st_size > limit:
            raise PersistError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} such a file can hold")
        chunks, size = [], 0
        while size <= limit:  # bounded even if the file grows after the fstat
            block = os.read(fd, limit + 1 - size)
            if not block:
                break
            chunks.append(block)
            size += len(block)
        if size > limit:
            raise PersistError(f"{path}: more than the {limit:,} bytes such a file can hold")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _npy(arr: np.ndarray) -> Callable[[Any], None]:
    def write(fh: Any) -> None:
        write_array(fh, arr if arr.dtype == np.float32 else np.ascontiguousarray(arr, dtype=np.float32))

    return write


@contextlib.contextmanager
def _writer_lock(folder: Path) -> Iterator[None]:
    """One saving process at a time per index path (advisory ``flock``; released if the process dies)."""
    import fcntl

    lock = folder / LOCK
    try:  # a planted link must not make a save create or lock a file elsewhere: never follow one
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o666)
    except OSError as e:
        what = "is a symbolic link" if lock.is_symlink() else f"cannot be opened ({e})"
        raise PersistError(f"{lock}: the writer lock {what}; remove it to save here") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PersistError(f"{lock}: the writer lock is not a regular file; remove it to save here")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------- save
def _ours(name: str) -> bool:
    """A name this module writes in an index folder (a first save killed before its pointer leaves only these)."""
    return name in (LOCK, POINTER) or bool(_VERSION.match(name) or _TMP.match(name))


def _is_legacy(path: Path) -> bool:
    return _manifest_format(path / "manifest.json") == 1


def too_old(path: Path, version: int) -> PersistError:
    """The error for the index folder ``path`` of format ``version`` (one of :data:`PRE_0_1_VERSIONS`)."""
    return PersistError(
        f"{path}: an index of format version {version}, saved by a version before 0.1.0, which this library no "
        "longer reads: rebuild it, or load and save it with g2cons-plugins 0.1.x first"
    )


def _manifest_format(mf: Path) -> int | None:
    try:
        m = json.loads(_read_small(mf, MANIFEST_MAX_BYTES).decode("utf-8"))
    except (OSError, PersistError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if isinstance(m, dict) and m.get("format") == FORMAT and isinstance(m.get("version"), int):
        return int(m["version"])
    return None


def is_index_dir(path: Path) -> bool:
    """True when ``path`` holds an index written by this library (any format version, those before 0.1.0 that
    load refuses included: a save may replace them)."""
    path = Path(path)
    ptr = path / POINTER
    return path.is_dir() and (
        (ptr.is_file() and not ptr.is_symlink()) or _manifest_format(path / "manifest.json") is not None
    )


_is_our_index = is_index_dir  # the name earlier versions used


def save_index(index: HasSnapshot, path: Path) -> Snapshot:
    """Write the current snapshot of ``index`` to ``path`` atomically (see module doc) and return it as saved
    (with where it is saved: :attr:`~g2cons_plugins.snapshot.Snapshot.origin`, or its trickle state's).

    A snapshot with trickle updates pending is saved as the exact snapshot they started from (hard links to its
    files where it is saved, on the same file system) plus their log (format version 6; see **Trickle log** in the
    module doc): nothing is re-derived, and a load replays the log. Where that cannot be done (the exact snapshot
    was never saved, its version is gone or changed, or the file system refuses a link), it is refreshed first
    (:func:`g2cons_plugins.engine.snapshot_updates.refreshed`) and saved whole."""
    snap = as_snapshot(index)
    path = Path(path)
    if path.is_symlink() and not path.is_dir():
        raise PersistError(f"{path} is a symbolic link to a file; refusing to write through it")
    if path.exists() and not path.is_dir():
        raise PersistError(f"{path} exists and is not a directory")
    if path.is_dir() and not is_index_dir(path) and any(not _ours(p.name) for p in path.iterdir()):
        raise PersistError(f"{path} is a non-empty directory that is not a g2cons index; refusing to replace it")
    logged = _log_base(snap) is not None
    _check_serialisable(snap, logged)  # before anything is written
    path.mkdir(parents=True, exist_ok=True)
    with _writer_lock(path):
        _clean_leftovers(path)
        previous = _current_name(path)
        name = f"v-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"
        tmp = path / f".tmp-{name}"
        base = _log_base(snap)
        if snap.pending is not None and base is None:
            snap = refreshed(snap)
        if logged and base is None:  # its base went meanwhile: every chunk is written
            _check_serialisable(snap, False)
        try:
            os.mkdir(tmp)  # umask applies
            manifest_bytes = None
            if base is not None:
                manifest_bytes = _write_log_version(snap, base, tmp)
                if manifest_bytes is None:  # no hard link here: refreshed and saved whole
                    shutil.rmtree(tmp)
                    os.mkdir(tmp)
                    snap = refreshed(snap)
                    _check_serialisable(snap, False)
            if manifest_bytes is None:
                manifest_bytes = _write_version(snap, tmp)
            _fsync_dir(tmp)
            os.rename(tmp, path / name)
        except BaseException as e:
            failed = _save_failed(e, path, tmp, previous)  # names the file before the partial version goes
            shutil.rmtree(tmp, ignore_errors=True)
            if failed is not None:
                raise failed from e
            raise
        _fsync_dir(path)
        origin = Origin(str((path / name).resolve()), _sha256_bytes(manifest_bytes))
        pointer = {
            "format": FORMAT,
            "version": FORMAT_VERSION if snap.pending is None else LOG_VERSION,
            "data": name,
            "manifest_sha256": _sha256_bytes(manifest_bytes),
        }
        ptmp = path / f".tmp-CURRENT-{secrets.token_hex(6)}"
        try:
            _write(ptmp, lambda fh: fh.write(json.dumps(pointer, indent=2).encode("utf-8")))
            os.replace(ptmp, path / POINTER)
        except BaseException as e:  # CURRENT still names the previous version: the new one is not kept
            failed = _save_failed(e, path, ptmp, previous)
            ptmp.unlink(missing_ok=True)
            shutil.rmtree(path / name, ignore_errors=True)
            if failed is not None:
                raise failed from e
            raise
        _fsync_dir(path)
        _remove_old_versions(path, {name, previous})
        if _is_legacy(path):
            for f in LEGACY_FILES:  # replaced: remove exactly what format version 1 wrote
                with contextlib.suppress(FileNotFoundError):
                    (path / f).unlink()
    return with_origin(snap, origin)  # a version 6 holds the files of the exact snapshot its log starts from too


def _last_file(where: Path) -> Path | None:
    """The file most recently written under ``where`` (the one a write failed on: the save writes one at a time)."""
    if where.is_file():
        return where
    try:
        files = [p for p in where.rglob("*") if p.is_file()]
        return max(files, key=lambda p: p.stat().st_mtime_ns) if files else None
    except OSError:
        return None


def _save_failed(e: BaseException, path: Path, where: Path, previous: str | None) -> PersistError | None:
    """For a save that ran out of room (:data:`~g2cons_plugins.storage.outputs.NO_ROOM`): a :class:`PersistError` naming
    the file being written and saying what stays intact; None for any other failure (raised as it is)."""
    if not isinstance(e, OSError) or isinstance(e, PersistError) or e.errno not in NO_ROOM:
        return None
    file = e.filename or _last_file(where) or where
    kept = (
        f"the index at {path} is unchanged and loads its previous save ({previous})"
        if previous is not None
        else f"no index was saved at {path}"
    )
    fix = "make room" if e.errno != errno.EFBIG else "raise the file size limit (ulimit -f) or use another file system"
    return PersistError(
        f"{path}: cannot save the index: {e.strerror or e} while writing {file}; {kept}, and the partial version "
        f"was removed: {fix} and save again"
    )


def _check_serialisable(snap: Snapshot, log_only: bool) -> None:
    """Fail before writing anything: metadata must be JSON, text valid Unicode (checked at build already). With
    ``log_only``, only the chunks of the trickle log's adds are written (the others are saved already)."""
    for cid, meta in _metadata_to_check(snap, log_only):
        try:
            encode_json(dict(meta)).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError) as e:
            raise PersistError(f"chunk {cid!r}: metadata must be JSON-serialisable to persist ({e})") from None


def _metadata_to_check(snap: Snapshot, log_only: bool) -> Iterator[tuple[str, Any]]:
    """(chunk id, metadata) of every chunk whose metadata is not JSON text already, one at a time. A chunk table's
    metadata column is JSON text (it was encoded when the table was made); only the entries a streaming build kept
    as the caller's objects (JSON would not give them back equal) need the check. Any other chunk sequence is
    walked lazily (a list of 1M chunks held 2.4 GB during a save)."""
    if not log_only:
        chunks = snap.stored.chunks
        if isinstance(chunks, ChunkTable):
            kept = getattr(chunks, "kept", None) or {}
            for i in sorted(kept):
                yield chunks.ids[i], chunks.meta(i)
        else:
            for c in chunks:
                if c.metadata:
                    yield c.id, c.metadata
    if snap.pending is not None:  # the logged adds' chunks (some may have been removed since)
        for op in snap.pending.ops:
            for c in op.chunks:
                if c.metadata:
                    yield c.id, c.metadata


def _log_base(snap: Snapshot) -> tuple[Path, dict[str, Any]] | None:
    """The saved version holding the exact snapshot that ``snap``'s trickle updates started from, and the manifest
    of that snapshot's files, when it is still there as it was saved; None for an exact snapshot or when not."""
    pd = snap.pending
    if pd is None or pd.origin is None:
        return None
    folder = Path(pd.origin.folder)
    try:
        data = _read_small(folder / "manifest.json", MANIFEST_MAX_BYTES)
    except (OSError, PersistError):
        return None
    if _sha256_bytes(data) != pd.origin.manifest_sha256:
        return None
    m = json.loads(data.decode("utf-8"))
    if m.get("version") not in (FORMAT_VERSION, LOG_VERSION):  # an older layout: saved whole, in today's
        return None
    ann = snap.unit_ann
    live = "unit_pq" if isinstance(ann, UnitPQ) else "unit_ann" if isinstance(ann, UnitANN) else None
    if live is not None and live not in m:  # the unit index changed kind (or came) since: a load would build it
        return None
    base = {k: v for k, v in m.items() if k != "trickle"}
    base["version"] = FORMAT_VERSION
    base["files"] = {k: v for k, v in m["files"].items() if k not in LOG_FILES}
    return folder, base


def _write_log_version(snap: Snapshot, base: tuple[Path, dict[str, Any]], folder: Path) -> bytes | None:
    """Version 6 in ``folder``: hard links to the base version's files, the trickle log, the manifest (the base's,
    with the log's files and the counts after the log); None when a file system refuses the links."""
    src, m = base
    names = list(_files(FORMAT_VERSION, m["files"]) + _ann_files(m))
    for name in names:
        try:
            os.link(src / name, folder / name, follow_symlinks=False)
        except OSError:  # another file system, no hard links here, or a save elsewhere removed that version
            return None
    assert snap.pending is not None
    write_log(folder, snap.pending.ops, int(snap.embedder.dim), _write)
    st = snap.stored
    manifest = {
        **m,
        "version": LOG_VERSION,
        "files": {**m["files"], **{name: _sha256(folder / name) for name in LOG_FILES}},
        "trickle": {
            "updates": len(snap.pending.ops),
            "counts": {"chunks": len(st.chunks), "units": len(st.units), "sentences": len(st.sentences)},
        },
    }
    data = json.dumps(manifest, indent=2).encode("utf-8")
    _write(folder / "manifest.json", lambda fh: fh.write(data))
    return data


def _write_version(snap: Snapshot, folder: Path) -> bytes:
    st = snap.stored
    if WRITE_VERSION >= 5:
        write_stored_npz(folder, st)
    else:
        write_stored(folder, st)
        sentences = list(st.sentences)
        _write(folder / "sentences.json", lambda fh: fh.write(json.dumps(sentences, ensure_ascii=False).encode()))
    for name, arr in ((SENTENCE_VECTORS, st.sent_vecs), ("unit_vectors.npy", st.unit_vecs)):
        if arr is not None:
            _write(folder / name, _npy(arr))
    write_derived(folder, snap.derived, snap.config)
    if WRITE_VERSION >= 5:
        write_lexical(folder, _lexical_weights(snap))
    files, ann = list(_written(st)), {}
    if isinstance(snap.unit_ann, UnitANN):  # the unit index, so a load maps it instead of rebuilding it
        ann["unit_ann"] = write_unit_ann(snap.unit_ann, folder, _write)
        files += UNIT_ANN_FILES
    elif isinstance(snap.unit_ann, UnitPQ):  # the product-quantised codes and codebook, so a load does not encode
        ann["unit_pq"] = write_unit_pq(snap.unit_ann, folder, _write)
        files += UNIT_PQ_FILES
    manifest = {
        "format": FORMAT,
        "version": WRITE_VERSION,
        "config": snap.config.to_dict(),
        "embedder": {"name": snap.embedder.name, "dim": int(snap.embedder.dim)},
        "tokenizer": snap.tokenizer.name,
        "counts": {"chunks": len(st.chunks), "units": len(st.units), "sentences": len(st.sentences)},
        "files": {name: _sha256(folder / name) for name in files},
        **ann,
    }
    data = json.dumps(manifest, indent=2).encode("utf-8")
    _write(folder / "manifest.json", lambda fh: fh.write(data))
    return data


def _lexical_weights(snap: Snapshot) -> Any:
    """The BM25 weights to save: the snapshot's where it has them (read with it, or made for a query), else made
    here with their blocks written to temporary files as they come (:class:`.spool.ArraySpool`; at 1M passages
    ~0.75 GB that a save made right after a build held in memory on top of the index) and kept on the snapshot, as
    its first query would have made them: the same weights bit for bit, file-backed."""
    if snap.bm25 is not None or "lexical" in snap.__dict__:
        return snap.lexical.weights
    lexical = LexicalIndex.build(snap.stored, snap.derived.terms, snap.config, spool=ArraySpool)
    snap.__dict__["lexical"] = lexical  # the memo ``Snapshot.lexical`` would have filled
    return lexical.weights


def _written(st: Stored) -> tuple[str, ...]:
    """The data files a save writes for ``st``: :data:`FILES`, the sentence vectors only where there are some."""
    files = FILES if WRITE_VERSION >= 5 else FILES_V3
    return tuple(f for f in files if f != SENTENCE_VECTORS or st.sent_vecs is not None)


def _current_name(path: Path) -> str | None:
    try:
        ptr = json.loads(_read_small(path / POINTER, POINTER_MAX_BYTES).decode("utf-8"))
    except (OSError, PersistError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    name = ptr.get("data") if isinstance(ptr, dict) else None
    return name if isinstance(name, str) and _VERSION.match(name) else None


def _clean_leftovers(path: Path) -> None:
    """Under the writer lock: temporary names of ours are leftovers of a crashed writer."""
    for p in path.iterdir():
        if _TMP.match(p.name) and not p.is_symlink():
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


def _remove_old_versions(path: Path, keep: set[str | None]) -> None:
    """Remove every version folder but the new one, the one the pointer named before (a loader that read the
    old pointer can still finish) and those a loader has pinned (:func:`_pinned`; a later save removes them);
    unreferenced versions of crashed writers go too."""
    for p in path.iterdir():
        if _VERSION.match(p.name) and p.name not in keep and p.is_dir() and not p.is_symlink():
            _remove_unpinned(p)


def _remove_unpinned(folder: Path) -> None:
    """Remove ``folder`` unless a loader holds its shared lock. The exclusive lock is taken without waiting and
    held while the folder is renamed to a temporary name of ours (a crash mid-removal leaves a leftover the next
    save clears) and removed; a loader that opened the folder meanwhile finds its lock refused, or the folder
    gone, and reads the pointer again."""
    try:
        import fcntl
    except ImportError:  # no advisory locks (not POSIX): remove as before, loaders retry
        shutil.rmtree(folder, ignore_errors=True)
        return
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # pinned by a loader
        except OSError:
            pass  # no flock on this file system: remove as before, loaders retry
        trash = folder.with_name(f".tmp-{folder.name}")
        try:
            os.rename(folder, trash)
        except OSError:
            trash = folder
        shutil.rmtree(trash, ignore_errors=True)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------- load
def _version_dir(path: Path) -> tuple[Path, str]:
    """The folder of the current version and the expected sha256 of its manifest."""
    path = Path(path)
    if not path.is_dir():
        raise PersistError(f"{path}: no such index directory")
    ptr_file = path / POINTER
    try:
        data = _read_small(ptr_file, POINTER_MAX_BYTES)
    except FileNotFoundError:
        old = _manifest_format(path / "manifest.json")
        if old in PRE_0_1_VERSIONS:
            raise too_old(path, old) from None
        if old is not None:
            raise PersistError(f"{path}: no {POINTER}: a version folder? load the index folder that holds it") from None
        raise PersistError(f"{path}: not a g2cons index (no {POINTER} and no manifest.json)") from None
    try:
        ptr = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PersistError(f"{ptr_file}: unreadable or not valid JSON ({e})") from None
    if not isinstance(ptr, dict) or ptr.get("format") != FORMAT:
        raise PersistError(f"{ptr_file}: not a g2cons index pointer")
    if ptr.get("version") in PRE_0_1_VERSIONS:
        raise too_old(path, ptr["version"])
    if ptr.get("version") not in READ_VERSIONS:
        raise PersistError(f"{ptr_file}: format version {ptr.get('version')!r}; this library reads {READ_VERSIONS}")
    name, digest = ptr.get("data"), ptr.get("manifest_sha256")
    if not isinstance(name, str) or not _VERSION.match(name):
        raise PersistError(f"{ptr_file}: field 'data' must name a version folder, got {name!r}")
    if not isinstance(digest, str) or not _HEX64.match(digest):
        raise PersistError(f"{ptr_file}: field 'manifest_sha256' must be a sha256 hex digest")
    folder = path / name
    if folder.is_symlink() or not folder.is_dir():
        raise PersistError(f"{folder}: missing or not a real directory (pointed to by {ptr_file})")
    return folder, digest


def read_manifest(path: Path) -> dict[str, Any]:
    """The validated manifest of the current version of the index at ``path``."""
    folder, digest = _version_dir(Path(path))
    return _manifest(folder, digest)


def _manifest(folder: Path, digest: str) -> dict[str, Any]:
    mf = folder / "manifest.json"
    try:
        data = _read_small(mf, MANIFEST_MAX_BYTES)
    except FileNotFoundError:
        raise PersistError(f"{mf}: missing; {folder} is not a g2cons index (or its save did not finish)") from None
    except OSError as e:
        raise PersistError(f"{mf}: unreadable ({e})") from None
    if _sha256_bytes(data) != digest:
        raise PersistError(f"{mf}: checksum mismatch (modified after saving)")
    try:
        m = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise PersistError(f"{mf}: not valid JSON ({e})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        got = m.get("format") if isinstance(m, dict) else type(m).__name__
        raise PersistError(f"{mf}: not a g2cons index manifest (format {got!r})")
    if type(m.get("version")) is not int or m["version"] not in READ_VERSIONS:
        raise PersistError(f"{mf}: format version {m.get('version')!r}; expected one of {READ_VERSIONS}")

    def need(name: str, kind: type | tuple[type, ...]) -> Any:
        v = m.get(name)
        if not isinstance(v, kind) or isinstance(v, bool):
            raise PersistError(f"{mf}: field {name!r} missing or of the wrong type ({type(v).__name__})")
        return v

    need("config", dict)
    emb = need("embedder", dict)
    if not isinstance(emb.get("name"), str) or not emb["name"]:
        raise PersistError(f"{mf}: field 'embedder.name' must be a non-empty string")
    dim = emb.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65_536:
        raise PersistError(f"{mf}: field 'embedder.dim' must be an integer in [1, 65536], got {dim!r}")
    if not isinstance(m.get("tokenizer"), str):
        raise PersistError(f"{mf}: field 'tokenizer' missing or not a string")
    unknown = sorted(set(m["config"]) - SAVED_KEYS)
    if unknown:
        raise PersistError(f"{mf}: field 'config' has keys this library does not know: {unknown[:5]} (newer version?)")
    files = need("files", dict)
    expected = _files(m["version"], files) + _ann_files(m) + _log_files(m)
    if m["version"] == LOG_VERSION:
        tr = m.get("trickle")
        cnt = tr.get("counts") if isinstance(tr, dict) else None
        if not isinstance(cnt, dict) or any(
            isinstance(cnt.get(k), bool) or not isinstance(cnt.get(k), int) or cnt[k] < 0
            for k in ("chunks", "units", "sentences")
        ):
            raise PersistError(f"{mf}: field 'trickle.counts' must give the chunks, units and sentences after the log")
    for f in expected:
        if not isinstance(files.get(f), str) or not _HEX64.match(files[f]):
            raise PersistError(f"{mf}: field 'files.{f}' must be a sha256 hex digest")
    counts = m.get("counts", {})
    if not isinstance(counts, dict) or any(
        isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in counts.values()
    ):
        raise PersistError(f"{mf}: field 'counts' must map names to non-negative integers")
    return m


def _no_symlink(p: Path) -> None:
    if p.is_symlink():
        raise PersistError(f"{p}: is a symbolic link; index files must be real files inside the index folder")


class _Vanished(Exception):
    """A version folder disappeared before it could be pinned, or while being read where pinning is not
    available (a racing save removed it): read the pointer again."""


RACE_RETRY_S = 120.0  # where a loader cannot pin its version: how long it retries before it gives up


def load_snapshot(
    path: Path,
    embedder: str | Embedder | Callable[..., Any] | None = None,
    tokenizer: str | Tokenizer | None = None,
    verify: bool = False,
    rebuild: bool = False,
) -> Snapshot:
    """Load the current version of the index at ``path`` (see module doc) as a :class:`Snapshot`.

    The version is pinned while it is read (:func:`_pinned`), so saves from any process never remove it under
    the load. Where pinning is not available (no ``flock``), a load whose version a save removed meanwhile reads
    the new pointer again, with a growing pause, for up to :data:`RACE_RETRY_S` seconds."""
    deadline = time.monotonic() + RACE_RETRY_S
    attempt = 0
    while True:
        try:
            return _load_once(Path(path), embedder, tokenizer, verify, rebuild)
        except _Vanished:
            attempt += 1
            if time.monotonic() > deadline:
                raise PersistError(
                    f"{path}: the index kept changing while it was read ({attempt} saves raced this load in "
                    f"{RACE_RETRY_S:.0f} s, and its versions could not be pinned here)"
                ) from None
            time.sleep(min(0.001 * attempt, 0.25))


@contextlib.contextmanager
def _pinned(folder: Path) -> Iterator[bool]:
    """Pin the version ``folder`` while a loader reads it: a shared ``flock`` on the folder itself (no file is
    written, so a read-only index loads too; released when the process dies). :func:`_remove_unpinned` never
    removes a folder so pinned. Yields True when pinned, False where the file system or platform has no
    ``flock``; raises :class:`_Vanished` when a save removed (or is removing) the folder before it was pinned."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        raise _Vanished from None
    except OSError:  # not a real folder: the load reports it
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _Vanished from None  # a save holds it to remove it
        except OSError:
            pinned = False  # no flock on this file system
        else:
            try:  # a save may have removed it between the open and the lock: it must still be this folder
                now = os.stat(folder, follow_symlinks=False)
            except FileNotFoundError:
                raise _Vanished from None
            was = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):
                raise _Vanished
            pinned = True
        yield pinned
    finally:
        os.close(fd)


def _load_once(
    path: Path,
    embedder: str | Embedder | Callable[..., Any] | None,
    tokenizer: str | Tokenizer | None,
    verify: bool,
    rebuild: bool,
) -> Snapshot:
    folder, digest = _version_dir(path)
    with contextlib.ExitStack() as stack:
        pinned = stack.enter_context(_pinned(folder))
        try:
            return _read(folder, digest, embedder, tokenizer, verify, rebuild)
        except (FileNotFoundError, PersistError) as e:
            if not pinned and (not folder.is_dir() or _current_name(path) != folder.name):
                raise _Vanished from e  # a save switched the pointer and removed this version meanwhile
            if isinstance(e, FileNotFoundError):
                raise PersistError(f"{folder}: missing file {e.filename} (partial index directory)") from None
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _read(
    folder: Path,
    digest: str,
    embedder: str | Embedder | Callable[..., Any] | None,
    tokenizer: str | Tokenizer | None,
    verify: bool,
    rebuild: bool,
) -> Snapshot:
    m = _manifest(folder, digest)
    files = list(_files(m["version"], m["files"]) + _ann_files(m) + _log_files(m))
    for name in files:
        f = folder / name
        _no_symlink(f)
        if not f.is_file():
            raise PersistError(f"{f}: missing (partial index directory)")
    # the checksums are computed on a thread while the files are parsed (hashlib releases the GIL); nothing is
    # returned before every file matched, and a mismatch is reported before any parse error it may have caused
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="g2cons-sha256") as pool:
        mismatch = pool.submit(_first_mismatch, folder, files, m["files"])
        try:
            with _gc_paused():
                sums = lambda: _check_sums(folder, mismatch)  # noqa: E731
                snap = _parse(folder, digest, m, embedder, tokenizer, verify, rebuild, sums)
        except Exception:
            _check_sums(folder, mismatch)
            raise
        _check_sums(folder, mismatch)
    if _log_files(m):  # every file matched; with the collector on (a replay frees what it replaces)
        box = [snap]
        del snap  # the replay holds the only reference: the exact snapshot goes once the first update replaced it
        return _replayed(folder, m, box, int(m["embedder"]["dim"]))
    return snap


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused, then restored: a load makes a few objects per record, none of them in
    a cycle, and the collector's repeated passes over the growing heap took a quarter of it (measured at 80k)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _log_files(m: dict[str, Any]) -> tuple[str, ...]:
    """The trickle log's files (format version 6)."""
    return LOG_FILES if m.get("version") == LOG_VERSION else ()


def _ann_files(m: dict[str, Any]) -> tuple[str, ...]:
    """The unit index files a manifest lists (saves of format version 3 on, of a snapshot that had one: an HNSW
    graph, ``unit_ann``, or a product-quantised index, ``unit_pq``)."""
    return (UNIT_ANN_FILES if "unit_ann" in m else ()) + (UNIT_PQ_FILES if "unit_pq" in m else ())


def _files(version: int, listed: dict[str, Any]) -> tuple[str, ...]:
    """The files of a version folder besides the manifest; from format
    version 4 on, the :data:`OPTIONAL_FILES` are there only where the manifest's ``listed`` files name them."""
    if version >= 4:
        files = FILES if version >= 5 else FILES_V3
        return tuple(f for f in files if f not in OPTIONAL_FILES or f in listed)
    return FILES_V3


def _first_mismatch(folder: Path, files: list[str], sums: dict[str, str]) -> str | None:
    return next((name for name in files if _sha256(folder / name) != sums[name]), None)


def _check_sums(folder: Path, mismatch: Future[str | None]) -> None:
    name = mismatch.result()
    if name is not None:
        raise PersistError(f"{folder / name}: checksum mismatch (corrupted or modified after saving)")


def _parse(
    folder: Path,
    digest: str,
    m: dict[str, Any],
    embedder: str | Embedder | Callable[..., Any] | None,
    tokenizer: str | Tokenizer | None,
    verify: bool,
    rebuild: bool,
    checked: Callable[[], None] = lambda: None,
) -> Snapshot:
    mf = folder / "manifest.json"
    try:
        saved = m["config"]
        if isinstance(saved, dict) and "ann_kind" not in saved:  # saved before ``ann_kind``: its graph, kept
            saved = {**saved, "ann_kind": "hnsw"}
        config = G2ConSConfig.from_dict(saved)
    except (G2ConSError, TypeError, ValueError, RecursionError) as e:
        raise PersistError(f"{mf}: field 'config' is invalid: {e}") from None
    dim = int(m["embedder"]["dim"])
    tok = _tokenizer(mf, m, tokenizer)
    with_sentences = SENTENCE_VECTORS in _files(m["version"], m["files"])
    if m["version"] >= 5:
        sent_vecs = read_vectors(folder / SENTENCE_VECTORS, None, dim) if with_sentences else None
        stored = read_stored_npz(folder, read_vectors(folder / "unit_vectors.npy", None, dim), sent_vecs)
    else:
        stored = read_stored(folder, dim, sentence_vectors=with_sentences)
    if stored.sent_vecs is None and needs_sentence_vectors(config):
        raise PersistError(
            f"{mf}: field 'config' has vector_level {config.graph.vector_level!r} (Eq. 1 on sentence vectors) but the "
            f"index holds no {SENTENCE_VECTORS}"
        )
    counts = m.get("counts") or {}
    for key, n in (("chunks", len(stored.chunks)), ("units", len(stored.units)), ("sentences", len(stored.sentences))):
        if key in counts and counts[key] != n:
            raise PersistError(f"{mf}: field 'counts.{key}' is {counts[key]} but the data files hold {n}")
    emb = _embedder(folder, m, embedder)
    cached = emb if isinstance(emb, CachedEmbedder) else CachedEmbedder(emb)
    derived = None
    if not rebuild:
        derived = read_derived(folder, stored, dim, config, saved_config=m["config"])
        if verify:
            differ = differences(derive(stored, config, **derive_hooks(stored)), derived)
            if differ:
                raise PersistError(
                    f"{folder / 'derived.npz'}: the stored derived state differs from a fresh derive in "
                    f"{', '.join(differ)} (verify)"
                )
    ann = None if rebuild else _unit_ann(folder, m, config, len(stored.units), dim, checked)
    bm25 = None
    if derived is not None and LEXICAL_NPZ in _files(m["version"], m["files"]):
        bm25 = read_lexical(folder, len(stored.units), len(derived.terms.words))
    snap = make_snapshot(
        stored,
        cached,
        config,
        tok,
        derived=derived,
        unit_ann=ann,
        bm25=bm25,
        **derive_hooks(stored),
    )
    drop_mapped_pages([*state_arrays(snap.stored, snap.derived), bm25])  # checked; queries map what they read
    if not rebuild:
        snap = with_origin(snap, Origin(str(folder.resolve()), digest))
    return snap


def _replayed(folder: Path, m: dict[str, Any], box: list[Snapshot], dim: int) -> Snapshot:
    """The version's exact snapshot (the one item of ``box``, taken out of it) after its trickle log (called once
    every checksum matched)."""
    ops = read_log(folder, dim)
    t0 = time.perf_counter()
    log.info("%s: replaying the %d trickle updates saved since its last exact state", folder, len(ops))
    try:
        snap = replayed(box.pop(), ops)
    except G2ConSError as e:
        raise PersistError(
            f"{folder / LOG_FILES[0]}: the logged updates do not replay on the saved index ({e})"
        ) from None
    st, want = snap.stored, m["trickle"]["counts"]
    for key, n in (("chunks", len(st.chunks)), ("units", len(st.units)), ("sentences", len(st.sentences))):
        if want[key] != n:
            raise PersistError(
                f"{folder / 'manifest.json'}: field 'trickle.counts.{key}' is {want[key]} but the replay made {n}"
            )
    log.info("%s: %d updates replayed in %.1f s", folder, len(ops), time.perf_counter() - t0)
    return snap


def _unit_ann(
    folder: Path, m: dict[str, Any], config: G2ConSConfig, n_units: int, dim: int, checked: Callable[[], None]
) -> UnitANN | UnitPQ | None:
    """The saved unit index when the config uses one of its kind at this size (memory-mapped; read only after
    every checksum matched, so no library parses a modified file), else None (the snapshot then makes its own)."""
    saved = "hnsw" if "unit_ann" in m else "pq" if "unit_pq" in m else None
    kind = config.unit_index_kind(n_units, saved)
    if kind is None or not _ann_files(m):
        return None
    try:
        if kind == "hnsw" and "unit_ann" in m:
            checked()
            return read_unit_ann(folder, m["unit_ann"], n_units, dim)
        if kind == "pq" and "unit_pq" in m:
            checked()
            return read_unit_pq(folder, m["unit_pq"], n_units, dim)
    except ImportError:  # no usearch / faiss here: the snapshot scans exactly (with a warning)
        return None
    return None


def _tokenizer(mf: Path, m: dict[str, Any], given: str | Tokenizer | None) -> Tokenizer:
    if given is not None:
        return get_tokenizer(given)
    name = m.get("tokenizer", "cl100k_base")
    if name not in BUNDLED_TOKENIZERS:
        raise PersistError(
            f"{mf}: field 'tokenizer' is {name!r}; only bundled tokenizers {BUNDLED_TOKENIZERS} load offline "
            "(pass tokenizer= to load with another)"
        )
    return get_tokenizer(name)


def _embedder(folder: Path, m: dict[str, Any], given: str | Embedder | Callable[..., Any] | None) -> Embedder:
    name, dim = m["embedder"]["name"], int(m["embedder"]["dim"])
    if isinstance(given, str) and given.strip().lower() == "auto":  # chosen at build: the one the index names
        given = None
    try:
        emb = get_embedder(given if given is not None else name)
    except (G2ConSError, ImportError) as e:
        raise PersistError(
            f"{folder / 'manifest.json'}: index was built with embedder {name!r}, which cannot be rebuilt here "
            f"({e}); pass embedder= to load"
        ) from None
    if int(emb.dim) != dim:
        raise PersistError(
            f"{folder}: index was built with {name!r} (dimension {dim}); the given embedder {emb.name!r} "
            f"has dimension {emb.dim}"
        )
    if emb.name != name:
        raise PersistError(
            f"{folder}: index was built with embedder {name!r}, not {emb.name!r}; vectors of different models "
            "are not comparable"
        )
    if given is None and not name.startswith("openai"):  # probe a local model now, not at the first query
        try:
            probe = np.asarray(emb.embed(["g2cons"]), dtype=np.float32)
        except Exception as e:  # noqa: BLE001 - any failure of the model is a load error naming it
            raise PersistError(f"{folder / 'manifest.json'}: embedder {name!r} does not load here ({e})") from None
        if probe.shape != (1, dim):
            raise PersistError(f"{folder}: embedder {name!r} returns shape {probe.shape}, expected (1, {dim})")
    return emb
