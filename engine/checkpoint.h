// What the engine knows about a converted checkpoint: its config, its extents and the tensors in them.
// An extent is one contiguous, 4 KiB-aligned run of the weights file, read with one direct-I/O read:
// the embeddings, each transformer layer (and each of its experts), and the head.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/dtype.h"
#include "engine/model_config.h"

namespace zinf {

// Alignment of extents in the weights file and of their sizes: one O_DIRECT read per extent.
inline constexpr uint64_t kExtentAlignment = 4096;
// Alignment of tensors inside an extent, for vector loads.
inline constexpr uint64_t kTensorAlignment = 64;

struct TensorInfo {
  std::string
      name;  // canonical zinf name inside its extent, e.g. "q", "q_bias", "gate" (docs/format.md)
  DType dtype = DType::kF32;
  int group_size = 0;          // int4 only (engine/quantized.h)
  std::vector<int64_t> shape;  // row-major; matrices are [out, in] like torch.nn.Linear
  uint64_t offset_in_extent = 0;
  uint64_t size_bytes = 0;
  // XXH3-64 of the tensor's own bytes, where the converter recorded it: what lets a layer be read
  // and checked in parts (LayerPart) instead of as one extent under one checksum.
  std::optional<uint64_t> xxh3;

  int64_t num_elements() const;
  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

// kExpert: one expert of a mixture-of-experts layer, so it is read, copied or kept on its own.
enum class ExtentKind : uint8_t { kEmbedding, kLayer, kHead, kExpert };

// A layer extent is streamed whole, or as two parts that each need a staging buffer only their
// size (engine/layer_parts.h): its attention block's tensors, then its MLP's (from the MLP's norm).
enum class LayerPart : uint8_t { kWhole, kAttention, kMlp };

struct ExtentInfo {
  std::string name;  // "embed", "layer.0", "layer.0.expert.0", ..., "head"
  ExtentKind kind = ExtentKind::kLayer;
  int layer = -1;             // for kLayer and kExpert
  int expert = -1;            // for kExpert
  uint64_t offset = 0;        // in the weights file, a multiple of kExtentAlignment
  uint64_t size_bytes = 0;    // bytes holding tensors
  uint64_t padded_bytes = 0;  // size_bytes rounded up to kExtentAlignment: what one read fetches
  uint64_t xxh3 = 0;          // XXH3-64 of the first size_bytes bytes; a part's: unused
  LayerPart part = LayerPart::kWhole;
  std::vector<TensorInfo> tensors;
  // A part is checked tensor by tensor: the extent's checksum covers bytes the part does not hold.
  bool checked_by_tensor() const { return part != LayerPart::kWhole; }

  const TensorInfo* find(std::string_view tensor_name) const;
};

struct TokenizerSpec {
  std::string kind;  // "sentencepiece" (tokenizer.model); "hf-json" (tokenizer.json) arrives later
  std::string file;  // relative to the checkpoint directory
  bool add_bos = true;
  bool add_eos = false;
};

struct Checkpoint {
  std::string directory;
  std::string weights_file;  // absolute or relative to the working directory
  ModelConfig config;
  DType dtype = DType::kF32;  // of the tensors kept in floating point (all of them, unquantized)
  std::optional<TokenizerSpec> tokenizer;
  // In file order: embed, layer.0 (then its experts layer.0.expert.0 ..), .. layer.N-1, head.
  std::vector<ExtentInfo> extents;

  uint64_t max_extent_padded_bytes() const;
  // "f16", or for quantized checkpoints e.g. "int4-g64 (f16 norms)": for plans and logs.
  std::string weights_description() const;
  uint64_t total_bytes() const;
};

}  // namespace zinf
