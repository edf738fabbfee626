#!/usr/bin/env bash
# What quantization costs and what it buys (issue: quantized weights), in one run:
#  1. perplexity of stories260K on bench/data/stories260k-sampled.txt for f32, int8, int4-g32,
#     int4-g64 (and f32 weights with an int8 KV cache), with the relative change to f32;
#  2. decode tokens/s at batch 1 with the weights DRAM-resident, f32 vs int8 vs int4-g64, on a
#     synthetic TinyLlama-1.1B-shape checkpoint (4.4 GB in f32), side by side with the same
#     threads; prints the int8 ÷ f32 ratio (target >= 1.7).
# Usage: bench/quantization.sh [THREADS]   (ZINF_BENCH_DIR: where checkpoints are cached)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${ZINF_BUILD_DIR:-$root/build}
[ -x "$build_dir/zinf" ] || "$root/scripts/build"
zinf="$build_dir/zinf"
threads=${1:-$(nproc)}
work=${ZINF_BENCH_DIR:-$build_dir/bench-work}
mkdir -p "$work"
text="$root/bench/data/stories260k-sampled.txt"

echo "## Perplexity, stories260K, $(wc -c <"$text") bytes of text"
echo
echo "| weights | KV cache | perplexity | vs f32 | tokens/s |"
echo "| --- | --- | --- | --- | --- |"
f32_ppl=""
for variant in f32 int8 int4-g32 int4-g64 f32+kv-int8; do
  model="$work/stories260K-${variant%+*}"
  case $variant in
    int8) args=(--dtype int8) ;;
    int4-g*) args=(--dtype int4 --group-size "${variant#int4-g}") ;;
    *) args=() ;;
  esac
  kv=f32
  [ "$variant" = f32+kv-int8 ] && kv=int8
  [ -f "$model/manifest.json" ] || "$zinf" convert "$root/models/stories260K" "$model" "${args[@]}" 2>/dev/null
  "$zinf" perplexity --model "$model" --text "$text" --threads "$threads" --kv-dtype "$kv" \
    --json "$work/ppl.json" >/dev/null 2>&1
  read -r ppl se tps < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["perplexity"], r["standard_error"], r["tokens_per_second"])' "$work/ppl.json")
  [ -z "$f32_ppl" ] && f32_ppl=$ppl
  awk -v w="${variant%+*}" -v kv="$kv" -v p="$ppl" -v se="$se" -v f="$f32_ppl" -v t="$tps" \
    'BEGIN { printf "| %s | %s | %.4f ± %.4f | %+.2f%% | %.0f |\n", w, kv, p, se, (p / f - 1) * 100, t }'
done

echo
echo "## Decode at batch 1, TinyLlama-1.1B shape (synthetic), weights resident, $threads threads"
echo
config="$root/bench/configs/tinyllama-1.1b.json"
for dtype in f32 int8 int4; do
  model="$work/tinyllama-$dtype"
  [ -f "$model/manifest.json" ] || "$zinf" convert --synthetic "$config" "$model" --dtype "$dtype" >/dev/null 2>&1
done
rates=()
for dtype in f32 int8 int4; do
  model="$work/tinyllama-$dtype"
  "$zinf" bench --model "$model" --batch-size 1 --prompt-len 8 --gen-len 32 --weights resident \
    --repeat 3 --threads "$threads" --csv "$work/decode-$dtype.csv" >/dev/null 2>&1
  rate=$(awk -F, 'NR == 2 { print $10 }' "$work/decode-$dtype.csv")
  rates+=("$rate")
  printf '%-5s %8.2f decode tok/s  (%s MiB of weights)\n' "$dtype" "$rate" \
    "$(( $(stat -c %s "$model/weights.bin") / 1048576 ))"
done
awk -v f="${rates[0]}" -v i8="${rates[1]}" -v i4="${rates[2]}" 'BEGIN {
  printf "int8 / f32 = %.2f (target >= 1.70); int4-g64 / f32 = %.2f\n", i8 / f, i4 / f;
  exit i8 / f >= 1.7 ? 0 : 1 }'
