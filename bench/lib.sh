# Shell helpers the bench scripts share; source it (it defines functions only).

# synthetic_checkpoint ZINF CONFIG DIR [DTYPE [CONVERT_FLAGS...]]: writes `zinf convert --synthetic
# CONFIG` into DIR once (by way of DIR.partial, so an interrupted write is never taken for a
# finished one); later runs reuse it.
synthetic_checkpoint() {
  local zinf=$1 config=$2 dir=$3 dtype=${4:-f32}
  shift $(($# < 4 ? $# : 4))
  [ -f "$dir/manifest.json" ] && return 0
  mkdir -p "$(dirname "$dir")"
  echo "writing the synthetic checkpoint $dir (once; later runs reuse it)"
  rm -rf "$dir.partial"
  "$zinf" convert --synthetic "$config" "$dir.partial" --dtype "$dtype" "$@"
  mv "$dir.partial" "$dir"
}

# zinf_binary ROOT: the zinf of $ZINF_BUILD_DIR (default ROOT/build), built first when missing.
zinf_binary() {
  local build_dir=${ZINF_BUILD_DIR:-$1/build}
  [ -x "$build_dir/zinf" ] || "$1/scripts/build" >&2
  echo "$build_dir/zinf"
}

# peer_batched_decode BIN GGUF THREADS NPL OUTFILE: a llama.cpp-family peer's decode tokens/s with
# NPL sequences at once (llama-batched-bench, 16-token prompts, 32 new tokens each: its S_TG);
# the full output, whose table goes to stderr, is kept in OUTFILE.
peer_batched_decode() {
  local bin gguf threads=$3 npl=$4 out
  bin=$(realpath "$1") gguf=$(realpath "$2") out=$(realpath -m "$5")
  # From OUTFILE's folder: the tool drops a llama.log into its working directory.
  (cd "$(dirname "$out")" && "$bin/llama-batched-bench" -m "$gguf" -t "$threads" \
    -c $((npl * 48 + 64)) -b 2048 -ub 512 -npp 16 -ntg 32 -npl "$npl" > "$out" 2>&1)
  awk -F'|' '$2 ~ /^ *16 *$/ && $4 ~ /^ *'"$npl"' *$/ {gsub(/ /, "", $9); print $9}' "$out"
}

# peer_streamed_decode BIN GGUF THREADS BATCH STEPS TIMEOUT PREFIX: a llama.cpp-family peer's decode
# tokens/s for BATCH one-token prompts generating STEPS tokens each (llama-bench at batch 1,
# llama-batched-bench above it), or "not done in TIMEOUT s". Its output goes to PREFIX.txt (and
# PREFIX.json), GNU time's "inblocks peak_rss_kib" to PREFIX.io. The forward passes it runs: its
# warm-up, (batched-bench) the prompts', then one per new token.
peer_streamed_decode() {
  local bin gguf threads=$3 batch=$4 steps=$5 limit=$6 prefix
  bin=$(realpath "$1") gguf=$(realpath "$2") prefix=$(realpath -m "$7")
  local timed=(/usr/bin/time -o "$prefix.io" -f '%I %M' timeout "$limit")
  if [ "$batch" = 1 ]; then
    if "${timed[@]}" "$bin/llama-bench" -m "$gguf" -t "$threads" -p 0 -n "$steps" -r 1 -o json \
        > "$prefix.json" 2> "$prefix.txt"; then
      jq -r '.[0].avg_ts' "$prefix.json"
      return
    fi
  # From PREFIX's folder: the tool drops a llama.log into its working directory.
  elif (cd "$(dirname "$prefix")" && "${timed[@]}" "$bin/llama-batched-bench" -m "$gguf" \
      -t "$threads" -c $((batch * (steps + 2))) -b 2048 -ub 512 -npp 1 -ntg "$steps" \
      -npl "$batch" > "$prefix.txt" 2>&1); then
    awk -F'|' '$4 ~ /^ *'"$batch"' *$/ {gsub(/ /, "", $9); print $9}' "$prefix.txt"
    return
  fi
  echo "not done in $limit s"
}
