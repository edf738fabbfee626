// manifest.json text ↔ Checkpoint: field names, types and the version check of format v1.
// The layout rules (alignment, overlap, expected tensors) live in extent_layout.h.
#pragma once

#include <string>

#include "engine/checkpoint.h"

namespace zinf::formats {

// Where a checkpoint came from; recorded in the manifest for people, not read back by the engine.
struct ManifestSource {
  std::string directory;   // basename of the Hugging Face directory; empty → not written
  std::string model_type;  // config.json's model_type
};

// The manifest for `checkpoint`, pretty-printed JSON ending in a newline.
std::string ManifestJsonText(const Checkpoint& checkpoint, const ManifestSource& source);

// Parses manifest text into a Checkpoint (config, dtype, tokenizer, extents; directory and
// weights_file left to the caller, weights_file set to the manifest's relative name). Throws
// zinf::Error beginning with `where` for malformed JSON, a format other than "zinf", a version
// this zinf does not read, and missing or mistyped fields, naming the field.
Checkpoint ParseManifest(const std::string& text, const std::string& where);

// Writes DIRECTORY/manifest.json atomically: a temporary file, fsync, rename, fsync of the
// directory.
void WriteManifestWithSource(const std::string& directory, const Checkpoint& checkpoint,
                             const ManifestSource& source);

}  // namespace zinf::formats
