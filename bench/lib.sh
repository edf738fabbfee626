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
