// Whole models on the CUDA backend: stories260K's golden greedy ids with f32 compute, bf16
// compute agreeing with the CPU's greedy tokens, the random checkpoints of both families, and the
// quantized and int8-KV variants against the CPU backend.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "cuda/cuda_backend.h"
#include "engine/planner/planner.h"
#include "tests/engine/harness.h"
#include "tests/support/golden_files.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

// `streamed_every`: 0 keeps every extent resident; n streams every n-th extent through the slot
// ring (1: all of them). `host_experts`: experts not on the device are computed by the CPU
// (--moe-experts cpu) instead.
BackendFactory Cuda(cuda::ComputeType compute, int streamed_every = 0, int slots = 2,
                    bool kv_offload = false, bool host_experts = false) {
  return [=](const Checkpoint& checkpoint, const ModelLimits& limits, Placement& placement) {
    // The harness's host placement (kDevice: kept in DRAM, kNvme: staged) becomes the GPU's:
    // device-held extents kDevice, the others copied every step from DRAM or from staging.
    placement.backend = BackendKind::kCuda;
    for (size_t e = 0; e < checkpoint.extents.size(); ++e) {
      const bool on_device = streamed_every == 0 || e % streamed_every != 0;
      if (on_device) {
        placement.tiers[e] = Tier::kDevice;
      } else if (placement.tiers[e] == Tier::kDevice) {
        placement.tiers[e] = Tier::kDram;
      }
    }
    // Device-held extents pass through the staging ring once, on their way to the GPU.
    placement.staging_buffers = std::max(placement.prefetch_depth, 1) + 1 + placement.copy_buffers;
    placement.staging_buffer_bytes = checkpoint.max_extent_padded_bytes();
    placement.device_slots = slots;
    placement.host_computes_experts = host_experts;
    cuda::CudaOptions options;
    options.compute = compute;
    options.placement = placement;
    options.kv_offload = kv_offload;
    options.host_threads = 2;
    return cuda::CreateCudaBackend(checkpoint, limits, options);
  };
}

std::vector<nlohmann::json> GoldenGreedy() { return ReadJsonLines(GoldenPath("greedy.jsonl")); }

std::vector<Request> GoldenRequests(int max_new_tokens) {
  std::vector<Request> requests;
  for (const nlohmann::json& golden : GoldenGreedy()) {
    requests.push_back(
        GreedyRequest(std::to_string(requests.size()), golden["prompt_ids"], max_new_tokens));
  }
  return requests;
}

int ArgMax(const std::vector<float>& logits) {
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double MaxRelativeLogitError(const std::vector<float>& actual, const std::vector<float>& expected) {
  double error = 0, magnitude = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!std::isfinite(actual[i])) return INFINITY;
    error = std::max(error, std::abs(static_cast<double>(actual[i]) - expected[i]));
    magnitude = std::max(magnitude, std::abs(static_cast<double>(expected[i])));
  }
  return error / std::max(1.0, magnitude);
}

}  // namespace

TEST_CASE("cuda stories260K with f32 compute: greedy ids equal the golden ids") {
  const std::vector<nlohmann::json> golden = GoldenGreedy();
  const std::vector<Request> requests = GoldenRequests(32);
  for (const int batch_size : {1, 8}) {
    EngineSettings settings;
    settings.batch_size = batch_size;
    settings.make_backend = Cuda(cuda::ComputeType::kF32);
    const std::vector<Completion> completions = Generate(Stories260K(), requests, settings);
    for (size_t i = 0; i < golden.size(); ++i) {
      INFO("prompt " << golden[i]["prompt"] << ", batch " << batch_size);
      CHECK(completions[i].token_ids == golden[i]["greedy_ids"].get<std::vector<TokenId>>());
    }
  }
}

TEST_CASE(
    "cuda stories260K with bf16 compute picks the CPU's greedy token at >= 99% of positions") {
  int total = 0, same = 0;
  for (const Request& request : GoldenRequests(32)) {
    const std::vector<TokenId> reference = Generate(Stories260K(), {request}, {})[0].token_ids;
    std::vector<TokenId> prefix = request.prompt_ids;
    for (const TokenId token : reference) {
      same += ArgMax(LastLogits(Stories260K(), prefix, Cuda(cuda::ComputeType::kBf16))) == token;
      prefix.push_back(token);
      ++total;
    }
  }
  const double agreement = static_cast<double>(same) / total;
  WARN("bf16 compute vs CPU f32: teacher-forced greedy agreement " << agreement << " over " << total
                                                                   << " positions");
  CHECK(agreement >= 0.99);
}

TEST_CASE("cuda: random checkpoints of both families match the CPU backend's logits") {
  struct Case {
    RandomModelSpec spec;
    std::string name;
  };
  RandomModelSpec llama;
  llama.num_heads = 4;
  llama.num_kv_heads = 1;
  const Case cases[] = {{llama, "cuda-llama-gqa"},
                        {LlamaWithBiasSpec(), "cuda-llama-bias"},
                        {Qwen2Spec(), "cuda-qwen2"},
                        {Qwen3Spec(), "cuda-qwen3"},
                        {OptSpec(), "cuda-opt"}};
  const std::vector<TokenId> prompt = {1, 403, 407, 261, 378, 17, 250, 499, 3, 77, 12};
  for (const Case& c : cases) {
    const std::string hf_dir = MakeTempDir(c.name + "-hf");
    WriteRandomHfCheckpoint(hf_dir, c.spec);
    const LoadedModel model = ConvertAndLoad(hf_dir, c.name + "-zinf");
    const std::vector<float> cpu = LastLogits(model, prompt);
    INFO(c.name);
    CHECK(MaxRelativeLogitError(LastLogits(model, prompt, Cuda(cuda::ComputeType::kF32)), cpu) <
          1e-4);
    CHECK(MaxRelativeLogitError(LastLogits(model, prompt, Cuda(cuda::ComputeType::kBf16)), cpu) <
          3e-2);
    // Greedy decoding through the generator, KV cache and refill: the CPU's tokens.
    EngineSettings settings;
    settings.make_backend = Cuda(cuda::ComputeType::kF32);
    const Request request = GreedyRequest("0", prompt, 8);
    CHECK(Generate(model, {request}, settings)[0].token_ids ==
          Generate(model, {request}, {})[0].token_ids);
  }
}

TEST_CASE("cuda: int8 weights under f32 compute pick the CPU's greedy token at every position") {
  // Every op the GPU runs under f32 compute follows the CPU's operation sequence (the int8
  // products, norms, RoPE, SiLU, attention), so even where two candidates are close, the GPU's
  // logits are the CPU's: teacher-forced along the CPU's own tokens, each argmax agrees.
  const LoadedModel int8 = Stories260KAs(DType::kI8);
  int total = 0, same = 0;
  for (const Request& request : GoldenRequests(24)) {
    const std::vector<TokenId> reference = Generate(int8, {request}, {})[0].token_ids;
    std::vector<TokenId> prefix = request.prompt_ids;
    for (const TokenId token : reference) {
      same += ArgMax(LastLogits(int8, prefix, Cuda(cuda::ComputeType::kF32))) == token;
      prefix.push_back(token);
      ++total;
    }
  }
  CHECK(same == total);
}

TEST_CASE("cuda: int4 checkpoints and the int8 KV cache give the CPU's greedy ids") {
  const std::vector<Request> requests = GoldenRequests(24);
  const LoadedModel int4 = Stories260KAs(DType::kQ4, 32);
  struct Case {
    const LoadedModel* model;
    DType kv_dtype;
    const char* name;
  };
  const Case cases[] = {{&int4, DType::kF32, "int4-g32 weights"},
                        {&Stories260K(), DType::kI8, "int8 KV cache"}};
  for (const Case& c : cases) {
    INFO(c.name);
    EngineSettings cpu_settings;
    cpu_settings.kv_dtype = c.kv_dtype;
    EngineSettings gpu_settings = cpu_settings;
    gpu_settings.make_backend = Cuda(cuda::ComputeType::kF32);
    const std::vector<Completion> cpu = Generate(*c.model, requests, cpu_settings);
    const std::vector<Completion> gpu = Generate(*c.model, requests, gpu_settings);
    int same = 0, total = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto diverge = std::mismatch(cpu[i].token_ids.begin(), cpu[i].token_ids.end(),
                                         gpu[i].token_ids.begin(), gpu[i].token_ids.end());
      same += static_cast<int>(diverge.first - cpu[i].token_ids.begin());
      total += static_cast<int>(cpu[i].token_ids.size());
    }
    CHECK(same == total);
  }
}

TEST_CASE("cuda: with the KV cache offloaded, stories260K's greedy ids are still the golden ids") {
  // f32 compute, attention on the CPU over the DRAM cache: the CPU backend's attention, so the
  // golden ids must hold at batch 1 and 8, streamed weights included.
  const std::vector<nlohmann::json> golden = GoldenGreedy();
  const std::vector<Request> requests = GoldenRequests(32);
  for (const int batch_size : {1, 8}) {
    for (const int streamed_every : {0, 1}) {
      EngineSettings settings;
      settings.batch_size = batch_size;
      settings.make_backend = Cuda(cuda::ComputeType::kF32, streamed_every, 2, true);
      const std::vector<Completion> completions = Generate(Stories260K(), requests, settings);
      for (size_t i = 0; i < golden.size(); ++i) {
        INFO("prompt " << golden[i]["prompt"] << ", batch " << batch_size << ", streamed every "
                       << streamed_every);
        CHECK(completions[i].token_ids == golden[i]["greedy_ids"].get<std::vector<TokenId>>());
      }
    }
  }
}

TEST_CASE("cuda: offloaded attention queued as stream callbacks keeps the CPU backend's tokens") {
  // The CPU's attention runs in host callbacks of the compute stream while the host thread queues
  // the layers after it: micro-batches (a layer's callbacks several times per step), small steps
  // (prompts spread over several steps) and an int8 cache must still give the
  // CPU backend's tokens exactly, since each callback is the CPU backend's own code.
  const std::vector<Request> requests = GoldenRequests(24);
  for (const DType kv_dtype : {DType::kF32, DType::kI8}) {
    for (const int micro_batch_tokens : {0, 5}) {
      EngineSettings cpu;
      cpu.kv_dtype = kv_dtype;
      cpu.step_tokens = 16;
      cpu.micro_batch_tokens = micro_batch_tokens;
      EngineSettings gpu = cpu;
      gpu.make_backend = Cuda(cuda::ComputeType::kF32, 1, 3, true);
      gpu.placement = io::WeightPlacement::kStreamed;
      gpu.copy_buffers = kCudaCopyBuffers;
      INFO("KV " << DTypeName(kv_dtype) << ", micro-batches of " << micro_batch_tokens);
      const std::vector<Completion> expected = Generate(Stories260K(), requests, cpu);
      const std::vector<Completion> actual = Generate(Stories260K(), requests, gpu);
      for (size_t i = 0; i < requests.size(); ++i)
        CHECK(actual[i].token_ids == expected[i].token_ids);
    }
  }
}

TEST_CASE("cuda: streaming weights through the slot ring gives the resident placement's tokens") {
  const std::vector<Request> requests = GoldenRequests(24);
  EngineSettings resident;
  resident.batch_size = 8;
  resident.make_backend = Cuda(cuda::ComputeType::kF32);
  const std::vector<Completion> expected = Generate(Stories260K(), requests, resident);
  struct Case {
    int streamed_every, slots;
  };
  for (const Case c : {Case{1, 2}, Case{2, 2}, Case{1, 3}}) {
    INFO("every " << c.streamed_every << " extent(s) streamed, " << c.slots << " slots");
    EngineSettings streamed = resident;
    streamed.make_backend = Cuda(cuda::ComputeType::kF32, c.streamed_every, c.slots);
    streamed.placement = io::WeightPlacement::kStreamed;  // host staging reused every step too
    const std::vector<Completion> actual = Generate(Stories260K(), requests, streamed);
    for (size_t i = 0; i < requests.size(); ++i)
      CHECK(actual[i].token_ids == expected[i].token_ids);
  }
  // bf16 compute streams bf16 and int8 weights; f32 matrices it refuses to stream (converting
  // them every step would cost more than the copy).
  const LoadedModel int8 = Stories260KAs(DType::kI8);
  EngineSettings int8_resident;
  int8_resident.make_backend = Cuda(cuda::ComputeType::kBf16);
  EngineSettings int8_streamed;
  int8_streamed.make_backend = Cuda(cuda::ComputeType::kBf16, 1);
  const std::vector<Completion> a = Generate(int8, requests, int8_resident);
  const std::vector<Completion> b = Generate(int8, requests, int8_streamed);
  for (size_t i = 0; i < requests.size(); ++i) CHECK(a[i].token_ids == b[i].token_ids);
  Placement host_resident;
  host_resident.tiers.assign(Stories260K().checkpoint.extents.size(), Tier::kDevice);
  CHECK_THROWS_WITH(
      Cuda(cuda::ComputeType::kBf16, 1)(Stories260K().checkpoint, ModelLimits{}, host_resident),
      Catch::Contains("--dtype bf16"));
}

}  // namespace zinf::testing

namespace zinf::testing {

TEST_CASE("cuda: random Qwen2-MoE and Mixtral give the CPU's greedy ids, experts resident, "
          "copied every step or computed by the CPU") {
  RandomModelSpec mixtral;
  mixtral.model_type = "mixtral";
  mixtral.num_experts = 4;
  for (const auto& [spec, name] :
       {std::pair{Qwen2MoeSpec(), "cuda-qwen2-moe"}, std::pair{mixtral, "cuda-mixtral"}}) {
    INFO(name);
    const std::string hf_dir = MakeTempDir(std::string(name) + "-hf");
    WriteRandomHfCheckpoint(hf_dir, spec);
    const LoadedModel model = ConvertAndLoad(hf_dir, name);
    std::vector<Request> requests;
    for (int i = 0; i < 4; ++i) {
      requests.push_back(GreedyRequest(std::to_string(i), {1, 403 + i, 407, 261 - i}, 12));
    }
    EngineSettings cpu;
    cpu.batch_size = 4;
    const std::vector<Completion> expected = Generate(model, requests, cpu);
    for (int streamed_every : {0, 1, 3}) {
      for (const bool host_experts : {false, true}) {
        INFO("every " << streamed_every << " extent(s) off the device (0: none); experts there "
                      << (host_experts ? "computed by the CPU" : "copied every step"));
        EngineSettings gpu = cpu;
        gpu.make_backend = Cuda(cuda::ComputeType::kF32, streamed_every, 2, false, host_experts);
        const std::vector<Completion> actual = Generate(model, requests, gpu);
        for (size_t i = 0; i < requests.size(); ++i)
          CHECK(actual[i].token_ids == expected[i].token_ids);
      }
    }
  }
}

}  // namespace zinf::testing
