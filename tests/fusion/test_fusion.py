"""Dual-path fusion (g2cons_plugins.fusion): budget, host items of any size, noise hosts, the drop report."""

from __future__ import annotations

import ast
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

import g2cons_plugins.fusion as fusion_pkg
from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.errors import InputError
from g2cons_plugins.fusion import (
    FUSIONS,
    REASON_BELOW,
    REASON_CAP,
    REASON_TOO_LONG,
    REASON_UNKNOWN,
    RULES,
    FuseOptions,
    Fusion,
    chunk_units,
    fuse,
    fuse_context,
    fuse_report,
)
from g2cons_plugins.retrieval import retrieve
from g2cons_plugins.retrieval.linked import before_linked
from g2cons_plugins.snapshot import HasSnapshot, as_snapshot


def score_fuse(index: HasSnapshot, host: list, query: str, beta: int | None = None, **kw: object) -> Fusion:
    """Score fusion with the index's settings (``host_weight`` may be given), through the one entry."""
    opt = FuseOptions.of(as_snapshot(index).config, rule="score", beta=beta, **kw)  # type: ignore[arg-type]
    return fuse_context(index, host, query, opt)

FILLER = (
    "The committee met again in the spring and discussed the annual budget, the repairs of the old hall, the "
    "schedule of the summer fair and the minutes of the previous meeting, which were read aloud and approved. "
)


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    # a long host-sized chunk (~1,300 tokens) whose one relevant sentence sits in the middle
    long_text = FILLER * 18 + "Marie Curie was born in Warsaw and later worked in Paris. " + FILLER * 18
    rows = [*corpus, {"id": "long", "text": long_text}]
    return G2ConSIndex.build(rows, embedder="hash", config=G2ConSConfig(unit_tokens=120))


def _text(items: list) -> str:
    return "\n".join(f.text for f in items)


@pytest.mark.parametrize("beta", [60, 200, 1000, 4000])
def test_budget_holds_with_any_host(index: G2ConSIndex, beta: int) -> None:
    host = [{"chunk_id": "long"}, {"chunk_id": "c3"}, {"text": "A foreign passage. " * 40}, {"chunk_id": "c9"}]
    for rule in ("score", "ensemble"):
        f = fuse_report(index, host, "Where was Marie Curie born?", beta=beta, rule=rule)
        assert f.n_tokens <= beta
        assert sum(index.count_tokens([x.text for x in f.items])) == f.n_tokens


def test_long_host_chunk_contributes_its_best_units(index: G2ConSIndex) -> None:
    n_long = index.count_tokens([index.chunk("long").text])[0]
    assert n_long > 1100
    q = "Where was Marie Curie born?"
    for beta in (1000, 2000, 4000):
        f = score_fuse(index, [{"chunk_id": "long"}], q, beta=beta, host_weight=0.5)
        from_long = [x for x in f.items if x.chunk_id == "long"]
        assert from_long, f"beta {beta}: the 1,300-token host chunk contributed nothing"
        assert all(x.unit_id != "long" and x.n_tokens < n_long for x in from_long)  # units, not the whole chunk
        assert any("Warsaw" in x.text for x in from_long)
        assert f.contributed == 1 and not f.dropped
        # the paper's ensemble drops it (longer than lambda x beta) but says so
        e = fuse_report(index, [{"chunk_id": "long"}], q, beta=beta, rule="ensemble")
        if beta * index.config.fusion_lambda < n_long and not any(x.chunk_id == "long" for x in e.items):
            assert e.dropped == {REASON_CAP: 1}


def test_noise_host_never_removes_the_concept_paths_head(index: G2ConSIndex) -> None:
    q = "Who discovered radioactivity?"
    concept = retrieve(index, q, beta=200)
    assert "Becquerel" in _text(concept)
    noise = [{"chunk_id": c} for c in ("c14", "c15", "c13", "c12")]  # Baltic capitals: nothing about the question
    for w in (0.2, 1.0, 5.0):
        f = score_fuse(index, noise, q, beta=200, host_weight=w)
        assert "Becquerel" in _text(f.items)
        seeds = [c.unit_id for c in concept if c.reason.get("via") == "seed"]
        assert seeds and all(s in {x.unit_id for x in f.items} for s in seeds)


def test_zero_weight_is_the_concept_path(index: G2ConSIndex) -> None:
    q = "Which prize was shared by Marie Curie?"
    concept = before_linked(retrieve(index, q, beta=300))  # in the order score fusion reads (before the linked head)
    f = score_fuse(index, [{"chunk_id": "c14"}, {"chunk_id": "long"}], q, beta=300, host_weight=0.0)
    assert [x.unit_id for x in f.items] == [c.unit_id for c in concept]


def test_host_evidence_lifts_a_host_chunk(corpus: list[dict[str, str]]) -> None:
    q = "Which prize was shared by Marie Curie?"
    target = "c15"
    plain = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(host_agreement=False))
    base = {c.parent_id for c in retrieve(plain, q, beta=150)}
    assert target not in base
    f = score_fuse(plain, [{"chunk_id": target}], q, beta=150, host_weight=10.0)
    assert {x.chunk_id: x.source for x in f.items}.get(target) == "host"
    # with host_agreement (default) a host whose top chunks the concept path places nowhere gets no say
    agreeing = G2ConSIndex.build(corpus, embedder="hash")
    g = score_fuse(agreeing, [{"chunk_id": target}], q, beta=150, host_weight=10.0)
    assert target not in {x.chunk_id for x in g.items}
    # score fusion reads the concept path in its order before the linked head (retrieval.linked.before_linked)
    assert [x.unit_id for x in g.items] == [c.unit_id for c in before_linked(retrieve(agreeing, q, beta=150))]
    # ... and one that agrees on some of its top chunks lifts the others
    helper = [{"chunk_id": c} for c in sorted(base)][:2]
    h = score_fuse(agreeing, [*helper, {"chunk_id": target}], q, beta=150, host_weight=10.0)
    assert {x.chunk_id: x.source for x in h.items}.get(target) == "host"


def test_sources_and_overlap_at_unit_level(index: G2ConSIndex) -> None:
    q = "Where was Marie Curie born?"
    concept = {c.parent_id for c in retrieve(index, q, beta=400)}
    host = [{"chunk_id": c} for c in sorted(concept)]
    f = score_fuse(index, host, q, beta=400)
    assert {x.source for x in f.items} <= {"both", "concept", "host"}
    alone = {c.unit_id for c in retrieve(index, q, beta=400)}
    assert all(x.source == ("both" if x.unit_id in alone else "host") for x in f.items if x.host is not None)
    assert all(x.source == "concept" for x in f.items if x.host is None)
    assert len({x.unit_id for x in f.items}) == len(f.items)  # no unit twice


def test_drop_report_names_every_reason(index: G2ConSIndex) -> None:
    q = "Where was Marie Curie born?"
    with pytest.warns(UserWarning, match="graph does not hold"):
        f = score_fuse(
            index,
            [{"chunk_id": "nope"}, {"text": "An unrelated foreign passage about weather. " * 60}, {"chunk_id": "c2"}],
            q,
            beta=80,
        )
    assert f.host_items == 3
    assert f.dropped.get(REASON_UNKNOWN) == 1
    assert f.dropped.get(REASON_TOO_LONG) == 1
    assert f.contributed + sum(f.dropped.values()) == 3
    assert "not placed" in f.summary()
    many = [{"chunk_id": c.id} for c in index.chunks][::-1]
    g = score_fuse(index, many, q, beta=80)
    assert g.dropped.get(REASON_BELOW, 0) == g.host_items - g.contributed > 0


def test_foreign_host_text_is_placed_when_it_fits(index: G2ConSIndex) -> None:
    text = "Marie Curie was born in Warsaw, the capital of Poland, in 1867."
    f = score_fuse(index, [{"text": text}], "Where was Marie Curie born?", beta=400, host_weight=1.0)
    assert any(x.source == "host" and x.text == text for x in f.items)
    assert f.contributed == 1


def test_paper_mode_keeps_the_papers_ensemble(corpus: list[dict[str, str]]) -> None:
    idx = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(mode="paper"))
    assert idx.config.fusion == "ensemble"
    host = [{"chunk_id": "c1"}, {"chunk_id": "c16"}]
    q = "Who shared the Nobel Prize in Physics?"
    f = fuse_report(idx, host, q, beta=300)
    concept = retrieve(idx, q, beta=300)
    hosts = [{"chunk_id": "c1", "text": idx.chunk("c1").text}, {"chunk_id": "c16", "text": idx.chunk("c16").text}]
    expected = fuse(hosts, concept, beta=300, lambda_=0.6, tokenizer=idx.tokenizer, spill=False)
    assert [(x.source, x.chunk_id, x.unit_id) for x in f.items] == [(x.source, x.chunk_id, x.unit_id) for x in expected]


def test_bad_settings_are_named(index: G2ConSIndex) -> None:
    with pytest.raises(InputError, match="host_weight"):
        score_fuse(index, [], "q?", host_weight=-1)
    with pytest.raises(InputError, match="fusion rule"):
        fuse_report(index, [], "q?", rule="mean")
    with pytest.raises(InputError, match="fusion"):
        G2ConSConfig(fusion="mean")  # type: ignore[arg-type]


def test_chunk_units_table(index: G2ConSIndex) -> None:
    snap = index.snapshot
    for cid, pos in list(snap.chunk_pos.items())[:5] + [("long", snap.chunk_pos["long"])]:
        units = chunk_units(snap, pos)
        assert {snap.stored.units[u].parent_id for u in units.tolist()} == {cid}
        assert len(units) == sum(u.parent_id == cid for u in snap.stored.units)


def test_the_concept_paths_head_stays_first(corpus: list[dict[str, str]]) -> None:
    q = "Who discovered radioactivity?"
    noise = [{"chunk_id": c} for c in ("c17", "c14", "c15", "c13", "c12")]  # agrees on one chunk, then noise
    for head in (0, 5):
        idx = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(host_head=head, host_agreement=False))
        alone = before_linked(retrieve(idx, q, beta=400))  # the order score fusion reads
        f = score_fuse(idx, noise, q, beta=400, host_weight=10.0)
        assert f.n_tokens <= 400
        first = list(dict.fromkeys(c.parent_id for c in alone))[:5]
        got = list(dict.fromkeys(x.chunk_id for x in f.items))[:5]
        if head:
            assert got == first  # the host's evidence reorders the rest, never the head
        else:
            assert got != first  # unprotected, a heavy host weight takes places after the seeds


@pytest.mark.parametrize("strategy", ["paper", "ppr", "e2"])
def test_score_fusion_without_host_evidence_raises(index: G2ConSIndex, strategy: str) -> None:
    """Score fusion needs a strategy that takes host evidence: another one is refused, naming both (it used to fall
    back to the ensemble in silence); share and the ensemble run with any strategy."""
    q = "Where was Marie Curie born?"
    with pytest.raises(InputError, match=f"'score'.*'{strategy}'"):
        fuse_report(index, [{"chunk_id": "c1"}], q, rule="score", strategy=strategy)
    for rule in ("share", "ensemble"):
        assert fuse_report(index, [{"chunk_id": "c1"}], q, rule=rule, strategy=strategy).items


def test_fuse_options_from_the_config() -> None:
    paper = FuseOptions.of(G2ConSConfig(mode="paper"))
    assert (paper.rule, paper.lambda_, paper.spill, paper.strategy) == ("ensemble", 0.6, False, "paper")
    default = FuseOptions.of(G2ConSConfig(), beta=1000, lambda_=0.5, host_weight=1.0)
    assert (default.rule, default.beta, default.lambda_, default.spill, default.host_weight) == (
        "novel",
        1000,
        0.5,
        True,
        1.0,
    )
    assert default.with_(rule="score").rule == "score"
    assert set(RULES) == set(FUSIONS)
    for bad, name in (({"rule": "mean"}, "fusion rule"), ({"beta": 0}, "beta"), ({"spill": "no"}, "spill")):
        with pytest.raises(InputError, match=name):
            FuseOptions(**bad)  # type: ignore[arg-type]


def test_fusion_imports_none_of_the_engine_or_tooling() -> None:
    """fusion/ is a step of the method: it never imports the engine, storage, hosts, eval or the CLI (at module
    level or inside a function)."""
    root = Path(fusion_pkg.__file__).parent
    banned = {"engine", "eval", "cli", "hosts", "storage"}
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                parts = (node.module or "").split(".")
                top = parts[1] if node.level == 0 and parts[0] == "g2cons_plugins" and len(parts) > 1 else parts[0]
                if node.level >= 2 or (node.level == 0 and parts[0] == "g2cons_plugins"):
                    assert top not in banned, f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.split(".")[1:2] and a.name.split(".")[1] in banned for a in node.names), path
