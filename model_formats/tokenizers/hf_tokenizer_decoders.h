// tokenizer.json decoders (ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace, Sequence).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zinf::formats::hf {

// Turns token strings back into text, as the Rust library's decode_chain: each
// decoder maps the list of strings to a new list, and the caller joins the
// result. Immutable and thread-safe.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void DecodeChain(std::vector<std::string> &tokens) const = 0;
};

// The tokenizer.json "decoder" object; nullptr for JSON null. Throws
// zinf::Error naming the component type and `file` for a type zinf does not
// implement.
std::unique_ptr<Decoder> ParseDecoder(const nlohmann::json &json, const std::string &file);

}  // namespace zinf::formats::hf
