#!/usr/bin/env bash
# The GPU offload measurements of issue #24, on a machine with an NVIDIA GPU:
#   opt30b   — OPT-30B-shaped f16 with --gpu-mem well below its 60 GB, weights from pinned DRAM:
#              decode against N·B/(P·b) at batch 8/32/64/128, with and without --kv-offload cpu,
#              and the largest batch each fits at 1024 positions.
#   llama70b — LLaMA-2-70B-shaped int4 (g64), prompt 512, generate 32, the planner's best batch:
#              with the planner's own placement, and with most weights in DRAM (a device budget
#              that holds part of them).
#   mixtral  — Mixtral-8x7B-shaped int4 (g64) on a 24 GB budget (#21): experts past the budget
#              copied when routed to (--moe-experts gpu) or computed by the CPU (cpu), batch 1/16/64.
#   resident — TinyLlama-1.1B-shaped int8 and int4 (ZINF_RESIDENT_DTYPES) resident in device
#              memory (quantized matrices dequantised before each GEMM), batch 1/32/128 at prompt
#              512: the planner's launches, attention, dequantisation and logits against measurement.
#   kvoffload — TinyLlama-1.1B f16 with 2 GB of device memory, weights streamed from pinned DRAM,
#              with and without --kv-offload cpu, batch 32/64, every prompt prefilled in one step.
#   profile  — per-kernel GPU time (ncu) of resident decode steps beside their wall time: where a
#              resident step's time goes (kernels, or launches and host work between them).
# Usage: bench/gpu_offload.sh STAGE RESULTS_FILE   (ZINF: the binary, default build-gpu/zinf;
# ZINF_OPT_OFFLOADS / ZINF_OPT_BATCHES narrow the OPT-30B sweep, e.g. "cpu" and "32,128", and
# ZINF_OPT_STEP_TOKENS sets its step size (default 2048; batch x 64 prefills every prompt in one
# step, so all sequences decode together to the end);
# ZINF_70B_RUNS picks the llama70b stage's runs (default "auto dram"; ZINF_70B_GPU_MEM the dram
# run's device budget, default 40G, ZINF_70B_BATCH its batch, default auto);
# ZINF_PROFILE_RUNS picks the profile stage's workloads (default "f16-b1 f16-b32 int4-b32");
# ZINF_GPU_WORK_DIR: where checkpoints go, default build-gpu/gpu-offload-work; a stage deletes
# its checkpoint at the end unless ZINF_KEEP_CHECKPOINTS=1, since the two do not fit on 64 GB).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$1
results=$2
zinf=${ZINF:-$root/build-gpu/zinf}
work=${ZINF_GPU_WORK_DIR:-$root/build-gpu/gpu-offload-work}
mkdir -p "$work" "$(dirname "$results")"

{
  echo "# zinf bench/gpu_offload.sh $stage, $(date -u +%Y-%m-%d)"
  echo "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n1)"
  echo "zinf: ${ZINF_COMMIT:-$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)}, Release"
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "work dir: $work ($(df -h --output=avail "$work" | tail -n1 | tr -d ' ') free)"
  echo
} | tee -a "$results"

# timed LABEL COMMAND...: runs it (for at most $STEP_LIMIT seconds, so one slow step cannot eat a
# whole device call) with its output in the results, and its wall time after.
timed() {
  local label=$1
  shift
  local start=$SECONDS
  echo "\$ $*" | tee -a "$results"
  set +e
  # --foreground: in the caller's process group, so a stage's own timeout (bench/gpu_proof.sh)
  # ends this command too instead of leaving it running beside the next stage.
  timeout --foreground "${STEP_LIMIT:-400}" "$@" 2>&1 | tee -a "$results"
  local rc=${PIPESTATUS[0]}
  set -e
  echo "($label: exit $rc, $((SECONDS - start)) s)" | tee -a "$results"
  echo | tee -a "$results"
}

case "$stage" in
  opt30b)
    model=$work/opt-30b-f16
    [ -f "$model/manifest.json" ] || timed "synthetic OPT-30B f16" "$zinf" -q convert --synthetic \
      "$root/configs/opt-30b.json" "$model" --dtype f16 --force
    budget=${ZINF_OPT_GPU_MEM:-24G}
    for offload in none cpu; do
      timed "plan, auto batch at 1024 positions, --kv-offload $offload" "$zinf" plan --model "$model" \
        --device cuda --gpu-mem "$budget" --kv-offload "$offload" --batch-size auto --max-context 1024
    done
    # With the cache offloaded it is int8 in DRAM (a quarter of f32), so that a checkpoint on
    # tmpfs, its DRAM tier and the cache fit the machine's memory together.
    for offload in ${ZINF_OPT_OFFLOADS:-none cpu}; do
      kv_dtype=f32
      [ "$offload" = cpu ] && kv_dtype=int8
      timed "bench --kv-offload $offload --kv-dtype $kv_dtype" "$zinf" bench --model "$model" \
        --device cuda --gpu-mem "$budget" --kv-offload "$offload" --kv-dtype "$kv_dtype" \
        --batch-size "${ZINF_OPT_BATCHES:-8,32,64,128}" --prompt-len 64 --gen-len "${ZINF_OPT_GEN_LEN:-8}" --step-tokens "${ZINF_OPT_STEP_TOKENS:-2048}" --repeat 1 \
        --json "$work/opt30b-kv-$offload.json"
    done
    ;;
  llama70b)
    model=$work/llama-2-70b-int4
    [ -f "$model/manifest.json" ] || timed "synthetic LLaMA-2-70B int4 g64" "$zinf" -q convert --synthetic \
      "$root/configs/llama-2-70b.json" "$model" --dtype int4 --group-size 64 --force
    runs=" ${ZINF_70B_RUNS:-auto dram} "
    if [[ $runs == *" auto "* ]]; then
      timed "plan, planner's placement" "$zinf" plan --model "$model" --device cuda --batch-size auto \
        --max-context 545
      timed "bench, planner's placement and batch" "$zinf" bench --model "$model" --device cuda \
        --batch-size auto --prompt-len 512 --gen-len 32 --num-prompts 128 --step-tokens 4096 \
        --repeat 1 --json "$work/llama70b-auto.json"
    fi
    if [[ $runs == *" dram "* ]]; then
      dram_budget=${ZINF_70B_GPU_MEM:-40G}
      batch=${ZINF_70B_BATCH:-auto}
      timed "plan, --gpu-mem $dram_budget, batch $batch" "$zinf" plan --model "$model" --device cuda \
        --gpu-mem "$dram_budget" --batch-size "$batch" --max-context 545
      timed "bench, most weights in DRAM (--gpu-mem $dram_budget)" "$zinf" bench --model "$model" \
        --device cuda --gpu-mem "$dram_budget" --batch-size "$batch" --prompt-len 512 \
        --gen-len 32 --num-prompts 128 --step-tokens 4096 --repeat 1 --json "$work/llama70b-dram.json"
    fi
    ;;
  resident)
    model=$work/tinyllama-1.1b
    for dtype in ${ZINF_RESIDENT_DTYPES:-int8 int4}; do
      [ -f "$model-$dtype/manifest.json" ] || timed "synthetic TinyLlama-1.1B $dtype" "$zinf" -q convert \
        --synthetic "$root/bench/configs/tinyllama-1.1b.json" "$model-$dtype" --dtype "$dtype" --force
      timed "bench $dtype resident" "$zinf" bench --model "$model-$dtype" --device cuda \
        --batch-size 1,32,128 --prompt-len 512 --gen-len 16 --step-tokens 65536 --repeat 1
      [ "${ZINF_KEEP_CHECKPOINTS:-0}" = 1 ] || rm -rf "$model-$dtype"
    done
    ;;
  kvoffload)
    model=$work/tinyllama-1.1b-f16
    [ -f "$model/manifest.json" ] || timed "synthetic TinyLlama-1.1B f16" "$zinf" -q convert \
      --synthetic "$root/bench/configs/tinyllama-1.1b.json" "$model" --dtype f16 --force
    for offload in none cpu; do
      # 8192 step tokens: 64 prompts of 128 in one step, activations ~0.6 GiB (16384 needed 1.2
      # GiB and did not fit 1.5 GB beside the slots and scratch).
      timed "bench --gpu-mem 2G --kv-offload $offload" "$zinf" bench --model "$model" --device cuda \
        --gpu-mem 2G --kv-offload "$offload" --kv-dtype int8 --batch-size 32,64 --prompt-len 128 \
        --gen-len 32 --step-tokens 8192 --repeat 1
    done
    ;;
  mixtral)
    model=$work/mixtral-8x7b-int4
    [ -f "$model/manifest.json" ] || timed "synthetic Mixtral-8x7B int4 g64" "$zinf" -q convert --synthetic \
      "$root/configs/mixtral-8x7b.json" "$model" --dtype int4 --group-size 64 --force
    budget=${ZINF_MOE_GPU_MEM:-24G}
    timed "plan, auto batch at 1024 positions" "$zinf" plan --model "$model" --device cuda \
      --gpu-mem "$budget" --batch-size auto --max-context 1024
    for experts in ${ZINF_MOE_EXPERTS:-gpu cpu}; do
      timed "bench --moe-experts $experts" "$zinf" bench --model "$model" --device cuda \
        --gpu-mem "$budget" --moe-experts "$experts" --batch-size "${ZINF_MOE_BATCHES:-1,16,64}" \
        --prompt-len 64 --gen-len 16 --step-tokens 4096 --repeat 1 --json "$work/mixtral-$experts.json"
    done
    ;;
  profile)
    # Each workload runs once plainly (its step times) and once under ncu, which records every
    # kernel's GPU time for 1500 launches after SKIP (chosen to land in decode steps).
    model=$work/tinyllama-1.1b
    for dtype in f16 int4; do
      [ -f "$model-$dtype/manifest.json" ] || timed "synthetic TinyLlama-1.1B $dtype" "$zinf" -q convert \
        --synthetic "$root/bench/configs/tinyllama-1.1b.json" "$model-$dtype" --dtype "$dtype" --force
    done
    ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
    profile() {
      local name=$1 skip=$2
      shift 2
      timed "$name, wall time" "$zinf" bench "$@" --device cuda --repeat 1
      timed "$name, per-kernel GPU time" "$ncu" --clock-control none --metrics gpu__time_duration.sum \
        --csv --page raw --launch-skip "$skip" --launch-count "${ZINF_PROFILE_LAUNCHES:-1500}" \
        --log-file "$work/$name-ncu.csv" "$zinf" -q bench "$@" --device cuda --repeat 1
      [ -f "$work/$name-ncu.csv" ] && python3 "$root/bench/ncu_step_summary.py" "$work/$name-ncu.csv" \
        | tee -a "$results"
    }
    runs=" ${ZINF_PROFILE_RUNS:-f16-b1 f16-b32 int4-b32} "
    [[ $runs == *" f16-b1 "* ]] &&
      profile f16-b1 2000 --model "$model-f16" --batch-size 1 --prompt-len 32 --gen-len 64
    [[ $runs == *" f16-b32 "* ]] &&
      profile f16-b32 6000 --model "$model-f16" --batch-size 32 --prompt-len 128 --gen-len 32
    [[ $runs == *" int4-b32 "* ]] &&
      profile int4-b32 3000 --model "$model-int4" --batch-size 32 --prompt-len 512 --gen-len 16 \
        --step-tokens 4096
    ;;
  *)
    echo "gpu_offload.sh: unknown stage '$stage' (opt30b, llama70b, resident, kvoffload, mixtral or profile)" >&2
    exit 2
    ;;
esac
[ "${ZINF_KEEP_CHECKPOINTS:-0}" = 1 ] || rm -rf "$model"
