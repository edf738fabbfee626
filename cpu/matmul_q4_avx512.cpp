// The AVX-512 int4 kernel: tiles of row pairs, two rows' blocks per zmm ([row a | row b], each
// 256-bit half running its row's 8-lane chain exactly as the portable kernel does). A lone token
// (decode) streams the weights 16 rows at a time, the next tile prefetched; up to 8 tokens use
// 4-row tiles whose groups are unpacked in registers while each token passes; more tokens unpack
// a 6-row tile once into an L1 scratch that 6 × 8 tiles read, token blocks sized to stay in L2.
#include "cpu/matmul_q4_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu/tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define ZINF_Q4_INLINE inline __attribute__((always_inline))

// The fixed lane reduction ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) of each 256-bit half (fp add
// is commutative, so the operands' order inside each sum does not matter).
ZINF_Q4_INLINE void ReduceHalves(__m512 acc, float& low, float& high) {
  const __m512 a = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 b = _mm512_add_ps(a, _mm512_permute_ps(a, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 c = _mm512_add_ps(b, _mm512_permute_ps(b, _MM_SHUFFLE(2, 3, 0, 1)));
  low = _mm512_cvtss_f32(c);
  high = _mm_cvtss_f32(_mm512_extractf32x4_ps(c, 2));
}

// Block `b` of rows a and b as [a's 32 nibbles | b's 32 nibbles], one byte each: the 16 bytes of
// each row in two 128-bit lanes, the second shifted right by 4 (16-bit shifts; the mask drops the
// neighbour byte's bits).
ZINF_Q4_INLINE __m512i UnpackPair(const uint8_t* a, const uint8_t* b, int64_t block) {
  const __m512i shifts = _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                                          0x0004000400040004, 0x0004000400040004, 0, 0);
  __m512i both =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * block)));
  both = _mm512_mask_broadcast_i32x4(
      both, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * block)));
  return _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(0x0f));
}

// [scale of row a × 8 | scale of row b × 8] for group g.
ZINF_Q4_INLINE __m512 PairScales(const uint16_t* a, const uint16_t* b, int64_t g) {
  return _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(a[2 * g])),
                            _mm256_set1_ps(_cvtsh_ss(b[2 * g])), 1);
}

// Token t's blocks of group g, each broadcast to both halves, and its scale.
template <int kBlocks>
ZINF_Q4_INLINE __m512 LoadTokenGroup(const Q4Activations& xa, int64_t t, int64_t g,
                                     __m512i (&xv)[kBlocks]) {
  const int8_t* x = xa.token_values(t) + g * kBlocks * kQ4BlockElements;
#pragma GCC unroll 16
  for (int j = 0; j < kBlocks; ++j) {
    xv[j] = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j * kQ4BlockElements)));
  }
  return _mm512_set1_ps(xa.scale(t, g));
}

// One row pair × one token over a group: the exact int32 sums of its blocks (`nibbles(j)`, block
// j of the pair), then acc = fma(float(sums), pair scales × activation scale, acc).
template <int kBlocks, typename NibblesFn>
ZINF_Q4_INLINE void AccumulateGroup(const __m512i (&xv)[kBlocks], NibblesFn&& nibbles,
                                    __m512 pair_scales, __m512 x_scale, __m512& acc) {
  __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles(0), xv[0]);
#pragma GCC unroll 16
  for (int j = 1; j < kBlocks; ++j) sums = _mm512_dpbusd_epi32(sums, nibbles(j), xv[j]);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(pair_scales, x_scale), acc);
}

// results = each half's lanes reduced in ReduceLanes' order, plus the row's minimum sum.
template <int kRows, int kTokens>
ZINF_Q4_INLINE void FinishTile(const __m512 (&acc)[(kRows + 1) / 2][kTokens],
                               const __m256 (&minimums)[kRows], float (&results)[kRows][kTokens]) {
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float sums[8];
    _mm256_store_ps(sums, minimums[r]);
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
      float low, high;
      ReduceHalves(acc[r / 2][t], low, high);
      results[r][t] = (r % 2 == 0 ? low : high) + sums[t];
    }
  }
}

// Group g's share of the next row tile (starting at row `next`): its nibbles and its scales.
template <int kRows, int kBlocks>
ZINF_Q4_INLINE void PrefetchGroupShare(const QuantRows& w, const uint8_t* next, int64_t g) {
  const char* nibbles = reinterpret_cast<const char*>(next) + g * kRows * kBlocks * 16;
#pragma GCC unroll 16
  for (int line = 0; line < (kRows * kBlocks * 16 + 63) / 64; ++line)
    _mm_prefetch(nibbles + 64 * line, _MM_HINT_T0);
  const int64_t next_row = (next - w.values) / w.row_bytes;
  _mm_prefetch(reinterpret_cast<const char*>(w.q4_params(next_row)) + g * kRows * 4, _MM_HINT_T0);
}

// Rows [row, row + kRows) × tokens [token, token + kTokens), groups of kBlocks blocks. An odd
// last row is paired with itself, its second half discarded. `prefetch`, when set, is the next
// tile's first row, fetched a group's share at a time.
template <int kRows, int kTokens, int kBlocks>
void Q4Tile(const Q4Activations& xa, int64_t token, const QuantRows& w, int64_t row,
            const uint8_t* prefetch, float (&results)[kRows][kTokens]) {
  constexpr int kPairs = (kRows + 1) / 2;
  const uint8_t* rows[2 * kPairs];
  const uint16_t* params[2 * kPairs];
#pragma GCC unroll 32
  for (int i = 0; i < 2 * kPairs; ++i) {
    rows[i] = w.row(row + std::min(i, kRows - 1));
    params[i] = w.q4_params(row + std::min(i, kRows - 1));
  }
  __m512 acc[kPairs][kTokens];
#pragma GCC unroll 64
  for (int i = 0; i < kPairs * kTokens; ++i) acc[i / kTokens][i % kTokens] = _mm512_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    if (prefetch != nullptr) PrefetchGroupShare<kRows, kBlocks>(w, prefetch, g);
    __m512i wv[kBlocks][kPairs];
#pragma GCC unroll 16
    for (int j = 0; j < kBlocks; ++j) {
#pragma GCC unroll 16
      for (int p = 0; p < kPairs; ++p)
        wv[j][p] = UnpackPair(rows[2 * p], rows[2 * p + 1], g * kBlocks + j);
    }
    __m512 scales[kPairs];
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p) scales[p] = PairScales(params[2 * p], params[2 * p + 1], g);
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
      __m512i xv[kBlocks];
      const __m512 x_scale = LoadTokenGroup<kBlocks>(xa, token + t, g, xv);
#pragma GCC unroll 16
      for (int p = 0; p < kPairs; ++p) {
        AccumulateGroup<kBlocks>(
            xv, [&](int j) { return wv[j][p]; }, scales[p], x_scale, acc[p][t]);
      }
    }
  }
  // The minimums: per row, a chain over the groups, the tile's tokens in the lanes.
  __m256 minimums[kRows];
  const auto token_mask = static_cast<__mmask8>((1u << kTokens) - 1);
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r) minimums[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    const __m256 factors = _mm256_maskz_loadu_ps(token_mask, xa.group_min_factors(g) + token);
#pragma GCC unroll 32
    for (int r = 0; r < kRows; ++r) {
      minimums[r] =
          _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(params[r][2 * g + 1])), factors, minimums[r]);
    }
  }
  FinishTile<kRows, kTokens>(acc, minimums, results);
}

// A row tile's weights unpacked once for every token tile that passes over it (the batch path):
// per group, each block's row pairs as 64 bytes of nibbles, each pair's scales as [a × 8 | b × 8]
// and each row's minimum, all in f32 or bytes the tile loads as memory operands.
template <int kRows, int kBlocks>
struct PackedRows {
  static constexpr int kPairs = (kRows + 1) / 2;
  static constexpr int64_t kGroupBytes = (kBlocks + 1) * kPairs * 64 + (kRows * 4 + 63) / 64 * 64;
  static int64_t Bytes(int64_t groups) { return groups * kGroupBytes; }
  static const __m512i* Nibbles(const std::byte* group, int j, int p) {
    return reinterpret_cast<const __m512i*>(group + (j * kPairs + p) * 64);
  }
  static const float* Scales(const std::byte* group, int p) {
    return reinterpret_cast<const float*>(group + (kBlocks * kPairs + p) * 64);
  }
  static const float* Minimum(const std::byte* group, int r) {
    return reinterpret_cast<const float*>(group + (kBlocks + 1) * kPairs * 64 + r * 4);
  }
};

template <int kRows, int kBlocks>
void PackRows(const QuantRows& w, int64_t row, int64_t groups, std::byte* packed) {
  using Packed = PackedRows<kRows, kBlocks>;
  constexpr int kPairs = Packed::kPairs;
  const uint8_t* rows[2 * kPairs];
  const uint16_t* params[2 * kPairs];
  for (int i = 0; i < 2 * kPairs; ++i) {
    rows[i] = w.row(row + std::min(i, kRows - 1));
    params[i] = w.q4_params(row + std::min(i, kRows - 1));
  }
  for (int64_t g = 0; g < groups; ++g) {
    std::byte* group = packed + g * Packed::kGroupBytes;
    for (int j = 0; j < kBlocks; ++j) {
      for (int p = 0; p < kPairs; ++p) {
        _mm512_store_si512(group + (j * kPairs + p) * 64,
                           UnpackPair(rows[2 * p], rows[2 * p + 1], g * kBlocks + j));
      }
    }
    for (int p = 0; p < kPairs; ++p)
      _mm512_store_ps(group + (kBlocks * kPairs + p) * 64,
                      PairScales(params[2 * p], params[2 * p + 1], g));
    for (int r = 0; r < kRows; ++r) {
      const float minimum = _cvtsh_ss(params[r][2 * g + 1]);
      std::memcpy(group + (kBlocks + 1) * kPairs * 64 + r * 4, &minimum, 4);
    }
  }
}

// Tokens [token, token + kTokens) over a packed row tile: Q4Tile's arithmetic.
template <int kRows, int kTokens, int kBlocks>
void PackedTile(const Q4Activations& xa, int64_t token, const std::byte* packed, const QuantRows& w,
                const uint8_t* prefetch, float (&results)[kRows][kTokens]) {
  using Packed = PackedRows<kRows, kBlocks>;
  constexpr int kPairs = Packed::kPairs;
  __m512 acc[kPairs][kTokens];
#pragma GCC unroll 64
  for (int i = 0; i < kPairs * kTokens; ++i) acc[i / kTokens][i % kTokens] = _mm512_setzero_ps();
  __m256 minimums[kRows];
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r) minimums[r] = _mm256_setzero_ps();
  const auto token_mask = static_cast<__mmask8>((1u << kTokens) - 1);
  for (int64_t g = 0; g < xa.groups; ++g) {
    const std::byte* group = packed + g * Packed::kGroupBytes;
    if (prefetch != nullptr) PrefetchGroupShare<kRows, kBlocks>(w, prefetch, g);
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
      __m512i xv[kBlocks];
      const __m512 x_scale = LoadTokenGroup<kBlocks>(xa, token + t, g, xv);
#pragma GCC unroll 16
      for (int p = 0; p < kPairs; ++p) {
        AccumulateGroup<kBlocks>(
            xv, [&](int j) { return *Packed::Nibbles(group, j, p); },
            _mm512_load_ps(Packed::Scales(group, p)), x_scale, acc[p][t]);
      }
    }
    const __m256 factors = _mm256_maskz_loadu_ps(token_mask, xa.group_min_factors(g) + token);
#pragma GCC unroll 32
    for (int r = 0; r < kRows; ++r) {
      minimums[r] =
          _mm256_fmadd_ps(_mm256_broadcast_ss(Packed::Minimum(group, r)), factors, minimums[r]);
    }
  }
  FinishTile<kRows, kTokens>(acc, minimums, results);
}

#undef ZINF_Q4_INLINE
#pragma GCC diagnostic pop
#pragma GCC pop_options

// Batch tiles: 6 rows × 8 tokens, 24 accumulators + a token's blocks, its scale and temporaries
// in the 32 zmm registers, the packed weights read as memory operands. Up to 8 tokens, unpacked in
// registers: 4 rows (16 accumulators, the two pairs' blocks and scales); one token: 16 rows.
constexpr int kTileRows = 6, kTileTokens = 8, kFewTokenRows = 4, kDecodeRows = 16;

template <int kBlocks>
struct Walk {
  const Q4Activations& xa;
  const QuantRows& w;
  const Weight& bias;
  float* out;
  int64_t out_stride;

  // All tokens (at most kTileTokens) over rows [r, r + kRows), unpacked in registers.
  template <int kRows>
  void DirectTile(int64_t r, const uint8_t* prefetch) const {
    [&]<int... kCount>(std::integer_sequence<int, kCount...>) {
      ((xa.tokens == kCount + 1 ? DirectTokens<kRows, kCount + 1>(r, prefetch) : void()), ...);
    }
    (std::make_integer_sequence<int, kTileTokens>{});
  }
  template <int kRows, int kTokens>
  void DirectTokens(int64_t r, const uint8_t* prefetch) const {
    float results[kRows][kTokens];
    Q4Tile<kRows, kTokens, kBlocks>(xa, 0, w, r, prefetch, results);
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, 0);
  }
  template <int kRows>
  void DirectRows(int64_t row_begin, int64_t row_end) const {
    int64_t r = row_begin;
    for (; r + kRows <= row_end; r += kRows) {
      const uint8_t* next = r + 2 * kRows <= row_end ? w.row(r + kRows) : nullptr;
      DirectTile<kRows>(r, next);
    }
    for (; r + 2 <= row_end; r += 2) DirectTile<2>(r, nullptr);
    if (r < row_end) DirectTile<1>(r, nullptr);
  }

  // Rows [r, r + kRows) for tokens [t, t_end): packed once, then whole tiles of kTileTokens and
  // one narrower.
  template <int kRows>
  void Rows(int64_t r, int64_t t, int64_t t_end, std::byte* packed, const uint8_t* prefetch) const {
    PackRows<kRows, kBlocks>(w, r, xa.groups, packed);
    auto tile = [&]<int kTokens>(int64_t t0) {
      float results[kRows][kTokens];
      PackedTile<kRows, kTokens, kBlocks>(xa, t0, packed, w, std::exchange(prefetch, nullptr),
                                          results);
      StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, t0);
    };
    for (; t + kTileTokens <= t_end; t += kTileTokens) tile.template operator()<kTileTokens>(t);
    const int64_t left = t_end - t;
    [&]<int... kLeft>(std::integer_sequence<int, kLeft...>) {
      ((left == kLeft + 1 ? tile.template operator()<kLeft + 1>(t) : void()), ...);
    }
    (std::make_integer_sequence<int, kTileTokens - 1>{});
  }

  void Run(int64_t row_begin, int64_t row_end) const {
    // Few tokens: packing would cost as much as it saves.
    if (xa.tokens == 1) return DirectRows<kDecodeRows>(row_begin, row_end);
    if (xa.tokens <= kTileTokens) return DirectRows<kFewTokenRows>(row_begin, row_end);
    // Grown only; 64-byte aligned for the packed vectors.
    struct alignas(64) Line {
      std::byte bytes[64];
    };
    thread_local std::vector<Line> scratch;
    const int64_t bytes = PackedRows<kTileRows, kBlocks>::Bytes(xa.groups);
    if (scratch.size() * 64 < static_cast<size_t>(bytes)) scratch.resize((bytes + 63) / 64);
    auto* packed = reinterpret_cast<std::byte*>(scratch.data());
    const int64_t bytes_per_token = xa.groups * xa.group_size + 8;
    const int64_t block = std::max<int64_t>(kTileTokens, kTokenBlockBytes / bytes_per_token /
                                                             kTileTokens * kTileTokens);
    for (int64_t t = 0; t < xa.tokens; t += block) {
      const int64_t t_end = std::min(xa.tokens, t + block);
      int64_t r = row_begin;
      for (; r + kTileRows <= row_end; r += kTileRows) {
        const uint8_t* next = r + 2 * kTileRows <= row_end ? w.row(r + kTileRows) : nullptr;
        Rows<kTileRows>(r, t, t_end, packed, next);
      }
      for (; r + 2 <= row_end; r += 2) Rows<2>(r, t, t_end, packed, nullptr);
      if (r < row_end) Rows<1>(r, t, t_end, packed, nullptr);
    }
  }
};

}  // namespace

void MatMulQ4Avx512(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                    int64_t out_stride, int64_t row_begin, int64_t row_end) {
  switch (xa.group_size / kQ4BlockElements) {
    case 1: return Walk<1>{xa, w, bias, out, out_stride}.Run(row_begin, row_end);
    case 2: return Walk<2>{xa, w, bias, out, out_stride}.Run(row_begin, row_end);
    default: return Walk<4>{xa, w, bias, out, out_stride}.Run(row_begin, row_end);
  }
}

}  // namespace zinf::cpu
