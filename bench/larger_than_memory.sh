#!/usr/bin/env bash
# A dense model larger than DRAM (issue #25, item 5): zinf streaming from its weights file under a
# DRAM budget against a llama.cpp-family peer reading the same weights through mmap, its default.
# For each batch of one-token prompts both run from an emptied page cache (when run as root), and
# the report gives decode tok/s, zinf's plan's bound, and the bytes each read from the disk: the
# kernel's count of the process's block reads (getrusage's inblock, through GNU time), which
# counts page-cache misses and O_DIRECT reads alike, so both tools are measured by one rule.
# The checkpoint (Llama-2-13B's shape in f16 by default, ~26 GB) and its GGUF are written once
# into --work and reused; f16 becomes F16 and int4 (groups of 32) Q4_1, bit for bit. zinf runs
# first, then the peer: with --consume-checkpoint the GGUF is made by freeing the zinf file's blocks
# as they are copied (a disk that can't hold both, e.g. Llama-2-70B's shape in int4: 2 × 43 GB), so
# the next run writes the checkpoint again.
#
# Usage: bench/larger_than_memory.sh LLAMACPP_BIN [--config FILE] [--dtype f16|int4]
#   [--cpu-mem SIZE (default 16G)] [--batches 1,8,32] [--steps N (default 4)] [--threads N]
#   [--work DIR (default $ZINF_BUILD_DIR/larger-than-memory)] [--out FILE.md]
#   [--llama-timeout SECONDS (default 1800: a peer run past it is reported as such)]
#   [--consume-checkpoint]
# Needs fio, jq and GNU time (scripts/install-deps --bench); exits 0 with SKIP without them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
llamacpp_bin=${LLAMACPP_BIN:-}
config=$root/configs/llama-2-13b.json
dtype=f16
cpu_mem=16G
batches=1,8,32
steps=4
threads=$(nproc)
work=${ZINF_BUILD_DIR:-$root/build}/larger-than-memory
out_file=
llama_timeout=1800
consume=
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --cpu-mem) cpu_mem=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    --llama-timeout) llama_timeout=$2; shift 2 ;;
    --consume-checkpoint) consume=--consume-source; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "larger_than_memory.sh: unknown option $1" >&2; exit 1 ;;
    *) llamacpp_bin=$1; shift ;;
  esac
done
for tool in fio jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (scripts/install-deps --bench)"; exit 0; }
done
case "$dtype" in
  f16) convert_flags=(); gguf_type=F16 ;;
  int4) convert_flags=(--group-size 32); gguf_type=Q4_1 ;;
  *) echo "larger_than_memory.sh: --dtype is f16 or int4, not $dtype" >&2; exit 1 ;;
esac
if [ -z "$llamacpp_bin" ] || [ ! -x "$llamacpp_bin/llama-bench" ]; then
  echo "larger_than_memory.sh: give the folder of a llama.cpp build (llama-bench, llama-batched-bench)" >&2
  exit 1
fi
zinf=$(zinf_binary "$root")
name=$(basename "$config" .json)
model=$work/$name-$dtype.zinf
gguf=$work/$name-$gguf_type.gguf
synthetic_checkpoint "$zinf" "$config" "$model" "$dtype" "${convert_flags[@]}"
weights=$model/weights.bin
weights_gb=$(du -B1 --apparent-size "$weights" | awk '{printf "%.1f", $1 / 1e9}')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
can_drop=$([ -w /proc/sys/vm/drop_caches ] && echo yes || echo no)
drop_page_cache() { if [ "$can_drop" = yes ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }

# fio_gbps FILE: one sequential O_DIRECT pass over 8 GiB of FILE, 1 MiB reads, 16 in flight, after
# the writes still in the page cache reached the disk (they would share its rate).
fio_gbps() {
  sync
  fio --name=seqread --filename="$1" --readonly --rw=read --direct=1 --bs=1M --iodepth=16 \
    --ioengine=io_uring --numjobs=1 --size=8G --output-format=json --output="$work/fio.json" >/dev/null
  jq '.jobs[0].read.io_bytes / .jobs[0].read.runtime * 1000 / 1e9' "$work/fio.json"
}
fio_before=$(fio_gbps "$weights")
# zinf calibrate on the same file, so that the plan's bound uses this disk's rate.
"$zinf" calibrate --file "$weights" --threads "$threads" -q > "$work/calibrate.log" 2>&1

# timed OUT_PREFIX CMD...: runs CMD with GNU time writing "inblocks peak_rss_kib" to OUT_PREFIX.io.
timed() {
  local prefix=$1
  shift
  /usr/bin/time -o "$prefix.io" -f '%I %M' "$@"
}
# disk_gb PREFIX: the GB the run read from the disk (inblock counts 512-byte units).
disk_gb() { awk '{printf "%.2f", $1 * 512 / 1e9}' "$1.io"; }
peak_gib() { awk '{printf "%.1f", $2 / 1048576}' "$1.io"; }

zinf_rows=()
llama_rows=()
IFS=, read -ra batch_list <<< "$batches"
for batch in "${batch_list[@]}"; do
  echo "zinf generate, batch $batch, $steps new tokens, --cpu-mem $cpu_mem"
  for ((i = 0; i < batch; ++i)); do echo "{\"id\": $i, \"prompt_ids\": [$((1 + i * 7 % 30000))]}"; done \
    > "$work/p$batch.jsonl"
  rm -f "$work/o-$batch.jsonl" "$work/o-$batch.jsonl.run.json"
  drop_page_cache
  timed "$work/zinf-$batch" "$zinf" generate --model "$model" --prompts "$work/p$batch.jsonl" \
    --out "$work/o-$batch.jsonl" --cpu-mem "$cpu_mem" --batch-size "$batch" \
    --step-tokens "$batch" --max-context $((steps + 4)) --max-new-tokens "$steps" --ignore-eos \
    --threads "$threads" --metrics-json "$work/m-$batch.json" 2> "$work/zinf-$batch.log"
  zinf_rows+=("$(jq -r '[.tokens_per_s.decode, .bound.predicted_decode_tokens_per_s, .bound.kind,
      (.tiers.dram.resident_bytes / 1e9), (.tiers.nvme.streamed_bytes / .steps.count / 1e9),
      .tiers.nvme.read_gbps, .steps.count] | @tsv' "$work/m-$batch.json")	$(disk_gb "$work/zinf-$batch")	$(peak_gib "$work/zinf-$batch")")
done

if [ ! -f "$gguf" ]; then
  echo "writing $gguf${consume:+ (freeing $weights as it goes)}"
  python3 "$root/bench/zinf_to_gguf.py" convert "$model" "$gguf" $consume
fi
sync
for batch in "${batch_list[@]}"; do
  echo "peer, batch $batch, mmap"
  drop_page_cache
  tok_s=$(peer_streamed_decode "$llamacpp_bin" "$gguf" "$threads" "$batch" "$steps" \
    "$llama_timeout" "$work/llama-$batch")
  passes=$(( (batch == 1 ? 1 : 2) + steps ))  # as peer_streamed_decode counts them
  llama_rows+=("$tok_s	$(disk_gb "$work/llama-$batch")	$passes	$(peak_gib "$work/llama-$batch")")
done

fio_after=$(fio_gbps "$([ -f "$weights" ] && echo "$weights" || echo "$gguf")")
commit=$(git -C "$root" describe --always --dirty)
peer=$(basename "$(cd "$llamacpp_bin/../.." && pwd)")
{
  echo "# $name $dtype, larger than DRAM: zinf streaming (O_DIRECT, --cpu-mem $cpu_mem) vs $peer (mmap)"
  echo
  echo "$(date -u '+%F %H:%M UTC'), zinf $commit, peer ${LLAMACPP_COMMIT:-at an unnamed commit} ($llamacpp_bin),"
  echo "$(lscpu | sed -n 's/^Model name: *//p'), $threads threads, $(free -g | awk '/^Mem:/ {print $2}') GiB of DRAM;"
  echo "weights: $weights_gb GB (zinf), $(du -B1 --apparent-size "$gguf" | awk '{printf "%.1f GB", $1 / 1e9}') ($gguf_type GGUF, the same values)."
  echo "Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg). fio O_DIRECT sequential read: $(printf '%.2f' "$fio_before") GB/s before, $(printf '%.2f' "$fio_after") GB/s after."
  echo "Page cache emptied before each run: $can_drop. One-token prompts, $steps new tokens per sequence."
  echo "Disk GB: everything the process read from the disk (GNU time's inblock × 512), load included."
  echo
  echo "| batch | zinf tok/s | plan's bound tok/s | zinf ÷ bound | peer tok/s | zinf ÷ peer | zinf GB resident | zinf GB streamed per step | zinf read GB/s | zinf disk GB (steps) | peer disk GB (passes) | peer GB per pass | peak RSS GiB zinf / peer |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for i in "${!batch_list[@]}"; do
    IFS=$'\t' read -r tok bound kind resident per_step rate step_count zdisk zpeak <<< "${zinf_rows[$i]}"
    IFS=$'\t' read -r ltok ldisk lpasses lpeak <<< "${llama_rows[$i]}"
    ratio=$(awk -v a="$tok" -v b="$ltok" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "—" }')
    printf '| %s | %.3f | %.3f (%s) | %.2f | %s | %s | %.1f | %.2f | %.2f | %s (%s) | %s (%s) | %s | %s / %s |\n' \
      "${batch_list[$i]}" "$tok" "$bound" "$kind" "$(awk -v a="$tok" -v b="$bound" 'BEGIN {print a / b}')" \
      "$ltok" "$ratio" "$resident" "$per_step" "$rate" "$zdisk" "$step_count" "$ldisk" "$lpasses" \
      "$(awk -v a="$ldisk" -v p="$lpasses" 'BEGIN {printf "%.2f", a / p}')" "$zpeak" "$lpeak"
  done
} | tee ${out_file:+"$out_file"}
