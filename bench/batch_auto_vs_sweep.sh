#!/usr/bin/env bash
# Issue #6's second acceptance run: --batch-size auto against the best fixed batch size of a sweep,
# on two checkpoints, measured side by side in one run.
#
# Checkpoints (synthetic, f32, written once and kept):
#   streamed  bench/configs/llama-110m.json (512 MiB) with --cpu-mem at three quarters of its size:
#             the planner streams what does not fit, a larger batch's KV cache takes DRAM that
#             resident weights would use, and past some batch the plan does not fit at all;
#   resident  bench/configs/llama-7m-wide-vocab.json (26 MiB) with no --cpu-mem: it fits, nothing
#             is streamed, and the batch trades memory reads against arithmetic.
# Workload: synthetic prompts of $ZINF_AUTO_PROMPT_LEN tokens generating $ZINF_AUTO_GEN_LEN tokens
# each (EOS ignored), the same requests for every batch size: 128 prompts for the streamed
# checkpoint, 1024 for the resident one (its steps take milliseconds; fewer make runs of a second
# or two, which a neighbour's compile can halve). zinf bench caps auto at the number of prompts.
# Each configuration is one `zinf bench --repeat 1` run, its own process; a batch whose plan does
# not fit the budget is reported as such.
#
# auto decides from the rates `zinf calibrate` measured: the script calibrates once at the start
# (reading the streamed checkpoint's weights file for the disk rate) into a private cache, so
# neither a stale calibration nor the user's ~/.cache/zinf is used or changed
# (ZINF_AUTO_CALIBRATE=0 keeps the user's instead).
#
# The sweep runs $ZINF_AUTO_PASSES times, alternating direction (ascending, then descending), with
# an auto run before and after the fixed batches of every pass; each configuration's tokens/s is
# its mean over its runs, so drift in the machine's load cancels (auto's runs are centred on the
# sweep's). The metric is generation tokens/s (all generated tokens ÷ wall time, prefill
# included); decode tokens/s is printed beside it. Per checkpoint it prints auto's choice and its
# reasons, every batch's rate, and auto ÷ best; exits 1 when auto is below 0.9 × the best fixed
# batch on either checkpoint.
#
# The streamed sweep starts at batch 4: there a step is bound by reading ~0.3-0.5 GB from disk
# whatever the batch, so batch 1 and 2 make a half and a quarter of batch 4's tokens per step and
# would take most of an hour (ZINF_AUTO_STREAMED_BATCHES to change).
#
# Usage: bench/batch_auto_vs_sweep.sh [THREADS]          (~30 min on 2 cores)
# Environment:
#   ZINF_BUILD_DIR             the build (default build/; built if zinf is missing)
#   ZINF_BENCH_CACHE           where checkpoints are written once and kept (default
#                              ${XDG_CACHE_HOME:-~/.cache}/zinf-bench; needs ~560 MB)
#   ZINF_AUTO_STREAMED_PROMPTS prompts per streamed run (default 128)
#   ZINF_AUTO_RESIDENT_PROMPTS prompts per resident run (default 1024)
#   ZINF_AUTO_PROMPT_LEN       prompt tokens (default 32)
#   ZINF_AUTO_GEN_LEN          generated tokens per prompt (default 32)
#   ZINF_AUTO_PASSES           sweeps, alternating direction (default 2)
#   ZINF_AUTO_STREAMED_BATCHES fixed batches for the streamed checkpoint (default "4 8 16 32 64 128")
#   ZINF_AUTO_RESIDENT_BATCHES fixed batches for the resident one (default "1 2 4 8 16 32 64 128")
#   ZINF_AUTO_CALIBRATE        1 (default): calibrate into a private cache; 0: use the user's
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
zinf=$(zinf_binary "$root")
threads=${1:-$(nproc)}
cache=${ZINF_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zinf-bench}
streamed_prompts=${ZINF_AUTO_STREAMED_PROMPTS:-128}
resident_prompts=${ZINF_AUTO_RESIDENT_PROMPTS:-1024}
prompt_len=${ZINF_AUTO_PROMPT_LEN:-32}
gen_len=${ZINF_AUTO_GEN_LEN:-32}
passes=${ZINF_AUTO_PASSES:-2}
read -r -a streamed_batches <<<"${ZINF_AUTO_STREAMED_BATCHES:-4 8 16 32 64 128}"
read -r -a resident_batches <<<"${ZINF_AUTO_RESIDENT_BATCHES:-1 2 4 8 16 32 64 128}"
work=$(mktemp -d "${TMPDIR:-/tmp}/zinf-batch-auto.XXXXXX")
trap 'rm -rf "$work"' EXIT

checkpoint() {  # checkpoint CONFIG: writes the f32 checkpoint once; prints its directory
  local config=$1 model
  model="$cache/$(basename "$config" .json)-f32"
  synthetic_checkpoint "$zinf" "$config" "$model" f32 >&2
  echo "$model"
}
streamed_model=$(checkpoint "$root/bench/configs/llama-110m.json")
resident_model=$(checkpoint "$root/bench/configs/llama-7m-wide-vocab.json")
streamed_size=$(stat -c %s "$streamed_model/weights.bin")
streamed_cpu_mem=$(( streamed_size * 3 / 4 ))

echo "date $(date -u '+%Y-%m-%d %H:%M:%S UTC'); source tree $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown); $zinf built $(date -u -r "$zinf" '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload: prompts of $prompt_len tokens, $gen_len new tokens each; $threads threads; $passes passes"
if [ "${ZINF_AUTO_CALIBRATE:-1}" = 1 ]; then
  export XDG_CACHE_HOME="$work/xdg"
  "$zinf" calibrate --file "$streamed_model/weights.bin" --threads "$threads" 2>&1 |
    sed 's/^\[info\] /    /'
else
  echo "calibration: the user's (${XDG_CACHE_HOME:-~/.cache}/zinf/calibration.json), if any"
fi

# run NAME MODEL PROMPTS BATCH PASS [ARGS...]: one zinf bench run; appends "NAME,BATCH,as-run
# batch,generation tok/s,decode tok/s,predicted decode tok/s,bound" to results.csv, or prints why not.
run() {
  local name=$1 model=$2 num_prompts=$3 batch=$4 pass=$5
  shift 5
  local tag="$name-$batch-$pass-$RANDOM"
  local start end
  start=$(date +%s.%N)
  if ! "$zinf" bench --model "$model" --batch-size "$batch" --prompt-len "$prompt_len" \
      --gen-len "$gen_len" --num-prompts "$num_prompts" --repeat 1 --threads "$threads" \
      --csv "$work/$tag.csv" "$@" >"$work/$tag.log" 2>&1; then
    if grep -q "too small" "$work/$tag.log"; then
      printf '  pass %d  %-18s does not fit the budget\n' "$pass" "$name batch $batch"
      echo "$name,$batch,-,0,0,0,does-not-fit" >>"$work/results.csv"
      return
    fi
    cat "$work/$tag.log" >&2
    echo "FAIL  zinf bench ($name, batch $batch) failed" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  grep -E '\(auto\): ' "$work/$tag.log" | sed 's/^\[info\] /    /' || true
  awk -F, -v name="$name" -v batch="$batch" -v pass="$pass" -v start="$start" -v end="$end" \
      -v out="$work/results.csv" '
    $1 == "weights" { next }
    { printf "  pass %d  %-18s ran batch %4d: generation %8.1f tok/s, decode %8.1f tok/s (plan: %.1f, %s-bound); %.0f s\n",
             pass, name " batch " batch, $3, $12, $10, $15, $16, end - start
      print name "," batch "," $3 "," $12 "," $10 "," $15 "," $16 >> out }' "$work/$tag.csv"
}

sweep() {  # sweep NAME MODEL PROMPTS "BATCHES" [ARGS...]
  local name=$1 model=$2 num_prompts=$3
  local -a batches
  read -r -a batches <<<"$4"
  shift 4
  echo
  echo "== $name: $model, $num_prompts prompts $*"
  local pass idx
  for ((pass = 1; pass <= passes; ++pass)); do
    run "$name" "$model" "$num_prompts" auto "$pass" "$@"
    for ((idx = 0; idx < ${#batches[@]}; ++idx)); do
      local batch=${batches[idx]}
      (( pass % 2 == 0 )) && batch=${batches[${#batches[@]} - 1 - idx]}
      run "$name" "$model" "$num_prompts" "$batch" "$pass" "$@"
    done
    run "$name" "$model" "$num_prompts" auto "$pass" "$@"
  done
}

sweep streamed "$streamed_model" "$streamed_prompts" "${streamed_batches[*]}" --cpu-mem "$streamed_cpu_mem"
sweep resident "$resident_model" "$resident_prompts" "${resident_batches[*]}"

echo
# Means over passes, per checkpoint in the order they ran; a batch that did not fit is left out.
awk -F, '
  $7 == "does-not-fit" { next }
  { if (!($1 in seen)) { seen[$1] = 1; names[++num_names] = $1 }
    key = $1 SUBSEP $2
    if (!(key in n)) batches[$1] = batches[$1] " " $2
    sum[key] += $4; dec[key] += $5; n[key]++; ran[key] = $3 }
  END {
    failed = 0
    for (i = 1; i <= num_names; ++i) {
      name = names[i]; best = 0; best_batch = ""
      count = split(batches[name], list, " ")
      for (j = 1; j <= count; ++j) {
        key = name SUBSEP list[j]
        rate = sum[key] / n[key]
        printf "%s batch %s: generation %.1f tok/s, decode %.1f tok/s (mean of %d)\n",
               name, (list[j] == "auto" ? "auto (" ran[key] ")" : list[j]), rate, dec[key] / n[key], n[key]
        if (list[j] != "auto" && rate > best) { best = rate; best_batch = list[j] }
      }
      auto_key = name SUBSEP "auto"
      ratio = best > 0 ? sum[auto_key] / n[auto_key] / best : 0
      if (ratio < 0.9) failed = 1
      printf "%s  %s: auto chose batch %s: %.1f tok/s; best fixed batch %s: %.1f tok/s; auto / best %.3f (must be >= 0.90)\n",
             (ratio >= 0.9 ? "PASS" : "FAIL"), name, ran[auto_key], sum[auto_key] / n[auto_key],
             best_batch, best, ratio
    }
    exit failed
  }' "$work/results.csv"
