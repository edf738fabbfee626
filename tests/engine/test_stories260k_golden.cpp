// stories260K against golden outputs of llama.cpp and a float64 numpy reference.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "tests/engine/harness.h"
#include "tests/support/golden_files.h"

namespace zinf::testing {

namespace {

std::vector<double> LogSoftmax(const std::vector<double>& logits) {
  double max_logit = -1e300;
  for (double v : logits) max_logit = std::max(max_logit, v);
  double sum = 0;
  for (double v : logits) sum += std::exp(v - max_logit);
  std::vector<double> out;
  for (double v : logits) out.push_back(v - max_logit - std::log(sum));
  return out;
}

}  // namespace

TEST_CASE("stories260K: 32 greedy tokens equal llama.cpp's for every golden prompt") {
  const std::vector<nlohmann::json> golden = ReadJsonLines(GoldenPath("greedy.jsonl"));
  REQUIRE(golden.size() == 8);
  std::vector<Request> requests;
  for (size_t i = 0; i < golden.size(); ++i) {
    requests.push_back(GreedyRequest(std::to_string(i), golden[i]["prompt_ids"], 32));
  }
  for (int batch_size : {1, 8}) {
    EngineSettings settings;
    settings.batch_size = batch_size;
    const std::vector<Completion> completions = Generate(Stories260K(), requests, settings);
    for (size_t i = 0; i < golden.size(); ++i) {
      INFO("prompt " << golden[i]["prompt"] << ", batch " << batch_size);
      CHECK(completions[i].token_ids == golden[i]["greedy_ids"].get<std::vector<TokenId>>());
    }
  }
  // The text is the pieces' concatenation, as llama.cpp printed it.
  const Completion first = Generate(Stories260K(), {requests[0]}, {}).front();
  CHECK(first.text == golden[0]["greedy_text"].get<std::string>());
}

TEST_CASE("stories260K: 400 greedy tokens from BOS alone (long-context KV cache)") {
  std::ifstream file(GoldenPath("greedy_from_bos_400.json"));
  const nlohmann::json golden = nlohmann::json::parse(file);
  const Request request = GreedyRequest("bos", golden["prompt_ids"], 400);
  const Completion completion = Generate(Stories260K(), {request}, {}).front();
  CHECK(completion.token_ids == golden["greedy_ids"].get<std::vector<TokenId>>());
}

TEST_CASE("stories260K: first-step log-probabilities within 1e-4 of the float64 reference") {
  for (const nlohmann::json& golden : ReadJsonLines(GoldenPath("first_step_logits.jsonl"))) {
    INFO("prompt " << golden["prompt"]);
    const std::vector<float> logits = LastLogits(Stories260K(), golden["prompt_ids"]);
    const std::vector<double> ours = LogSoftmax(std::vector<double>(logits.begin(), logits.end()));
    const std::vector<double> reference = LogSoftmax(golden["numpy_f64_reference_logits"]);
    REQUIRE(ours.size() == reference.size());
    double max_error = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      max_error = std::max(max_error, std::abs(ours[i] - reference[i]));
    }
    CHECK(max_error < 1e-4);
  }
}

TEST_CASE("stories260K: tokenization equals SentencePiece's ids") {
  for (const nlohmann::json& golden : ReadJsonLines(GoldenPath("tokenize.jsonl"))) {
    INFO("prompt " << golden.dump());
    const std::string text = golden["prompt"];
    CHECK(Stories260K().tokenizer->Encode(text, true) ==
          golden["sentencepiece_ids"].get<std::vector<TokenId>>());
  }
}

}  // namespace zinf::testing
