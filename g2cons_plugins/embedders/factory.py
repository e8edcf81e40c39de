""":func:`get_embedder`: an embedder from a spec ("wordllama", "minilm", "hash:<dim>", ...), from the ``name`` of any
built-in embedder (so persisted settings round-trip), or from an :class:`~.base.Embedder` or a plain callable."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError
from .base import Embedder
from .callable import CallableEmbedder
from .hash import HashEmbedder
from .minilm import MiniLMEmbedder
from .multilingual import MultilingualE5Embedder
from .openai import OpenAIEmbedder
from .wordllama import WordLlamaEmbedder

EMBEDDER_NAMES = ("wordllama", "minilm", "multilingual", "openai", "openai:<model>", "hash", "hash:<dim>")

_NAME_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], dict[str, Any]]]] = [
    (
        re.compile(r"^wordllama-(?P<config>.+)-(?P<dim>\d+)$"),
        lambda m: {"config": m["config"], "dim": int(m["dim"])},
    ),
    (re.compile(r"^minilm-l6-v2-int8(?:-len(?P<len>\d+))?$"), lambda m: {"max_length": int(m["len"] or 256)}),
    (
        re.compile(r"^openai-(?P<model>.+?)(?:-dim(?P<dim>\d+))?$"),
        lambda m: {"model": m["model"], "dim": m["dim"]},
    ),
    (re.compile(r"^hash-(?P<dim>\d+)$"), lambda m: {"dim": int(m["dim"])}),
]


def get_embedder(spec: str | Embedder | Callable[[list[str]], Any], **kw: Any) -> Embedder:
    """Build an embedder from a spec: "wordllama", "minilm", "openai", "openai:<model>", "hash", "hash:<dim>".

    An object satisfying :class:`Embedder` is returned as is; a plain callable is wrapped in
    :class:`CallableEmbedder` (pass ``dim=`` and ``name=``). The ``name`` of any built-in embedder is accepted
    too (e.g. "wordllama-l2_supercat-256"), so persisted settings round-trip. ``kw`` goes to the constructor.
    """
    if isinstance(spec, Embedder):
        return spec
    if not isinstance(spec, str):
        if callable(spec):
            if "dim" not in kw or "name" not in kw:
                raise InputError("get_embedder(callable) needs dim= and name= keyword arguments")
            return CallableEmbedder(spec, **kw)
        raise InputError(f"embedder spec must be a name, an Embedder or a callable, got {type(spec).__name__}")
    s = spec.strip()
    base, _, arg = s.partition(":")
    base = base.lower()
    if base == "wordllama" and not arg:
        return WordLlamaEmbedder(**kw)
    if base == "minilm" and not arg:
        return MiniLMEmbedder(**kw)
    if (base == "multilingual" and not arg) or s == MultilingualE5Embedder.NAME:
        return MultilingualE5Embedder(**kw)
    if base == "openai":
        return OpenAIEmbedder(model=arg, **kw) if arg else OpenAIEmbedder(**kw)
    if base == "hash":
        if not arg:
            return HashEmbedder(**kw)
        if not arg.isdigit():
            raise InputError(f"embedder spec {spec!r}: 'hash:<dim>' needs an integer dimension")
        return HashEmbedder(dim=int(arg), **kw)
    if not arg:
        for pattern, to_kwargs in _NAME_PATTERNS:
            m = pattern.match(s)
            if m is None:
                continue
            params = {k: v for k, v in to_kwargs(m).items() if v is not None}
            if params.get("dim") is not None:
                params["dim"] = int(params["dim"])
            params.update(kw)
            if s.startswith("wordllama-"):
                return WordLlamaEmbedder(**params)
            if s.startswith("minilm-"):
                return MiniLMEmbedder(**params)
            if s.startswith("openai-"):
                return OpenAIEmbedder(**params)
            return HashEmbedder(**params)
    raise InputError(f"unknown embedder {spec!r}; valid names: {', '.join(EMBEDDER_NAMES)}")


def get_embedder_in_threads(spec: str, threads: int) -> Embedder:
    """:func:`get_embedder` for a worker that owns ``threads`` CPUs (a Ray actor's ``num_cpus``): an embedder with
    its own thread pool (MiniLM's onnxruntime session, which ignores ``OMP_NUM_THREADS`` and otherwise starts one
    thread per core of the machine) is limited to ``threads``, so workers side by side do not each claim every
    core. Others are built as :func:`get_embedder` builds them (numpy follows ``OMP_NUM_THREADS``, which Ray sets
    to the actor's CPUs). The vectors do not depend on the thread count."""
    emb = get_embedder(spec)
    if getattr(emb, "threads", False) is None:  # has a thread setting, left to the machine
        emb = get_embedder(spec, threads=int(threads))
    return emb
