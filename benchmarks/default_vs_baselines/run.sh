#!/usr/bin/env bash
# The exact commands behind benchmarks/default_vs_baselines/results/: the default concept path against the cheap
# retrievers, the development sweep of its knobs, and the default selector judged downstream (2 cores; embeddings
# cached in benchmarks/cache).
# Every run: dense, BM25, the RRF and weighted hybrids, KET-RAG keyword, the concept path (default) and the
# concept path on dense scores alone (concept-dense: the bridge without the lexical seed), CR per budget, supporting-
# passage recall, all-gold-found, passage recall@2/5/10, paired sign tests, and per-question JSONL.
# Status of the committed results: the reports of hotpotqa_train100_minilm, musique_train100_minilm,
# musique_ketrag500_minilm, 2wiki_ketrag500_minilm and xquad_zh/es_multilingual were regenerated with the linked head
# (retrieval.link_head, the default), in one run:
#   G2CONS_DATA=/work/shared/data G2CONS_CACHE=/work/main/benchmarks/cache ONLY=xquad_zh_multilingual,\
#   xquad_es_multilingual,hotpotqa_train100_minilm,musique_train100_minilm,musique_ketrag500_minilm,\
#   2wiki_ketrag500_minilm bash benchmarks/default_vs_baselines/run.sh
# (before that with the default entity_weight=2.0, names of the query pick the head); the others in sections 1 and 2 were produced by this script with the default of
# score_scale="spread" / lexical_weight=0.075, one report at a time, as
#   G2CONS_DATA=/work/shared/data G2CONS_CACHE=/work/main/benchmarks/cache ONLY=<name> bash benchmarks/default_vs_baselines/run.sh
# for every run name below (each .md is the command's stdout); section 3 was not run as written (the committed
# development sweeps are in results/concept_variants/ with their own commands); section 4 ran exactly as below, each
# command on its own (its .md is the command's stdout), before the score_scale default: its host-KG CR does not
# depend on the concept path, its fused CR used the previous concept default.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared data folder (set G2CONS_DATA where it is elsewhere)
R=benchmarks/default_vs_baselines/results
CACHE=${G2CONS_CACHE:-benchmarks/cache}  # the embedding cache (set G2CONS_CACHE to share one across worktrees)
C="--cache-dir $CACHE --quiet"
M=dense,bm25,hybrid,hybrid-weighted,keyword,concept,concept-dense
mkdir -p $R
export HF_HUB_OFFLINE=1

run() {  # run NAME SET EMBEDDER BUDGETS [extra options]
  local name=$1 set=$2 emb=$3 budgets=$4
  shift 4
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then return 0; fi
  nice -n 10 g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl --methods $M \
    --budgets "$budgets" --embedder "$emb" $C "$@" --out $R/$name.json --per-question $R/${name}_per_question.jsonl \
    --report $R/$name > $R/$name.md
}

# 1. multilingual (XQuAD, single-hop) with the multilingual e5 embedder, and multi-hop (minilm) train100 sets
run xquad_zh_multilingual multilingual/xquad_zh300 multilingual 500,1000
run xquad_es_multilingual multilingual/xquad_es300 multilingual 500,1000
run hotpotqa_train100_minilm hotpotqa/hipporag_train100 minilm 1000,2000,4000
run musique_train100_minilm musique/hipporag_train100 minilm 1000,2000,4000
# 2. Chinese segmented by character bigrams instead of jieba; the English embedders with the language-aware
#    analyzer, for comparison
run xquad_zh_multilingual_bigram multilingual/xquad_zh300 multilingual 500,1000 --segmenter bigram
run xquad_zh_wordllama multilingual/xquad_zh300 wordllama 500,1000
run xquad_es_wordllama multilingual/xquad_es300 wordllama 500,1000
# the large sets (a cold minilm embedding takes ~5 minutes each on 2 cores)
run musique_ketrag500_minilm musique/ketrag500 minilm 1000,2000,4000
run 2wiki_ketrag500_minilm 2wikimultihopqa/ketrag500 minilm 1000,2000,4000

# ONLY=name1,name2 (run names above): rerun just those reports, skip sections 3 and 4, rewrite the summary
if [ -n "${ONLY:-}" ]; then python benchmarks/default_vs_baselines/summary.py $R/*.json > $R/summary.md; exit 0; fi

# 3. development sweep of the concept-path knobs (benchmarks/default_vs_baselines/concept_variants.py): wordllama and minilm
for emb in wordllama minilm; do for set in hotpotqa/hipporag_train100 musique/hipporag_train100; do
  name=$(echo $set | cut -d/ -f1)
  nice -n 10 python benchmarks/default_vs_baselines/concept_variants.py --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl \
    --embedder $emb --cache-dir $CACHE --budgets 1000,2000,4000 --out $R/concept_variants/sweep_${name}_$emb.json \
    > $R/concept_variants/sweep_${name}_$emb.md
done; done
nice -n 10 python benchmarks/default_vs_baselines/concept_variants.py --corpus $D/multilingual/xquad_zh300_corpus.jsonl \
  --questions $D/multilingual/xquad_zh300_questions.jsonl --embedder multilingual --cache-dir $CACHE \
  --budgets 500,1000 --out $R/concept_variants/sweep_xquad_zh_multilingual.json > $R/concept_variants/sweep_xquad_zh_multilingual.md
# 4. selection judged downstream (LLM-free llama-index-ner host KG from each selector's kept chunks): kappa by
#    tokens (the default: every selector is sent the same extraction input tokens, chunk + prompt, per kappa),
#    then kappa by chunks on the train100 sets (the same number of extraction calls per kappa); the summary pairs
#    the default with every other selector per question (run as below, with --cache-dir /work/main/benchmarks/cache)
downstream() {  # downstream NAME SET [extra options]
  local name=$1 set=$2
  shift 2
  nice -n 10 g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl --methods concept \
    --budgets 1000,2000 --embedder minilm $C --selection-downstream "$@" --out $R/selection_downstream_$name.json \
    > $R/selection_downstream_$name.md
}
downstream hotpotqa_minilm hotpotqa/hipporag_train100
downstream musique_minilm musique/hipporag_train100
downstream musique_ketrag500_minilm musique/ketrag500
downstream 2wiki_ketrag500_minilm 2wikimultihopqa/ketrag500
downstream hotpotqa_minilm_chunks hotpotqa/hipporag_train100 --set kappa_by=chunks
downstream musique_minilm_chunks musique/hipporag_train100 --set kappa_by=chunks
python benchmarks/selection_downstream_summary.py $R/selection_downstream_*.json > $R/selection_downstream_summary.md
python benchmarks/default_vs_baselines/summary.py $R/*.json > $R/summary.md
