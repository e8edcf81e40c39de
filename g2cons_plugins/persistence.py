"""Save and load a G2ConSIndex: JSON + .npy (no pickle), versioned, written atomically, checksummed.

Layout of an index directory::

    manifest.json          format name, FORMAT_VERSION, config, embedder name/dim, tokenizer, sha256 of each file
    chunks.jsonl           one {"id", "text", "metadata", "n_tokens"} per line
    units.jsonl            one {"id", "parent_id", "text", "n_tokens", "sentences": [sentence positions]} per line
    sentences.json         the distinct sentences, in order
    sentence_vectors.npy   float32 (n_sentences, dim)
    unit_vectors.npy       float32 (n_units, dim)

Only the stored state is written; the derived state (concepts, edges, PageRank) is recomputed on load by the
same deterministic code as a build, so a loaded index equals the saved one. Writing goes to a temporary sibling
directory that replaces the target in one rename; a crash leaves the old index intact. Loading checks the format
name, the version and every file's checksum, and names the file at fault.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .chunks import Chunk, Unit
from .config import G2ConSConfig
from .embedders import CachedEmbedder, Embedder, get_embedder
from .errors import PersistError
from .text import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from .index import G2ConSIndex

FORMAT = "g2cons-index"
FORMAT_VERSION = 1
FILES = ("chunks.jsonl", "units.jsonl", "sentences.json", "sentence_vectors.npy", "unit_vectors.npy")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write(path: Path, data: bytes) -> None:
    with path.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def save_index(index: G2ConSIndex, path: Path) -> None:
    """Write ``index`` to ``path`` atomically (see module doc)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise PersistError(f"{path} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not _is_our_index(path):
        raise PersistError(f"{path} is a non-empty directory that is not a g2cons index; refusing to replace it")
    st = index.stored
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        sent_pos = {s: i for i, s in enumerate(st.sentences)}
        try:
            _write(
                tmp / "chunks.jsonl",
                _jsonl(
                    [
                        {"id": c.id, "text": c.text, "metadata": dict(c.metadata), "n_tokens": int(n)}
                        for c, n in zip(st.chunks, st.chunk_tokens.tolist(), strict=True)
                    ]
                ),
            )
        except TypeError as e:
            raise PersistError(f"chunk metadata must be JSON-serialisable to persist: {e}") from e
        _write(
            tmp / "units.jsonl",
            _jsonl(
                [
                    {
                        "id": u.id,
                        "parent_id": u.parent_id,
                        "text": u.text,
                        "n_tokens": u.n_tokens,
                        "sentences": [sent_pos[s] for s in u.sentences],
                    }
                    for u in st.units
                ]
            ),
        )
        _write(tmp / "sentences.json", json.dumps(st.sentences, ensure_ascii=False).encode("utf-8"))
        for name, arr in (("sentence_vectors.npy", st.sent_vecs), ("unit_vectors.npy", st.unit_vecs)):
            with (tmp / name).open("wb") as fh:
                np.save(fh, np.ascontiguousarray(arr, dtype=np.float32), allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "config": index.config.to_dict(),
            "embedder": {"name": index.embedder.name, "dim": int(index.embedder.dim)},
            "tokenizer": index.tokenizer.name,
            "counts": {"chunks": len(st.chunks), "units": len(st.units), "sentences": len(st.sentences)},
            "files": {name: _sha256(tmp / name) for name in FILES},
        }
        _write(tmp / "manifest.json", json.dumps(manifest, indent=2).encode("utf-8"))
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.rmdir(old)
            os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            if old is not None and not path.exists():
                os.rename(old, path)  # put the old index back: a failed save must leave it intact
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _is_our_index(path: Path) -> bool:
    """True when ``path`` holds a manifest.json written by this library (any version)."""
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PersistError(f"{path}: unreadable or not valid JSON ({e})") from None


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PersistError(f"{path}: unreadable or not valid JSON lines ({e})") from None


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of an index directory, checked for format and version."""
    path = Path(path)
    if not path.is_dir():
        raise PersistError(f"{path}: no such index directory")
    mf = path / "manifest.json"
    if not mf.is_file():
        raise PersistError(f"{mf}: missing; {path} is not a g2cons index (or its save did not finish)")
    manifest = _read_json(mf)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PersistError(
            f"{mf}: not a g2cons index manifest (format is {manifest.get('format')!r})"
            if isinstance(manifest, dict)
            else f"{mf}: not a g2cons index manifest"
        )
    if manifest.get("version") != FORMAT_VERSION:
        raise PersistError(
            f"{mf}: format version {manifest.get('version')!r}; this library reads version {FORMAT_VERSION}"
        )
    missing = [k for k in ("config", "embedder", "files") if k not in manifest]
    if missing:
        raise PersistError(f"{mf}: manifest lacks {missing} (partial or hand-edited)")
    return manifest


def load_index(
    path: Path,
    embedder: str | Embedder | Callable[..., Any] | None = None,
    tokenizer: str | Tokenizer | None = None,
) -> G2ConSIndex:
    """Load an index saved by :func:`save_index`; the embedder defaults to the one it was built with."""
    from .index import G2ConSIndex, Stored, _binary

    path = Path(path)
    manifest = read_manifest(path)
    for name in FILES:
        f = path / name
        if not f.is_file():
            raise PersistError(f"{f}: missing (partial index directory)")
        if _sha256(f) != manifest["files"].get(name):
            raise PersistError(f"{f}: checksum mismatch (corrupted or modified after saving)")
    chunk_rows = _read_jsonl(path / "chunks.jsonl")
    unit_rows = _read_jsonl(path / "units.jsonl")
    sentences = _read_json(path / "sentences.json")
    try:
        sent_vecs = np.load(path / "sentence_vectors.npy", allow_pickle=False)
        unit_vecs = np.load(path / "unit_vectors.npy", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise PersistError(f"{path}: vector file unreadable ({e})") from None
    dim = int(manifest["embedder"]["dim"])
    if sent_vecs.shape != (len(sentences), dim) or unit_vecs.shape != (len(unit_rows), dim):
        raise PersistError(f"{path}: vector shapes {sent_vecs.shape}/{unit_vecs.shape} do not match the manifest")
    emb = get_embedder(embedder if embedder is not None else manifest["embedder"]["name"])
    if int(emb.dim) != dim:
        raise PersistError(
            f"{path}: index was built with {manifest['embedder']['name']!r} (dimension {dim}); "
            f"the given embedder {emb.name!r} has dimension {emb.dim}"
        )
    if emb.name != manifest["embedder"]["name"]:
        raise PersistError(
            f"{path}: index was built with embedder {manifest['embedder']['name']!r}, "
            f"not {emb.name!r}; vectors of different models are not comparable"
        )
    chunks = [Chunk(r["id"], r["text"], r.get("metadata") or {}) for r in chunk_rows]
    pos = {c.id: i for i, c in enumerate(chunks)}
    units = [
        Unit(
            r["id"],
            r["parent_id"],
            r["text"],
            int(r["n_tokens"]),
            tuple(sentences[i] for i in r["sentences"]),
        )
        for r in unit_rows
    ]
    rows = [i for r in unit_rows for i in r["sentences"]]
    cols = [j for j, r in enumerate(unit_rows) for _ in r["sentences"]]
    sent_unit = _binary(
        sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(sentences), len(units)))
    )
    stored = Stored(
        chunks=chunks,
        chunk_tokens=np.array([int(r["n_tokens"]) for r in chunk_rows], dtype=np.int64),
        units=units,
        unit_parent=np.array([pos[u.parent_id] for u in units], dtype=np.int64),
        unit_tokens=np.array([u.n_tokens for u in units], dtype=np.int64),
        sentences=list(sentences),
        sent_unit=sent_unit,
        sent_vecs=sent_vecs.astype(np.float32),
        unit_vecs=unit_vecs.astype(np.float32),
    )
    cached = emb if isinstance(emb, CachedEmbedder) else CachedEmbedder(emb)
    with contextlib.suppress(Exception):
        cached.add(stored.sentences, stored.sent_vecs)
        cached.add([u.text for u in units], stored.unit_vecs)
    tok = get_tokenizer(tokenizer if tokenizer is not None else manifest.get("tokenizer"))
    return G2ConSIndex(stored, cached, G2ConSConfig.from_dict(manifest["config"]), tok)
