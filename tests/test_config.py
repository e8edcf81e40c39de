"""G2ConSConfig by component: the paper's symbols and the choices at the top, the rest in option objects; the
resolved values of 0.1 unchanged, the mode presets applied in one place, and every old way of naming a parameter
(flat keyword, saved manifest, ``--set KEY=VALUE``) still working beside the new dotted names."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, InputError
from g2cons_plugins.cli import main
from g2cons_plugins.config import (
    FLAT_NAMES,
    GROUPS,
    PRESETS,
    EngineOptions,
    FusionOptions,
    GraphOptions,
    RetrievalOptions,
    SelectionOptions,
    dotted_name,
    parameter_defaults,
)

DATA = Path(__file__).parent / "data"
# to_dict() and the resolved values of five configs, written by the code before the config was split (0.1.x)
BEFORE: dict[str, dict[str, Any]] = json.loads((DATA / "config_resolved_0_1.json").read_text(encoding="utf-8"))
PAPER_SYMBOLS = ("kappa", "lambda_", "beta", "theta_sem", "theta_co", "k", "n_hops")
TEXTS = [
    "Marie Curie was born in Warsaw. Warsaw is the capital of Poland.",
    "Pierre Curie worked in Paris with Marie Curie on radioactivity.",
    "Paris is the capital of France. The Seine flows through Paris.",
    "Radioactivity was studied by Henri Becquerel in Paris.",
]


def _resolved(config: G2ConSConfig) -> dict[str, Any]:
    out = config.to_dict()
    out["fusion_lambda"], out["fusion_spill"] = config.fusion_lambda, config.fusion_spill
    out["unit_index_kind(150000)"] = config.unit_index_kind(150000)
    out["unit_index_kind(500000)"] = config.unit_index_kind(500000)
    out["unit_index_kind(350000,hnsw)"] = config.unit_index_kind(350000, "hnsw")
    return out


CASES = {
    "default": lambda: G2ConSConfig(),
    "paper": lambda: G2ConSConfig(mode="paper"),
    "default_with_paper": lambda: G2ConSConfig().with_(mode="paper"),
    "paper_with_default": lambda: G2ConSConfig(mode="paper").with_(mode="default"),
    "legacy_lambda_only": lambda: G2ConSConfig.from_dict({"lambda_": 0.6, "kappa": 0.8}),
}


# defaults changed on purpose since 0.1 (CHANGELOG): the default fusion rule is novel-first, no longer share
CHANGED_SINCE_0_1: dict[str, dict[str, Any]] = {
    "default": {"fusion": "novel"},
    "legacy_lambda_only": {"fusion": "novel"},
}


# parameters added since 0.1 (CHANGELOG), each after the one it follows in a saved config: the linked head
ADDED_SINCE_0_1: dict[str, dict[str, Any]] = {
    "entity_head_share": {"link_head": 5, "link_pool": 10, "link_weight": 0.2},
}


def _since_0_1(before: dict[str, Any]) -> dict[str, Any]:
    """A 0.1 table with the parameters added since, in their places."""
    out: dict[str, Any] = {}
    for key, value in before.items():
        out[key] = value
        out.update(ADDED_SINCE_0_1.get(key, {}))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_resolved_values_equal_those_of_0_1(case: str) -> None:
    """Same defaults, same resolved values (and the same saved keys, in the same order) as before the split, but for
    the defaults changed on purpose since (:data:`CHANGED_SINCE_0_1`) and the parameters added since
    (:data:`ADDED_SINCE_0_1`)."""
    got = _resolved(CASES[case]())
    expected = _since_0_1(BEFORE[case])
    assert got == {**expected, **CHANGED_SINCE_0_1.get(case, {})}
    assert list(got) == list(expected)


def test_top_level_is_the_paper_symbols_the_choices_and_one_object_per_component() -> None:
    names = [f.name for f in dataclasses.fields(G2ConSConfig)]
    assert len(names) <= 16, names
    assert set(PAPER_SYMBOLS) | {"mode", "strategy", "selector", "fusion"} <= set(names)
    assert set(GROUPS) <= set(names) and "extra" not in names
    grouped = [f.name for cls in GROUPS.values() for f in dataclasses.fields(cls)]
    assert len(grouped) == len(set(grouped))  # one flat name per parameter: flat keywords are unambiguous
    assert sorted(FLAT_NAMES) == sorted(set(names) - set(GROUPS) | set(grouped))
    assert list(parameter_defaults()) == [dotted_name(n) for n in FLAT_NAMES]
    for cls in GROUPS.values():
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_flat_dotted_and_nested_spellings_make_the_same_config() -> None:
    nested = G2ConSConfig(
        graph=GraphOptions(top_n=5, vector_level="chunk"),
        selection=SelectionOptions(kappa_by="chunks"),
        retrieval=RetrievalOptions(lexical_weight=0.0),
        fusion_options=FusionOptions(spill=False),
        engine=EngineOptions(ann_connectivity=32, ann_kind="pq"),
    )
    flat = G2ConSConfig(top_n=5, vector_level="chunk", kappa_by="chunks", lexical_weight=0.0, spill=False,
                        ann_connectivity=32, ann_kind="pq")
    dotted = G2ConSConfig(**{"graph.top_n": 5, "graph.vector_level": "chunk", "selection.kappa_by": "chunks",
                             "retrieval.lexical_weight": 0, "fusion_options.spill": False,
                             "engine.ann_connectivity": 32.0, "engine.ann_kind": "pq"})
    assert nested == flat == dotted
    assert flat.engine.ann_connectivity == 32 and isinstance(dotted.engine.ann_connectivity, int)
    assert flat.value("ann_kind") == flat.value("engine.ann_kind") == "pq"
    # flat and dotted values apply on top of the option object given
    assert G2ConSConfig(engine=EngineOptions(ann_kind="pq"), ann_connectivity=8).engine == EngineOptions(
        ann_kind="pq", ann_connectivity=8
    )
    assert G2ConSConfig.from_dict(flat.to_dict()) == flat
    assert dataclasses.replace(flat, kappa=0.5, ann_kind="hnsw").engine.ann_kind == "hnsw"


def test_with_takes_every_spelling_and_refuses_unknown_names() -> None:
    base = G2ConSConfig()
    assert base.with_(lexical_weight=0.0) == base.with_(**{"retrieval.lexical_weight": 0.0})
    assert base.with_(retrieval=RetrievalOptions(lexical_weight=0.0)).retrieval.lexical_weight == 0.0
    assert base.with_(kappa=0.5).kappa == 0.5 and base.with_(kappa=0.5).graph == base.graph
    with pytest.raises(InputError, match="unknown G2ConSConfig fields"):
        base.with_(ann_m=32)
    with pytest.raises(InputError, match="unknown G2ConSConfig fields"):
        base.with_(**{"graph.ann_kind": "pq"})  # a real name in the wrong group
    with pytest.raises(TypeError, match="unknown parameters"):
        G2ConSConfig(ann_m=32)
    with pytest.raises(InputError, match="engine must be a EngineOptions"):
        G2ConSConfig(engine={"ann_kind": "pq"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"ann_connectivity": 1}, "engine.ann_connectivity"),
        ({"engine.ann_kind": "faiss"}, "engine.ann_kind"),
        ({"top_n": 0}, "graph.top_n"),
        ({"vector_level": "word"}, "graph.vector_level"),
        ({"seed": 1.5}, "selection.seed"),
        ({"lexical_weight": True}, "retrieval.lexical_weight"),
        ({"hybrid_seeds": 1}, "retrieval.hybrid_seeds"),
        ({"host_head": -1}, "fusion_options.host_head"),
        ({"spill": "yes"}, "fusion_options.spill"),
        ({"kappa": 2.0}, "kappa"),
    ],
)
def test_validation_errors_name_the_parameter_by_its_full_name(kw: dict[str, Any], name: str) -> None:
    with pytest.raises(InputError, match=name.replace(".", r"\.")):
        G2ConSConfig(**kw)


def test_paper_mode_is_one_preset_applied_in_one_place() -> None:
    paper = G2ConSConfig(mode="paper", selector="coverage", strategy="bridge", fusion="share")
    for name, value in PRESETS["paper"].forced.items():
        assert paper.value(name) == value  # forced whatever was given
    for name, value in PRESETS["paper"].defaults.items():
        assert paper.value(name) == value  # the Nones resolved
    for name, value in PRESETS["default"].defaults.items():
        assert G2ConSConfig().value(name) == value
    assert G2ConSConfig(mode="paper", lambda_=0.3, vector_level="chunk", theta_sem=0.5).to_dict() == {
        **paper.to_dict(), "lambda_": 0.3, "vector_level": "chunk", "theta_sem": 0.5
    }
    assert (G2ConSConfig().near_pairs, paper.near_pairs) == (True, False)


def test_reading_a_flat_name_still_works_with_a_deprecation_warning() -> None:
    config = G2ConSConfig(ann_kind="pq")
    with pytest.warns(DeprecationWarning, match=r"G2ConSConfig\.engine\.ann_kind"):
        assert config.ann_kind == "pq"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        config.no_such_parameter  # type: ignore[attr-defined]  # noqa: B018


def test_from_dict_reads_a_saved_0_1_config_with_its_extra_key() -> None:
    saved = {**BEFORE["default"], "extra": {"note": "never read"}}
    for key in ("fusion_lambda", "fusion_spill", "unit_index_kind(150000)", "unit_index_kind(500000)",
                "unit_index_kind(350000,hnsw)"):
        saved.pop(key)
    # a saved config keeps the rule it names: 0.1 wrote its default, share fusion (the default is novel-first now)
    assert saved["fusion"] == "share"
    assert G2ConSConfig.from_dict(saved) == G2ConSConfig(fusion="share")
    assert G2ConSConfig.from_dict({**saved, "future_knob": 1}) == G2ConSConfig(fusion="share")  # unknown keys ignored


def _resum(folder: Path) -> None:
    """Rewrite the pointer's manifest checksum after a manifest edit (as a save writes it)."""
    ptr_file = folder / "CURRENT"
    ptr = json.loads(ptr_file.read_text(encoding="utf-8"))
    manifest = folder / ptr["data"] / "manifest.json"
    ptr["manifest_sha256"] = hashlib.sha256(manifest.read_bytes()).hexdigest()
    ptr_file.write_text(json.dumps(ptr, indent=2), encoding="utf-8")


def test_an_index_saved_with_a_0_1_manifest_config_loads(tmp_path: Path) -> None:
    """An index whose manifest holds the config as 0.1.x wrote it (flat, with ``extra``) loads with that config;
    and a save now writes the same flat keys in the same order, less ``extra``."""
    config = G2ConSConfig(theta_co=1, top_n=7, ann_kind="pq", lexical_weight=0.0)
    index = G2ConSIndex.build([{"id": f"c{i}", "text": t} for i, t in enumerate(TEXTS)], embedder="hash",
                              config=config)
    index.save(tmp_path / "g")
    ptr = json.loads((tmp_path / "g" / "CURRENT").read_text(encoding="utf-8"))
    mf = tmp_path / "g" / ptr["data"] / "manifest.json"
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    assert list(manifest["config"]) == [k for k in _since_0_1(BEFORE["default"]) if k in FLAT_NAMES]
    manifest["config"] = {**manifest["config"], "extra": {}}  # as 0.1 saved it
    mf.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    _resum(tmp_path / "g")
    loaded = G2ConSIndex.load(tmp_path / "g", embedder="hash")
    assert loaded.config == config
    assert [x.unit_id for x in loaded.retrieve("Where was Marie Curie born?", beta=200)] == [
        x.unit_id for x in index.retrieve("Where was Marie Curie born?", beta=200)
    ]


def test_cli_set_takes_flat_and_dotted_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    graph = tmp_path / "g"
    args = ["build", str(src), "--graph", str(graph), "--embedder", "hash", "--quiet",
            "--set", "top_n=7", "--set", "engine.ann_connectivity=32", "--set", "retrieval.lexical_weight=0",
            "--set", "theta_co=1"]
    assert main(args) == 0, capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        config = G2ConSIndex.load(graph, embedder="hash").config
    assert (config.graph.top_n, config.engine.ann_connectivity, config.retrieval.lexical_weight) == (7, 32, 0.0)
    assert main(["build", str(src), "--graph", str(tmp_path / "h"), "--embedder", "hash", "--quiet",
                 "--set", "engine.top_n=7"]) == 2
    assert "engine.top_n" in capsys.readouterr().err
