// cpu_exp.h's exp and the kernels built on it: close to std::exp, and the 8- and 16-lane forms,
// SiluMulRange and ExpScoresAndSum give the portable forms' bits at the [avx2] / [avx512] levels.
#include <catch2/catch.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention_rows.h"
#include "cpu/exp.h"
#include "cpu/silu.h"
#include "tests/cpu/isa_levels.h"

namespace zinf {

namespace {

std::vector<float> ExpInputs() {
  std::vector<float> x = {
      0.0f,  -0.0f,  1.0f,     -1.0f,   0.5f,   -87.0f,  -86.99f,
      88.0f, 87.99f, -1000.0f, 1000.0f, 1e-20f, -1e-20f, std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-4.0f, 4.0f);
  for (int i = 0; i < 4000; ++i) x.push_back(i % 2 ? wide(rng) : narrow(rng));
  return x;
}

__attribute__((target("avx2,fma"))) void Exp8Of(const std::vector<float>& x,
                                                std::vector<float>& out) {
  for (size_t i = 0; i + 8 <= x.size(); i += 8)
    _mm256_storeu_ps(&out[i], cpu::Exp8(_mm256_loadu_ps(&x[i])));
}

__attribute__((target("avx512f,avx2,fma"))) void Exp16Of(const std::vector<float>& x,
                                                         std::vector<float>& out) {
  for (size_t i = 0; i + 16 <= x.size(); i += 16)
    _mm512_storeu_ps(&out[i], cpu::Exp16(_mm512_loadu_ps(&x[i])));
}

}  // namespace

TEST_CASE("exp: within 2 ulp of std::exp over the clamped range, clamped outside it") {
  for (float x : ExpInputs()) {
    const double clamped = std::fmin(std::fmax(double{x}, -87.0), 88.0);
    const double exact = std::exp(clamped);
    INFO("x " << x);
    CHECK(std::fabs(cpu::Exp(x) - exact) <= 2.5 * std::numeric_limits<float>::epsilon() * exact);
  }
  CHECK(cpu::Exp(0.0f) == 1.0f);
  CHECK(cpu::Exp(-1000.0f) == cpu::Exp(-87.0f));
  CHECK(std::isfinite(cpu::Exp(1000.0f)));
}

namespace {

// ExpInputs() cut to whole 16-lane vectors, and the scalar exp of each.
struct LaneInputs {
  std::vector<float> x = ExpInputs(), scalar;
  LaneInputs() {
    x.resize(x.size() / 16 * 16);
    scalar.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) scalar[i] = cpu::Exp(x[i]);
  }
};

}  // namespace

TEST_CASE("exp: the 8-lane form gives the scalar one's bits", "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);
  const LaneInputs in;
  std::vector<float> vector(in.x.size(), -1.0f);
  Exp8Of(in.x, vector);
  CHECK(std::memcmp(in.scalar.data(), vector.data(), in.x.size() * sizeof(float)) == 0);
}

TEST_CASE("exp: the 16-lane form gives the scalar one's bits", "[avx512]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx512);
  const LaneInputs in;
  std::vector<float> vector(in.x.size(), -1.0f);
  Exp16Of(in.x, vector);
  CHECK(std::memcmp(in.scalar.data(), vector.data(), in.x.size() * sizeof(float)) == 0);
}

namespace {

struct SiluInput {
  std::vector<float> gate, up;
};

std::vector<SiluInput> SiluInputs() {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<SiluInput> inputs;
  for (int64_t n : {1, 7, 8, 15, 16, 17, 1000, 1037}) {
    SiluInput& in = inputs.emplace_back(SiluInput{std::vector<float>(n), std::vector<float>(n)});
    for (float& v : in.gate) v = normal(rng);
    for (float& v : in.up) v = normal(rng);
    in.gate[0] = -0.0f;
  }
  return inputs;
}

std::vector<float> PortableSiluMul(const SiluInput& in) {
  std::vector<float> out(in.gate.size());
  cpu::SiluMulRange(in.gate.data(), in.up.data(), out.data(), static_cast<int64_t>(out.size()),
                    cpu::CpuIsa::kPortable);
  return out;
}

void CheckSiluMulLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  for (const SiluInput& in : SiluInputs()) {
    const int64_t n = static_cast<int64_t>(in.gate.size());
    const std::vector<float> portable = PortableSiluMul(in);
    INFO("n " << n << " level " << cpu::CpuIsaName(isa));
    std::vector<float> fast(n, -1.0f);
    cpu::SiluMulRange(in.gate.data(), in.up.data(), fast.data(), n, isa);
    CHECK(std::memcmp(portable.data(), fast.data(), n * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("SiluMulRange: the portable form is silu · up") {
  for (const SiluInput& in : SiluInputs()) {
    const std::vector<float> portable = PortableSiluMul(in);
    for (size_t i = 0; i < portable.size(); ++i) {
      const double expected = in.gate[i] / (1.0 + std::exp(-double{in.gate[i]})) * in.up[i];
      CHECK(portable[i] == Approx(expected).epsilon(1e-6).margin(1e-30));
    }
  }
}

TEST_CASE("SiluMulRange: the AVX2 form equals the portable one bit for bit", "[avx2]") {
  CheckSiluMulLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("SiluMulRange: the AVX-512 form equals the portable one bit for bit", "[avx512]") {
  CheckSiluMulLevel(cpu::CpuIsa::kAvx512);
}

namespace {

// Normal scores for each key count, and the portable form's exps and sum of them.
struct ScoreRow {
  std::vector<float> scores, portable;
  double portable_sum;
};

std::vector<ScoreRow> ScoreRows() {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<ScoreRow> rows;
  for (int num_keys : {1, 7, 8, 9, 23, 64, 129}) {
    ScoreRow& row = rows.emplace_back();
    row.scores.resize(num_keys);
    for (float& v : row.scores) v = normal(rng);
    row.portable = row.scores;
    row.portable_sum = cpu::ExpScoresAndSum(row.portable.data(), num_keys, cpu::CpuIsa::kPortable);
  }
  return rows;
}

}  // namespace

TEST_CASE("ExpScoresAndSum: the portable form is exp(score − max); the sum is exact") {
  for (const ScoreRow& row : ScoreRows()) {
    const int num_keys = static_cast<int>(row.scores.size());
    float max_score = row.scores[0];
    for (float v : row.scores) max_score = std::max(max_score, v);
    double exact_sum = 0;
    for (int j = 0; j < num_keys; ++j) {
      const double exact = std::exp(double{row.scores[j]} - max_score);
      CHECK(row.portable[j] == Approx(exact).epsilon(1e-6).margin(1e-38));
      exact_sum += row.portable[j];
    }
    CHECK(row.portable_sum == Approx(exact_sum).epsilon(1e-12));
  }
}

TEST_CASE("ExpScoresAndSum: the AVX2 form equals the portable one bit for bit", "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);
  for (const ScoreRow& row : ScoreRows()) {
    const int num_keys = static_cast<int>(row.scores.size());
    std::vector<float> avx2 = row.scores;
    const double avx2_sum = cpu::ExpScoresAndSum(avx2.data(), num_keys, cpu::CpuIsa::kAvx2);
    INFO("keys " << num_keys);
    CHECK(std::memcmp(row.portable.data(), avx2.data(), num_keys * sizeof(float)) == 0);
    CHECK(std::memcmp(&row.portable_sum, &avx2_sum, sizeof(double)) == 0);
  }
}

}  // namespace zinf
