#!/usr/bin/env bash
# Continuous refill vs static batching, side by side in one run (issue: throughput engine).
# A synthetic checkpoint streamed from the weights file with --cpu-mem below its size; 256 prompts
# of 10-500 tokens and max_new_tokens of 8-128 (drawn deterministically); same batch size.
# Prints both rows and the ratio of generation tokens/s; exits 1 when it is below 1.3.
# Usage: bench/refill_vs_static.sh [BATCH_SIZE] [THREADS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${ZINF_BUILD_DIR:-$root/build}
[ -x "$build_dir/zinf" ] || "$root/scripts/build"
zinf="$build_dir/zinf"
batch=${1:-8}
threads=${2:-$(nproc)}
work=${ZINF_BENCH_DIR:-$build_dir/bench-work}
model="$work/llama-7m"
mkdir -p "$work"
"$zinf" convert --synthetic "$root/bench/configs/llama-7m-wide-vocab.json" "$model" --dtype f32 --force
size_bytes=$(stat -c %s "$model/weights.bin")
# Three quarters of the checkpoint: the planner keeps what it can resident (KV cache, activations
# and the staging ring come out of the same budget) and streams the rest every step.
cpu_mem=$(( size_bytes * 3 / 4 ))
echo "checkpoint $(( size_bytes / 1048576 )) MiB, --cpu-mem $(( cpu_mem / 1048576 )) MiB, batch $batch, $threads threads"
"$zinf" bench --model "$model" --weights auto --cpu-mem "$cpu_mem" --batch-size "$batch" \
  --prompt-len 10:500 --gen-len 8:128 --num-prompts 256 --refill continuous,static \
  --repeat 1 --threads "$threads" --csv "$work/refill_vs_static.csv"
awk -F, 'NR > 1 { rate[$6] = $12 }
  END {
    ratio = rate["continuous"] / rate["static"];
    printf "generation tok/s: continuous %.1f, static %.1f, ratio %.2f (target >= 1.30)\n",
           rate["continuous"], rate["static"], ratio;
    exit ratio >= 1.3 ? 0 : 1
  }' "$work/refill_vs_static.csv"
