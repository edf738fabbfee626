// The generator's step statistics that zinf bench turns into rates and bounds: which steps count
// as decode steps, and how many sequences they carried.
#include <catch2/catch.hpp>

#include "tests/engine/harness.h"

namespace zinf::testing {

namespace {

// 8 prompts of 16 tokens, 8 tokens generated each, in one batch of 8.
GenerationStats RunBatch(int step_tokens) {
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> prompt(16);
    for (int j = 0; j < 16; ++j) prompt[j] = static_cast<TokenId>(1 + (i * 16 + j) % 400);
    Request request = GreedyRequest(std::to_string(i), prompt, 8);
    request.ignore_eos = true;
    requests.push_back(request);
  }
  EngineSettings settings;
  settings.batch_size = 8;
  settings.step_tokens = step_tokens;
  return GenerateWithStats(Stories260K(), requests, settings).generation;
}

}  // namespace

TEST_CASE("generation stats: decode steps and the sequences each carried") {
  SECTION("every prompt prefilled in one step: the whole batch decodes together") {
    const GenerationStats stats = RunBatch(128);
    CHECK(stats.generated_tokens == 64);
    CHECK(stats.prefill_steps_generated == 8);  // each sequence's first token
    CHECK(stats.decode_steps == 7);
    CHECK(stats.generated_tokens - stats.prefill_steps_generated == 7 * 8);
  }
  SECTION("prefill spread over steps: sequences start and finish decoding on different steps") {
    const GenerationStats stats = RunBatch(32);  // two prompts a step
    CHECK(stats.generated_tokens == 64);
    REQUIRE(stats.decode_steps > 0);
    // The first sequences decode alongside the later prompts' prefill (steps counted as prefill),
    // and the last decode steps carry only the sequences that started last.
    CHECK(stats.generated_tokens - stats.prefill_steps_generated < 7 * 8);
    const double decode_batch =
        static_cast<double>(stats.generated_tokens - stats.prefill_steps_generated) /
        static_cast<double>(stats.decode_steps);
    CHECK(decode_batch < 8.0);
  }
}

}  // namespace zinf::testing
