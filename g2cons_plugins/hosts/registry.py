"""Host KGs by name, for ``g2cons eval --host NAME`` and ``g2cons fuse --host NAME``.

The core never imports a host framework. A host distribution registers a factory under the entry-point group
``g2cons_plugins.hosts`` (:data:`HOST_GROUP`; the LlamaIndex adapter registers ``llama-index-ner``, a
``PropertyGraphIndex`` built with spaCy NER co-occurrence triplets and no LLM, and ``llama-index-llm``, the same
index built by ``SimpleLLMPathExtractor`` with an OpenAI(-compatible) LLM); the core registers ``replay-core``,
``graph-walk`` and ``hipporag`` (a replayed extraction, queried by entity names or walked as HippoRAG 2 walks its
graph; a real HippoRAG 2 object). :func:`load_host` also takes ``module:factory``. What a host must offer:
:class:`~g2cons_plugins.hosts.protocol.HostKG`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ..errors import InputError
from .protocol import HostKG

__all__ = ["HOST_GROUP", "available_hosts", "load_host", "option_flag"]

HOST_GROUP = "g2cons_plugins.hosts"
"""The entry-point group host distributions register their factories under."""


TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


def option_flag(name: str, value: bool | str) -> bool:
    """A yes/no host option: a bool, or its word as ``--host-option NAME=true`` gives it (true / false, 1 / 0,
    yes / no, any case); anything else is an error naming ``name``."""
    if isinstance(value, bool):
        return value
    flag = value.strip().lower() if isinstance(value, str) else None
    if flag not in TRUE_WORDS + FALSE_WORDS:
        raise InputError(f"{name} must be true or false, got {value!r}")
    return flag in TRUE_WORDS


def available_hosts() -> list[str]:
    """Names registered under ``g2cons_plugins.hosts`` by installed distributions."""
    return sorted(ep.name for ep in entry_points(group=HOST_GROUP))


def load_host(spec: str, **options: Any) -> HostKG:
    """A host by entry-point name, ``NAME:PATH`` (an entry point given a path, e.g. ``replay:kg.jsonl``: a
    precomputed extraction replayed as the host KG) or ``module:factory``; ``options`` go to the factory."""
    factory, options = _factory(spec, options)
    host = factory(**options)
    if not isinstance(host, HostKG):
        raise InputError(
            f"host {spec!r} does not implement HostKG (name, label, prompt_tokens_per_call, build, retrieve)"
        )
    return host


def _factory(spec: str, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The factory ``spec`` names and the options to call it with (``NAME:PATH`` adds ``path``)."""
    name, sep, arg = spec.partition(":")
    named = _named(name) if sep else []
    if named:
        if not arg:
            raise InputError(f"host {spec!r}: give a path after the colon, e.g. {name}:PATH")
        return _load(named[0], name), {"path": arg, **options}
    if sep:
        try:
            return getattr(importlib.import_module(name), arg), options
        except (ImportError, AttributeError) as e:
            raise InputError(f"cannot load host {spec!r}: {e}") from e
    eps = _named(spec)
    if not eps:
        names = available_hosts()
        raise InputError(
            f"unknown host {spec!r}; installed: {names or 'none'} "
            "(pip install llama-index-retrievers-g2cons for llama-index-ner / llama-index-llm / replay:PATH; "
            "replay-core:PATH and graph-walk:PATH need nothing more)"
        )
    return _load(eps[0], spec), options


def _named(name: str) -> list[EntryPoint]:
    """The entry points registered as ``name``."""
    return [ep for ep in entry_points(group=HOST_GROUP) if ep.name == name]


def _load(ep: EntryPoint, name: str) -> Any:
    """The object an entry point names; an ``InputError`` naming the host when it cannot be imported."""
    try:
        return ep.load()
    except ImportError as e:
        raise InputError(f"host {name!r} is installed but cannot be imported: {e}") from e
