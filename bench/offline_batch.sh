#!/usr/bin/env bash
# Many prompts at once, end to end (issue #25, item 4): zinf `generate` against llama.cpp-family
# servers with continuous batching, on the same prompts, weights and thread count.
#
# The job: 256 token-id prompts of mixed lengths (uniform in 16-512, seeded), 128 new tokens each
# (greedy, EOS ignored), TinyLlama-1.1B's shape with synthetic weights, DRAM-resident.
# - zinf: `zinf generate --prompts P.jsonl --ignore-eos --max-new-tokens 128`, its batch size and
#   refill chosen by itself (`--batch-size auto`), timed as a whole process (load included). Its KV
#   cache holds f16 (--kv-dtype), the precision the peers' servers keep by default (zinf's own
#   default is f32: twice the bytes attention reads, and twice the memory).
# - each peer: `llama-server -np N -cb` (N parallel slots, continuous batching; context N x 648),
#   driven by bench/offline_batch_client.py keeping N requests in flight, in file order; timed from
#   the first request to the last answer (the server's load left out). N is swept (--np) and the
#   best kept, as the issue asks ("the best batched setting").
# Weights: int8 rows compare zinf int8 with the peer's Q8_0, f16 rows zinf f16 with F16; the GGUFs
# are bench/zinf_to_gguf.py's F16 of zinf's f16 checkpoint, and llama-quantize's Q8_0 of it. The
# GGUF carries Mistral-7B's 32,000-piece SentencePiece vocabulary (../shared/tokenizers; the
# server cannot answer without a real one); the prompts are token ids, so it tokenizes nothing.
#
# Usage: bench/offline_batch.sh PEER_BIN [PEER_BIN...] [options]
#   --dtypes int8,f16   --np 16,32,64   --prompts 256   --min-len 16   --max-len 512
#   --new-tokens 128   --threads N (default: nproc)   --seed N (default 1)   --out FILE.md
#   --kv-dtype f16 (zinf's KV cache: f16, f32 or int8)
# PEER_BIN: a directory holding llama-server and llama-quantize, built from the peer's public source
# (Release, native). Environment: ZINF_BUILD_DIR (default build/), ZINF_BENCH_DIR (cache; default
# $ZINF_BUILD_DIR/bench-work), PEER_COMMITS ("name=commit ..." for the report), TOKENIZER_MODEL
# (default ../shared/tokenizers/mistral-7b-v0.1/tokenizer.model).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"

peers=()
dtypes=int8,f16
np_list=16,32,64
count=256 min_len=16 max_len=512 new_tokens=128
threads=$(nproc)
seed=1
kv_dtype=f16
out_file=
while [ $# -gt 0 ]; do
  case "$1" in
    --dtypes) dtypes=$2; shift 2 ;;
    --np) np_list=$2; shift 2 ;;
    --prompts) count=$2; shift 2 ;;
    --min-len) min_len=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --new-tokens) new_tokens=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --kv-dtype) kv_dtype=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "offline_batch.sh: unknown option $1" >&2; exit 1 ;;
    *) peers+=("$1"); shift ;;
  esac
done
if [ ${#peers[@]} = 0 ]; then
  echo "skipped: no peer given (the directory holding llama-server and llama-quantize)"
  exit 0
fi
tokenizer_model=${TOKENIZER_MODEL:-$root/../shared/tokenizers/mistral-7b-v0.1/tokenizer.model}
[ -f "$tokenizer_model" ] || { echo "offline_batch.sh: $tokenizer_model not found (TOKENIZER_MODEL)" >&2; exit 1; }
for bin in "${peers[@]}"; do
  for tool in llama-server llama-quantize; do
    [ -x "$bin/$tool" ] || { echo "offline_batch.sh: $bin/$tool not found" >&2; exit 1; }
  done
done

zinf=$(zinf_binary "$root")
work=${ZINF_BENCH_DIR:-$(dirname "$zinf")/bench-work}/offline_batch
mkdir -p "$work"
client=("python3" "$root/bench/offline_batch_client.py")
log="$work/run.log"
: > "$log"
note() { echo "$*" >&2; echo "$*" >> "$log"; }

prompts="$work/prompts-$count-$min_len-$max_len-seed$seed.jsonl"
[ -f "$prompts" ] || "${client[@]}" prompts "$prompts" "$count" "$min_len" "$max_len" 32000 "$seed"

zinf_checkpoint() {  # DTYPE -> directory
  local dir="$work/tinyllama-$1-seed$seed.zinf"
  synthetic_checkpoint "$zinf" "$root/bench/configs/tinyllama-1.1b.json" "$dir" "$1" \
    --seed "$seed" >> "$log" 2>&1
  echo "$dir"
}

gguf_of() {  # PEER_BIN TYPE -> file (F16 from zinf's f16 checkpoint; Q8_0 quantized from it)
  local f16="$work/tinyllama-seed$seed-sp-F16.gguf"
  if [ ! -f "$f16" ]; then
    python3 "$root/bench/zinf_to_gguf.py" convert "$(zinf_checkpoint f16)" "$f16.partial" \
      --tokenizer-model "$tokenizer_model" >> "$log" 2>&1
    mv "$f16.partial" "$f16"
  fi
  [ "$2" = F16 ] && { echo "$f16"; return; }
  local q="$work/tinyllama-seed$seed-sp-$2.gguf"
  if [ ! -f "$q" ]; then
    "$1/llama-quantize" "$f16" "$q.partial" "$2" "$threads" >> "$log" 2>&1
    mv "$q.partial" "$q"
  fi
  echo "$q"
}

# PEER_BIN GGUF NP LABEL -> prints the client's JSON report (empty when the server failed)
peer_run() {
  local bin=$1 gguf=$2 np=$3 label=$4 port=$((18000 + RANDOM % 2000))
  local server_log="$work/server-$label-np$np.log"
  "$bin/llama-server" -m "$gguf" -t "$threads" -np "$np" -c $((np * (max_len + new_tokens + 8))) \
    -cb -b 2048 -ub 512 --host 127.0.0.1 --port "$port" > "$server_log" 2>&1 &
  server_pid=$!  # global: the trap below may run after this function's locals are gone
  # A busy server ignores SIGTERM until its slots finish: never leave one running behind.
  trap 'kill -9 "$server_pid" 2> /dev/null || true' EXIT INT TERM
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.5
  done
  if curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1; then
    "${client[@]}" drive "http://127.0.0.1:$port" "$prompts" "$np" "$new_tokens" \
      "$work/client-$label-np$np.json" 2>> "$log" || true
  else
    note "$label -np $np: the server did not come up (see $server_log)"
  fi
  kill "$server_pid" 2> /dev/null || true
  for _ in $(seq 20); do kill -0 "$server_pid" 2> /dev/null || break; sleep 0.5; done
  kill -9 "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
}

peer_name() {  # PEER_BIN -> ik_llama.cpp or llama.cpp, from the source tree it was built in
  if [ -f "$1/../../ggml/src/iqk/iqk_mul_mat.cpp" ]; then echo ik_llama.cpp; else echo llama.cpp; fi
}

rows="$work/rows.jsonl"
: > "$rows"
IFS=, read -ra dtype_list <<< "$dtypes"
IFS=, read -ra nps <<< "$np_list"
for dtype in "${dtype_list[@]}"; do
  case "$dtype" in
    int8) gtype=Q8_0 ;;
    f16) gtype=F16 ;;
    *) echo "offline_batch.sh: unknown dtype $dtype (int8, f16)" >&2; exit 1 ;;
  esac
  zdir=$(zinf_checkpoint "$dtype")
  for bin in "${peers[@]}"; do
    name=$(peer_name "$bin")
    gguf=$(gguf_of "$bin" "$gtype")
    for np in "${nps[@]}"; do
      note "$dtype: $name llama-server -np $np on $(basename "$gguf")"
      report=$(peer_run "$bin" "$gguf" "$np" "$name-$gtype")
      [ -n "$report" ] && echo "{\"dtype\":\"$dtype\",\"tool\":\"$name\",\"setting\":\"-np $np\",\"run\":$report}" >> "$rows"
    done
  done
  note "$dtype: zinf generate on $(basename "$zdir")"
  out="$work/zinf-$dtype.jsonl"
  rm -f "$out" "$out.run.json"
  start=$(date +%s.%N)
  "$zinf" generate --model "$zdir" --prompts "$prompts" --out "$out" --threads "$threads" \
    --max-new-tokens "$new_tokens" --ignore-eos --weights resident --kv-dtype "$kv_dtype" \
    >> "$log" 2>&1
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  python3 - "$out" "$wall" "$dtype" >> "$rows" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = {"requests": len(lines), "wall_s": float(sys.argv[2]),
       "prompt_tokens": sum(l["prompt_tokens"] for l in lines),
       "completion_tokens": sum(l["completion_tokens"] for l in lines)}
print(json.dumps({"dtype": sys.argv[3], "tool": "zinf", "setting": "batch auto", "run": run}))
EOF
  grep -h "tok/s\|batch" "$log" | tail -3 >&2 || true
done

# ------------------------------------------------------------------ report
export OB_ZINF="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
export OB_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
export OB_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
export OB_JOB="$count prompts of $min_len-$max_len tokens, $new_tokens new tokens each, $threads threads; zinf's KV cache $kv_dtype (the peers' servers: f16, their default)"
export OB_PEERS=${PEER_COMMITS:-}
report=$(python3 - "$rows" <<'EOF'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("zinf %s vs %s; %s" % (os.environ["OB_ZINF"],
      ", ".join(sorted({r["tool"] for r in rows if r["tool"] != "zinf"})) +
      (" (%s)" % os.environ["OB_PEERS"] if os.environ["OB_PEERS"] else ""), os.environ["OB_JOB"]))
print("CPU: %s; load average at the end %s" % (os.environ["OB_CPU"], os.environ["OB_LOAD"]))
print()
print("| weights | tool | setting | wall s | new tok/s | all tok/s (prompt + new) | zinf ÷ this |")
print("|---|---|---|---:|---:|---:|---:|")
for dtype in dict.fromkeys(r["dtype"] for r in rows):
    mine = [r for r in rows if r["dtype"] == dtype]
    rate = lambda r: r["run"]["completion_tokens"] / r["run"]["wall_s"]
    zinf = next((rate(r) for r in mine if r["tool"] == "zinf"), None)
    for r in mine:
        run = r["run"]
        ratio = "%.2f" % (zinf / rate(r)) if zinf and r["tool"] != "zinf" else ""
        print("| %s | %s | %s | %.0f | %.1f | %.1f | %s |" % (
            dtype, r["tool"], r["setting"], run["wall_s"], rate(r),
            (run["prompt_tokens"] + run["completion_tokens"]) / run["wall_s"], ratio))
    peers = [r for r in mine if r["tool"] != "zinf"]
    if zinf and peers:
        best = max(peers, key=rate)
        print("| %s | **zinf ÷ best peer** (%s %s) | | | | | **%.2f** |" % (
            dtype, best["tool"], best["setting"], zinf / rate(best)))
EOF
)
echo "$report"
[ -n "$out_file" ] && echo "$report" > "$out_file"
exit 0
