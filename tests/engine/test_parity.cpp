// Outputs must not depend on how weights reach compute or on the batch a request lands in.
#include <catch2/catch.hpp>

#include "tests/engine/harness.h"

namespace zinf::testing {

namespace {

// Prompts of mixed lengths (1 to ~60 tokens) and mixed generation lengths, so sequences finish at
// different steps and waiting requests take their slots.
std::vector<Request> MixedRequests() {
  const std::vector<std::string> prompts = {
      "Once upon a time",
      "Lily and Ben went to the park. They saw a big dog and a small cat. The dog was brown.",
      "",
      "The sun",
      "One day, a clever fox found a shiny key under the old oak tree. He picked it up and ran "
      "to show his friend the rabbit, who lived by the river.",
      "Tom was sad.",
      "Mom said",
      "There was a little boat"};
  const Tokenizer& tokenizer = *Stories260K().tokenizer;
  std::vector<Request> requests;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request request = GreedyRequest(std::to_string(i), tokenizer.Encode(prompts[i], true),
                                    8 + static_cast<int>(i * 7) % 40);
    request.ignore_eos = false;
    requests.push_back(request);
  }
  return requests;
}

void RequireSame(const std::vector<Completion>& expected, const std::vector<Completion>& actual) {
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("request " << expected[i].id);
    CHECK(actual[i].token_ids == expected[i].token_ids);
    CHECK(actual[i].text == expected[i].text);
    CHECK(actual[i].finish_reason == expected[i].finish_reason);
  }
}

}  // namespace

TEST_CASE("outputs are identical for resident and streamed weights at every prefetch depth") {
  const std::vector<Request> requests = MixedRequests();
  EngineSettings resident;
  const std::vector<Completion> expected = Generate(Stories260K(), requests, resident);
  for (int depth : {0, 1, 2}) {
    INFO("streamed, prefetch depth " << depth);
    EngineSettings streamed;
    streamed.placement = io::WeightPlacement::kStreamed;
    streamed.prefetch_depth = depth;
    RequireSame(expected, Generate(Stories260K(), requests, streamed));
  }
}

TEST_CASE("outputs are identical for batch sizes 1, 3 and 8 and small step budgets") {
  const std::vector<Request> requests = MixedRequests();
  EngineSettings one;
  one.batch_size = 1;
  const std::vector<Completion> expected = Generate(Stories260K(), requests, one);
  for (int batch_size : {3, 8}) {
    for (int step_tokens : {512, 16}) {
      INFO("batch " << batch_size << ", step tokens " << step_tokens);
      EngineSettings settings;
      settings.batch_size = batch_size;
      settings.step_tokens = step_tokens;
      settings.placement = io::WeightPlacement::kStreamed;
      RequireSame(expected, Generate(Stories260K(), requests, settings));
    }
  }
  // Static batches (no refill until the whole batch is done) change only the schedule.
  EngineSettings static_batches;
  static_batches.batch_size = 3;
  static_batches.refill = Refill::kStatic;
  RequireSame(expected, Generate(Stories260K(), requests, static_batches));
  // And with one thread instead of two.
  EngineSettings single_thread;
  single_thread.threads = 1;
  single_thread.batch_size = 3;
  RequireSame(expected, Generate(Stories260K(), requests, single_thread));
}

TEST_CASE("sampled generation is reproducible whatever the batch") {
  std::vector<Request> requests = MixedRequests();
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling.temperature = 0.9;
    requests[i].sampling.top_p = 0.95;
    requests[i].sampling.seed = 1000 + i;
  }
  EngineSettings one;
  one.batch_size = 1;
  const std::vector<Completion> expected = Generate(Stories260K(), requests, one);
  EngineSettings eight;
  eight.batch_size = 8;
  RequireSame(expected, Generate(Stories260K(), requests, eight));
  // A different seed gives a different story for at least one request.
  requests[1].sampling.seed = 7;
  const std::vector<Completion> reseeded = Generate(Stories260K(), requests, eight);
  CHECK(reseeded[1].token_ids != expected[1].token_ids);
}

TEST_CASE("a prompt too long for the context fails alone; the others complete") {
  std::vector<Request> requests = MixedRequests();
  EngineSettings settings;
  settings.max_context = 24;
  const std::vector<Completion> completions = Generate(Stories260K(), requests, settings);
  CHECK(completions[4].text.find("ERROR: the prompt has") == 0);
  CHECK(completions[0].text.find("ERROR") == std::string::npos);
  CHECK_FALSE(completions[0].token_ids.empty());
}

}  // namespace zinf::testing
