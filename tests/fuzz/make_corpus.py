#!/usr/bin/env python3
"""Regenerates the small seed corpora in tests/fuzz/corpus/ from the repo's real files and
../shared/tokenizers (run from the repo root: tests/fuzz/make_corpus.py [converted.zinf dir]).

Seeds are kept small so every execution is fast: safetensors files are rewritten with tiny tensors
(the real header's names, dtypes and metadata), and tokenizer.json files are cut down to their
first vocabulary entries and the merges among them, keeping every other component as it is."""
import json
import os
import shutil
import struct
import sys

ROOT = os.getcwd()
OUT = os.path.join(ROOT, "tests/fuzz/corpus")
SHARED = os.path.join(ROOT, "../shared/tokenizers")


def put(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(OUT, target, name), mode) as f:
        f.write(data)


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape)] -> bytes, data zero-filled and packed in order."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        size = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8}[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(offset)


def safetensors_seeds():
    with open("models/stories260K/model.safetensors", "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        real = json.loads(f.read(length))
    metadata = real.pop("__metadata__", None)
    names = sorted(real)
    small = [(n, real[n]["dtype"], [min(d, 2) for d in real[n]["shape"]]) for n in names]
    put("safetensors", "stories260K_small.safetensors", safetensors(small, metadata))
    put("safetensors", "dtypes.safetensors", safetensors(
        [("a", "F32", [2, 3]), ("b", "F16", [4]), ("c", "BF16", [1, 1, 2]), ("empty", "F32", [0, 5]),
         ("scalar", "F32", [])], {"format": "pt"}))
    put("safetensors", "unsupported_dtype.safetensors", safetensors([("ids", "I64", [2])]))
    put("safetensors", "header_only.safetensors", safetensors([], {}))


def shrink_tokenizer(tokenizer, keep_ids=300):
    model = tokenizer["model"]
    vocab = {k: v for k, v in model["vocab"].items() if v < keep_ids}
    merges = []
    for merge in model.get("merges", []):
        a, b = merge.split(" ", 1) if isinstance(merge, str) else merge
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(merge)
    model["vocab"], model["merges"] = vocab, merges[:200]
    tokenizer["added_tokens"] = tokenizer.get("added_tokens", [])[:8]
    return json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":"))


# Excerpts of these are not copied into the repository: Llama 3's licence requires its full text
# to ship with it, and OPT's model licence is not an open one (scripts/fuzz adds both at run time).
NOT_IN_REPO = {"llama-3-8b-instruct", "opt-125m"}


def tokenizer_seeds():
    for name in sorted(os.listdir(SHARED)) if os.path.isdir(SHARED) else []:
        if name in NOT_IN_REPO:
            continue
        path = os.path.join(SHARED, name, "tokenizer.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                put("tokenizer_json", name + "_small.json", shrink_tokenizer(json.load(f)))
    put("tokenizer_model", "stories260K.model",
        open("models/stories260K/tokenizer.model", "rb").read())


def text_seeds(zinf_dir):
    put("hf_config", "stories260K.json", open("models/stories260K/config.json").read())
    put("hf_config", "opt.json", json.dumps({
        "model_type": "opt", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "ffn_dim": 32, "max_position_embeddings": 32,
        "word_embed_proj_dim": 16, "do_layer_norm_before": True, "activation_function": "relu"}))
    put("hf_config", "llama3_rope.json", json.dumps({
        "model_type": "llama", "vocab_size": 64, "hidden_size": 16, "intermediate_size": 32,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "tie_word_embeddings": True, "rope_scaling": {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}))
    if zinf_dir:
        put("manifest", "stories260K.json", open(os.path.join(zinf_dir, "manifest.json")).read())
    put("prompts", "prompts.txt", open("examples/prompts.txt").read())
    put("prompts", "settings.jsonl", "\n".join(json.dumps(x) for x in [
        {"id": "a", "prompt": "Once upon a time", "max_new_tokens": 8, "temperature": 0.7,
         "top_k": 40, "top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.1, "seed": 42,
         "stop": ["\n", "The end"], "ignore_eos": True, "logprobs": 2},
        {"id": "b", "prompt_ids": [1, 403, 407]},
        {"prompt": "caf\u00e9 \u65e5\u672c"}]) + "\n")
    put("prompts", "bad.jsonl", '{"id": "x", "prompt": "a"}\n{"id": "x"}\n[1,2]\n{"prompt": 5}\n')


if __name__ == "__main__":
    safetensors_seeds()
    tokenizer_seeds()
    text_seeds(sys.argv[1] if len(sys.argv) > 1 else None)
