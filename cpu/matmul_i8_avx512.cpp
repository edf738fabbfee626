// The AVX-512 int8 kernel's walk over its tiles (cpu_matmul_i8_avx512_tiles.h). A lone token
// (decode) streams the weights: 16-row tiles, the next tile's bytes prefetched while this one is
// multiplied. Several tokens reuse each weight block: the biased tile over tokens packed once per
// call, rows in groups that stay in L1 while the token block (sized for L2) passes over them.
#include "cpu/matmul_i8_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu/matmul_i8_avx512_tiles.h"
#include "cpu/q8_activations.h"
#include "cpu/tiling.h"

namespace zinf::cpu {

namespace {

using i8_avx512::PackedRecord;

// Decode: 16 rows (8 zmm accumulators, 8 weight pairs) keep many lines in flight. Batch: 6 rows ×
// 8 tokens, 24 accumulators + 3 weight pairs + a token's values, offsets and scale in the 32 zmm
// registers without a spill; measured 5–10% faster than 6 × 6, 6 × 7, 4 × 8, 8 × 4 and 4 × 10.
constexpr int kDecodeRows = 16;
constexpr int kTileRows = 6;
constexpr int kTileTokens = 8;
using Record = PackedRecord<kTileTokens>;

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

// True if rows [row, row + count) hold a −128 byte (the biased tile cannot take them).
bool HasMinus128(const QuantRows& w, int64_t row, int count) {
  const __m512i minus128 = _mm512_set1_epi8(-128);
  __mmask64 found = 0;
  for (int i = 0; i < count; ++i) {
    const int8_t* values = w.i8_row(row + i);
    int64_t k = 0;
    for (; k + 64 <= w.cols; k += 64)
      found |= _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(values + k), minus128);
    const auto tail = static_cast<__mmask64>((uint64_t{1} << (w.cols - k)) - 1);
    found |= _mm512_cmpeq_epi8_mask(_mm512_maskz_loadu_epi8(tail, values + k), minus128);
  }
  return found != 0;
}

// The records of every token group (PackedRecord), into a buffer owned by the calling thread and
// only ever grown.
const std::byte* PackTokens(const Q8Activations& xq, int64_t num_tokens) {
  thread_local std::vector<std::byte> buffer;
  const int64_t groups = (num_tokens + kTileTokens - 1) / kTileTokens;
  const auto bytes = static_cast<size_t>(groups * xq.blocks * Record::kBytes);
  if (buffer.size() < bytes) buffer.resize(bytes);
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t group = t / kTileTokens, slot = t % kTileTokens;
    for (int64_t b = 0; b < xq.blocks; ++b) {
      std::byte* record = buffer.data() + (group * xq.blocks + b) * Record::kBytes;
      const __m256i xv = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(xq.token_values(t) + b * kQ8BlockElements));
      const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, xv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(record + 32 * slot), xv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(record + Record::kOffsets + 32 * slot),
                          _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7)));
      std::memcpy(record + Record::kScales + 4 * slot, xq.token_scales(t) + b, 4);
    }
  }
  return buffer.data();
}

#pragma GCC pop_options

// Calls tile.template operator()<kTokens>(t) for tokens [t, t_end) kMaxTokens at a time, then
// once with the narrower rest.
template <int kMaxTokens, typename TileFn>
void ForTokens(int64_t t, int64_t t_end, TileFn&& tile) {
  for (; t + kMaxTokens <= t_end; t += kMaxTokens) tile.template operator()<kMaxTokens>(t);
  const int64_t left = t_end - t;
  [&]<int... kLeft>(std::integer_sequence<int, kLeft...>) {
    ((left == kLeft + 1 ? tile.template operator()<kLeft + 1>(t) : void()), ...);
  }
  (std::make_integer_sequence<int, kMaxTokens - 1>{});
}

struct Call {
  const Q8Activations& xq;
  const std::byte* packed;  // batch only
  const QuantRows& w;
  const Weight& bias;
  float* out;
  int64_t out_stride;
};

template <int kRows, int kMaxTokens>
void SignedRows(const Call& c, int64_t r, int64_t t, int64_t t_end, const int8_t* prefetch) {
  ForTokens<kMaxTokens>(t, t_end, [&]<int kTokens>(int64_t t0) {
    float results[kRows][kTokens];
    i8_avx512::SignedTile<kRows, kTokens>(c.xq, t0, c.w, r, std::exchange(prefetch, nullptr),
                                          results);
    StoreTile<kRows, kTokens>(results, c.bias, c.out, c.out_stride, r, t0);
  });
}

// Rows [r, r + kRows) × tokens [t, t_end), t a multiple of kTileTokens.
template <int kRows>
void BatchRows(const Call& c, int64_t r, int64_t t, int64_t t_end, const int8_t* prefetch) {
  if (HasMinus128(c.w, r, kRows)) return SignedRows<kRows, kTileTokens>(c, r, t, t_end, prefetch);
  ForTokens<kTileTokens>(t, t_end, [&]<int kTokens>(int64_t t0) {
    const std::byte* records = c.packed + t0 / kTileTokens * c.xq.blocks * Record::kBytes;
    float results[kRows][kTokens];
    i8_avx512::BiasedTile<kRows, kTokens, kTileTokens>(records, c.w, r,
                                                       std::exchange(prefetch, nullptr), results);
    StoreTile<kRows, kTokens>(results, c.bias, c.out, c.out_stride, r, t0);
  });
}

}  // namespace

void MatMulI8Avx512(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end) {
  const QuantRows rows(w);
  const Q8Activations xq = QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols, true);
  if (num_tokens == 1) {
    const Call c{xq, nullptr, rows, bias, out, out_stride};
    int64_t r = row_begin;
    for (; r + kDecodeRows <= row_end; r += kDecodeRows) {
      const int8_t* next = r + 2 * kDecodeRows <= row_end ? rows.i8_row(r + kDecodeRows) : nullptr;
      SignedRows<kDecodeRows, 1>(c, r, 0, 1, next);
    }
    for (; r + 2 <= row_end; r += 2) SignedRows<2, 1>(c, r, 0, 1, nullptr);
    if (r < row_end) SignedRows<1, 1>(c, r, 0, 1, nullptr);
    return;
  }
  const Call c{xq, PackTokens(xq, num_tokens), rows, bias, out, out_stride};
  // Token blocks small enough to stay in L2 while the weight rows pass over them.
  const int64_t bytes_per_token = xq.blocks * Record::kBytes / kTileTokens;
  const int64_t block = std::max<int64_t>(kTileTokens, kTokenBlockBytes / bytes_per_token /
                                                           kTileTokens * kTileTokens);
  for (int64_t t = 0; t < num_tokens; t += block) {
    const int64_t t_end = std::min(num_tokens, t + block);
    int64_t r = row_begin;
    for (; r + kTileRows <= row_end; r += kTileRows) {
      const int8_t* next = r + 2 * kTileRows <= row_end ? rows.i8_row(r + kTileRows) : nullptr;
      BatchRows<kTileRows>(c, r, t, t_end, next);
    }
    for (; r + 2 <= row_end; r += 2) BatchRows<2>(c, r, t, t_end, nullptr);
    if (r < row_end) BatchRows<1>(c, r, t, t_end, nullptr);
  }
}

}  // namespace zinf::cpu
