#!/usr/bin/env bash
# A mixture-of-experts model larger than DRAM, streamed from the weights file (issue #21):
# Mixtral-8x7B's shape in int4 (groups of 32, ~26 GB). For batches 1/16/64 of one-token prompts it
# runs zinf generate with every extent streamed (--weights stream) and reports per decode step: the
# bytes read against the dense part plus the routed experts' bytes (at batch 1, k experts per
# layer), the read rate while reading against fio's O_DIRECT rate on the same file, and tok/s
# against the plan's bound. With LLAMACPP_BIN it runs llama.cpp on the same weights (bench/
# zinf_to_gguf.py writes zinf's int4-g32 as Q4_1, bit for bit), read through mmap as its users do.
# With --cpu-mem it also runs zinf with the planner's placement under that DRAM budget (always-used
# extents and as many experts as fit in DRAM, the rest streamed), the fair match for llama.cpp's
# page cache. The plans' bounds use zinf calibrate's rates (assumed ones until it has run).
#
# Usage: bench/moe_streaming.sh [LLAMACPP_BIN] [--config FILE] [--batches 1,16,64] [--steps N]
#   [--threads N] [--work DIR (default $ZINF_BUILD_DIR/moe-streaming)] [--out FILE.md]
#   [--llama-timeout SECONDS (default 900: a llama.cpp run past it is reported as such)]
#   [--cpu-mem SIZE (e.g. 21G: also run zinf's own placement under that budget)]
# Needs fio, jq and GNU time (scripts/install-deps --bench); exits 0 with SKIP without them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
llamacpp_bin=${LLAMACPP_BIN:-}
config=$root/configs/mixtral-8x7b.json
batches=1,16,64
steps=4
threads=$(nproc)
work=${ZINF_BUILD_DIR:-$root/build}/moe-streaming
out_file=
llama_timeout=900
cpu_mem=
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    --llama-timeout) llama_timeout=$2; shift 2 ;;
    --cpu-mem) cpu_mem=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "moe_streaming.sh: unknown option $1" >&2; exit 1 ;;
    *) llamacpp_bin=$1; shift ;;
  esac
done
for tool in fio jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (scripts/install-deps --bench)"; exit 0; }
done
zinf=$(zinf_binary "$root")
mkdir -p "$work"
name=$(basename "$config" .json)
model=$work/$name-int4-g32.zinf
weights=$model/weights.bin
if [ ! -f "$model/manifest.json" ]; then
  echo "writing $model"
  rm -rf "$model.partial"
  "$zinf" convert --synthetic "$config" "$model.partial" --dtype int4 --group-size 32 -q
  mv "$model.partial" "$model"
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The disk: one sequential O_DIRECT pass over (at most 8 GiB of) the weights file, 1 MiB reads, 8
# in flight.
fio_bytes=$(stat -c %s "$weights")
fio_bytes=$(( fio_bytes < 8 << 30 ? fio_bytes / (1 << 20) * (1 << 20) : 8 << 30 ))
fio --name=seqread --filename="$weights" --readonly --rw=read --direct=1 --bs=1M --iodepth=8 \
  --ioengine=io_uring --numjobs=1 --size="$fio_bytes" --output-format=json \
  --output="$work/fio.json" >/dev/null
fio_gbps=$(jq '.jobs[0].read.io_bytes / .jobs[0].read.runtime * 1000 / 1e9' "$work/fio.json")

# Bytes a one-token step needs: every always-used extent, and k experts of each sparse layer.
read -r dense_bytes expert_bytes k sparse_layers < <(python3 - "$model/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
dense = sum(e["padded_bytes"] for e in m["extents"] if e["kind"] != "expert")
experts = [e for e in m["extents"] if e["kind"] == "expert"]
layers = len({e["layer"] for e in experts})
print(dense, experts[0]["padded_bytes"], m["config"]["moe"]["experts_per_token"], layers)
PY
)
routed_bytes=$((dense_bytes + k * sparse_layers * expert_bytes))

# zinf_run BATCH NAME PLACEMENT...: one-token prompts, $steps new tokens each, metrics to m-NAME-BATCH.
zinf_run() {
  local batch=$1 name=$2 i
  shift 2
  for ((i = 0; i < batch; ++i)); do echo "{\"id\": $i, \"prompt_ids\": [$((1 + i * 7 % 30000))]}"; done \
    > "$work/p$batch.jsonl"
  rm -f "$work/o-$name-$batch.jsonl" "$work/o-$name-$batch.jsonl.run.json"
  "$zinf" generate --model "$model" --prompts "$work/p$batch.jsonl" \
    --out "$work/o-$name-$batch.jsonl" "$@" --batch-size "$batch" \
    --step-tokens "$batch" --max-context $((steps + 4)) --max-new-tokens "$steps" --ignore-eos \
    --threads "$threads" --metrics-json "$work/m-$name-$batch.json" 2> "$work/zinf-$name-$batch.log"
}

rows=()
placed_rows=()
IFS=, read -ra batch_list <<< "$batches"
for batch in "${batch_list[@]}"; do
  echo "zinf generate, batch $batch, $steps steps, every extent streamed"
  zinf_run "$batch" stream --weights stream
  rows+=("$(jq -r --argjson routed "$routed_bytes" --argjson fio "$fio_gbps" --argjson batch "$batch" '
    (.tiers.nvme.streamed_bytes / .steps.count) as $per_step
    | [$batch, .tokens_per_s.decode, .bound.predicted_decode_tokens_per_s,
       ($per_step / 1e9), (if $batch == 1 then $per_step / $routed else "-" end),
       .tiers.nvme.read_gbps, (.tiers.nvme.read_gbps / $fio),
       (.experts.bytes_moved / .experts.bytes_if_all_moved)] | @tsv' \
    "$work/m-stream-$batch.json")")
  if [ -n "$cpu_mem" ]; then
    echo "zinf generate, batch $batch, $steps steps, placed under --cpu-mem $cpu_mem"
    zinf_run "$batch" placed --cpu-mem "$cpu_mem"
    placed_rows+=("$(jq -r '[.tokens_per_s.decode, (.tiers.nvme.streamed_bytes / .steps.count / 1e9),
       .tiers.nvme.read_gbps, .bound.predicted_decode_tokens_per_s, .bound.kind,
       (.tiers.dram.resident_bytes / 1073741824)] | @tsv' "$work/m-placed-$batch.json")")
  fi
done

llama_rows=()
if [ -n "$llamacpp_bin" ] && [ -x "$llamacpp_bin/llama-bench" ]; then
  gguf=$work/$name-Q4_1.gguf
  [ -f "$gguf" ] || python3 "$root/bench/zinf_to_gguf.py" convert "$model" "$gguf"
  for batch in "${batch_list[@]}"; do
    echo "llama.cpp, batch $batch, mmap"
    # Each run starts with a cold page cache where we may empty it (root), as zinf's O_DIRECT
    # reads always are; otherwise it inherits whatever the cache holds.
    if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
    llama_rows+=("$(peer_streamed_decode "$llamacpp_bin" "$gguf" "$threads" "$batch" "$steps" \
      "$llama_timeout" "$work/llama-$batch")")
  done
fi

commit=$(git -C "$root" rev-parse --short HEAD)
{
  echo "# $name int4-g32 streamed from the weights file: zinf (O_DIRECT) vs llama.cpp (mmap)"
  echo
  echo "$(date -u +%F), zinf $commit, $(lscpu | sed -n 's/^Model name: *//p'), $threads threads,"
  echo "$(free -g | awk '/^Mem:/ {print $2}') GiB of DRAM for $(du -BG --apparent-size "$weights" | cut -f1) of weights;"
  echo "load average before: $load_before. fio O_DIRECT sequential read: $fio_gbps GB/s."
  if [ "${#llama_rows[@]}" -gt 0 ]; then
    echo "llama.cpp runs start with the page cache $( [ -w /proc/sys/vm/drop_caches ] && echo "emptied" || echo "as it was")."
  fi
  echo "A one-token step needs $(python3 -c "print(round($routed_bytes / 1e9, 2))") GB: the always-used extents and $k experts in each of $sparse_layers layers."
  echo
  echo "| batch | zinf decode tok/s | plan's bound tok/s | GB read per step | ÷ dense + routed | read GB/s while reading | ÷ fio | expert bytes ÷ all experts | llama.cpp tok/s |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for i in "${!rows[@]}"; do
    IFS=$'\t' read -r b tok bound gb ratio rate vs_fio share <<< "${rows[$i]}"
    printf '| %s | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %.2f | %s |\n' "$b" "$tok" "$bound" \
      "$gb" "$( [ "$ratio" = "-" ] && echo "—" || printf '%.3f' "$ratio")" "$rate" "$vs_fio" \
      "$share" "${llama_rows[$i]:-—}"
  done
  if [ -n "$cpu_mem" ]; then
    echo
    echo "zinf's own placement under --cpu-mem $cpu_mem:"
    echo
    echo "| batch | zinf decode tok/s | GiB resident in DRAM | GB read per step | read GB/s while reading | plan's bound tok/s | llama.cpp tok/s |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    for i in "${!placed_rows[@]}"; do
      IFS=$'\t' read -r tok gb rate bound kind resident <<< "${placed_rows[$i]}"
      printf '| %s | %.3f | %.1f | %.2f | %.2f | %.2f (%s) | %s |\n' "${batch_list[$i]}" "$tok" \
        "$resident" "$gb" "$rate" "$bound" "$kind" "${llama_rows[$i]:-—}"
    done
  fi
} | tee ${out_file:+"$out_file"}
