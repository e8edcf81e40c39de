"""Splitting and token counting on every core of one machine, in worker processes.

Sentence splitting is Punkt, pure Python: threads cannot spread it (the GIL), processes can. A
:class:`ProcessEngine` keeps a pool of worker processes (``concurrent.futures.ProcessPoolExecutor``, started with
``forkserver`` where the platform has it, else ``spawn``: never ``fork``, which is unsafe once the build's threads
run) and sends them the chunk texts in parts of ``batch_size``:

- **split**: each worker runs :func:`g2cons_plugins.chunks.split_units` on its part and sends back the units as
  flat columns (units per chunk, tokens per unit, sentences per unit, the sentences, and a text only where it is
  neither the chunk's own text nor its sentences joined by a space); this process rebuilds the
  :class:`~g2cons_plugins.chunks.Unit` objects (ids and parent ids from the chunk ids it kept) in input order, equal
  to a local split. Workers also count each chunk's own tokens (the unit's count when the chunk is one unit), so a
  later :meth:`ProcessEngine.count` of those texts costs nothing here.
- **submit_split**: the same, asynchronously: a ``Future`` of the units, so a streaming build splits the next batch
  in the workers while this process embeds the current one.
- **count**: token counts, from what the splits already counted, else in the workers (or here for a few texts).
- **embed**: here, in this process (wordllama and onnxruntime already use every core), one model per spec.

A worker that dies (killed by the system, e.g. out of memory) fails the call with a ``RuntimeError`` that says so,
never a hang; the next call starts new workers. :meth:`ProcessEngine.close` (or ``with``) stops them.

The forkserver is one per Python process: the engine sets its preload list (:data:`FORKSERVER_PRELOAD`) before it
starts, so NLTK and tiktoken are imported once there rather than in each worker. On 2 cores shared with other work,
the engine takes the split off the main process but does not shorten a build (``docs/scale.md``, "Splitting on
every core"): it pays where cores are idle.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from ..build import embed_texts
from ..chunks import Chunk, Unit, split_units, unit_id
from ..embedders import Embedder, get_embedder
from ..errors import InputError
from ..text import count_tokens_batch, get_tokenizer

__all__ = ["ProcessEngine", "usable_cpus", "DEFAULT_PART"]

#: Chunks (or texts) per task sent to one worker: large enough that a task's overhead (~0.2 ms) is small against its
#: work (~30-80 ms of Punkt), small enough that the parts of one streaming batch spread over the workers.
DEFAULT_PART = 256
#: Texts below which :meth:`ProcessEngine.count` counts here (threads over tiktoken) rather than in the workers.
COUNT_HERE_BELOW = 4096
#: Splits whose chunk token counts are kept for :meth:`ProcessEngine.count` (the batch being embedded, the one
#: being split ahead, one spare): older ones are dropped, so the memo never holds more than a few batches.
MEMO_SPLITS = 3
#: Modules the forkserver imports once, before it forks each worker (the tokenizer's files load once); a module
#: that is not installed is skipped. ``__main__`` is Python's own default (only used before the server starts).
FORKSERVER_PRELOAD = ("__main__", "g2cons_plugins.engine.process_engine", "punkt", "tiktoken")

# One split part, as a worker sends it back: units per chunk, chunk tokens, tokens per unit, sentences per unit,
# text kinds per unit (0: the chunk's text, 1: its sentences joined by " ", 2: the next of the explicit texts),
# the sentences, the explicit texts.
_Packed = tuple[bytes, bytes, bytes, bytes, bytes, list[str], list[str]]


def usable_cpus() -> int:
    """Processors this process may run on (its CPU affinity where the platform tells it, else the CPU count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------------------------------------ worker side


def _init_worker() -> None:
    """Workers leave Ctrl-C to the parent (which stops them), rather than each printing a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _split_part(texts: list[str], tokenizer_name: str, unit_tokens: int | None) -> _Packed:
    """The units of each text (a chunk), packed as flat columns (see :data:`_Packed`)."""
    tok = get_tokenizer(tokenizer_name)
    per_chunk, chunk_tokens, unit_toks, sent_counts = array("q"), array("q"), array("q"), array("q")
    kinds = bytearray()
    sentences: list[str] = []
    texts_out: list[str] = []
    for text in texts:
        units = split_units(Chunk(id="_", text=text), tok, unit_tokens)
        per_chunk.append(len(units))
        for u in units:
            unit_toks.append(u.n_tokens)
            sent_counts.append(len(u.sentences))
            sentences.extend(u.sentences)
            if u.text == text:
                kinds.append(0)
            elif u.text == " ".join(u.sentences):
                kinds.append(1)
            else:
                kinds.append(2)
                texts_out.append(u.text)
        own = len(units) == 1 and units[0].text is text
        chunk_tokens.append(units[0].n_tokens if own else len(tok.encode(text)))
    cols = (per_chunk, chunk_tokens, unit_toks, sent_counts)
    return (*(a.tobytes() for a in cols), bytes(kinds), sentences, texts_out)  # type: ignore[return-value]


def _count_part(texts: list[str], tokenizer_name: str) -> bytes:
    return array("q", count_tokens_batch(get_tokenizer(tokenizer_name), texts)).tobytes()


# ------------------------------------------------------------------------------------------------ this side


def _ints(raw: bytes) -> list[int]:
    a = array("q")
    a.frombytes(raw)
    return a.tolist()


def _unpack(chunks: Sequence[Chunk], packed: _Packed) -> tuple[list[list[Unit]], list[int]]:
    """The units of ``chunks`` (equal to :func:`split_units`'s) and their own token counts, from a worker's part."""
    per_chunk, chunk_tokens, unit_toks, sent_counts = (_ints(b) for b in packed[:4])
    kinds, sentences, texts = packed[4], packed[5], iter(packed[6])
    if len(per_chunk) != len(chunks):
        raise RuntimeError(f"a split worker returned units for {len(per_chunk)} of {len(chunks)} chunks")
    out: list[list[Unit]] = []
    j = s = 0
    for ch, n in zip(chunks, per_chunk, strict=True):
        units = []
        for i in range(n):
            sents = tuple(sentences[s : s + sent_counts[j]])
            s += sent_counts[j]
            kind = kinds[j]
            text = ch.text if kind == 0 else " ".join(sents) if kind == 1 else next(texts)
            units.append(Unit(unit_id(ch.id, i, n), ch.id, text, unit_toks[j], sents))
            j += 1
        out.append(units)
    return out, chunk_tokens


def _gathered(
    parts: list[Future[Any]], combine: Callable[[list[Any]], Any], on_error: Callable[[BaseException], BaseException]
) -> Future[Any]:
    """One future for all ``parts``: ``combine(their results in order)``, or the first failure (``on_error(exc)``;
    the parts not yet started are cancelled)."""
    out: Future[Any] = Future()
    left = [len(parts)]
    lock = threading.Lock()

    def done(part: Future[Any]) -> None:
        exc = None if part.cancelled() else part.exception()
        with lock:
            if out.done():
                return
            left[0] -= 1
            if exc is None and left[0] > 0:
                return
            if exc is not None:
                out.set_exception(on_error(exc))
        if exc is not None:
            for p in parts:  # outside the lock: a cancelled part calls this function at once
                p.cancel()
            return
        try:
            out.set_result(combine([p.result() for p in parts]))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            out.set_exception(e)

    if not parts:
        out.set_result(combine([]))
    for p in parts:
        p.add_done_callback(done)
    return out


class ProcessEngine:
    """Splits and counts in ``num_workers`` worker processes (default: :func:`usable_cpus`), ``batch_size`` chunks
    per task; embeds here. Results equal :class:`~g2cons_plugins.engine.build_engines.LocalEngine`'s, in input
    order. ``start_method``: ``"forkserver"`` (default where available) or ``"spawn"``. ``embedder``: the object
    :meth:`embed` uses for its own name (the build passes its cached embedder); other names are built with
    :func:`~g2cons_plugins.embedders.get_embedder`. Workers start on the first call and stay until :meth:`close`
    (a ``with`` block closes too)."""

    name = "processes"

    def __init__(
        self,
        num_workers: int | None = None,
        batch_size: int = DEFAULT_PART,
        start_method: str | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        if num_workers is not None and int(num_workers) < 1:
            raise InputError(f"num_workers must be >= 1, got {num_workers}")
        if int(batch_size) < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        methods = multiprocessing.get_all_start_methods()
        start_method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        if start_method not in ("forkserver", "spawn") or start_method not in methods:
            raise InputError(f"start_method must be 'forkserver' or 'spawn' (available here), got {start_method!r}")
        self.num_workers = usable_cpus() if num_workers is None else int(num_workers)
        self.batch_size = int(batch_size)
        self.start_method = start_method
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._memo: deque[tuple[str, dict[str, int]]] = deque(maxlen=MEMO_SPLITS)
        self._embedders: dict[str, Embedder] = {} if embedder is None else {embedder.name: embedder}

    # -------------------------------------------------------------- pool
    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                ctx = multiprocessing.get_context(self.start_method)
                if self.start_method == "forkserver":  # workers fork from a server that imported these once
                    ctx.set_forkserver_preload(list(FORKSERVER_PRELOAD))
                self._pool = ProcessPoolExecutor(self.num_workers, mp_context=ctx, initializer=_init_worker)
            return self._pool

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """``fn(*args)`` in a worker; a pool found broken (a worker died in an earlier call) is replaced once."""
        try:
            return self._executor().submit(fn, *args)
        except BrokenProcessPool:
            self._drop(self._pool)
            return self._executor().submit(fn, *args)

    def _drop(self, pool: ProcessPoolExecutor | None) -> None:
        with self._lock:
            if pool is not None and self._pool is pool:
                self._pool = None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _failure(self, pool: ProcessPoolExecutor) -> Callable[[BaseException], BaseException]:
        def wrap(exc: BaseException) -> BaseException:
            if not isinstance(exc, BrokenProcessPool):
                return exc  # the worker's own exception (e.g. an InputError), as a local run raises it
            self._drop(pool)
            err = RuntimeError(
                f"a worker process of {self!r} died while splitting or counting (killed by the system, e.g. out "
                f"of memory, or crashed): {exc}. The next call starts new workers; fewer workers or a smaller "
                "batch_size need less memory"
            )
            err.__cause__ = exc
            return err

        return wrap

    def close(self) -> None:
        """Stop the workers (waits for them; pending parts are cancelled). The engine can be used again after."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._memo.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ProcessEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- stages
    def _check_tokenizer(self, tokenizer_name: str) -> None:
        if not isinstance(tokenizer_name, str):
            raise InputError(f"tokenizer_name must be a tiktoken encoding name, got {type(tokenizer_name).__name__}")
        try:
            get_tokenizer(tokenizer_name)
        except Exception as e:  # noqa: BLE001 - any failure here would fail in every worker
            raise InputError(
                f"engine 'processes' rebuilds the tokenizer in its workers from its name; {tokenizer_name!r} is "
                f"not one get_tokenizer knows ({e})"
            ) from None

    def submit_split(
        self, chunks: Sequence[Chunk], tokenizer_name: str, unit_tokens: int | None
    ) -> Future[list[list[Unit]]]:
        """A future of the units of each chunk (as :meth:`split`), split in the workers while the caller goes on."""
        self._check_tokenizer(tokenizer_name)
        chunks = list(chunks)
        parts = [chunks[a : a + self.batch_size] for a in range(0, len(chunks), self.batch_size)]
        pool = self._executor()
        futures = [self._submit(_split_part, [c.text for c in p], tokenizer_name, unit_tokens) for p in parts]

        def combine(results: list[_Packed]) -> list[list[Unit]]:
            out: list[list[Unit]] = []
            memo: dict[str, int] = {}
            for part, packed in zip(parts, results, strict=True):
                units, own = _unpack(part, packed)
                out.extend(units)
                memo.update(zip((c.text for c in part), own, strict=True))
            with self._lock:
                self._memo.append((tokenizer_name, memo))
            return out

        return _gathered(futures, combine, self._failure(pool))

    def split(self, chunks: Sequence[Chunk], tokenizer_name: str, unit_tokens: int | None) -> list[list[Unit]]:
        """Units of each chunk (:func:`g2cons_plugins.chunks.split_units`), one list per chunk, split in the workers."""
        return self.submit_split(chunks, tokenizer_name, unit_tokens).result()

    def count(self, texts: Sequence[str], tokenizer_name: str) -> list[int]:
        """Token count of each text: from the recent splits' own counts of their chunks, else counted in the
        workers (here when fewer than :data:`COUNT_HERE_BELOW` texts are left)."""
        self._check_tokenizer(tokenizer_name)
        texts = list(texts)
        with self._lock:
            memos = [m for name, m in reversed(self._memo) if name == tokenizer_name]
        out: list[int] = [-1] * len(texts)
        todo: list[int] = []
        for i, t in enumerate(texts):
            for m in memos:
                n = m.get(t)
                if n is not None:
                    out[i] = n
                    break
            else:
                todo.append(i)
        if todo:
            for i, n in zip(todo, self._count_todo([texts[i] for i in todo], tokenizer_name), strict=True):
                out[i] = n
        return out

    def _count_todo(self, texts: list[str], tokenizer_name: str) -> list[int]:
        if len(texts) < COUNT_HERE_BELOW:
            return count_tokens_batch(get_tokenizer(tokenizer_name), texts)
        pool = self._executor()
        parts = [texts[a : a + 4 * self.batch_size] for a in range(0, len(texts), 4 * self.batch_size)]
        futures = [self._submit(_count_part, p, tokenizer_name) for p in parts]
        job = _gathered(futures, lambda got: [n for raw in got for n in _ints(raw)], self._failure(pool))
        result: list[int] = job.result()
        return result

    def embed(self, texts: Sequence[str], embedder_spec: str) -> np.ndarray:
        """``len(texts) x dim`` float32 vectors, embedded here as a local build does
        (:func:`g2cons_plugins.build.embed_texts`) by the embedder ``embedder_spec`` names: the one given to the
        engine, else one built once per name."""
        emb = self._embedders.get(embedder_spec)
        if emb is None:
            emb = self._embedders[embedder_spec] = get_embedder(embedder_spec)
        return embed_texts(emb, list(texts), "texts", False)

    def __repr__(self) -> str:
        return (
            f"ProcessEngine(num_workers={self.num_workers}, batch_size={self.batch_size}, "
            f"start_method={self.start_method!r})"
        )
