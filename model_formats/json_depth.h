// A nesting-depth limit for untrusted JSON: nlohmann's parser is iterative, but copying, dumping
// (in error messages) and walking a parsed value recurse once per level, so a file of a million
// '[' overflows the stack. Each parser checks the text with this before parsing it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace zinf::formats {

// Far deeper than any real config, manifest, safetensors header or tokenizer.json (under 10).
constexpr int kMaxJsonDepth = 128;

// The byte offset of the first '[' or '{' (outside strings) that opens level max_depth + 1, or
// nullopt when the text stays within max_depth. Malformed JSON is left for the parser to report.
std::optional<uint64_t> FindJsonNestingOver(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace zinf::formats
