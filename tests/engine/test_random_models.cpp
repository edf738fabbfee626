// Small random checkpoints of each supported layout, converted and run by the engine, checked
// against an independent float64 forward pass written directly over the Hugging Face tensors.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/engine/harness.h"
#include "tests/support/random_checkpoint.h"
#include "tests/support/reference_forward.h"

namespace zinf::testing {

namespace {

void CheckAgainstReference(const RandomModelSpec& spec, const std::string& name) {
  const std::string hf_dir = MakeTempDir(name + "-hf");
  WriteRandomHfCheckpoint(hf_dir, spec);
  const LoadedModel model = ConvertAndLoad(hf_dir, name + "-zinf");

  // Logits at the end of a prompt.
  const std::vector<TokenId> prompt = {1, 403, 407, 261, 378, 17, 250, 499, 3};
  const std::vector<float> logits = LastLogits(model, prompt);
  const std::vector<double> reference = ReferenceLastLogits(hf_dir, {prompt.begin(), prompt.end()});
  REQUIRE(logits.size() == reference.size());
  double max_error = 0, max_magnitude = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    max_error = std::max(max_error, std::abs(logits[i] - reference[i]));
    max_magnitude = std::max(max_magnitude, std::abs(reference[i]));
  }
  INFO(name << ": max |logit error| " << max_error << ", max |logit| " << max_magnitude);
  CHECK(max_magnitude > 0.1);  // the random model is not degenerate
  const double tolerance = spec.dtype == DType::kF32 ? 1e-4 : 1e-3;
  CHECK(max_error < tolerance * std::max(1.0, max_magnitude));

  // Greedy generation through the whole engine: each step's token is the reference's argmax
  // (unless the reference's top two are within rounding of each other).
  const Completion completion = Generate(model, {GreedyRequest("0", prompt, 6)}, {}).front();
  std::vector<int> context(prompt.begin(), prompt.end());
  for (TokenId token : completion.token_ids) {
    const std::vector<double> step = ReferenceLastLogits(hf_dir, context);
    const auto best = std::max_element(step.begin(), step.end()) - step.begin();
    if (best != token) CHECK(std::abs(step[best] - step[token]) < 1e-4);
    context.push_back(token);
  }
}

}  // namespace

TEST_CASE("random llama with q/k/v/o biases matches the float64 reference") {
  CheckAgainstReference(LlamaWithBiasSpec(), "llama-bias");
}

TEST_CASE("random qwen2 (q/k/v biases) matches the float64 reference") {
  CheckAgainstReference(Qwen2Spec(), "qwen2");
}

TEST_CASE("random qwen3 (q/k norm, tied embeddings) matches the float64 reference") {
  CheckAgainstReference(Qwen3Spec(), "qwen3");
}

TEST_CASE("random qwen2_moe (shared expert, top-2 unnormalised, a dense layer) matches the "
          "float64 reference") {
  CheckAgainstReference(Qwen2MoeSpec(), "qwen2-moe");
}

TEST_CASE("random mixtral and qwen3_moe match the float64 reference") {
  RandomModelSpec mixtral;
  mixtral.model_type = "mixtral";
  mixtral.num_experts = 4;
  mixtral.experts_per_token = 2;
  CheckAgainstReference(mixtral, "mixtral");
  RandomModelSpec qwen3 = Qwen3Spec();
  qwen3.model_type = "qwen3_moe";
  qwen3.num_layers = 3;
  qwen3.num_experts = 6;
  qwen3.experts_per_token = 3;
  qwen3.norm_topk_prob = true;
  qwen3.mlp_only_layers = {0};
  CheckAgainstReference(qwen3, "qwen3-moe");
}

TEST_CASE("random OPT (LayerNorm, learned positions, projections) matches the float64 reference") {
  CheckAgainstReference(OptSpec(), "opt");
}

TEST_CASE("bf16 and f16 checkpoints compute close to the reference") {
  RandomModelSpec spec = LlamaWithBiasSpec();
  spec.dtype = DType::kBF16;
  CheckAgainstReference(spec, "llama-bf16");
  spec.dtype = DType::kF16;
  CheckAgainstReference(spec, "llama-f16");
}

}  // namespace zinf::testing
