#!/usr/bin/env bash
# Issue #6's first acceptance run: continuous refill vs static batching, side by side in one run.
#
# Workload (the issue's): 256 synthetic prompts of 10-500 tokens, max_new_tokens drawn from 8-128
# (deterministic draws, the same requests for both modes), greedy, EOS ignored, the same batch
# size for both modes. Continuous refill gives a finished sequence's slot to the next request at
# the next step (its prompt prefilled in chunks alongside the others' decode steps); static batching
# starts the next batch only when the longest sequence of the last one has finished.
#
# Placement: a synthetic llama-110m (bench/configs/llama-110m.json, f32: 512 MiB) streamed from
# the weights file with --cpu-mem at three quarters of its size: the planner keeps the embeddings
# and head resident and streams the transformer layers (~270 MiB) every step, with prefetch. The
# KV cache is int8 (--kv-dtype int8): in f32, 8 sequences x 629 positions of this model's
# 12 full-width (MHA) layers take 354 MiB, 69% of the checkpoint, which leaves no room for a
# staging ring under any --cpu-mem below the checkpoint's size; int8 takes 94 MiB.
#
# Why this shape: refill saves decode steps (a static batch runs as many as its longest request;
# refill keeps every slot busy), while prompt tokens cost the same compute in both modes. The ratio
# reaches 1.3 only where a decode step costs much more than the prefill of one token: here a step
# reads ~270 MiB from disk, as long as ~40 prompt tokens take to compute on 2 cores. A model that
# fits in DRAM (or a tiny one, like the 7M one this script used before) is prefill-bound and shows
# ~1.0x: refill does not make prompts cheaper.
#
# Prints, per round, zinf bench's table for both modes and their wall times, then the ratio of
# generation tokens/s (all generated tokens ÷ the run's wall time; mean over rounds per mode) and
# exits 1 when it is below 1.3. With ZINF_REFILL_ROUNDS > 1 the rounds alternate which mode runs
# first, so drift in the machine's load cancels.
#
# Usage: bench/refill_vs_static.sh [BATCH_SIZE] [THREADS]   (~30 min a round, 2 rounds, on 2 idle cores)
# Environment:
#   ZINF_BUILD_DIR          the build (default build/; built if zinf is missing)
#   ZINF_BENCH_CACHE        where the checkpoint is written once and kept (default
#                           ${XDG_CACHE_HOME:-~/.cache}/zinf-bench; needs ~520 MB)
#   ZINF_REFILL_CONFIG      the model shape (default bench/configs/llama-110m.json)
#   ZINF_REFILL_CPU_MEM     --cpu-mem (default: three quarters of the checkpoint)
#   ZINF_REFILL_KV_DTYPE    --kv-dtype (default int8)
#   ZINF_REFILL_PROMPTS     prompts per run (default 256)
#   ZINF_REFILL_ROUNDS      runs per mode, alternating the order (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
zinf=$(zinf_binary "$root")
batch=${1:-8}
threads=${2:-$(nproc)}
cache=${ZINF_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zinf-bench}
config=${ZINF_REFILL_CONFIG:-$root/bench/configs/llama-110m.json}
kv_dtype=${ZINF_REFILL_KV_DTYPE:-int8}
num_prompts=${ZINF_REFILL_PROMPTS:-256}
rounds=${ZINF_REFILL_ROUNDS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/zinf-refill.XXXXXX")
trap 'rm -rf "$work"' EXIT

model="$cache/$(basename "$config" .json)-f32"
synthetic_checkpoint "$zinf" "$config" "$model" f32
size_bytes=$(stat -c %s "$model/weights.bin")
cpu_mem=${ZINF_REFILL_CPU_MEM:-$(( size_bytes * 3 / 4 ))}

echo "date $(date -u '+%Y-%m-%d %H:%M:%S UTC'); source tree $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown); $zinf built $(date -u -r "$zinf" '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "checkpoint $model: $(( size_bytes / 1048576 )) MiB f32; --cpu-mem $cpu_mem bytes ($(( cpu_mem / 1048576 )) MiB);" \
     "KV $kv_dtype; batch $batch; $threads threads; $num_prompts prompts of 10-500 tokens, 8-128 new tokens"

for ((round = 1; round <= rounds; ++round)); do
  if (( round % 2 == 1 )); then order=(continuous static); else order=(static continuous); fi
  for mode in "${order[@]}"; do
    echo
    echo "round $round, $mode: started $(date -u +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    start=$(date +%s.%N)
    "$zinf" bench --model "$model" --weights auto --cpu-mem "$cpu_mem" --kv-dtype "$kv_dtype" \
      --batch-size "$batch" --prompt-len 10:500 --gen-len 8:128 --num-prompts "$num_prompts" \
      --refill "$mode" --repeat 1 --threads "$threads" --csv "$work/$round-$mode.csv" \
      2>"$work/$round-$mode.log" || { cat "$work/$round-$mode.log" >&2; exit 1; }
    end=$(date +%s.%N)
    grep -E '\] (plan: |weights )' "$work/$round-$mode.log" | sed 's/^\[info\] /    /' || true
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    echo "round $round, $mode: $seconds s wall (including the checkpoint's load); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done

echo
# zinf bench's CSV, each line prefixed with its round: refill is then column 7, prefill tok/s 9,
# decode tok/s 11, generation tok/s 13. Per mode, the mean over rounds.
for ((round = 1; round <= rounds; ++round)); do
  for mode in continuous static; do sed "s/^/$round,/" "$work/$round-$mode.csv"; done
done | awk -F, -v rounds="$rounds" '
  $2 == "weights" { next }
  { rate[$7, $1] = $13; sum[$7] += $13; n[$7]++; decode[$7] += $11; prefill[$7] += $9 }
  END {
    for (r = 1; r <= rounds; ++r) {
      printf "round %d: generation tok/s continuous %.2f, static %.2f, ratio %.3f\n",
             r, rate["continuous", r], rate["static", r], rate["continuous", r] / rate["static", r]
    }
    c = sum["continuous"] / n["continuous"]; s = sum["static"] / n["static"]; ratio = c / s
    printf "decode tok/s: continuous %.1f, static %.1f; prefill tok/s: continuous %.1f, static %.1f\n",
           decode["continuous"] / n["continuous"], decode["static"] / n["static"],
           prefill["continuous"] / n["continuous"], prefill["static"] / n["static"]
    printf "generation tok/s (mean of %d round(s)): continuous %.2f, static %.2f, ratio %.3f (target >= 1.30): %s\n",
           rounds, c, s, ratio, (ratio >= 1.3) ? "PASS" : "FAIL"
    if (ratio < 1.3) exit 1
  }'
