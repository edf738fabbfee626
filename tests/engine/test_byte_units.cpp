// Sizes in the unit that fits, and two sizes that differ never print alike.
#include <catch2/catch.hpp>

#include "engine/byte_units.h"

namespace zinf {

TEST_CASE("sizes are printed in the unit that fits, three significant digits") {
  CHECK(FormatBytes(0) == "0 B");
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(1536) == "1.50 KiB");
  CHECK(FormatBytes(26 * 1024 * 1024 + 100 * 1024) == "26.1 MiB");
  CHECK(FormatBytes(1707ull * 1024 * 1024) == "1.67 GiB");
  CHECK(FormatBytes(3ull << 40) == "3.00 TiB");
}

TEST_CASE("a size beside another shows the digits that tell them apart") {
  const uint64_t gib = 1ull << 30;
  CHECK(FormatBytesBeside(gib, gib + 4 * 1024 * 1024) == "1.000 GiB");
  CHECK(FormatBytesBeside(gib + 4 * 1024 * 1024, gib) == "1.004 GiB");
  CHECK(FormatBytesBeside(gib, gib) == "1.00 GiB");
  CHECK(FormatBytesBeside(gib, gib + 1) != FormatBytesBeside(gib + 1, gib));
  CHECK(FormatBytesBeside(gib, 2 * gib) == "1.00 GiB");
}

TEST_CASE("a rate below one token per second keeps its significant digits") {
  CHECK(FormatRate(48.24) == "48.2");
  CHECK(FormatRate(1.0) == "1.0");
  CHECK(FormatRate(0.14289) == "0.143");
  CHECK(FormatRate(0.025662) == "0.0257");  // Llama-2-70B int4 streamed from a slow disk
  CHECK(FormatRate(0.0) == "0.0");
}

}  // namespace zinf
