#!/usr/bin/env bash
# zinf vs llama.cpp on a mixture-of-experts model held in DRAM, side by side in one run, same
# weights, same thread count (issue #21): Qwen1.5-MoE-A2.7B's shape (14.3B parameters, 60 experts
# top-4 plus a shared expert) in int8 against llama.cpp's Q8_0.
#
# Weights: a synthetic f16 zinf checkpoint (deterministic pseudo-random values) becomes an F16 GGUF
# (bench/zinf_to_gguf.py: experts stacked as llama.cpp's qwen2moe expects), then llama-quantize's
# Q8_0; zinf's own int8 checkpoint quantizes the same values (seed) per output row. Intermediate
# files are deleted as soon as the next one exists (f16: 29 GB each), so the peak is about 58 GB.
# Runs: llama-bench (pp128 prefill, tg64 batch-1 decode), llama-batched-bench (16 and 64 parallel
# sequences), and zinf bench with the same shapes (resident weights).
#
# llama.cpp is not part of zinf and is not built here: build it yourself from its public source (CPU,
# Release, -DGGML_NATIVE=ON) and give the directory holding llama-bench, llama-batched-bench and
# llama-quantize.
#
# Usage: bench/moe_vs_llamacpp.sh LLAMACPP_BIN [--config FILE] [--threads N] [--repeat N]
#   [--work DIR (default $ZINF_BUILD_DIR/moe-bench)] [--out FILE.md]
# Environment: LLAMACPP_COMMIT names the peer's commit when its binaries do not know it.
# Exit status 0 also when skipped (no llama.cpp given); 1 on errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
build_dir=${ZINF_BUILD_DIR:-$root/build}
zinf=$build_dir/zinf
llamacpp_bin=${LLAMACPP_BIN:-}
config=$root/configs/qwen1.5-moe-a2.7b.json
threads=$(nproc)
repeat=3
work=$build_dir/moe-bench
out_file=
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "moe_vs_llamacpp.sh: unknown option $1" >&2; exit 1 ;;
    *) llamacpp_bin=$1; shift ;;
  esac
done
if [ -z "$llamacpp_bin" ] || [ ! -x "$llamacpp_bin/llama-bench" ]; then
  echo "skipped: no llama-bench in '$llamacpp_bin' (pass the directory of llama.cpp's binaries)"
  exit 0
fi
mkdir -p "$work"
log=$work/log.txt
name=$(basename "$config" .json)
note() { echo "$*" | tee -a "$log" >&2; }

# ------------------------------------------------------------------ weights
q8=$work/$name-Q8_0.gguf
int8=$work/$name-int8.zinf
if [ ! -f "$q8" ]; then
  f16=$work/$name-f16.zinf
  f16_gguf=$work/$name-F16.gguf
  [ -f "$f16_gguf" ] || {
    note "writing $f16 and $f16_gguf"
    "$zinf" convert --synthetic "$config" "$f16" --dtype f16 --force -q >> "$log" 2>&1
    python3 "$root/bench/zinf_to_gguf.py" convert "$f16" "$f16_gguf" >> "$log" 2>&1
  }
  rm -rf "$f16"
  note "llama-quantize → $q8"
  "$llamacpp_bin/llama-quantize" "$f16_gguf" "$q8" Q8_0 "$threads" >> "$log" 2>&1
  rm -f "$f16_gguf"
fi
[ -f "$int8/manifest.json" ] || {
  note "writing $int8"
  "$zinf" convert --synthetic "$config" "$int8" --dtype int8 --force -q >> "$log" 2>&1
}

# ------------------------------------------------------------------ runs
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
note "llama-bench pp128 / tg64, $threads threads, $repeat repetitions"
"$llamacpp_bin/llama-bench" -m "$q8" -t "$threads" -p 128 -n 64 -r "$repeat" -o json \
  > "$work/llama-bench.json" 2>> "$log"
read -r l_pp l_tg < <(python3 - "$work/llama-bench.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
pp = next(r for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0)
tg = next(r for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0)
print(pp["avg_ts"], tg["avg_ts"])
PY
)
l_batched=()
for npl in 16 64; do
  note "llama-batched-bench: $npl sequences, 16-token prompts, 32 new tokens each"
  # The table's S_TG t/s column: generated tokens of all sequences per second of decode.
  l_batched+=("$(peer_batched_decode "$llamacpp_bin" "$q8" "$threads" "$npl" "$work/batched-$npl.txt")")
  cat "$work/batched-$npl.txt" >> "$log"
done

zinf_run() {  # --batch-size B --prompt-len P --gen-len G --num-prompts N -> "prefill decode"
  local json="$work/zinf-$$.json"
  "$zinf" bench --model "$int8" --weights resident --threads "$threads" --repeat "$repeat" \
    --json "$json" "$@" >> "$log" 2>&1
  python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
print(r["prefill_tok_s"]["mean"], r["decode_tok_s"]["mean"])
PY
}
note "zinf bench: decode batch 1, prefill 128, decode 16 and 64 sequences"
read -r _ z_tg < <(zinf_run --batch-size 1 --prompt-len 1 --gen-len 64 --num-prompts 2)
read -r z_pp _ < <(zinf_run --batch-size 1 --prompt-len 128 --gen-len 1 --num-prompts 4)
read -r _ z_b16 < <(zinf_run --batch-size 16 --prompt-len 16 --gen-len 32 --num-prompts 16)
read -r _ z_b64 < <(zinf_run --batch-size 64 --prompt-len 16 --gen-len 32 --num-prompts 64)

commit=$(git -C "$root" rev-parse --short HEAD)
cpu=$(lscpu | sed -n 's/^Model name: *//p')
report=$(python3 - "$l_pp" "$l_tg" "${l_batched[0]}" "${l_batched[1]}" "$z_pp" "$z_tg" "$z_b16" \
  "$z_b64" <<'PY'
import sys
l_pp, l_tg, l_16, l_64, z_pp, z_tg, z_16, z_64 = (float(x or "nan") for x in sys.argv[1:])
rows = [("decode, batch 1 (tg64)", z_tg, l_tg), ("prefill (pp128)", z_pp, l_pp),
        ("decode, 16 sequences", z_16, l_16), ("decode, 64 sequences", z_64, l_64)]
print("| tok/s | zinf int8 | llama.cpp Q8_0 | zinf ÷ llama.cpp |")
print("|---|---:|---:|---:|")
for label, z, l in rows:
    print("| %s | %.2f | %.2f | %.2f× |" % (label, z, l, z / l))
PY
)
{
  echo "# $name int8 in DRAM: zinf vs llama.cpp"
  echo
  echo "$(date -u +%F), zinf $commit, llama.cpp ${LLAMACPP_COMMIT:-$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0].get("build_commit","?"))' "$work/llama-bench.json")},"
  echo "$cpu, $threads threads, $repeat repetitions; load average before the runs: $load_before."
  echo
  echo "$report"
} | tee ${out_file:+"$out_file"}
