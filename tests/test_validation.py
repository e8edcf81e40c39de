"""The parameter and type matrix (issue 10, classes 5, 9): every bad value is refused with an InputError that
names the parameter; bools and strings are not numbers; NaN and inf are refused."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, InputError, fuse
from g2cons_plugins.fusion import HostItem
from g2cons_plugins.retrieval import RetrievedItem

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(theta_co=2))


CONFIG_CASES = [
    ("kappa", "0.5"),
    ("kappa", 1.5),
    ("kappa", NAN),
    ("kappa", True),
    ("lambda_", "0.4"),
    ("lambda_", -0.1),
    ("lambda_", INF),
    ("beta", "abc"),
    ("beta", 1.5),
    ("beta", True),
    ("beta", 0),
    ("beta", NAN),
    ("beta", INF),
    ("k", 0),
    ("k", "25"),
    ("n_hops", -1),
    ("theta_co", 0),
    ("theta_sem", 2.0),
    ("theta_sem", "0.6"),
    ("top_n", 2.5),
    ("seed", None),
    ("selector", "best"),
    ("strategy", "magic"),
    ("kappa_by", "words"),
    ("spill", "yes"),
    ("unit_tokens", 4),
    ("chunk_score", "median"),
    ("stop_words", "klingon"),
]


@pytest.mark.parametrize(("field", "value"), CONFIG_CASES)
def test_config_names_the_bad_field(field: str, value: object) -> None:
    with pytest.raises(InputError, match=field.rstrip("_")):
        G2ConSConfig(**{field: value})


def test_config_accepts_integral_floats_and_numpy_numbers() -> None:
    cfg = G2ConSConfig(beta=4000.0, kappa=np.float32(0.5), k=np.int64(10))
    assert (cfg.beta, cfg.k) == (4000, 10) and isinstance(cfg.beta, int) and math.isclose(cfg.kappa, 0.5)


@pytest.mark.parametrize("beta", ["abc", 1.5, True, 0, -3, NAN, INF, None.__class__])
def test_retrieve_beta(index: G2ConSIndex, beta: object) -> None:
    with pytest.raises(InputError, match="beta"):
        index.retrieve("Where was Marie Curie born?", beta=beta)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"beta": "abc"}, "beta"),
        ({"beta": NAN}, "beta"),
        ({"lambda_": "0.4"}, "lambda_"),
        ({"lambda_": 1.5}, "lambda_"),
        ({"spill": "no"}, "spill"),
    ],
)
def test_fuse_parameters(index: G2ConSIndex, kw: dict[str, object], name: str) -> None:
    with pytest.raises(InputError, match=name):
        index.fuse(["Warsaw is in Poland."], "Where was Marie Curie born?", **kw)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=name):
        fuse(["Warsaw is in Poland."], [], **{"beta": 100, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"kappa": "0.5"}, "kappa"),
        ({"kappa": -0.2}, "kappa"),
        ({"price_per_mtok": -1.0}, "price_per_mtok"),
        ({"price_per_mtok": NAN}, "price_per_mtok"),
        ({"prompt_tokens_per_call": -500}, "prompt_tokens_per_call"),
        ({"prompt_tokens_per_call": 1.5}, "prompt_tokens_per_call"),
        ({"selector": "best"}, "selector"),
        ({"kappa_by": "words"}, "kappa_by"),
    ],
)
def test_select_parameters(index: G2ConSIndex, kw: dict[str, object], name: str) -> None:
    with pytest.raises(InputError, match=name):
        index.select(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "vec",
    [np.full(64, np.nan), np.zeros(64), np.ones(3), np.array([np.inf] + [0.1] * 63), "not a vector"],
)
def test_query_vector(index: G2ConSIndex, vec: object) -> None:
    with pytest.raises(InputError, match="query_vector"):
        index.retrieve("q", query_vector=vec)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "what"),
    [
        ({"text": 42}, "text must be str"),
        ({"text": "ok", "score": "high"}, "score"),
        ({"chunk_id": 1.5, "text": "ok"}, "chunk_id"),
        ({"text": "ok", "metadata": "x"}, "metadata"),
        ({"text": "bad \ud800"}, "surrogate"),
        (HostItem(text=b"bytes"), "text must be str"),  # type: ignore[arg-type]
    ],
)
def test_host_items_are_validated(item: object, what: str) -> None:
    with pytest.raises(InputError, match=what):
        fuse(["fine"], [], beta=100) and fuse(["fine", item], [], beta=100)


def test_fabricated_concept_items_are_checked() -> None:
    with pytest.raises(InputError, match="n_tokens"):
        fuse([], [RetrievedItem("u", "c", "text", 0.5, -1)], beta=100)
    with pytest.raises(InputError, match="RetrievedItem"):
        fuse([], [{"unit_id": "u"}], beta=100)  # type: ignore[list-item]


def test_bad_config_object(corpus: list[dict[str, str]]) -> None:
    with pytest.raises(InputError, match="config"):
        G2ConSIndex.build(corpus, embedder="hash", config={"kappa": 0.5})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- adapters
SELECTOR_CASES = [
    ("kappa", "0.5"),
    ("kappa", True),
    ("kappa", False),
    ("kappa", NAN),
    ("kappa", 1.5),
    ("price_per_mtok", "0.15"),
    ("price_per_mtok", True),
    ("price_per_mtok", INF),
    ("prompt_tokens_per_call", "100"),
    ("prompt_tokens_per_call", True),
    ("prompt_tokens_per_call", 2.5),
]


def _selectors() -> list[type]:
    out = []
    for mod in ("llama_index.retrievers.g2cons", "langchain_g2cons"):
        with contextlib.suppress(ImportError):
            out.append(__import__(mod, fromlist=["CoreChunkSelector"]).CoreChunkSelector)
    if not out:
        pytest.skip("no adapter installed")
    return out


@pytest.mark.parametrize(("name", "value"), SELECTOR_CASES)
def test_adapter_selectors_apply_the_core_number_rule(name: str, value: object) -> None:
    """Both adapters' selectors refuse what the core refuses (no lax coercion of "0.5" or True), with the core's
    own message for the parameter."""
    from g2cons_plugins import errors as validate

    rule = {"kappa": validate.unit_interval, "price_per_mtok": validate.non_negative_float}.get(
        name, validate.non_negative_int
    )
    with pytest.raises(InputError) as core_err:
        rule(name, value)
    for cls in _selectors():
        with pytest.raises(ValueError) as err:
            cls(embedder="hash", **{name: value})
        assert str(core_err.value) in str(err.value), cls.__module__


def test_adapter_selectors_keep_valid_numbers_in_the_core_types() -> None:
    for cls in _selectors():
        sel = cls(embedder="hash", kappa=np.float64(0.5), price_per_mtok=1, prompt_tokens_per_call=np.int64(7))
        assert (sel.kappa, sel.price_per_mtok, sel.prompt_tokens_per_call) == (0.5, 1.0, 7)
        assert type(sel.kappa) is float and type(sel.price_per_mtok) is float
        assert type(sel.prompt_tokens_per_call) is int
