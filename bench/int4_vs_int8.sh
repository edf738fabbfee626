#!/usr/bin/env bash
# int4 weights against int8 on the same machine (issue #25, item 3), in one run:
#  1. TinyLlama-1.1B-shape synthetic checkpoints (int8; int4 in groups of 64), weights resident:
#     decode at batch 1 and batch 8, prefill of one 128- and one 512-token prompt. The two dtypes
#     alternate, ROUNDS times, so a noisy neighbour hits both alike; medians and int4 ÷ int8.
#  2. Perplexity of stories260K on bench/data's text, int4 in groups of 32/64/128, and with
#     --before BIN the same from another zinf build (what the change to int4's arithmetic costs).
# Usage: bench/int4_vs_int8.sh [--rounds N] [--threads T] [--before ZINF]
#        (ZINF_BENCH_DIR: where checkpoints are cached; ZINF_BUILD_DIR: which build runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
zinf=$(zinf_binary "$root")
rounds=5 threads=$(nproc) before=""
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
work=${ZINF_BENCH_DIR:-$root/build/bench-work}
mkdir -p "$work"
config="$root/bench/configs/tinyllama-1.1b.json"
synthetic_checkpoint "$zinf" "$config" "$work/tinyllama-int8" int8 >&2
synthetic_checkpoint "$zinf" "$config" "$work/tinyllama-int4-g64" int4 --group-size 64 >&2

echo "# int4 vs int8, $(lscpu | sed -n 's/^Model name: *//p'), $threads threads"
echo
echo "zinf build: $("$zinf" --version 2>&1 | sed -n "s/^build: *//p"), $(date -u +%F), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# One `zinf bench` configuration: prints "prefill_tok_s decode_tok_s".
measure() {
  local model=$1; shift
  "$zinf" bench --model "$model" --weights resident --repeat 1 --threads "$threads" \
    --csv "$work/int4_vs_int8.csv" "$@" >/dev/null 2>&1
  awk -F, 'NR == 2 { print $8, $10 }' "$work/int4_vs_int8.csv"
}

declare -A samples
for ((round = 1; round <= rounds; ++round)); do
  for dtype in int8 int4; do
    model="$work/tinyllama-int8"
    [ "$dtype" = int4 ] && model="$work/tinyllama-int4-g64"
    read -r pp128 b1 < <(measure "$model" --batch-size 1 --num-prompts 2 --prompt-len 128 --gen-len 32)
    read -r _ b8 < <(measure "$model" --batch-size 8 --num-prompts 8 --prompt-len 16 --gen-len 64)
    read -r pp512 _ < <(measure "$model" --batch-size 1 --num-prompts 1 --prompt-len 512 --gen-len 2)
    samples[$dtype,decode1]+="$b1 " samples[$dtype,decode8]+="$b8 "
    samples[$dtype,pp128]+="$pp128 " samples[$dtype,pp512]+="$pp512 "
    echo "round $round $dtype: decode b1 $b1, decode b8 $b8, prefill pp128 $pp128, pp512 $pp512" >&2
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "## TinyLlama-1.1B shape, weights resident: tok/s, median of $rounds alternating rounds"
echo
echo "int4 ÷ int8 is the ratio of the medians; \"per round\" the median of each round's own ratio (its"
echo "int8 and int4 runs back to back), the steadier of the two when the host's speed drifts."
echo
echo "| measure | int8 | int4-g64 | int4 ÷ int8 | per round | goal | all int8 samples | all int4 samples |"
echo "|---|---:|---:|---:|---:|---:|---|---|"
for metric in decode1 decode8 pp128 pp512; do
  i8=$(echo "${samples[int8,$metric]}" | median)
  i4=$(echo "${samples[int4,$metric]}" | median)
  per_round=$(paste -d' ' <(echo "${samples[int8,$metric]}" | tr ' ' '\n' | grep -v '^$') \
    <(echo "${samples[int4,$metric]}" | tr ' ' '\n' | grep -v '^$') |
    awk '{ printf "%s ", $2 / $1 }' | median)
  case $metric in
    decode1) name="decode, batch 1"; goal="≥ 1.3" ;;
    decode8) name="decode, batch 8"; goal="≥ 0.9" ;;
    pp128) name="prefill, 128-token prompt"; goal="≥ 0.9" ;;
    pp512) name="prefill, 512-token prompt"; goal="≥ 0.9" ;;
  esac
  awk -v n="$name" -v a="$i8" -v b="$i4" -v r="$per_round" -v g="$goal" \
    -v sa="${samples[int8,$metric]}" -v sb="${samples[int4,$metric]}" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.2f× | %.2f× | %s | %s | %s |\n", n, a, b, b / a, r, g, sa, sb }'
done

echo
echo "## Perplexity, stories260K, $(wc -c <"$root/bench/data/stories260k-sampled.txt") bytes of text"
echo
echo "| weights | perplexity (this build) | perplexity (--before) | change |"
echo "|---|---:|---:|---:|"
ppl() {
  "$1" perplexity --model "$2" --text "$root/bench/data/stories260k-sampled.txt" \
    --threads "$threads" --json "$work/ppl.json" >/dev/null 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["perplexity"])' "$work/ppl.json"
}
for variant in int8 int4-g32 int4-g64 int4-g128; do
  model="$work/stories260K-$variant"
  args=(--dtype "${variant%-g*}")
  [[ $variant == int4-g* ]] && args+=(--group-size "${variant#int4-g}")
  [ -f "$model/manifest.json" ] ||
    "$zinf" convert "$root/models/stories260K" "$model" "${args[@]}" >/dev/null 2>&1
  now=$(ppl "$zinf" "$model")
  then=""
  [ -n "$before" ] && then=$(ppl "$before" "$model")
  awk -v w="$variant" -v a="$now" -v b="$then" 'BEGIN {
    if (b == "") printf "| %s | %.4f | — | — |\n", w, a
    else printf "| %s | %.4f | %.4f | %+.2f%% |\n", w, a, b, (a / b - 1) * 100 }'
done
