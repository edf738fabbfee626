#!/usr/bin/env bash
# Crash safety of `zinf generate --resume`: kills a greedy run with SIGKILL at KILLS random moments,
# resumes it each time, then checks that the final output holds every request exactly once and
# that each line is byte-identical to an uninterrupted run's line. With CONCURRENCY=N each round
# starts 1..N runs on the same --out at staggered moments (all but one must be refused at once by
# the output file's lock) and kills a random subset of them.
#
# Usage: bench/kill_resume.sh            (50 kills, 320 prompts; about a minute)
#   ZINF=build-x/zinf KILLS=10 PROMPTS=64 MAX_NEW_TOKENS=400 SEED=7 WORK=/tmp/kr CONCURRENCY=3 \
#     bench/kill_resume.sh
# Needs only bash and coreutils/grep/awk (no python, no jq). Exit 0: all checks passed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZINF="${ZINF:-$ROOT/build/zinf}"
KILLS="${KILLS:-50}"
PROMPTS="${PROMPTS:-320}"
MAX_NEW_TOKENS="${MAX_NEW_TOKENS:-400}"
SEED="${SEED:-$$}"
CONCURRENCY="${CONCURRENCY:-1}"
WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/zinf-kill-resume.XXXXXX")}"
RANDOM="$SEED"  # the kill moments are reproducible from the printed seed

[[ -x "$ZINF" ]] || { echo "kill_resume: no zinf binary at $ZINF (set ZINF=)" >&2; exit 2; }
mkdir -p "$WORK"
echo "kill_resume: zinf $ZINF, $KILLS kills, $PROMPTS prompts, seed $SEED, work dir $WORK"

# 1. The bundled model, converted.
"$ZINF" --log-level warn convert "$ROOT/models/stories260K" "$WORK/model" --force

# 2. A JSONL prompt file of mixed requests: prompts of different lengths, per-request
# max_new_tokens, a stop string, some requests that fail on purpose (invalid UTF-8; a prompt too
# long for --max-context 512) so resume also has to skip error lines.
starts=("Once upon a time" "Lily and Ben went to the park. They saw a big dog and a small cat."
        "The sun" "One day, a clever fox found a shiny key under the old oak tree. He picked it up."
        "Tom was sad." "There was a little bird who could not fly. Every day she watched the others")
long_prompt="$(printf 'the big red ball %.0s' $(seq 1 200))"
prompts="$WORK/prompts.jsonl"
: > "$prompts"
for ((i = 1; i <= PROMPTS; i++)); do
  text="${starts[$((i % ${#starts[@]}))]} (story $i)"
  tokens=$((MAX_NEW_TOKENS / 2 + (i * 37) % (MAX_NEW_TOKENS / 2 + 1)))
  if ((i % 41 == 0)); then
    printf '{"id": "r%d", "prompt": "bad \xff byte %d"}\n' "$i" "$i" >> "$prompts"
  elif ((i % 53 == 0)); then
    printf '{"id": "r%d", "prompt": "%s"}\n' "$i" "$long_prompt" >> "$prompts"
  elif ((i % 7 == 0)); then
    printf '{"id": "r%d", "prompt": "%s", "max_new_tokens": %d, "stop": ["park"]}\n' \
      "$i" "$text" "$tokens" >> "$prompts"
  else
    printf '{"id": "r%d", "prompt": "%s", "max_new_tokens": %d}\n' "$i" "$text" "$tokens" \
      >> "$prompts"
  fi
done

# One thread and a small batch: a run lasts long enough that most kills land mid-run.
args=(--log-level error generate --model "$WORK/model" --prompts "$prompts" --batch-size 4
      --threads 1 --max-context 512 --max-new-tokens "$MAX_NEW_TOKENS" --temperature 0 --ignore-eos)

# 3. The uninterrupted reference. Exit 3: finished, with the requests that fail on purpose.
start_s=$SECONDS
"$ZINF" "${args[@]}" --out "$WORK/reference.jsonl" || (($? == 3)) ||
  { echo "kill_resume: the reference run failed" >&2; exit 1; }
echo "kill_resume: uninterrupted run took $((SECONDS - start_s)) s"

# 4. Kill and resume, CONCURRENCY runs at most at once.
out="$WORK/killed.jsonl"
rm -f "$out" "$out.run.json"
kills_mid_run=0
runs_finished=0
runs_refused=0
for ((k = 1; k <= KILLS; k++)); do
  runs=$((CONCURRENCY > 1 ? 1 + RANDOM % CONCURRENCY : 1))
  pids=()
  for ((r = 0; r < runs; r++)); do
    ((r == 0)) || sleep "$(printf '0.%03d' $((RANDOM % 50)))"
    "$ZINF" "${args[@]}" --out "$out" --resume 2> "$WORK/stderr.$r" &
    pids+=($!)
  done
  delay_ms=$((20 + RANDOM % 381))  # 20..400 ms
  sleep "$(printf '0.%03d' "$delay_ms")"
  for ((r = 0; r < runs; r++)); do
    # The first run always gets a kill; the others half the time.
    ((r == 0 || RANDOM % 2 == 0)) && kill -9 "${pids[$r]}" 2> /dev/null || true
    status=0
    wait "${pids[$r]}" 2> /dev/null || status=$?  # no "Killed" notice from bash
    if ((status == 137)); then
      kills_mid_run=$((kills_mid_run + 1))
    elif ((status == 0 || status == 3)); then
      runs_finished=$((runs_finished + 1))
    elif grep -q 'being written by another zinf process' "$WORK/stderr.$r"; then
      runs_refused=$((runs_refused + 1))
    else
      echo "kill_resume: round $k run $r failed (exit $status):" >&2
      cat "$WORK/stderr.$r" >&2
      exit 1
    fi
  done
  lines_now=$(grep -c '' "$out" 2> /dev/null || true)
  echo "kill_resume: round $k ($runs runs, kill after ${delay_ms} ms): $lines_now lines in the output"
done
"$ZINF" "${args[@]}" --out "$out" --resume || (($? == 3)) ||
  { echo "kill_resume: the final resume failed" >&2; exit 1; }

# 5. Check: every request once, each line identical to the reference's.
failures=0
expected=$(grep -c '' "$prompts")
got=$(grep -c '' "$out")
ids() { sed -E 's/^\{"id":"([^"]*)".*$/\1/' "$1" | sort; }
duplicates=$(ids "$out" | uniq -d | wc -l)
missing=$(comm -23 <(ids "$WORK/reference.jsonl") <(ids "$out") | wc -l)
if ((got != expected)); then echo "FAIL: $got lines, expected $expected" >&2; failures=1; fi
if ((duplicates != 0)); then echo "FAIL: $duplicates ids appear more than once" >&2; failures=1; fi
if ((missing != 0)); then echo "FAIL: $missing ids are missing" >&2; failures=1; fi
if ! awk 'substr($0, length($0)) != "}" { exit 1 }' "$out"; then
  echo "FAIL: a line of $out is not a complete JSON object" >&2
  failures=1
fi
if ! cmp -s <(sort "$WORK/reference.jsonl") <(sort "$out"); then
  different=$(comm -13 <(sort "$WORK/reference.jsonl") <(sort "$out") | wc -l)
  echo "FAIL: $different lines differ from the uninterrupted run's" >&2
  failures=1
fi
errors=$(grep -c '"finish_reason":"error"' "$out" || true)
echo "kill_resume: $KILLS rounds ($kills_mid_run runs killed mid-run, $runs_finished finished," \
     "$runs_refused refused by the lock)," \
     "$got lines for $expected requests ($errors error lines), duplicates $duplicates," \
     "missing $missing: $([[ $failures == 0 ]] && echo PASS || echo FAIL)"
exit "$failures"
