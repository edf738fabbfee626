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
  # A stage asked for by name with its seconds gets them while they are left; one without gets what
  # is left, when that is worth starting.
  if [ "$limit" -lt 5 ] || { [ "$spec" = "$stage" ] && [ "$limit" -lt 20 ]; }; then
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
  # A stage cut off by its limit leaves its checkpoint behind (it deletes it only at its end): on
  # tmpfs, that memory would starve the next stage (the OPT-30B stage was killed so, 2026-11-27).
  if [ "$rc" -ne 0 ] && [ -n "${ZINF_GPU_WORK_DIR:-}" ] && [ "${ZINF_KEEP_CHECKPOINTS:-0}" != 1 ]; then
    echo "gpu_proof: removing $ZINF_GPU_WORK_DIR after stage $stage's exit $rc" | tee -a "$out/stages.txt"
    rm -rf "$ZINF_GPU_WORK_DIR"
  fi
  echo "gpu_proof: stage $stage exit $rc after $((SECONDS - start)) s (limit ${limit}s)" | tee -a "$out/stages.txt"
done
exit "$status"
