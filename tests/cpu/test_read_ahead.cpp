// cpu::ReadAheadPlan walks its streams a chunk of each in turn within its budget; ProductSequence
// learns which product follows which; PlanReadAhead covers a thread's share of the next product in
// the kernels' order; pool threads with read-ahead pending still take every call.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <numeric>
#include <set>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/product_sequence.h"
#include "cpu/read_ahead.h"
#include "cpu/thread_pool.h"
#include "engine/quantized.h"

namespace zinf {

namespace {

// The byte offsets from `base` of every line the plan requests, in order.
std::vector<int64_t> Lines(cpu::ReadAheadPlan& plan, const std::byte* base) {
  std::vector<int64_t> offsets;
  while (plan.NextLines(3, [&](const std::byte* at) { offsets.push_back(at - base); })) {
  }
  return offsets;
}

Backend::Projection ProjectionOf(const std::vector<std::byte>& bytes, int64_t rows, int64_t cols) {
  Backend::Projection p;
  p.w = Weight{bytes.data(), DType::kI8, rows, cols, 0};
  return p;
}

}  // namespace

TEST_CASE("read-ahead: a chunk of each stream in turn, segments in order, within the budget") {
  std::vector<std::byte> buffer(1 << 16);
  const std::byte* base = buffer.data();
  cpu::ReadAheadPlan plan;
  // Two streams 4096 apart, 192 bytes each, read 128 bytes at a time.
  plan.Add({base, 4096, 2, 192, 128});
  plan.Add({base + 20000, 0, 1, 64, 64});
  plan.Add({base, 0, 0, 64, 64});  // no streams: left out
  plan.Start(1 << 20);
  CHECK(Lines(plan, base) == std::vector<int64_t>{0, 64, 4096, 4160, 128, 4224, 20000});
  CHECK_FALSE(plan.Step());

  plan.Start(3 * 64);  // the budget stops the walk, even within a step
  CHECK(Lines(plan, base) == std::vector<int64_t>{0, 64, 4096});
  plan.Start(64);
  std::vector<const std::byte*> one;
  plan.NextLines(8, [&](const std::byte* at) { one.push_back(at); });
  CHECK(one.size() == 1);

  plan.Clear();
  plan.Start(1 << 20);
  CHECK(Lines(plan, base).empty());
}

TEST_CASE("read-ahead: at most kMaxSegments segments") {
  std::vector<std::byte> buffer(1 << 12);
  cpu::ReadAheadPlan plan;
  for (int i = 0; i < cpu::ReadAheadPlan::kMaxSegments + 2; ++i)
    plan.Add({buffer.data() + 64 * i, 0, 1, 64, 64});
  plan.Start(1 << 20);
  CHECK(Lines(plan, buffer.data()).size() == cpu::ReadAheadPlan::kMaxSegments);
}

TEST_CASE("product sequence: what followed a call last time") {
  std::vector<std::byte> a(64 * 64), b(64 * 64), c(64 * 64);
  const Backend::Projection pa = ProjectionOf(a, 64, 64), pb = ProjectionOf(b, 48, 64),
                            pc = ProjectionOf(c, 16, 64);
  const Backend::Projection bc[] = {pb, pc};
  cpu::ProductSequence sequence;
  // Step 1: a, then b and c in one call, then c alone. Nothing is known yet.
  CHECK(sequence.Record({&pa, 1}) == nullptr);
  CHECK(sequence.Record(bc) == nullptr);
  CHECK(sequence.Record({&pc, 1}) == nullptr);
  // Step 2: each call now knows the next one.
  const cpu::ProductCall* after_a = sequence.Record({&pa, 1});
  REQUIRE(after_a != nullptr);
  CHECK(after_a->count == 2);
  CHECK(after_a->total_rows == 64);
  CHECK(after_a->weights[0].data == b.data());
  CHECK(after_a->weights[1].data == c.data());
  const cpu::ProductCall* after_bc = sequence.Record(bc);
  REQUIRE(after_bc != nullptr);
  CHECK(after_bc->count == 1);
  CHECK(after_bc->weights[0].data == c.data());
  const cpu::ProductCall* after_c = sequence.Record({&pc, 1});
  REQUIRE(after_c != nullptr);
  CHECK(after_c->weights[0].data == a.data());
  // A call between them that was not recorded (many tokens): d did not follow c.
  std::vector<std::byte> d(64 * 64);
  const Backend::Projection pd = ProjectionOf(d, 64, 64);
  sequence.Forget();
  CHECK(sequence.Record({&pd, 1}) == nullptr);
  const cpu::ProductCall* still_after_c = sequence.Record({&pc, 1});
  REQUIRE(still_after_c != nullptr);
  CHECK(still_after_c->weights[0].data == a.data());
}

TEST_CASE("read-ahead of a share of the next product: its rows, as the kernels walk them") {
  // Two int8 weights laid end to end: q (100 rows) then k (50 rows) of 128 columns.
  constexpr int64_t kCols = 128;
  const int64_t row_bytes = LayoutOf(DType::kI8, 1, kCols, 0).row_bytes();
  std::vector<std::byte> q(100 * row_bytes + 64), k(50 * row_bytes + 64);
  cpu::ProductCall next;
  next.weights[0] = Weight{q.data(), DType::kI8, 100, kCols, 0};
  next.weights[1] = Weight{k.data(), DType::kI8, 50, kCols, 0};
  next.count = 2;
  next.total_rows = 150;
  cpu::ReadAheadPlan plan;

  SECTION("one token, AVX-512 int8: its tiles' 8 streams a stride apart in each weight, then the "
          "next") {
    REQUIRE(cpu::OneTokenTileStreams(DType::kI8, cpu::CpuIsa::kAvx512) == 8);
    // The second half: q's rows 75..99, then k's rows 0..49.
    cpu::PlanReadAhead(next, 1, cpu::CpuIsa::kAvx512, 0.5, 1.0, 1 << 20, plan);
    std::vector<const std::byte*> lines;
    while (plan.NextLines(8, [&](const std::byte* at) { lines.push_back(at); })) {
    }
    // q: 25 rows -> step 3, 8 streams of 3 rows: row 0 of each stream first, then row 1.
    const int64_t lines_per_row = row_bytes / 64;
    for (int s = 0; s < 8; ++s)
      CHECK(lines[s * lines_per_row] == q.data() + (75 + 3 * s) * row_bytes);
    CHECK(lines[8 * lines_per_row] == q.data() + 76 * row_bytes);
    // k: 50 rows -> step 5 (odd, not 6), 8 streams of 5 rows.
    const size_t k_first = 24 * lines_per_row;
    REQUIRE(lines.size() == k_first + 40 * lines_per_row);
    for (int s = 0; s < 8; ++s)
      CHECK(lines[k_first + s * lines_per_row] == k.data() + (5 * s) * row_bytes);
    std::set<const std::byte*> unique(lines.begin(), lines.end());
    CHECK(unique.size() == lines.size());
  }

  SECTION("one token, AVX-512 int4: its tiles' 16 streams") {
    REQUIRE(cpu::OneTokenTileStreams(DType::kQ4, cpu::CpuIsa::kAvx512) == 16);
    const int64_t q4_row_bytes = LayoutOf(DType::kQ4, 1, kCols, 32).row_bytes();
    std::vector<std::byte> q4(100 * q4_row_bytes + 64);
    cpu::ProductCall q4_next;
    q4_next.weights[0] = Weight{q4.data(), DType::kQ4, 100, kCols, 32};
    q4_next.count = 1;
    q4_next.total_rows = 100;
    cpu::PlanReadAhead(q4_next, 1, cpu::CpuIsa::kAvx512, 0.0, 1.0, 1 << 20, plan);
    const std::vector<int64_t> offsets = Lines(plan, q4.data());
    // 100 rows -> step 5 (6 is even), 16 streams of 5 rows; rows of 64 bytes, a line each.
    REQUIRE(q4_row_bytes == 64);
    REQUIRE(offsets.size() == 80);
    for (int s = 0; s < 16; ++s) CHECK(offsets[s] == 5 * s * q4_row_bytes);
    CHECK(offsets[16] == q4_row_bytes);
  }

  SECTION("one token, AVX2 int8: 8 streams") {
    cpu::PlanReadAhead(next, 1, cpu::CpuIsa::kAvx2, 0.0, 0.5, 1 << 20, plan);  // q's rows 0..74
    std::vector<int64_t> offsets = Lines(plan, q.data());
    // 75 rows -> step 9, 8 streams of 9 rows, a row of each in turn.
    const int64_t lines_per_row = row_bytes / 64;
    REQUIRE(offsets.size() == static_cast<size_t>(72 * lines_per_row));
    for (int s = 0; s < 8; ++s) CHECK(offsets[s * lines_per_row] == 9 * s * row_bytes);
    CHECK(offsets[8 * lines_per_row] == row_bytes);
  }

  SECTION("AVX2 int8, up to the one-token tiles' tokens: their 8 streams; one more: the rows in "
          "order") {
    const int64_t lines_per_row = row_bytes / 64;
    const int64_t most = cpu::OneTokenTileMaxTokens(DType::kI8, cpu::CpuIsa::kAvx2);
    REQUIRE(most > 1);
    cpu::PlanReadAhead(next, most, cpu::CpuIsa::kAvx2, 0.0, 0.5, 1 << 20, plan);
    std::vector<int64_t> offsets = Lines(plan, q.data());
    REQUIRE(offsets.size() == static_cast<size_t>(72 * lines_per_row));
    for (int s = 0; s < 8; ++s) CHECK(offsets[s * lines_per_row] == 9 * s * row_bytes);
    cpu::PlanReadAhead(next, most + 1, cpu::CpuIsa::kAvx2, 0.0, 0.5, 1 << 20, plan);
    offsets = Lines(plan, q.data());
    REQUIRE(offsets.size() == static_cast<size_t>(75 * lines_per_row));
    CHECK(offsets[lines_per_row] == row_bytes);
  }

  SECTION("a few tokens: the rows in order") {
    cpu::PlanReadAhead(next, 4, cpu::CpuIsa::kAvx512, 0.0, 0.5, 1 << 20, plan);  // q's rows 0..74
    std::vector<int64_t> offsets = Lines(plan, q.data());
    std::vector<int64_t> expected(75 * row_bytes / 64);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i) * 64;
    CHECK(offsets == expected);
  }
}

TEST_CASE("thread pool: threads with read-ahead pending take every call") {
  std::vector<std::byte> weights(8 << 20);  // outlives the pool, whose threads read ahead in it
  cpu::ThreadPool pool(3);
  std::vector<int64_t> values(4096);
  for (int call = 0; call < 500; ++call) {
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(
        static_cast<int64_t>(values.size()),
        [&](int64_t begin, int64_t end) {
          int64_t part = 0;
          for (int64_t i = begin; i < end; ++i) part += i + call;
          sum += part;
          // Every thread leaves with megabytes to read ahead.
          cpu::ReadAheadPlan& plan = cpu::ThisThreadReadAhead();
          plan.Clear();
          plan.Add({weights.data(), 1 << 19, 16, 1 << 19, 4096});
          plan.Start(8 << 20);
        },
        64);
    const int64_t n = static_cast<int64_t>(values.size());
    REQUIRE(sum == n * (n - 1) / 2 + n * call);
  }
  cpu::ThisThreadReadAhead().Clear();
}

}  // namespace zinf
