"""Feed ``g2cons select`` output to LightRAG and count the LLM calls its KG build makes. Offline: LightRAG's LLM and
embedding functions are replaced by counting stand-ins (they extract nothing), so only the call count is real.

    pip install lightrag-hku            # no torch needed
    python examples/lightrag_select.py [--input FOLDER] [--kappa 0.8] [--n 40]

Default input: the first --n passages of the bundled MuSiQue excerpt, one .txt file each. With your own folder,
replace ``counting_llm``/``offline_embed`` by your real functions (e.g. ``lightrag.llm.openai.gpt_4o_mini_complete``
and ``openai_embed``) and insert ``core/`` only: the entity extraction calls drop to the kept share.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from g2cons_plugins.cli import main as g2cons
from g2cons_plugins.text import get_tokenizer

DATA = Path(__file__).parent / "data" / "musique_excerpt_corpus.jsonl"


class Cl100k:
    """LightRAG's default tokenizer fetches o200k_base from the network; g2cons ships cl100k_base."""

    def encode(self, s: str) -> list[int]:
        return get_tokenizer().encode(s)

    def decode(self, ids: list[int]) -> str:
        return get_tokenizer().decode(ids)


async def offline_embed(texts: list[str], **kw: Any) -> np.ndarray:
    v = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:32] for t in texts], np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def insert_folder(folder: Path, work: Path) -> int:
    """Insert every .txt/.md file of ``folder`` into a fresh LightRAG; return the number of LLM calls."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc, Tokenizer

    calls: list[str] = []

    async def counting_llm(
        prompt: str, system_prompt: str | None = None, history_messages: Any = None, **kw: Any
    ) -> str:
        calls.append(prompt)
        return ""

    rag = LightRAG(
        working_dir=str(work / f"rag_{folder.name}"),
        workspace=folder.name,
        llm_model_func=counting_llm,
        embedding_func=EmbeddingFunc(embedding_dim=32, func=offline_embed, max_token_size=8192),
        tokenizer=Tokenizer("cl100k_base", Cl100k()),
        entity_extract_max_gleaning=0,  # one extraction call per chunk (the default 1 adds a gleaning call each)
        chunk_token_size=1200,
        chunk_overlap_token_size=100,
    )
    await rag.initialize_storages()
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".txt", ".md"))
    rel = [p.relative_to(folder).as_posix() for p in files]
    await rag.ainsert([p.read_text(encoding="utf-8") for p in files], ids=rel, file_paths=rel)
    await rag.finalize_storages()
    return len(calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", type=Path, default=None, help="folder of .txt/.md files (default: MuSiQue excerpt)")
    ap.add_argument("--kappa", type=float, default=0.8)
    ap.add_argument("--n", type=int, default=40, help="passages of the bundled excerpt to use")
    ap.add_argument("--embedder", default="hash", help="g2cons embedder: hash (fast) | wordllama | minilm")
    args = ap.parse_args()
    import logging

    logging.getLogger("lightrag").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="g2cons-lightrag-"))
    src = args.input
    if src is None:
        src = work / "input"
        src.mkdir()
        for i, line in enumerate(DATA.read_text(encoding="utf-8").splitlines()[: args.n]):
            r = json.loads(line)
            (src / f"p{i:03d}.txt").write_text(f"{r['title']}\n{r['text']}", encoding="utf-8")
    core = work / "core"
    rc = g2cons(["select", str(src), "--kappa", str(args.kappa), "--out", str(core), "--embedder", args.embedder])
    if rc:
        raise SystemExit(rc)
    report = json.loads((work / "core.selection_report.json").read_text(encoding="utf-8"))
    full_calls = asyncio.run(insert_folder(src, work))
    core_calls = asyncio.run(insert_folder(core, work))
    n = report["n_kept"] + report["n_dropped"]
    print(f"\nLightRAG LLM calls: all input {full_calls}, g2cons core {core_calls} ({core_calls / full_calls:.0%}); ")
    print(f"g2cons kept {report['n_kept']}/{n} chunks, {report['kept_share_tokens']:.0%} of tokens; work dir {work}")


if __name__ == "__main__":
    main()
