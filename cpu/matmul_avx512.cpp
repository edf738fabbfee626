// The 8-lane dot product of the float kernels (lane j accumulates elements k ≡ j mod 8 in order,
// one fma each) computed for two tokens per 512-bit register: the activations are laid out once
// per call as token pairs, [x_t[k..k+8) | x_t+1[k..k+8)] for each k, and each weight run of 8 is
// broadcast to both halves, so each half follows the AVX2 kernel's chain exactly. A tile of 6
// rows × 4 token pairs keeps 24 accumulators in registers. The token pairs come from L2 and the
// weight rows from L1, so tall tiles win: 6 × 4 measured 1.25× faster than 4 × 6 (one thread,
// 128 tokens, 768- and 2048-wide rows), and 8 × 3 in between. f16 and bf16 weights are converted
// to f32 in each tile or, where the start-up measurement found it faster (PairTiling) and a block
// has tiles enough to share it, widened a span at a time into a per-thread buffer that the f32
// tiles then read. Full tiles set their sums aside for cpu/pair_tile_outputs.h to write 48 rows
// at a time.
#include "cpu/matmul_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "cpu/dot.h"
#include "cpu/pair_tile_outputs.h"
#include "cpu/tiling.h"
#include "engine/error.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = 6;
constexpr int kTilePairs = 4;
// Token-pair chunks requested into L1 this many iterations ahead: each iteration takes 4 new lines
// of token pairs, which the hardware prefetchers did not bring in time (one thread, 128 tokens,
// 768 x 768: 112 -> 136-142 GFLOP/s; 2 and 8 ahead were slower than 4).
constexpr int kPairChunksAhead = 4;
// Larger next row groups are left to the hardware: prefetching them into L2 evicted token pairs
// (1.1B shape: 6% slower) where smaller ones gained (110M: 4%). A lone pair tile's products (up to
// 8 tokens: few pairs to evict) ask for the next group whatever its size (RunRowGroup).
constexpr int64_t kPrefetchedGroupBytes = int64_t{24} << 10;

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Token pairs of x, interleaved by tile: the 4 pairs of a tile (pairs 4i .. 4i + 3) lie chunk by
// chunk, pair p's chunk c at ((p / 4 · chunks + c) · 4 + p % 4) · 16, so a tile's pairs are one
// ascending stream rather than four (one thread, 128 tokens: ~1.05-1.1x on 768 x 768 and
// 768 x 2048). An odd last token is paired with zeros (its second results are never stored).
void PackPairRange(const float* x, int64_t x_stride, int64_t num_tokens, int64_t chunks,
                   int64_t pair_begin, int64_t pair_end, float* pairs) {
  for (int64_t p = pair_begin; p < pair_end; ++p) {
    const float* first = x + 2 * p * x_stride;
    const float* second = 2 * p + 1 < num_tokens ? first + x_stride : nullptr;
    float* dst = pairs + (p / 4 * chunks * 4 + p % 4) * 16;
    for (int64_t c = 0; c < chunks; ++c, dst += 64) {
      const __m256 high = second != nullptr ? _mm256_loadu_ps(second + 8 * c) : _mm256_setzero_ps();
      _mm512_storeu_ps(
          dst, _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(first + 8 * c)), high, 1));
    }
  }
}

// x's token pairs as PackPairRange lays them out, packed by this thread: kept per thread, grown
// only, and reused while the caller's x_version says x is unchanged.
const float* PackTokenPairs(const float* x, int64_t x_stride, int64_t num_tokens, int64_t chunks,
                            uint64_t x_version) {
  struct Packed {
    std::vector<TokenPairLine> pairs;
    const float* x = nullptr;
    int64_t x_stride = 0, num_tokens = 0, chunks = 0;
    uint64_t version = 0;
  };
  thread_local Packed packed;
  if (x_version != 0 && packed.version == x_version && packed.x == x &&
      packed.x_stride == x_stride && packed.num_tokens == num_tokens && packed.chunks == chunks) {
    return FloatsOf(packed.pairs.data());
  }
  const auto size = static_cast<size_t>(TokenPairLines(num_tokens, chunks * 8));
  if (packed.pairs.size() < size) packed.pairs.resize(size);
  PackPairRange(x, x_stride, num_tokens, chunks, 0, (num_tokens + 1) / 2,
                FloatsOf(packed.pairs.data()));
  packed.x = x;
  packed.x_stride = x_stride;
  packed.num_tokens = num_tokens;
  packed.chunks = chunks;
  packed.version = x_version;
  return FloatsOf(packed.pairs.data());
}

// The 8 weights [idx, idx + 8) as f32 in both 256-bit halves.
template <DType kDType>
inline __m512 BroadcastWeights8(const void* base, int64_t idx) {
  if constexpr (kDType == DType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(static_cast<const float*>(base) + idx));
  } else if constexpr (kDType == DType::kF16) {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    return _mm512_cvtph_ps(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  } else {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    const __m256i both =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(both), 16));
  }
}

// Elements [begin, end) (multiples of 8) of rows [row, row + rows) widened to f32 into `dst`,
// laid out as the rows themselves (row r's element k at dst[r · cols + k]). The widening is exact,
// so the f32 tile that then reads them computes the same bits as a tile that widens as it goes,
// but each weight is widened once per span instead of once per pair tile (PairTiling).
template <DType kDType>
void WidenRowSpan(const Weight& w, int64_t row, int rows, int64_t begin, int64_t end, float* dst) {
  static_assert(kDType != DType::kF32);
  for (int r = 0; r < rows; ++r) {
    const auto* source = static_cast<const uint16_t*>(w.data) + (row + r) * w.cols;
    float* widened = dst + r * w.cols;
    int64_t k = begin;
    // 16 at a time (one conversion per 16 weights, half the work of BroadcastWeights8's 8).
    for (; k + 16 <= end; k += 16) {
      const __m256i values = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + k));
      _mm512_storeu_ps(widened + k, kDType == DType::kF16
                                        ? _mm512_cvtph_ps(values)
                                        : _mm512_castsi512_ps(_mm512_slli_epi32(
                                              _mm512_cvtepu16_epi32(values), 16)));
    }
    for (; k < end; k += 8) {
      const __m512 both = BroadcastWeights8<kDType>(w.data, (row + r) * w.cols + k);
      _mm256_storeu_ps(widened + k, _mm512_castps512_ps256(both));
    }
  }
}

// Each 256-bit half reduced in ReduceLanes' order: lane 0 holds the low half's sum, lane 8 the
// high half's.
inline __m512 ReducePairLanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));  // l_i + l_i+4
  v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));  // (s04+s26), (s15+s37)
  return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

// The chunks [begin, end) of a row that one pass over a row group's tiles covers. A tile's
// accumulators wait in `state` between spans (storing and reloading them changes no bit).
struct ChunkSpan {
  int64_t begin = 0, end = 0;
  bool first = true, last = true;
  float* state = nullptr;  // kRows × kPairs registers, 64-byte aligned; unused for a whole row
};

// Rows [row, row + kRows) × token pairs [pair, pair + kPairs), accumulated in 8-lane chains over
// the span's chunks; `rows` holds the rows' weights as kLoad values, a row every row_stride.
template <DType kLoad, int kRows, int kPairs>
inline void PairTile(const float* packed, int64_t chunks, const ChunkSpan& span, const void* rows,
                     int64_t row_stride, int64_t pair, const char* l2_lines, int64_t num_l2_lines,
                     __m512 (&acc)[kRows][kPairs]) {
  // The loops over the tile are unrolled by hand-given pragmas: at -O2 GCC keeps `acc` in memory
  // otherwise, and the kernel runs at a third of its speed.
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) {
      acc[r][p] =
          span.first ? _mm512_setzero_ps() : _mm512_load_ps(span.state + (r * kPairs + p) * 16);
    }
  const float* xp = packed + pair * chunks * 16;  // pair is a multiple of 4
  const int64_t span_chunks = std::max<int64_t>(1, span.end - span.begin);
  const int64_t lines_per_chunk = (num_l2_lines + span_chunks - 1) / span_chunks;
  for (int64_t c = span.begin; c < span.end; ++c) {
    // A few lines of the next row group per iteration (its lines spread over the pass) rather
    // than a burst: a burst stalled on fill buffers that the token-pair prefetches need.
    for (int64_t line = (c - span.begin) * lines_per_chunk;
         line < std::min(num_l2_lines, (c - span.begin + 1) * lines_per_chunk); ++line)
      _mm_prefetch(l2_lines + line * 64, _MM_HINT_T1);
    __m512 wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) wv[r] = BroadcastWeights8<kLoad>(rows, r * row_stride + 8 * c);
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) {
      _mm_prefetch(reinterpret_cast<const char*>(xp + ((c + kPairChunksAhead) * 4 + p) * 16),
                   _MM_HINT_T0);
      const __m512 xv = _mm512_loadu_ps(xp + (c * 4 + p) * 16);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][p] = _mm512_fmadd_ps(xv, wv[r], acc[r][p]);
    }
  }
}

// ReduceLanes for the 8 tokens of rows r and r + 1 (4 pairs each) at once: the same three levels
// of additions, done across registers so that each add serves 2 to 4 sums instead of one. Lanes
// 4b .. 4b + 3 of the result: row r token b, row r token 4 + b, row r + 1 token b, row r + 1
// token 4 + b.
inline __m512 SumHalves(__m512 a, __m512 b) {  // l_i + l_i+4 of tokens 2a, 2a + 1, 2b, 2b + 1
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

inline __m512 SumQuarters(__m512 low, __m512 high) {  // per 128 bits: s04 + s26, s15 + s37 of both
  return _mm512_add_ps(_mm512_shuffle_ps(low, high, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(low, high, _MM_SHUFFLE(3, 2, 3, 2)));
}

inline __m512 ReduceTwoRowsOfFourPairs(const __m512 (&first)[4], const __m512 (&second)[4]) {
  const __m512 v = SumQuarters(SumHalves(first[0], first[1]), SumHalves(first[2], first[3]));
  const __m512 u = SumQuarters(SumHalves(second[0], second[1]), SumHalves(second[2], second[3]));
  return _mm512_add_ps(_mm512_shuffle_ps(v, u, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(v, u, _MM_SHUFFLE(3, 1, 3, 1)));
}

// `rows` as PairTile's; w (any dtype) gives the rows' tails past the last whole chunk. A full
// tile given `staged` leaves its reduced sums there (pair_outputs::WriteStagedSet writes them).
template <DType kLoad, int kRows, int kPairs>
void RunTile(const float* x, int64_t x_stride, int64_t num_tokens, const float* packed,
             int64_t chunks, const void* rows, const Weight& w, const Weight& bias, float* out,
             int64_t out_stride, int64_t row, int64_t pair, const ChunkSpan& span,
             const char* l2_lines = nullptr, int64_t num_l2_lines = 0, __m512* staged = nullptr) {
  __m512 acc[kRows][kPairs];
  PairTile<kLoad, kRows, kPairs>(packed, chunks, span, rows, w.cols, pair, l2_lines, num_l2_lines,
                                 acc);
  if (!span.last) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
      for (int p = 0; p < kPairs; ++p)
        _mm512_store_ps(span.state + (r * kPairs + p) * 16, acc[r][p]);
    return;
  }
  const int64_t body = chunks * 8;
  const int64_t first_token = 2 * pair;
  if constexpr (kPairs == 4 && kRows % 2 == 0) {
    if (body == w.cols && first_token + 8 <= num_tokens) {
      if (staged != nullptr) {
        for (int r = 0; r < kRows; r += 2)
          staged[r / 2] = ReduceTwoRowsOfFourPairs(acc[r], acc[r + 1]);
        return;
      }
      for (int r = 0; r < kRows; r += 2) {
        alignas(64) float sums[16];
        _mm512_store_ps(sums, ReduceTwoRowsOfFourPairs(acc[r], acc[r + 1]));
        const float b0 = bias ? WeightValue(bias, row + r) : 0.0f;
        const float b1 = bias ? WeightValue(bias, row + r + 1) : 0.0f;
        float* o = out + first_token * out_stride + row + r;
        for (int b = 0; b < 4; ++b) {
          o[b * out_stride] = sums[4 * b] + b0;
          o[(4 + b) * out_stride] = sums[4 * b + 1] + b0;
          o[b * out_stride + 1] = sums[4 * b + 2] + b1;
          o[(4 + b) * out_stride + 1] = sums[4 * b + 3] + b1;
        }
      }
      return;
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const float b = bias ? WeightValue(bias, row + r) : 0.0f;
    for (int p = 0; p < kPairs; ++p) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, ReducePairLanes(acc[r][p]));
      for (int h = 0; h < 2; ++h) {
        const int64_t t = first_token + 2 * p + h;
        if (t >= num_tokens) break;
        out[t * out_stride + row + r] =
            AddDotTail(lanes[8 * h], x + t * x_stride, w, row + r, body) + b;
      }
    }
  }
}

// The tile shapes by (rows, pairs) at run time: full tiles, then the edges. The tiles read the
// weights as kLoad: kDType itself, or f32 widened a span at a time. The last span's first
// staged_tiles tiles leave their sums at `staged` (null: every tile stores its own); row_end is
// where the rows being multiplied end.
template <DType kDType, DType kLoad, int kRows>
void RunRowGroup(const float* x, int64_t x_stride, int64_t num_tokens, const float* packed,
                 int64_t chunks, const Weight& w, const Weight& bias, float* out,
                 int64_t out_stride, int64_t row, int64_t row_end, int64_t pair_begin,
                 int64_t pair_end, int64_t span_bytes, __m512* staged, int64_t staged_tiles) {
  // The next row group's weights are brought into L2 a slice per pair tile, so that its first
  // pass does not wait on DRAM (the weights are read once per call; the pairs are in L2 already).
  constexpr int64_t kElementBytes = kDType == DType::kF32 ? 4 : 2;
  const char* next_rows = static_cast<const char*>(w.data) + (row + kRows) * w.cols * kElementBytes;
  const int64_t next_bytes = kRows * w.cols * kElementBytes;
  const int64_t tiles = std::max<int64_t>(1, (pair_end - pair_begin) / kTilePairs);
  // A lone tile (up to 8 tokens: decode of a few sequences) reads every weight once per product,
  // so the whole next group is asked for, spread over its pass: one thread, Zen 4, 1B-shape rows
  // from DRAM, 8 tokens 15-16 -> 21-23 GB/s, 6 tokens 14-16 -> 18-20, 4 tokens 16-17 -> 17-18.
  const bool lone_tile = pair_end - pair_begin <= kTilePairs;
  const int64_t next_lines = next_bytes <= kPrefetchedGroupBytes || lone_tile ? next_bytes / 64 : 0;
  const int64_t lines_per_tile = (next_lines + tiles - 1) / tiles;
  // Long rows in spans, so that the group's weights stay in L1 while every pair tile passes. A
  // lone tile reads each weight once, so it takes whole rows: in spans each span's weights came
  // from DRAM with only the next group requested (one thread, Emerald Rapids, 8 tokens from DRAM,
  // 2048- and 5632-wide rows: 1.31-1.46x).
  constexpr int64_t kLoadBytes = kLoad == DType::kF32 ? 4 : 2;
  const int64_t group_bytes = kRows * chunks * 8 * kLoadBytes;
  const int64_t span_count = span_bytes > 0 && !lone_tile && group_bytes > 2 * span_bytes
                                 ? (group_bytes + span_bytes - 1) / span_bytes
                                 : 1;
  // At least one span, even an empty one: a row shorter than 8 is all tail, and its tiles must
  // still run to write it.
  const int64_t span_chunks = std::max<int64_t>(1, (chunks + span_count - 1) / span_count);
  // In spans, a span's first tile waited on L3 for the span's weights (1.8-3x a later tile's
  // time), so the span's last kRows tiles each ask for one row of what the next span reads: this
  // group's next span, or after its last the next group's first (when the whole next group is
  // not asked for already). Emerald Rapids, one thread, 512 tokens: 2048 x 2048 1.06x, 5632 x
  // 2048 1.04x, 2048 x 5632 level.
  struct Lines {
    const char* first = nullptr;
    int64_t count = 0;
  };
  const auto next_span_row = [&](const ChunkSpan& span, int64_t tile) {
    const int64_t r = tile - (tiles - kRows);
    if (span_count == 1 || r < 0) return Lines{};
    int64_t group_row = row, chunk = span.end;
    if (span.last) {
      if (next_lines > 0 || row + 2 * kRows > row_end) return Lines{};
      group_row = row + kRows;
      chunk = 0;
    }
    const char* start =
        static_cast<const char*>(w.data) + ((group_row + r) * w.cols + chunk * 8) * kElementBytes;
    const char* line = start - reinterpret_cast<uintptr_t>(start) % 64;
    const int64_t bytes = start - line + std::min(span_chunks, chunks - chunk) * 8 * kElementBytes;
    return Lines{line, (bytes + 63) / 64};
  };
  struct alignas(64) Register {
    float lanes[16];
  };
  thread_local std::vector<Register> states;
  const auto state_size = static_cast<size_t>((tiles + 1) * kRows * kTilePairs);
  if (span_count > 1 && states.size() < state_size) states.resize(state_size);
  constexpr bool kWidens = kLoad != kDType;
  struct WidenedRows;
  const void* rows = static_cast<const char*>(w.data) + row * w.cols * kElementBytes;
  float* widened = nullptr;
  if constexpr (kWidens) {
    widened = reinterpret_cast<float*>(
        AlignedThreadScratch<WidenedRows>(static_cast<size_t>(kRows * w.cols) * sizeof(float)));
    rows = widened;
  }
  for (int64_t begin = 0; begin < std::max<int64_t>(chunks, 1); begin += span_chunks) {
    ChunkSpan span{begin, std::min(chunks, begin + span_chunks), begin == 0,
                   begin + span_chunks >= chunks, nullptr};
    if constexpr (kWidens)
      WidenRowSpan<kDType>(w, row, kRows, span.begin * 8, span.end * 8, widened);
    int64_t p = pair_begin;
    int64_t tile = 0;
    for (int64_t prefetched = 0; p + kTilePairs <= pair_end; p += kTilePairs, ++tile) {
      // The next group is prefetched during the last span, when this group's weights are done.
      const int64_t lines = span.last ? std::min(lines_per_tile, next_lines - prefetched) : 0;
      const Lines requested =
          lines > 0 ? Lines{next_rows + prefetched * 64, lines} : next_span_row(span, tile);
      if (span_count > 1) span.state = states[tile * kRows * kTilePairs].lanes;
      __m512* sums = staged != nullptr && span.last && tile < staged_tiles
                         ? staged + tile * pair_outputs::kTileRegisters
                         : nullptr;
      RunTile<kLoad, kRows, kTilePairs>(x, x_stride, num_tokens, packed, chunks, rows, w, bias, out,
                                        out_stride, row, p, span, requested.first, requested.count,
                                        sums);
      prefetched += lines;
    }
    if (span_count > 1) span.state = states[tile * kRows * kTilePairs].lanes;
    // An edge tile alone (fewer than kTilePairs pairs in all) prefetches as a full one would.
    const int64_t edge_lines = tile == 0 && span.last ? next_lines : 0;
    auto edge = [&]<int kPairs>() {
      RunTile<kLoad, kRows, kPairs>(x, x_stride, num_tokens, packed, chunks, rows, w, bias, out,
                                    out_stride, row, p, span, next_rows, edge_lines);
    };
    static_assert(kTilePairs == 4, "the edge cases below cover 1 to 3 pairs");
    switch (pair_end - p) {
      case 1: edge.template operator()<1>(); break;
      case 2: edge.template operator()<2>(); break;
      case 3: edge.template operator()<3>(); break;
      default: break;
    }
  }
}

// Token pairs per block: blocks stay in L2 while every row tile passes over them.
int64_t PairBlock(int64_t chunks, const PairTiling& tiling) {
  return std::max<int64_t>(kTilePairs, tiling.block_bytes / std::max<int64_t>(chunks * 64, 1) /
                                           kTilePairs * kTilePairs);
}

template <DType kDType, DType kLoad>
void MatMulPairs(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                 const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                 int64_t row_end, TokenPairSource pairs_from, const PairTiling& tiling) {
  const int64_t chunks = w.cols / 8;
  const float* packed = pairs_from.pairs != nullptr
                            ? FloatsOf(pairs_from.pairs)
                            : PackTokenPairs(x, x_stride, num_tokens, chunks, pairs_from.x_version);
  const int64_t pairs = (num_tokens + 1) / 2;
  const int64_t block = PairBlock(chunks, tiling);
  static_assert(kTileRows == pair_outputs::kGroupRows);
  for (int64_t pair_begin = 0; pair_begin < pairs; pair_begin += block) {
    const int64_t pair_end = std::min(pairs, pair_begin + block);
    // The full tiles whose 8 tokens all exist, in rows without a tail, set their sums aside for
    // pair_outputs::WriteStagedSet, a set of row groups at a time.
    const int64_t staged_tiles =
        chunks * 8 == w.cols
            ? std::min((pair_end - pair_begin) / kTilePairs,
                       std::max<int64_t>(0, num_tokens / 2 - pair_begin) / kTilePairs)
            : 0;
    struct StagedSums;
    auto* staged = reinterpret_cast<__m512*>(AlignedThreadScratch<StagedSums>(static_cast<size_t>(
        pair_outputs::kSetGroups * staged_tiles * sizeof(__m512) * pair_outputs::kTileRegisters)));
    int64_t r = row_begin;
    while (r + kTileRows <= row_end) {
      const int64_t set_row = r;
      int64_t groups = 0;
      for (; groups < pair_outputs::kSetGroups && r + kTileRows <= row_end;
           ++groups, r += kTileRows) {
        __m512* group_sums = staged_tiles > 0
                                 ? staged + groups * staged_tiles * pair_outputs::kTileRegisters
                                 : nullptr;
        RunRowGroup<kDType, kLoad, kTileRows>(x, x_stride, num_tokens, packed, chunks, w, bias, out,
                                              out_stride, r, row_end, pair_begin, pair_end,
                                              tiling.span_bytes, group_sums, staged_tiles);
      }
      if (staged_tiles > 0) {
        pair_outputs::WriteStagedSet({staged, staged_tiles, groups}, 2 * pair_begin, set_row, bias,
                                     out, out_stride);
      }
    }
    for (; r < row_end; ++r) {
      RunRowGroup<kDType, kLoad, 1>(x, x_stride, num_tokens, packed, chunks, w, bias, out,
                                    out_stride, r, row_end, pair_begin, pair_end, tiling.span_bytes,
                                    nullptr, 0);
    }
  }
}

// MatMulPairs with the tiling's span size, its 16-bit rows widened per span where it says so.
template <DType kDType>
void MatMulPairsTiled(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end, TokenPairSource pairs_from, const PairTiling& tiling) {
  if constexpr (kDType != DType::kF32) {
    // Rows widened a span at a time serve every pair tile of a block; widened in a burst before
    // the tiles run, they wait on memory. With 2 tiles or fewer (under 24 tokens, or rows too
    // wide for a block of 24) converting in each tile was faster: f16 from DRAM, one thread, old
    // and new code in alternating calls: 2 and 8 tokens 1.33-1.59x (2048 x 5632, 5632 x 2048,
    // 5120 x 13824), 16 tokens 1.20-1.25x, 5120 x 13824 (blocks of 16 tokens) at 24-64 tokens
    // 1.18-1.32x; 3 or more tiles level with widening or slower (2048 x 5632, 32 tokens: 0.91x).
    const int64_t pairs = (num_tokens + 1) / 2;
    const int64_t tiles = std::min(pairs, PairBlock(w.cols / 8, tiling)) / kTilePairs;
    if ((kDType == DType::kF16 ? tiling.widen_f16 : tiling.widen_bf16) &&
        tiles >= tiling.widen_min_tiles) {
      return MatMulPairs<kDType, DType::kF32>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                              row_begin, row_end, pairs_from, tiling);
    }
  }
  MatMulPairs<kDType, kDType>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end,
                              pairs_from, tiling);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void MatMulRowsAvx512Tiled(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end, TokenPairSource pairs_from, const PairTiling& tiling) {
  switch (w.dtype) {
    case DType::kF32:
      return MatMulPairsTiled<DType::kF32>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                           row_begin, row_end, pairs_from, tiling);
    case DType::kF16:
      return MatMulPairsTiled<DType::kF16>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                           row_begin, row_end, pairs_from, tiling);
    case DType::kBF16:
      return MatMulPairsTiled<DType::kBF16>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                            row_begin, row_end, pairs_from, tiling);
    case DType::kI8:
    case DType::kQ4: break;
  }
  Fail("MatMulRowsAvx512: {} weights go to the quantized kernels", DTypeName(w.dtype));
}

void MatMulRowsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end, TokenPairSource pairs_from) {
  MatMulRowsAvx512Tiled(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end,
                        pairs_from, CurrentPairTiling());
}

int64_t TokenPairLines(int64_t num_tokens, int64_t cols) {
  const int64_t pairs = (num_tokens + 1) / 2;
  return (pairs + kTilePairs - 1) / kTilePairs * kTilePairs * (cols / 8);
}

void PackTokenPairsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, int64_t cols,
                          int64_t pair_begin, int64_t pair_end, TokenPairLine* pairs) {
  PackPairRange(x, x_stride, num_tokens, cols / 8, pair_begin, pair_end, FloatsOf(pairs));
}

}  // namespace zinf::cpu
