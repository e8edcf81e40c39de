"""Any question returns in bounded time: the characters read (``MAX_QUERY_CHARS``), the names the head looks up
(``MAX_QUERY_NAMES``) and the concepts e2 / ppr use (``MAX_QUERY_CONCEPTS``) are capped, with a warning; the
replay host matches names of at most ``MAX_NAME_WORDS`` words in the question. A capped question answers as its
capped text does. ``benchmarks/hostile/query_worst_case.py`` measures the worst case on a 2,000-chunk index."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import pytest
from conftest import CORPUS

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.retrieval import MAX_QUERY_CONCEPTS, STRATEGIES, query_concepts
from g2cons_plugins.retrieval import entities as ent
from g2cons_plugins.snapshot import MAX_QUERY_CHARS, capped_query

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"


@pytest.fixture(scope="module")
def index() -> G2ConSIndex:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return G2ConSIndex.build([{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows], embedder="hash")


@pytest.fixture(scope="module")
def names(index: G2ConSIndex) -> list[str]:
    found = dict.fromkeys(nm for c in index.chunks for nm in ent.query_names(c.text))
    return list(found)


def _hostile(names: list[str]) -> dict[str, str]:
    many = (names * (10_000 // len(names) + 1))[:10_000]
    return {
        "names": "Who are " + ", ".join(many)[:160_000] + "?",
        "quoted": " ".join(f'"{n}"' for n in many)[:160_000],
        "one word": "Paris " * 30_000,
    }


def test_capped_query_cuts_at_white_space_and_warns() -> None:
    short = "Where was Marie Curie born?"
    assert capped_query(short) == short
    long = "word " * (MAX_QUERY_CHARS // 2)
    with pytest.warns(UserWarning, match=rf"{len(long):,} characters: only its first [\d,]+ are read"):
        out = capped_query(long)
    assert len(out) <= MAX_QUERY_CHARS and long.startswith(out) and out.endswith("word")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert capped_query(long, warn=False) == out


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_hostile_questions_answer_in_bounded_time_as_their_capped_text(
    index: G2ConSIndex, names: list[str], strategy: str
) -> None:
    """80-160k characters of names, quoted spans or one word: well under a second of CPU on every strategy (it
    took seconds, e2 up to 25 s on 2,000 chunks), with a warning, and the same answer as the capped question."""
    index.retrieve("Who founded Acme?", strategy=strategy)  # warm-up
    for label, q in _hostile(names).items():
        with pytest.warns(UserWarning, match="characters: only its first"):
            t0 = time.process_time()
            got = index.retrieve(q, strategy=strategy)
            cpu = time.process_time() - t0
        assert cpu < 1.0, (label, strategy, cpu)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = index.retrieve(capped_query(q, warn=False), strategy=strategy)
        assert [(r.unit_id, r.score) for r in got] == [(r.unit_id, r.score) for r in want], label


def test_the_names_head_looks_up_at_most_max_query_names(
    index: G2ConSIndex, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    real = ent._found

    def counting(snap: object, name: str) -> object:
        looked.append(name)
        return real(snap, name)  # type: ignore[arg-type]

    monkeypatch.setattr(ent, "_found", counting)
    q = "Compare " + ", ".join(names[:200]) + "."
    with pytest.warns(UserWarning, match=rf"writes \d+ names: only the first {ent.MAX_QUERY_NAMES} are looked up"):
        ent.name_bonus(index, q, 1.0)
    assert 0 < len(looked) <= ent.MAX_QUERY_NAMES
    assert looked == [n for n in ent.query_names(q) if n in looked][: len(looked)]  # the first ones, in order


def test_e2_and_ppr_use_at_most_the_rarest_max_query_concepts(index: G2ConSIndex) -> None:
    snap = index.snapshot
    q = " ".join(c.text for c in index.chunks[:30])[:MAX_QUERY_CHARS]
    with pytest.warns(UserWarning, match=rf"only the {MAX_QUERY_CONCEPTS} rarest are used"):
        got = query_concepts(index, q)
    assert len(got) == MAX_QUERY_CONCEPTS and got == sorted(got)
    from g2cons_plugins.concepts import incidence

    every = incidence([q], snap.derived.vocab, snap.config).indices.tolist()
    df = snap.derived.df
    assert max(int(df[c]) for c in got) <= min(int(df[c]) for c in every if c not in got)


def test_the_replay_host_links_a_long_question_in_bounded_time(tmp_path: Path) -> None:
    """An extraction whose entity has 3,000 words and a 3,000-word question (``g2cons fuse --host replay:`` did not
    return in 120 s): the host links the question's names in well under a second."""
    from g2cons_plugins.hosts import ReplayHost

    idx = G2ConSIndex.build([{"id": i, "text": t} for i, t in CORPUS], embedder="hash")
    words = " ".join(t for _, t in CORPUS).split()
    long_name = " ".join((words * 30)[:3_000])
    rows = [{"id": i, "entities": [long_name, "Marie Curie"], "triples": [[long_name, "is", "Marie Curie"]]}
            for i, _ in CORPUS]  # fmt: skip
    path = tmp_path / "kg.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    host = ReplayHost(str(path))
    host.build(idx, idx.select(kappa=1.0))
    question = " ".join((words * 30)[:3_000]) + " Where was Marie Curie born?"
    t0 = time.process_time()
    got = host.retrieve(question)
    assert time.process_time() - t0 < 1.0
    assert got and {h.chunk_id for h in got} <= {i for i, _ in CORPUS}
