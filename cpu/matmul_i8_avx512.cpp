// The AVX-512 int8 kernel's walk over its tiles (cpu/matmul_i8_avx512_tiles.h). A lone token
// (decode) streams the weights: kI8Avx512DecodeRows-row pair tiles whose rows lie a stride apart
// (tiling.h's ForEachStridedTile), the next tile's bytes prefetched while this one is multiplied.
// Up to 4 tokens: 8-row pair tiles; 5 to kMaxPairTokens: 4-row ones (fewer live sums: measured
// 1.3× the token-lane tile at 8 tokens, whose lanes would be half empty). More: the tokens go into
// lanes, 15 to a group, and 8-row tiles pass over the groups while the rows stay in L1.
#include "cpu/matmul_i8_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu/lane_tile_store.h"
#include "cpu/matmul_i8_avx512_tiles.h"
#include "cpu/q8_activations.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/tile_prefetch.h"
#include "cpu/tiling.h"

namespace zinf::cpu {

namespace {

using i8_avx512::PackedRecord;

constexpr int kDecodeRows = kI8Avx512DecodeRows;
constexpr int kPairRows = 8;      // up to 4 tokens
constexpr int kWidePairRows = 4;  // 5 to kMaxPairTokens tokens
constexpr int kMaxPairTokens = 8;
constexpr int kLaneRows = 8;
constexpr int kLaneGroupTokens = 15;  // lane 15 carries the bias correction
using Record = PackedRecord<kMaxPairTokens>;

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

// Each token's records (PackedRecord: values, −128 · lane sums, scale per block), into a buffer
// owned by the calling thread and only ever grown.
const std::byte* PackTokens(const Q8Activations& xq, int64_t num_tokens) {
  thread_local std::vector<std::byte> buffer;
  const auto bytes = static_cast<size_t>(xq.blocks * Record::kBytes);
  if (buffer.size() < bytes) buffer.resize(bytes);
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t b = 0; b < xq.blocks; ++b) {
      std::byte* record = buffer.data() + b * Record::kBytes;
      const __m256i xv = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(xq.token_values(t) + b * kQ8BlockElements));
      const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, xv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(record + 32 * t), xv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(record + Record::kOffsets + 32 * t),
                          _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7)));
      std::memcpy(record + Record::kScales + 4 * t, xq.token_scales(t) + b, 4);
    }
  }
  return buffer.data();
}

template <int kRows, int kTokens>
void PairRows(const std::byte* records, const QuantRows& w, const Weight& bias, float* out,
              int64_t out_stride, int64_t r, int64_t row_step, int64_t prefetch_offset) {
  float results[kRows][kTokens];
  i8_avx512::PairTile<kRows, kTokens, kMaxPairTokens>(records, w, r, row_step, prefetch_offset,
                                                      results);
  StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, 0, row_step);
}

template <int kTokens>
void PairWalk(const std::byte* records, const QuantRows& w, const Weight& bias, float* out,
              int64_t out_stride, int64_t row_begin, int64_t row_end) {
  constexpr int kRows = kTokens == 1 ? kDecodeRows : (kTokens <= 4 ? kPairRows : kWidePairRows);
  const bool prefetch = PrefetchNextTile(DType::kI8, kTokens);
  int64_t r = row_begin;
  if constexpr (kTokens == 1) {
    r = ForEachStridedTile<kRows>(row_begin, row_end, [&](int64_t first, int64_t step, bool last) {
      const int64_t ahead = prefetch && !last ? kStreamPrefetchBytes : 0;
      PairRows<kRows, 1>(records, w, bias, out, out_stride, first, step, ahead);
    });
  }
  for (; r + kRows <= row_end; r += kRows) {
    const int64_t next_tile = prefetch && r + 2 * kRows <= row_end ? kRows * w.row_bytes : 0;
    PairRows<kRows, kTokens>(records, w, bias, out, out_stride, r, 1, next_tile);
  }
  for (; r + 2 <= row_end; r += 2) PairRows<2, kTokens>(records, w, bias, out, out_stride, r, 1, 0);
  if (r < row_end) PairRows<1, kTokens>(records, w, bias, out, out_stride, r, 1, 0);
}

template <int kRows>
void LaneRows(const Q8TokenLanes& lanes, int64_t num_tokens, const QuantRows& w, const Weight& bias,
              float* out, int64_t out_stride, int64_t r, int64_t group_begin, int64_t group_end) {
  for (int64_t group = group_begin; group < group_end; ++group) {
    alignas(64) float results[kRows][16];
    i8_avx512::LaneTile<kRows>(lanes, group, w, r, results);
    StoreLaneTile<kRows, 16>(results, lanes.tokens_in(group, num_tokens), bias, out, out_stride, r,
                             group * kLaneGroupTokens);
  }
}

void LaneWalk(const Q8TokenLanes& lanes, int64_t num_tokens, const QuantRows& w, const Weight& bias,
              float* out, int64_t out_stride, int64_t row_begin, int64_t row_end) {
  // Groups in blocks that stay in L2 while the rows pass over them.
  const int64_t step = LaneGroupsPerTokenBlock(lanes.blocks * Q8TokenLanes::kBlockBytes);
  for (int64_t g = 0; g < lanes.groups; g += step) {
    const int64_t g_end = std::min(lanes.groups, g + step);
    int64_t r = row_begin;
    for (; r + kLaneRows <= row_end; r += kLaneRows)
      LaneRows<kLaneRows>(lanes, num_tokens, w, bias, out, out_stride, r, g, g_end);
    if (r + 4 <= row_end) {
      LaneRows<4>(lanes, num_tokens, w, bias, out, out_stride, r, g, g_end);
      r += 4;
    }
    if (r + 2 <= row_end) {
      LaneRows<2>(lanes, num_tokens, w, bias, out, out_stride, r, g, g_end);
      r += 2;
    }
    if (r < row_end) LaneRows<1>(lanes, num_tokens, w, bias, out, out_stride, r, g, g_end);
  }
}

#pragma GCC pop_options

}  // namespace

void MatMulI8Avx512(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end) {
  const QuantRows rows(w);
  if (num_tokens > kMaxPairTokens) {
    // A last group of a few tokens would cost a whole lane pass: those go to the pair tiles.
    const int64_t rest = num_tokens % kLaneGroupTokens;
    const int64_t lane_tokens = rest <= kMaxPairTokens ? num_tokens - rest : num_tokens;
    const Q8TokenLanes lanes = PackQ8TokenLanes(xq, lane_tokens, kLaneGroupTokens, 0x80);
    LaneWalk(lanes, lane_tokens, rows, bias, out, out_stride, row_begin, row_end);
    if (lane_tokens < num_tokens) {
      MatMulI8Avx512(xq.from(lane_tokens), num_tokens - lane_tokens, w, bias,
                     out + lane_tokens * out_stride, out_stride, row_begin, row_end);
    }
    return;
  }
  const std::byte* records = PackTokens(xq, num_tokens);
  switch (num_tokens) {
    case 1: return PairWalk<1>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 2: return PairWalk<2>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 3: return PairWalk<3>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 4: return PairWalk<4>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 5: return PairWalk<5>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 6: return PairWalk<6>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 7: return PairWalk<7>(records, rows, bias, out, out_stride, row_begin, row_end);
    case 8: return PairWalk<8>(records, rows, bias, out, out_stride, row_begin, row_end);
    default: return;
  }
}

}  // namespace zinf::cpu
