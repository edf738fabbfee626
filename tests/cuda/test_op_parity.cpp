// Every CUDA backend op against the CPU backend on fresh random inputs, outputs poisoned first.
// Thresholds on ‖gpu − cpu‖ / ‖cpu‖ (METHOD.md's bands): cuBLAS f32 products 1e-5; with f16
// operands 3e-3; with bf16 operands 1.5e-2; the other ops under f32 compute, 0 (the CPU's bits).
#include <catch2/catch.hpp>

#include "engine/rope.h"
#include "tests/cuda/op_fixture.h"

namespace zinf::testing {

namespace {

constexpr double kF32 = 1e-5;
// Under f32 compute every op but a cuBLAS product follows the CPU's operation sequence, so the
// outputs are the CPU's bits: quantized weights then give the CPU's tokens (an activation block's
// int8 rounding turns a last-bit difference into a whole step).
constexpr double kAsCpu = 0.0;
constexpr double kF16 = 3e-3;
constexpr double kBf16 = 1.5e-2;

ModelLimits SmallLimits() {
  ModelLimits limits;
  limits.max_tokens_per_step = 128;
  limits.max_sequences = 4;
  limits.max_context = 128;
  return limits;
}

const char* ComputeName(cuda::ComputeType compute) {
  return compute == cuda::ComputeType::kF32 ? "f32" : "bf16";
}

// The operand type the GPU multiplies a weight of `dtype` in, under `compute`. The CPU's int8
// and int4 kernels also quantise each token's activations to int8 blocks (relative error ~2e-3):
// under f32 compute the GPU does the same (kernels_q8.cu, kernels_q4.cu), under bf16 it keeps
// them in bf16.
double MatMulThreshold(DType dtype, cuda::ComputeType compute) {
  if (dtype == DType::kF16) return kF16;
  if (dtype == DType::kBF16) return kBf16;
  return compute == cuda::ComputeType::kF32 ? kF32 : kBf16;
}

}  // namespace

TEST_CASE("cuda op parity: matmul with bias for every weight dtype and both compute types") {
  struct Case {
    DType dtype;
    int group_size;
  };
  const Case cases[] = {{DType::kF32, 0}, {DType::kF16, 0}, {DType::kBF16, 0},
                        {DType::kI8, 0},  {DType::kQ4, 32}, {DType::kQ4, 64}};
  for (const cuda::ComputeType compute : {cuda::ComputeType::kF32, cuda::ComputeType::kBf16}) {
    for (const Case& c : cases) {
      // 96 outputs × 160 inputs: 160 is not a multiple of 64, so int4-g64 has a partial group.
      OpFixture fixture(OpTestConfig(4, 2, 40), SmallLimits(),
                        {{"w", c.dtype, 96, 160, c.group_size}, {"bias", DType::kF32, 1, 96}},
                        compute, 11);
      for (const int rows : {1, 5, 64}) {
        INFO("weights " << DTypeName(c.dtype) << " g" << c.group_size << ", compute "
                        << ComputeName(compute) << ", " << rows << " rows");
        TensorPair x = fixture.Random(rows, 160);
        TensorPair out = fixture.Poisoned(rows, 96);
        fixture.cpu().MatMul(x.cpu, fixture.CpuWeight("w"), fixture.CpuWeight("bias"), out.cpu);
        fixture.gpu().MatMul(x.gpu, fixture.GpuWeight("w"), fixture.GpuWeight("bias"), out.gpu);
        CHECK(fixture.RelativeError(out) <= MatMulThreshold(c.dtype, compute));
        // Without a bias too.
        TensorPair plain = fixture.Poisoned(rows, 96);
        fixture.cpu().MatMul(x.cpu, fixture.CpuWeight("w"), {}, plain.cpu);
        fixture.gpu().MatMul(x.gpu, fixture.GpuWeight("w"), {}, plain.gpu);
        CHECK(fixture.RelativeError(plain) <= MatMulThreshold(c.dtype, compute));
      }
    }
  }
}

TEST_CASE(
    "cuda op parity: int8 and int4 weights under f32 compute give the CPU's outputs bit for bit") {
  // 172 inputs (stories260K's FFN width): a partial last activation block or group and rows whose
  // length is not a multiple of 4.
  struct Case {
    DType dtype;
    int group_size;
  };
  for (const Case c :
       {Case{DType::kI8, 0}, Case{DType::kQ4, 32}, Case{DType::kQ4, 64}, Case{DType::kQ4, 128}}) {
    OpFixture fixture(OpTestConfig(4, 2, 40), SmallLimits(),
                      {{"w", c.dtype, 96, 172, c.group_size}, {"bias", DType::kF32, 1, 96}},
                      cuda::ComputeType::kF32, 23);
    for (const int rows : {1, 7, 64}) {
      INFO(DTypeName(c.dtype) << " g" << c.group_size << ", " << rows << " rows");
      TensorPair x = fixture.Random(rows, 172, 3.0f);
      TensorPair out = fixture.Poisoned(rows, 96);
      fixture.cpu().MatMul(x.cpu, fixture.CpuWeight("w"), fixture.CpuWeight("bias"), out.cpu);
      fixture.gpu().MatMul(x.gpu, fixture.GpuWeight("w"), fixture.GpuWeight("bias"), out.gpu);
      const std::vector<float> cpu = fixture.Read(fixture.cpu(), out.cpu);
      const std::vector<float> gpu = fixture.Read(fixture.gpu(), out.gpu);
      REQUIRE(cpu.size() == gpu.size());
      size_t differing = 0;
      for (size_t i = 0; i < cpu.size(); ++i) differing += cpu[i] != gpu[i];
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("cuda op parity: RMSNorm and LayerNorm, plain and fused with the residual add") {
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    OpFixture fixture(OpTestConfig(4, 2, 40), SmallLimits(),
                      {{"norm", dtype, 1, 160}, {"norm_bias", dtype, 1, 160}},
                      cuda::ComputeType::kF32, 12);
    const Weight cpu_norm = fixture.CpuWeight("norm"), gpu_norm = fixture.GpuWeight("norm");
    const Weight cpu_bias = fixture.CpuWeight("norm_bias"),
                 gpu_bias = fixture.GpuWeight("norm_bias");
    INFO("norm weights " << DTypeName(dtype));
    {
      TensorPair x = fixture.Random(7, 160, 3.0f);
      TensorPair out = fixture.Poisoned(7, 160);
      fixture.cpu().RmsNorm(x.cpu, cpu_norm, 1e-5f, out.cpu);
      fixture.gpu().RmsNorm(x.gpu, gpu_norm, 1e-5f, out.gpu);
      CHECK(fixture.RelativeError(out) <= kAsCpu);
    }
    {
      // In place, as Qwen3's per-head q/k norm runs: [rows × heads, head_dim].
      OpFixture heads(OpTestConfig(4, 2, 40), SmallLimits(), {{"qn", dtype, 1, 40}},
                      cuda::ComputeType::kF32, 13);
      TensorPair h = heads.Random(28, 40);
      heads.cpu().RmsNorm(h.cpu, heads.CpuWeight("qn"), 1e-6f, h.cpu);
      heads.gpu().RmsNorm(h.gpu, heads.GpuWeight("qn"), 1e-6f, h.gpu);
      CHECK(heads.RelativeError(h) <= kAsCpu);
    }
    {
      TensorPair x = fixture.Random(7, 160, 2.0f);
      TensorPair out = fixture.Poisoned(7, 160);
      fixture.cpu().LayerNorm(x.cpu, cpu_norm, cpu_bias, 1e-5f, out.cpu);
      fixture.gpu().LayerNorm(x.gpu, gpu_norm, gpu_bias, 1e-5f, out.gpu);
      CHECK(fixture.RelativeError(out) <= kAsCpu);
    }
    // Fused: x += residual, then out = norm(x) written over the residual, as the model calls it.
    for (const bool layer_norm : {false, true}) {
      INFO((layer_norm ? "AddLayerNorm" : "AddRmsNorm"));
      TensorPair x = fixture.Random(9, 160);
      TensorPair residual = fixture.Random(9, 160);
      if (layer_norm) {
        fixture.cpu().AddLayerNorm(x.cpu, residual.cpu, cpu_norm, cpu_bias, 1e-5f, residual.cpu);
        fixture.gpu().AddLayerNorm(x.gpu, residual.gpu, gpu_norm, gpu_bias, 1e-5f, residual.gpu);
      } else {
        fixture.cpu().AddRmsNorm(x.cpu, residual.cpu, cpu_norm, 1e-5f, residual.cpu);
        fixture.gpu().AddRmsNorm(x.gpu, residual.gpu, gpu_norm, 1e-5f, residual.gpu);
      }
      CHECK(fixture.RelativeError(x) <= kAsCpu);  // the sum kept in x
      CHECK(fixture.RelativeError(residual) <= kAsCpu);
    }
  }
}

TEST_CASE("cuda op parity: norms of wide rows (several columns per thread), f16 weights, no bias") {
  OpFixture fixture(OpTestConfig(4, 2, 40), SmallLimits(),
                    {{"norm", DType::kF16, 1, 1000}, {"norm_bias", DType::kF16, 1, 1000}},
                    cuda::ComputeType::kF32, 18);
  const Weight cpu_norm = fixture.CpuWeight("norm"), gpu_norm = fixture.GpuWeight("norm");
  TensorPair x = fixture.Random(5, 1000, 4.0f);
  TensorPair rms = fixture.Poisoned(5, 1000), layer = fixture.Poisoned(5, 1000);
  fixture.cpu().RmsNorm(x.cpu, cpu_norm, 1e-6f, rms.cpu);
  fixture.gpu().RmsNorm(x.gpu, gpu_norm, 1e-6f, rms.gpu);
  CHECK(fixture.RelativeError(rms) <= kAsCpu);
  fixture.cpu().LayerNorm(x.cpu, cpu_norm, {}, 1e-5f, layer.cpu);
  fixture.gpu().LayerNorm(x.gpu, gpu_norm, {}, 1e-5f, layer.gpu);
  CHECK(fixture.RelativeError(layer) <= kAsCpu);
  TensorPair residual = fixture.Random(5, 1000);
  fixture.cpu().AddLayerNorm(x.cpu, residual.cpu, cpu_norm, fixture.CpuWeight("norm_bias"), 1e-5f,
                             residual.cpu);
  fixture.gpu().AddLayerNorm(x.gpu, residual.gpu, gpu_norm, fixture.GpuWeight("norm_bias"), 1e-5f,
                             residual.gpu);
  CHECK(fixture.RelativeError(x) <= kAsCpu);
  CHECK(fixture.RelativeError(residual) <= kAsCpu);
}

TEST_CASE("cuda op parity: token and position embeddings from float and quantized tables") {
  struct Case {
    DType dtype;
    int group_size;
    cuda::ComputeType compute;
    double threshold;
  };
  // A 2-D f32 table is held in bf16 under bf16 compute, like every f32 matrix.
  // Dequantisation is exact on both sides, but nvcc fuses the position add with the int8 scale
  // multiply into one FMA where the CPU rounds the product first: 1e-6, not 0.
  const Case cases[] = {{DType::kF32, 0, cuda::ComputeType::kF32, 1e-6},
                        {DType::kF32, 0, cuda::ComputeType::kBf16, 8e-3},
                        {DType::kF16, 0, cuda::ComputeType::kF32, 1e-6},
                        {DType::kI8, 0, cuda::ComputeType::kF32, 1e-6},
                        {DType::kQ4, 32, cuda::ComputeType::kBf16, 1e-6}};
  for (const Case& c : cases) {
    INFO("table " << DTypeName(c.dtype) << ", compute " << ComputeName(c.compute));
    OpFixture fixture(
        OpTestConfig(4, 2, 40), SmallLimits(),
        {{"embed", c.dtype, 50, 160, c.group_size}, {"positions", c.dtype, 130, 160, c.group_size}},
        c.compute, 14);
    const std::vector<TokenId> ids = {0, 49, 7, 7, 23, 1, 48};
    TensorPair out = fixture.Poisoned(static_cast<int64_t>(ids.size()), 160);
    fixture.cpu().Embed(ids, fixture.CpuWeight("embed"), out.cpu);
    fixture.gpu().Embed(ids, fixture.GpuWeight("embed"), out.gpu);
    CHECK(fixture.RelativeError(out) <= c.threshold);

    const std::vector<int> positions = {0, 1, 2, 127, 64, 3, 5};
    fixture.cpu().AddPositionEmbedding(positions, 2, fixture.CpuWeight("positions"), out.cpu);
    fixture.gpu().AddPositionEmbedding(positions, 2, fixture.GpuWeight("positions"), out.gpu);
    CHECK(fixture.RelativeError(out) <= c.threshold);

    // Ids outside the vocabulary are refused before anything runs, as on the CPU.
    const std::vector<TokenId> bad = {3, 50};
    CHECK_THROWS_WITH(fixture.gpu().Embed(bad, fixture.GpuWeight("embed"), out.gpu.FirstRows(2)),
                      Catch::Contains("outside the vocabulary"));
  }
}

TEST_CASE("cuda op parity: RoPE at scattered positions for q and GQA k widths") {
  ModelConfig config = OpTestConfig(4, 2, 40);
  config.rope_theta = 500000.0;
  OpFixture fixture(config, SmallLimits(), {{"unused", DType::kF32, 1, 8}}, cuda::ComputeType::kF32,
                    15);
  const RopeTables tables = BuildRopeTables(config, 128);
  fixture.cpu().SetRopeTables(tables.cos, tables.sin, 40);
  fixture.gpu().SetRopeTables(tables.cos, tables.sin, 40);
  const std::vector<int> positions = {0, 1, 127, 64, 5, 99};
  for (const int heads : {4, 2}) {
    TensorPair x = fixture.Random(6, heads * 40);
    fixture.cpu().Rope(x.cpu, positions, heads);
    fixture.gpu().Rope(x.gpu, positions, heads);
    CHECK(fixture.RelativeError(x) <= kAsCpu);
  }
}

TEST_CASE("cuda op parity: KV cache stores and causal attention over ragged chunks") {
  // head_dim 256 is the kernel's largest (two output dims per thread); 64 with GQA 4:1; 40 odd.
  struct Shape {
    int heads, kv_heads, head_dim;
  };
  // KV caches: f32 (f32 compute), bf16 (an f32 cache under bf16 compute), int8 (either).
  struct Kv {
    DType dtype;
    cuda::ComputeType compute;
    double threshold;
  };
  for (const Shape shape : {Shape{8, 2, 64}, Shape{4, 4, 256}, Shape{6, 3, 40}}) {
    for (const Kv kv : {Kv{DType::kF32, cuda::ComputeType::kF32, kAsCpu},
                        Kv{DType::kF32, cuda::ComputeType::kBf16, kBf16},
                        Kv{DType::kI8, cuda::ComputeType::kF32, kAsCpu}}) {
      INFO(shape.heads << " heads, " << shape.kv_heads << " KV heads, head_dim " << shape.head_dim
                       << ", KV " << DTypeName(kv.dtype) << ", compute "
                       << ComputeName(kv.compute));
      ModelLimits limits = SmallLimits();
      limits.kv_dtype = kv.dtype;
      OpFixture fixture(OpTestConfig(shape.heads, shape.kv_heads, shape.head_dim), limits,
                        {{"unused", DType::kF32, 1, 8}}, kv.compute, 16);
      const int q_dim = shape.heads * shape.head_dim, kv_dim = shape.kv_heads * shape.head_dim;
      AttentionShape attention;
      attention.num_heads = shape.heads;
      attention.num_kv_heads = shape.kv_heads;
      attention.head_dim = shape.head_dim;
      attention.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));

      // Step 1 fills slot 2 with 90 positions (two 64-key tiles) and slot 1 with 20; step 2 mixes
      // a fresh 37-token prefill in slot 0, one decode token in slot 2 and a 5-token chunk in slot 1.
      const std::vector<std::vector<SequenceChunk>> steps = {
          {{2, 0, 90, 0}, {1, 0, 20, 90}}, {{0, 0, 37, 0}, {2, 90, 1, 37}, {1, 20, 5, 38}}};
      for (const std::vector<SequenceChunk>& chunks : steps) {
        const int rows = chunks.back().token_offset + chunks.back().num_tokens;
        TensorPair k = fixture.Random(rows, kv_dim), v = fixture.Random(rows, kv_dim);
        TensorPair q = fixture.Random(rows, q_dim, 2.0f);
        TensorPair out = fixture.Poisoned(rows, q_dim);
        fixture.cpu().StoreKv(0, chunks, k.cpu, v.cpu);
        fixture.gpu().StoreKv(0, chunks, k.gpu, v.gpu);
        fixture.cpu().Attention(0, chunks, q.cpu, attention, out.cpu);
        fixture.gpu().Attention(0, chunks, q.gpu, attention, out.gpu);
        CHECK(fixture.RelativeError(out) <= kv.threshold);
      }
    }
  }
}

TEST_CASE("cuda op parity: SiLU gate, ReLU, residual add, row gather, host copies") {
  OpFixture fixture(OpTestConfig(4, 2, 40), SmallLimits(), {{"unused", DType::kF32, 1, 8}},
                    cuda::ComputeType::kF32, 17);
  TensorPair gate = fixture.Random(33, 192, 3.0f), up = fixture.Random(33, 192);
  fixture.cpu().SiluMul(gate.cpu, up.cpu, up.cpu);
  fixture.gpu().SiluMul(gate.gpu, up.gpu, up.gpu);
  CHECK(fixture.RelativeError(up) <= kAsCpu);

  TensorPair x = fixture.Random(33, 192);
  fixture.cpu().Relu(x.cpu);
  fixture.gpu().Relu(x.gpu);
  CHECK(fixture.RelativeError(x) <= 0.0);

  TensorPair y = fixture.Random(33, 192);
  fixture.cpu().Add(x.cpu, y.cpu);
  fixture.gpu().Add(x.gpu, y.gpu);
  CHECK(fixture.RelativeError(x) <= kAsCpu);

  const std::vector<int> rows = {32, 0, 7, 7};
  TensorPair gathered = fixture.Poisoned(4, 192);
  fixture.cpu().GatherRows(x.cpu, rows, gathered.cpu);
  fixture.gpu().GatherRows(x.gpu, rows, gathered.gpu);
  CHECK(fixture.RelativeError(gathered) <= 0.0);

  // A round trip through device memory is exact.
  const std::vector<float> values = fixture.Read(fixture.cpu(), y.cpu);
  CHECK(fixture.Read(fixture.gpu(), y.gpu) == values);
}

TEST_CASE("cuda op parity: an expert's outputs, weighted, added into its tokens' rows") {
  ModelConfig config = OpTestConfig(4, 2, 40);
  config.moe.num_experts = 4;  // a mixture of experts: the backend plans its scatter arrays
  config.moe.experts_per_token = 2;
  config.moe.expert_ffn = 40;
  OpFixture fixture(config, SmallLimits(), {{"unused", DType::kF32, 1, 8}}, cuda::ComputeType::kF32,
                    19);
  TensorPair x = fixture.Random(33, 192);
  const std::vector<int> rows = {0, 4, 9, 31, 32};
  // Not powers of two: each product rounds, so a fused multiply-add would show.
  const std::vector<float> weights = {0.3f, 0.55f, 1.0f, 0.1f, 0.85f};
  TensorPair gathered = fixture.Poisoned(5, 192);
  fixture.cpu().GatherRows(x.cpu, rows, gathered.cpu);
  fixture.gpu().GatherRows(x.gpu, rows, gathered.gpu);
  CHECK(fixture.RelativeError(gathered) <= 0.0);
  TensorPair out = fixture.Random(5, 192);
  fixture.cpu().ScaleAddRows(out.cpu, rows, weights, x.cpu);
  fixture.gpu().ScaleAddRows(out.gpu, rows, weights, x.gpu);
  CHECK(fixture.RelativeError(x) <= kAsCpu);
}

TEST_CASE("cuda backend: a --gpu-mem budget too small for the run is refused with the plan") {
  ModelConfig config = OpTestConfig(4, 2, 40);
  Checkpoint checkpoint;
  checkpoint.config = config;
  cuda::CudaOptions options;
  options.gpu_mem_bytes = 1 << 20;  // 1 MiB: less than cuBLAS's workspace alone
  CHECK_THROWS_WITH(cuda::CreateCudaBackend(checkpoint, SmallLimits(), options),
                    Catch::Contains("--gpu-mem") && Catch::Contains("KV cache"));
}

}  // namespace zinf::testing
