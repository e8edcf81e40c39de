#!/usr/bin/env bash
# The graph-walk host (HippoRAG 2's graph search over the replayed gpt-3.5 extraction, no LLM at query time): the
# exact commands behind benchmarks/dual_path/results/graph_walk_*. MuSiQue train100 (1,890 passages, 100 questions),
# minilm. 1. g2cons eval with the host over the full extraction (kappa 1.0) and over the default selection's half
# (kappa 0.5): host-KG alone, concept path and fused rows, host latency. 2. the host alone for HippoRAG 2's defaults
# and one-parameter changes of them, and the PageRank solver (power iteration) against igraph's PRPACK (HippoRAG 2's)
# where python-igraph is installed. About 10 min on 2 cores with a warm embedding cache (benchmarks/cache); the first
# run embeds the 17,032 facts and 16,227 entity names once (about 6 min).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
mkdir -p $R
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm \
  --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 1.0,0.5 --host-kappa 1.0 \
  --cache-dir benchmarks/cache --quiet --out $R/graph_walk_musique_train100.json > $R/graph_walk_musique_train100.md
python benchmarks/dual_path/graph_walk_sweep.py $M --kg $KG --model gpt-3.5-turbo-1106 --embedder minilm \
  --cache-dir benchmarks/cache --out $R/graph_walk_sweep_musique_train100
