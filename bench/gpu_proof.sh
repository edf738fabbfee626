#!/usr/bin/env bash
# One lent-GPU session of issue #24 in one command: runs the named stages in order — `calibrate`
# (zinf calibrate, whose rates every later plan uses), `check` (scripts/gpu-check) and
# bench/gpu_offload.sh's stages (opt30b, llama70b, resident, kvoffload, mixtral, profile) —
# each under its share of a total time budget, so a slow stage cannot leave nothing for the rest,
# and writes each stage's results file into OUT_DIR.
# Usage: bench/gpu_proof.sh OUT_DIR STAGE[:SECONDS]...   (ZINF_PROOF_BUDGET: total seconds, default
# 540; a stage with no SECONDS gets what is left). ZINF_GPU_PREBUILT, ZINF_COMMIT and
# ZINF_GPU_WORK_DIR pass through to the scripts it runs.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
shift
mkdir -p "$out"
budget=${ZINF_PROOF_BUDGET:-540}
today=$(date -u +%Y-%m-%d)
commit=${ZINF_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
export ZINF_COMMIT=$commit
status=0
for spec in "$@"; do
  stage=${spec%%:*}
  left=$((budget - SECONDS))
  limit=$left
  [ "$spec" != "$stage" ] && limit=${spec#*:}
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    echo "gpu_proof: no time left for stage $stage (${left}s of ${budget}s)" | tee -a "$out/stages.txt"
    status=1
    continue
  fi
  start=$SECONDS
  case "$stage" in
    calibrate)
      timeout "$limit" "${ZINF:-$root/build-gpu/zinf}" calibrate 2>&1 |
        tee "$out/gpu-calibrate-$today-$commit.txt"
      rc=${PIPESTATUS[0]}
      ;;
    check)
      timeout "$limit" "$root/scripts/gpu-check" "$out/gpu-check-$today-$commit.txt"
      rc=$?
      ;;
    *)
      timeout "$limit" "$root/bench/gpu_offload.sh" "$stage" "$out/gpu-$stage-$today-$commit.txt"
      rc=$?
      ;;
  esac
  [ "$rc" -eq 0 ] || status=1
  echo "gpu_proof: stage $stage exit $rc after $((SECONDS - start)) s (limit ${limit}s)" | tee -a "$out/stages.txt"
done
exit "$status"
