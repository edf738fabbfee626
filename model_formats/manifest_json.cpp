// manifest.json (format v1 to v3) ↔ Checkpoint: serialisation and field-by-field parsing.
#include "model_formats/manifest_json.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/json_depth.h"
#include "model_formats/zinf_format.h"

namespace zinf::formats {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;  // written in a fixed, readable key order: format and version first

constexpr const char* kFormatName = "zinf";
constexpr const char* kCreatedBy = "zinf 0.1.0";

const char* RopeScalingName(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::kNone: return "none";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kLlama3: return "llama3";
  }
  return "?";
}

ordered_json MoeToJson(const MoeConfig& moe) {
  return ordered_json{{"num_experts", moe.num_experts},
                      {"experts_per_token", moe.experts_per_token},
                      {"expert_ffn", moe.expert_ffn},
                      {"normalize_top_k", moe.normalize_top_k},
                      {"shared_expert_ffn", moe.shared_expert_ffn},
                      {"sparse_step", moe.sparse_step},
                      {"dense_layers", moe.dense_layers}};
}

ordered_json ConfigToJson(const ModelConfig& config) {
  const RopeScaling& rope = config.rope_scaling;
  ordered_json out{
      {"model_type", config.model_type},
      {"family", config.family == Family::kOpt ? "opt" : "llama"},
      {"vocab_size", config.vocab_size},
      {"hidden_size", config.hidden_size},
      {"intermediate_size", config.intermediate_size},
      {"num_layers", config.num_layers},
      {"num_heads", config.num_heads},
      {"num_kv_heads", config.num_kv_heads},
      {"head_dim", config.head_dim},
      {"max_position_embeddings", config.max_position_embeddings},
      {"norm_eps", config.norm_eps},
      {"rope_theta", config.rope_theta},
      {"rope_scaling",
       ordered_json{{"type", RopeScalingName(rope.type)},
                    {"factor", rope.factor},
                    {"low_freq_factor", rope.low_freq_factor},
                    {"high_freq_factor", rope.high_freq_factor},
                    {"original_max_position_embeddings", rope.original_max_position_embeddings}}},
      {"qkv_bias", config.qkv_bias},
      {"o_bias", config.o_bias},
      {"mlp_bias", config.mlp_bias},
      {"qk_norm", config.qk_norm},
      {"tie_word_embeddings", config.tie_word_embeddings},
      {"word_embed_proj_dim", config.word_embed_proj_dim},
      {"position_offset", config.position_offset},
      {"bos_token_id", config.bos_token_id},
      {"eos_token_ids", config.eos_token_ids},
  };
  if (config.is_moe()) out["moe"] = MoeToJson(config.moe);
  return out;
}

ordered_json ExtentToJson(const ExtentInfo& extent) {
  ordered_json tensors = ordered_json::array();
  for (const TensorInfo& tensor : extent.tensors) {
    ordered_json entry = {{"name", tensor.name}, {"dtype", DTypeName(tensor.dtype)}};
    if (tensor.group_size != 0) entry["group_size"] = tensor.group_size;
    entry["shape"] = tensor.shape;
    entry["offset"] = tensor.offset_in_extent;
    entry["size_bytes"] = tensor.size_bytes;
    if (tensor.xxh3) entry["xxh3"] = fmt::format("{:016x}", *tensor.xxh3);
    tensors.push_back(std::move(entry));
  }
  ordered_json out = {{"name", extent.name}, {"kind", ExtentKindName(extent.kind)}};
  if (extent.kind == ExtentKind::kLayer || extent.kind == ExtentKind::kExpert) {
    out["layer"] = extent.layer;
  }
  if (extent.kind == ExtentKind::kExpert) out["expert"] = extent.expert;
  out["offset"] = extent.offset;
  out["size_bytes"] = extent.size_bytes;
  out["padded_bytes"] = extent.padded_bytes;
  out["xxh3"] = fmt::format("{:016x}", extent.xxh3);
  out["tensors"] = std::move(tensors);
  return out;
}

// A JSON object being read, with its dotted path for messages ("extents[3].tensors[0]").
class Fields {
 public:
  Fields(const json& value, std::string path, const std::string& where)
      : value_(value), path_(std::move(path)), where_(where) {
    if (!value_.is_object()) Fail("{}: '{}' must be an object", where_, path_);
  }

  bool has(const char* key) const { return value_.contains(key) && !value_[key].is_null(); }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  const json& Get(const char* key) const {
    if (!has(key)) Fail("{}: field '{}' is missing", where_, name(key));
    return value_[key];
  }
  Fields Object(const char* key) const { return Fields(Get(key), name(key), where_); }
  std::string String(const char* key) const {
    const json& field = Get(key);
    if (!field.is_string()) Fail("{}: field '{}' must be a string", where_, name(key));
    return field.get<std::string>();
  }
  bool Bool(const char* key) const {
    const json& field = Get(key);
    if (!field.is_boolean()) Fail("{}: field '{}' must be true or false", where_, name(key));
    return field.get<bool>();
  }
  double Double(const char* key) const {
    const json& field = Get(key);
    if (!field.is_number()) Fail("{}: field '{}' must be a number", where_, name(key));
    return field.get<double>();
  }
  int64_t Int64(const json& field, const std::string& field_name) const {
    if (!field.is_number_integer()) Fail("{}: field '{}' must be an integer", where_, field_name);
    return field.get<int64_t>();
  }
  int Int(const char* key) const {
    int64_t value = Int64(Get(key), name(key));
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      Fail("{}: field '{}' is out of range: {}", where_, name(key), value);
    }
    return static_cast<int>(value);
  }
  int Int(const char* key, int fallback) const { return has(key) ? Int(key) : fallback; }
  uint64_t U64(const char* key) const {
    const json& field = Get(key);
    if (!field.is_number_unsigned()) {
      Fail("{}: field '{}' must be a non-negative integer", where_, name(key));
    }
    return field.get<uint64_t>();
  }
  const json& Array(const char* key) const {
    const json& field = Get(key);
    if (!field.is_array()) Fail("{}: field '{}' must be an array", where_, name(key));
    return field;
  }
  [[noreturn]] void Invalid(const char* key, const std::string& why) const {
    Fail("{}: field '{}' {}", where_, name(key), why);
  }
  const std::string& where() const { return where_; }

 private:
  const json& value_;
  std::string path_;
  const std::string& where_;
};

// A plain file name inside the checkpoint directory: no directories, no escaping it.
std::string PlainFileName(const Fields& fields, const char* key) {
  std::string file = fields.String(key);
  if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos) {
    fields.Invalid(key,
                   fmt::format("must name a file in the checkpoint directory, got '{}'", file));
  }
  return file;
}

// `quantized_allowed`: int8 and int4 are accepted too (per-tensor dtypes of version 2).
DType ParseDTypeField(const Fields& fields, const char* key, bool quantized_allowed) {
  std::string name = fields.String(key);
  std::optional<DType> dtype = ParseDType(name);
  if (!dtype || (IsQuantized(*dtype) && !quantized_allowed)) {
    fields.Invalid(key, fmt::format("is '{}', expected f32, f16 or bf16{}", name,
                                    quantized_allowed ? ", int8 or int4" : ""));
  }
  return *dtype;
}

RopeScaling ParseRopeScaling(const Fields& fields) {
  RopeScaling rope;
  std::string type = fields.String("type");
  if (type == "none") return rope;
  if (type == "linear") {
    rope.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    rope.type = RopeScalingType::kLlama3;
  } else {
    fields.Invalid("type", fmt::format("is '{}', expected none, linear or llama3", type));
  }
  rope.factor = fields.Double("factor");
  if (rope.type == RopeScalingType::kLlama3) {
    rope.low_freq_factor = fields.Double("low_freq_factor");
    rope.high_freq_factor = fields.Double("high_freq_factor");
    rope.original_max_position_embeddings = fields.Int("original_max_position_embeddings");
  }
  return rope;
}

ModelConfig ParseConfig(const Fields& fields) {
  ModelConfig config;
  config.model_type = fields.String("model_type");
  std::string family = fields.String("family");
  if (family != "llama" && family != "opt") {
    fields.Invalid("family", fmt::format("is '{}', expected llama or opt", family));
  }
  config.family = family == "opt" ? Family::kOpt : Family::kLlama;
  config.vocab_size = fields.Int("vocab_size");
  config.hidden_size = fields.Int("hidden_size");
  config.intermediate_size = fields.Int("intermediate_size");
  config.num_layers = fields.Int("num_layers");
  config.num_heads = fields.Int("num_heads");
  config.num_kv_heads = fields.Int("num_kv_heads");
  config.head_dim = fields.Int("head_dim");
  config.max_position_embeddings = fields.Int("max_position_embeddings");
  config.norm_eps = fields.Double("norm_eps");
  config.rope_theta = fields.Double("rope_theta");
  if (fields.has("rope_scaling"))
    config.rope_scaling = ParseRopeScaling(fields.Object("rope_scaling"));
  config.qkv_bias = fields.Bool("qkv_bias");
  config.o_bias = fields.Bool("o_bias");
  config.mlp_bias = fields.Bool("mlp_bias");
  config.qk_norm = fields.Bool("qk_norm");
  config.tie_word_embeddings = fields.Bool("tie_word_embeddings");
  config.word_embed_proj_dim = fields.Int("word_embed_proj_dim", 0);
  config.position_offset = fields.Int("position_offset", 0);
  config.bos_token_id = fields.Int("bos_token_id", -1);
  if (fields.has("eos_token_ids")) {
    const json& ids = fields.Array("eos_token_ids");
    for (size_t idx = 0; idx < ids.size(); ++idx) {
      int64_t id = fields.Int64(ids[idx], fmt::format("{}[{}]", fields.name("eos_token_ids"), idx));
      config.eos_token_ids.push_back(static_cast<int>(id));
    }
  }
  if (fields.has("moe")) {
    const Fields moe = fields.Object("moe");
    config.moe.num_experts = moe.Int("num_experts");
    config.moe.experts_per_token = moe.Int("experts_per_token");
    config.moe.expert_ffn = moe.Int("expert_ffn");
    config.moe.normalize_top_k = moe.Bool("normalize_top_k");
    config.moe.shared_expert_ffn = moe.Int("shared_expert_ffn");
    config.moe.sparse_step = moe.Int("sparse_step");
    const json& dense = moe.Array("dense_layers");
    for (size_t idx = 0; idx < dense.size(); ++idx) {
      const int64_t layer =
          moe.Int64(dense[idx], fmt::format("{}[{}]", moe.name("dense_layers"), idx));
      if (layer < 0 || layer > std::numeric_limits<int>::max()) {
        moe.Invalid("dense_layers", fmt::format("holds {}, not a layer number", layer));
      }
      config.moe.dense_layers.push_back(static_cast<int>(layer));
    }
  }
  return config;
}

TokenizerSpec ParseTokenizer(const Fields& fields) {
  TokenizerSpec spec;
  spec.kind = fields.String("kind");
  if (spec.kind != "sentencepiece" && spec.kind != "hf-json") {
    fields.Invalid("kind", fmt::format("is '{}', expected sentencepiece or hf-json", spec.kind));
  }
  spec.file = PlainFileName(fields, "file");
  spec.add_bos = fields.Bool("add_bos");
  spec.add_eos = fields.Bool("add_eos");
  return spec;
}

uint64_t ParseXxh3(const Fields& fields) {
  std::string hex = fields.String("xxh3");
  uint64_t value = 0;
  auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
  if (hex.size() != 16 || error != std::errc() || end != hex.data() + hex.size()) {
    fields.Invalid("xxh3", fmt::format("must be 16 hex digits, got '{}'", hex));
  }
  return value;
}

TensorInfo ParseTensor(const Fields& fields, int version) {
  TensorInfo tensor;
  tensor.name = fields.String("name");
  tensor.dtype = ParseDTypeField(fields, "dtype", /*quantized_allowed=*/version >= 2);
  tensor.group_size = fields.Int("group_size", 0);
  const json& shape = fields.Array("shape");
  for (size_t idx = 0; idx < shape.size(); ++idx) {
    tensor.shape.push_back(
        fields.Int64(shape[idx], fmt::format("{}[{}]", fields.name("shape"), idx)));
  }
  tensor.offset_in_extent = fields.U64("offset");
  tensor.size_bytes = fields.U64("size_bytes");
  // Optional (older converters wrote none): without it the layer is read and checked whole.
  if (fields.has("xxh3")) tensor.xxh3 = ParseXxh3(fields);
  return tensor;
}

ExtentInfo ParseExtent(const Fields& fields, int version) {
  ExtentInfo extent;
  extent.name = fields.String("name");
  std::string kind = fields.String("kind");
  if (kind == "embedding") {
    extent.kind = ExtentKind::kEmbedding;
  } else if (kind == "layer") {
    extent.kind = ExtentKind::kLayer;
    extent.layer = fields.Int("layer");
  } else if (kind == "expert" && version >= 3) {
    extent.kind = ExtentKind::kExpert;
    extent.layer = fields.Int("layer");
    extent.expert = fields.Int("expert");
  } else if (kind == "head") {
    extent.kind = ExtentKind::kHead;
  } else {
    fields.Invalid("kind", fmt::format("is '{}', expected embedding, layer{} or head", kind,
                                       version >= 3 ? ", expert" : ""));
  }
  extent.offset = fields.U64("offset");
  extent.size_bytes = fields.U64("size_bytes");
  extent.padded_bytes = fields.U64("padded_bytes");
  extent.xxh3 = ParseXxh3(fields);
  const json& tensors = fields.Array("tensors");
  for (size_t idx = 0; idx < tensors.size(); ++idx) {
    std::string path = fmt::format("{}[{}]", fields.name("tensors"), idx);
    extent.tensors.push_back(ParseTensor(Fields(tensors[idx], path, fields.where()), version));
  }
  return extent;
}

}  // namespace

std::string ManifestJsonText(const Checkpoint& checkpoint, const ManifestSource& source) {
  // The lowest version that describes the file, so older readers load what they can.
  bool quantized = false;
  for (const ExtentInfo& extent : checkpoint.extents)
    for (const TensorInfo& tensor : extent.tensors) quantized |= IsQuantized(tensor.dtype);
  const int version = checkpoint.config.is_moe() ? 3 : quantized ? 2 : 1;
  ordered_json manifest = {
      {"format", kFormatName}, {"version", version}, {"created_by", kCreatedBy}};
  ordered_json source_json = ordered_json::object();
  if (!source.directory.empty()) source_json["directory"] = source.directory;
  source_json["model_type"] = source.model_type;
  manifest["source"] = std::move(source_json);
  manifest["dtype"] = DTypeName(checkpoint.dtype);
  manifest["config"] = ConfigToJson(checkpoint.config);
  if (const std::optional<TokenizerSpec>& tokenizer = checkpoint.tokenizer) {
    manifest["tokenizer"] = {{"kind", tokenizer->kind},
                             {"file", tokenizer->file},
                             {"add_bos", tokenizer->add_bos},
                             {"add_eos", tokenizer->add_eos}};
  }
  manifest["weights_file"] = kWeightsFile;
  ordered_json extents = ordered_json::array();
  for (const ExtentInfo& extent : checkpoint.extents) extents.push_back(ExtentToJson(extent));
  manifest["extents"] = std::move(extents);
  return manifest.dump(2) + "\n";
}

Checkpoint ParseManifest(const std::string& text, const std::string& where) {
  if (const std::optional<uint64_t> offset = FindJsonNestingOver(text)) {
    Fail("{}: JSON nested deeper than {} levels at byte {}", where, kMaxJsonDepth, *offset);
  }
  json manifest;
  try {
    manifest = json::parse(text);
  } catch (const json::parse_error& error) {
    Fail("{}: malformed JSON at byte {}: {}", where, error.byte, error.what());
  } catch (const json::exception& error) {  // e.g. a number too large for a double
    Fail("{}: malformed JSON: {}", where, error.what());
  }
  Fields fields(manifest, "", where);
  if (!fields.has("format") || fields.String("format") != kFormatName) {
    Fail("{}: not a zinf manifest (field 'format' must be \"{}\")", where, kFormatName);
  }
  int version = fields.Int("version");
  if (version < 1 || version > kFormatVersion) {
    Fail("{}: format version {} is not supported: this zinf reads versions 1 to {}; "
         "a newer file needs a newer zinf",
         where, version, kFormatVersion);
  }
  Checkpoint checkpoint;
  checkpoint.dtype = ParseDTypeField(fields, "dtype", /*quantized_allowed=*/false);
  checkpoint.config = ParseConfig(fields.Object("config"));
  if (fields.has("tokenizer")) checkpoint.tokenizer = ParseTokenizer(fields.Object("tokenizer"));
  checkpoint.weights_file = PlainFileName(fields, "weights_file");
  const json& extents = fields.Array("extents");
  for (size_t idx = 0; idx < extents.size(); ++idx) {
    std::string path = fmt::format("extents[{}]", idx);
    checkpoint.extents.push_back(ParseExtent(Fields(extents[idx], path, where), version));
  }
  return checkpoint;
}

void WriteManifestWithSource(const std::string& directory, const Checkpoint& checkpoint,
                             const ManifestSource& source) {
  WriteFileAtomically(directory + "/" + kManifestFile, ManifestJsonText(checkpoint, source));
}

}  // namespace zinf::formats
