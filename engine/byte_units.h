// Sizes and rates as people read them: sizes in the binary unit that fits ("512 B", "26.1 MiB",
// "1.59 GiB"), rates with the digits that matter ("48.2", "0.143", "0.0257").
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

// A rate (tokens/s): one decimal from 1 up, three significant digits below, so a model streamed
// from disk at 0.0257 tok/s does not read "0.0 tok/s".
std::string FormatRate(double per_second);

}  // namespace zinf
