"""The graph walk over a host KG (HippoRAG 2's): a multi-hop answer reached only through an entity bridge or a
synonym edge, its PageRank against the closed form, seed weights, the host over a selection's kept chunks, the
registry and ``g2cons fuse --host graph-walk:PATH``, and bad input."""

from __future__ import annotations

import json
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import GraphRecord, GraphWalk, GraphWalkHost, GraphWalkSettings, HostKG, load_host

DIM = 1024
_VOCAB: dict[str, int] = {}


def bow(texts: Sequence[str]) -> np.ndarray:
    """A deterministic bag-of-words embedding: each word of 3+ letters its own axis (no collisions)."""
    out = np.zeros((len(texts), DIM), np.float32)
    for i, t in enumerate(texts):
        for w in re.findall(r"[a-z0-9]{3,}", t.lower()):
            out[i, _VOCAB.setdefault(w, len(_VOCAB))] += 1.0
    return out


def query(q: str) -> np.ndarray:
    return bow([q])[0]


QUESTION = "Which country has the capital where Alice Smith was born?"


def records(answer_entity: str = "Springfield") -> list[GraphRecord]:
    """The answer passage shares no word with the question: only the entity it shares with the passage the question
    names (or a synonym of it) leads there."""
    return [
        GraphRecord(
            "alice", "Alice Smith was born in Springfield in 1950.", [("Alice Smith", "born in", "Springfield")]
        ),
        GraphRecord("answer", "Springfield governs Freedonia.", [(answer_entity, "governs", "Freedonia")]),
        GraphRecord("d1", "Alice Cooper is a country singer with a capital idea.", [("Cooper", "sings", "rock songs")]),
        GraphRecord("d2", "The capital where Bob Smith lived is Strelsau.", [("Bob Smith", "lived in", "Strelsau")]),
        GraphRecord(
            "d3",
            "Which country has the most rivers? Brazil, whose capital is Brasilia.",
            [("Brazil", "has", "most rivers")],
        ),
        GraphRecord(
            "d4",
            "Carol was born in Paris, the capital.",
            [("Carol", "lives in", "Paris"), ("Carol", "born in", "Lyon")],
        ),
        GraphRecord("d5", "The Smith family owns a farm in the country.", [("Smith family", "owns", "farm")]),
        GraphRecord("d6", "Freedonia borders Sylvania.", [("Freedonia", "borders", "Sylvania")]),
    ]


def test_multi_hop_answer_is_reached_through_the_entity_bridge_not_by_dense_similarity() -> None:
    walk = GraphWalk.from_records(records(), bow, query_fn=query)
    dense = walk.dense_scores(query(QUESTION))
    ids = walk.chunk_ids
    assert dense[ids.index("answer")] == 0.0 and sorted(dense)[-2] > 0  # dense alone ranks the answer last
    got = dict(walk.retrieve(QUESTION, top_k=8))
    order = list(got)
    assert order[0] == "alice" and order.index("answer") < 4  # above chunks that share words with the question
    # from the best fact alone the walk goes alice smith -> springfield -> the answer
    focused = GraphWalk.from_records(records(), bow, query_fn=query, top_facts=1)
    assert [c for c, _ in focused.retrieve(QUESTION, top_k=2)] == ["alice", "answer"]
    # without the bridge (another entity name, no synonym) the walk cannot get there
    broken = dict(GraphWalk.from_records(records("Shelbyville"), bow, query_fn=query).retrieve(QUESTION, top_k=8))
    assert got["answer"] > 0 and broken["answer"] == 0.0 and list(broken).index("answer") >= 6


def test_link_texts_lets_the_walk_reach_a_chunk_without_triples_through_the_names_it_holds() -> None:
    # the answer chunk was not extracted (no triple): only its text says it is about Springfield
    recs = [r if r.chunk_id != "answer" else GraphRecord("answer", r.text) for r in records()]
    recs.append(GraphRecord("near", "Springfields and Springfieldia towns.", []))  # the name, not as a whole word
    recs.append(GraphRecord("short", "Al in 1950.", []))  # names of 2 letters or digits are not looked for
    recs[0] = GraphRecord("alice", recs[0].text, [*recs[0].triples, ("Alice Smith", "nicknamed", "Al")])
    plain = GraphWalk.from_records(recs, bow, query_fn=query)
    linked = GraphWalk.from_records(recs, bow, query_fn=query, link_texts=True)
    assert plain.entities == linked.entities  # no new node: chunks link to the graph's own entities
    assert linked._adjacency.nnz - plain._adjacency.nnz == 2 * 2  # answer-springfield, answer-freedonia (both ways)
    before, after = dict(plain.retrieve(QUESTION, top_k=20)), dict(linked.retrieve(QUESTION, top_k=20))
    assert before["answer"] == 0.0 and after["answer"] > 0.0
    assert list(after).index("answer") < 4  # alice -> springfield -> the answer, as with its triple
    assert after["near"] == before["near"] and after["short"] == before["short"]
    n = linked.entities.index("springfield")
    assert linked._ent_chunks[n] == plain._ent_chunks[n] + 1  # the seed weight counts the linked chunk


def test_automatic_link_texts_links_once_a_third_of_the_chunks_hold_triples() -> None:
    from g2cons_plugins.hosts import app_settings, links_pay

    dropped = GraphRecord("answer", "Springfield governs Freedonia.")  # not extracted: no triple
    recs = [r for r in records() if r.chunk_id != "answer"] + [dropped]  # 7 of 8 chunks hold triples
    auto = GraphWalk.from_records(recs, bow, query_fn=query, link_texts=None)
    on = GraphWalk.from_records(recs, bow, query_fn=query, link_texts=True)
    off = GraphWalk.from_records(recs, bow, query_fn=query)  # GraphWalkSettings' default: HippoRAG 2's graph
    assert auto.linked and on.linked and not off.linked and (auto._adjacency != on._adjacency).nnz == 0
    assert dict(auto.retrieve(QUESTION, top_k=20))["answer"] > 0.0 == dict(off.retrieve(QUESTION, top_k=20))["answer"]
    # 7 chunks with triples among 22: under a third, so the automatic rule leaves the graph as HippoRAG 2's
    filler = [GraphRecord(f"f{i}", f"Springfield note {i}.") for i in range(14)]
    few = GraphWalk.from_records(recs + filler, bow, query_fn=query, link_texts=None)
    assert not few.linked and (few._adjacency != GraphWalk.from_records(recs + filler, bow)._adjacency).nnz == 0
    assert links_pay(1, 3) and not links_pay(1, 4) and not links_pay(0, 0)
    # the apps' settings: HippoRAG 2's with the links automatic; a given settings object stays the caller's
    assert app_settings() == GraphWalkSettings(link_texts=None)
    assert app_settings(GraphWalkSettings(), damping=0.3) == GraphWalkSettings(damping=0.3)
    with pytest.raises(InputError, match="unknown graph walk settings"):
        app_settings(dampin=0.3)
    with pytest.raises(InputError, match="settings must be a GraphWalkSettings"):
        app_settings({"damping": 0.3})  # type: ignore[arg-type]


def test_a_synonym_edge_is_a_bridge_above_its_threshold_only() -> None:
    recs = records("Springfield Town")  # cosine 0.71 to "springfield" with the bag of words
    near = GraphWalk.from_records(recs, bow, query_fn=query, synonym_threshold=0.7)
    far = GraphWalk.from_records(recs, bow, query_fn=query, synonym_threshold=0.8)
    assert near.stats()["synonym_edges"] == 2 and far.stats()["synonym_edges"] == 0
    got, gone = dict(near.retrieve(QUESTION, top_k=8)), dict(far.retrieve(QUESTION, top_k=8))
    assert got["answer"] > got["d1"] > 0  # two hops away, above a chunk that shares words with the question
    assert gone["answer"] == 0.0


def test_synonym_search_in_small_blocks_finds_the_same_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    from g2cons_plugins.hosts import graph_walk

    recs = [*records("Springfield Town"), GraphRecord("x", None, [("Freedonia Republic", "is", "Springfield")])]
    whole = GraphWalk.from_records(recs, bow, synonym_threshold=0.7)
    monkeypatch.setattr(graph_walk, "_KNN_CELLS", 5)  # one entity row per block
    small = GraphWalk.from_records(recs, bow, synonym_threshold=0.7)
    assert whole.stats()["synonym_edges"] == small.stats()["synonym_edges"] >= 4
    assert (whole._adjacency != small._adjacency).nnz == 0


def test_seed_weights_are_fact_scores_over_the_entity_chunk_count() -> None:
    walk = GraphWalk.from_records(records(), bow, query_fn=query, top_facts=1, top_entities=5)
    seeds = walk.seeds(query(QUESTION))
    # the one top fact (score 1 after min-max) gives alice smith (1 chunk) 1 and springfield (2 chunks) 1/2
    assert seeds == pytest.approx({"alice smith": 1.0, "springfield": 0.5})
    assert GraphWalk.from_records(records(), bow, query_fn=query, top_facts=1, top_entities=1).seeds(
        query(QUESTION)
    ) == pytest.approx({"alice smith": 1.0})


def _closed_form(walk: GraphWalk, reset: np.ndarray) -> np.ndarray:
    m = walk._transition.toarray()
    n, d = len(reset), walk.settings.damping
    r = reset / reset.sum()
    dang = walk._dangling.astype(float)
    a = np.eye(n) - d * m - d * np.outer(r, dang)
    return np.linalg.solve(a, (1 - d) * r)


def test_pagerank_is_the_fixed_point_with_restarts_from_isolated_nodes() -> None:
    recs = [*records(), GraphRecord("lonely", "Nothing was extracted here.", [])]
    walk = GraphWalk.from_records(recs, bow, query_fn=query)
    assert walk._dangling.sum() == 1  # the chunk with no triple
    rng = np.random.default_rng(0)
    reset = rng.random(len(walk.entities) + len(walk.chunk_ids))
    p = walk._pagerank(reset)
    assert p.sum() == pytest.approx(1.0) and np.allclose(p, _closed_form(walk, reset), atol=1e-9)
    igraph = pytest.importorskip("igraph")  # HippoRAG 2's solver (PRPACK) reaches the same fixed point
    g = igraph.Graph.Weighted_Adjacency(walk._adjacency.toarray().tolist(), mode="undirected")
    ref = np.array(g.personalized_pagerank(damping=0.5, directed=False, weights="weight", reset=reset.tolist()))
    assert np.allclose(p, ref, atol=1e-8)


def test_no_fact_reached_falls_back_to_dense_and_results_are_ranked() -> None:
    walk = GraphWalk.from_records([GraphRecord("a", "apples and pears"), GraphRecord("b", "ripe apples")], bow)
    got = walk.retrieve_vector(query("apples"), top_k=5)
    assert [c for c, _ in got] == ["b", "a"] and got[0][1] >= got[1][1]  # "ripe apples" is nearer
    assert walk.stats()["facts"] == 0


def test_records_of_one_chunk_merge_and_mappings_are_accepted() -> None:
    walk = GraphWalk.from_records(
        [
            {"id": "x", "text": "Ada Lovelace wrote notes.", "triples": [["Ada Lovelace", "wrote", "notes"]]},
            {"chunk_id": "x", "triples": [["Ada Lovelace", "worked with", "Charles Babbage"]]},
            GraphRecord("y", "Charles Babbage built engines.", [("Charles Babbage", "built", "engines")]),
        ],
        bow,
        query_fn=query,
    )
    assert walk.chunk_ids == ["x", "y"] and walk.stats()["facts"] == 3
    assert walk.retrieve("What did Ada Lovelace write?", top_k=1)[0][0] == "x"


@pytest.mark.parametrize(
    ("recs", "match"),
    [
        ([], "records is empty"),
        ([{"text": "no id"}], "chunk_id must be a non-empty string"),
        ([{"id": "a", "triples": [["only", "two"]]}], r"chunk 'a'.*3 strings"),
        ([{"id": "a", "triples": "s r o"}], "not strings"),
        ([{"id": "a", "entities": [1]}], "entity names must be strings"),
        ([{"id": "a", "text": 3}], "text must be a string"),
        ("abc", "iterable of GraphRecord"),
    ],
)
def test_bad_records_are_named(recs: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        GraphWalk.from_records(recs, bow)  # type: ignore[arg-type]


def test_bad_settings_embedders_and_queries_are_named() -> None:
    with pytest.raises(InputError, match="damping"):
        GraphWalkSettings(damping=1.0)
    with pytest.raises(InputError, match="top_facts"):
        GraphWalk.from_records(records(), bow, top_facts=0)
    with pytest.raises(InputError, match="unknown graph walk settings"):
        GraphWalk.from_records(records(), bow, dampening=0.5)
    with pytest.raises(InputError, match=r"\(n, dim\)"):
        GraphWalk.from_records(records(), lambda texts: np.zeros((1, 4)))
    with pytest.raises(InputError, match="embed_fn failed on the facts"):
        GraphWalk.from_records(records(), lambda texts: 1 / 0)
    with pytest.raises(InputError, match="non-finite"):
        GraphWalk.from_records(records(), lambda texts: np.full((len(texts), 4), np.nan))
    with pytest.raises(InputError, match="passage_vectors names chunks"):
        GraphWalk.from_records(records(), bow, passage_vectors={"nope": np.ones(DIM)})
    with pytest.raises(InputError, match="wrong type: top_facts='5'"):
        GraphWalkSettings(top_facts="5")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="mention_nodes"):
        GraphWalkSettings(mention_nodes=1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="link_texts"):
        GraphWalkSettings(link_texts="yes")  # type: ignore[arg-type]
    walk = GraphWalk.from_records(records(), bow)  # no query_fn: embed_fn embeds the query
    assert walk.retrieve(QUESTION, top_k=3) == GraphWalk.from_records(records(), bow, query_fn=query).retrieve(
        QUESTION, top_k=3
    )
    with pytest.raises(InputError, match="query_fn failed"):
        GraphWalk.from_records(records(), bow, query_fn=lambda q: 1 / 0).retrieve(QUESTION)
    with pytest.raises(InputError, match="dim 3"):
        walk.retrieve_vector(np.ones(3))
    with pytest.raises(InputError, match="top_k"):
        walk.retrieve_vector(query(QUESTION), top_k=0)
    with pytest.raises(InputError, match="non-empty"):
        GraphWalk.from_records(records(), bow, query_fn=query).retrieve("  ")


def test_passage_vectors_give_the_best_of_several_per_chunk() -> None:
    vecs = {"d6": np.stack([query("nothing alike"), query("Which country has rivers")])}
    walk = GraphWalk.from_records(records(), bow, query_fn=query, passage_vectors=vecs)
    dense = walk.dense_scores(query("Which country has rivers"))
    assert dense[walk.chunk_ids.index("d6")] == pytest.approx(1.0)
    # chunks with several vectors, one, or none (no text either) in between: each its best cosine, or 0
    rng = np.random.default_rng(1)
    given = {f"c{i}": rng.standard_normal((int(k), 8)) for i, k in enumerate([3, 1, 0, 2, 5]) if k}
    recs = [GraphRecord(f"c{i}", None, [(f"e{i}", "r", "x")]) for i in range(5)]
    walk = GraphWalk.from_records(recs, lambda t: rng.standard_normal((len(t), 8)), passage_vectors=given)
    q = rng.standard_normal(8)
    want = [
        max(float(v @ q) / np.linalg.norm(v) / np.linalg.norm(q) for v in given[c]) if c in given else 0.0
        for c in walk.chunk_ids
    ]
    assert np.allclose(walk.dense_scores(q), want, atol=1e-5)


# ------------------------------------------------------------------------------------------------ the host
TRIPLES = {
    "c1": (["Marie Curie", "Warsaw"], [["Marie Curie", "born in", "Warsaw"]]),
    "c2": (["Warsaw", "Poland"], [["Warsaw", "capital of", "Poland"]]),
    "c16": (["Nobel Prize in Physics", "Marie Curie"], [["Marie Curie", "shared", "Nobel Prize in Physics"]]),
    "c17": (["Henri Becquerel", "radioactivity"], [["Henri Becquerel", "discovered", "radioactivity"]]),
    "c14": (["Helsinki", "Finland"], [["Helsinki", "capital of", "Finland"]]),
}


@pytest.fixture(scope="module")
def extraction(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kg") / "kg.jsonl"
    rows = [{"id": k, "entities": e, "triples": t, "model": "test-llm"} for k, (e, t) in TRIPLES.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))


@pytest.mark.parametrize("prior", ["text", "units"])
def test_host_over_a_selection_holds_only_the_kept_chunks(index: G2ConSIndex, extraction: Path, prior: str) -> None:
    host = GraphWalkHost(str(extraction), passage_prior=prior, passages="kept", limit=100)
    assert isinstance(host, HostKG) and "test-llm" in host.label and host.name == "graph-walk"
    full = index.select(kappa=1.0)
    cost = host.build(index, full)
    assert cost.graph["chunks"] == len(TRIPLES) and cost.calls == len(index.chunks) and cost.llm
    assert host.walk is not None and sorted(host.walk.chunk_ids) == sorted(full.kept_ids)
    got = [h.chunk_id for h in host.retrieve("Where was Marie Curie born?")]
    assert got[0] in ("c1", "c16") and {"c1", "c16", "c2"} <= set(got[:4])
    kept = [c for c in full.kept_ids if c not in ("c1", "c2")]
    cost = host.build(index, replace(full, kept_ids=kept))
    assert host.walk is not None and sorted(host.walk.chunk_ids) == sorted(kept)
    assert "warsaw" not in host.walk.entities and "helsinki" in host.walk.entities
    got = [h.chunk_id for h in host.retrieve("Where was Marie Curie born?")]
    assert set(got) <= set(kept) and cost.graph["chunks"] == len(TRIPLES) - 2 and cost.calls == len(kept)
    assert host.retrieve("What is the capital of Finland?")[0].chunk_id == "c14"


@pytest.mark.parametrize("link", [False, True, None])
def test_host_default_keeps_every_chunk_as_a_node_but_only_the_kept_chunks_triples(
    index: G2ConSIndex, extraction: Path, link: bool | None
) -> None:
    host = GraphWalkHost(str(extraction), limit=100, **({} if link is None else {"link_texts": link}))
    full = index.select(kappa=1.0)
    kept = [c for c in full.kept_ids if c not in ("c1", "c2")]  # more than a third: automatic links on
    assert len(kept) >= len(index.chunks) / 3
    cost = host.build(index, replace(full, kept_ids=kept))
    walk = host.walk
    assert walk is not None and sorted(walk.chunk_ids) == sorted(c.id for c in index.chunks)
    assert "warsaw" not in walk.entities and "poland" not in walk.entities and "marie curie" in walk.entities
    assert cost.calls == len(kept) and cost.graph["chunks"] == len(TRIPLES) - 2
    v = walk.embed_query("Where was Marie Curie born?")
    seeds = walk.seeds(v)
    assert seeds and all(e in walk.entities for e in seeds)
    got = [h.chunk_id for h in host.retrieve("Where was Marie Curie born?")]
    assert "c1" in got and got[0] == "c16"  # the kept chunk that names her, then her birthplace
    n_e, c1, curie = len(walk.entities), walk.chunk_ids.index("c1"), walk.entities.index("marie curie")
    edge = walk._adjacency[curie, n_e + c1]
    assert walk.settings.link_texts is (link is not False)
    if link is not False:  # the dropped chunk names her: linked to her node, so the walk reaches it from her facts
        assert edge == 1.0 and walk._adjacency[n_e + c1].nnz == 1  # "warsaw" is no entity of the kept KG
    else:  # found by its text (dense prior) only, never through the graph
        assert edge == 0.0 and walk._adjacency[n_e + c1].nnz == 0
    # a chunk with triples keeps its triples' entities only, though its text names another ("Henri Becquerel")
    assert "henri becquerel" in walk.entities and walk._adjacency[n_e + walk.chunk_ids.index("c16")].nnz == 2


def test_host_links_dropped_chunks_automatically_only_when_it_keeps_a_third_of_them(
    index: G2ConSIndex, extraction: Path
) -> None:
    host = GraphWalkHost(str(extraction), limit=100)
    full = index.select(kappa=1.0)
    ids = [c.id for c in index.chunks]
    need = -(-len(ids) // 3)  # a third, rounded up
    for n, on in ((need, True), (need - 1, False)):
        kept = ["c16", *[c for c in ids if c not in ("c1", "c16")][: n - 1]]
        host.build(index, replace(full, kept_ids=kept, dropped_ids=[c for c in ids if c not in kept]))
        assert host.walk is not None and host.walk.settings.link_texts is on
        c1 = host.walk.chunk_ids.index("c1")  # dropped, and names Marie Curie (an entity of c16's triple)
        assert host.walk._adjacency[len(host.walk.entities) + c1].nnz == (1 if on else 0)
    assert host.link_texts is None  # the choice is per build, the host's setting stays automatic


def test_host_errors_are_named(extraction: Path) -> None:
    with pytest.raises(InputError, match="needs a path"):
        GraphWalkHost()
    with pytest.raises(InputError, match="unknown graph-walk host options"):
        GraphWalkHost(str(extraction), dampening=0.5)
    with pytest.raises(InputError, match="passage_prior"):
        GraphWalkHost(str(extraction), passage_prior="chunks")
    with pytest.raises(InputError, match="passages must be"):
        GraphWalkHost(str(extraction), passages="some")
    with pytest.raises(InputError, match="limit"):
        GraphWalkHost(str(extraction), limit=0)
    with pytest.raises(InputError, match="damping"):
        GraphWalkHost(str(extraction), damping=2.0)
    with pytest.raises(InputError, match="mention_nodes must be true or false"):
        GraphWalkHost(str(extraction), mention_nodes="perhaps")
    assert GraphWalkHost(str(extraction), mention_nodes="true").settings.mention_nodes is True
    with pytest.raises(InputError, match="link_texts must be true, false or auto"):
        GraphWalkHost(str(extraction), link_texts="sometimes")
    with pytest.raises(InputError, match="link_texts must be true, false or auto"):
        GraphWalkHost(str(extraction), link_texts=1)
    assert GraphWalkHost(str(extraction), link_texts="false").link_texts is False
    assert GraphWalkHost(str(extraction), link_texts="auto").link_texts is None
    assert GraphWalkHost(str(extraction)).link_texts is None
    with pytest.raises(InputError, match="not built"):
        GraphWalkHost(str(extraction)).retrieve("Where was Marie Curie born?")


def test_registry_loads_the_host_by_name_and_path(extraction: Path) -> None:
    host = load_host(f"graph-walk:{extraction}", damping=0.6)
    assert isinstance(host, GraphWalkHost) and host.settings.damping == 0.6
    with pytest.raises(InputError, match="give a path"):
        load_host("graph-walk:")
    assert isinstance(load_host("g2cons_plugins.hosts.graph_walk:graph_walk_host", path=str(extraction)), GraphWalkHost)


def test_cli_fuse_with_the_graph_walk_host(
    tmp_path: Path, corpus: list[dict[str, str]], extraction: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    G2ConSIndex.build(corpus, embedder="hash").save(tmp_path / "g")
    q = "Where was Marie Curie born?"
    assert main(["fuse", str(tmp_path / "g"), q, "--host", f"graph-walk:{extraction}", "--json"]) == 0
    cap = capsys.readouterr()
    assert "graph walk" in cap.err and "test-llm" in cap.err
    rows = json.loads(cap.out)
    assert any(r["chunk_id"] in ("c1", "c16") and r["source"] in ("host", "both") for r in rows)
