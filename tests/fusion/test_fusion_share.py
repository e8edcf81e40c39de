"""Share fusion (the default rule): overlap first, each path's best within its lambda share, the host's first item
whenever it fits, the spill; budget, lambda, noise hosts, host items of any size, order of the scores."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.cli import main
from g2cons_plugins.fusion import REASON_UNKNOWN, FuseOptions, Fusion, fuse_context, fuse_report, share_scale
from g2cons_plugins.fusion.matching import concept_head as _head
from g2cons_plugins.retrieval import retrieve
from g2cons_plugins.retrieval.linked import before_linked
from g2cons_plugins.snapshot import HasSnapshot, as_snapshot


def share_fuse(
    index: HasSnapshot, host: list, query: str, beta: int, lambda_: float | None = None, head: int | None = None
) -> Fusion:
    """Share fusion through the one entry (``head``: the concept path's head instead of the config's)."""
    opt = FuseOptions.of(as_snapshot(index).config, rule="share", beta=beta, lambda_=lambda_)
    return fuse_context(index, host, query, opt if head is None else opt.with_(host_head=head))


FILLER = (
    "The committee met again in the spring and discussed the annual budget, the repairs of the old hall, the "
    "schedule of the summer fair and the minutes of the previous meeting, which were read aloud and approved. "
)
Q = "Where was Marie Curie born?"


WORDS = ["harbour", "lantern", "orchard", "violin", "glacier", "meadow", "copper", "falcon", "thistle", "quarry"]


def filler_rows(n: int = 150) -> list[dict[str, str]]:
    """Chunks about nothing the questions ask (so the concept path at 2,000 tokens leaves most of them out)."""
    rng = random.Random(3)
    return [
        {"id": f"f{i:03d}", "text": " ".join(rng.choice(WORDS) for _ in range(30)).capitalize() + "."} for i in range(n)
    ]


def unranked(index: G2ConSIndex, q: str, beta: int) -> str:
    """A filler chunk the concept path does not place for ``q`` at ``beta``."""
    placed = {c.parent_id for c in retrieve(index, q, beta=beta)}
    return next(c.id for c in index.chunks if c.id.startswith("f") and c.id not in placed)


@pytest.fixture(scope="module")
def wide(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build([*corpus, *filler_rows()], embedder="hash")


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    long_text = FILLER * 18 + "Marie Curie was born in Warsaw and later worked in Paris. " + FILLER * 18
    rows = [*corpus, {"id": "long", "text": long_text}]
    return G2ConSIndex.build(rows, embedder="hash", config=G2ConSConfig(unit_tokens=120))


def test_share_and_the_old_rules_stay_by_name(index: G2ConSIndex) -> None:
    assert G2ConSConfig().fusion == "novel"  # the default since novel-first fusion measured better
    assert G2ConSConfig(fusion="share").fusion == "share"
    assert G2ConSConfig(mode="paper").fusion == "ensemble"
    host = [{"chunk_id": "c3"}, {"chunk_id": "c14"}]
    assert fuse_report(index, host, Q, beta=300, rule="share").rule == "share"
    snap = replace(index.snapshot, config=index.config.with_(fusion="share"))
    assert fuse_report(snap, host, Q, beta=300).rule == "share"
    assert fuse_report(index, host, Q, beta=300, rule="score").rule == "score"
    assert fuse_report(index, host, Q, beta=300, rule="ensemble").rule == "ensemble"


def test_an_unrelated_id_only_host_item_enters(wide: G2ConSIndex) -> None:
    cid = unranked(wide, Q, 2000)  # nothing about the question, and the concept path does not rank it
    f = fuse_report(wide, [{"chunk_id": cid}], Q, beta=2000)
    assert [x.source for x in f.items if x.chunk_id == cid] == ["host"]
    assert f.contributed == 1 and not f.dropped and f.n_tokens <= 2000
    # the old default weighed it by its agreement with the concept path (none) and left it out
    assert cid not in {x.chunk_id for x in fuse_report(wide, [{"chunk_id": cid}], Q, beta=2000, rule="score").items}


def test_cli_fuse_places_an_unrelated_id_only_item(
    tmp_path: Path, corpus: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "input"
    src.mkdir()
    for r in [*corpus, *filler_rows()]:
        (src / f"{r['id']}.txt").write_text(r["text"] + "\n", encoding="utf-8")
    graph = tmp_path / "g"
    assert main(["build", str(src), "--graph", str(graph), "--embedder", "hash", "--quiet"]) == 0
    cid = unranked(G2ConSIndex.load(graph), Q, 2000)
    host = tmp_path / "host.json"
    host.write_text(json.dumps([{"chunk_id": cid}]), encoding="utf-8")
    capsys.readouterr()
    assert main(["fuse", str(graph), Q, "--host", str(host), "--budget", "2000", "--json"]) == 0
    fused = json.loads(capsys.readouterr().out)
    assert [f["source"] for f in fused if f["chunk_id"] == cid] == ["host"]
    assert sum(f["n_tokens"] for f in fused) <= 2000
    scores = [f["score"] for f in fused]
    assert scores == sorted(scores, reverse=True)


def test_lambda_changes_the_context(wide: G2ConSIndex) -> None:
    q = "Who discovered radioactivity?"
    beta = 400
    concept = retrieve(wide, q, beta=beta)
    parents = list(dict.fromkeys(c.parent_id for c in concept))
    away = [c.id for c in wide.chunks if c.id.startswith("f") and c.id not in parents]
    # agrees on two of the concept path's chunks (its full share), then knows chunks the concept path does not
    host = [{"chunk_id": c} for c in [parents[0], away[0], parents[1], *away[1:12]]]
    contexts, host_only = [], []
    for lam in (0.0, 0.3, 0.6, 1.0):
        f = share_fuse(wide, host, q, beta=beta, lambda_=lam, head=0)
        assert f.n_tokens <= beta
        contexts.append(tuple(sorted(x.unit_id or "" for x in f.items)))
        host_only.append(sum(x.n_tokens for x in f.items if x.source == "host"))
        first = max((x.n_tokens for x in f.items if x.source == "host"), default=0)  # enters whatever lambda
        assert host_only[-1] <= lam * beta + first
    assert len(set(contexts)) == 4
    assert host_only == sorted(host_only) and host_only[-1] > host_only[0]
    # share fusion chosen in the config reads lambda from the config
    shared = replace(wide.snapshot, config=wide.config.with_(fusion="share"))
    a = fuse_report(shared, host, q, beta=beta)
    other = replace(wide.snapshot, config=wide.config.with_(fusion="share", lambda_=0.9))
    b = fuse_report(other, host, q, beta=beta)
    assert a.rule == b.rule == "share"
    assert sum(x.source == "host" for x in b.items) > sum(x.source == "host" for x in a.items)


def test_overlap_first_and_scores_never_increase(wide: G2ConSIndex) -> None:
    concept = retrieve(wide, Q, beta=400)
    parents = list(dict.fromkeys(c.parent_id for c in concept))
    away = [c.id for c in wide.chunks if c.id.startswith("f") and c.id not in parents]
    host = [{"chunk_id": away[0]}, {"chunk_id": parents[-1]}, {"chunk_id": away[1]}]
    f = share_fuse(wide, host, Q, beta=400, lambda_=0.5)
    scores = [x.score for x in f.items]
    assert scores == sorted(scores, reverse=True)
    both = [x for x in f.items if x.source == "both"]
    assert both and all(x.chunk_id == parents[-1] for x in both)
    assert {x.source for x in f.items} == {"both", "host", "concept"}


def test_a_long_host_chunk_contributes_its_best_units(index: G2ConSIndex) -> None:
    n_long = index.count_tokens([index.chunk("long").text])[0]
    assert n_long > 1100
    for beta in (300, 1000, 2000):
        f = share_fuse(index, [{"chunk_id": "long"}], Q, beta=beta, lambda_=0.5)
        from_long = [x for x in f.items if x.chunk_id == "long"]
        assert from_long and all(x.n_tokens < n_long for x in from_long)
        assert any("Warsaw" in x.text for x in from_long)  # its best unit, not its first
        assert f.n_tokens <= beta and f.contributed == 1


def test_foreign_text_and_unknown_ids(index: G2ConSIndex) -> None:
    text = "Marie Curie was born in Warsaw, the capital of Poland, in 1867."
    with pytest.warns(UserWarning, match="graph does not hold"):
        f = share_fuse(index, [{"text": text}, {"chunk_id": "nope"}], Q, beta=400)
    assert any(x.source == "host" and x.text == text and x.concept is None for x in f.items)
    assert f.dropped == {REASON_UNKNOWN: 1}


def test_a_host_that_agrees_on_nothing_leaves_the_concept_path(wide: G2ConSIndex) -> None:
    q = "Who discovered radioactivity?"
    concept = before_linked(retrieve(wide, q, beta=300))  # share fusion reads the order before the linked head
    placed = {c.parent_id for c in concept}
    noise = [{"chunk_id": c.id} for c in wide.chunks if c.id.startswith("f") and c.id not in placed][:6]
    f = share_fuse(wide, noise, q, beta=300, lambda_=0.8)
    # none of its first five chunks is the concept path's: no share, no first item, the concept path's context
    assert [x.unit_id for x in f.items] == [c.unit_id for c in concept]
    assert f.dropped and f.contributed == 0
    # one chunk of agreement in its first five: its share, and its first item
    g = share_fuse(wide, [*noise[:4], {"chunk_id": concept[0].parent_id}], q, beta=300, lambda_=0.8)
    assert any(x.chunk_id == noise[0]["chunk_id"] and x.source == "host" for x in g.items)
    # the concept path's head (its first host_head = 5 passages, at most half of beta) stays first
    head = [c.unit_id for c in _head(concept, 5, 300)]
    assert len(head) >= 3 and [x.unit_id for x in g.items][: len(head)] == head


def test_share_scale() -> None:
    assert share_scale(0.0) == 0.0 and share_scale(1.0) == 1.0
    assert share_scale(0.2, full_at=0.4) == pytest.approx(0.5)
    assert share_scale(0.0, floor=0.25) == 0.25


HOST_IDS = st.sampled_from(["c1", "c3", "c5", "c9", "c13", "c14", "c17", "long", "nope"])
HOST_ITEM = st.one_of(
    st.builds(lambda c: {"chunk_id": c}, HOST_IDS),
    st.builds(lambda n: {"text": "Foreign words about Warsaw and rivers. " * n}, st.integers(1, 200)),
    st.builds(
        lambda c, n: {"chunk_id": c, "text": "A host's own text for a chunk. " * n}, HOST_IDS, st.integers(1, 60)
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    host=st.lists(HOST_ITEM, max_size=12),
    lam=st.floats(0.0, 1.0),
    beta=st.integers(1, 3000),
    agreement=st.booleans(),
)
def test_budget_never_exceeded(
    index: G2ConSIndex, host: list[dict[str, str]], lam: float, beta: int, agreement: bool
) -> None:
    snap = index.snapshot
    if not agreement:
        snap = replace(snap, config=snap.config.with_(host_agreement=False))
    with pytest.warns() if any(h.get("chunk_id") == "nope" and "text" not in h for h in host) else _nothing():
        f = share_fuse(snap, host, Q, beta=beta, lambda_=lam)
    assert f.n_tokens <= beta
    assert sum(index.count_tokens([x.text for x in f.items])) == f.n_tokens
    scores = [x.score for x in f.items]
    assert scores == sorted(scores, reverse=True)
    assert len({x.unit_id or x.text for x in f.items}) == len(f.items)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def test_noise_host_on_real_data_is_never_below_the_concept_path(shared_data: Path) -> None:
    """Random unrelated host items on 100 MuSiQue questions: the fused context answers as many questions as the
    concept path alone, and its supporting-passage recall@5 is not lower."""
    from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl

    d = shared_data / "musique"
    corpus = read_jsonl(d / "hipporag_train100_corpus.jsonl")
    qs = load_questions(d / "hipporag_train100_questions.jsonl")[:100]
    idx = G2ConSIndex.build(corpus, embedder="hash")
    rng = random.Random(7)
    chunk_ids = [c.id for c in idx.chunks]
    for beta in (1000, 2000, 4000):
        hit_c = hit_f = 0
        r5_c = r5_f = 0.0
        for q in qs:
            gold = set(q["supporting_passage_ids"])
            concept = retrieve(idx, q["question"], beta=beta)
            noise = [{"chunk_id": c} for c in rng.sample(chunk_ids, 20) if c not in gold]
            fused = fuse_report(idx, noise, q["question"], beta=beta, concept=concept).items
            hit_c += answer_in_context(q["answers"], "\n".join(c.text for c in concept))
            hit_f += answer_in_context(q["answers"], "\n".join(x.text for x in fused))
            r5_c += len(gold & set(list(dict.fromkeys(c.parent_id for c in concept))[:5])) / len(gold)
            r5_f += len(gold & set(list(dict.fromkeys(x.chunk_id for x in fused))[:5])) / len(gold)
        assert hit_f >= hit_c, f"beta {beta}: fused {hit_f} < concept {hit_c} of {len(qs)}"
        assert r5_f >= r5_c - 1e-9, f"beta {beta}: recall@5 fused {r5_f} < concept {r5_c}"
