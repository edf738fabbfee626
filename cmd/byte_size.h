// Memory sizes on the command line: "24G", "512MiB", "1.5T", "4096" (bytes).
#pragma once

#include <cstdint>
#include <string>

namespace zinf::cli {

// K/M/G/T (optionally followed by "B" or "iB") are binary multiples. Throws zinf::Error naming
// the option for anything else.
uint64_t ParseByteSize(const std::string& text, const std::string& option_name);

// "" when ParseByteSize accepts `text`, else what is wrong, without the option's name (for the
// parse-time check of --cpu-mem and --gpu-mem).
std::string ByteSizeProblem(const std::string& text);

// Total physical memory of this machine, from /proc/meminfo (0 when unknown).
uint64_t PhysicalMemoryBytes();

}  // namespace zinf::cli
