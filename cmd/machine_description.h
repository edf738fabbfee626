// What machine a measurement ran on, in one line for a plot's title: the CPU's model name as
// /proc/cpuinfo gives it, without the trademark marks.
#pragma once

#include <string>

namespace zinf::cli {

// The first "model name" of /proc/cpuinfo text, "(R)", "(TM)" and " CPU" dropped:
// "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz" → "Intel Xeon Platinum 8375C @ 2.90GHz".
// Empty when the text has none (ARM kernels name no model there).
std::string CpuModelName(const std::string& cpuinfo);

// This machine's, or "unknown CPU".
std::string CpuModelName();

}  // namespace zinf::cli
