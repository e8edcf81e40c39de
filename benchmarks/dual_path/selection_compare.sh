#!/usr/bin/env bash
# Core-chunk selection judged by the strong host: the exact commands behind benchmarks/dual_path/results/selection_*.
# MuSiQue train100 (1,890 passages, 100 questions) with its gpt-3.5-turbo-1106 OpenIE extraction replayed as the
# host KG and walked as HippoRAG 2 walks it (graph-walk host: only the kept chunks' triples, every chunk a node with
# its dense prior, a dropped chunk linked to the KG entities its text names when a third of the chunks or more are
# kept: link_texts auto), minilm; every selector held to the same extraction input tokens (chunk + prompt per call).
# 1. g2cons eval --selection-downstream: the default (coverage), the paper's pagerank, KET-RAG's knn_pagerank,
#    concept_coverage, uniform and length-matched random at kappa 0.2 / 0.5 / 0.8 (host alone and fused); the same
#    eval also writes the host's kappa sweep with the default selection (host alone at kappa 1.0: the full host);
# 2. the same over 1,200-token packs (GraphRAG / LightRAG chunks) at kappa 0.5: the second configuration;
# 3. rankings tried as replacements (not in the library) and length-matched random with three seeds, both
#    configurations (selection_candidates.py);
# 4. the summaries (paired sign tests of the default against each selector; candidates against random);
# 5. an upper bound: the chunks of the questions' supporting passages first (reads the questions).
# About 35 min on 2 busy cores with a warm embedding cache (benchmarks/cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
H="--host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106"
mkdir -p $R
# this script's own earlier results (g2cons eval never overwrites a file it cannot prove it wrote)
rm -f $R/selection_downstream_graphwalk_musique*.json $R/selection_downstream_graphwalk_musique*.md \
  $R/selection_candidates_musique*.json $R/selection_candidates_musique*.md $R/selection_compare_summary.md \
  $R/selection_candidates_summary.md $R/selection_oracle_musique*.json $R/selection_oracle_musique*.md
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --selection-downstream $H \
  --downstream-kappas 0.2,0.5,0.8 \
  --downstream-selectors default,pagerank,knn_pagerank,length-matched-random,concept_coverage,uniform \
  --cache-dir benchmarks/cache --quiet \
  --out $R/selection_downstream_graphwalk_musique.json > $R/selection_downstream_graphwalk_musique.md
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --pack-tokens 1200 \
  --selection-downstream $H --downstream-kappas 0.5 \
  --downstream-selectors default,pagerank,knn_pagerank,length-matched-random,uniform --cache-dir benchmarks/cache \
  --quiet --out $R/selection_downstream_graphwalk_musique_pack1200.json \
  > $R/selection_downstream_graphwalk_musique_pack1200.md
python benchmarks/dual_path/selection_candidates.py --data $D/musique --pack-tokens 0 --kappas 0.2,0.5,0.8 \
  --out $R/selection_candidates_musique.json > $R/selection_candidates_musique.md
python benchmarks/dual_path/selection_candidates.py --data $D/musique --pack-tokens 1200 --kappas 0.2,0.5 \
  --out $R/selection_candidates_musique_pack1200.json > $R/selection_candidates_musique_pack1200.md
python benchmarks/selection_downstream_summary.py $R/selection_downstream_graphwalk_musique*.json \
  > $R/selection_compare_summary.md
python benchmarks/dual_path/selection_summary.py $R/selection_candidates_musique.json \
  $R/selection_candidates_musique_pack1200.json > $R/selection_candidates_summary.md
# what a selection could buy: the chunks of the questions' supporting passages first (an oracle, not a selector)
python benchmarks/dual_path/selection_candidates.py --data $D/musique --pack-tokens 0 --kappas 0.2,0.5,0.8 \
  --candidates oracle_gold --out $R/selection_oracle_musique.json > $R/selection_oracle_musique.md
python benchmarks/dual_path/selection_candidates.py --data $D/musique --pack-tokens 1200 --kappas 0.2,0.5 \
  --candidates oracle_gold --out $R/selection_oracle_musique_pack1200.json > $R/selection_oracle_musique_pack1200.md
