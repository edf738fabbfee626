#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurm-wlm and munge, no systemd): munged, slurmctld and
# slurmd on localhost with a generated slurm.conf, all under a scratch directory. Submits
# scripts/slurm/zinf-array.sbatch over stories260K and 200 prompts in 4 tasks, cancels one task
# mid-run, resubmits what `zinf merge --list-missing` names, merges, and checks the merged file is
# byte for byte a single process's greedy run, every id once. Daemons are stopped and the scratch
# removed however it ends.
#
#   tests/slurm/slurm_array.sh ZINF_BINARY
# Exit 77 (skipped, reason printed) only where Slurm cannot start at all: not root, or slurm-wlm
# and munge not installed (scripts/install-deps --slurm). Under CI=true those fail instead.
# BREAK=drop-merged-line | dup-merged-line | drop-shard-line makes it fail on purpose: the first
# two stand for a merge that loses or duplicates a line, the last for a shard that lost one.
set -euo pipefail
zinf=$(realpath "${1:?usage: slurm_array.sh ZINF_BINARY}")
root=$(cd "$(dirname "$0")/../.." && pwd)
prompts_count=200
tasks=4
cancelled_task=2

skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "slurm_array: FAIL: $1 (CI must run this test: scripts/install-deps --slurm, as root)" >&2
    exit 1
  fi
  echo "slurm_array: SKIP: $1" >&2
  exit 77
}
fail() {
  echo "slurm_array: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || skip "slurmd and munged need root here (not root)"
for binary in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch; do
  [ -x "$binary" ] || skip "$binary is missing (scripts/install-deps --slurm installs it)"
done

work=$(mktemp -d /tmp/zinf-slurm.XXXXXX)
chmod 755 "$work"
cleanup() {
  local status=$?
  # Jobs first: a batch step outlives slurmd, so cancel them and wait while the daemons run.
  if [ -s "$work/slurmctld.pid" ]; then
    squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null || true
    for _ in $(seq 100); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for daemon in slurmd slurmctld; do
    if [ -s "$work/$daemon.pid" ]; then kill "$(cat "$work/$daemon.pid")" 2>/dev/null || true; fi
  done
  /usr/sbin/munged --stop --socket="$work/munge/munge.socket" >/dev/null 2>&1 || true
  if [ $status -ne 0 ] && [ $status -ne 77 ]; then
    for log in "$work"/*.log "$work"/task-*.txt; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; } >&2
    done
  fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Ports of their own (two ctest runs at once must not meet), from the process id.
ctld_port=$((20000 + ($$ % 10000) * 2))
slurmd_port=$((ctld_port + 1))
mkdir -p "$work/munge" "$work/state" "$work/spool"
chmod 700 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
/usr/sbin/munged --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --log-file="$work/munged.log" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/seed" || skip "munged does not start (see above)"

# The least a node needs: no accounting database, no cgroups (proctrack/linuxproc, task/none),
# one node called localhost with this machine's cores, and oversubscription so 4 tasks run on 2.
cat >"$work/slurm.conf" <<EOF
ClusterName=zinftest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
KillWait=5
MinJobAge=600
NodeName=localhost CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=zinf Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:$tasks
EOF
export SLURM_CONF=$work/slurm.conf
/usr/sbin/slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start ($(tail -n 3 "$work/slurmctld.log" 2>/dev/null))"
/usr/sbin/slurmd -f "$SLURM_CONF" -N localhost || skip "slurmd does not start ($(tail -n 3 "$work/slurmd.log" 2>/dev/null))"
for _ in $(seq 100); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t | grep -q idle || skip "the node never came up: $(sinfo 2>&1)"
echo "slurm_array: single-node Slurm up (slurmctld :$ctld_port, slurmd :$slurmd_port)" >&2

# The bundled model, and 200 prompts (ids are line numbers).
"$zinf" -q convert "$root/models/stories260K" "$work/model"
words=(cat dog king girl boy sun moon tree fish bird)
for i in $(seq "$prompts_count"); do
  echo "Once upon a time there was a ${words[$((i % 10))]} called number $i"
done >"$work/prompts.txt"
# Long enough (fixed length, one sequence at a time) that a task is cancelled mid-run.
generate_args="--max-new-tokens 48 --ignore-eos --batch-size 1 --threads 1"
# shellcheck disable=SC2086
"$zinf" generate --model "$work/model" --prompts "$work/prompts.txt" --out "$work/single.jsonl" \
  $generate_args -q

wait_for_job() {  # until no task of job $1 is pending or running
  for _ in $(seq 1200); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.25
  done
  fail "job $1 still running after 300 s: $(squeue)"
}
submit() {  # --array=$1; prints the job id
  # This node has no GPUs: --gres=none replaces the script's "#SBATCH --gres=gpu:1", and one core
  # a task lets the 4 tasks run at once.
  ZINF="$zinf" ZINF_MODEL="$work/model" ZINF_PROMPTS="$work/prompts.txt" \
    ZINF_OUT="$work/out/results.jsonl" ZINF_SHARD_COUNT=$tasks ZINF_ARGS="$generate_args" \
    sbatch --parsable --array="$1" --gres=none --cpus-per-task=1 --chdir="$work" \
    --output="$work/task-%a.txt" "$root/scripts/slurm/zinf-array.sbatch"
}
mkdir -p "$work/out"
job=$(submit "0-$((tasks - 1))")
shard_file=$work/out/results.shard-00$cancelled_task-of-00$tasks.jsonl
for _ in $(seq 1200); do
  [ -f "$shard_file" ] && [ "$(wc -l <"$shard_file")" -ge 3 ] && break
  sleep 0.1
done
scancel "${job}_$cancelled_task"
wait_for_job "$job"
done_lines=$(wc -l <"$shard_file")
echo "slurm_array: task $cancelled_task cancelled with $done_lines of $((prompts_count / tasks)) lines" >&2
[ "$done_lines" -lt $((prompts_count / tasks)) ] || fail "task $cancelled_task finished before its cancel"

merge=("$zinf" merge "$work/out/results.shard-*" --prompts "$work/prompts.txt")
if "${merge[@]}" --out "$work/merged.jsonl" 2>"$work/merge-refused.log"; then
  fail "merge accepted a job with a cancelled task"
fi
[ ! -e "$work/merged.jsonl" ] || fail "a refused merge wrote its output"
missing=$("${merge[@]}" --list-missing 2>>"$work/merge-refused.log")
[ "$missing" = "$cancelled_task" ] || fail "--list-missing printed '$missing', not $cancelled_task"
job=$(submit "$missing")
wait_for_job "$job"
grep -q "resuming" "$work/task-$cancelled_task.txt" || fail "the resubmitted task did not resume"

# A merge that would lose a line is refused: a copy of the shards with one line removed.
mkdir "$work/broken"
cp "$work"/out/results.shard-* "$work/broken/"
sed -i '2d' "$work/broken/results.shard-001-of-004.jsonl"
if "$zinf" merge "$work/broken/results.shard-*" --prompts "$work/prompts.txt" \
  --out "$work/broken.jsonl" 2>/dev/null; then
  fail "merge accepted shards with a line removed"
fi

[ "${BREAK:-}" = drop-shard-line ] && sed -i '1d' "$work/out/results.shard-000-of-004.jsonl"
"${merge[@]}" --out "$work/merged.jsonl" || fail "merge refused the completed job"
case "${BREAK:-}" in
  drop-merged-line) sed -i '100d' "$work/merged.jsonl" ;;
  dup-merged-line) sed -i '100p' "$work/merged.jsonl" ;;
esac

# Every id once, 1 to 200 in prompt-file order, and the same bytes as one process's run.
ids=$(sed 's/^{"id":\([0-9]*\),.*/\1/' "$work/merged.jsonl")
[ "$ids" = "$(seq "$prompts_count")" ] ||
  fail "merged ids are not 1..$prompts_count once each in order (duplicated: $(echo "$ids" | sort | uniq -d | head -3 | xargs), count $(echo "$ids" | wc -l))"
cmp "$work/merged.jsonl" "$work/single.jsonl" || fail "the merged file differs from a single run's"
echo "slurm_array: PASS: $prompts_count requests in $tasks tasks, task $cancelled_task cancelled" \
  "after $done_lines lines and resumed; merged = single run, every id once" >&2
