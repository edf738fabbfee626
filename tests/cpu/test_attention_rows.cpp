// The CPU attention's inner loops, softmax and CausalAttention (query and head blocks) at the AVX2
// and AVX-512 levels give the portable bits: f32, f16 and int8 caches, head sizes with and without
// a tail, key and chunk counts around the block sizes, NaN, infinite and zero scores.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_rows.h"
#include "cpu/thread_pool.h"
#include "engine/dtype.h"
#include "tests/cpu/isa_levels.h"

namespace zinf {

namespace {

using cpu::KvElement;
constexpr KvElement kKvElements[] = {KvElement::kF32, KvElement::kF16, KvElement::kI8};

const char* KvElementName(KvElement element) {
  return element == KvElement::kF32 ? "f32" : element == KvElement::kF16 ? "f16" : "int8";
}

std::vector<uint16_t> ToF16(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  ConvertFromF32(DType::kF16, values.data(), bits.data(), values.size());
  return bits;
}

}  // namespace

TEST_CASE("attention rows: the AVX2 loops equal the portable ones bit for bit", "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int head_dim : {8, 13, 64, 100, 128}) {
    const int num_kv_heads = 2, kv_head = 1, max_keys = 23;
    const int64_t row_stride = int64_t{num_kv_heads} * head_dim;
    std::vector<float> f32(max_keys * row_stride), scales(max_keys * num_kv_heads), query(head_dim);
    std::vector<int8_t> i8(max_keys * row_stride);
    for (float& v : f32) v = normal(rng);
    const std::vector<uint16_t> f16 = ToF16(f32);
    for (int8_t& v : i8) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    for (float& v : scales) v = 0.01f + 0.001f * static_cast<float>(rng() % 100);
    for (float& v : query) v = normal(rng);
    for (KvElement element : kKvElements) {
      cpu::KvRows rows;
      rows.row_stride = row_stride;
      rows.num_kv_heads = num_kv_heads;
      if (element == KvElement::kI8) {
        rows.i8 = i8.data();
        rows.scales = scales.data();
      } else if (element == KvElement::kF16) {
        rows.f16 = f16.data();
      } else {
        rows.f32 = f32.data();
      }
      for (int num_keys : {1, 3, 4, 5, 23}) {
        INFO("head_dim " << head_dim << " " << KvElementName(element) << " keys " << num_keys);
        std::vector<float> portable(num_keys), avx2(num_keys, -1.0f);
        cpu::ScoreKeys(query.data(), rows, kv_head, head_dim, num_keys, 0.125f, portable.data(),
                       cpu::CpuIsa::kPortable);
        cpu::ScoreKeys(query.data(), rows, kv_head, head_dim, num_keys, 0.125f, avx2.data(),
                       cpu::CpuIsa::kAvx2);
        CHECK(std::memcmp(portable.data(), avx2.data(), num_keys * sizeof(float)) == 0);
        if (element != KvElement::kI8) {  // f16 keys: the dot of their exact widenings
          double exact = 0;
          for (int d = 0; d < head_dim; ++d) {
            const int64_t at = row_stride * (num_keys - 1) + kv_head * head_dim + d;
            exact += double{query[d]} * (element == KvElement::kF16 ? F16ToF32(f16[at]) : f32[at]);
          }
          CHECK(portable[num_keys - 1] == Approx(exact * 0.125).epsilon(1e-4).margin(1e-5));
        }
        std::vector<float> out_portable(head_dim), out_avx2(head_dim, -1.0f);
        cpu::WeightValues(portable.data(), rows, kv_head, head_dim, num_keys, out_portable.data(),
                          cpu::CpuIsa::kPortable);
        cpu::WeightValues(portable.data(), rows, kv_head, head_dim, num_keys, out_avx2.data(),
                          cpu::CpuIsa::kAvx2);
        CHECK(std::memcmp(out_portable.data(), out_avx2.data(), head_dim * sizeof(float)) == 0);
      }
    }
  }
}

namespace {

void CheckSoftmaxLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int num_keys : {1, 7, 8, 9, 15, 16, 17, 23, 40, 129}) {
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<float> scores(num_keys);
      for (float& v : scores) v = kind == 5 ? 30 * normal(rng) : normal(rng);
      if (kind == 1) scores[0] = nan;             // the max is NaN
      if (kind == 2) scores[num_keys / 2] = nan;  // a NaN the max skips
      if (kind == 3) {                            // the max is a zero of either sign
        for (float& v : scores) v = -std::fabs(v);
        scores[num_keys - 1] = 0.0f;
        scores[num_keys / 3] = -0.0f;
      }
      if (kind == 4) scores[num_keys - 1] = (num_keys % 2 != 0) ? inf : -inf;
      INFO("keys " << num_keys << " kind " << kind);
      std::vector<float> portable = scores;
      const double portable_sum =
          cpu::ExpScoresAndSum(portable.data(), num_keys, cpu::CpuIsa::kPortable);
      std::vector<float> portable_weights = scores;
      cpu::Softmax(portable_weights.data(), num_keys, cpu::CpuIsa::kPortable);
      INFO("level " << cpu::CpuIsaName(isa));
      std::vector<float> other = scores;
      const double other_sum = cpu::ExpScoresAndSum(other.data(), num_keys, isa);
      CHECK(std::memcmp(portable.data(), other.data(), num_keys * sizeof(float)) == 0);
      CHECK(std::memcmp(&portable_sum, &other_sum, sizeof(double)) == 0);
      other = scores;
      cpu::Softmax(other.data(), num_keys, isa);
      CHECK(std::memcmp(portable_weights.data(), other.data(), num_keys * sizeof(float)) == 0);
      // Kind 5 spreads the scores over hundreds: the far ones' weights are 0, never subnormal.
      for (float w : portable_weights) CHECK(std::fpclassify(w) != FP_SUBNORMAL);
    }
  }
}

}  // namespace

TEST_CASE("softmax: AVX2 gives the portable bits, with NaN, infinite and zero scores", "[avx2]") {
  CheckSoftmaxLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("softmax: AVX-512 gives the portable bits, with NaN, infinite and zero scores",
          "[avx512]") {
  CheckSoftmaxLevel(cpu::CpuIsa::kAvx512);
}

namespace {

// Two slots' keys and values, f32, f16 (the f32 values rounded) or int8, for CausalAttention.
struct TestKv {
  static constexpr int kPositions = 100;
  int num_kv_heads, head_dim;
  std::vector<float> f32[2], scales[2];
  std::vector<uint16_t> f16[2];
  std::vector<int8_t> i8[2];

  TestKv(int kv_heads, int dim, std::mt19937& rng) : num_kv_heads(kv_heads), head_dim(dim) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < 2; ++i) {
      f32[i].resize(2 * kPositions * RowStride());
      i8[i].resize(f32[i].size());
      scales[i].resize(2 * kPositions * num_kv_heads);
      for (float& v : f32[i]) v = normal(rng);
      for (int8_t& v : i8[i]) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
      for (float& v : scales[i]) v = 0.01f + 0.001f * static_cast<float>(rng() % 100);
      f16[i] = ToF16(f32[i]);
    }
  }
  // Element `at` of slot's f32 and f16 arrays (keys from 0, values from kPositions rows on).
  void Set(int slot, int64_t at, float value) {
    f32[slot][at] = value;
    f16[slot][at] = F32ToF16(value);
  }
  int64_t RowStride() const { return int64_t{num_kv_heads} * head_dim; }
  // Keys (part 0) or values (part 1) of a slot.
  cpu::KvRows Rows(int part, int slot, KvElement element) const {
    cpu::KvRows rows;
    rows.row_stride = RowStride();
    rows.num_kv_heads = num_kv_heads;
    const int64_t offset = part * kPositions * RowStride();
    if (element == KvElement::kI8) {
      rows.i8 = i8[slot].data() + offset;
      rows.scales = scales[slot].data() + part * kPositions * num_kv_heads;
    } else if (element == KvElement::kF16) {
      rows.f16 = f16[slot].data() + offset;
    } else {
      rows.f32 = f32[slot].data() + offset;
    }
    return rows;
  }
};

// Attention of `num_heads` query heads (rows of q, num_heads × head_dim wide, outputs as wide)
// over kv's slots, stored as `element`; chunks and outputs are the caller's.
cpu::AttentionArgs ArgsOver(const TestKv& kv, const std::vector<float>& q, int num_heads,
                            KvElement element) {
  cpu::AttentionArgs args;
  const int64_t width = int64_t{num_heads} * kv.head_dim;
  args.q = q.data();
  args.q_stride = width;
  args.out_stride = width;
  args.shape = {num_heads, kv.num_kv_heads, kv.head_dim,
                1.0f / std::sqrt(static_cast<float>(kv.head_dim))};
  args.k_slot = [&kv, element](int slot) { return kv.Rows(0, slot, element); };
  args.v_slot = [&kv, element](int slot) { return kv.Rows(1, slot, element); };
  return args;
}

// CausalAttention at `isa` gives the portable level's bits (outputs of `size` floats).
void ExpectLevelGivesPortable(cpu::ThreadPool& pool, cpu::AttentionArgs args, size_t size,
                              cpu::CpuIsa isa) {
  std::vector<float> portable(size, -1.0f), other(size);
  args.out = portable.data();
  cpu::CausalAttention(pool, args, cpu::CpuIsa::kPortable);
  INFO("level " << cpu::CpuIsaName(isa));
  std::fill(other.begin(), other.end(), -2.0f);
  args.out = other.data();
  cpu::CausalAttention(pool, args, isa);
  CHECK(std::memcmp(portable.data(), other.data(), size * sizeof(float)) == 0);
}

// A prefill chunk beside a decode token, over chunk sizes around the AVX2 and AVX-512 query blocks.
void CheckQueryBlocksLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cpu::ThreadPool pool(2);
  const int num_heads = 4, num_kv_heads = 2;
  for (int head_dim : {8, 13, 24, 44, 64, 100, 128}) {
    TestKv kv(num_kv_heads, head_dim, rng);
    // An infinite value where some queries of a block see it and others do not (a zero-weight fma
    // with it would make NaN), and signed zeros.
    const float inf = std::numeric_limits<float>::infinity();
    kv.Set(0, (TestKv::kPositions + 7) * kv.RowStride() + head_dim, inf);
    kv.Set(0, (TestKv::kPositions + 2) * kv.RowStride() + 1, -0.0f);
    kv.Set(0, 3 * kv.RowStride(), -0.0f);
    const int64_t width = int64_t{num_heads} * head_dim;
    std::vector<float> q(32 * width);
    for (float& v : q) v = normal(rng);
    for (KvElement element : kKvElements) {
      cpu::AttentionArgs args = ArgsOver(kv, q, num_heads, element);
      for (int start : {0, 1, 3, 6, 13, 70}) {
        for (int tokens : {1, 2, 3, 4, 5, 7, 8, 9, 11, 16, 17, 23}) {
          INFO("head_dim " << head_dim << " " << KvElementName(element) << " start " << start
                           << " tokens " << tokens);
          // A prefill chunk and a decode token of another slot in one call.
          const SequenceChunk chunks[] = {{0, start, tokens, 0}, {1, 5 + start, 1, tokens}};
          args.chunks = chunks;
          const size_t size = (tokens + 1) * width;
          ExpectLevelGivesPortable(pool, args, size, isa);
        }
      }
    }
  }
}

// From AVX-512 up a thread transposes a KV head's keys once for the query blocks it scores in one
// call (the heads sharing it included): two prefill chunks of different slots in one call each
// get their own keys, and keys rewritten at the same addresses before the next call are read
// again. One KV head and one thread, so that each call's first block would otherwise find the
// keys the last one left.
void CheckTransposedKeysLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cpu::ThreadPool pool(1);
  const int num_heads = 2, num_kv_heads = 1;
  for (int head_dim : {13, 64}) {
    TestKv kv(num_kv_heads, head_dim, rng);
    const int64_t width = int64_t{num_heads} * head_dim;
    std::vector<float> q(80 * width);
    for (float& v : q) v = normal(rng);
    for (KvElement element : kKvElements) {
      cpu::AttentionArgs args = ArgsOver(kv, q, num_heads, element);
      INFO("head_dim " << head_dim << " " << KvElementName(element));
      const SequenceChunk two_slots[] = {{0, 0, 37, 0}, {1, 0, 40, 37}};
      args.chunks = two_slots;
      ExpectLevelGivesPortable(pool, args, 77 * width, isa);
      const SequenceChunk one_slot[] = {{0, 0, 40, 0}};
      args.chunks = one_slot;
      for (int rewrite = 0; rewrite < 2; ++rewrite) {
        INFO("rewrite " << rewrite);
        if (rewrite == 1) {  // new keys, same addresses
          for (int64_t at = 0; at < 40 * kv.RowStride(); ++at) {
            kv.Set(0, at, normal(rng));
            kv.i8[0][at] = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
          }
        }
        ExpectLevelGivesPortable(pool, args, 40 * width, isa);
      }
    }
  }
}

// Grouped-query attention at decode: the query heads sharing a KV head go through the block
// loops together (keys_step 0), up to 8 at a time, whenever the batch leaves enough blocks for
// the threads; per query the operations are the one-query loops', so every level agrees.
void CheckHeadBlocksLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cpu::ThreadPool pool(2);
  const int num_kv_heads = 2;
  for (int group : {2, 3, 4, 8, 12}) {
    const int num_heads = group * num_kv_heads;
    for (int head_dim : {8, 13, 44, 64, 100, 128}) {
      TestKv kv(num_kv_heads, head_dim, rng);
      const float inf = std::numeric_limits<float>::infinity();
      kv.Set(1, (TestKv::kPositions + 4) * kv.RowStride() + head_dim + 2, inf);  // a value
      kv.Set(0, (TestKv::kPositions + 2) * kv.RowStride() + 1, -0.0f);
      const int64_t width = int64_t{num_heads} * head_dim;
      std::vector<float> q(16 * width);
      for (float& v : q) v = normal(rng);
      for (KvElement element : kKvElements) {
        cpu::AttentionArgs args = ArgsOver(kv, q, num_heads, element);
        // Six decode tokens (enough blocks to group), with a prefill chunk among them; then a
        // lone decode token (too few blocks: head by head).
        const std::vector<SequenceChunk> batches[] = {{{0, 0, 1, 0},
                                                       {1, 4, 1, 1},
                                                       {0, 9, 3, 2},
                                                       {1, 31, 1, 5},
                                                       {0, 64, 1, 6},
                                                       {1, 70, 1, 7},
                                                       {0, 99, 1, 8}},
                                                      {{1, 57, 1, 0}}};
        for (const std::vector<SequenceChunk>& chunks : batches) {
          INFO("group " << group << " head_dim " << head_dim << " " << KvElementName(element)
                        << ", " << chunks.size() << " chunks");
          args.chunks = chunks;
          const size_t size = (chunks.back().token_offset + chunks.back().num_tokens) * width;
          ExpectLevelGivesPortable(pool, args, size, isa);
        }
      }
    }
  }
}

// Decode tokens of heads with a KV head each (no grouping): a thread's consecutive heads of one
// token walk the KV rows once for all of them (AttendHeadsInRowOrder), with each head's bits, on
// 1-3 threads (runs of every length), over key counts around multiples of 8.
void CheckUngroupedDecodeLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int threads : {1, 2, 3}) {
    cpu::ThreadPool pool(threads);
    for (int num_heads : {1, 2, 5, 12}) {
      for (int head_dim : {8, 13, 64, 100}) {
        TestKv kv(num_heads, head_dim, rng);
        if (num_heads > 1) {  // an infinite value of head 1, and a signed zero key
          kv.Set(0, (TestKv::kPositions + 3) * kv.RowStride() + head_dim + 1,
                 std::numeric_limits<float>::infinity());
        }
        kv.Set(1, 2 * kv.RowStride(), -0.0f);
        const int64_t width = int64_t{num_heads} * head_dim;
        std::vector<float> q(8 * width);
        for (float& v : q) v = normal(rng);
        for (KvElement element : kKvElements) {
          cpu::AttentionArgs args = ArgsOver(kv, q, num_heads, element);
          const std::vector<SequenceChunk> batches[] = {
              {{0, 0, 1, 0}},
              {{1, 7, 1, 0}},
              {{0, 8, 1, 0}, {1, 15, 1, 1}},
              {{0, 70, 1, 0}, {1, 3, 4, 1}, {0, 99, 1, 5}}};
          for (const std::vector<SequenceChunk>& chunks : batches) {
            INFO("threads " << threads << " heads " << num_heads << " head_dim " << head_dim << " "
                            << KvElementName(element) << ", " << chunks.size() << " chunks");
            args.chunks = chunks;
            const size_t size = (chunks.back().token_offset + chunks.back().num_tokens) * width;
            ExpectLevelGivesPortable(pool, args, size, isa);
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("attention: AVX2 gives the portable bits, its query blocks included", "[avx2]") {
  CheckQueryBlocksLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("attention: AVX-512 gives the portable bits, its query blocks included", "[avx512]") {
  CheckQueryBlocksLevel(cpu::CpuIsa::kAvx512);
}

TEST_CASE("attention: AVX-512 transposed keys are the call's and the slot's", "[avx512]") {
  CheckTransposedKeysLevel(cpu::CpuIsa::kAvx512);
}

TEST_CASE("attention: decode tokens of grouped heads give the portable bits in AVX2 head blocks",
          "[avx2]") {
  CheckHeadBlocksLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("attention: decode tokens of grouped heads give the portable bits in AVX-512 head blocks",
          "[avx512]") {
  CheckHeadBlocksLevel(cpu::CpuIsa::kAvx512);
}

TEST_CASE("attention: decode tokens of ungrouped heads give the portable bits in AVX2 row order",
          "[avx2]") {
  CheckUngroupedDecodeLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("attention: decode tokens of ungrouped heads give the portable bits in AVX-512 row order",
          "[avx512]") {
  CheckUngroupedDecodeLevel(cpu::CpuIsa::kAvx512);
}

}  // namespace zinf
