"""Chunks (what the host KG is built from) and retrieval units (what retrieval returns).

A chunk has a stable id: the one given, or ``"h:" + sha1(text)[:16]`` (a content hash, so the same text gets
the same id on every run). Bad input raises :class:`InputError` naming the chunk; nothing is dropped silently.

Retrieval units: KET-RAG's tau split, done at sentence boundaries. Each chunk is cut into units of at most
``unit_tokens`` tokens by packing whole sentences; a sentence longer than that is cut into token windows.
A chunk that fits in one unit keeps its own id as the unit id; otherwise units are ``"{chunk_id}::{i}"``.
Every unit keeps ``parent_id``, so hosts match results by chunk id.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, check_text, normalize_id
from .text import Tokenizer, split_sentences

MAX_CHUNK_CHARS = 64_000_000  # ~16M tokens: above this a chunk is surely a mistake (a whole file, binary data)
MAX_METADATA_DEPTH = 64  # mappings and lists inside one another: deeper is refused (JSON writers recurse per level)
MAX_METADATA_VALUES = 1_000_000  # values in one chunk's metadata, counted as JSON writes them (shared ones each time)


@dataclass(frozen=True)
class Chunk:
    """A chunk of the corpus: ``id``, ``text`` and optional JSON-serialisable ``metadata``."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Unit:
    """A retrieval unit: a chunk or a sub-chunk of it, made of whole sentences (see module doc)."""

    id: str
    parent_id: str
    text: str
    n_tokens: int
    sentences: tuple[str, ...]


def unit_id(chunk_id: str, i: int, n_units: int) -> str:
    """The id of unit ``i`` of ``n_units`` of chunk ``chunk_id`` (see module doc)."""
    return chunk_id if n_units == 1 else f"{chunk_id}::{i}"


def content_id(text: str) -> str:
    """Stable id of a text: ``h:`` + the first 16 hex digits of its sha1."""
    return "h:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def check_metadata(meta: Any, what: str) -> dict[str, Any]:
    """``meta`` as a new dict: a mapping (or None / an empty value: no metadata) whose mappings and lists nest at most
    :data:`MAX_METADATA_DEPTH` deep and hold at most :data:`MAX_METADATA_VALUES` values as JSON would write them
    (a container referenced twice counts twice; one that holds itself is too deep), walked depth first without
    recursion; else InputError naming ``what`` and, for the depth, the path to the first level too deep."""
    if not isinstance(meta, Mapping) and not meta:  # None, or an empty value of another type, as before
        return {}
    if not isinstance(meta, Mapping):
        raise InputError(f"{what}: metadata must be a mapping, got {type(meta).__name__}")
    todo: list[tuple[Any, int, Any]] = [(meta, 1, None)]  # (value, depth, (its parent's link, its key) or None)
    seen = 0
    while todo:
        value, depth, link = todo.pop()
        seen += 1
        if seen > MAX_METADATA_VALUES:
            raise InputError(f"{what}: metadata holds more than {MAX_METADATA_VALUES:,} values; keep it small")
        if depth > MAX_METADATA_DEPTH:
            raise InputError(
                f"{what}: metadata nests more than {MAX_METADATA_DEPTH} levels deep (at {_key_path(link)}); "
                "flatten it (e.g. store the deep part as a JSON string)"
            )
        if isinstance(value, Mapping):
            todo.extend((v, depth + 1, (link, k)) for k, v in value.items())
        elif isinstance(value, list | tuple):
            todo.extend((v, depth + 1, (link, i)) for i, v in enumerate(value))
    return dict(meta)


def _key_path(link: Any, shown: int = 6) -> str:
    """``[k1][k2]...`` of a :func:`check_metadata` link (the first ``shown`` keys, then how many more)."""
    import reprlib

    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    keys.reverse()
    head = "".join(f"[{reprlib.repr(k)}]" for k in keys[:shown])
    return head + (f"... ({len(keys) - shown} more levels)" if len(keys) > shown else "")


def _as_chunk(item: Any, position: int) -> Chunk:
    if isinstance(item, Chunk):
        return item
    if isinstance(item, str):
        return Chunk(id=content_id(check_text(f"chunk #{position}", item)), text=item)
    if isinstance(item, Mapping):
        if "text" not in item:
            raise InputError(f"chunk #{position} is a mapping without a 'text' key (keys: {sorted(item)})")
        text = item["text"]
        title = item.get("title")
        if title and isinstance(text, str):
            text = f"{title}\n{text}"
        cid = item.get("id")
        meta = check_metadata(item.get("metadata"), f"chunk #{position} ({cid!r})")
        if not isinstance(text, str):
            raise InputError(f"chunk #{position} ({cid!r}): text must be str, got {type(text).__name__}")
        check_text(f"chunk #{position} ({cid!r})", text)
        cid = normalize_id(cid, f"chunk #{position} id") if cid is not None else content_id(text)
        return Chunk(id=cid, text=text, metadata=meta)
    if isinstance(item, tuple) and len(item) == 2:
        check_text(f"chunk #{position} ({item[0]!r})", item[1])
        return Chunk(id=normalize_id(item[0], f"chunk #{position} id"), text=item[1])
    raise InputError(
        f"chunk #{position}: expected Chunk, str, mapping with 'text', or (id, text); got {type(item).__name__}"
    )


def make_chunks(items: Iterable[Any]) -> list[Chunk]:
    """Normalise and validate input chunks.

    Raises InputError for: an empty corpus; an empty or whitespace-only chunk; a chunk that is not text or
    contains NUL bytes (binary data); a chunk over ``MAX_CHUNK_CHARS``; metadata that is not a mapping or nests
    deeper than ``MAX_METADATA_DEPTH``; two chunks with the same id and different text. The same id with the same
    text twice is collapsed into one chunk with a warning.
    """
    chunks: list[Chunk] = []
    chunks.extend(iter_chunks(items, lambda k: chunks[k].text))
    return chunks


def iter_chunks(items: Iterable[Any], earlier_text: Callable[[int], str]) -> Iterator[Chunk]:
    """The chunks of ``items`` one at a time, checked as :func:`make_chunks` checks them (the same errors), for a
    caller that stores them as they come (a streaming build). ``earlier_text(k)``: the text of the ``k``-th chunk
    this generator yielded, read when an id comes again. Raises InputError at the end when nothing was yielded."""
    if items is None or isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        what = "a single string (wrap it in a list)" if isinstance(items, (str, bytes)) else type(items).__name__
        raise InputError(
            "chunks must be a list (or any iterable) of chunks: strings, {'id', 'text'} dicts, (id, text) pairs "
            f"or Chunk objects; got {what}"
        )
    seen: dict[str, int] = {}
    for pos, item in enumerate(items):
        ch = _checked(item, pos)
        if ch.id in seen:
            if earlier_text(seen[ch.id]) != ch.text:
                raise InputError(f"duplicate chunk id {ch.id!r} (#{seen[ch.id]} and #{pos}) with different text")
            warnings.warn(f"chunk id {ch.id!r} given twice with the same text; kept once", stacklevel=3)
            continue
        seen[ch.id] = len(seen)
        yield ch
    if not seen:
        raise InputError("empty corpus: no chunks were given")


def _checked(item: Any, pos: int) -> Chunk:
    """Input ``item`` (at position ``pos``) as a checked :class:`Chunk` (see :func:`make_chunks`)."""
    ch = _as_chunk(item, pos)
    check_text(f"chunk {ch.id!r} (#{pos})", ch.text)
    if isinstance(item, Chunk):
        check_metadata(ch.metadata, f"chunk {ch.id!r} (#{pos})")
    if isinstance(ch.id, str) and ch.id:
        check_text(f"chunk #{pos} id", ch.id)
    else:
        ch = Chunk(normalize_id(ch.id, f"chunk #{pos} id"), ch.text, ch.metadata)
    if not ch.text.strip():
        raise InputError(f"chunk {ch.id!r} (#{pos}) is empty or whitespace only")
    if "\x00" in ch.text:
        raise InputError(f"chunk {ch.id!r} (#{pos}) contains NUL bytes: binary data is not text")
    if len(ch.text) > MAX_CHUNK_CHARS:
        raise InputError(f"chunk {ch.id!r} has {len(ch.text):,} characters (limit {MAX_CHUNK_CHARS:,}); split it first")
    if not ch.id:
        raise InputError(f"chunk #{pos} has an empty id")
    return ch


def _windows(sentence: str, tokenizer: Tokenizer, size: int) -> list[tuple[str, int]]:
    ids = tokenizer.encode(sentence)
    out = []
    for k in range(0, len(ids), size):
        piece = tokenizer.decode(ids[k : k + size]).strip()
        if piece:
            out.append((piece, len(tokenizer.encode(piece))))
    return out


def split_units(chunk: Chunk, tokenizer: Tokenizer, unit_tokens: int | None) -> list[Unit]:
    """Cut ``chunk`` into retrieval units of <= ``unit_tokens`` tokens at sentence boundaries (see module doc)."""
    sentences = split_sentences(chunk.text) or [chunk.text.strip()]
    if unit_tokens is None:
        total = len(tokenizer.encode(chunk.text))
        return [Unit(chunk.id, chunk.id, chunk.text, total, tuple(sentences))]
    encode = tokenizer.encode
    counted = [(s, len(encode(s))) for s in sentences]
    pieces: list[tuple[str, int]] = []
    for s, n in counted:
        pieces.extend(_windows(s, tokenizer, unit_tokens) if n > unit_tokens else [(s, n)])
    groups: list[list[tuple[str, int]]] = [[]]
    used = 0
    for s, n in pieces:
        if groups[-1] and used + n + 1 > unit_tokens:
            groups.append([])
            used = 0
        groups[-1].append((s, n))
        used += n + 1
    if len(groups) == 1:  # one unit keeps the chunk's own text (whitespace, line breaks): only that is counted
        n_tokens = len(encode(chunk.text))
        return [Unit(chunk.id, chunk.id, chunk.text, n_tokens, tuple(s for s, _ in groups[0]))]
    units = []
    for i, group in enumerate(groups):
        text = " ".join(s for s, _ in group)
        uid = unit_id(chunk.id, i, len(groups))
        units.append(Unit(uid, chunk.id, text, len(encode(text)), tuple(s for s, _ in group)))
    return units


def check_unit_ids(units: Sequence[Unit], chunk_ids: set[str]) -> None:
    """Unit ids must not collide with other chunks' ids (a chunk literally named 'x::1' next to 'x')."""
    seen: dict[str, str] = {}
    for u in units:
        if u.id in seen or (u.id != u.parent_id and u.id in chunk_ids):
            raise InputError(f"retrieval unit id {u.id!r} collides with another chunk id; rename that chunk")
        seen[u.id] = u.parent_id


def pack_chunks(items: Sequence[Chunk], max_tokens: int, tokenizer: Tokenizer) -> list[Chunk]:
    """Concatenate consecutive chunks (e.g. short passages) into chunks of at most ``max_tokens`` tokens, the way
    MS GraphRAG chunks its input (1,200 tokens). Whole passages only: one longer than ``max_tokens`` stays alone.
    Ids are ``pack:{i}``; ``metadata["source_ids"]`` lists the packed ids."""
    if max_tokens < 1:
        raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
    out: list[Chunk] = []
    group: list[Chunk] = []
    used = 0
    for ch in items:
        n = len(tokenizer.encode(ch.text)) + 1
        if group and used + n > max_tokens:
            out.append(_packed(group, len(out)))
            group, used = [], 0
        group.append(ch)
        used += n
    if group:
        out.append(_packed(group, len(out)))
    return out


def _packed(group: list[Chunk], i: int) -> Chunk:
    return Chunk(id=f"pack:{i}", text="\n".join(c.text for c in group), metadata={"source_ids": [c.id for c in group]})
