"""Weighted Context Ensemble (Section 3.2.1): fuse host-KG results and concept-path results under beta.

Rules, in the paper's order of priority:
1. the fused context never exceeds beta tokens;
2. items retrieved by both paths ("both") come first;
3. host items take at most lambda x beta tokens, concept items at most (1 - lambda) x beta (then, with spill,
   what one path leaves unused).

A host result repeating a chunk id already placed (two sub-retrievers returning the same chunk) counts once.

Matching: a host item and a concept item overlap when the host's ``chunk_id`` equals the concept unit's id or
its parent chunk id; when the host item has no id, when its normalised text equals the unit text, or contains
it (a host that returns a whole chunk covering our sub-chunk). Never by hash alone.

Host items are validated: ``text`` must be a str (valid Unicode), ``chunk_id`` a str or int, ``score`` a number.
A host's ``n_tokens`` is never trusted: every text is counted with our tokenizer, so the budget holds whatever the
host claims. :func:`resolve_host_items` gives an id-only host item the text of that chunk (or unit) from the graph and
warns about ids the graph does not hold (such an item has no text and cannot be placed).

Budget accounting: an overlapping item is charged to the host share when it fits there, else to the concept
share; its text is the host's (it contains ours), or ours for an id-only host item, and it is charged the tokens
of that text. An overlapping pair that fits neither share leaves its concept unit to compete alone on the
concept path (the host item, too big, is dropped). Items are taken in each path's rank order; one that does not
fit in its share is skipped and the next one tried. Unused budget of one path: with ``spill=False`` (the
paper's hard caps) it stays unused; with ``spill=True`` (the default) the other path's remaining items may use it,
still within beta. Fused score: lambda x host_rank_score + (1 - lambda) x concept_rank_score, where a path's
rank score is 1 - rank / len(path) (scores from different hosts are not comparable; ranks are). The output
order: "both" items by fused score, then the remaining items by fused score. Deterministic.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import InputError, check_text, normalize_id, positive_int, real, unit_interval
from ..retrieval import RetrievedItem
from ..snapshot import HasSnapshot, as_snapshot
from ..text import Tokenizer, get_tokenizer

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


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _first_per_chunk(hosts: list[HostItem]) -> list[HostItem]:
    """A chunk the host returns more than once (e.g. from two sub-retrievers, with different fact lines in front)
    is placed once, at its best rank; items without an id are kept as they are."""
    seen: set[str] = set()
    out = []
    for h in hosts:
        if h.chunk_id is not None:
            if h.chunk_id in seen:
                continue
            seen.add(h.chunk_id)
        out.append(h)
    return out


def as_host_items(items: Sequence[Any]) -> list[HostItem]:
    """Accept HostItem, mappings with chunk_id/id and/or text, or plain strings; validated (see module doc)."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError(f"host results must be a list of items, got {type(items).__name__}")
    out = []
    for pos, it in enumerate(items):
        if isinstance(it, HostItem):
            h = it
        elif isinstance(it, str):
            h = HostItem(text=it)
        elif isinstance(it, Mapping):
            cid = it.get("chunk_id", it.get("id"))
            meta = it.get("metadata") or {}
            if not isinstance(meta, Mapping):
                raise InputError(f"host item #{pos}: metadata must be a mapping, got {type(meta).__name__}")
            h = HostItem(
                chunk_id=cid,
                text=it.get("text"),
                score=it.get("score"),
                n_tokens=it.get("n_tokens"),
                metadata=dict(meta),
            )
        else:
            raise InputError(f"host item #{pos}: expected HostItem, mapping or str, got {type(it).__name__}")
        out.append(_checked(h, pos))
    return out


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


def _counts(tok: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Token counts, memoised per (tokenizer, text): hosts return the same chunks query after query."""
    try:
        return [_count(tok, t) for t in texts]  # type: ignore[arg-type]
    except TypeError:  # an unhashable custom tokenizer
        return [len(tok.encode(t)) for t in texts]


def _rank_scores(n: int) -> list[float]:
    return [1.0 - r / n for r in range(n)] if n else []


def fuse(
    host: Sequence[Any],
    concept: Sequence[RetrievedItem],
    beta: int,
    lambda_: float = 0.4,
    tokenizer: Tokenizer | str | None = None,
    spill: bool = True,
) -> list[FusedItem]:
    """Fuse host and concept results into one context of at most ``beta`` tokens (see module doc). Defaults:
    lambda 0.4 with spill (the config's default-mode ensemble until share fusion became the default rule); the
    paper's are ``lambda_=0.6, spill=False``."""
    beta = positive_int("beta", beta)
    lambda_ = unit_interval("lambda_", lambda_)
    if not isinstance(spill, (bool, np.bool_)):
        raise InputError(f"spill must be True or False, got {spill!r}")
    tok = get_tokenizer(tokenizer)
    hosts = _first_per_chunk(as_host_items(host))
    for j, c in enumerate(concept):
        if not isinstance(c, RetrievedItem):
            raise InputError(f"concept item #{j}: expected RetrievedItem, got {type(c).__name__}")
        if isinstance(c.n_tokens, bool) or not isinstance(c.n_tokens, int) or c.n_tokens < 1:
            raise InputError(f"concept item #{j} ({c.unit_id!r}): n_tokens must be an int >= 1, got {c.n_tokens!r}")
    host_tokens = _counts(tok, [h.text or "" for h in hosts])  # never the host's claim: the budget must hold
    hs, cs = _rank_scores(len(hosts)), _rank_scores(len(concept))

    # match each concept item to the best-ranked host item (id first, then text)
    by_id: dict[str, int] = {}
    for pos, h in enumerate(hosts):
        if h.chunk_id is not None:
            by_id.setdefault(h.chunk_id, pos)
    textual = any(h.chunk_id is None and h.text for h in hosts)  # text fallback only for id-less host items
    host_norm = [_norm(h.text) if h.text and h.chunk_id is None else "" for h in hosts]
    match: dict[int, int] = {}  # concept position -> host position
    taken_hosts: set[int] = set()
    for j, c in enumerate(concept):
        i: int | None = by_id.get(c.unit_id, by_id.get(c.parent_id))
        if i is None and textual:
            cn = _norm(c.text)
            for k, hn in enumerate(host_norm):
                if hosts[k].chunk_id is None and hn and (hn == cn or (len(cn) >= 20 and cn in hn)):
                    i = k
                    break
        if i is not None and i not in taken_hosts:
            match[j] = i
            taken_hosts.add(i)
        elif i is not None and hosts[i].text:
            match[j] = i  # a second sub-chunk of the same host chunk: already covered by that host text
        # (an id-only host has no text to cover a second sub-chunk: that one stays on the concept path)
    host_cap, concept_cap = lambda_ * beta, (1.0 - lambda_) * beta
    used = {"host": 0, "concept": 0}
    out: list[FusedItem] = []
    placed_hosts: set[int] = set()
    covered_concepts: set[int] = set()

    def fits(path: str, n: int, cap: float) -> bool:
        return used[path] + n <= cap and used["host"] + used["concept"] + n <= beta

    both = sorted(match.items(), key=lambda jc: (-(lambda_ * hs[jc[1]] + (1 - lambda_) * cs[jc[0]]), jc[1], jc[0]))
    for j, i in both:
        if i in placed_hosts:
            covered_concepts.add(j)  # its text is already inside the placed host item
            continue
        n = host_tokens[i] if hosts[i].text else concept[j].n_tokens  # the text given is the one charged
        path = "host" if fits("host", n, host_cap) else "concept" if fits("concept", n, concept_cap) else None
        if path is None:
            continue
        used[path] += n
        placed_hosts.add(i)
        covered_concepts.add(j)
        h, c = hosts[i], concept[j]
        out.append(
            FusedItem(
                "both",
                h.chunk_id or c.parent_id,
                c.unit_id,
                h.text or c.text,
                n,
                lambda_ * hs[i] + (1 - lambda_) * cs[j],
                h,
                c,
            )
        )
    rest: list[FusedItem] = []
    for i, h in enumerate(hosts):
        if i in placed_hosts or i in taken_hosts:
            continue
        if h.text is None:
            continue  # an id-only host item that matched nothing has no text to give
        if fits("host", host_tokens[i], host_cap):
            used["host"] += host_tokens[i]
            placed_hosts.add(i)
            rest.append(FusedItem("host", h.chunk_id, None, h.text, host_tokens[i], lambda_ * hs[i], h, None))
    for j, c in enumerate(concept):
        if j in covered_concepts:  # placed, or inside a placed host item; an unplaced match competes alone
            continue
        if fits("concept", c.n_tokens, concept_cap):
            used["concept"] += c.n_tokens
            covered_concepts.add(j)
            rest.append(
                FusedItem("concept", c.parent_id, c.unit_id, c.text, c.n_tokens, (1 - lambda_) * cs[j], None, c)
            )
    if spill:  # give one path's unused share to the other path's remaining items, within beta
        for j, c in enumerate(concept):
            if j not in covered_concepts and used["host"] + used["concept"] + c.n_tokens <= beta:
                used["concept"] += c.n_tokens
                covered_concepts.add(j)
                rest.append(
                    FusedItem("concept", c.parent_id, c.unit_id, c.text, c.n_tokens, (1 - lambda_) * cs[j], None, c)
                )
        for i, h in enumerate(hosts):
            if (
                i not in placed_hosts
                and i not in taken_hosts
                and h.text is not None
                and used["host"] + used["concept"] + host_tokens[i] <= beta
            ):
                used["host"] += host_tokens[i]
                placed_hosts.add(i)
                rest.append(FusedItem("host", h.chunk_id, None, h.text, host_tokens[i], lambda_ * hs[i], h, None))
    rest.sort(key=lambda f: -f.score)  # stable: ties keep host-then-concept rank order
    return out + rest


def context_tokens(items: Sequence[FusedItem]) -> int:
    """Tokens of a fused context."""
    return sum(f.n_tokens for f in items)


def resolve_host_items(index: HasSnapshot, host: Sequence[Any]) -> list[HostItem]:
    """Validated host items; an id-only item whose id is a chunk (or unit) of the graph gets that text. Ids the
    graph does not hold are reported in one warning (they cannot be placed without text)."""
    snap = as_snapshot(index)
    out, unknown = [], []
    for h in as_host_items(host):
        cid = h.chunk_id
        if h.text is None and cid is not None:
            if cid in snap.chunk_pos:
                h = replace(h, text=snap.stored.chunks[snap.chunk_pos[cid]].text)
            elif cid in snap.unit_pos:
                h = replace(h, text=snap.stored.units[snap.unit_pos[cid]].text)
            else:
                unknown.append(cid)
        out.append(h)
    if unknown:
        warnings.warn(
            f"{len(unknown)} id-only host item(s) name chunks this graph does not hold and have no text: "
            f"{unknown[:5]}",
            stacklevel=3,
        )
    return out
