// The 8-lane dot product of the float kernels (lane j accumulates elements k ≡ j mod 8 in order,
// one fma each) computed for two tokens per 512-bit register: the activations are laid out once
// per call as token pairs, [x_t[k..k+8) | x_t+1[k..k+8)] for each k, and each weight run of 8 is
// broadcast to both halves, so each half follows the AVX2 kernel's chain exactly. A tile of 6
// rows × 4 token pairs keeps 24 accumulators in registers. The token pairs come from L2 and the
// weight rows from L1, so tall tiles win: 6 × 4 measured 1.25× faster than 4 × 6 (one thread,
// 128 tokens, 768- and 2048-wide rows), and 8 × 3 in between.
#include "engine/cpu_matmul_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "engine/cpu_dot.h"
#include "engine/error.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = 6;
constexpr int kTilePairs = 4;
// Larger next row groups are left to the hardware: prefetching them into L2 evicted token pairs
// (1.1B shape: 6% slower) where smaller ones gained (110M: 4%).
constexpr int64_t kPrefetchedGroupBytes = int64_t{24} << 10;
// Token pairs per block, in bytes: more of the 2 MiB L2 than the AVX2 kernels' blocks
// (cpu_tiling.h's kTokenBlockBytes), since every block pass reads the weights again: 1.1B-shape
// prefill 1.05x faster than with 768 KiB, 110M unchanged.
constexpr int64_t kPairBlockBytes = int64_t{1280} << 10;

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Token pairs of x, chunk-interleaved: pair p's chunk c is 16 floats at (p · chunks + c) · 16.
// An odd last token is paired with zeros (its second results are never stored). Grown only.
const float* PackTokenPairs(const float* x, int64_t x_stride, int64_t num_tokens, int64_t chunks) {
  thread_local std::vector<float> packed;
  const int64_t pairs = (num_tokens + 1) / 2;
  const auto size = static_cast<size_t>(pairs * chunks * 16);
  if (packed.size() < size) packed.resize(size);
  for (int64_t p = 0; p < pairs; ++p) {
    const float* first = x + 2 * p * x_stride;
    const float* second = 2 * p + 1 < num_tokens ? first + x_stride : nullptr;
    float* dst = packed.data() + p * chunks * 16;
    for (int64_t c = 0; c < chunks; ++c, dst += 16) {
      const __m256 high = second != nullptr ? _mm256_loadu_ps(second + 8 * c) : _mm256_setzero_ps();
      _mm512_storeu_ps(dst, _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(first + 8 * c)),
                                                high, 1));
    }
  }
  return packed.data();
}

// The 8 weights [idx, idx + 8) as f32 in both 256-bit halves.
template <DType kDType>
inline __m512 BroadcastWeights8(const void* base, int64_t idx) {
  if constexpr (kDType == DType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(static_cast<const float*>(base) + idx));
  } else if constexpr (kDType == DType::kF16) {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    return _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  } else {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(both), 16));
  }
}

// Each 256-bit half reduced in ReduceLanes' order: lane 0 holds the low half's sum, lane 8 the
// high half's.
inline __m512 ReducePairLanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));  // l_i + l_i+4
  v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));        // (s04+s26), (s15+s37)
  return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Rows [row, row + kRows) × token pairs [pair, pair + kPairs): sums[r][2p + h] before the tail.
template <DType kDType, int kRows, int kPairs>
inline void PairTile(const float* packed, int64_t chunks, const Weight& w, int64_t row, int64_t pair,
                     float sums[kRows][2 * kPairs]) {
  // The loops over the tile are unrolled by hand-given pragmas: at -O2 GCC keeps `acc` in memory
  // otherwise, and the kernel runs at a third of its speed.
  __m512 acc[kRows][kPairs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
  const float* xp = packed + pair * chunks * 16;
  for (int64_t c = 0; c < chunks; ++c) {
    __m512 wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) wv[r] = BroadcastWeights8<kDType>(w.data, (row + r) * w.cols + 8 * c);
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) {
      const __m512 xv = _mm512_loadu_ps(xp + (p * chunks + c) * 16);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][p] = _mm512_fmadd_ps(xv, wv[r], acc[r][p]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int p = 0; p < kPairs; ++p) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, ReducePairLanes(acc[r][p]));
      sums[r][2 * p] = lanes[0];
      sums[r][2 * p + 1] = lanes[8];
    }
  }
}

template <DType kDType, int kRows, int kPairs>
void RunTile(const float* x, int64_t x_stride, int64_t num_tokens, const float* packed,
             int64_t chunks, const Weight& w, const Weight& bias, float* out, int64_t out_stride,
             int64_t row, int64_t pair) {
  float sums[kRows][2 * kPairs];
  PairTile<kDType, kRows, kPairs>(packed, chunks, w, row, pair, sums);
  const int64_t body = chunks * 8;
  for (int r = 0; r < kRows; ++r) {
    const float b = bias ? WeightValue(bias, row + r) : 0.0f;
    for (int j = 0; j < 2 * kPairs; ++j) {
      const int64_t t = 2 * pair + j;
      if (t >= num_tokens) break;
      out[t * out_stride + row + r] = AddDotTail(sums[r][j], x + t * x_stride, w, row + r, body) + b;
    }
  }
}

// The tile shapes by (rows, pairs) at run time: full tiles, then the edges.
template <DType kDType, int kRows>
void RunRowGroup(const float* x, int64_t x_stride, int64_t num_tokens, const float* packed,
                 int64_t chunks, const Weight& w, const Weight& bias, float* out,
                 int64_t out_stride, int64_t row, int64_t pair_begin, int64_t pair_end) {
  // The next row group's weights are brought into L2 a slice per pair tile, so that its first
  // pass does not wait on DRAM (the weights are read once per call; the pairs are in L2 already).
  constexpr int64_t kElementBytes = kDType == DType::kF32 ? 4 : 2;
  const char* next_rows = static_cast<const char*>(w.data) + (row + kRows) * w.cols * kElementBytes;
  const int64_t next_bytes = kRows * w.cols * kElementBytes;
  const int64_t next_lines = next_bytes <= kPrefetchedGroupBytes ? next_bytes / 64 : 0;
  const int64_t tiles = std::max<int64_t>(1, (pair_end - pair_begin) / kTilePairs);
  const int64_t lines_per_tile = (next_lines + tiles - 1) / tiles;
  int64_t prefetched = 0;
  int64_t p = pair_begin;
  for (; p + kTilePairs <= pair_end; p += kTilePairs) {
    for (const int64_t end = std::min(next_lines, prefetched + lines_per_tile); prefetched < end; ++prefetched) {
      _mm_prefetch(next_rows + prefetched * 64, _MM_HINT_T1);
    }
    RunTile<kDType, kRows, kTilePairs>(x, x_stride, num_tokens, packed, chunks, w, bias, out,
                                       out_stride, row, p);
  }
  auto edge = [&]<int kPairs>() {
    RunTile<kDType, kRows, kPairs>(x, x_stride, num_tokens, packed, chunks, w, bias, out,
                                   out_stride, row, p);
  };
  static_assert(kTilePairs == 4, "the edge cases below cover 1 to 3 pairs");
  switch (pair_end - p) {
    case 1: edge.template operator()<1>(); break;
    case 2: edge.template operator()<2>(); break;
    case 3: edge.template operator()<3>(); break;
    default: break;
  }
}

template <DType kDType>
void MatMulPairs(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                 const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                 int64_t row_end) {
  const int64_t chunks = w.cols / 8;
  const float* packed = PackTokenPairs(x, x_stride, num_tokens, chunks);
  const int64_t pairs = (num_tokens + 1) / 2;
  // Pairs in blocks that stay in L2 while every row tile passes over them.
  const int64_t block = std::max<int64_t>(
      kTilePairs, kPairBlockBytes / std::max<int64_t>(chunks * 64, 1) / kTilePairs * kTilePairs);
  for (int64_t pair_begin = 0; pair_begin < pairs; pair_begin += block) {
    const int64_t pair_end = std::min(pairs, pair_begin + block);
    int64_t r = row_begin;
    for (; r + kTileRows <= row_end; r += kTileRows) {
      RunRowGroup<kDType, kTileRows>(x, x_stride, num_tokens, packed, chunks, w, bias, out,
                                     out_stride, r, pair_begin, pair_end);
    }
    for (; r < row_end; ++r) {
      RunRowGroup<kDType, 1>(x, x_stride, num_tokens, packed, chunks, w, bias, out, out_stride, r,
                             pair_begin, pair_end);
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void MatMulRowsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end) {
  switch (w.dtype) {
    case DType::kF32:
      return MatMulPairs<DType::kF32>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                      row_end);
    case DType::kF16:
      return MatMulPairs<DType::kF16>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                      row_end);
    case DType::kBF16:
      return MatMulPairs<DType::kBF16>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                       row_begin, row_end);
    case DType::kI8:
    case DType::kQ4:
      break;
  }
  Fail("MatMulRowsAvx512: {} weights go to the quantized kernels", DTypeName(w.dtype));
}

}  // namespace zinf::cpu
