"""Tests of g2cons_plugins.fusion.ensemble (Weighted Context Ensemble): budget, priority, matching, determinism."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.errors import InputError
from g2cons_plugins.fusion import FusedItem, HostItem, fuse
from g2cons_plugins.retrieval import RetrievedItem
from g2cons_plugins.text import get_tokenizer

PROPS = settings(max_examples=200, deadline=None)
WORDS = ["alice", "bob", "paris", "berlin", "acme", "river", "market", "signal", "winter", "harbor", "copper"]


class WordTokenizer:
    """A cheap tokenizer: one token per whitespace-separated word."""

    name = "words"

    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:  # pragma: no cover - never needed by fuse
        raise NotImplementedError


TOK = WordTokenizer()


# ---------------------------------------------------------------------------------------------- oracle helpers
def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def id_match(h: HostItem, c: RetrievedItem) -> bool:
    return h.chunk_id is not None and h.chunk_id in (c.unit_id, c.parent_id)


def id_target(hosts: Sequence[HostItem], c: RetrievedItem) -> HostItem | None:
    """The host item a concept unit matches by id: the one with its unit id, else the one with its parent id."""
    by_unit = next((h for h in hosts if h.chunk_id == c.unit_id), None)
    return by_unit or next((h for h in hosts if h.chunk_id == c.parent_id), None)


def text_match(h: HostItem, c: RetrievedItem) -> bool:
    if h.chunk_id is not None or not h.text:
        return False
    hn, cn = _norm(h.text), _norm(c.text)
    return hn == cn or (len(cn) >= 20 and cn in hn)


def host_tokens(h: HostItem) -> int:
    """What fuse charges a host text: its count with TOK, whatever n_tokens the host claims."""
    return len((h.text or "").split())


def _pad(text: str, n: int) -> str:
    """``text`` padded with filler words to exactly ``n`` TOK tokens."""
    k = len(text.split())
    assert k <= n
    return text + " pad" * (n - k)


def both_cost(f: FusedItem) -> int:
    assert f.host is not None and f.concept is not None
    return host_tokens(f.host) if f.host.text else f.concept.n_tokens


def total(items: Sequence[FusedItem]) -> int:
    return sum(f.n_tokens for f in items)


def charged(items: Sequence[FusedItem], lambda_: float, beta: int) -> tuple[int, int]:
    """Host and concept share used, "both" items charged as the module doc says (host share when it fits)."""
    cap_h = lambda_ * beta
    used_h = used_c = 0
    for f in items:
        if f.source == "both":
            if used_h + f.n_tokens <= cap_h and used_h + used_c + f.n_tokens <= beta:
                used_h += f.n_tokens
            else:
                used_c += f.n_tokens
    used_h += sum(f.n_tokens for f in items if f.source == "host")
    used_c += sum(f.n_tokens for f in items if f.source == "concept")
    return used_h, used_c


# ---------------------------------------------------------------------------------------------- generators
@dataclass
class Scenario:
    hosts: list[HostItem]
    concept: list[RetrievedItem]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    units: list[RetrievedItem] = []
    parents: dict[str, list[RetrievedItem]] = {}
    for p in range(draw(st.integers(0, 5))):
        k = draw(st.integers(1, 3))
        pid = f"p{p}"
        for u in range(k):
            words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
            item = RetrievedItem(
                unit_id=pid if k == 1 else f"{pid}::{u}",
                parent_id=pid,
                text=f"Unit {p}.{u} " + " ".join(words),
                score=0.0,
                n_tokens=draw(st.integers(1, 400)),
            )
            units.append(item)
            parents.setdefault(pid, []).append(item)
    perm = draw(st.permutations(units))
    concept = list(perm[: draw(st.integers(0, len(perm)))])

    hosts: list[HostItem] = []
    ids: set[str] = set()
    texts: set[str] = set()
    kinds = ["chunk", "unit", "foreign", "equal", "contains", "free"]
    for k in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(kinds))
        n_tokens = draw(st.one_of(st.none(), st.integers(1, 400)))
        cid: str | None = None
        text: str | None
        if kind == "chunk" and parents:
            cid = draw(st.sampled_from(sorted(parents)))
            text = draw(
                st.sampled_from(
                    [None, " ".join(u.text for u in parents[cid]), f"Host summary {k} of something else entirely"]
                )
            )
        elif kind == "unit" and units:
            u = draw(st.sampled_from(units))
            cid, text = u.unit_id, draw(st.sampled_from([None, u.text]))
        elif kind == "equal" and units:
            u = draw(st.sampled_from(units))
            text = draw(st.sampled_from([u.text, u.text.upper(), "  " + u.text.replace(" ", "   ") + "\n"]))
        elif kind == "contains" and units:
            u = draw(st.sampled_from(units))
            text = f"Preface of host passage {k}. {u.text} and a trailing remark."
        elif kind == "foreign":
            cid, text = f"x{k}", f"Host passage {k} about " + " ".join(draw(st.lists(st.sampled_from(WORDS))))
        else:
            text = f"Host passage {k} about " + " ".join(draw(st.lists(st.sampled_from(WORDS))))
        if cid is not None:
            if cid in ids:
                continue
            ids.add(cid)
        elif text is not None:
            if _norm(text) in texts:
                continue
            texts.add(_norm(text))
        if n_tokens is None and text is None:
            n_tokens = draw(st.one_of(st.none(), st.integers(1, 400)))
        hosts.append(HostItem(chunk_id=cid, text=text, n_tokens=n_tokens))
    return Scenario(hosts, concept)


BETAS = st.one_of(st.integers(1, 400), st.integers(1, 5000))  # tight budgets often
LAMBDAS = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0))


# ---------------------------------------------------------------------------------------------- properties
def check_invariants(sc: Scenario, beta: int, lambda_: float, spill: bool, out: list[FusedItem]) -> None:
    hosts, concept = sc.hosts, sc.concept
    host_pos = {id(h): i for i, h in enumerate(hosts)}
    concept_pos = {id(c): j for j, c in enumerate(concept)}

    # budget
    assert total(out) <= beta
    if not spill:
        used_h, used_c = charged(out, lambda_, beta)
        assert used_h <= lambda_ * beta
        assert used_c <= (1.0 - lambda_) * beta
        assert sum(f.n_tokens for f in out if f.source == "host") <= lambda_ * beta
        assert sum(f.n_tokens for f in out if f.source == "concept") <= (1.0 - lambda_) * beta

    # "both" first; each group by fused score
    sources = [f.source for f in out]
    n_both = sources.count("both")
    assert sources[:n_both] == ["both"] * n_both
    for group in (out[:n_both], out[n_both:]):
        scores = [f.score for f in group]
        assert scores == sorted(scores, reverse=True)

    # every item comes from the inputs, with the right text, tokens, ids and score
    rs_h = [1.0 - r / len(hosts) for r in range(len(hosts))]
    rs_c = [1.0 - r / len(concept) for r in range(len(concept))]
    for f in out:
        assert f.source in ("host", "concept", "both")
        if f.source != "concept":
            assert f.host is not None and id(f.host) in host_pos
        if f.source != "host":
            assert f.concept is not None and id(f.concept) in concept_pos
        if f.source == "host":
            assert f.concept is None and f.unit_id is None
            h = f.host
            assert h is not None and h.text is not None
            assert (f.text, f.n_tokens, f.chunk_id) == (h.text, host_tokens(h), h.chunk_id)
            assert f.score == pytest.approx(lambda_ * rs_h[host_pos[id(h)]])
        elif f.source == "concept":
            c = f.concept
            assert f.host is None and c is not None
            assert (f.text, f.n_tokens, f.chunk_id, f.unit_id) == (c.text, c.n_tokens, c.parent_id, c.unit_id)
            assert f.score == pytest.approx((1 - lambda_) * rs_c[concept_pos[id(c)]])
        else:
            h, c = f.host, f.concept
            assert h is not None and c is not None
            # a real match: by id, or by text only when the host has no id and no host matches by id
            assert id_match(h, c) or text_match(h, c)
            if not id_match(h, c):
                assert not any(id_match(h2, c) for h2 in hosts)
            assert f.text == (h.text or c.text)
            assert f.n_tokens == both_cost(f)
            assert f.unit_id == c.unit_id and f.chunk_id == (h.chunk_id or c.parent_id)
            hp, cp = host_pos[id(h)], concept_pos[id(c)]
            assert f.score == pytest.approx(lambda_ * rs_h[hp] + (1 - lambda_) * rs_c[cp])

    # nothing twice
    placed_hosts = [host_pos[id(f.host)] for f in out if f.host is not None]
    placed_units = [f.concept.unit_id for f in out if f.concept is not None]
    assert len(placed_hosts) == len(set(placed_hosts))
    assert len(placed_units) == len(set(placed_units))
    # a concept unit is never repeated next to the host item (with text) it matches by id (unit id first)
    for f in out:
        if f.source == "concept":
            c = f.concept
            assert c is not None
            target = id_target(hosts, c)
            assert not (target is not None and target.text and any(g.host is target for g in out))

    # greedy maximality: whatever was left out could not fit (or is covered by a placed host item)
    used_h, used_c = charged(out, lambda_, beta)
    room = beta - total(out)
    for i, h in enumerate(hosts):
        if i in placed_hosts or h.text is None or any(id_match(h, c) or text_match(h, c) for c in concept):
            continue
        n = host_tokens(h)
        assert n > room or (not spill and used_h + n > lambda_ * beta), f"host #{i} ({n} tokens) fits but was left out"
    for h in hosts:  # an overlapping host item (with text) left out fitted neither share when it was tried
        tried = h.text and any(id_target(hosts, c) is h for c in concept)
        if tried and host_pos[id(h)] not in placed_hosts:
            n = host_tokens(h)
            assert n > room or (used_h + n > lambda_ * beta and used_c + n > (1 - lambda_) * beta)
    texted = [f.host for f in out if f.host is not None and f.host.text]
    for c in concept:
        if c.unit_id in placed_units or any(id_match(h, c) or text_match(h, c) for h in texted):
            continue
        n = c.n_tokens
        assert n > room or (not spill and used_c + n > (1 - lambda_) * beta), f"unit {c.unit_id} fits but left out"


@PROPS
@given(scenarios(), BETAS, LAMBDAS, st.booleans())
def test_fuse_invariants(sc: Scenario, beta: int, lambda_: float, spill: bool) -> None:
    out = fuse(sc.hosts, sc.concept, beta=beta, lambda_=lambda_, tokenizer=TOK, spill=spill)
    check_invariants(sc, beta, lambda_, spill, out)


@PROPS
@given(scenarios(), BETAS, LAMBDAS, st.booleans())
def test_fuse_is_deterministic(sc: Scenario, beta: int, lambda_: float, spill: bool) -> None:
    a = fuse(sc.hosts, sc.concept, beta=beta, lambda_=lambda_, tokenizer=TOK, spill=spill)
    b = fuse(list(sc.hosts), list(sc.concept), beta=beta, lambda_=lambda_, tokenizer=TOK, spill=spill)
    assert a == b


@PROPS
@given(scenarios(), BETAS, LAMBDAS)
def test_spill_never_gives_less(sc: Scenario, beta: int, lambda_: float) -> None:
    hard = fuse(sc.hosts, sc.concept, beta=beta, lambda_=lambda_, tokenizer=TOK, spill=False)
    soft = fuse(sc.hosts, sc.concept, beta=beta, lambda_=lambda_, tokenizer=TOK, spill=True)
    assert total(soft) >= total(hard)
    # spilling only adds: everything of the hard-capped context is still there
    key = [(f.source, f.chunk_id, f.unit_id, f.text) for f in hard]
    assert set(key) <= {(f.source, f.chunk_id, f.unit_id, f.text) for f in soft}


@PROPS
@given(scenarios(), BETAS)
def test_lambda_extremes_without_spill(sc: Scenario, beta: int) -> None:
    only_host = fuse(sc.hosts, sc.concept, beta=beta, lambda_=1.0, tokenizer=TOK, spill=False)
    assert not [f for f in only_host if f.source == "concept"]
    only_concept = fuse(sc.hosts, sc.concept, beta=beta, lambda_=0.0, tokenizer=TOK, spill=False)
    assert not [f for f in only_concept if f.source == "host"]


@PROPS
@given(scenarios(), BETAS, LAMBDAS, st.booleans())
def test_a_fitting_overlap_is_always_taken(sc: Scenario, beta: int, lambda_: float, spill: bool) -> None:
    """If some id-matched host item with text fits one empty share, the context has at least one "both" item."""
    out = fuse(sc.hosts, sc.concept, beta=beta, lambda_=lambda_, tokenizer=TOK, spill=spill)
    cap = max(lambda_, 1 - lambda_) * beta
    fitting = [
        h for h in sc.hosts if h.text and host_tokens(h) <= cap and any(id_target(sc.hosts, c) is h for c in sc.concept)
    ]
    if fitting:
        assert out and out[0].source == "both"


# ---------------------------------------------------------------------------------------------- examples
def _unit(uid: str, parent: str, text: str, n: int) -> RetrievedItem:
    return RetrievedItem(uid, parent, text, 0.5, n)


def test_overlap_beats_many_higher_ranked_items() -> None:
    hosts = [HostItem(chunk_id=f"h{k}", text=_pad(f"host passage number {k}", 10), n_tokens=10) for k in range(20)]
    hosts.append(HostItem(chunk_id="doc7", text=_pad("The whole of document seven, about Alice in Paris.", 10)))
    concept = [_unit(f"c{k}::0", f"c{k}", f"concept unit number {k}", 10) for k in range(20)]
    concept.append(_unit("doc7::1", "doc7", "Alice in Paris.", 4))
    out = fuse(hosts, concept, beta=30, lambda_=0.5, tokenizer=TOK, spill=False)
    assert out[0].source == "both"
    assert (out[0].chunk_id, out[0].unit_id) == ("doc7", "doc7::1")
    assert out[0].text == hosts[-1].text and out[0].n_tokens == 10
    assert total(out) <= 30
    # host share 15: the pair takes 10, no other 10-token host item fits; concept share 15: one unit fits
    assert [(f.source, f.unit_id) for f in out] == [("both", "doc7::1"), ("concept", "c0::0")]


def test_an_overlap_that_does_not_fit_is_skipped_not_the_end() -> None:
    hosts = [
        HostItem(chunk_id="p0", text="big " * 100, n_tokens=100),
        HostItem(chunk_id="p1", text="small", n_tokens=5),
    ]
    concept = [_unit("p0::0", "p0", "a unit of p0", 4), _unit("p1", "p1", "small", 5)]
    out = fuse(hosts, concept, beta=20, lambda_=0.5, tokenizer=TOK, spill=False)
    assert [(f.source, f.unit_id) for f in out] == [("both", "p1"), ("concept", "p0::0")]


def test_id_beats_text() -> None:
    c = _unit("p1::0", "p1", "Alice Moreau opened the Acme office in Lisbon in 2019.", 12)
    same_text_no_id = HostItem(text=c.text, n_tokens=12)
    by_id = HostItem(chunk_id="p1", text="An unrelated host chunk text.", n_tokens=6)
    out = fuse([same_text_no_id, by_id], [c], beta=1000, lambda_=0.5, tokenizer=TOK, spill=False)
    both = [f for f in out if f.source == "both"]
    assert len(both) == 1 and both[0].host is by_id and both[0].text == by_id.text
    assert [f.host for f in out if f.source == "host"] == [same_text_no_id]


def test_text_fallback_only_without_host_id() -> None:
    c = _unit("p2::3", "p2", "Bob Tanaka moved from Berlin to Paris last winter.", 11)
    containing = HostItem(
        text="Chapter two.\n  BOB TANAKA moved from Berlin  to Paris last winter. The end.", n_tokens=15
    )
    out = fuse([containing], [c], beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
    assert [(f.source, f.chunk_id, f.unit_id) for f in out] == [("both", "p2", "p2::3")]
    equal = HostItem(text="bob tanaka moved from berlin to paris last winter.", n_tokens=11)
    assert [f.source for f in fuse([equal], [c], beta=100, tokenizer=TOK, spill=False)] == ["both"]
    # a host item with an id that is not ours is never matched by its text
    other_id = HostItem(chunk_id="elsewhere", text=c.text, n_tokens=11)
    out = fuse([other_id], [c], beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
    assert sorted(f.source for f in out) == ["concept", "host"]


def test_id_only_host_is_charged_the_text_it_contributes() -> None:
    """An id-only host item gives no text: a "both" item carries the unit's text and is charged its tokens."""
    a = _unit("d::0", "d", "alpha beta gamma delta " * 10, 40)
    b = _unit("d::1", "d", "epsilon zeta " * 10, 20)
    out = fuse([HostItem(chunk_id="d")], [a, b], beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
    assert total(out) <= 100
    assert [(f.source, f.unit_id, f.n_tokens) for f in out] == [("both", "d::0", 40), ("concept", "d::1", 20)]
    assert out[0].text == a.text
    tight = fuse([HostItem(chunk_id="d")], [a, b], beta=50, lambda_=0.5, tokenizer=TOK, spill=False)
    assert total(tight) <= 50 and [f.unit_id for f in tight] == ["d::1"]


def test_unit_of_too_big_host_chunk_stays_on_concept_path() -> None:
    c = _unit("d::0", "d", "A short unit about Acme and Globex in Berlin.", 10)
    big_host = HostItem(chunk_id="d", text="x " * 200, n_tokens=200)
    out = fuse([big_host], [c], beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
    assert [(f.source, f.unit_id) for f in out] == [("concept", "d::0")]


def test_second_subchunk_of_a_placed_host_chunk_is_not_repeated() -> None:
    host = HostItem(chunk_id="d", text="First part. Second part.", n_tokens=6)
    a, b = _unit("d::0", "d", "First part.", 3), _unit("d::1", "d", "Second part.", 3)
    out = fuse([host], [a, b], beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
    assert [(f.source, f.unit_id) for f in out] == [("both", "d::0")]


@pytest.mark.parametrize("beta", [0, -1, -5000])
def test_bad_beta(beta: int) -> None:
    with pytest.raises(InputError, match="beta"):
        fuse([], [], beta=beta)


@pytest.mark.parametrize("lambda_", [-0.01, 1.01, 2.0, float("nan")])
def test_bad_lambda(lambda_: float) -> None:
    with pytest.raises(InputError, match="lambda"):
        fuse([], [], beta=10, lambda_=lambda_)


@pytest.mark.parametrize("bad", [HostItem(), HostItem(text="   "), {"score": 1.0}, {"text": ""}, "", "  \n"])
def test_host_item_without_id_or_text(bad: object) -> None:
    with pytest.raises(InputError, match="#1"):
        fuse([HostItem(text="fine"), bad], [], beta=10)


def test_host_item_of_wrong_type() -> None:
    with pytest.raises(InputError, match="#0"):
        fuse([42], [], beta=10)


def test_hosts_as_dicts_and_strings() -> None:
    c = _unit("p1::0", "p1", "Alice met Bob in Paris.", 6)
    hosts = [
        {"id": "p1", "text": "Alice met Bob in Paris. Then they left.", "n_tokens": 8, "score": 3.0},
        {"chunk_id": 7, "text": "Numeric ids are made strings.", "n_tokens": 5, "metadata": {"src": "kg"}},
        "A plain string host result.",
    ]
    out = fuse(hosts, [c], beta=100, lambda_=0.7, tokenizer=TOK, spill=False)
    assert [(f.source, f.chunk_id) for f in out] == [("both", "p1"), ("host", "7"), ("host", None)]
    assert out[0].host is not None and out[0].host.score == 3.0 and out[0].n_tokens == 8
    assert out[1].host is not None and out[1].host.metadata == {"src": "kg"}
    assert out[2].text == "A plain string host result." and out[2].n_tokens == 5  # counted by TOK


def test_missing_host_token_counts_use_the_tokenizer() -> None:
    tok = get_tokenizer()
    texts = [
        "Alice Moreau founded Acme Corp in Lisbon.",
        "Globex acquired Initech for 3.2 billion dollars in 2021, said Bob Tanaka.",
        "Paris, Berlin and Lisbon are capitals.",
    ]
    counts = [len(tok.encode(t)) for t in texts]
    out = fuse(texts, [], beta=10_000, lambda_=1.0)
    assert [(f.text, f.n_tokens) for f in out] == list(zip(texts, counts, strict=True))
    # the real counts decide what fits: one token short of all three, the last one is left out
    out = fuse([HostItem(text=t) for t in texts], [], beta=sum(counts) - 1, lambda_=1.0)
    assert [f.text for f in out] == texts[:2]
    out = fuse([HostItem(text=t) for t in texts], [], beta=sum(counts), lambda_=1.0)
    assert [f.text for f in out] == texts
    # a host's count is never trusted: the text is recounted, so the budget holds whatever it claims
    for claim in (3, -500, 10**6):
        out = fuse([HostItem(text=texts[0], n_tokens=claim)], [], beta=100, lambda_=1.0)
        assert out[0].n_tokens == counts[0]
    out = fuse([HostItem(text=t, n_tokens=-1000) for t in texts], [], beta=counts[0], lambda_=1.0)
    assert [f.text for f in out] == texts[:1]


def test_spill_fills_up_to_beta_and_no_further() -> None:
    hosts = [HostItem(chunk_id="h0", text=_pad("host zero", 30))]
    for n1, spilled in ((38, True), (41, False)):  # 30 + 30 + 2 = 62 used; 38 more fill beta exactly, 41 overflow
        concept = [_unit("c0", "c0", "unit zero", 30), _unit("c1", "c1", "unit one", n1), _unit("c2", "c2", "two", 2)]
        hard = fuse(hosts, concept, beta=100, lambda_=0.5, tokenizer=TOK, spill=False)
        assert [(f.source, f.chunk_id) for f in hard] == [("host", "h0"), ("concept", "c0"), ("concept", "c2")]
        soft = fuse(hosts, concept, beta=100, lambda_=0.5, tokenizer=TOK, spill=True)
        assert total(soft) == (100 if spilled else 62)
        assert sorted(f.chunk_id or "" for f in soft) == (["c0", "c1", "c2", "h0"] if spilled else ["c0", "c2", "h0"])


def test_spill_never_repeats_a_unit_inside_a_too_big_host_chunk() -> None:
    host = HostItem(chunk_id="d", text="Acme and Globex in Berlin. " + "filler " * 60, n_tokens=70)
    c = _unit("d::0", "d", "Acme and Globex in Berlin.", 10)
    for spill in (False, True):
        out = fuse([host], [c], beta=100, lambda_=0.5, tokenizer=TOK, spill=spill)
        assert total(out) <= 100
        # either the pair as one "both" item, or the unit alone; never the host chunk next to its own unit
        assert [f.source for f in out] in (["both"], ["concept"])


def test_a_chunk_the_host_repeats_is_placed_once() -> None:
    """Two sub-retrievers returning one chunk (different fact lines in front): one item, at its best rank."""
    a = HostItem(chunk_id="h1", text=_pad("facts A\nthe chunk text", 10))
    a2 = HostItem(chunk_id="h1", text=_pad("facts B\nthe chunk text", 10))
    b = HostItem(chunk_id="h2", text=_pad("other chunk", 10))
    out = fuse([a, b, a2], [], beta=100, lambda_=1.0, tokenizer=TOK)
    assert [(f.chunk_id, f.text) for f in out] == [("h1", a.text), ("h2", b.text)]
    assert sum(f.n_tokens for f in out) == 20


def test_defaults_are_the_library_fusion_not_the_papers() -> None:
    """fuse() defaults: lambda 0.4 with spill (G2ConSConfig); a path's unused share goes to the other path."""
    hosts = [HostItem(chunk_id=f"h{i}", text=_pad(f"host {i}", 10)) for i in range(10)]
    concept = [RetrievedItem(f"c{i}", f"c{i}", f"unit {i}", 0.0, 10, {}) for i in range(2)]
    default = fuse(hosts, concept, beta=100, tokenizer=TOK)
    paper = fuse(hosts, concept, beta=100, lambda_=0.6, tokenizer=TOK, spill=False)
    assert sum(f.n_tokens for f in paper if f.source == "host") == 60  # hard cap: 0.6 x 100
    assert sum(f.n_tokens for f in default) == 100  # concept used 20, the host took the rest
    assert sum(f.n_tokens for f in default if f.source == "host") == 80
