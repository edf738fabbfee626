// The zinf checkpoint format, v1 to v3 (docs/format.md): manifest.json + weights.bin in a directory.
#pragma once

#include <string>

#include "engine/checkpoint.h"

namespace zinf::formats {

// Version 2 added per-tensor quantized dtypes (int8, int4 with group_size); version 3 added
// mixture-of-experts models (an "expert" extent per expert, the config's "moe" object). A file is
// written with the lowest version that can describe it, so older readers keep reading what they can.
inline constexpr int kFormatVersion = 3;
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kWeightsFile = "weights.bin";

// Reads DIR/manifest.json. Throws zinf::Error naming the file and field for malformed or
// inconsistent manifests (unknown version, overlapping or misaligned extents, a weights file
// shorter than the extents need). Checksums are verified when extents are read, not here.
Checkpoint LoadCheckpoint(const std::string& directory);

// Writes DIR/manifest.json atomically (temporary file + rename).
void WriteManifest(const std::string& directory, const Checkpoint& checkpoint);

}  // namespace zinf::formats
