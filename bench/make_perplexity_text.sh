#!/usr/bin/env bash
# Writes bench/data/stories260k-sampled.txt: the text `zinf perplexity` is measured on for
# stories260K (docs/quantization.md). No TinyStories text can be downloaded here, so it is sampled
# from the f32 model itself: 240 varied story openings (subject × name × place), 120 new tokens
# each at temperature 0.8, top-p 0.95, fixed seeds — TinyStories-style text of about 30,000
# tokens. Rerunning it reproduces the file byte for byte.
# Usage: bench/make_perplexity_text.sh [ZINF_BINARY]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zinf=${1:-$root/build/zinf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$zinf" convert "$root/models/stories260K" "$work/model" >&2
subjects=("a little girl" "a little boy" "a small dog" "a big cat" "a tiny bird" "an old man")
names=(Lily Tom Ben Sue Max Mia Sam Anna)
places=("in the park" "near the sea" "in a big house" "in the forest" "at school")
id=0
for subject in "${subjects[@]}"; do
  for name in "${names[@]}"; do
    for place in "${places[@]}"; do
      id=$((id + 1))
      printf '{"id":"%d","prompt":"Once upon a time, there was %s named %s who lived %s.","seed":%d}\n' \
        "$id" "$subject" "$name" "$place" "$id"
    done
  done
done >"$work/prompts.jsonl"
"$zinf" generate --model "$work/model" --prompts "$work/prompts.jsonl" --out "$work/out.jsonl" \
  --max-new-tokens 120 --temperature 0.8 --top-p 0.95 --batch-size 32 >&2
# Prompt and continuation, one story per paragraph, in request order.
python3 - "$work/prompts.jsonl" "$work/out.jsonl" >"$root/bench/data/stories260k-sampled.txt" <<'PY'
import json, sys
prompts = {p["id"]: p["prompt"] for p in map(json.loads, open(sys.argv[1]))}
outputs = {o["id"]: o["text"] for o in map(json.loads, open(sys.argv[2]))}
for key in sorted(prompts, key=int):
    print(prompts[key] + outputs[key].rstrip() + "\n")
PY
echo "wrote $root/bench/data/stories260k-sampled.txt" >&2
