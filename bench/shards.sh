#!/usr/bin/env bash
# Throughput of one prompt file split into 1, 2 and 4 shards (`zinf generate --shard K/N`), the
# shards run at once as separate processes — what a job array or one process per GPU does — and
# joined by `zinf merge`. Prints a markdown table of aggregate generated tokens/s (all tasks'
# tokens over the wall time from the first start to the last finish) and checks each merged file
# is byte-identical to the one-task run.
#
# Usage: bench/shards.sh    (stories260K, 2000 prompts x 128 tokens; about two minutes on 2 cores)
#   ZINF=build-x/zinf TASKS="1 2 4" PROMPTS=400 MAX_NEW_TOKENS=64 REPEAT=2 WORK=/tmp/sh bench/shards.sh
# Threads: each task gets cores / tasks (at least 1; THREADS=T sets it), so 4 tasks on 2 cores
# oversubscribe.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
ZINF="${ZINF:-$(zinf_binary "$ROOT")}"
TASKS="${TASKS:-1 2 4}"
PROMPTS="${PROMPTS:-2000}"
MAX_NEW_TOKENS="${MAX_NEW_TOKENS:-128}"
REPEAT="${REPEAT:-2}"
WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/zinf-shards.XXXXXX")}"
cores=$(nproc)
mkdir -p "$WORK"

"$ZINF" --log-level warn convert "$ROOT/models/stories260K" "$WORK/model" --force
words=(cat dog king girl boy sun moon tree fish bird)
for i in $(seq "$PROMPTS"); do
  echo "Once upon a time there was a ${words[$((i % 10))]} called number $i"
done >"$WORK/prompts.txt"

now() { date +%s.%N; }
echo "shards: $ZINF, $PROMPTS prompts x $MAX_NEW_TOKENS tokens (greedy, --ignore-eos), $cores cores," \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| tasks | threads/task | run | wall s | generated tokens | aggregate tok/s | per task tok/s | merge s | merged = 1 task |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for tasks in $TASKS; do
  threads=${THREADS:-$((cores / tasks))}
  [ "$threads" -ge 1 ] || threads=1
  for run in $(seq "$REPEAT"); do
    dir="$WORK/t$tasks-r$run"
    rm -rf "$dir"
    mkdir -p "$dir"
    start=$(now)
    pids=()
    for shard in $(seq 0 $((tasks - 1))); do
      "$ZINF" -q generate --model "$WORK/model" --prompts "$WORK/prompts.txt" \
        --out "$dir/r.jsonl" --shard "$shard/$tasks" --threads "$threads" \
        --max-new-tokens "$MAX_NEW_TOKENS" --ignore-eos &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    end=$(now)
    merge_start=$(now)
    "$ZINF" -q merge "$dir/r.shard-*" --prompts "$WORK/prompts.txt" --out "$dir/merged.jsonl"
    merge_end=$(now)
    tokens=$(grep -o '"completion_tokens":[0-9]*' "$dir/merged.jsonl" | awk -F: '{ sum += $2 } END { print sum }')
    [ -f "$WORK/reference.jsonl" ] || cp "$dir/merged.jsonl" "$WORK/reference.jsonl"
    same=$(cmp -s "$dir/merged.jsonl" "$WORK/reference.jsonl" && echo yes || echo NO)
    awk -v t="$tasks" -v th="$threads" -v r="$run" -v s="$start" -v e="$end" -v n="$tokens" \
      -v ms="$merge_start" -v me="$merge_end" -v same="$same" 'BEGIN {
        wall = e - s; printf "| %d | %d | %d | %.2f | %d | %.0f | %.0f | %.2f | %s |\n",
          t, th, r, wall, n, n / wall, n / wall / t, me - ms, same }'
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
