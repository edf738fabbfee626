// The generation loop: keeps up to batch_size sequences in flight, refills a finished sequence's
// slot with the next request, prefills prompts in chunks alongside the others' decode steps, and
// reports each request as it finishes.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"

namespace zinf {

enum class Refill : uint8_t {
  kContinuous,  // a finished sequence's slot takes the next request at the next step
  kStatic,      // a new batch starts only when every sequence of the last one has finished
};

struct GeneratorOptions {
  std::vector<TokenId> eos_ids;  // generation ends when one is sampled (unless ignore_eos)
  Refill refill = Refill::kContinuous;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  double prefill_seconds = 0;           // steps that processed prompt tokens
  double decode_seconds = 0;            // steps that only generated
  int64_t prefill_steps_generated = 0;  // tokens sampled in steps that also carried prompt tokens
  int64_t decode_steps = 0;             // steps that only generated
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t admitted = 0;           // requests given a slot
  int64_t admitted_tokens = 0;    // their prompt tokens plus max_new_tokens: the work they may take
  int64_t unused_new_tokens = 0;  // max_new_tokens left unused by requests that stopped early

  // Prompt and new tokens the requests in flight may still take (at most their max_new_tokens).
  int64_t TokensLeftInFlight() const {
    return std::max<int64_t>(0, admitted_tokens - unused_new_tokens - prompt_tokens -
                                    generated_tokens);
  }
};

struct GeneratorCallbacks {
  std::function<std::optional<Request>()> next_request;  // nullopt when there are no more
  std::function<void(const Request&, Completion&&)> on_complete;
  std::function<void(const Request&, const std::string&)> on_error;  // this request only
  std::function<void(const GenerationStats&)> on_step;               // progress, may be empty
};

// Drives one Model; not thread-safe. Model errors propagate; per-request problems (prompt too
// long for the context, token ids outside the vocabulary) go to on_error and the run continues.
class Generator {
 public:
  Generator(Model& model, const Tokenizer* tokenizer, GeneratorOptions options);

  // Returns when every request is done, or early (with in-flight requests unreported) once
  // *interrupted becomes true.
  void Run(const GeneratorCallbacks& callbacks, const std::atomic<bool>* interrupted);

  const GenerationStats& stats() const { return stats_; }

 private:
  struct Sequence {
    Request request;
    Sampler sampler;
    std::vector<TokenId> tokens;  // prompt, then generated
    int num_prompt = 0;
    int num_cached = 0;  // tokens whose keys and values are in the cache
    Completion completion;
  };

  bool Admit(Request&& request, const GeneratorCallbacks& callbacks);
  void BuildStep();
  void ProcessLogits(const GeneratorCallbacks& callbacks);
  bool CheckFinished(Sequence& sequence);
  void Finish(Sequence& sequence, const GeneratorCallbacks& callbacks);

  Model& model_;
  const Tokenizer* tokenizer_;
  GeneratorOptions options_;
  std::vector<std::optional<Sequence>> slots_;
  StepBatch batch_;
  std::vector<int> batch_slots_;  // slot of each logit row of the current step
  std::vector<float> logits_;
  std::vector<float> logprobs_scratch_;
  GenerationStats stats_;
};

}  // namespace zinf
