#!/usr/bin/env bash
# The graph-walk host (HippoRAG 2's graph search over the replayed gpt-3.5 extraction, no LLM at query time): the
# exact commands behind benchmarks/dual_path/results/graph_walk_*. MuSiQue train100 (1,890 passages, 100 questions),
# minilm. 1. g2cons eval with the host over the full extraction (kappa 1.0) and over the default selection's half
# (kappa 0.5): host-KG alone, concept path and fused rows, host latency; the same over 1,200-token packs. 2. the
# host alone for HippoRAG 2's defaults and one-parameter changes of them, and the PageRank solver (power iteration)
# against igraph's PRPACK (HippoRAG 2's) where python-igraph is installed. About 15 min on 2 cores with a warm
# embedding cache (benchmarks/cache); the first run embeds the 17,032 facts and 16,227 entity names once (~6 min).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
mkdir -p $R
# this script's own earlier results (committed; g2cons eval never overwrites a file it cannot prove it wrote)
rm -f $R/graph_walk_musique_train100*.json $R/graph_walk_musique_train100*.md $R/graph_walk_sweep_musique_train100.* \
  $R/link_texts_off_musique_train100.* $R/link_texts_musique_train100.md
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm \
  --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 1.0,0.5 --host-kappa 1.0 \
  --cache-dir benchmarks/cache --quiet --out $R/graph_walk_musique_train100.json > $R/graph_walk_musique_train100.md
# the same packed into 1,200-token chunks (GraphRAG / LightRAG text units), the unit-vector chunk prior against
# HippoRAG 2's whole-text one
for prior in units text; do
  g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --pack-tokens 1200 \
    --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-option passage_prior=$prior \
    --host-kappas 1.0,0.5 --host-kappa 1.0 --cache-dir benchmarks/cache --quiet \
    --out $R/graph_walk_musique_train100_pack1200_$prior.json > $R/graph_walk_musique_train100_pack1200_$prior.md
done
python benchmarks/dual_path/graph_walk_sweep.py $M --kg $KG --model gpt-3.5-turbo-1106 --embedder minilm \
  --cache-dir benchmarks/cache --out $R/graph_walk_sweep_musique_train100
# the host without link_texts (HippoRAG 2's graph: a dropped chunk has only its dense prior), and the comparison with
# the selection runs of selection_candidate_research.py (--link-texts auto, and off: the runs before the links)
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm \
  --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-option link_texts=false \
  --host-kappas 1.0,0.5 --host-kappa 1.0 --cache-dir benchmarks/cache --quiet \
  --out $R/link_texts_off_musique_train100.json > $R/link_texts_off_musique_train100.md
python benchmarks/dual_path/link_texts_summary.py --on $R/graph_walk_musique_train100.json \
  --off $R/link_texts_off_musique_train100.json \
  --selection-on $R/selection_candidate_musique_linked.json --selection-off $R/selection_candidate_musique.json \
  --selection-on $R/selection_candidate_musique_pack1200_linked.json \
  --selection-off $R/selection_candidate_musique_pack1200.json \
  --selection-always $R/selection_candidate_musique_linked_always.json > $R/link_texts_musique_train100.md
