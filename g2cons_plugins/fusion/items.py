"""What fusion takes and gives: a host result (:class:`HostItem`) and an item of the fused context
(:class:`FusedItem`), the host items' validation, and the token counts both rules charge.

Host items are validated: ``text`` must be a str (valid Unicode), ``chunk_id`` a str or int, ``score`` a number.
A host's ``n_tokens`` is never trusted: every text is counted with our tokenizer (:func:`token_counts`), so the
budget holds whatever the host claims.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import InputError, check_text, normalize_id, real

if TYPE_CHECKING:
    from ..retrieval import RetrievedItem
    from ..text import Tokenizer

__all__ = ["FusedItem", "HostItem", "as_host_items", "context_tokens", "norm_text", "token_counts"]

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class HostItem:
    """One host-retriever result: a chunk id and/or text, an optional score and token count."""

    chunk_id: str | None = None
    text: str | None = None
    score: float | None = None
    n_tokens: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FusedItem:
    """One item of the fused context."""

    source: str  # "host" | "concept" | "both"
    chunk_id: str | None
    unit_id: str | None
    text: str
    n_tokens: int
    score: float
    host: HostItem | None
    concept: RetrievedItem | None


def norm_text(text: str) -> str:
    """Text as fusion compares it: white space collapsed, stripped, lower case."""
    return _WS.sub(" ", text).strip().lower()


def as_host_items(items: Sequence[Any]) -> list[HostItem]:
    """Accept HostItem, mappings with chunk_id/id and/or text, or plain strings; validated (see module doc)."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError(f"host results must be a list of items, got {type(items).__name__}")
    return [_checked(_as_host_item(it, pos), pos) for pos, it in enumerate(items)]


def _as_host_item(it: Any, pos: int) -> HostItem:
    if isinstance(it, HostItem):
        return it
    if isinstance(it, str):
        return HostItem(text=it)
    if isinstance(it, Mapping):
        meta = it.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise InputError(f"host item #{pos}: metadata must be a mapping, got {type(meta).__name__}")
        return HostItem(
            chunk_id=it.get("chunk_id", it.get("id")),
            text=it.get("text"),
            score=it.get("score"),
            n_tokens=it.get("n_tokens"),
            metadata=dict(meta),
        )
    raise InputError(f"host item #{pos}: expected HostItem, mapping or str, got {type(it).__name__}")


def _checked(h: HostItem, pos: int) -> HostItem:
    what = f"host item #{pos}"
    cid = None if h.chunk_id is None else normalize_id(h.chunk_id, f"{what} chunk_id")
    if h.text is not None:
        check_text(what, h.text)
    score = None if h.score is None else real(f"{what} score", h.score)
    if cid is None and not (h.text and h.text.strip()):
        raise InputError(f"{what} has neither a chunk_id nor text")
    if cid == h.chunk_id and score == h.score:
        return h
    return replace(h, chunk_id=cid, score=score)


@lru_cache(maxsize=65_536)
def _count(tok: Tokenizer, text: str) -> int:
    return len(tok.encode(text))


def token_counts(tok: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Token counts, memoised per (tokenizer, text): hosts return the same chunks query after query."""
    try:
        return [_count(tok, t) for t in texts]  # type: ignore[arg-type]
    except TypeError:  # an unhashable custom tokenizer
        return [len(tok.encode(t)) for t in texts]


def context_tokens(items: Sequence[FusedItem]) -> int:
    """Tokens of a fused context."""
    return sum(f.n_tokens for f in items)
