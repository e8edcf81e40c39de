"""Weighted Context Ensemble (Section 3.2.1): fuse host-KG results and concept-path results under beta.

Rules, in the paper's order of priority (:func:`fuse` reads in this order):

1. the fused context never exceeds beta tokens (:class:`_Budget`);
2. items retrieved by both paths ("both") come first (:meth:`_Ensemble.vote`, :meth:`_Ensemble.place_overlap`);
3. host items take at most lambda x beta tokens, concept items at most (1 - lambda) x beta
   (:meth:`_Ensemble.take_hosts`, :meth:`_Ensemble.take_concepts`); then, with spill, what one path leaves unused.

A host result repeating a chunk id already placed (two sub-retrievers returning the same chunk) counts once.

Matching (the vote): a host item and a concept item overlap when the host's ``chunk_id`` equals the concept unit's
id or its parent chunk id; when the host item has no id, when its normalised text equals the unit text, or contains
it (a host that returns a whole chunk covering our sub-chunk). Never by hash alone.

Host items are validated (:func:`~g2cons_plugins.fusion.items.as_host_items`); a host's ``n_tokens`` is never
trusted: every text is counted with our tokenizer, so the budget holds whatever the host claims.

Budget accounting: an overlapping item is charged to the host share when it fits there, else to the concept
share; its text is the host's (it contains ours), or ours for an id-only host item, and it is charged the tokens
of that text. An overlapping pair that fits neither share leaves its concept unit to compete alone on the
concept path (the host item, too big, is dropped). Items are taken in each path's rank order; one that does not
fit in its share is skipped and the next one tried. Unused budget of one path: with ``spill=False`` (the
paper's hard caps) it stays unused; with ``spill=True`` (the default) the other path's remaining items may use it,
still within beta. Fused score: lambda x host_rank_score + (1 - lambda) x concept_rank_score, where a path's
rank score is 1 - rank / len(path) (scores from different hosts are not comparable; ranks are). The output
order: "both" items by fused score, then the remaining items by fused score. Deterministic.

:func:`fuse_ensemble` is the rule ``fusion="ensemble"`` (paper mode) over a snapshot, with the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError, positive_int, unit_interval
from ..retrieval import RetrievedItem, retrieve
from ..retrieval.linked import before_linked
from ..text import Tokenizer, get_tokenizer
from .items import FusedItem, HostItem, as_host_items, norm_text, token_counts
from .matching import host_units
from .options import FuseOptions, FuseRequest
from .report import REASON_BELOW, REASON_CAP, REASON_TOO_LONG, Fusion, report

__all__ = ["fuse", "fuse_ensemble"]


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
    beta, lambda_ = _checked_settings(beta, lambda_, spill)
    tok = get_tokenizer(tokenizer)
    hosts = _first_per_chunk(as_host_items(host))
    _check_concept(concept)
    concept = before_linked(concept)  # the concept path's order before its linked head (retrieval.linked)
    run = _Ensemble(hosts, concept, token_counts(tok, [h.text or "" for h in hosts]), lambda_, beta)
    run.vote()  # which host item each concept item is (overlap)
    both = run.place_overlap()  # 2. overlapping chunks first
    rest = run.take_hosts(capped=True) + run.take_concepts(capped=True)  # 3. each path within its share
    if spill:  # one path's unused share to the other path's remaining items, within beta (1.)
        rest += run.take_concepts(capped=False) + run.take_hosts(capped=False)
    rest.sort(key=lambda f: -f.score)  # stable: ties keep host-then-concept rank order
    return both + rest


def _checked_settings(beta: Any, lambda_: Any, spill: Any) -> tuple[int, float]:
    beta = positive_int("beta", beta)
    lambda_ = unit_interval("lambda_", lambda_)
    if not isinstance(spill, (bool, np.bool_)):
        raise InputError(f"spill must be True or False, got {spill!r}")
    return beta, lambda_


def _check_concept(concept: Sequence[Any]) -> None:
    for j, c in enumerate(concept):
        if not isinstance(c, RetrievedItem):
            raise InputError(f"concept item #{j}: expected RetrievedItem, got {type(c).__name__}")
        if isinstance(c.n_tokens, bool) or not isinstance(c.n_tokens, int) or c.n_tokens < 1:
            raise InputError(f"concept item #{j} ({c.unit_id!r}): n_tokens must be an int >= 1, got {c.n_tokens!r}")


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


def _rank_scores(n: int) -> list[float]:
    return [1.0 - r / n for r in range(n)] if n else []


class _Budget:
    """Tokens used per path: within beta in all (rule 1), each path within its cap when capped (rule 3)."""

    def __init__(self, beta: int, lambda_: float) -> None:
        self.beta = beta
        self.cap = {"host": lambda_ * beta, "concept": (1.0 - lambda_) * beta}
        self.used = {"host": 0, "concept": 0}

    def fits(self, path: str, n: int, capped: bool = True) -> bool:
        cap = self.cap[path] if capped else math.inf
        return self.used[path] + n <= cap and self.used["host"] + self.used["concept"] + n <= self.beta

    def charge(self, path: str, n: int) -> None:
        self.used[path] += n


class _Ensemble:
    """One fusion's state: both paths in rank order, their rank scores, the vote, and what is placed."""

    def __init__(
        self, hosts: list[HostItem], concept: Sequence[RetrievedItem], host_tokens: list[int], lam: float, beta: int
    ) -> None:
        self.hosts, self.concept, self.host_tokens, self.lam = hosts, concept, host_tokens, lam
        self.hs, self.cs = _rank_scores(len(hosts)), _rank_scores(len(concept))
        self.budget = _Budget(beta, lam)
        self.match: dict[int, int] = {}  # concept position -> host position
        self.taken_hosts: set[int] = set()  # host positions some concept item matched first
        self.placed_hosts: set[int] = set()
        self.covered: set[int] = set()  # concept positions placed, or inside a placed host item

    def _host_of(self, c: RetrievedItem, by_id: dict[str, int], host_norm: list[str]) -> int | None:
        """The best-ranked host item a concept item is: by id (its unit's, then its chunk's), else by text."""
        i = by_id.get(c.unit_id, by_id.get(c.parent_id))
        if i is None and any(host_norm):  # text fallback only for id-less host items
            cn = norm_text(c.text)
            for k, hn in enumerate(host_norm):
                if hn and (hn == cn or (len(cn) >= 20 and cn in hn)):
                    return k
        return i

    def vote(self) -> None:
        """Match each concept item to the best-ranked host item (id first, then text): the overlap."""
        by_id: dict[str, int] = {}
        for pos, h in enumerate(self.hosts):
            if h.chunk_id is not None:
                by_id.setdefault(h.chunk_id, pos)
        host_norm = [norm_text(h.text) if h.text and h.chunk_id is None else "" for h in self.hosts]
        for j, c in enumerate(self.concept):
            i = self._host_of(c, by_id, host_norm)
            if i is not None and i not in self.taken_hosts:
                self.match[j] = i
                self.taken_hosts.add(i)
            elif i is not None and self.hosts[i].text:
                self.match[j] = i  # a second sub-chunk of the same host chunk: already covered by that host text
            # (an id-only host has no text to cover a second sub-chunk: that one stays on the concept path)

    def fused_score(self, i: int, j: int) -> float:
        """lambda x host rank score + (1 - lambda) x concept rank score."""
        return self.lam * self.hs[i] + (1 - self.lam) * self.cs[j]

    def place_overlap(self) -> list[FusedItem]:
        """Overlapping pairs by fused score, each charged to the host share when it fits there, else the concept's
        (a pair that fits neither leaves its concept unit to compete alone)."""
        out = []
        for j, i in sorted(self.match.items(), key=lambda ji: (-self.fused_score(ji[1], ji[0]), ji[1], ji[0])):
            if i in self.placed_hosts:
                self.covered.add(j)  # its text is already inside the placed host item
                continue
            h, c = self.hosts[i], self.concept[j]
            n = self.host_tokens[i] if h.text else c.n_tokens  # the text given is the one charged
            path = "host" if self.budget.fits("host", n) else "concept" if self.budget.fits("concept", n) else None
            if path is None:
                continue
            self.budget.charge(path, n)
            self.placed_hosts.add(i)
            self.covered.add(j)
            score = self.fused_score(i, j)
            out.append(FusedItem("both", h.chunk_id or c.parent_id, c.unit_id, h.text or c.text, n, score, h, c))
        return out

    def take_hosts(self, capped: bool) -> list[FusedItem]:
        """The host's items not yet placed nor matched, in rank order, within its share (``capped``) or beta."""
        out = []
        for i, h in enumerate(self.hosts):
            if i in self.placed_hosts or i in self.taken_hosts or h.text is None:
                continue  # (an id-only host item that matched nothing has no text to give)
            if self.budget.fits("host", self.host_tokens[i], capped):
                self.budget.charge("host", self.host_tokens[i])
                self.placed_hosts.add(i)
                n, score = self.host_tokens[i], self.lam * self.hs[i]
                out.append(FusedItem("host", h.chunk_id, None, h.text, n, score, h, None))
        return out

    def take_concepts(self, capped: bool) -> list[FusedItem]:
        """The concept path's items not yet covered, in rank order, within its share (``capped``) or beta (an
        unplaced match competes alone)."""
        out = []
        for j, c in enumerate(self.concept):
            if j not in self.covered and self.budget.fits("concept", c.n_tokens, capped):
                self.budget.charge("concept", c.n_tokens)
                self.covered.add(j)
                score = (1 - self.lam) * self.cs[j]
                out.append(FusedItem("concept", c.parent_id, c.unit_id, c.text, c.n_tokens, score, None, c))
        return out


def fuse_ensemble(req: FuseRequest, opt: FuseOptions) -> Fusion:
    """The paper's Weighted Context Ensemble (:func:`fuse`) over a snapshot, with the report (a host item not placed
    did not fit the host share)."""
    snap, hosts = req.snap, req.hosts
    concept = req.concept
    if concept is None:
        concept = retrieve(snap, req.query, opt.beta, opt.strategy, req.query_vector)
    items = fuse(hosts, concept, beta=opt.beta, lambda_=opt.lambda_, tokenizer=snap.tokenizer, spill=opt.spill)
    out = report(snap, items, hosts, [host_units(snap, h) for h in hosts], "ensemble")
    dropped = {(REASON_CAP if r in (REASON_BELOW, REASON_TOO_LONG) else r): n for r, n in out.dropped.items()}
    examples = {(REASON_CAP if r in (REASON_BELOW, REASON_TOO_LONG) else r): e for r, e in out.dropped_examples.items()}
    return Fusion(out.items, out.host_items, out.contributed, dropped, examples, "ensemble")
