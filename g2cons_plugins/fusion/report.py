"""What happened to each host item of one fusion: :class:`Fusion` (the context and its report) and
:func:`report` (which host items contributed, and why the others did not)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..snapshot import Snapshot
from .items import FusedItem, HostItem, context_tokens

__all__ = ["REASON_BELOW", "REASON_CAP", "REASON_TOO_LONG", "REASON_UNKNOWN", "Fusion", "host_label", "report"]

REASON_BELOW = "its units ranked below the budget"
REASON_TOO_LONG = "not in the concept graph and longer than the room left"
REASON_UNKNOWN = "id not in the concept graph and no text"
REASON_CAP = "did not fit the host share (lambda x beta)"


@dataclass(frozen=True)
class Fusion:
    """A fused context and what happened to each host item: ``items`` (the context, best first), ``host_items``
    (distinct host items given), ``contributed`` (of those, how many placed text in the context) and ``dropped``
    (reason -> count; ``dropped_examples``: reason -> up to 3 ids or text heads)."""

    items: list[FusedItem]
    host_items: int
    contributed: int
    dropped: Mapping[str, int] = field(default_factory=dict)
    dropped_examples: Mapping[str, list[str]] = field(default_factory=dict)
    rule: str = "score"

    @property
    def n_tokens(self) -> int:
        """Tokens of the fused context."""
        return context_tokens(self.items)

    def summary(self) -> str:
        """One line: items by source, tokens, and host items dropped with their reasons."""
        by = Counter(f.source for f in self.items)
        line = (
            f"{len(self.items)} items ({by['both']} both, {by['host']} host, {by['concept']} concept), "
            f"{self.n_tokens} tokens; host items: {self.host_items} given, {self.contributed} contributed"
        )
        if self.dropped:
            line += "; not placed: " + ", ".join(f"{n} {r}" for r, n in self.dropped.items())
        return line


def host_label(h: HostItem) -> str:
    """A host item as a report names it: its chunk id, else the head of its text."""
    return h.chunk_id if h.chunk_id is not None else (h.text or "")[:40]


def _placed(snap: Snapshot, items: list[FusedItem], rule: str) -> tuple[set[str], set[int]]:
    """Chunk ids and unit positions a host item counts as placed by: the ensemble's, placed as the host's item
    ("host" or "both", not by the concept path alone); the other rules', any of its units in the context."""
    if rule == "ensemble":
        return {f.host.chunk_id for f in items if f.host is not None and f.host.chunk_id is not None}, set()
    chunks = {f.chunk_id for f in items if f.chunk_id is not None and f.host is not None}
    units = {
        snap.unit_pos[f.unit_id]
        for f in items
        if f.host is not None and f.unit_id is not None and f.unit_id in snap.unit_pos
    }
    return chunks, units


def _reason(h: HostItem, units: np.ndarray | None) -> str:
    if units is not None:
        return REASON_BELOW
    return REASON_TOO_LONG if h.text else REASON_UNKNOWN


def report(
    snap: Snapshot, items: list[FusedItem], hosts: list[HostItem], units_of: list[np.ndarray | None], rule: str
) -> Fusion:
    """The fused context ``items`` with its report: each of ``hosts`` (with the unit positions it stands for,
    ``units_of``) contributed, or is counted under the reason it did not."""
    placed_chunks, placed_units = _placed(snap, items, rule)
    placed_hosts = {id(f.host) for f in items if f.host is not None}
    dropped: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    contributed = 0
    for h, units in zip(hosts, units_of, strict=True):
        by_id = h.chunk_id is not None and h.chunk_id in placed_chunks
        if by_id or id(h) in placed_hosts or (units is not None and placed_units.intersection(units.tolist())):
            contributed += 1
            continue
        reason = _reason(h, units)
        dropped[reason] += 1
        examples.setdefault(reason, [])
        if len(examples[reason]) < 3:
            examples[reason].append(host_label(h))
    return Fusion(items, len(hosts), contributed, dict(dropped), examples, rule)
