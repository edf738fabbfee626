// Expert-granular streaming: a step of a mixture-of-experts model asks the weight source for its
// layers' dense parts and only the experts its tokens were routed to, and Model's ExpertTraffic
// says so. Checked with a weight source that counts what is acquired.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "cpu/cpu_backend.h"
#include "engine/layer_parts.h"
#include "engine/model.h"
#include "io/weight_source_factory.h"
#include "model_formats/synthetic_checkpoint.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

// Passes everything to a real source and records which extents the forward pass acquired.
class CountingSource final : public WeightSource {
 public:
  explicit CountingSource(WeightSource& inner) : inner_(inner) {}
  void Prefetch(int extent_idx) override { inner_.Prefetch(extent_idx); }
  ExtentView Acquire(int extent_idx) override {
    acquired.push_back(extent_idx);
    return inner_.Acquire(extent_idx);
  }
  void Release(int extent_idx, CopyFence fence) override {
    inner_.Release(extent_idx, std::move(fence));
  }
  int prefetch_depth() const override { return inner_.prefetch_depth(); }
  WeightIoStats stats() const override { return inner_.stats(); }

  std::vector<int> acquired;

 private:
  WeightSource& inner_;
};

constexpr const char* kConfig = R"({
  "model_type": "qwen3_moe", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "max_position_embeddings": 128, "num_experts": 16, "num_experts_per_tok": 2,
  "moe_intermediate_size": 48, "norm_topk_prob": true, "mlp_only_layers": [2],
  "bos_token_id": 1, "eos_token_id": 2
})";

Checkpoint SyntheticMoe() {
  const std::string dir = MakeTempDir("moe-streaming");
  { std::ofstream(dir + "/config.json") << kConfig; }
  formats::SyntheticOptions options;
  options.dtype = DType::kF32;
  options.float_dtype = DType::kF32;
  formats::WriteSyntheticCheckpoint(dir + "/config.json", dir + "/zinf", options);
  return WithLayerParts(formats::LoadCheckpoint(dir + "/zinf"));  // streamed as the commands do
}

}  // namespace

TEST_CASE("a streamed MoE step reads the dense parts and only the routed experts") {
  const Checkpoint checkpoint = SyntheticMoe();
  const ModelConfig& c = checkpoint.config;
  REQUIRE(c.is_moe());
  Placement placement;
  placement.tiers.assign(checkpoint.extents.size(), Tier::kNvme);
  // No read-ahead, so each step's reads fall inside its own Forward (with prefetching, the next
  // step's first extents are read at the end of this one, whenever a buffer frees up).
  placement.prefetch_depth = 0;
  placement.staging_buffers = 1;
  placement.staging_buffer_bytes = checkpoint.max_extent_padded_bytes();
  const std::unique_ptr<WeightSource> file = io::OpenWeightSource(checkpoint, placement, {});
  CountingSource counting(*file);
  cpu::CpuBackend backend(2);
  ModelLimits limits;
  limits.max_sequences = 1;
  limits.max_tokens_per_step = 8;
  limits.max_context = 64;
  Model model(checkpoint, backend, counting, limits, placement);

  uint64_t dense_bytes = 0, expert_bytes = 0;
  int sparse_layers = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind == ExtentKind::kExpert) {
      expert_bytes = extent.padded_bytes;  // all experts are the same shape
    } else {
      dense_bytes += extent.padded_bytes;
    }
  }
  for (int layer = 0; layer < c.num_layers; ++layer) sparse_layers += c.IsMoeLayer(layer);
  REQUIRE(sparse_layers == 3);

  std::vector<float> logits(c.vocab_size);
  StepBatch batch;
  const std::vector<TokenId> prompt = {1, 403, 407, 261, 378};
  batch.AddChunk(0, 0, prompt, true);
  model.Forward(batch, logits);
  TokenId next = 7;
  for (int position = static_cast<int>(prompt.size()); position < 9; ++position) {
    const ExpertTraffic before_traffic = model.expert_traffic();
    const uint64_t before_bytes = counting.stats().bytes_read;
    counting.acquired.clear();
    batch.Clear();
    batch.AddChunk(0, position, std::span<const TokenId>(&next, 1), true);
    model.Forward(batch, logits);
    next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());

    // One token: exactly k distinct experts per sparse layer, each read once, besides every
    // dense extent.
    std::map<int, std::set<int>> experts_by_layer;
    int dense_acquired = 0;
    for (int e : counting.acquired) {
      const ExtentInfo& extent = checkpoint.extents[e];
      if (extent.kind == ExtentKind::kExpert) {
        CHECK(experts_by_layer[extent.layer].insert(extent.expert).second);
      } else {
        ++dense_acquired;
      }
    }
    CHECK(dense_acquired ==
          static_cast<int>(checkpoint.extents.size()) - sparse_layers * c.moe.num_experts);
    CHECK(static_cast<int>(experts_by_layer.size()) == sparse_layers);
    for (const auto& [layer, experts] : experts_by_layer) {
      CHECK(c.IsMoeLayer(layer));
      CHECK(static_cast<int>(experts.size()) == c.moe.experts_per_token);
    }
    // What was read from the file is the dense parts plus the routed experts, no more.
    const uint64_t routed = uint64_t{2} * sparse_layers * expert_bytes;
    CHECK(counting.stats().bytes_read - before_bytes == dense_bytes + routed);
    // And the run's summary figures say the same.
    const ExpertTraffic& after = model.expert_traffic();
    CHECK(after.steps - before_traffic.steps == 1);
    CHECK(after.experts_used - before_traffic.experts_used == uint64_t{2} * sparse_layers);
    CHECK(after.experts_total - before_traffic.experts_total == uint64_t{16} * sparse_layers);
    CHECK(after.bytes_moved - before_traffic.bytes_moved == routed);
    CHECK(after.bytes_dense - before_traffic.bytes_dense ==
          uint64_t{16} * sparse_layers * expert_bytes);
  }
}

}  // namespace zinf::testing
