// Parse-time checks of flag values: a bad value exits 2 (usage) before anything is loaded, with a
// message naming the flag. Per-request settings (--top-p, ...) are checked against
// engine/request_limits.h's table, so a flag and a prompt-file field are refused in the same words.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/request_limits.h"

namespace zinf::cli {

// An integer >= `min`. `note`, when given, says what leaving the flag out means (e.g. "leave the
// flag out for all cores"), since the default is often a value the flag itself refuses.
CLI::Validator IntAtLeast(int64_t min, const std::string& note = "");

// An integer in [0, 2^64) (seeds): CLI11 alone would read "-1" as 2^64 - 1.
CLI::Validator UnsignedInt();

// A finite number > 0 (rates, sizes in GB/s).
CLI::Validator PositiveNumber();
// A finite number >= 0 (periods in seconds); CLI11's NonNegativeNumber lets "nan" through.
CLI::Validator NonNegativeNumber();

// A per-request setting, with the engine's range and words.
CLI::Validator SettingCheck(RequestSetting setting);

// --shard: K/N with 0 <= K < N (cmd/shard.h), or none.
CLI::Validator ShardCheck();

// Exactly one of `choices`.
CLI::Validator OneOf(const std::vector<std::string>& choices);

// A memory size cmd/byte_size.h reads ("24G", "512MiB"), so a bad one fails while parsing, not
// after the model is opened.
CLI::Validator ByteSizeCheck();

}  // namespace zinf::cli
