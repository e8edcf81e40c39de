#!/usr/bin/env bash
# The LlamaIndex GraphWalkRetriever as an app runs it: the replayed gpt-3.5 extraction of the kept chunks in a real
# PropertyGraphIndex (CoreChunkSelector in front of the extractor, so the store holds the kept chunks only), walked
# by the adapter's GraphWalkRetriever (--host replay:KG --host-option retriever=graph-walk). Three runs, MuSiQue
# train100, minilm, kappa 1.0 and 0.5: the dropped chunks given as extra_nodes with link_texts automatic (the
# default), the same with link_texts=false (HippoRAG 2's graph: a dropped chunk has its dense prior only), and the
# store's chunks only (walk_dropped=false: what the retriever walked before extra_nodes). About 6 min on 2 cores
# with a warm embedding cache (benchmarks/cache). Results: benchmarks/dual_path/results/graph_walk_llamaindex_*.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
H="--host replay:$KG --host-option model=gpt-3.5-turbo-1106 --host-option retriever=graph-walk"
mkdir -p $R
# this script's own earlier results (committed; g2cons eval never overwrites a file it cannot prove it wrote)
rm -f $R/graph_walk_llamaindex_musique_train100*.json $R/graph_walk_llamaindex_musique_train100*.md
run() {  # NAME KAPPAS [--host-option ...]
  local name=$1 kappas=$2
  shift 2
  g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm $H "$@" \
    --host-kappas "$kappas" --host-kappa "${kappas%%,*}" --cache-dir benchmarks/cache --quiet \
    --out "$R/$name.json" > "$R/$name.md"
}
run graph_walk_llamaindex_musique_train100 1.0,0.5
run graph_walk_llamaindex_musique_train100_unlinked 1.0,0.5 --host-option link_texts=false
run graph_walk_llamaindex_musique_train100_store_only 0.5 --host-option walk_dropped=false
