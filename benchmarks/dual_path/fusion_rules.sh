#!/usr/bin/env bash
# Fusion rules compared offline: both paths' candidates are dumped once per question (fusion_dump.py: the concept path
# at each budget, the host's ranked items, share fusion at lambda 0.2 as `g2cons eval` runs it), then every rule runs
# on the same lists in seconds (fusion_rules_offline.py). Same sets, hosts, kappas and budgets as fusion_compare.sh:
# the graph walk over MuSiQue train100's replayed gpt-3.5 graph at kappa 1.0 and 0.5, and the LLM-free NER host on
# MuSiQue and HotpotQA train100 at kappa 0.8. Result: benchmarks/dual_path/results/fusion_rules.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
DUMPS=${FUSION_DUMPS:-benchmarks/cache/fusion_dumps}  # large (2-4 MB each), not committed
mkdir -p "$DUMPS"
python benchmarks/dual_path/fusion_dump.py --corpus $D/musique/hipporag_train100_corpus.jsonl \
  --questions $D/musique/hipporag_train100_questions.jsonl --host graph-walk:$D/musique/hipporag_train100_kg_gpt35.jsonl \
  --host-option model=gpt-3.5-turbo-1106 --kappas 0.5,1.0 --lambdas 0.2 --out "$DUMPS/gw.json"
for s in musique hotpotqa; do
  python benchmarks/dual_path/fusion_dump.py --corpus $D/$s/hipporag_train100_corpus.jsonl \
    --questions $D/$s/hipporag_train100_questions.jsonl --host llama-index-ner --kappas 0.8 --lambdas 0.2 \
    --out "$DUMPS/ner_$s.json"
done
# held out (not looked at while the rule was chosen): the NER host on the KET-RAG 500-question sets
for s in musique 2wikimultihopqa; do
  python benchmarks/dual_path/fusion_dump.py --corpus $D/$s/ketrag500_corpus.jsonl \
    --questions $D/$s/ketrag500_questions.jsonl --host llama-index-ner --kappas 0.8 --lambdas 0.2 \
    --out "$DUMPS/ner_${s}_ketrag500.json"
done
python benchmarks/dual_path/fusion_rules_offline.py "$DUMPS" > benchmarks/dual_path/results/fusion_rules.md
