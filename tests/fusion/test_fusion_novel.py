"""Novel-first fusion (``fusion="novel"``, opt-in) through the public entry: the budget, the order of the scores,
lambda, an unrelated host passage entering behind the concept path's head, a host that agrees on nothing, no unit
twice, token recounts, and on 100 MuSiQue questions never below the concept path with a random host."""

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
from g2cons_plugins.errors import InputError
from g2cons_plugins.fusion import RULES, FuseOptions, Fusion, fuse_context, fuse_report
from g2cons_plugins.fusion.matching import concept_head
from g2cons_plugins.fusion.novel import NOVEL_ANY_RANK_FROM, NOVEL_WINDOW, Piece, novel_first
from g2cons_plugins.retrieval import RetrievedItem, retrieve
from g2cons_plugins.snapshot import HasSnapshot, as_snapshot

Q = "Who discovered radioactivity?"
WORDS = ["harbour", "lantern", "orchard", "violin", "glacier", "meadow", "copper", "falcon", "thistle", "quarry"]
FILLER = (
    "The committee met again in the spring and discussed the annual budget, the repairs of the old hall, the "
    "schedule of the summer fair and the minutes of the previous meeting, which were read aloud and approved. "
)


def novel(index: HasSnapshot, host: list, query: str, beta: int, lambda_: float | None = None) -> Fusion:
    return fuse_report(index, host, query, beta=beta, lambda_=lambda_, rule="novel")


@pytest.fixture(scope="module")
def wide(corpus: list[dict[str, str]]) -> G2ConSIndex:
    """The corpus and 150 chunks about nothing the questions ask."""
    rng = random.Random(3)
    filler = [
        {"id": f"f{i:03d}", "text": " ".join(rng.choice(WORDS) for _ in range(30)).capitalize() + "."}
        for i in range(150)
    ]
    return G2ConSIndex.build([*corpus, *filler], embedder="hash")


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    long_text = FILLER * 18 + "Marie Curie was born in Warsaw and later worked in Paris. " + FILLER * 18
    rows = [*corpus, {"id": "long", "text": long_text}]
    return G2ConSIndex.build(rows, embedder="hash", config=G2ConSConfig(unit_tokens=120))


def unranked(index: G2ConSIndex, q: str, beta: int, n: int) -> list[str]:
    """Filler chunks the concept path does not place for ``q`` at ``beta``."""
    placed = {c.parent_id for c in retrieve(index, q, beta=beta)}
    return [c.id for c in index.chunks if c.id.startswith("f") and c.id not in placed][:n]


def test_novel_is_the_default_and_chosen_by_name(wide: G2ConSIndex) -> None:
    assert G2ConSConfig().fusion == "novel"
    assert fuse_report(wide, [{"chunk_id": "c17"}], Q, beta=300).rule == "novel"
    assert "novel" in RULES
    assert G2ConSConfig(fusion="novel").fusion == "novel"
    with pytest.raises(InputError, match="novel"):
        G2ConSConfig(fusion="nove")  # type: ignore[arg-type]
    assert novel(wide, [{"chunk_id": "c17"}], Q, 300).rule == "novel"
    snap = replace(wide.snapshot, config=wide.config.with_(fusion="novel"))
    assert fuse_report(snap, [{"chunk_id": "c17"}], Q, beta=300).rule == "novel"


def test_cli_fuse_with_fusion_novel(
    tmp_path: Path, corpus: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "input"
    src.mkdir()
    for r in corpus:
        (src / f"{r['id']}.txt").write_text(r["text"] + "\n", encoding="utf-8")
    graph = tmp_path / "g"
    assert main(["build", str(src), "--graph", str(graph), "--embedder", "hash", "--quiet"]) == 0
    host = tmp_path / "host.json"
    host.write_text(json.dumps([{"chunk_id": "c13"}, {"chunk_id": "c17"}]), encoding="utf-8")
    capsys.readouterr()
    assert main(["fuse", str(graph), Q, "--host", str(host), "--budget", "200", "--fusion", "novel", "--json"]) == 0
    fused = json.loads(capsys.readouterr().out)
    assert fused and sum(f["n_tokens"] for f in fused) <= 200
    scores = [f["score"] for f in fused]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))


def test_an_unrelated_host_passage_enters_behind_the_head(wide: G2ConSIndex) -> None:
    beta = 600
    concept = retrieve(wide, Q, beta=beta)
    x = unranked(wide, Q, beta, 1)[0]
    f = novel(wide, [{"chunk_id": x}, {"chunk_id": concept[0].parent_id}], Q, beta)  # a short list is trusted
    head = concept_head(concept, 5, 2 * beta)
    ids = [i.unit_id for i in f.items]
    assert ids[: len(head)] == [c.unit_id for c in head]  # the concept path's first five passages lead
    assert f.items[len(head)].chunk_id == x and f.items[len(head)].source == "host"
    assert [i.chunk_id for i in f.items if i.source == "host"] == [x]  # as its best unit: one piece
    assert f.n_tokens <= beta and f.contributed == 2
    assert {i.source for i in f.items if i.chunk_id == concept[0].parent_id} == {"both"}


def test_lambda_changes_the_context(wide: G2ConSIndex) -> None:
    beta = 600
    concept = retrieve(wide, Q, beta=beta)
    x, y = unranked(wide, Q, beta, 2)
    host = [{"chunk_id": x}, {"chunk_id": y}, {"chunk_id": concept[0].parent_id}]
    contexts = {lam: novel(wide, host, Q, beta, lam) for lam in (0.0, 0.01, 0.3)}
    assert len({tuple(i.unit_id for i in f.items) for f in contexts.values()}) == 3
    n_head = len(concept_head(concept, 5, 2 * beta))

    def novel_ids(f: Fusion) -> list[str | None]:  # host items right behind the head
        return [i.chunk_id for i in f.items[n_head : n_head + NOVEL_WINDOW] if i.source == "host"]

    assert novel_ids(contexts[0.0]) == []  # lambda 0: the concept path's context, then the spill
    assert novel_ids(contexts[0.01]) == [x]  # the first novel passage enters beyond the share
    assert novel_ids(contexts[0.3]) == [x, y]  # a second within lambda x beta
    for f in contexts.values():
        assert f.n_tokens <= beta
    # the default rule with the config's lambda: lambda changes the default's context
    by_config = {
        lam: fuse_report(replace(wide.snapshot, config=wide.config.with_(lambda_=lam)), host, Q, beta=beta)
        for lam in (0.0, 0.3)
    }
    assert {f.rule for f in by_config.values()} == {"novel"}
    for lam, f in by_config.items():
        assert [i.unit_id for i in f.items] == [i.unit_id for i in contexts[lam].items]


def test_a_host_that_agrees_on_nothing_leaves_the_concept_path(wide: G2ConSIndex) -> None:
    concept = retrieve(wide, Q, beta=300)
    noise = [{"chunk_id": c} for c in unranked(wide, Q, 300, 6)]
    f = novel(wide, noise, Q, 300, 0.8)
    # none of its first five chunks is the concept path's: no novel passage, only what the concept path leaves
    assert [x.unit_id for x in f.items][: len(concept)] == [c.unit_id for c in concept]
    assert all(x.source == "host" for x in f.items[len(concept) :])
    # one chunk of agreement in its first five: its first passage enters
    g = novel(wide, [*noise[:4], {"chunk_id": concept[0].parent_id}], Q, 300, 0.8)
    assert any(x.chunk_id == noise[0]["chunk_id"] and x.source == "host" for x in g.items[: len(concept)])


def test_recount_is_the_budget(wide: G2ConSIndex) -> None:
    def double(items: list[RetrievedItem]) -> list[RetrievedItem]:
        return [replace(it, n_tokens=2 * it.n_tokens) for it in items]

    host = [{"chunk_id": c} for c in unranked(wide, Q, 600, 2)] + [{"chunk_id": "c17"}]
    opt = FuseOptions.of(wide.config, rule="novel", beta=600)
    f = fuse_context(wide, host, Q, opt, recount=double)
    assert f.n_tokens <= 600
    assert all(x.n_tokens == 2 * wide.count_tokens([x.text])[0] for x in f.items if x.unit_id is not None)


HOST_IDS = st.sampled_from(["c1", "c3", "c5", "c9", "c13", "c14", "c17", "long", "nope"])
HOST_ITEM = st.one_of(
    st.builds(lambda c: {"chunk_id": c}, HOST_IDS),
    st.builds(lambda n: {"text": "Foreign words about Warsaw and rivers. " * n}, st.integers(1, 200)),
    st.builds(
        lambda c, n: {"chunk_id": c, "text": "A host's own text for a chunk. " * n}, HOST_IDS, st.integers(1, 60)
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(host=st.lists(HOST_ITEM, max_size=12), lam=st.floats(0.0, 1.0), beta=st.integers(1, 3000))
def test_budget_never_exceeded_scores_decrease_no_unit_twice(
    index: G2ConSIndex, host: list[dict[str, str]], lam: float, beta: int
) -> None:
    unknown = any(h.get("chunk_id") == "nope" and "text" not in h for h in host)
    with pytest.warns(UserWarning) if unknown else _nothing():
        f = novel(index, host, "Where was Marie Curie born?", beta, lam)
    assert f.n_tokens <= beta
    assert sum(index.count_tokens([x.text for x in f.items])) == f.n_tokens
    scores = [x.score for x in f.items]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert len({x.unit_id or x.text for x in f.items}) == len(f.items)
    assert f.host_items == f.contributed + sum(f.dropped.values())


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def test_random_host_on_real_data_is_never_below_the_concept_path(shared_data: Path) -> None:
    """Random host ids on 100 MuSiQue questions: the novel-first context answers as many questions as the concept
    path alone at 1k, 2k and 4k tokens, and its supporting-passage recall@5 is not lower."""
    from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl

    d = shared_data / "musique"
    corpus = read_jsonl(d / "hipporag_train100_corpus.jsonl")
    qs = load_questions(d / "hipporag_train100_questions.jsonl")[:100]
    idx = G2ConSIndex.build(corpus, embedder="hash")
    snap = as_snapshot(idx)
    rng = random.Random(7)
    chunk_ids = [c.id for c in idx.chunks]
    for beta in (1000, 2000, 4000):
        hit_c = hit_f = 0
        r5_c = r5_f = 0.0
        for q in qs:
            gold = set(q["supporting_passage_ids"])
            concept = retrieve(snap, q["question"], beta=beta)
            noise = [{"chunk_id": c} for c in rng.sample(chunk_ids, 20) if c not in gold]
            fused = fuse_report(snap, noise, q["question"], beta=beta, concept=concept, rule="novel").items
            hit_c += answer_in_context(q["answers"], "\n".join(c.text for c in concept))
            hit_f += answer_in_context(q["answers"], "\n".join(x.text for x in fused))
            r5_c += len(gold & set(list(dict.fromkeys(c.parent_id for c in concept))[:5])) / len(gold)
            r5_f += len(gold & set(list(dict.fromkeys(x.chunk_id for x in fused))[:5])) / len(gold)
        assert hit_f >= hit_c, f"beta {beta}: novel {hit_f} < concept {hit_c} of {len(qs)}"
        assert r5_f >= r5_c - 1e-9, f"beta {beta}: recall@5 novel {r5_f} < concept {r5_c}"


def test_the_novel_passage_displaces_the_tail_of_the_concept_path_before_its_linked_head() -> None:
    """The concept path's list in the linked order (retrieval.linked: E, ranked last, moved second) loses to the
    host's novel passage the unit it ranked last before that order (E), not the last one of the list (D); the
    units kept stay in the linked order."""

    def item(u: str, before: int | None) -> RetrievedItem:
        reason = {} if before is None else {"position_before": before}
        return RetrievedItem(u, u.lower(), u, 0.5, 100, reason)

    linked = [item("A", None), item("E", 4), item("B", 1), item("C", 2), item("D", 3)]
    plain = [item(u, None) for u in "ABCDE"]
    host = [Piece(("text", 0), "x", 100, None)]
    for concept, kept in ((linked, ["A", "B", "C", "D"]), (plain, ["A", "B", "C", "D"])):
        pieces = [Piece(i, it.parent_id, it.n_tokens, it) for i, it in enumerate(concept)]
        out = novel_first(pieces, host, 500, 0.2, 5, True)
        assert [p.item.unit_id for p, src in out if p.item is not None] == kept
        assert [p.passage for p, src in out if src == "host"] == ["x"]
    # without the host's passage nothing is dropped and the linked order stays
    pieces = [Piece(i, it.parent_id, it.n_tokens, it) for i, it in enumerate(linked)]
    assert [p.item.unit_id for p, _ in novel_first(pieces, [], 500, 0.2, 5, True) if p.item] == list("AEBCD")


def test_the_first_novel_passage_comes_from_any_rank_only_in_a_long_context() -> None:
    """The host's first novel passage must be among its first NOVEL_WINDOW passages while the concept path's context
    is short; from NOVEL_ANY_RANK_FROM passages on it may come from any rank, and the window still bounds the
    passages after it."""

    def concept_pieces(n: int) -> list[Piece]:
        return [Piece(i, f"c{i}", 10, RetrievedItem(f"u{i}", f"c{i}", "t", 0.5, 10, {})) for i in range(n)]

    # the host's first three passages the concept path holds, then two it lacks
    def host_pieces() -> list[Piece]:
        held = [Piece(i, f"c{i}", 10, None) for i in range(3)]
        return held + [Piece(("text", 3), "deep1", 10, None), Piece(("text", 4), "deep2", 10, None)]

    def novel_passages(n_concept: int, any_rank_from: int = NOVEL_ANY_RANK_FROM) -> list[str]:
        # beta = the concept path's tokens: no room for a spill, so a host passage in the context entered as novel
        out = novel_first(concept_pieces(n_concept), host_pieces(), 10 * n_concept, 0.5, 5, True,
                          any_rank_from=any_rank_from)  # fmt: skip
        return [p.passage for p, src in out if src == "host"]

    assert novel_passages(NOVEL_ANY_RANK_FROM - 1) == []  # short: the window holds no novel passage
    assert novel_passages(NOVEL_ANY_RANK_FROM) == ["deep1"]  # long: the first novel one, from rank 3
    long = novel_first(concept_pieces(NOVEL_ANY_RANK_FROM), host_pieces(), 10 * NOVEL_ANY_RANK_FROM, 0.5, 5, True)
    assert [p.passage for p, src in long if src == "host"] == ["deep1"]  # deep2: outside the window, and no room
    assert sum(p.n_tokens for p, _ in long) <= 10 * NOVEL_ANY_RANK_FROM
    assert len(long) == NOVEL_ANY_RANK_FROM  # deep1 displaced the concept path's last passage
    assert [p.passage for p, _ in long][-1] == f"c{NOVEL_ANY_RANK_FROM - 2}"
    # the threshold is a parameter: at 1 every context is long
    assert novel_passages(5, any_rank_from=1) == ["deep1"]
