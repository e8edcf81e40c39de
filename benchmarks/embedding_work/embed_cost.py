"""What a build embeds per indexed retrieval unit, with Eq. 1 on embedded sentences (``sentence``: sentences +
units) and with the concept vectors from the unit vectors (``unit``, the default mode: units only): texts, tokens
(what a paid embedding API bills) and seconds of the raw embedder (no cache). The seconds are timed on random
samples, units and sentences alternating round by round so that a busy machine slows both alike; the median
seconds per text of each kind is scaled to the corpus.

    python benchmarks/embedding_work/embed_cost.py --corpus C1 [C2 ...] --embedder minilm --cache-dir /tmp/dp/cache
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from g2cons_plugins import G2ConSConfig
from g2cons_plugins.build import store
from g2cons_plugins.chunks import make_chunks
from g2cons_plugins.embedders import CachedEmbedder, get_embedder
from g2cons_plugins.eval.evaluation import read_jsonl
from g2cons_plugins.text import count_tokens_batch, get_tokenizer


def seconds_per_text(embedder: str, units: list[str], sentences: list[str], rounds: int, batch: int) -> list[float]:
    """Median seconds per unit and per sentence over ``rounds`` alternating samples of ``batch`` texts each."""
    emb = get_embedder(embedder)
    emb.embed(["warm up"])
    rng = np.random.default_rng(0)
    per: list[list[float]] = [[], []]
    for _ in range(rounds):
        for k, texts in enumerate((units, sentences)):
            pick = rng.choice(len(texts), size=min(batch, len(texts)), replace=False).tolist()
            t0 = time.perf_counter()
            emb.embed([texts[i] for i in pick])
            per[k].append((time.perf_counter() - t0) / len(pick))
    return [statistics.median(p) for p in per]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    print("command: python " + " ".join(sys.argv) + "\n")
    tok = get_tokenizer(None)
    cached = CachedEmbedder(get_embedder(a.embedder), cache_dir=a.cache_dir)
    head = [
        "corpus",
        "units",
        "sentences",
        "texts/unit sentence",
        "texts/unit unit",
        "tokens/unit-token sentence",
        "tokens/unit-token unit",
        "s/unit",
        "s/sentence",
        "embed s sentence",
        "embed s unit",
        "unit / sentence",
    ]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for path in a.corpus:
        st = store(make_chunks(read_jsonl(path)), cached, tok, G2ConSConfig(vector_level="sentence"), False)
        units = [u.text for u in st.units]
        n_u, n_s = len(units), len(st.sentences)
        tok_u, tok_s = int(st.unit_tokens.sum()), int(sum(count_tokens_batch(tok, st.sentences)))
        su, ss = seconds_per_text(a.embedder, units, st.sentences, a.rounds, a.batch)
        both, only = su * n_u + ss * n_s, su * n_u
        cells = [
            path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1].replace("_corpus.jsonl", ""),
            f"{n_u:,}",
            f"{n_s:,}",
            f"{(n_u + n_s) / n_u:.2f}",
            "1.00",
            f"{(tok_u + tok_s) / tok_u:.2f}",
            "1.00",
            f"{su:.4f}",
            f"{ss:.4f}",
            f"{both:.0f}",
            f"{only:.0f}",
            f"{only / both:.2f}",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
