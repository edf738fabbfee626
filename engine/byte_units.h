// Sizes as people read them: in the binary unit that fits ("512 B", "26.1 MiB", "1.59 GiB").
#pragma once

#include <cstdint>
#include <string>

namespace zinf {

// Three significant digits in the largest unit (B, KiB, MiB, GiB, TiB) that keeps the number at
// least 1.
std::string FormatBytes(uint64_t bytes);

// `bytes` formatted like FormatBytes, with as many more digits as it takes to read differently
// from `other` (e.g. "1.000 GiB" beside "1.001 GiB"), so a message comparing two sizes never
// says a size is smaller than an equal-looking one.
std::string FormatBytesBeside(uint64_t bytes, uint64_t other);

}  // namespace zinf
