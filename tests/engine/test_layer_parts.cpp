// A layer read in two parts (engine/layer_parts.h): where the parts lie, that a file without
// tensor checksums stays whole, that outputs do not change, and what the planner gains.
#include "engine/layer_parts.h"

#include <catch2/catch.hpp>

#include "engine/planner/planner.h"
#include "engine/tensor_names.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"
#include "tests/engine/harness.h"
#include "tests/support/shipped_config.h"

namespace zinf::testing {

namespace {

namespace tn = tensor_names;

// The bundled model's file as older converters left it: one checksum per extent only.
LoadedModel WholeLayers(const LoadedModel& parts) {
  LoadedModel whole;
  whole.checkpoint = formats::LoadCheckpoint(parts.checkpoint.directory);
  whole.tokenizer = formats::LoadCheckpointTokenizer(whole.checkpoint);
  return whole;
}

}  // namespace

TEST_CASE("layer parts: each layer splits at its MLP's norm into two reads of the same bytes") {
  const Checkpoint file = formats::LoadCheckpoint(Stories260K().checkpoint.directory);
  const std::vector<ExtentInfo> parts = SplitLayers(file.extents);
  const int layers = file.config.num_layers;
  REQUIRE(parts.size() == file.extents.size() + static_cast<size_t>(layers));
  size_t p = 0;
  for (const ExtentInfo& extent : file.extents) {
    INFO(extent.name);
    if (extent.kind != ExtentKind::kLayer) {
      CHECK(parts[p].part == LayerPart::kWhole);
      CHECK(parts[p++].name == extent.name);
      continue;
    }
    const ExtentInfo& attention = parts[p++];
    const ExtentInfo& mlp = parts[p++];
    CHECK(attention.name == extent.name + ".attention");
    CHECK(mlp.name == extent.name + ".mlp");
    CHECK((attention.part == LayerPart::kAttention && mlp.part == LayerPart::kMlp));
    CHECK(attention.layer == extent.layer);
    CHECK(mlp.layer == extent.layer);
    CHECK(attention.tensors.front().name == tn::kAttnNorm);
    CHECK(mlp.tensors.front().name == tn::kFfnNorm);
    CHECK(attention.tensors.size() + mlp.tensors.size() == extent.tensors.size());
    // Direct-I/O reads: aligned starts and lengths, inside the extent, sharing at most a page.
    for (const ExtentInfo* part : {&attention, &mlp}) {
      CHECK(part->offset % kExtentAlignment == 0);
      CHECK(part->padded_bytes % kExtentAlignment == 0);
      CHECK(part->size_bytes <= part->padded_bytes);
      CHECK(part->offset + part->padded_bytes <= extent.offset + extent.padded_bytes);
    }
    CHECK(attention.offset == extent.offset);
    CHECK(mlp.offset + mlp.padded_bytes == extent.offset + extent.padded_bytes);
    CHECK(attention.offset + attention.padded_bytes <= mlp.offset + kExtentAlignment);
    // Every tensor is where the file has it, with the converter's own checksum.
    for (const TensorInfo& tensor : extent.tensors) {
      const ExtentInfo& part = attention.find(tensor.name) != nullptr ? attention : mlp;
      const TensorInfo* moved = part.find(tensor.name);
      REQUIRE(moved != nullptr);
      CHECK(part.offset + moved->offset_in_extent == extent.offset + tensor.offset_in_extent);
      CHECK(moved->offset_in_extent + moved->size_bytes <= part.size_bytes);
      REQUIRE(tensor.xxh3.has_value());
      CHECK(moved->xxh3 == tensor.xxh3);
    }
  }
  // The split is only ever of a whole extent.
  CHECK(SplitLayers(parts).size() == parts.size());
}

TEST_CASE("layer parts: a layer without its tensors' checksums, or out of order, stays whole") {
  const Checkpoint file = formats::LoadCheckpoint(Stories260K().checkpoint.directory);
  std::vector<ExtentInfo> extents = file.extents;
  ExtentInfo& layer0 = extents[1];
  REQUIRE(layer0.kind == ExtentKind::kLayer);
  layer0.tensors.back().xxh3.reset();  // as converted before tensors had checksums
  ExtentInfo& layer1 = extents[2];
  std::swap(layer1.tensors.front().name, layer1.tensors.back().name);  // attn_norm after down
  const std::vector<ExtentInfo> parts = SplitLayers(extents);
  REQUIRE(parts.size() == extents.size() + static_cast<size_t>(file.config.num_layers) - 2);
  CHECK(parts[1].name == "layer.0");
  CHECK(parts[1].part == LayerPart::kWhole);
  CHECK(parts[2].name == "layer.1");
  CHECK(parts[3].name == "layer.2.attention");
}

TEST_CASE("layer parts: outputs are bit-identical to whole layers, streamed or not") {
  const Tokenizer& tokenizer = *Stories260K().tokenizer;
  const std::vector<TokenId> prompt = tokenizer.Encode("Lily and Ben went to the park.", true);
  std::vector<Request> requests;
  for (const char* text : {"Once upon a time", "The sun", "Tom was sad. He"}) {
    requests.push_back(GreedyRequest(text, tokenizer.Encode(text, true), 12));
  }
  for (const DType dtype : {DType::kF32, DType::kI8, DType::kQ4}) {
    INFO(DTypeName(dtype));
    const LoadedModel converted = dtype == DType::kF32 ? LoadedModel{} : Stories260KAs(dtype);
    const LoadedModel& parts = dtype == DType::kF32 ? Stories260K() : converted;
    const LoadedModel whole = WholeLayers(parts);
    REQUIRE(parts.checkpoint.extents.size() > whole.checkpoint.extents.size());
    CHECK(LastLogits(parts, prompt) == LastLogits(whole, prompt));
    // Streamed, and in micro-batches: each part runs every micro-batch before the next part.
    EngineSettings settings;
    settings.placement = io::WeightPlacement::kStreamed;
    settings.batch_size = 3;
    settings.micro_batch_tokens = 5;
    const std::vector<Completion> expected = Generate(whole, requests, settings);
    const std::vector<Completion> actual = Generate(parts, requests, settings);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i].token_ids == expected[i].token_ids);
  }
}

TEST_CASE("layer parts: a streamed Llama-2-13B in f16 keeps more resident under 16 GiB") {
  Checkpoint whole = ShippedConfigCheckpoint("llama-2-13b", DType::kF16);
  for (ExtentInfo& extent : whole.extents) {
    for (TensorInfo& tensor : extent.tensors) tensor.xxh3 = 0;
  }
  const Checkpoint parts = WithLayerParts(whole);
  for (ExtentInfo& extent : whole.extents) {
    for (TensorInfo& tensor : extent.tensors) tensor.xxh3.reset();
  }
  auto plan = [](const Checkpoint& checkpoint) {
    PlannerInputs inputs;
    inputs.checkpoint = &checkpoint;
    inputs.cpu_mem_bytes = uint64_t{16} << 30;
    inputs.workload.batch_size = 8;
    inputs.workload.max_context = 16;
    return MakePlan(inputs);
  };
  const Plan with_parts = plan(parts), with_layers = plan(whole);
  INFO(with_parts.Summary() << "\n" << with_layers.Summary());
  // Staging as large as a 13824-wide MLP (3 × 5120 × 13824 f16 values), not a whole layer.
  CHECK(with_parts.placement.staging_buffer_bytes <
        with_layers.placement.staging_buffer_bytes * 7 / 10);
  CHECK(with_parts.resident_bytes > with_layers.resident_bytes + (uint64_t{300} << 20));
  CHECK(with_parts.streamed_bytes_per_step < with_layers.streamed_bytes_per_step);
}

}  // namespace zinf::testing
