// Perplexity of a token stream under the model, with sliding windows (as Hugging Face's guide
// and llama.cpp's tool do), so each quantization's cost in quality is one number.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "engine/model.h"

namespace zinf {

struct PerplexityOptions {
  int context = 512;  // tokens per window
  int stride = 256;   // windows start this many tokens apart; each token is scored once
};

struct PerplexityResult {
  double perplexity = 0;      // exp(mean negative log-likelihood)
  double mean_nll = 0;        // nats per token
  double standard_error = 0;  // of the perplexity, from the spread of per-token NLL
  int64_t tokens_scored = 0;
  int windows = 0;
  int64_t tokens_processed = 0;  // through the model, overlaps counted
};

// Windows [begin, begin + context) for begin = 0, stride, 2·stride, … until the text is covered;
// a window scores the tokens no earlier window scored, each predicted from everything before it
// in its window (so with stride ≤ context/2 every scored token but the first window's has at
// least context − stride tokens of history). The model's KV slot 0 is used; its limits must
// allow `context` positions and logit rows for a whole step. progress(windows done, total) may
// be empty. Throws zinf::Error for fewer than 2 tokens or options out of range.
PerplexityResult MeasurePerplexity(Model& model, std::span<const TokenId> tokens,
                                   const PerplexityOptions& options,
                                   const std::function<void(int, int)>& progress);

}  // namespace zinf
