#!/usr/bin/env bash
# Non-English text with the default settings (embedder "auto": the multilingual model is picked for a corpus mostly
# not in English when g2cons-plugins[multilingual] is installed): the concept path against dense, BM25 and the hybrids.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}
R=benchmarks/language/results
mkdir -p $R
for set in multilingual/xquad_zh300 multilingual/xquad_es300; do
  name=$(echo $set | tr / _)
  g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl \
    --methods dense,bm25,hybrid,hybrid-weighted,concept --budgets 1000,2000 --cache-dir benchmarks/cache --quiet \
    --out $R/${name}_auto.json > $R/${name}_auto.md
done
