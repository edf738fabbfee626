#!/usr/bin/env bash
# Issue #4's acceptance run: a synthetic checkpoint of at least 4 GB streamed from disk with
# --cpu-mem at a quarter of its size. In one run it measures
#   (a) the disk's O_DIRECT sequential read rate with fio, reading the same weights.bin with 1 MiB
#       blocks at zinf's queue depth (16 reads in flight), once before and once after zinf;
#   (b) zinf's streaming rate at batch 1 from --metrics-json: the NVMe bytes ÷ the time a streaming
#       read was pending (tiers.nvme.read_gbps), ÷ the fio rate must be >= 0.90. Bytes ÷ step time
#       is printed too: it equals the former only when the run is disk-bound, which a machine
#       whose CPU streams weights slower than its disk (few cores) cannot be;
#   (c) at a batch large enough to be compute-bound (raised until it is): step time ÷ max(I/O
#       time, compute time) must be <= 1.10, where I/O time is the time reads were pending and
#       compute time is step time minus the time compute waited for weights;
#   (d) peak RSS of both zinf runs (/usr/bin/time -v) against --cpu-mem: at most 10% over.
# Prints PASS/FAIL per check and exits 1 if any fails; exits 0 with SKIP when fio, jq or GNU time
# is missing (scripts/install-deps --bench installs them).
#
# Usage: bench/tiered_streaming.sh
# Environment:
#   ZINF_BUILD_DIR         the build (default build/; built if zinf is missing)
#   ZINF_TIERED_BENCH_DIR  where the checkpoint is written once and kept (default
#                          ${XDG_CACHE_HOME:-~/.cache}/zinf-bench; needs ~4.5 GB)
#   ZINF_TIERED_CONFIG     the model shape (default bench/configs/tinyllama-1.1b.json: 4.4 GB in f32)
#   ZINF_TIERED_BATCH      the first batch tried for (c) (default 32; x4 until compute-bound)
#   ZINF_TIERED_STEPS      forward steps per zinf run (default 6)
#   ZINF_THREADS           CPU threads (default: all cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
cache=${ZINF_TIERED_BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zinf-bench}
config=${ZINF_TIERED_CONFIG:-$root/bench/configs/tinyllama-1.1b.json}
compute_batch=${ZINF_TIERED_BATCH:-32}
steps=${ZINF_TIERED_STEPS:-6}
threads=${ZINF_THREADS:-$(nproc)}
queue_depth=16      # io::ReaderOptions::queue_depth: the 1 MiB chunk reads zinf keeps in flight
max_batch=1024

for tool in fio jq /usr/bin/time; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found; scripts/install-deps --bench installs fio, jq and GNU time"
    exit 0
  fi
done
zinf=$(zinf_binary "$root")

# --- the checkpoint, written once: under a temporary name, renamed when complete --------------
model="$cache/$(basename "$config" .json)-f32"
synthetic_checkpoint "$zinf" "$config" "$model" f32
weights="$model/weights.bin"
size=$(stat -c %s "$weights")
cpu_mem=$((size / 4))
work=$(mktemp -d "${TMPDIR:-/tmp}/zinf-tiered.XXXXXX")
trap 'rm -rf "$work"' EXIT

calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
failed=0
# check NAME VALUE OP LIMIT DETAIL: prints one PASS/FAIL line; OP is >= or <=.
check() {
  local verdict=PASS
  if ! awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN { exit !(op == ">=" ? v >= l : v <= l) }'; then
    verdict=FAIL
    failed=1
  fi
  printf '%s  %-34s %7.3f (must be %s %s)  %s\n' "$verdict" "$1" "$2" "$3" "$4" "$5"
}

echo "checkpoint $weights: $(calc "$size / 1e9") GB; --cpu-mem $cpu_mem bytes (a quarter);" \
     "$threads threads; $(nproc) cores; kernel $(uname -r)"
if [ "$size" -lt 4000000000 ]; then
  echo "FAIL  the checkpoint is below 4 GB: choose a larger ZINF_TIERED_CONFIG"
  exit 1
fi

# --- (a) the disk, through fio ------------------------------------------------------------------
fio_gbps() {  # one sequential O_DIRECT pass over the weights file; prints 1e9 bytes/s
  local out="$work/fio-$1.json" engine
  for engine in io_uring libaio; do  # libaio where io_uring is refused, as zinf falls back too
    if fio --name=seqread --filename="$weights" --readonly --rw=read --direct=1 --bs=1M \
        --iodepth="$queue_depth" --ioengine="$engine" --numjobs=1 --size="$size" \
        --output-format=json --output="$out" >/dev/null 2>"$work/fio-$1.err"; then
      jq '.jobs[0].read.io_bytes / .jobs[0].read.runtime * 1000 / 1e9' "$out"
      return
    fi
  done
  cat "$work/fio-$1.err" >&2
  echo "FAIL  fio could not read $weights" >&2
  exit 1
}

# --- a zinf run: generate under /usr/bin/time -v, metrics to JSON -------------------------------
# run NAME BATCH: BATCH one-token prompts generating $steps tokens each, so every step carries
# BATCH tokens and the first (prefill) step is shaped like the decode steps after it.
run() {
  local name=$1 batch=$2 idx
  for ((idx = 0; idx < batch; ++idx)); do
    echo "{\"id\": \"$name-$idx\", \"prompt_ids\": [$((1 + idx % 1000))]}"
  done >"$work/$name.jsonl"
  if ! /usr/bin/time -v -o "$work/$name.time" \
      "$zinf" generate --model "$model" --prompts "$work/$name.jsonl" --out "$work/$name.out.jsonl" \
        --cpu-mem "$cpu_mem" --batch-size "$batch" --step-tokens "$batch" \
        --max-context $((steps + 4)) --max-new-tokens "$steps" --ignore-eos --threads "$threads" \
        --metrics-json "$work/$name.metrics.json" 2>"$work/$name.log"; then
    cat "$work/$name.log" >&2
    echo "FAIL  zinf generate ($name, batch $batch) failed" >&2
    exit 1
  fi
  grep -E "\] (plan: |weights .*: |finished: |interrupted: )" "$work/$name.log" | sed 's/^\[info\] /    /' || true
}
metric() { jq -r "$1" "$work/$2.metrics.json"; }
# Seconds in forward steps: the metrics' steps.seconds, else from token counts (each request
# samples its first token in the step that carried its prompt, so decode steps made
# generated − completed tokens).
step_seconds() {
  metric 'if .steps.seconds != null then .steps.seconds else
            .tokens.prompt / .tokens_per_s.prefill +
            (.tokens.generated - .requests.completed) / .tokens_per_s.decode end' "$1"
}
# Seconds with a streaming read pending (tiers.nvme.read_seconds); "null" from a zinf whose
# metrics lack it: then bytes ÷ the fio rate stands in.
read_seconds() { metric '.tiers.nvme.read_seconds' "$1"; }
peak_rss_bytes() { awk -F': ' '/Maximum resident set size/ { print $2 * 1024 }' "$work/$1.time"; }

fio_before=$(fio_gbps before)
echo "fio before zinf: $(calc "$fio_before") GB/s (O_DIRECT, 1 MiB blocks, iodepth $queue_depth)"
echo "zinf generate, batch 1:"
run io 1
batch=$compute_batch
while :; do
  echo "zinf generate, batch $batch:"
  run compute "$batch"
  bytes=$(metric '.tiers.nvme.streamed_bytes' compute)
  busy=$(read_seconds compute)
  [ "$busy" = null ] && busy=$(calc "$bytes / ($fio_before * 1e9)")
  compute=$(calc "$(step_seconds compute) - $(metric '.weight_wait_seconds' compute)")
  # Clearly compute-bound (20% margin), or as large a batch as this script tries.
  if awk -v c="$compute" -v b="$busy" 'BEGIN { exit !(c >= 1.2 * b) }' ||
     [ $((batch * 4)) -gt "$max_batch" ]; then
    break
  fi
  echo "    compute $(calc "$compute") s < 1.2 x I/O $(calc "$busy") s: not compute-bound; x4"
  batch=$((batch * 4))
done
fio_after=$(fio_gbps after)
echo "fio after zinf: $(calc "$fio_after") GB/s"
# The disk's rate while zinf ran: the mean of the two passes that bracket it.
fio_rate=$(calc "($fio_before + $fio_after) / 2")
echo

# --- (b) the streaming rate at batch 1 ----------------------------------------------------------
bytes=$(metric '.tiers.nvme.streamed_bytes' io)
step=$(step_seconds io)
wait=$(metric '.weight_wait_seconds' io)
busy=$(read_seconds io)
per_step_gbps=$(calc "$bytes / $step / 1e9")
if [ "$busy" != null ]; then
  zinf_gbps=$(calc "$bytes / $busy / 1e9")
  check "zinf ÷ fio read rate" "$(calc "$zinf_gbps / $fio_rate")" ">=" 0.90 \
    "zinf $(calc "$zinf_gbps") GB/s ($(calc "$bytes / 1e9") GB in $(calc "$busy") s of reading); fio $(calc "$fio_rate") GB/s"
else
  check "zinf ÷ fio read rate (per step)" "$(calc "$per_step_gbps / $fio_rate")" ">=" 0.90 \
    "this zinf's metrics lack tiers.nvme.read_seconds: bytes ÷ step time stands in"
fi
compute=$(calc "$step - $wait")
io_at_fio=$(calc "$bytes / ($fio_rate * 1e9)")
echo "info  batch 1 per step: $(calc "$per_step_gbps") GB/s = $(calc "$per_step_gbps / $fio_rate") of fio;" \
     "$(awk -v c="$compute" -v i="$io_at_fio" 'BEGIN { print (c > i ? "compute-bound" : "disk-bound") }'):" \
     "compute $(calc "$compute") s vs $(calc "$io_at_fio") s of reads at the fio rate, $(calc "$wait") s waited"

# --- (c) overlap when compute-bound -------------------------------------------------------------
bytes=$(metric '.tiers.nvme.streamed_bytes' compute)
step=$(step_seconds compute)
wait=$(metric '.weight_wait_seconds' compute)
busy=$(read_seconds compute)
[ "$busy" = null ] && busy=$(calc "$bytes / ($fio_rate * 1e9)")
compute=$(calc "$step - $wait")
bound=$(calc "($busy > $compute) ? $busy : $compute")
check "step ÷ max(I/O, compute), batch $batch" "$(calc "$step / $bound")" "<=" 1.10 \
  "$(metric '.tokens.generated' compute) tokens: steps $(calc "$step") s; I/O $(calc "$busy") s; compute $(calc "$compute") s; waited $(calc "$wait") s"
check "compute ÷ I/O, batch $batch" "$(calc "$compute / $busy")" ">=" 1.00 \
  "the run above must be compute-bound to test overlap"

# --- (d) memory -------------------------------------------------------------------------------
for name in io compute; do
  rss=$(peak_rss_bytes "$name")
  check "peak RSS ÷ --cpu-mem ($name)" "$(calc "$rss / $cpu_mem")" "<=" 1.10 \
    "$(calc "$rss / 1048576") MiB peak RSS; --cpu-mem $(calc "$cpu_mem / 1048576") MiB"
done
exit "$failed"
