#!/usr/bin/env bash
# Load and query at 1M passages under two code trees in the same session, rounds taking turns (a slow minute of the
# machine hits every tree): OLD_CODE on OLD_INDEX (the tree and index that measured 9.5 ms before), this tree on
# NEW_INDEX (built by it), and this tree on the same index with its .npz members rewritten aligned
# (realign_index.py: what a save writes from 1b05205 on). Each job is `bench.py --job load` in a fresh process
# (load, 10 warm-up questions, 200 timed MuSiQue questions, query embedding included).
#   OLD_CODE=/tmp/old OLD_INDEX=/tmp/idx1m_old NEW_INDEX=/tmp/idx1m ROUNDS="1 2 3" bash benchmarks/scale/query_ab_1m.sh
# The six rounds of results/query_1m_ab_aligned.json: ROUNDS="1 2 3" in the order old, new, aligned, then
# ROUNDS="4 5 6" in the order aligned, old, new.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/query_ab_1m}
mkdir -p "$OUT"
[ -d "${NEW_INDEX}_aligned" ] || python benchmarks/scale/realign_index.py "$NEW_INDEX" "${NEW_INDEX}_aligned"
for r in ${ROUNDS:-1 2 3}; do
  sync
  (cd "$OLD_CODE" && PYTHONPATH="$OLD_CODE" python benchmarks/scale/bench.py --job load --path "$OLD_INDEX" --queries 200) > "$OUT/old_$r.json"
  python benchmarks/scale/bench.py --job load --path "$NEW_INDEX" --queries 200 > "$OUT/new_$r.json"
  python benchmarks/scale/bench.py --job load --path "${NEW_INDEX}_aligned" --queries 200 > "$OUT/aligned_$r.json"
done
