// Outputs must not depend on how weights reach compute or on the batch a request lands in.
#include <catch2/catch.hpp>

#include "engine/micro_batch.h"
#include "engine/model.h"
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

TEST_CASE("outputs are identical whatever the micro-batch size of the block schedule") {
  const std::vector<Request> requests = MixedRequests();
  EngineSettings whole_steps;
  whole_steps.batch_size = 8;
  const std::vector<Completion> expected = Generate(Stories260K(), requests, whole_steps);
  // 1 row per micro-batch; 7 splits prompts mid-chunk; 64 takes several short sequences at once.
  for (int micro : {1, 7, 64}) {
    INFO("micro-batches of " << micro << " rows");
    EngineSettings settings;
    settings.batch_size = 8;
    settings.micro_batch_tokens = micro;
    settings.placement = io::WeightPlacement::kStreamed;
    RequireSame(expected, Generate(Stories260K(), requests, settings));
  }
}

TEST_CASE("micro-batches: chunks split at row boundaries keep slots, positions and offsets") {
  StepBatch batch;
  const std::vector<TokenId> prompt(10, 5), decode(1, 7);
  batch.AddChunk(2, 0, prompt, true);                      // rows 0..9, positions 0..9
  batch.AddChunk(0, 41, decode, true);                     // row 10, position 41
  batch.AddChunk(1, 3, std::vector<TokenId>(4, 9), true);  // rows 11..14, positions 3..6
  std::vector<MicroBatch> micro;
  SplitIntoMicroBatches(batch, 6, micro);
  REQUIRE(micro.size() == 3);
  CHECK(micro[0].row_begin == 0);
  CHECK(micro[0].num_rows == 6);
  REQUIRE(micro[0].chunks.size() == 1);
  CHECK(micro[0].chunks[0].num_tokens == 6);
  REQUIRE(micro[1].chunks.size() == 3);  // the prompt's rest, the decode row, one of slot 1's
  CHECK(micro[1].chunks[0].kv_slot == 2);
  CHECK(micro[1].chunks[0].start_position == 6);
  CHECK(micro[1].chunks[0].num_tokens == 4);
  CHECK(micro[1].chunks[0].token_offset == 0);
  CHECK(micro[1].chunks[1].kv_slot == 0);
  CHECK(micro[1].chunks[1].start_position == 41);
  CHECK(micro[1].chunks[1].token_offset == 4);
  CHECK(micro[1].chunks[2].start_position == 3);
  CHECK(micro[1].chunks[2].num_tokens == 1);
  CHECK(micro[1].positions[5] == 3);
  REQUIRE(micro[2].chunks.size() == 1);
  CHECK(micro[2].num_rows == 3);
  CHECK(micro[2].chunks[0].start_position == 4);
  CHECK(micro[2].chunks[0].num_tokens == 3);
  CHECK(micro[2].tokens[0] == 9);
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
