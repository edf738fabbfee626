// Packing quantized activations into token lanes (cpu/q8_token_lanes.h).
#include "cpu/q8_token_lanes.h"

#include <immintrin.h>

#include <cstring>

#include "cpu/isa.h"
#include "cpu/transpose_avx2.h"

namespace zinf::cpu {

namespace {

// One group's block b, lane by lane (any number of tokens; lanes past them keep the bias byte,
// the value 0, and scale 0).
void PackBlockByLane(const Q8Activations& xq, int64_t first_token, int tokens, int64_t b,
                     uint8_t bias, std::byte* block, float* scales) {
  uint32_t bias4;
  std::memset(&bias4, bias, 4);
  std::memset(block, bias, Q8TokenLanes::kValueBytes);
  for (int lane = 0; lane < tokens; ++lane) {
    const int8_t* values = xq.token_values(first_token + lane) + b * kQ8BlockElements;
    for (int k4 = 0; k4 < 8; ++k4) {
      uint32_t word;
      std::memcpy(&word, values + 4 * k4, 4);
      word ^= bias4;
      std::memcpy(block + 64 * k4 + 4 * lane, &word, 4);
    }
  }
  CopyLaneScales<Q8TokenLanes>(xq, first_token, tokens, b, scales);
}

#pragma GCC push_options
#pragma GCC target("avx2")

// Every block of a group of up to 16 tokens, 8 tokens (one 256-bit half of each row) at a time:
// each token's 8 dwords of the block in a register, an 8 × 8 dword transpose, so register k4 ends
// with the 8 tokens' dword k4 (zeros, then the bias, past the group's tokens). The same bytes as
// PackBlockByLane (which had taken 2% of a 110M int4 prefill profile on an AVX2-only Zen 4).
void PackGroupAvx2(const Q8Activations& xq, int64_t first_token, int tokens, uint8_t bias,
                   std::byte* blocks_out, float* scales_out) {
  const __m256i bias_bytes = _mm256_set1_epi8(static_cast<char>(bias));
  for (int64_t b = 0; b < xq.blocks; ++b) {
    std::byte* block = blocks_out + b * Q8TokenLanes::kValueBytes;
    for (int h = 0; 8 * h < Q8TokenLanes::kLanes; ++h) {
      __m256i dwords[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        dwords[t] = 8 * h + t < tokens
                        ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                              xq.token_values(first_token + 8 * h + t) + b * kQ8BlockElements))
                        : _mm256_setzero_si256();
      }
      Transpose8(dwords);
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(block + 64 * k4 + 32 * h),
                           _mm256_xor_si256(dwords[k4], bias_bytes));
      }
    }
    CopyLaneScales<Q8TokenLanes>(xq, first_token, tokens, b, scales_out + b * Q8TokenLanes::kLanes);
  }
}

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512dq")
// GCC 12's AVX-512 intrinsics pass undefined merge sources, which -Wmaybe-uninitialized reports
// once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Every block of a group of 9 to 16 tokens: each block is a 16 × 8 transpose of dwords, tokens t
// and t + 8 sharing a register (low and high halves; zeros past the group's tokens), transposed
// 8 × 8 in both halves at once, so register k4 ends with tokens 0-7's dword k4 then tokens 8-15's:
// row k4 of the block. The same bytes as PackBlockByLane, ~3× as fast (512 tokens × 768 values:
// 22 against 70 µs); the int8 AVX-512 kernel's groups are 15 tokens, the other kernels' 16.
void PackGroupAvx512(const Q8Activations& xq, int64_t first_token, int tokens, uint8_t bias,
                     std::byte* blocks_out, float* scales_out) {
  const __m512i bias_bytes = _mm512_set1_epi8(static_cast<char>(bias));
  const __m512i low_pairs = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i high_pairs = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  const int64_t token_bytes = xq.blocks * kQ8BlockElements;
  const __m512i scale_index =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(static_cast<int>(xq.blocks)));
  const __mmask16 token_mask = static_cast<__mmask16>((1u << tokens) - 1);
  const int8_t* first = xq.token_values(first_token);
  for (int64_t b = 0; b < xq.blocks; ++b) {
    const int8_t* values = first + b * kQ8BlockElements;
    __m512i rows[8];
    for (int i = 0; i < 8; ++i) {
      const __m256i low =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + i * token_bytes));
      const __m256i high =
          i + 8 < tokens
              ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + (i + 8) * token_bytes))
              : _mm256_setzero_si256();
      rows[i] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    }
    __m512i pairs[8], quads[8];
    for (int i = 0; i < 8; i += 2) {
      pairs[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
      pairs[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      quads[i] = _mm512_unpacklo_epi64(pairs[i], pairs[i + 2]);
      quads[i + 1] = _mm512_unpackhi_epi64(pairs[i], pairs[i + 2]);
      quads[i + 2] = _mm512_unpacklo_epi64(pairs[i + 1], pairs[i + 3]);
      quads[i + 3] = _mm512_unpackhi_epi64(pairs[i + 1], pairs[i + 3]);
    }
    // quads[q] (q < 4) holds tokens 0-3 (and 8-11) of dwords q and q + 4, quads[q + 4] tokens
    // 4-7 (12-15): the 128-bit lanes interleave into rows q and q + 4.
    std::byte* block = blocks_out + b * Q8TokenLanes::kValueBytes;
    for (int q = 0; q < 4; ++q) {
      const __m512i row_q = _mm512_permutex2var_epi64(quads[q], low_pairs, quads[q + 4]);
      const __m512i row_q4 = _mm512_permutex2var_epi64(quads[q], high_pairs, quads[q + 4]);
      _mm512_store_si512(block + 64 * q, _mm512_xor_si512(row_q, bias_bytes));
      _mm512_store_si512(block + 64 * (q + 4), _mm512_xor_si512(row_q4, bias_bytes));
    }
    float* scales = scales_out + b * Q8TokenLanes::kLanes;
    if (xq.scales != nullptr) {
      _mm512_storeu_ps(scales,
                       _mm512_mask_i32gather_ps(_mm512_setzero_ps(), token_mask, scale_index,
                                                xq.token_scales(first_token) + b, 4));
    } else {
      _mm512_storeu_ps(scales, _mm512_setzero_ps());
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

Q8TokenLanes PackQ8TokenLanes(const Q8Activations& xq, int64_t num_tokens, int group_tokens,
                              uint8_t bias) {
  const auto [lanes, out, all_scales] =
      LayOutTokenLanes<Q8TokenLanes>(xq.blocks, num_tokens, group_tokens);
  // The check keeps this callable on any CPU (the portable kernels never pack token lanes).
  static const CpuIsa best = BestCpuIsa();
  for (int64_t group = 0; group < lanes.groups; ++group) {
    const int tokens = lanes.tokens_in(group, num_tokens);
    const int64_t first_token = group * group_tokens;
    std::byte* group_blocks = out + group * xq.blocks * Q8TokenLanes::kValueBytes;
    float* group_scales = all_scales + group * xq.blocks * Q8TokenLanes::kLanes;
    if (best >= CpuIsa::kAvx512 && tokens > 8) {
      PackGroupAvx512(xq, first_token, tokens, bias, group_blocks, group_scales);
      continue;
    }
    if (best >= CpuIsa::kAvx2) {
      PackGroupAvx2(xq, first_token, tokens, bias, group_blocks, group_scales);
      continue;
    }
    for (int64_t b = 0; b < xq.blocks; ++b) {
      PackBlockByLane(xq, first_token, tokens, b, bias,
                      group_blocks + b * Q8TokenLanes::kValueBytes,
                      group_scales + b * Q8TokenLanes::kLanes);
    }
  }
  return lanes;
}

}  // namespace zinf::cpu
