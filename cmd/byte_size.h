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

// The DRAM budget when --cpu-mem is not given: the memory available now (/proc/meminfo's
// MemAvailable: free plus reclaimable page cache) less a reserve for the kernel, the process's own
// allocations beyond the plan and what other processes grow into — max(1 GiB, 1/16 of the
// physical memory; half of what is available when that is less). A plan sized to all of MemTotal
// was OOM-killed (23.1 of 23.5 GiB planned). 0 when /proc/meminfo is unreadable.
uint64_t DefaultCpuMemBytes();

}  // namespace zinf::cli
