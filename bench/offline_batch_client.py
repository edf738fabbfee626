#!/usr/bin/env python3
"""The prompts and the client of bench/offline_batch.sh (standard library only).

  prompts OUT.jsonl COUNT MIN_LEN MAX_LEN VOCAB SEED
      COUNT token-id prompts, lengths uniform in [MIN_LEN, MAX_LEN], ids uniform in [3, VOCAB),
      as zinf JSONL lines {"id": i, "prompt_ids": [...]}; the same seed gives the same file.
  drive URL PROMPTS.jsonl CONCURRENCY NEW_TOKENS OUT.json
      Sends every prompt to a llama.cpp-family server's /completion (greedy, EOS ignored, exactly
      NEW_TOKENS new tokens), keeping CONCURRENCY requests in flight, in file order; writes the wall
      time from the first request to the last answer and the tokens the server counted.
      The 256 byte tokens (<0x00>..<0xFF>, ids 3-258 in a Llama/Mistral vocabulary) are banned:
      random weights emit them in orders that are not UTF-8, and the server then fails the whole
      answer (HTTP 500) when it writes the text as JSON.
"""
import concurrent.futures
import json
import random
import sys
import time
import urllib.error
import urllib.request


def make_prompts(out_path, count, min_len, max_len, vocab, seed):
    rng = random.Random(seed)
    with open(out_path, "w") as out:
        for i in range(count):
            length = rng.randint(min_len, max_len)
            ids = [rng.randrange(3, vocab) for _ in range(length)]
            out.write(json.dumps({"id": i, "prompt_ids": ids}) + "\n")


BYTE_TOKENS_BANNED = [[token, False] for token in range(3, 259)]


def complete(url, ids, new_tokens):
    body = json.dumps({
        "prompt": ids,
        "n_predict": new_tokens,
        "ignore_eos": True,
        "temperature": 0,
        "cache_prompt": False,
        "stream": False,
        "logit_bias": BYTE_TOKENS_BANNED,
    }).encode()
    request = urllib.request.Request(url + "/completion", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=3600) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as error:
        sys.exit("offline_batch_client.py: %s answered HTTP %d: %s"
                 % (url, error.code, error.read().decode(errors="replace")[:500]))
    return answer.get("tokens_evaluated", len(ids)), answer["tokens_predicted"]


def drive(url, prompts_path, concurrency, new_tokens, out_path):
    prompts = [json.loads(line)["prompt_ids"] for line in open(prompts_path) if line.strip()]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda ids: complete(url, ids, new_tokens), prompts))
    wall = time.monotonic() - start
    short = sum(1 for _, predicted in results if predicted != new_tokens)
    if short:
        sys.exit("offline_batch_client.py: %d of %d answers did not hold %d new tokens"
                 % (short, len(results), new_tokens))
    report = {
        "requests": len(results),
        "wall_s": wall,
        "prompt_tokens": sum(len(ids) for ids in prompts),
        "completion_tokens": sum(predicted for _, predicted in results),
        "concurrency": concurrency,
    }
    json.dump(report, open(out_path, "w"))
    print(json.dumps(report))


def main(argv):
    if len(argv) == 8 and argv[1] == "prompts":
        make_prompts(argv[2], *map(int, argv[3:8]))
    elif len(argv) == 7 and argv[1] == "drive":
        drive(argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
