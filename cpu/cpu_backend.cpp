// CpuBackend: element-wise and normalisation ops, plus dispatch of the matmul and attention kernels.
#include "cpu/cpu_backend.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "cpu/attention.h"
#include "cpu/matmul.h"
#include "cpu/norm_rows.h"
#include "cpu/product_sequence.h"
#include "cpu/read_ahead.h"
#include "cpu/shared_activations.h"
#include "cpu/silu.h"
#include "cpu/tile_prefetch.h"
#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {
float* Rows(Tensor t) { return static_cast<float*>(t.data); }
// Rows per parallel task below which splitting costs more than it saves.
constexpr int64_t kMinRowsPerTask = 4;
// Element-wise work per parallel task below which splitting costs more than it saves.
constexpr int64_t kMinElementsPerTask = 16384;
// Products of at most this many tokens stream their weights (decode): while a thread waits for
// the next one, it reads ahead up to kReadAheadBytes of its part of it. Measured on a Zen 4
// guest, each setting alternating step by step within one decode: 128 KiB took the products'
// time down 1-2% (110M int8) and 3% (110M int4); 64 and 512 KiB did about as well.
constexpr int64_t kReadAheadMaxTokens = 8;
constexpr int64_t kReadAheadBytes = int64_t{128} << 10;
}  // namespace

CpuBackend::CpuBackend(int num_threads) : pool_(num_threads) {}

// The calling thread's read-ahead may point into weights that go with this backend.
CpuBackend::~CpuBackend() { cpu::ThisThreadReadAhead().Clear(); }

std::string CpuBackend::name() const {
  return fmt::format("cpu ({} threads, {} kernels)", pool_.num_threads(),
                     cpu::CpuIsaName(cpu::ActiveCpuIsa()));
}

Tensor CpuBackend::AllocateActivation(int64_t rows, int64_t cols) {
  activations_.emplace_back(static_cast<size_t>(rows * cols));
  activation_bytes_ += static_cast<uint64_t>(rows * cols) * sizeof(float);
  return {activations_.back().data(), rows, cols};
}

void CpuBackend::AllocateKvCache(const KvCacheShape& shape) { kv_cache_.Allocate(shape); }

uint64_t CpuBackend::allocated_bytes() const {
  return activation_bytes_ + kv_cache_.allocated_bytes();
}

const std::byte* CpuBackend::BindExtent(const ExtentView& extent) { return extent.bytes.data(); }

void CpuBackend::Embed(std::span<const TokenId> token_ids, const Weight& table, Tensor out) {
  for (size_t t = 0; t < token_ids.size(); ++t) {
    const TokenId id = token_ids[t];
    if (id < 0 || id >= table.rows) {
      Fail("token id {} is outside the vocabulary (0..{})", id, table.rows - 1);
    }
    DequantizeRow(table, id, Rows(out) + t * out.cols);
  }
}

void CpuBackend::AddPositionEmbedding(std::span<const int> positions, int position_offset,
                                      const Weight& table, Tensor x) {
  for (size_t t = 0; t < positions.size(); ++t) {
    const int64_t index = positions[t] + position_offset;
    ZINF_CHECK(index >= 0 && index < table.rows, "position {} outside the table", index);
    float* row = Rows(x) + t * x.cols;
    for (int64_t c = 0; c < x.cols; ++c) row[c] += cpu::WeightValue(table, index * table.cols + c);
  }
}

void CpuBackend::MatMul(Tensor x, const Weight& w, const Weight& bias, Tensor out) {
  const Projection projection[] = {{w, bias, out}};
  MatMuls(x, projection);
}

void CpuBackend::MatMuls(Tensor x, std::span<const Projection> projections) {
  int64_t total_rows = 0;
  for (const Projection& p : projections) {
    ZINF_CHECK(x.cols == p.w.cols && p.out.cols == p.w.rows && x.rows == p.out.rows,
               "matmul shapes [{},{}] x [{},{}]ᵀ -> [{},{}]", x.rows, x.cols, p.w.rows, p.w.cols,
               p.out.rows, p.out.cols);
    total_rows += p.w.rows;
  }
  // One token reads every weight once: the kernels' prefetching is measured on these products.
  const cpu::PrefetchTrial trial = x.rows == 1 && !projections.empty()
                                       ? cpu::BeginOneTokenProduct(projections[0].w.dtype, x.cols)
                                       : cpu::PrefetchTrial{};
  const auto start = std::chrono::steady_clock::now();
  // What came after these products last time: each thread reads ahead its share of it.
  const cpu::ProductCall* next = nullptr;
  if (x.rows <= kReadAheadMaxTokens) {
    next = products_.Record(projections);
  } else {
    products_.Forget();
  }
  // One split of the projections' rows laid end to end: one pool hand-off instead of one per
  // projection, and each thread packs x once for all of them. Each thread reads its rows once
  // for every token. A row's result does not depend on which thread computes it (the kernels'
  // tests split rows anywhere), so the split follows the threads' measured speeds.
  const uint64_t x_version = cpu::NewActivationVersion();
  const cpu::CpuIsa isa = cpu::ActiveCpuIsa();
  const cpu::SharedActivations shared =
      projections.empty() ? cpu::SharedActivations{}
                          : cpu::PrepareSharedActivations(pool_, Rows(x), x.cols, x.rows, x.cols,
                                                          projections[0].w, isa);
  pool_.ParallelForBalanced(
      total_rows,
      [&](int64_t begin, int64_t end) {
        int64_t first_row = 0;
        for (const Projection& p : projections) {
          const int64_t from = std::max(begin, first_row) - first_row;
          const int64_t to = std::min(end, first_row + p.w.rows) - first_row;
          if (from < to) {
            cpu::MatMulRows(Rows(x), x.cols, x.rows, p.w, p.bias, Rows(p.out), p.out.cols, from, to,
                            isa, x_version, &shared);
          }
          first_row += p.w.rows;
        }
        // Done with its rows: the thread reads ahead the same share of the product that came
        // next last time, while it waits (for that call, or for the other threads).
        cpu::ReadAheadPlan& plan = cpu::ThisThreadReadAhead();
        if (next != nullptr) {
          const auto rows = static_cast<double>(total_rows);
          cpu::PlanReadAhead(*next, x.rows, isa, begin / rows, end / rows, kReadAheadBytes, plan);
        } else {
          plan.Clear();
        }
      },
      16);
  if (trial.key >= 0) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double weight_bytes = 0;
    for (const Projection& p : projections) {
      weight_bytes +=
          static_cast<double>(TensorBytes(p.w.dtype, p.w.rows, p.w.cols, p.w.group_size));
    }
    cpu::EndOneTokenProduct(trial, seconds, weight_bytes);
  }
}

// Runs normalize(in_row, out_row) for every row of x, rows split across the pool.
template <typename RowFn>
void ForEachRowPair(ThreadPool& pool, Tensor x, Tensor out, const RowFn& normalize) {
  pool.ParallelFor(
      x.rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          normalize(Rows(x) + r * x.cols, Rows(out) + r * out.cols);
      },
      kMinRowsPerTask);
}

void CpuBackend::RmsNorm(Tensor x, const Weight& weight, float eps, Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "rmsnorm width {} vs {}", weight.cols, x.cols);
  const cpu::CpuIsa isa = cpu::ActiveCpuIsa();
  ForEachRowPair(pool_, x, out, [&](const float* in, float* dst) {
    cpu::RmsNormRow(in, weight, eps, x.cols, dst, isa);
  });
}

void CpuBackend::AddRmsNorm(Tensor x, Tensor residual, const Weight& weight, float eps,
                            Tensor out) {
  ZINF_CHECK(weight.cols == x.cols && residual.cols == x.cols && residual.rows == x.rows,
             "add+rmsnorm shapes [{},{}] + [{},{}], norm width {}", x.rows, x.cols, residual.rows,
             residual.cols, weight.cols);
  const cpu::CpuIsa isa = cpu::ActiveCpuIsa();
  // Row by row, so each row of the residual stream is read while in cache (out may be residual:
  // a row's residual is consumed before its output is written).
  pool_.ParallelFor(
      x.rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          float* row = Rows(x) + r * x.cols;
          const float* add = Rows(residual) + r * residual.cols;
          for (int64_t c = 0; c < x.cols; ++c) row[c] += add[c];
          cpu::RmsNormRow(row, weight, eps, x.cols, Rows(out) + r * out.cols, isa);
        }
      },
      kMinRowsPerTask);
}

void CpuBackend::LayerNorm(Tensor x, const Weight& weight, const Weight& bias, float eps,
                           Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "layernorm width {} vs {}", weight.cols, x.cols);
  const int64_t cols = x.cols;
  ForEachRowPair(pool_, x, out, [&](const float* in, float* dst) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += in[c];
    const double mean = sum / cols;
    double sum_squares = 0;
    for (int64_t c = 0; c < cols; ++c) sum_squares += (in[c] - mean) * (in[c] - mean);
    const double inv_std = 1.0 / std::sqrt(sum_squares / cols + eps);
    for (int64_t c = 0; c < cols; ++c) {
      const float normalised = static_cast<float>((in[c] - mean) * inv_std);
      dst[c] = normalised * cpu::WeightValue(weight, c) + (bias ? cpu::WeightValue(bias, c) : 0.0f);
    }
  });
}

void CpuBackend::SetRopeTables(std::span<const float> cos, std::span<const float> sin,
                               int head_dim) {
  rope_cos_.assign(cos.begin(), cos.end());
  rope_sin_.assign(sin.begin(), sin.end());
  rope_head_dim_ = head_dim;
}

void CpuBackend::Rope(Tensor x, std::span<const int> positions, int num_heads) {
  const int half = rope_head_dim_ / 2;
  ZINF_CHECK(x.cols == static_cast<int64_t>(num_heads) * rope_head_dim_, "rope width {}", x.cols);
  for (const int position : positions) {
    ZINF_CHECK(static_cast<size_t>(position + 1) * half <= rope_cos_.size(),
               "position {} beyond the rope table", position);
  }
  pool_.ParallelFor(
      static_cast<int64_t>(positions.size()),
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const size_t table_row = static_cast<size_t>(positions[t]) * half;
          const float* cos = rope_cos_.data() + table_row;
          const float* sin = rope_sin_.data() + table_row;
          for (int h = 0; h < num_heads; ++h) {
            float* head = Rows(x) + t * x.cols + static_cast<int64_t>(h) * rope_head_dim_;
            for (int i = 0; i < half; ++i) {
              const float first = head[i];
              const float second = head[i + half];
              head[i] = first * cos[i] - second * sin[i];
              head[i + half] = second * cos[i] + first * sin[i];
            }
          }
        }
      },
      kMinRowsPerTask);
}

void CpuBackend::StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v) {
  ZINF_CHECK(k.cols == v.cols, "key width {} vs value width {}", k.cols, v.cols);
  kv_cache_.StoreChunks(layer, chunks, Rows(k), Rows(v), k.cols);
}

void CpuBackend::Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                           const AttentionShape& shape, Tensor out) {
  cpu::AttentionArgs args;
  args.chunks = chunks;
  args.q = Rows(q);
  args.q_stride = q.cols;
  args.out = Rows(out);
  args.out_stride = out.cols;
  args.shape = shape;
  args.k_slot = [&](int slot) { return kv_cache_.Keys(layer, slot); };
  args.v_slot = [&](int slot) { return kv_cache_.Values(layer, slot); };
  cpu::CausalAttention(pool_, args);
}

void CpuBackend::SiluMul(Tensor gate, Tensor up, Tensor out) {
  const float* g = Rows(gate);
  const float* u = Rows(up);
  float* dst = Rows(out);
  const cpu::CpuIsa isa = cpu::ActiveCpuIsa();
  // Split by element across the pool: a prefill step's gate is 100k+ values, each an exp.
  pool_.ParallelFor(
      gate.rows * gate.cols,
      [&](int64_t begin, int64_t end) {
        cpu::SiluMulRange(g + begin, u + begin, dst + begin, end - begin, isa);
      },
      kMinElementsPerTask);
}

void CpuBackend::Relu(Tensor x) {
  float* data = Rows(x);
  for (int64_t i = 0; i < x.rows * x.cols; ++i) data[i] = data[i] > 0 ? data[i] : 0.0f;
}

void CpuBackend::Add(Tensor x, Tensor y) {
  float* dst = Rows(x);
  const float* src = Rows(y);
  pool_.ParallelFor(
      x.rows * x.cols,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] += src[i];
      },
      kMinElementsPerTask);
}

void CpuBackend::GatherRows(Tensor x, std::span<const int> rows, Tensor out) {
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(Rows(out) + i * out.cols, Rows(x) + rows[i] * x.cols, x.cols * sizeof(float));
  }
}

void CpuBackend::ScaleAddRows(Tensor src, std::span<const int> rows, std::span<const float> scales,
                              Tensor x) {
  CheckScaleAddRows(src, rows, scales, x);
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* from = Rows(src) + i * src.cols;
    float* to = Rows(x) + rows[i] * x.cols;
    const float scale = scales[i];
    for (int64_t c = 0; c < x.cols; ++c) to[c] += scale * from[c];
  }
}

void CpuBackend::CopyToHost(Tensor x, std::span<float> host) {
  ZINF_CHECK(host.size() >= static_cast<size_t>(x.rows * x.cols), "host buffer too small");
  std::memcpy(host.data(), x.data, x.rows * x.cols * sizeof(float));
}

void CpuBackend::CopyFromHost(std::span<const float> host, Tensor x) {
  ZINF_CHECK(host.size() >= static_cast<size_t>(x.rows * x.cols), "host buffer too small");
  std::memcpy(x.data, host.data(), x.rows * x.cols * sizeof(float));
}

}  // namespace zinf::cpu
