#!/usr/bin/env bash
# Memory of `zinf generate` on a huge prompt file: the file is streamed, so peak RSS must not grow
# with the number of lines. Runs stories260K with one new token per request on a 1,000-line and a
# LINES-line file (text and JSONL with ids) and prints peak RSS and wall time of each. Prompts are
# one word, so the run measures the streaming of requests, not the model's compute.
#
# Usage: bench/million_prompts.sh
#   ZINF=build-x/zinf LINES=1000000 THREADS=2 WORK=/dev/shm/mp bench/million_prompts.sh
# The output goes to WORK (default: under /dev/shm when it exists): every result line is
# fdatasync'ed, and a million syncs on a disk would measure the disk, not zinf. Peak RSS comes from
# /usr/bin/time -v (Debian package `time`) or, without it, from polling /proc/PID/status (VmHWM).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZINF="${ZINF:-$ROOT/build/zinf}"
LINES="${LINES:-1000000}"
THREADS="${THREADS:-$(nproc)}"
default_tmp="${TMPDIR:-/tmp}"
[[ -d /dev/shm && -w /dev/shm ]] && default_tmp=/dev/shm
WORK="${WORK:-$(mktemp -d "$default_tmp/zinf-million.XXXXXX")}"
[[ -x "$ZINF" ]] || { echo "million_prompts: no zinf binary at $ZINF (set ZINF=)" >&2; exit 2; }
mkdir -p "$WORK"
trap 'rm -f "$WORK"/*.jsonl "$WORK"/*.txt' EXIT

"$ZINF" --log-level warn convert "$ROOT/models/stories260K" "$WORK/model" --force

make_prompts() {  # make_prompts FORMAT COUNT PATH
  if [[ $1 == txt ]]; then
    awk -v n="$2" 'BEGIN { for (i = 1; i <= n; i++) print "Hi" }' > "$3"
  else
    awk -v n="$2" 'BEGIN { for (i = 1; i <= n; i++)
      printf "{\"id\": \"q%d\", \"prompt\": \"Hi\"}\n", i }' > "$3"
  fi
}

# Prints "PEAK_KIB SECONDS" for one run of zinf with the given arguments.
measure() {
  local start_ns end_ns peak_kib=0
  start_ns=$(date +%s%N)
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -v -o "$WORK/time.txt" "$ZINF" "$@"
    peak_kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$WORK/time.txt")
  else
    "$ZINF" "$@" &
    local pid=$! hwm
    while kill -0 "$pid" 2> /dev/null; do
      hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2> /dev/null || true)
      [[ -n "$hwm" ]] && ((hwm > peak_kib)) && peak_kib=$hwm
      sleep 0.1
    done
    wait "$pid"
  fi
  end_ns=$(date +%s%N)
  echo "$peak_kib $(((end_ns - start_ns) / 1000000))"
}

echo "million_prompts: zinf $ZINF, $THREADS threads, work dir $WORK"
printf '%-6s %10s %14s %10s %12s\n' format lines "peak RSS MiB" "wall s" "requests/s"
for format in txt jsonl; do
  for count in 1000 "$LINES"; do
    prompts="$WORK/prompts-$count.$format"
    out="$WORK/out-$count-$format.jsonl"
    make_prompts "$format" "$count" "$prompts"
    rm -f "$out"
    read -r peak_kib wall_ms < <(measure --log-level warn generate --model "$WORK/model" \
      --prompts "$prompts" --out "$out" --max-new-tokens 1 --batch-size 64 --threads "$THREADS")
    lines_out=$(grep -c '' "$out")
    if ((lines_out != count)); then
      echo "million_prompts: FAIL: $lines_out output lines for $count prompts" >&2
      exit 1
    fi
    printf '%-6s %10d %14.1f %10.1f %12.0f\n' "$format" "$count" "$(awk -v k="$peak_kib" 'BEGIN { print k / 1024 }')" \
      "$(awk -v ms="$wall_ms" 'BEGIN { print ms / 1000 }')" \
      "$(awk -v n="$count" -v ms="$wall_ms" 'BEGIN { print n * 1000 / (ms > 0 ? ms : 1) }')"
    rm -f "$prompts" "$out"
  done
done
