#!/usr/bin/env bash
# Is the DRAM bound a figure to trust, and how close does batch-1 decode come to it (issue #25,
# item 1)? In one run:
#  1. `zinf calibrate --dram-only` RUNS times: each run's median of 9 passes and its spread, and the
#     spread of the medians across runs (the ±5% the issue asks of a quiet machine);
#  2. `zinf calibrate` once (the planner's cache, so `zinf bench` prints its bound with this rate);
#  3. batch-1 decode of TinyLlama-1.1B's shape in f32, int8 and int4-g64, weights resident,
#     alternating ROUNDS times: tok/s, the share of the memory bound `zinf bench` prints, and the
#     share of the bound at a probe run just before the round (a host whose bandwidth drifts over
#     minutes moves both).
# Usage: bench/decode_vs_dram.sh [--runs N] [--rounds N] [--threads T]
#        (ZINF_BENCH_DIR: where checkpoints are cached; ZINF_BUILD_DIR: which build runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
zinf=$(zinf_binary "$root")
runs=5 rounds=3 threads=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
work=${ZINF_BENCH_DIR:-$root/build/bench-work}
mkdir -p "$work"
config="$root/bench/configs/tinyllama-1.1b.json"
synthetic_checkpoint "$zinf" "$config" "$work/tinyllama-f32" f32 >&2
synthetic_checkpoint "$zinf" "$config" "$work/tinyllama-int8" int8 >&2
synthetic_checkpoint "$zinf" "$config" "$work/tinyllama-int4-g64" int4 --group-size 64 >&2

echo "# Batch-1 decode against the DRAM read bound, $(lscpu | sed -n 's/^Model name: *//p'), $threads threads"
echo
echo "$(date -u +%F), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## The probe: \`zinf calibrate --dram-only --threads $threads\`, $runs runs"
echo
echo "| run | median of 9 passes, GB/s | slowest pass | fastest pass |"
echo "|---:|---:|---:|---:|"
medians=()
for ((run = 1; run <= runs; ++run)); do
  json=$("$zinf" calibrate --dram-only --threads "$threads")
  read -r median low high < <(echo "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["dram_read_gbps"], r["min_gbps"], r["max_gbps"])')
  medians+=("$median")
  awk -v r="$run" -v m="$median" -v l="$low" -v h="$high" 'BEGIN { printf "| %d | %.2f | %.2f | %.2f |\n", r, m, l, h }'
done
echo
printf '%s\n' "${medians[@]}" | awk '{ v[NR] = $1; s += $1 } END {
  lo = v[1]; hi = v[1]; for (i = 2; i <= NR; ++i) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
  m = s / NR; printf "Across runs: mean %.2f GB/s, range %.2f–%.2f (%+.1f%% / %+.1f%% of the mean).\n", m, lo, hi, (lo / m - 1) * 100, (hi / m - 1) * 100 }'
echo

"$zinf" calibrate --threads "$threads" >/dev/null 2>&1
echo "## Batch-1 decode, weights resident (\`zinf bench --batch-size 1 --prompt-len 8 --gen-len 64\`)"
echo
echo "\`zinf calibrate\` (run just before) put the planner's DRAM rate at $(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["dram_read_gbps"])' "${XDG_CACHE_HOME:-$HOME/.cache}/zinf/calibration.json") GB/s."
echo
cached=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dram_read_gbps"])' "${XDG_CACHE_HOME:-$HOME/.cache}/zinf/calibration.json")
echo "| round | dtype | decode tok/s | bound tok/s | % of bound | probe before the round, GB/s | % of that bound |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for ((round = 1; round <= rounds; ++round)); do
  probe=$("$zinf" calibrate --dram-only --threads "$threads" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dram_read_gbps"])')
  for dtype in f32 int8 int4-g64; do
    "$zinf" bench --model "$work/tinyllama-$dtype" --batch-size 1 --num-prompts 2 --prompt-len 8 \
      --gen-len 64 --weights resident --repeat 1 --threads "$threads" \
      --csv "$work/decode_vs_dram.csv" >/dev/null 2>&1
    awk -F, -v r="$round" -v d="$dtype" -v p="$probe" -v c="$cached" 'NR == 2 {
      printf "| %d | %s | %.2f | %.2f | %.0f%% | %.2f | %.0f%% |\n", r, d, $10, $15, $17, p, 100 * $10 / ($15 * p / c) }' \
      "$work/decode_vs_dram.csv"
  done
done
