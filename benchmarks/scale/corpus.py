"""Seeded synthetic corpora of any size, recombined from the real sentences of ``../shared/data``.

Each passage is 3-7 distinct sentences drawn (with a seeded RNG) from the sentence pool of the English corpora
(MuSiQue, HotpotQA, 2Wiki); ids are ``g00000000``, ``g00000001``, ... The generator is a stream with a prefix
property: the first ``n`` passages for a seed are the same whatever the total, so ``--n 10000`` followed by the
next 100 passages is a realistic "add 1%".

    python benchmarks/scale/corpus.py --n 100000 --out /tmp/corpus_100k.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path


def _find_data() -> Path:
    """``$G2CONS_DATA``, else the first ``shared/data`` beside a parent of this file (the repo's sibling)."""
    if os.environ.get("G2CONS_DATA"):
        return Path(os.environ["G2CONS_DATA"])
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return here.parents[3] / "shared" / "data"


DATA = _find_data()
SOURCES = (
    "musique/ketrag500_corpus.jsonl",
    "musique/hipporag_train100_corpus.jsonl",
    "hotpotqa/hipporag_train100_corpus.jsonl",
    "2wikimultihopqa/ketrag500_corpus.jsonl",
)
MIN_SENTENCES, MAX_SENTENCES = 3, 7


@lru_cache(maxsize=1)
def sentence_pool(data: Path = DATA) -> tuple[str, ...]:
    """Distinct sentences (Punkt split, first-seen order) of the English corpora under ``data``."""
    from g2cons_plugins.text import split_sentences

    seen: dict[str, None] = {}
    for rel in SOURCES:
        with open(data / rel, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    for s in split_sentences(json.loads(line)["text"]):
                        if len(s) >= 20:  # skip fragments ("Yes.", list bullets)
                            seen.setdefault(s, None)
    if not seen:
        raise FileNotFoundError(f"no sentences found under {data}")
    return tuple(seen)


def sentence_picks(n: int, seed: int = 0, pool_size: int | None = None) -> Iterator[list[int]]:
    """Positions in :func:`sentence_pool` of the sentences of passages ``0 .. n-1`` (the stream's skeleton)."""
    size = len(sentence_pool()) if pool_size is None else pool_size
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.sample(range(size), rng.randint(MIN_SENTENCES, MAX_SENTENCES))


def passages(n: int, seed: int = 0, start: int = 0) -> Iterator[dict[str, str]]:
    """Passages ``start .. start+n-1`` of the seeded stream, as ``{"id", "text"}`` dicts."""
    pool = sentence_pool()
    for i, picks in enumerate(sentence_picks(start + n, seed, len(pool))):
        if i >= start:
            yield {"id": f"g{i:08d}", "text": " ".join(pool[j] for j in picks)}


def write_jsonl(path: Path, n: int, seed: int = 0, start: int = 0) -> int:
    """Stream passages to ``path`` (written to a temporary file, then renamed); returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for row in passages(n, seed, start):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, required=True, help="number of passages")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="index of the first passage (to write an 'add' batch)")
    ap.add_argument("--out", type=Path, help="JSONL file (default: stdout)")
    args = ap.parse_args()
    if args.out is None:
        for row in passages(args.n, args.seed, args.start):
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        print(f"{write_jsonl(args.out, args.n, args.seed, args.start)} passages -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
