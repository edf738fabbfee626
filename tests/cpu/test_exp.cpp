// cpu_exp.h's exp and the kernels built on it: close to std::exp, and the 8- and 16-lane forms,
// SiluMulRange and ExpScoresAndSum give the portable forms' bits at every level the CPU has.
#include <catch2/catch.hpp>

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention_rows.h"
#include "cpu/exp.h"
#include "cpu/silu.h"

namespace zinf {

namespace {

std::vector<float> ExpInputs() {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -87.0f, -86.99f, 88.0f, 87.99f, -1000.0f,
                          1000.0f, 1e-20f, -1e-20f, std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-4.0f, 4.0f);
  for (int i = 0; i < 4000; ++i) x.push_back(i % 2 ? wide(rng) : narrow(rng));
  return x;
}

__attribute__((target("avx2,fma"))) void Exp8Of(const std::vector<float>& x, std::vector<float>& out) {
  for (size_t i = 0; i + 8 <= x.size(); i += 8) _mm256_storeu_ps(&out[i], cpu::Exp8(_mm256_loadu_ps(&x[i])));
}

__attribute__((target("avx512f,avx2,fma"))) void Exp16Of(const std::vector<float>& x, std::vector<float>& out) {
  for (size_t i = 0; i + 16 <= x.size(); i += 16) _mm512_storeu_ps(&out[i], cpu::Exp16(_mm512_loadu_ps(&x[i])));
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

TEST_CASE("exp: the 8- and 16-lane forms give the scalar one's bits") {
  std::vector<float> x = ExpInputs();
  x.resize(x.size() / 16 * 16);
  std::vector<float> scalar(x.size());
  for (size_t i = 0; i < x.size(); ++i) scalar[i] = cpu::Exp(x[i]);
  if (cpu::BestCpuIsa() < cpu::CpuIsa::kAvx2) {
    WARN("no AVX2 on this CPU: the vector forms are not checked");
    return;
  }
  std::vector<float> vector(x.size(), -1.0f);
  Exp8Of(x, vector);
  CHECK(std::memcmp(scalar.data(), vector.data(), x.size() * sizeof(float)) == 0);
  if (cpu::BestCpuIsa() < cpu::CpuIsa::kAvx512) {
    WARN("no AVX-512 on this CPU: the 16-lane form is not checked");
    return;
  }
  std::fill(vector.begin(), vector.end(), -1.0f);
  Exp16Of(x, vector);
  CHECK(std::memcmp(scalar.data(), vector.data(), x.size() * sizeof(float)) == 0);
}

TEST_CASE("SiluMulRange: every level equals the portable one bit for bit, and silu · up") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t n : {1, 7, 8, 15, 16, 17, 1000, 1037}) {
    std::vector<float> gate(n), up(n), portable(n);
    for (float& v : gate) v = normal(rng);
    for (float& v : up) v = normal(rng);
    gate[0] = -0.0f;
    cpu::SiluMulRange(gate.data(), up.data(), portable.data(), n, cpu::CpuIsa::kPortable);
    for (int64_t i = 0; i < n; ++i) {
      const double expected = gate[i] / (1.0 + std::exp(-double{gate[i]})) * up[i];
      CHECK(portable[i] == Approx(expected).epsilon(1e-6).margin(1e-30));
    }
    for (cpu::CpuIsa isa : {cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512}) {
      if (isa > cpu::BestCpuIsa()) continue;
      INFO("n " << n << " level " << cpu::CpuIsaName(isa));
      std::vector<float> fast(n, -1.0f);
      cpu::SiluMulRange(gate.data(), up.data(), fast.data(), n, isa);
      CHECK(std::memcmp(portable.data(), fast.data(), n * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("ExpScoresAndSum: the AVX2 form equals the portable one bit for bit; the sum is exact") {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (int num_keys : {1, 7, 8, 9, 23, 64, 129}) {
    std::vector<float> scores(num_keys);
    for (float& v : scores) v = normal(rng);
    std::vector<float> portable = scores;
    const double portable_sum = cpu::ExpScoresAndSum(portable.data(), num_keys, cpu::CpuIsa::kPortable);
    float max_score = scores[0];
    for (float v : scores) max_score = std::max(max_score, v);
    double exact_sum = 0;
    for (int j = 0; j < num_keys; ++j) {
      const double exact = std::exp(double{scores[j]} - max_score);
      CHECK(portable[j] == Approx(exact).epsilon(1e-6).margin(1e-38));
      exact_sum += portable[j];
    }
    CHECK(portable_sum == Approx(exact_sum).epsilon(1e-12));
    if (cpu::BestCpuIsa() < cpu::CpuIsa::kAvx2) continue;
    std::vector<float> avx2 = scores;
    const double avx2_sum = cpu::ExpScoresAndSum(avx2.data(), num_keys, cpu::CpuIsa::kAvx2);
    INFO("keys " << num_keys);
    CHECK(std::memcmp(portable.data(), avx2.data(), num_keys * sizeof(float)) == 0);
    CHECK(std::memcmp(&portable_sum, &avx2_sum, sizeof(double)) == 0);
  }
}

}  // namespace zinf
