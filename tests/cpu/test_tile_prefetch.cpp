// The one-token prefetch measurement: both settings are timed in turn, the faster one stays, the
// kernels' flag follows the product being run, and a near tie keeps the prefetches.
#include <catch2/catch.hpp>

#include "cpu/tile_prefetch.h"

namespace zinf {

namespace {

// Runs products of `cols`-wide f16 rows (row widths no model here has, so that no other test's
// products share the measurement) until decided; `seconds(prefetch)` is what each takes.
template <typename Seconds>
bool Decide(int64_t cols, Seconds seconds, int* products) {
  bool tried[2] = {false, false};
  for (*products = 0; *products < 1000; ++*products) {
    const cpu::PrefetchTrial trial = cpu::BeginOneTokenProduct(DType::kF16, cols);
    CHECK(cpu::PrefetchNextTile(DType::kF16, 1) == trial.prefetch);
    if (trial.key < 0) {
      CHECK(tried[0]);
      CHECK(tried[1]);
      return trial.prefetch;
    }
    tried[trial.prefetch] = true;
    cpu::EndOneTokenProduct(trial, seconds(trial.prefetch), 1e6);
  }
  FAIL("no decision after 1000 products");
  return true;
}

}  // namespace

TEST_CASE("one-token prefetch: the faster setting stays, whichever it is") {
  int products = 0;
  CHECK_FALSE(Decide(
      1001, [](bool prefetch) { return prefetch ? 2e-3 : 1e-3; }, &products));
  CHECK(products < 40);
  CHECK(Decide(
      1003, [](bool prefetch) { return prefetch ? 1e-3 : 2e-3; }, &products));
  // The decision is kept per row width: the first width's products still run without.
  CHECK_FALSE(cpu::BeginOneTokenProduct(DType::kF16, 1001).prefetch);
  CHECK_FALSE(cpu::PrefetchNextTile(DType::kF16, 1));
  CHECK(cpu::BeginOneTokenProduct(DType::kF16, 1003).prefetch);
  CHECK(cpu::PrefetchNextTile(DType::kF16, 1));
}

TEST_CASE("one-token prefetch: one slow product does not decide, a near tie keeps prefetching") {
  int products = 0;
  int count = 0;
  // Without is faster, except for one product 100x slower: the median ignores it.
  CHECK_FALSE(Decide(
      1005, [&](bool prefetch) { return prefetch ? 2e-3 : (++count == 1 ? 1e-1 : 1e-3); },
      &products));
  // Without 1% faster: within the noise, so the prefetches stay.
  CHECK(Decide(
      1007, [](bool prefetch) { return prefetch ? 1.01e-3 : 1e-3; }, &products));
}

}  // namespace zinf
