#!/usr/bin/env bash
# Every mixture-of-experts config in configs/ through `zinf convert --synthetic` and `zinf plan`
# (issue #21's acceptance), as a Markdown report. Per config:
#  1. the full-size synthetic checkpoint in int4 (groups of 64), loaded and run for 2 tokens with
#     every extent streamed, then deleted — or, where the disk cannot hold it, the converter's
#     refusal (it reserves the file's size before writing anything);
#  2. the same config cut to 2 layers (every tensor shape of the real model), converted and run the
#     same way — so the biggest models are exercised on a small disk too;
#  3. `zinf plan --config` of the full model in int4 on this machine.
# Usage: bench/moe_configs.sh [--work DIR (default $ZINF_BUILD_DIR/moe-configs)] [--out FILE.md]
#   [--configs a,b (names in configs/, default every MoE one)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
work=${ZINF_BUILD_DIR:-$root/build}/moe-configs
out_file=
configs=mixtral-8x7b,mixtral-8x22b,qwen1.5-moe-a2.7b,qwen2-57b-a14b,qwen3-30b-a3b,qwen3-235b-a22b
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "moe_configs.sh: unknown option $1" >&2; exit 1 ;;
  esac
done
command -v jq >/dev/null || { echo "SKIP: jq not found (scripts/install-deps --bench)"; exit 0; }
zinf=$(zinf_binary "$root")
mkdir -p "$work"
echo '{"id": 0, "prompt_ids": [1, 2, 3]}' > "$work/prompt.jsonl"

# convert_and_run CONFIG NAME: "size | seconds | first generated ids" or the converter's error.
convert_and_run() {
  local config=$1 name=$2 dir=$work/$2.zinf start seconds size ids
  rm -rf "$dir" "$work/$name.jsonl"
  start=$(date +%s.%N)
  if ! "$zinf" convert --synthetic "$config" "$dir" --dtype int4 --group-size 64 -q \
      2> "$work/$name.convert.log"; then
    echo "refused: $(sed 's/^\[error\] //; s/|/\\|/g' "$work/$name.convert.log" | tail -1) | — | —"
    return
  fi
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  size=$(du -B1 --apparent-size "$dir/weights.bin" | cut -f1)
  "$zinf" generate --model "$dir" --prompts "$work/prompt.jsonl" --out "$work/$name.jsonl" \
    --max-new-tokens 2 --ignore-eos --weights stream --threads "$(nproc)" -q \
    2> "$work/$name.generate.log" || { ids="generate failed: $(tail -1 "$work/$name.generate.log")"; }
  ids=${ids:-$(jq -c '.token_ids' "$work/$name.jsonl")}
  rm -rf "$dir"
  echo "$(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1e9 }') GB | $seconds s | $ids"
}

IFS=, read -ra names <<< "$configs"
{
  echo "# Mixture-of-experts configs: convert --synthetic (int4-g64) and plan"
  echo
  echo "$(date -u +%F), zinf $(git -C "$root" rev-parse --short HEAD), $(lscpu | sed -n 's/^Model name: *//p'),"
  echo "$(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB of DRAM, $(df -BG --output=avail "$work" | tail -1 | tr -d ' ') free on the work disk at the start."
  echo
  echo "| config | layers | full size: weights.bin | convert | 2 generated ids | 2 layers: weights.bin | convert | 2 generated ids |"
  echo "|---|---:|---|---:|---|---|---:|---|"
  for name in "${names[@]}"; do
    config=$root/configs/$name.json
    [ -f "$config" ] || { echo "moe_configs.sh: $config not found" >&2; exit 1; }
    jq '.num_hidden_layers = 2' "$config" > "$work/$name-2layers.json"
    echo "$name: full size" >&2
    full=$(convert_and_run "$config" "$name")
    echo "$name: 2 layers" >&2
    cut=$(convert_and_run "$work/$name-2layers.json" "$name-2layers")
    echo "| $name | $(jq .num_hidden_layers "$config") | $full | $cut |"
  done
  echo
  echo "Plans of the full models in int4 on this machine (\`zinf plan --config configs/NAME.json --dtype int4\`):"
  for name in "${names[@]}"; do
    echo
    echo "\`\`\`"
    "$zinf" plan --config "$root/configs/$name.json" --dtype int4 2>&1 | grep -v '^\[' || true
    echo "\`\`\`"
  done
} | tee ${out_file:+"$out_file"}
