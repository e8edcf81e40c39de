"""Names written in a query (g2cons_plugins.retrieval.entities) and their use by the concept path's seeds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.errors import InputError
from g2cons_plugins.retrieval import entities, retrieve
from g2cons_plugins.retrieval.entities import entity_bonus, name_bonus, name_matches, normalize, query_names

FILLER = (
    "The committee met in the spring to discuss the budget of the regional library network, the opening hours of "
    "its branches and the purchase of new reading tables for the children's rooms."
)


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Are Medici and Senet both board games?", ["Medici", "Senet"]),
        ("What do E. B. White and Dan Masterson have in common?", ["E. B. White", "Dan Masterson"]),
        ("The Blue Lacy, official breed of Texas, is a dog?", ["Blue Lacy", "Texas"]),
        ("Grace Krilanovich's first novel was published where?", ["Grace Krilanovich"]),
        ("Name the mother of Edward Stanley, 3rd Earl of Derby?", ["Edward Stanley", "Earl of Derby"]),
        ("Where was the mother of John Of Aragon (Patriarch) born?", ["John Of Aragon", "Patriarch"]),
        ('Which episode of "the simpsons" came first?', ["the simpsons"]),
        ("what is the capital of the country?", []),
        ("哪个城市是“长江”的终点?", ["长江"]),
    ],
)
def test_query_names(query: str, names: list[str]) -> None:
    assert query_names(query) == names


def test_normalize_reads_punctuation_as_space() -> None:
    assert normalize("E.B. White") == normalize("e. b.  WHITE") == " e b white "


def _corpus() -> list[dict[str, str]]:
    docs = [
        ("ed", "Ed Roland", "Ed Roland is an American singer and the founder of the band Collective Soul."),
        ("ed2", "Ed Roland discography", "Ed Roland recorded several albums with Collective Soul and alone."),
        ("adam", "Adam Duritz", "Adam Duritz is the lead singer of Counting Crows, a band from Berkeley."),
        ("crows", "Counting Crows", "Counting Crows is a band; its singer wrote most of the songs."),
    ]
    out = [{"id": i, "title": t, "text": x} for i, t, x in docs]
    out += [{"id": f"f{j}", "text": f"{FILLER} Singers and bands of rock music, number {j}."} for j in range(20)]
    return out


@pytest.fixture(scope="module")
def index() -> G2ConSIndex:
    return G2ConSIndex.build(_corpus(), embedder="hash", config=G2ConSConfig(unit_tokens=None))


def test_name_matches_are_phrases(index: G2ConSIndex) -> None:
    units = index.stored.units
    got = name_matches(index.snapshot, ["Ed Roland", "Soul Collective", "Counting Crows", "Nobody Here"])
    assert sorted(units[u].parent_id for u in got["Ed Roland"]) == ["ed", "ed2"]
    assert len(got["Soul Collective"]) == 0  # the words in another order are not the name
    assert sorted(units[u].parent_id for u in got["Counting Crows"]) == ["adam", "crows"]
    assert len(got["Nobody Here"]) == 0


def test_bonus_prefers_the_title_and_rare_names(index: G2ConSIndex) -> None:
    snap = index.snapshot
    per = name_bonus(snap, "Who founded Collective Soul with Ed Roland?", 1.0, head_share=0.5)
    units = index.stored.units
    ed = {units[u].parent_id: w for u, w in per["Ed Roland"].items()}
    assert ed["ed"] > ed["ed2"] > 0  # the title equal to the name over a title that starts with it
    assert entity_bonus(snap, "Who founded Collective Soul with Ed Roland?", 0.0) == {}
    total = entity_bonus(snap, "Who founded Collective Soul with Ed Roland?", 1.0)
    assert total[next(u for u in per["Ed Roland"] if units[u].parent_id == "ed")] == pytest.approx(
        sum(p.get(next(u for u in per["Ed Roland"] if units[u].parent_id == "ed"), 0.0) for p in per.values())
    )


def test_named_entities_take_the_first_two_places(index: G2ConSIndex) -> None:
    q = "What role did Ed Roland and Adam Duritz perform in their bands?"
    assert index.config.retrieval.entity_weight > 0  # on by default
    on = retrieve(index, q, beta=10_000)
    head = list(dict.fromkeys(x.parent_id for x in on))[:2]
    assert sorted(head) == ["adam", "ed"]  # one passage per named entity, not two about Ed Roland
    assert [x.reason.get("source") for x in on[:2]] == ["name", "name"]
    # only the head changes: the other units keep their order (the linked head off in both: it reorders the places
    # after the names head's, tests/retrieval/test_linked.py)
    unlinked = index.config.with_(link_weight=0.0)
    on = retrieve(G2ConSIndex(index.stored, index.embedder, unlinked, index.tokenizer), q, beta=10_000)
    off = retrieve(G2ConSIndex(index.stored, index.embedder, unlinked.with_(entity_weight=0.0), index.tokenizer),
                   q, beta=10_000)
    picked = {x.unit_id for x in on[: index.config.retrieval.n_seed_units]}
    assert [x.unit_id for x in on if x.unit_id not in picked] == [x.unit_id for x in off if x.unit_id not in picked]


def test_a_query_without_names_is_unchanged(index: G2ConSIndex) -> None:
    q = "which singer wrote most of the songs of the band?"
    assert query_names(q) == []
    off = G2ConSIndex(index.stored, index.embedder, index.config.with_(entity_weight=0.0), index.tokenizer)
    assert [x.unit_id for x in retrieve(index, q, beta=600)] == [x.unit_id for x in retrieve(off, q, beta=600)]


def test_entity_fields_are_validated() -> None:
    for bad in ({"entity_weight": -0.1}, {"entity_weight": 11.0}, {"entity_head_share": 1.5}):
        with pytest.raises(InputError, match=next(iter(bad))):
            G2ConSConfig(**bad)  # type: ignore[arg-type]
    assert G2ConSConfig(mode="paper").strategy == "paper"


_ALPHABET = "abcAB  ._-'é\n1"


@given(st.text(alphabet=_ALPHABET, min_size=1, max_size=6), st.text(alphabet=_ALPHABET, max_size=40))
@settings(max_examples=400, deadline=None)
def test_phrase_pattern_equals_the_normalised_containment(name: str, text: str) -> None:
    """The name's pattern on the raw text decides exactly what comparing the normalised strings decides (the
    phrase check runs on the raw text of every candidate, so no text is normalised per query)."""
    if not normalize(name).strip():
        return
    assert bool(entities._phrase(name).search(text)) == (normalize(name) in normalize(text))
    assert bool(entities._phrase(name, anchored=True).match(text)) == normalize(text).startswith(normalize(name))
    assert bool(entities._phrase(name, whole=True).match(text)) == (normalize(text) == normalize(name))


def test_a_common_name_is_checked_on_a_bounded_number_of_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name held by more units than NAME_CHECK_MAX: only that many are checked, the count is estimated from
    them, and below the cap every candidate is checked (the count is then exact)."""
    docs = [{"id": f"d{i:03d}", "text": f"Report {i}. The Alpine Club met in Zermatt. {FILLER}"} for i in range(40)]
    idx = G2ConSIndex.build(docs, embedder="hash")
    hits, count = entities._matches(idx.snapshot, "Alpine Club")
    assert len(hits) == 40 and count == 40
    monkeypatch.setattr(entities, "NAME_CHECK_MAX", 10)
    hits, count = entities._matches(idx.snapshot, "Alpine Club")
    assert len(hits) == 10 and count == pytest.approx(40)
    assert name_matches(idx, ["Alpine Club"])["Alpine Club"].tolist() == hits.tolist()
