#!/usr/bin/env bash
# zinf vs llama.cpp on the CPU, side by side in one run, same weights, same thread count (issue #9).
#
# For each shape (110M: dim 768, 12 layers, FFN 2048, vocab 32000; 1B: TinyLlama-1.1B's shape) it
# writes a synthetic zinf checkpoint once (deterministic pseudo-random weights, cached), converts it to
# an F32 GGUF with bench/zinf_to_gguf.py (same numbers, q/k rows permuted to llama.cpp's RoPE layout),
# then runs llama-bench (tg64 = batch-1 decode, pp128 / pp512 = prefill of one prompt),
# llama-batched-bench (decode of 8 and 32 sequences at once) and zinf bench the same ways, resident
# weights, one after the other per row (--rounds N: N alternating rounds of both tools, each side's
# median of its rounds, the spread across rounds as ±: on a host whose speed drifts over minutes the
# two tools then see the same stretches of it). Int8 rows compare `zinf convert --dtype int8`
# with llama-quantize's Q8_0 of the same F32 GGUF, int4 rows int4 in groups of 32 with Q4_0; they
# are skipped when zinf refuses the dtype.
# It also measures the DRAM read bandwidth with all cores (`zinf calibrate --dram-only`: median and
# spread of 9 passes) and prints, for decode, the bandwidth bound = bandwidth / weight bytes read per token
# (every matrix once, plus one embedding row; KV-cache reads are left out, small at 64 tokens).
# A guest's bandwidth can move by half within minutes (a 2-core Zen 4 guest read 34 and 54 GB/s
# ten minutes apart), so each tool's batch-1 decode is timed between two probes of its own, in
# every round, and its share of the bound is the median of decode ÷ the two probes' mean over the
# rounds whose probes agree within 5% (the bound held still), with how many did.
#
# llama.cpp is not part of zinf and is not built here: build it yourself from its public source (CPU,
# Release, -DGGML_NATIVE=ON) and give the directory holding llama-bench and llama-quantize.
#
# Usage: bench/vs_llamacpp.sh [LLAMACPP_BIN] [options]      (or LLAMACPP_BIN=... in the environment)
#   --shapes 110m,1b   --dtypes f32,int8[,int4]   --threads N (default: nproc)   --repeat N (default 3)
#   --rounds N (default 1)   --seed N (default 1)   --out FILE.md (also write the report there)
#   --fresh (rebuild the cache)   --kv-dtype f16|f32|int8 (zinf's KV cache; default f16, the peer's)
# Environment: ZINF_BUILD_DIR (default build/), ZINF_BENCH_DIR (cache; default $ZINF_BUILD_DIR/bench-work),
#   ZINF_DRAM_GBPS (skip the bandwidth measurement and use this figure).
# Exit status 0 also when skipped (no llama.cpp given); 1 on errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
build_dir=${ZINF_BUILD_DIR:-$root/build}

llamacpp_bin=${LLAMACPP_BIN:-}
shapes=110m,1b
dtypes=f32,int8
threads=$(nproc)
repeat=3
rounds=1
seed=1
out_file=
fresh=0
kv_dtype=f16
while [ $# -gt 0 ]; do
  case "$1" in
    --shapes) shapes=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --kv-dtype) kv_dtype=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "vs_llamacpp.sh: unknown option $1" >&2; exit 1 ;;
    *) llamacpp_bin=$1; shift ;;
  esac
done

if [ -z "$llamacpp_bin" ]; then
  echo "skipped: no llama.cpp binary directory given (pass it as the first argument or set LLAMACPP_BIN" \
       "to the directory holding llama-bench and llama-quantize, built from llama.cpp's public source)"
  exit 0
fi
if [ ! -x "$llamacpp_bin/llama-bench" ]; then
  echo "skipped: $llamacpp_bin/llama-bench not found or not executable"
  exit 0
fi

[ -x "$build_dir/zinf" ] || "$root/scripts/build"
zinf="$build_dir/zinf"
work=${ZINF_BENCH_DIR:-$build_dir/bench-work}/vs_llamacpp
mkdir -p "$work"
py="python3"
log="$work/run.log"
: > "$log"
note() { echo "$*" >&2; echo "$*" >> "$log"; }

# ------------------------------------------------------------------ DRAM read bandwidth, all cores
# zinf's own probe (`zinf calibrate --dram-only`: zinf's thread pool, a 1 GiB buffer first-touched
# by the threads that read it, a warm-up pass, then the median of 9 passes), the figure the planner
# uses too; the spread of the passes goes into the report.
if [ -n "${ZINF_DRAM_GBPS:-}" ]; then
  dram_gbps=$ZINF_DRAM_GBPS dram_spread="given"
  note "DRAM read bandwidth: $dram_gbps GB/s (from ZINF_DRAM_GBPS)"
else
  dram_json=$("$zinf" calibrate --dram-only --threads "$threads")
  dram_gbps=$(echo "$dram_json" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["dram_read_gbps"])')
  dram_spread=$(echo "$dram_json" | "$py" -c 'import json,sys; r=json.load(sys.stdin); print("%.1f-%.1f over %d passes" % (r["min_gbps"], r["max_gbps"], r["passes"]))')
  note "DRAM read bandwidth, $threads threads: $dram_gbps GB/s ($dram_spread)"
fi
export VS_DRAM_SPREAD=$dram_spread

# ------------------------------------------------------------------ checkpoints
config_of() {
  case "$1" in
    110m) echo "$root/bench/configs/llama-110m.json" ;;
    1b) echo "$root/bench/configs/tinyllama-1.1b.json" ;;
    *) echo "vs_llamacpp.sh: unknown shape $1 (110m, 1b)" >&2; exit 1 ;;
  esac
}

# zinf checkpoint of a shape and dtype; prints its directory, or nothing when zinf refuses the dtype.
zinf_checkpoint() {
  local shape=$1 dtype=$2 dir="$work/$1-$2-seed$seed.zinf" extra=()
  # int4 in groups of 32, as Q4_0's blocks (zinf's groups are asymmetric: a scale and a minimum).
  [ "$dtype" = int4 ] && extra=(--group-size 32)
  if [ "$fresh" = 1 ] || [ ! -f "$dir/manifest.json" ]; then
    if ! "$zinf" convert --synthetic "$(config_of "$shape")" "$dir" --dtype "$dtype" --seed "$seed" \
        "${extra[@]}" --force >> "$log" 2>&1; then
      note "zinf convert --dtype $dtype refused for $shape (see $log)"
      rm -rf "$dir"
      return 0
    fi
  fi
  echo "$dir"
}

# GGUF of a shape: F32 from the f32 checkpoint; Q8_0 by llama-quantize from the F32 GGUF.
gguf_file() {
  local shape=$1 type=$2 f32="$work/$1-seed$seed-F32.gguf"
  if [ "$fresh" = 1 ] || [ ! -f "$f32" ] || [ "$f32" -ot "$work/$shape-f32-seed$seed.zinf/manifest.json" ]; then
    "$py" "$root/bench/zinf_to_gguf.py" convert "$work/$shape-f32-seed$seed.zinf" "$f32" >> "$log" 2>&1
  fi
  if [ "$type" = F32 ]; then echo "$f32"; return; fi
  local q="$work/$shape-seed$seed-$type.gguf"
  if [ "$fresh" = 1 ] || [ ! -f "$q" ] || [ "$q" -ot "$f32" ]; then
    "$llamacpp_bin/llama-quantize" "$f32" "$q" "$type" "$threads" >> "$log" 2>&1
  fi
  echo "$q"
}

# Weight bytes read per decoded token: every tensor once except the embedding, of which one row.
bytes_per_token() {  # zinf DIR | gguf FILE
  "$py" - "$root/bench" "$1" "$2" <<'EOF'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import zinf_to_gguf as g
kind, path = sys.argv[2], sys.argv[3]
total = 0
if kind == "zinf":
    man = json.load(open(os.path.join(path, "manifest.json")))
    for ext in man["extents"]:
        for t in ext["tensors"]:
            n = t["size_bytes"]
            total += n // t["shape"][0] if t["name"] == "token_embed" else n
else:
    r = g.Reader(path)
    for name, (dims, gtype, off) in r.tensors.items():
        block, nbytes, _ = g.GGML_TYPES[gtype]
        n = 1
        for d in dims:
            n *= d
        size = n // block * nbytes
        total += size // dims[1] if name == "token_embd.weight" else size
print(total)
EOF
}

# ------------------------------------------------------------------ runs
# The DRAM read rate now (GB/s): ZINF_DRAM_GBPS when given, else zinf's probe.
dram_probe() {
  if [ -n "${ZINF_DRAM_GBPS:-}" ]; then
    echo "$ZINF_DRAM_GBPS"
  else
    "$zinf" calibrate --dram-only --threads "$threads" |
      "$py" -c 'import json,sys; print(json.load(sys.stdin)["dram_read_gbps"])'
  fi
}

# Batch-1 decode, between two probes of the caller's -> "tg tg_sd".
llama_decode() {  # GGUF
  local tg_json="$work/llama-bench-tg.json"
  "$llamacpp_bin/llama-bench" -m "$1" -t "$threads" -p 0 -n 64 -r "$repeat" -o json \
    > "$tg_json" 2>> "$log"
  cat "$tg_json" >> "$log"
  "$py" - "$tg_json" <<'EOF'
import json, sys
tg = next(r for r in json.load(open(sys.argv[1])) if r["n_gen"] > 0 and r["n_prompt"] == 0)
print(tg["avg_ts"], tg["stddev_ts"])
EOF
}

# Prefill -> "pp128 pp128_sd pp512 pp512_sd".
llama_prefill() {  # GGUF
  local json="$work/llama-bench.json"
  "$llamacpp_bin/llama-bench" -m "$1" -t "$threads" -p 128,512 -n 0 -r "$repeat" -o json \
    > "$json" 2>> "$log"
  cat "$json" >> "$log"
  "$py" - "$json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
pp = {r["n_prompt"]: r for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0}
print(pp[128]["avg_ts"], pp[128]["stddev_ts"], pp[512]["avg_ts"], pp[512]["stddev_ts"])
print(rows[0].get("build_commit", "?"), rows[0].get("cpu_info", "?"), file=open(sys.argv[1] + ".info", "w"))
EOF
}

# Decode of 8 and 32 sequences at once: the peer's llama-batched-bench (16-token prompts, 32 new
# tokens each; one run) -> "b8 b32".
llama_batched() {
  local b8 b32
  b8=$(peer_batched_decode "$llamacpp_bin" "$1" "$threads" 8 "$work/batched-8.txt")
  b32=$(peer_batched_decode "$llamacpp_bin" "$1" "$threads" 32 "$work/batched-32.txt")
  cat "$work/batched-8.txt" "$work/batched-32.txt" >> "$log"
  echo "${b8:-nan} ${b32:-nan}"
}

# Each repeat is a fresh session (weights loaded again) running its prompts one at a time: 2 x 64
# new tokens for decode, 4 x 128-token and 2 x 512-token prompts for prefill (llama-bench times one
# each); then 8 and 32 sequences of 16-token prompts and 32 new tokens at once, as the peer's
# batched bench runs them.
zinf_decode() {  # DIR -> "tg tg_sd"
  local dj="$work/zinf-decode.json"
  "$zinf" bench --model "$1" --weights resident --threads "$threads" --repeat "$repeat" \
    --kv-dtype "$kv_dtype" --batch-size 1 --prompt-len 1 --gen-len 64 --num-prompts 2 --json "$dj" >> "$log" 2>&1
  "$py" -c 'import json, sys; d = json.load(open(sys.argv[1]))[0]["decode_tok_s"]; print(d["mean"], d["sd"])' "$dj"
}

zinf_rest() {  # DIR -> "pp128 pp128_sd pp512 pp512_sd b8 b32"
  local pj="$work/zinf-prefill.json" p5="$work/zinf-prefill512.json" bj="$work/zinf-batched.json"
  "$zinf" bench --model "$1" --weights resident --threads "$threads" --repeat "$repeat" \
    --kv-dtype "$kv_dtype" --batch-size 1 --prompt-len 128 --gen-len 1 --num-prompts 4 --json "$pj" >> "$log" 2>&1
  "$zinf" bench --model "$1" --weights resident --threads "$threads" --repeat "$repeat" \
    --kv-dtype "$kv_dtype" --batch-size 1 --prompt-len 512 --gen-len 1 --num-prompts 2 --json "$p5" >> "$log" 2>&1
  "$zinf" bench --model "$1" --weights resident --threads "$threads" --repeat 1 \
    --kv-dtype "$kv_dtype" --batch-size 8,32 --prompt-len 16 --gen-len 32 --json "$bj" >> "$log" 2>&1
  "$py" - "$pj" "$p5" "$bj" <<'EOF'
import json, sys
p, p5 = (json.load(open(f))[0] for f in sys.argv[1:3])
batched = {r["batch_size"]: r["decode_tok_s"]["mean"] for r in json.load(open(sys.argv[3]))}
print(p["prefill_tok_s"]["mean"], p["prefill_tok_s"]["sd"], p5["prefill_tok_s"]["mean"],
      p5["prefill_tok_s"]["sd"], batched[8], batched[32])
EOF
}

# LABEL DECODE ARG: DECODE ARG (-> "tg tg_sd") between two probes -> "tg tg_sd probe_before
# probe_after", the four logged.
between_probes() {
  local label=$1 before tg after
  shift
  before=$(dram_probe)
  tg=$("$@")
  after=$(dram_probe)
  echo "$label decode: $tg tok/s between probes of $before and $after GB/s" >> "$log"
  echo "$tg $before $after"
}

# Rounds' results ("pp128 pp128_sd pp512 pp512_sd b8 b32 tg tg_sd probe_before probe_after" per
# line, both tools alike) -> one line "pp128 pp128_sd pp512 pp512_sd tg tg_sd b8 b32 probe_lo
# probe_hi tok/s-per-GB/s steady_rounds": the median of each measure over the rounds; as its
# spread, the rounds' standard deviation (one round: the tool's own); the probes' lowest and
# highest; and the share of the bound as tg ÷ the mean of the probes just before and after it
# (tok/s per GB/s: × bytes per token, the share), its median over the rounds whose two probes agree
# within 5%: only there did the bound hold still while the tool decoded (all rounds when none
# did, steady 0).
combine_rounds() {
  "$py" -c '
import statistics, sys
rounds = [[float(v) for v in line.split()] for line in sys.stdin if line.strip()]
def spread(i):
    return statistics.stdev(r[i] for r in rounds) if len(rounds) > 1 else rounds[0][i + 1]
median = lambda i: statistics.median(r[i] for r in rounds)
out = [median(0), spread(0), median(2), spread(2), median(6), spread(6), median(4), median(5)]
probes = [p for r in rounds for p in r[8:10]]
steady = [r for r in rounds if abs(r[8] - r[9]) <= 0.05 * min(r[8], r[9])]
shares = [r[6] / ((r[8] + r[9]) / 2) for r in (steady or rounds)]
out += [min(probes), max(probes), statistics.median(shares), len(steady)]
print(*out)'
}

rows="$work/rows.tsv"
: > "$rows"
IFS=, read -ra shape_list <<< "$shapes"
IFS=, read -ra dtype_list <<< "$dtypes"
for shape in "${shape_list[@]}"; do
  f32_dir=$(zinf_checkpoint "$shape" f32)
  [ -n "$f32_dir" ] || { echo "vs_llamacpp.sh: zinf convert --synthetic failed for $shape (see $log)" >&2; exit 1; }
  for dtype in "${dtype_list[@]}"; do
    case "$dtype" in
      f32) zdir=$f32_dir; gtype=F32; label="f32 vs F32" ;;
      int8|int4)
        if [ "$dtype" = int8 ]; then gtype=Q8_0; else gtype=Q4_0; fi
        label="$dtype vs $gtype"
        if [ ! -x "$llamacpp_bin/llama-quantize" ]; then
          note "skipped: $shape $label (no $llamacpp_bin/llama-quantize to make the Q8_0 GGUF)"
          printf '%s\t%s\tskipped\n' "$shape" "$label" >> "$rows"
          continue
        fi
        zdir=$(zinf_checkpoint "$shape" "$dtype") ;;
      *) echo "vs_llamacpp.sh: unknown dtype $dtype (f32, int8, int4)" >&2; exit 1 ;;
    esac
    if [ -z "$zdir" ]; then
      note "skipped: $shape $label (zinf convert --dtype $dtype refused)"
      printf '%s\t%s\tskipped\n' "$shape" "$label" >> "$rows"
      continue
    fi
    gguf=$(gguf_file "$shape" "$gtype")
    zbytes=$(bytes_per_token zinf "$zdir")
    lbytes=$(bytes_per_token gguf "$gguf")
    peer_rounds=
    zinf_rounds=
    for ((round = 1; round <= rounds; round++)); do
      note "$shape $label: llama-bench on $(basename "$gguf") (round $round of $rounds)"
      tg=$(between_probes "round $round, peer" llama_decode "$gguf")
      peer_rounds+="$(llama_prefill "$gguf") $(llama_batched "$gguf") $tg"$'\n'
      note "$shape $label: zinf bench on $(basename "$zdir") (round $round of $rounds)"
      tg=$(between_probes "round $round, zinf" zinf_decode "$zdir")
      zinf_rounds+="$(zinf_rest "$zdir") $tg"$'\n'
    done
    res=$(combine_rounds <<< "$peer_rounds")
    read -r l_pp l_pp_sd l_p5 l_p5_sd l_tg l_tg_sd l_b8 l_b32 l_lo l_hi l_per_gbps l_steady <<< "$res"
    res=$(combine_rounds <<< "$zinf_rounds")
    read -r z_pp z_pp_sd z_p5 z_p5_sd z_tg z_tg_sd z_b8 z_b32 z_lo z_hi z_per_gbps z_steady <<< "$res"
    row() {
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$label" "$@" \
        "$zbytes" "$lbytes" >> "$rows"
    }
    probes=("$z_lo" "$z_hi" "$z_per_gbps" "$z_steady" "$l_lo" "$l_hi" "$l_per_gbps" "$l_steady")
    row tg64 "$z_tg" "$z_tg_sd" "$l_tg" "$l_tg_sd" "${probes[@]}"
    row pp128 "$z_pp" "$z_pp_sd" "$l_pp" "$l_pp_sd" 0 0 0 0 0 0 0 0
    row pp512 "$z_p5" "$z_p5_sd" "$l_p5" "$l_p5_sd" 0 0 0 0 0 0 0 0
    row "decode x8" "$z_b8" 0 "$l_b8" 0 0 0 0 0 0 0 0 0
    row "decode x32" "$z_b32" 0 "$l_b32" 0 0 0 0 0 0 0 0 0
  done
done

# ------------------------------------------------------------------ report
llama_commit=${LLAMACPP_COMMIT:-$(cut -d' ' -f1 "$work/llama-bench.json.info" 2>/dev/null || echo unknown)}
zinf_build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
VS_ZINF_VERSION="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown) (build ${zinf_build_type:-unknown})"
VS_LLAMA_COMMIT=$llama_commit
# Which peer: ik_llama.cpp (the CPU-kernel fork) or llama.cpp, from the source tree the binaries
# were built in when it can be told (LLAMACPP_NAME overrides).
VS_PEER=${LLAMACPP_NAME:-llama.cpp}
if [ -z "${LLAMACPP_NAME:-}" ] && { [ -f "$llamacpp_bin/../../ggml/src/iqk/iqk_mul_mat.cpp" ] ||
   git -C "$llamacpp_bin" remote -v 2>/dev/null | grep -q ik_llama; }; then
  VS_PEER=ik_llama.cpp
fi
VS_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
VS_SIMD=$(grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
# The L3 size as the kernel reports it: glibc's getconf derives it from CPUID, which a VM may fill
# in wrongly (320 MiB on a 32 MiB Zen 4 guest).
l3_size=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || true)
case "$l3_size" in
  *K) VS_L3=$((${l3_size%K} * 1024)) ;;
  *M) VS_L3=$((${l3_size%M} * 1024 * 1024)) ;;
  *) VS_L3=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0) ;;
esac
VS_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
VS_KV_DTYPE=$kv_dtype
export VS_PEER VS_ZINF_VERSION VS_LLAMA_COMMIT VS_CPU VS_SIMD VS_L3 VS_LOAD VS_KV_DTYPE
report=$("$py" - "$rows" "$dram_gbps" "$threads" "$repeat" "$rounds" <<'EOF'
import os, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
bw, threads, repeat, rounds = float(sys.argv[2]) * 1e9, sys.argv[3], sys.argv[4], int(sys.argv[5])
l3 = int(os.environ["VS_L3"] or 0)
peer = os.environ["VS_PEER"]
print("zinf %s vs %s %s; %s threads, %s repeats%s; zinf's KV cache %s (the peer's: f16)"
      % (os.environ["VS_ZINF_VERSION"], peer, os.environ["VS_LLAMA_COMMIT"], threads, repeat,
         "" if rounds == 1 else "; medians of %d alternating rounds, ± the rounds' spread" % rounds,
         os.environ["VS_KV_DTYPE"]))
print("CPU: %s (%s); L3 %d MiB; DRAM read bandwidth (%s threads, `zinf calibrate --dram-only`) "
      "at the start %.1f GB/s, median (%s); load average at the end %s"
      % (os.environ["VS_CPU"], os.environ["VS_SIMD"].strip() or "no AVX2", l3 >> 20, threads,
         bw / 1e9, os.environ["VS_DRAM_SPREAD"], os.environ["VS_LOAD"]))
print()
print("| shape | dtype | test | zinf tok/s | %s tok/s | zinf / %s "
      "| bound tok/s (zinf bytes/token; DRAM GB/s probed around zinf's decodes) "
      "| zinf %% of bound (in rounds whose probes before and after agree within 5%%) "
      "| %s %% of bound (its own probes, alike) |" % (peer, peer, peer))
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
notes = set()
for shape, label, test, *rest in rows:
    if test == "skipped":
        print("| %s | %s | - | skipped | | | | | |" % (shape, label))
        continue
    (z, zsd, l, lsd, z_lo, z_hi, z_per_gbps, z_steady, l_lo, l_hi, l_per_gbps, l_steady, zb,
     lb) = (float(x) for x in rest)
    cells = [shape, label, test, "%.2f ± %.2f" % (z, zsd), "%.2f ± %.2f" % (l, lsd), "%.2f" % (z / l)]
    if test == "tg64":
        mark = ""
        if l3 and zb < l3:
            mark = " *"
            notes.add("* the weights read per token fit in the L3 cache: the DRAM bound understates "
                      "what is possible")
        probed = "%.1f" % z_lo if round(z_lo, 1) == round(z_hi, 1) else "%.1f-%.1f" % (z_lo, z_hi)
        steady = lambda n: "%d of %d rounds steady" % (n, rounds) if n else "no round steady"
        cells += ["%.1f-%.1f (%.0f MB; %s GB/s)%s" % (z_lo * 1e9 / zb, z_hi * 1e9 / zb, zb / 1e6,
                                                   probed, mark),
                  "%.0f%% (%s)" % (100 * z_per_gbps * zb / 1e9, steady(z_steady)),
                  "%.0f%% (%.1f-%.1f GB/s; %s)" % (100 * l_per_gbps * lb / 1e9, l_lo, l_hi,
                                                  steady(l_steady))]
    else:
        cells += ["n/a", "n/a", "n/a"]
    print("| " + " | ".join(cells) + " |")
for n in sorted(notes):
    print()
    print(n)
EOF
)
echo "$report"
[ -z "$out_file" ] || echo "$report" > "$out_file"
