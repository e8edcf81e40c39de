"""Fusion rules compared offline on dumped candidates (``fusion_dump.py``), every rule on the same lists.

For each dump (host, kappa) and budget beta: Context Recall (the answer string in the context) and
supporting-passage recall@5 (the first five distinct passages of the context) of the concept path alone, the host
alone (its passages in its order while they fit), the union (a question counts when either path alone finds it: an
oracle, not a rule), share fusion at lambda 0.2 as ``g2cons eval`` ran it (dumped), the candidate rule
novel-first rule (:func:`novel_first_fuse`, below) and the alternatives tried on the way (weighted
reciprocal rank fusion, alternation of both paths' first passages, a proportional token merge, a fixed number of the
host's novel passages). Also: the recall@5 bound of mixing both paths' first five passages, the recall@5 a
weighted reciprocal rank fusion of both paths' passage ranks reaches when it chooses the first five alone, the
questions each path wins alone at 1k with the ranks of their answer passages, and a random host (noise) against the
concept path.

    python benchmarks/dual_path/fusion_rules_offline.py DUMP_DIR > benchmarks/dual_path/results/fusion_rules.md

Research code: the script keeps its own pure-Python copy of the candidate rules it compares, over plain candidate
lists (:class:`Candidate`, :func:`novel_first_fuse` with its ``window`` and ``head`` variants, the no-window
"aggressive" variant included), as the research helper wrote them (branch fusion38,
g2cons_plugins/fusion_rules_candidate.py). The package's rule is :mod:`g2cons_plugins.fusion.novel`
(``fusion="novel"``, window 2, the first novel passage from any rank in a context of 20 passages or more, lambda =
the config's): on the same lists it places the same units in the same order as
``novel_first_fuse(concept, host, beta, lambda_)`` (checked on every fusion of the six dumps at three budgets).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from g2cons_plugins.eval.evaluation import answer_in_context

BUDGETS = (1000, 2000, 4000)
SETS = (  # dump file stem, kappa, label
    ("gw", "1.0", "graph-walk (gpt-3.5 KG), MuSiQue, kappa 1.0"),
    ("gw", "0.5", "graph-walk (gpt-3.5 KG), MuSiQue, kappa 0.5"),
    ("ner_musique", "0.8", "NER host (weak), MuSiQue, kappa 0.8"),
    ("ner_hotpotqa", "0.8", "NER host (weak), HotpotQA, kappa 0.8"),
    ("ner_musique_ketrag500", "0.8", "NER host (weak), MuSiQue KET-RAG 500 (held out), kappa 0.8"),
    ("ner_2wikimultihopqa_ketrag500", "0.8", "NER host (weak), 2WikiMultiHopQA KET-RAG 500 (held out), kappa 0.8"),
)  # a dump that is not there is left out

# ---- the candidate rule (research copy of branch fusion38's g2cons_plugins/fusion_rules_candidate.py) ----
HEAD = 5  # the concept path's first passages, kept first
AGREEMENT_TOP = 5  # the host's first passages checked against the concept path (the trust check)
RANK_K = 5.0  # the rank constant of the positional score
WINDOW = 2  # the host's first passages that may enter as novel
ANY_RANK_FROM = 20  # from this many passages in the concept path's context, the first novel one from any rank


@dataclass(frozen=True)
class Candidate:
    """One piece a path offers: a unique ``key`` (unit id), the ``passage`` it belongs to (chunk id; ranks and the
    novelty test are over passages), its token count and the path's optional score (not used by the rule)."""

    key: str
    passage: str
    n_tokens: int
    score: float | None = None


@dataclass(frozen=True)
class Placed:
    """One item of the fused context: the candidate's key, passage and tokens, its positional score, and where it
    came from (``"concept"``; ``"both"``: a concept piece of a passage the host also returned; ``"host"``)."""

    key: str
    passage: str
    n_tokens: int
    score: float
    source: str


def _check(name: str, items: Sequence[Candidate]) -> list[Candidate]:
    out, seen = [], set()
    for i, c in enumerate(items):
        if not isinstance(c, Candidate):
            raise TypeError(f"{name}[{i}] must be a Candidate, got {type(c).__name__}")
        if isinstance(c.n_tokens, bool) or not isinstance(c.n_tokens, int) or c.n_tokens < 0:
            raise ValueError(f"{name}[{i}] ({c.key!r}): n_tokens must be an int >= 0, got {c.n_tokens!r}")
        if c.key not in seen:  # a repeated key is the same piece: its first place counts
            seen.add(c.key)
            out.append(c)
    return out


def _passages(items: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """Pieces per passage, passages in order of first appearance (dicts keep insertion order)."""
    groups: dict[str, list[Candidate]] = {}
    for c in items:
        groups.setdefault(c.passage, []).append(c)
    return groups


def host_trusted(concept: Sequence[Candidate], host: Sequence[Candidate], top: int = AGREEMENT_TOP) -> bool:
    """The trust check: the host's first ``top`` passages include one the concept path holds, or the host returns
    fewer than ``top`` passages."""
    held = {c.passage for c in concept}
    first = list(_passages(host))[:top]
    return len(first) < top or any(p in held for p in first)


def novel_first_fuse(
    concept: Sequence[Candidate],
    host: Sequence[Candidate],
    beta: int,
    lambda_: float,
    head: int = HEAD,
    agreement_top: int = AGREEMENT_TOP,
    window: int | None = WINDOW,
    any_rank_from: int | None = ANY_RANK_FROM,
) -> list[Placed]:
    """Novel-first fusion (the rule of :mod:`g2cons_plugins.fusion.novel`; this copy has every variant):
    the host's best passages the concept path lacks (among its first
    ``window``; the first always, more within ``lambda_`` x ``beta`` tokens) displace the concept path's tail; the
    concept path's first ``head`` passages lead the context; at most ``beta`` tokens; scores strictly decrease down
    the context.

    ``concept``: the concept path's context at ``beta``, best first; ``host``: the host's pieces, best passage
    first, a passage's pieces contiguous and best first (a key both lists give is the concept path's piece; a
    repeated key counts once, at its first place). Both lists are plain :class:`Candidate` values. ``window``: only
    the host's first ``window`` passages may enter as novel (None: any; both measured in
    benchmarks/dual_path/results/fusion_rules.md); ``any_rank_from``: from this many passages in the concept path's
    context on, the first novel passage may come from any rank (None: never)."""
    if isinstance(beta, bool) or not isinstance(beta, int) or beta < 1:
        raise ValueError(f"beta must be a positive int, got {beta!r}")
    if isinstance(lambda_, bool) or not isinstance(lambda_, (int, float)) or not 0.0 <= float(lambda_) <= 1.0:
        raise ValueError(f"lambda_ must be a number in [0, 1], got {lambda_!r}")
    if isinstance(head, bool) or not isinstance(head, int) or head < 0:
        raise ValueError(f"head must be an int >= 0, got {head!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"window must be None or an int >= 1, got {window!r}")
    concept, host = _check("concept", concept), _check("host", host)
    in_concept = {c.key for c in concept}  # a key both lists give is the concept path's piece
    held = {c.passage for c in concept}
    host_groups = _passages(host)
    first_anywhere = any_rank_from is not None and len(held) >= any_rank_from
    taken: set[str] = set()
    used = 0

    def fits(c: Candidate) -> bool:
        return c.key not in taken and used + c.n_tokens <= beta

    def host_fits(c: Candidate) -> bool:
        return c.key not in in_concept and fits(c)

    novel: list[Candidate] = []
    if lambda_ > 0 and host_trusted(concept, host, agreement_top):
        novel_tokens = 0
        for rank, (passage, pieces) in enumerate(host_groups.items()):
            if window is not None and rank >= window and (novel or not first_anywhere):
                break
            if passage in held:
                continue
            best = pieces[0]
            if not host_fits(best):
                continue
            if novel and novel_tokens + best.n_tokens > lambda_ * beta:
                break
            novel.append(best)
            taken.add(best.key)
            used += best.n_tokens
            novel_tokens += best.n_tokens
    kept: list[Candidate] = []
    for c in concept:
        if fits(c):
            kept.append(c)
            taken.add(c.key)
            used += c.n_tokens
    spill: list[Candidate] = []
    for c in host:
        if host_fits(c):
            spill.append(c)
            taken.add(c.key)
            used += c.n_tokens
    # order: the concept path's first `head` passages, the novel host passages, the rest, the spill
    seen_passages: set[str] = set()
    cut = len(kept)
    for i, c in enumerate(kept):
        if c.passage not in seen_passages and len(seen_passages) >= head:
            cut = i
            break
        seen_passages.add(c.passage)
    order = [(c, "concept") for c in kept[:cut]] + [(c, "host") for c in novel]
    order += [(c, "concept") for c in kept[cut:]] + [(c, "host") for c in spill]
    out = []
    for pos, (c, src) in enumerate(order):
        source = "both" if src == "concept" and c.passage in host_groups else src
        out.append(Placed(c.key, c.passage, c.n_tokens, 1.0 / (RANK_K + pos), source))
    return out


# ---- the comparison ----
Units = dict[str, list[Any]]
Rule = Callable[[list[Candidate], list[Candidate], int], list[str]]


def concept_of(units: Units, q: dict[str, Any], b: int) -> list[Candidate]:
    return [Candidate(u, units[u][0], units[u][1], s) for u, s, *_ in q["concept"][str(b)]]


def host_of(units: Units, q: dict[str, Any], kappa: str) -> list[Candidate]:
    """The host's pieces: each passage's units by cosine to the query (as share fusion orders them)."""
    out = []
    for r, it in enumerate(q["host"][kappa]):
        if "units" in it:
            for u, _cos in sorted(it["units"], key=lambda x: -x[1]):
                out.append(Candidate(u, units[u][0], units[u][1], it["score"]))
        else:
            key = f"text:{kappa}:{r}"
            out.append(Candidate(key, it["chunk_id"] or key, it["n_tokens"], it["score"]))
    return out


def text_of(units: Units, q: dict[str, Any], key: str) -> str:
    if key in units:
        return str(units[key][2])
    if key.startswith("text:"):
        return str(q["host_text"].get(key, ""))
    return key[1:] if key.startswith("\0") else key


def score(units: Units, q: dict[str, Any], keys: list[str]) -> tuple[int, float | None]:
    hit = int(answer_in_context(q["answers"], "\n".join(text_of(units, q, k) for k in keys)))
    gold = q["gold"]
    first = list(dict.fromkeys(units[k][0] for k in keys if k in units))[:5]
    return hit, (sum(g in first for g in gold) / len(gold) if gold else None)


def cut(items: list[Candidate], b: int) -> list[str]:
    used, out = 0, []
    for c in items:
        if used + c.n_tokens <= b:
            used += c.n_tokens
            out.append(c.key)
    return out


def host_alone(host: list[Candidate], b: int) -> list[str]:
    """Whole passages in the host's order while they fit (as ``ensemble.fuse`` with no concept path)."""
    groups: dict[str, list[Candidate]] = {}
    for c in host:
        groups.setdefault(c.passage, []).append(c)
    used, out = 0, []
    for pieces in groups.values():
        n = sum(c.n_tokens for c in pieces)
        if used + n <= b:
            used += n
            out += [c.key for c in pieces]
    return out


def ranks(concept: list[Candidate], host: list[Candidate]) -> tuple[dict[str, int], dict[str, int]]:
    rc = {p: i for i, p in enumerate(dict.fromkeys(c.passage for c in concept))}
    rh = {p: i for i, p in enumerate(dict.fromkeys(c.passage for c in host))}
    return rc, rh


def fill(order: list[Candidate], b: int) -> list[str]:
    used, out, seen = 0, [], set()
    for c in order:
        if c.key not in seen and used + c.n_tokens <= b:
            seen.add(c.key)
            used += c.n_tokens
            out.append(c.key)
    return out


def wrrf(lam: float, k: float) -> Rule:
    """Weighted reciprocal rank fusion over passage ranks, per piece: (1-lam)/(k+concept rank) + lam/(k+host rank)."""

    def rule(concept: list[Candidate], host: list[Candidate], b: int) -> list[str]:
        rc, rh = ranks(concept, host)
        in_c = {c.key for c in concept}
        pieces = concept + [c for c in host if c.key not in in_c]

        def s(c: Candidate) -> float:
            v = (1 - lam) / (k + rc[c.passage]) if c.key in in_c else 0.0
            return v + (lam / (k + rh[c.passage]) if c.passage in rh else 0.0)

        return fill(sorted(pieces, key=lambda c: -s(c)), b)

    return rule


def alternate(n: int) -> Rule:
    """The first n passages of each path alternately (concept first; a host passage as its best piece), then the
    concept path in its order, then the host's."""

    def rule(concept: list[Candidate], host: list[Candidate], b: int) -> list[str]:
        cg: dict[str, list[Candidate]] = {}
        for c in concept:
            cg.setdefault(c.passage, []).append(c)
        hg: dict[str, list[Candidate]] = {}
        for c in host:
            hg.setdefault(c.passage, []).append(c)
        cp, hp = list(cg), list(hg)
        order: list[Candidate] = []
        for i in range(n):
            if i < len(cp):
                order += cg[cp[i]]
            if i < len(hp):
                order += cg.get(hp[i], hg[hp[i]][:1])
        return fill(order + concept + host, b)

    return rule


def proportional(n: int, lam: float) -> Rule:
    """Alternation of the first n passages, then a token-proportional merge: host-only pieces (host order) while
    their tokens stay within lam of the placed tokens, else the concept path's next piece."""

    def rule(concept: list[Candidate], host: list[Candidate], b: int) -> list[str]:
        in_c = {c.key for c in concept}
        by_key = {c.key: c for c in concept + host}
        placed: list[str] = []
        used = {"c": 0, "h": 0}

        def put(c: Candidate) -> None:
            if c.key not in placed and used["c"] + used["h"] + c.n_tokens <= b:
                placed.append(c.key)
                used["c" if c.key in in_c else "h"] += c.n_tokens

        heads = alternate(n)(concept, host, b)
        cp = list(dict.fromkeys(c.passage for c in concept))[:n]
        hp = list(dict.fromkeys(c.passage for c in host))[:n]
        for key in heads:
            if by_key[key].passage in set(cp) | set(hp):
                put(by_key[key])
        cq = [c for c in concept if c.key not in placed]
        hq = [c for c in host if c.key not in in_c and c.key not in placed]
        while cq or hq:
            take_h = bool(hq) and (not cq or used["h"] * (1 - lam) <= used["c"] * lam)
            put(hq.pop(0) if take_h else cq.pop(0))
        return placed

    return rule


def first_novel(m: int) -> Rule:
    """The host's first m novel passages (best piece; no trust check, no lambda), then the concept path."""

    def rule(concept: list[Candidate], host: list[Candidate], b: int) -> list[str]:
        held = {c.passage for c in concept}
        seen: list[str] = []
        order: list[Candidate] = []
        for c in host:
            if c.passage not in held and c.passage not in seen and len(seen) < m:
                seen.append(c.passage)
                order.append(c)
        return fill(order + concept + host, b)

    return rule


def novel_first(lam: float, window: int | None = None, any_rank_from: int | None = None) -> Rule:
    def rule(concept: list[Candidate], host: list[Candidate], b: int) -> list[str]:
        return [p.key for p in novel_first_fuse(concept, host, b, lam, window=window, any_rank_from=any_rank_from)]

    return rule


def load(path: Path) -> tuple[Units, list[dict[str, Any]]]:
    d = json.loads(path.read_text(encoding="utf-8"))
    qs = d["questions"]
    for q in qs:  # host texts the graph lacks, by candidate key
        q["host_text"] = {
            f"text:{k}:{r}": it.get("text") or ""
            for k in q["host"]
            for r, it in enumerate(q["host"][k])
            if "units" not in it
        }
    return d["units"], qs


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/dual_path/results/dumps")
    data = {stem: load(root / f"{stem}.json") for stem in {s for s, _, _ in SETS} if (root / f"{stem}.json").is_file()}
    rules: list[tuple[str, Rule | None]] = [
        ("concept", None),
        ("host", None),
        ("union (oracle)", None),
        ("share@0.2 (the default before novel-first)", None),
        ("**novel-first@0.2, window 2, the first from any rank in 20+ passages (the default)**",
         novel_first(0.2, 2, ANY_RANK_FROM)),
        ("novel-first@0.2, window 2, the first from any rank in 16+ passages", novel_first(0.2, 2, 16)),
        ("novel-first@0.2, window 2, the first from any rank in 24+ passages", novel_first(0.2, 2, 24)),
        ("novel-first@0.2, window 2, the first from any rank always", novel_first(0.2, 2, 0)),
        ("novel-first@0.2, window 2 (the default before)", novel_first(0.2, 2)),
        ("novel-first@0.1, window 2", novel_first(0.1, 2)),
        ("novel-first@0.2, window 1", novel_first(0.2, 1)),
        ("novel-first@0.2, window 3", novel_first(0.2, 3)),
        ("novel-first@0.2, window 5", novel_first(0.2, 5)),
        ("novel-first@0.05, no window", novel_first(0.05, None)),
        ("novel-first@0.1, no window (aggressive)", novel_first(0.1, None)),
        ("novel-first@0.2, no window", novel_first(0.2, None)),
        ("novel-first@0.3, no window", novel_first(0.3, None)),
        ("host's first novel passage, no check", first_novel(1)),
        ("host's first 2 novel passages", first_novel(2)),
        ("weighted RRF lam 0.3 K 5", wrrf(0.3, 5.0)),
        ("weighted RRF lam 0.5 K 1", wrrf(0.5, 1.0)),
        ("weighted RRF lam 0.2 K 60", wrrf(0.2, 60.0)),
        ("alternate top-2, then concept", alternate(2)),
        ("alternate top-4, then concept", alternate(4)),
        ("alternate top-2 + proportional 0.2", proportional(2, 0.2)),
    ]
    print("# Fusion rules, offline on the same candidates (benchmarks/dual_path/fusion_rules_offline.py)\n")
    print("Candidates dumped once by fusion_dump.py (same index, hosts and budgets as fusion_compare.sh); every rule")
    print("runs on the same lists. Cells: Context Recall / supporting-passage recall@5, at beta 1k / 2k / 4k;")
    print(
        "for fused rows (+w/-l): questions the rule finds that the concept path alone misses / misses that it finds.\n"
    )
    for stem, kappa, label in SETS:
        if stem not in data:
            continue
        units, qs = data[stem]
        print(f"## {label}\n")
        print("| rule | 1k | 2k | 4k |\n|---|---|---|---|")
        hits: dict[str, dict[int, list[int]]] = {}
        for name, rule in rules:
            cells = []
            for b in BUDGETS:
                res: list[tuple[int, float | None]] = []
                for q in qs:
                    concept, host = concept_of(units, q, b), host_of(units, q, kappa)
                    if name == "concept":
                        keys = cut(concept, b)
                    elif name == "host":
                        keys = host_alone(host, b)
                    elif name.startswith("share"):
                        keys = q["share"][f"{kappa}|{b}|0.2"]
                    elif name.startswith("union"):
                        a, h = score(units, q, cut(concept, b)), score(units, q, host_alone(host, b))
                        res.append((max(a[0], h[0]), None))
                        continue
                    else:
                        assert rule is not None
                        keys = rule(concept, host, b)
                    res.append(score(units, q, keys))
                hits.setdefault(name, {})[b] = [r[0] for r in res]
                cr = sum(r[0] for r in res)
                r5 = [r[1] for r in res if r[1] is not None]
                cell = f"{cr} / {100 * sum(r5) / len(r5):.1f}" if r5 else f"{cr} / -"
                if name not in ("concept", "host") and not name.startswith("union"):  # paired: +won / -lost
                    base = hits["concept"][b]
                    won = sum(x > y for x, y in zip(hits[name][b], base, strict=True))
                    lost = sum(x < y for x, y in zip(hits[name][b], base, strict=True))
                    cell += f" (+{won}/-{lost})"
                cells.append(cell)
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
        _bounds(units, qs, kappa)
        _head_reorders(units, qs, kappa)
        _wins(units, qs, kappa)
    if "gw" in data:
        _noise(data["gw"][0], data["gw"][1])
    return 0


def _bounds(units: Units, qs: list[dict[str, Any]], kappa: str) -> None:
    r = []
    for q in qs:
        gold = q["gold"]
        if not gold:
            continue
        c = list(dict.fromkeys(x.passage for x in concept_of(units, q, 1000)))[:5]
        h = list(dict.fromkeys(x.passage for x in host_of(units, q, kappa)))[:5]
        r.append(min(5, sum(g in set(c) | set(h) for g in gold)) / len(gold))
    if r:
        print(f"recall@5 bound (gold passages among both paths' first five, any five of them): "
              f"{100 * sum(r) / len(r):.1f}\n")  # fmt: skip


HEAD_GRID = ((0.2, 5.0), (0.2, 10.0), (0.3, 3.0), (0.3, 5.0), (0.3, 10.0), (0.4, 3.0), (0.4, 5.0), (0.5, 3.0))


def _head_reorders(units: Units, qs: list[dict[str, Any]], kappa: str) -> None:
    """recall@5 when the first five passages alone are chosen by both paths' ranks (weighted reciprocal rank
    fusion over passages, host weight lam, rank constant K; context recall not considered): how much of the
    bound above a rank fusion of the head reaches."""
    cells = []
    for lam, k in HEAD_GRID:
        r = []
        for q in qs:
            if not q["gold"]:
                continue
            c = list(dict.fromkeys(x.passage for x in concept_of(units, q, 4000)))
            h = list(dict.fromkeys(x.passage for x in host_of(units, q, kappa)))
            sc: dict[str, float] = {}
            for w, ranked in ((1 - lam, c), (lam, h)):
                for i, p in enumerate(ranked):
                    sc[p] = sc.get(p, 0.0) + w / (k + i)
            first = sorted(sc, key=lambda p: -sc[p])[:5]
            r.append(sum(g in first for g in q["gold"]) / len(q["gold"]))
        if r:
            cells.append(f"{lam} / {k:g}: {100 * sum(r) / len(r):.1f}")
    if cells:
        print("recall@5 of the first five chosen by weighted RRF of both paths' passage ranks (lam / K):",
              "; ".join(cells) + "\n")  # fmt: skip


def _answer_rank(units: Units, q: dict[str, Any], items: list[Candidate]) -> int | None:
    groups: dict[str, list[Candidate]] = {}
    for c in items:
        groups.setdefault(c.passage, []).append(c)
    for i, pieces in enumerate(groups.values()):
        if answer_in_context(q["answers"], "\n".join(text_of(units, q, c.key) for c in pieces)):
            return i
    return None


def _wins(units: Units, qs: list[dict[str, Any]], kappa: str) -> None:
    """Who wins alone at 1k, with the ranks of the first answer-bearing passage in each path's list (the concept
    path's at 4k: how deep it ranks what the host finds)."""
    rows = []
    for i, q in enumerate(qs):
        concept, host = concept_of(units, q, 1000), host_of(units, q, kappa)
        c, h = score(units, q, cut(concept, 1000))[0], score(units, q, host_alone(host, 1000))[0]
        if c != h:
            rows.append((("host" if h else "concept"), i, _answer_rank(units, q, host),
                         _answer_rank(units, q, concept_of(units, q, 4000)), host_trusted(concept, host)))  # fmt: skip
    if not rows:
        return
    print("Questions one path wins alone at 1k (answer passage rank in the host list / in the concept path at 4k):\n")
    for who in ("host", "concept"):
        sel = [r for r in rows if r[0] == who]
        desc = ", ".join(f"q{r[1]} ({r[2]}/{r[3]})" for r in sel[:25]) + (", ..." if len(sel) > 25 else "")
        print(f"- {who} wins {len(sel)}: {desc}")
    print()


def _noise(units: Units, qs: list[dict[str, Any]]) -> None:
    """A random host (20 random passages per question, seeded) against the concept path (MuSiQue)."""
    passages = sorted({v[0] for v in units.values()})
    by_passage: dict[str, list[str]] = {}
    for u, v in units.items():
        by_passage.setdefault(v[0], []).append(u)
    print("## Random host (20 random passages per question), MuSiQue\n")
    print("| rule | 1k | 2k | 4k |\n|---|---|---|---|")
    for name, rule in (("concept", None), ("novel-first@0.2, window 2, any rank in 20+", novel_first(0.2, 2, 20)),
                       ("novel-first@0.2, window 2", novel_first(0.2, 2)),
                       ("novel-first@0.1, no window", novel_first(0.1, None)),
                       ("host's first novel passage, no check", first_novel(1))):  # fmt: skip
        cells = []
        for b in BUDGETS:
            cr = 0
            for i, q in enumerate(qs):
                rnd = random.Random(i)
                host = [Candidate(u, units[u][0], units[u][1]) for p in rnd.sample(passages, 20)
                        for u in sorted(by_passage[p])]  # fmt: skip
                concept = concept_of(units, q, b)
                keys = cut(concept, b) if rule is None else rule(concept, host, b)
                cr += score(units, q, keys)[0]
            cells.append(str(cr))
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


if __name__ == "__main__":
    raise SystemExit(main())
