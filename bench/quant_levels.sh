#!/usr/bin/env bash
# int8 or int4 matrix products by kernel level, and against another zinf build, on one machine in
# one run: a TinyLlama-1.1B-shape synthetic checkpoint, weights resident, `zinf bench` for prefill of
# 128- and 512-token prompts one at a time, decode at batch 1, and decode of 8 and 32 sequences at once
# (16-token prompts, 32 new tokens). Each level is capped with ZINF_CPU_ISA; the runs alternate,
# ROUNDS times, so a noisy stretch of the machine hits every column alike; medians are printed.
# Usage: bench/quant_levels.sh [--dtype int8|int4] [--group-size G] [--levels amx,avx512,avx2]
#        [--before ZINF] [--rounds N] [--threads T]   (default int8; int4 groups of 32)
#        (ZINF_BENCH_DIR: where the checkpoint is cached; ZINF_BUILD_DIR: which build runs)
# Named bench/int8_levels.sh until int4 joined it (the int8 results of 2026-11-26 use that name).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
zinf=$(zinf_binary "$root")
levels=amx,avx512,avx2 rounds=3 threads=$(nproc) before="" dtype=int8 group_size=32
while [ $# -gt 0 ]; do
  case $1 in
    --dtype) dtype=$2; shift 2 ;;
    --group-size) group_size=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
work=${ZINF_BENCH_DIR:-$root/build/bench-work}
mkdir -p "$work"
case $dtype in
  int8) model="$work/tinyllama-int8" convert_flags=() ;;
  int4) model="$work/tinyllama-int4-g$group_size" convert_flags=(--group-size "$group_size") ;;
  *) echo "--dtype must be int8 or int4" >&2; exit 2 ;;
esac
synthetic_checkpoint "$zinf" "$root/bench/configs/tinyllama-1.1b.json" "$model" "$dtype" \
  "${convert_flags[@]}" >&2

# Columns: "LABEL=BINARY=LEVEL"; a level the CPU lacks is capped to the best it has, so say so.
columns=()
for level in ${levels//,/ }; do columns+=("$level=$zinf=$level"); done
if [ -n "$before" ]; then
  best=$("$before" --version 2>&1 | sed -n 's/^cpu isa: *\([a-z0-9]*\).*/\1/p')
  columns+=("before ($best)=$before=")
fi

echo "# $(basename "$model") by kernel level, $(lscpu | sed -n 's/^Model name: *//p'), $threads threads"
echo
echo "$("$zinf" --version 2>&1 | sed -n 2p | sed 's/^ *//')$([ -n "$before" ] && echo "; before: $("$before" --version 2>&1 | sed -n 2p | sed 's/^ *//')"), $(date -u +%F), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# One configuration: prints "prefill_tok_s decode_tok_s" of each batch size, space-separated.
measure() {
  local binary=$1 level=$2; shift 2
  ZINF_CPU_ISA=$level "$binary" bench --model "$model" --weights resident --repeat 1 \
    --threads "$threads" --csv "$work/quant_levels.csv" "$@" >/dev/null 2>&1
  awk -F, 'NR > 1 { printf "%s %s ", $8, $10 }' "$work/quant_levels.csv"
}

tests=("pp128" "pp512" "decode x1" "decode x8" "decode x32")
declare -A samples
for ((round = 1; round <= rounds; round++)); do
  for column in "${columns[@]}"; do
    IFS== read -r label binary level <<< "$column"
    read -r pp128 _ <<< "$(measure "$binary" "$level" --batch-size 1 --prompt-len 128 --gen-len 1 --num-prompts 4)"
    read -r pp512 _ <<< "$(measure "$binary" "$level" --batch-size 1 --prompt-len 512 --gen-len 1 --num-prompts 2)"
    read -r _ tg1 <<< "$(measure "$binary" "$level" --batch-size 1 --prompt-len 8 --gen-len 32 --num-prompts 2)"
    read -r _ tg8 _ tg32 <<< "$(measure "$binary" "$level" --batch-size 8,32 --prompt-len 16 --gen-len 32)"
    values=("$pp128" "$pp512" "$tg1" "$tg8" "$tg32")
    for i in "${!tests[@]}"; do samples["$label|${tests[$i]}"]+="${values[$i]} "; done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
header="| tok/s (median of $rounds) |" rule="|---|"
for column in "${columns[@]}"; do header+=" ${column%%=*} |"; rule+="---:|"; done
echo "$header"
echo "$rule"
for test in "${tests[@]}"; do
  row="| $test |"
  for column in "${columns[@]}"; do
    row+=" $(echo "${samples["${column%%=*}|$test"]}" | median) |"
  done
  echo "$row"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
