// Generator: continuous batching over KV-cache slots, with chunked prefill.
#include "engine/generator.h"

#include <algorithm>
#include <chrono>

#include "engine/error.h"
#include "engine/request_limits.h"
#include "engine/sampler.h"

namespace zinf {

namespace {

// Each logprob entry's token text, as it would follow `context` (the tokens before it).
void AddTokenTexts(const Tokenizer& tokenizer, std::span<const TokenId> context,
                   StepLogprobs& step) {
  std::vector<TokenId> ids = {step.chosen.id};
  for (const TokenLogprob& candidate : step.top) ids.push_back(candidate.id);
  std::vector<std::string> texts = DecodeEachContinuation(tokenizer, context, ids);
  step.chosen.token = std::move(texts[0]);
  for (size_t i = 0; i < step.top.size(); ++i) step.top[i].token = std::move(texts[i + 1]);
}

// How many generated tokens a completion stopped by a stop string keeps: the most from the start
// whose text lies wholly before the stop string (at byte `stop_at` of `text`, the continuation's
// text). Then text == detokenize(token_ids) whenever the stop string begins at a token boundary;
// otherwise text also holds the head of the next token, the part before the stop string.
size_t TokensBeforeStop(const Tokenizer& tokenizer, std::span<const TokenId> prompt,
                        std::span<const TokenId> generated, const std::string& text,
                        size_t stop_at) {
  // The last token completed the stop string; walk back until the kept text fits before it
  // (usually a step or two: a stop string spans few tokens).
  for (size_t keep = generated.size(); keep > 0; --keep) {
    const std::string kept = DecodeContinuation(tokenizer, prompt, generated.first(keep));
    if (kept.size() <= stop_at && text.compare(0, kept.size(), kept) == 0) return keep;
  }
  return 0;
}

}  // namespace

Generator::Generator(Model& model, const Tokenizer* tokenizer, GeneratorOptions options)
    : model_(model), tokenizer_(tokenizer), options_(std::move(options)) {
  slots_.resize(model.limits().max_sequences);
  logits_.resize(static_cast<size_t>(model.limits().max_sequences) * model.config().vocab_size);
}

bool Generator::Admit(Request&& request, const GeneratorCallbacks& callbacks) {
  const int context = model_.limits().max_context;
  const int vocab = model_.config().vocab_size;
  std::string problem;
  if (request.prompt_ids.empty()) {
    problem = "the prompt has no tokens";
  } else if (static_cast<int>(request.prompt_ids.size()) >= context) {
    problem = fmt::format("the prompt has {} tokens; the context holds {} (use a shorter prompt "
                          "or a larger --max-context)",
                          request.prompt_ids.size(), context);
  } else {
    for (TokenId id : request.prompt_ids) {
      if (id < 0 || id >= vocab) {
        problem =
            fmt::format("prompt token id {} is outside the vocabulary (0..{})", id, vocab - 1);
        break;
      }
    }
  }
  // The same ranges and words as the CLI's flags and the prompt file's fields.
  if (problem.empty()) problem = RequestSettingsProblem(request);
  if (!problem.empty()) {
    ++stats_.failed;
    callbacks.on_error(request, problem);
    return false;
  }
  for (auto& slot : slots_) {
    if (slot) continue;
    Sequence& sequence = slot.emplace(Sequence{request, Sampler(request.sampling), {}, 0, 0, {}});
    sequence.tokens = std::move(request.prompt_ids);
    sequence.request.prompt_ids.clear();
    sequence.num_prompt = static_cast<int>(sequence.tokens.size());
    sequence.completion.id = sequence.request.id;
    sequence.completion.id_is_number = sequence.request.id_is_number;
    sequence.completion.prompt_tokens = sequence.num_prompt;
    ++stats_.admitted;
    stats_.admitted_tokens += sequence.num_prompt + sequence.request.max_new_tokens;
    return true;
  }
  ZINF_CHECK(false, "no free slot to admit a request");
}

void Generator::BuildStep() {
  batch_.Clear();
  batch_slots_.clear();
  int budget = model_.limits().max_tokens_per_step;
  // Decoding sequences first (one token each), so prompts never starve generation.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (!slots_[s]) continue;
      Sequence& sequence = *slots_[s];
      const int pending = static_cast<int>(sequence.tokens.size()) - sequence.num_cached;
      const bool decoding = sequence.num_cached >= sequence.num_prompt;
      if ((pass == 0) != decoding || pending <= 0 || budget <= 0) continue;
      const int count = std::min(pending, budget);
      const bool completes = count == pending;
      batch_.AddChunk(static_cast<int>(s), sequence.num_cached,
                      std::span(sequence.tokens).subspan(sequence.num_cached, count), completes);
      if (completes) batch_slots_.push_back(static_cast<int>(s));
      sequence.num_cached += count;
      budget -= count;
    }
  }
}

void Generator::Run(const GeneratorCallbacks& callbacks, const std::atomic<bool>* interrupted) {
  bool requests_left = true;
  while (true) {
    if (interrupted != nullptr && interrupted->load()) return;
    const bool batch_running = std::any_of(slots_.begin(), slots_.end(),
                                           [](const auto& slot) { return slot.has_value(); });
    const bool may_refill = options_.refill == Refill::kContinuous || !batch_running;
    for (auto& slot : slots_) {
      if (!may_refill) break;
      while (!slot && requests_left) {
        std::optional<Request> request = callbacks.next_request();
        if (!request) {
          requests_left = false;
          break;
        }
        Admit(std::move(*request), callbacks);
      }
    }
    BuildStep();
    if (batch_.tokens.empty()) return;  // nothing in flight and nothing left

    int64_t prompt_tokens = 0;
    for (const SequenceChunk& chunk : batch_.chunks) {
      if (chunk.start_position < slots_[chunk.kv_slot]->num_prompt)
        prompt_tokens += chunk.num_tokens;
    }
    const auto start = std::chrono::steady_clock::now();
    const int64_t generated_before = stats_.generated_tokens;
    model_.Forward(batch_, logits_);
    ProcessLogits(callbacks);
    if (prompt_tokens > 0)
      stats_.prefill_steps_generated += stats_.generated_tokens - generated_before;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    (prompt_tokens > 0 ? stats_.prefill_seconds : stats_.decode_seconds) += seconds;
    if (prompt_tokens == 0) ++stats_.decode_steps;
    stats_.prompt_tokens += prompt_tokens;
    ++stats_.steps;
    if (callbacks.on_step) callbacks.on_step(stats_);
  }
}

void Generator::ProcessLogits(const GeneratorCallbacks& callbacks) {
  const int vocab = model_.config().vocab_size;
  for (size_t row = 0; row < batch_slots_.size(); ++row) {
    Sequence& sequence = *slots_[batch_slots_[row]];
    const std::span<const float> logits(logits_.data() + row * vocab, vocab);
    const TokenId token = sequence.sampler.Sample(logits, sequence.tokens);
    if (sequence.request.logprobs >= 0) {
      LogSoftmax(logits, logprobs_scratch_);
      StepLogprobs step;
      step.chosen = {token, logprobs_scratch_[token]};
      step.top = TopLogprobs(logprobs_scratch_, sequence.request.logprobs);
      if (tokenizer_ != nullptr) AddTokenTexts(*tokenizer_, sequence.tokens, step);
      sequence.completion.logprobs.push_back(std::move(step));
    }
    sequence.tokens.push_back(token);
    sequence.completion.token_ids.push_back(token);
    ++stats_.generated_tokens;
    if (CheckFinished(sequence)) Finish(sequence, callbacks);
  }
}

bool Generator::CheckFinished(Sequence& sequence) {
  Completion& completion = sequence.completion;
  const TokenId token = completion.token_ids.back();
  const bool is_eos =
      std::find(options_.eos_ids.begin(), options_.eos_ids.end(), token) != options_.eos_ids.end();
  if (is_eos && !sequence.request.ignore_eos) {
    completion.finish_reason = FinishReason::kEos;
    return true;
  }
  if (!sequence.request.stop.empty() && tokenizer_ != nullptr) {
    const std::string text = DecodeContinuation(
        *tokenizer_, std::span(sequence.tokens).first(sequence.num_prompt), completion.token_ids);
    size_t earliest = std::string::npos;
    for (const std::string& stop : sequence.request.stop) {
      if (!stop.empty()) earliest = std::min(earliest, text.find(stop));
    }
    if (earliest != std::string::npos) {
      completion.text = text.substr(0, earliest);
      completion.finish_reason = FinishReason::kStop;
      // token_ids, completion_tokens and logprobs hold no token of the stop string either
      // (docs/cli.md, "Stop strings").
      const size_t keep =
          TokensBeforeStop(*tokenizer_, std::span(sequence.tokens).first(sequence.num_prompt),
                           completion.token_ids, text, earliest);
      completion.token_ids.resize(keep);
      if (completion.logprobs.size() > keep) completion.logprobs.resize(keep);
      return true;
    }
  }
  const bool context_full = static_cast<int>(sequence.tokens.size()) >= model_.limits().max_context;
  if (static_cast<int>(completion.token_ids.size()) >= sequence.request.max_new_tokens ||
      context_full) {
    completion.finish_reason = FinishReason::kLength;
    return true;
  }
  return false;
}

void Generator::Finish(Sequence& sequence, const GeneratorCallbacks& callbacks) {
  Completion& completion = sequence.completion;
  if (completion.finish_reason != FinishReason::kStop && tokenizer_ != nullptr) {
    std::span<const TokenId> generated = completion.token_ids;
    if (completion.finish_reason == FinishReason::kEos)
      generated = generated.first(generated.size() - 1);
    completion.text = DecodeContinuation(
        *tokenizer_, std::span(sequence.tokens).first(sequence.num_prompt), generated);
  }
  ++stats_.completed;
  stats_.unused_new_tokens += std::max<int64_t>(
      0, sequence.request.max_new_tokens - static_cast<int64_t>(completion.token_ids.size()));
  callbacks.on_complete(sequence.request, std::move(completion));
  for (auto& candidate : slots_) {
    if (candidate && &*candidate == &sequence) {
      candidate.reset();
      break;
    }
  }
}

}  // namespace zinf
