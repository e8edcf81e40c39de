"""The linked head (g2cons_plugins.retrieval.linked): the concept path's first passages chained by shared names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.concepts import incidence, text_terms
from g2cons_plugins.config import RetrievalOptions
from g2cons_plugins.retrieval import retrieve
from g2cons_plugins.retrieval.linked import (
    MIN_SHARED,
    before_linked,
    link_order,
    linked_head,
    passage_names,
    position_before,
)

QUESTION = "Who founded the company that built the Vexalon Bridge?"
FILLER = (
    "The company built a bridge and the company founded a school; the bridge company built roads and the founders of "
    "the company built another bridge over the river, said the company that built it."
)


def _corpus() -> list[dict[str, str]]:
    docs = [
        ("bridge", "The Vexalon Bridge was built by Korrimax Industries over the Pellin River in 1931."),
        ("founder", "Korrimax Industries of Pellin was founded by Helga Brandt, an engineer from Tallinn, in 1921."),
        ("other", "Helga Brandt later taught engineering in Tallinn and wrote two books on steel."),
    ]
    out = [{"id": i, "text": t} for i, t in docs]
    out += [{"id": f"f{j}", "text": f"{FILLER} Item {j} of the register."} for j in range(7)]
    return out


def _index(**retrieval: object) -> G2ConSIndex:
    config = G2ConSConfig(unit_tokens=None, retrieval=RetrievalOptions(**retrieval))  # type: ignore[arg-type]
    return G2ConSIndex.build(_corpus(), embedder="hash", config=config)


def _passages(items: list) -> list[str]:
    return list(dict.fromkeys(it.parent_id for it in items))


@pytest.fixture(scope="module")
def linked() -> G2ConSIndex:
    return _index()


@pytest.fixture(scope="module")
def unlinked() -> G2ConSIndex:
    return _index(link_weight=0.0)


def test_the_chain_of_names_comes_up(linked: G2ConSIndex, unlinked: G2ConSIndex) -> None:
    before = _passages(retrieve(unlinked, QUESTION, beta=4000))
    after = _passages(retrieve(linked, QUESTION, beta=4000))
    assert before[0] == "bridge"
    assert before.index("founder") >= 5 and before.index("other") >= 5  # the fillers' words resemble the question
    # "founder" shares "Korrimax", "Industries" and "Pellin" with the first passage: 1/13 + 0.2 x 3/8 = 0.152 beats
    # the third filler's 1/7 = 0.143, not the first's 1/6; "other" shares "Helga", "Brandt" and "Tallinn" with
    # "founder" only: it is reached through the names the passage chosen before it brought
    assert after[:4] == ["bridge", before[1], "founder", "other"]
    assert after[4:] == [p for p in before if p not in after[:4]]


def test_only_the_order_changes(linked: G2ConSIndex, unlinked: G2ConSIndex) -> None:
    for beta in (300, 1000, 4000):
        a = retrieve(unlinked, QUESTION, beta=beta)
        b = retrieve(linked, QUESTION, beta=beta)
        key = [(i.unit_id, i.score, i.n_tokens) for i in a]
        assert sorted(key) == sorted((i.unit_id, i.score, i.n_tokens) for i in b)
        assert before_linked(b) == a  # the order (and the reasons) before the linked head, for the other fusions
        ids = [i.unit_id for i in a]
        for j, it in enumerate(b):  # each unit whose place changed says where it was
            assert position_before(it, j) == ids.index(it.unit_id)
            assert ("position_before" in it.reason) == (ids.index(it.unit_id) != j)


def test_the_question_s_own_names_do_not_link(linked: G2ConSIndex) -> None:
    snap = linked.snapshot
    vocab = snap.derived.vocab
    at = snap.chunk_pos["bridge"]
    with_q, without_q = passage_names(snap, [at], QUESTION)[0], passage_names(snap, [at], "")[0]
    dropped = {vocab[c] for c in without_q - with_q}
    assert dropped and all("vexalon" in w or "bridge" in w for w in dropped)
    assert any("korrimax" in vocab[c] for c in with_q)
    assert passage_names(snap, [-1, at], QUESTION) == [set(), with_q]  # -1: no chunk


@pytest.mark.parametrize(
    "text", [QUESTION, "korrimax industries of PELLIN, and Helga Brandt's Tallinn", "", "the the and of", FILLER]
)
def test_text_terms_match_what_incidence_matches(linked: G2ConSIndex, text: str) -> None:
    snap = linked.snapshot
    vocab = snap.derived.vocab
    terms = text_terms(text, snap.config)
    assert {i for i, v in enumerate(vocab) if v in terms} == set(incidence([text], vocab, snap.config).indices.tolist())


def test_link_order_by_hand() -> None:
    names = [{1, 2}, {9}, {8}, {7}, {6}, {5}, {1, 2, 3}, {3, 4}, {1}]
    # rank 6 shares two names with the first passage: 1/11 + 0.2 x 2/(2+3) = 0.171 > 1/6 = 0.167 (rank 1); ranks 7
    # and 8 share one name each with what is chosen: no link, their rank order
    assert link_order(names, 5, 0.2) == [0, 6, 1, 2, 3, 4, 5, 7, 8]
    # a weaker link: 1/11 + 0.1 x 2/5 = 0.131 < 1/7 = 0.143 (rank 2) but > 1/8 = 0.125 (rank 3)
    assert link_order(names, 5, 0.1) == [0, 1, 2, 6, 3, 4, 5, 7, 8]
    assert link_order(names, 3, 0.1) == [0, 1, 2, 3, 4, 5, 6, 7, 8]  # past the head, the rank order
    assert link_order(names, 5, 0.0) == list(range(9))
    assert link_order(names, 1, 5.0) == list(range(9))
    assert link_order([{1}, {9}, {1}], 3, 5.0) == [0, 1, 2]  # one shared name is no link
    assert link_order([], 5, 0.2) == []


def test_a_chosen_passage_brings_its_names() -> None:
    names = [{1, 2}, {9}, {8}, {7}, {6}, {5}, {1, 2, 3, 4}, {3, 4, 5}]
    # rank 7 shares nothing with the first passage, but 3 and 4 with rank 6 once rank 6 is chosen:
    # 1/11 + 0.5 x 2/6 = 0.258, then 1/12 + 0.5 x 2/5 = 0.283, both above rank 1's 0.167
    assert link_order(names, 5, 0.5) == [0, 6, 7, 1, 2, 3, 4, 5]
    assert MIN_SHARED == 2


def test_the_names_head_s_places_stay() -> None:
    names = [{1, 2}, {3, 4}, {9}, {8}, {7}, {6}, {1, 2, 5}]
    # rank 6 links to the first passage (1/11 + 0.5 x 2/5 = 0.291 > 1/6): second place, unless the names head placed
    # the first two (fixed=2), which stay
    assert link_order(names, 5, 0.5, fixed=1)[:3] == [0, 6, 1]
    assert link_order(names, 5, 0.5, fixed=2) == [0, 1, 6, 2, 3, 4, 5]
    assert link_order(names, 2, 0.5, fixed=3) == list(range(7))  # nothing left to choose
    assert link_order(names, 5, 0.5, fixed=0) == link_order(names, 5, 0.5)  # the first always stays


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 6), max_size=4), max_size=12),
    st.integers(0, 12),
    st.floats(0.0, 3.0, allow_nan=False),
)
def test_link_order_is_a_permutation_led_by_the_first(names: list[set[int]], n_head: int, weight: float) -> None:
    order = link_order(names, n_head, weight)
    assert sorted(order) == list(range(len(names)))
    if names:
        assert order[0] == 0
    tail = order[max(n_head, 1) :]
    assert tail == sorted(tail)  # past the head, the rank order


@pytest.mark.parametrize(
    ("field", "value"), [("link_head", -1), ("link_head", 101), ("link_pool", 0), ("link_weight", -0.1)]
)
def test_bad_options_are_named(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        RetrievalOptions(**{field: value})  # type: ignore[arg-type]


def test_positions_given_or_looked_up_give_the_same_order(linked: G2ConSIndex, unlinked: G2ConSIndex) -> None:
    snap = linked.snapshot
    items = retrieve(unlinked, QUESTION, beta=4000)  # the bridge's order before the linked head
    positions = [snap.unit_pos[it.unit_id] for it in items]
    assert linked_head(snap, QUESTION, items, positions) == linked_head(snap, QUESTION, items)
    assert [it.unit_id for it in linked_head(snap, QUESTION, items)] == [
        it.unit_id for it in retrieve(linked, QUESTION, beta=4000)
    ]
