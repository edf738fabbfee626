#!/usr/bin/env python3
"""Regenerate the expected outputs of the chat-template and Jinja conformance test data.

Usage (from the repository root, needs Python 3 + jinja2; not run in CI):

    python3 tests/data/chat_templates/render_reference.py

It rewrites, in place and in the same line order:
  * tests/data/chat_templates/<family>/chat_golden.jsonl  -- "expected" (or "error"/"error_type")
    rendered from <family>/tokenizer_config.json "chat_template";
  * tests/data/jinja_conformance.jsonl                     -- "expected" (or "error"/"error_type")
    rendered from each line's "template" with its "context" as variables.

The inputs of every case (messages, tools, kwargs, template, context) are left untouched; only the
output fields are replaced.  The Jinja environment is set up the way Hugging Face transformers'
apply_chat_template sets it up (see make_env).  The data was generated with jinja2 3.1.6; the
shared tokenizer goldens (../shared/tokenizers/*/chat_golden.jsonl) were made with jinja2 3.1.2 --
no case here is known to differ between the two.
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.exceptions
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(HERE, "..", "jinja_conformance.jsonl")
FIXED_NOW = datetime(2026, 7, 26)  # strftime_now is pinned so goldens are reproducible


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def tojson(x, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, template, variables):
    """Returns {"expected": str} or {"error": str, "error_type": str}."""
    try:
        out = env.from_string(template).render(**variables)
        return {"expected": out}
    except Exception as e:  # noqa: BLE001 -- every failure is recorded as data
        return {"error": str(e), "error_type": type(e).__name__}


def token_str(tok):
    if tok is None:
        return None
    if isinstance(tok, dict):  # AddedToken serialised as {"content": ..., ...}
        return tok.get("content")
    return tok


def special_tokens(cfg):
    out = {}
    # transformers passes tokenizer.special_tokens_map: tokens that are unset (null / absent) are
    # left out, so the template sees them as undefined.
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        if cfg.get(key) is not None:
            out[key] = token_str(cfg[key])
    if "additional_special_tokens" in cfg:
        out["additional_special_tokens"] = [token_str(t) for t in cfg["additional_special_tokens"]]
    return out


def dump(obj):
    return json.dumps(obj, ensure_ascii=False)


def strip_outputs(case):
    return {k: v for k, v in case.items() if k not in ("expected", "error", "error_type")}


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(dump(line) + "\n")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def do_family(env, family_dir):
    with open(os.path.join(family_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    template = cfg["chat_template"]
    specials = special_tokens(cfg)
    path = os.path.join(family_dir, "chat_golden.jsonl")
    out = []
    for case in read_lines(path):
        case = strip_outputs(case)
        variables = {
            "messages": case["messages"],
            "tools": case.get("tools"),
            "documents": None,
            "add_generation_prompt": case.get("add_generation_prompt", False),
        }
        variables.update(specials)
        variables.update(case.get("kwargs", {}))
        case.update(render(env, template, variables))
        out.append(case)
    write_lines(path, out)
    return len(out)


def do_conformance(env, path):
    out = []
    for case in read_lines(path):
        case = strip_outputs(case)
        case.update(render(env, case["template"], case.get("context", {})))
        out.append(case)
    write_lines(path, out)
    return len(out)


def main():
    env = make_env()
    print(f"jinja2 {jinja2.__version__}", file=sys.stderr)
    for name in sorted(os.listdir(HERE)):
        d = os.path.join(HERE, name)
        if os.path.isfile(os.path.join(d, "chat_golden.jsonl")):
            n = do_family(env, d)
            print(f"{name}: {n} cases", file=sys.stderr)
    if os.path.isfile(CONFORMANCE):
        n = do_conformance(env, CONFORMANCE)
        print(f"jinja_conformance.jsonl: {n} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
