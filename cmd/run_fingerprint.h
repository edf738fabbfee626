// What made a results file: the model and every setting that changes outputs, recorded beside the
// file (OUT.run.json) so that --resume refuses to mix two different runs. (Prompts are checked
// per request: cmd/resume_check.h.)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cmd/session_options.h"
#include "engine/checkpoint.h"
#include "engine/request.h"

namespace zinf::cli {

// The fingerprint of a generate run, e.g.
//   {"model":{"digest":"…","path":"…"},"prompts":{"path":"…"},
//    "settings":{"max-new-tokens":128,"temperature":0.0,…,"kv-dtype":"f32","device":"cpu"}}
// The model's digest is XXH3-64 of the checkpoint's manifest (which holds every extent's
// checksum) and tokenizer. Settings that leave outputs unchanged (batch size,
// placement, threads, refill) are left out: outputs do not depend on them (docs/numerics.md).
nlohmann::ordered_json RunFingerprint(const Checkpoint& checkpoint, const std::string& prompts_path,
                                      const Request& defaults, const SessionOptions& session);

// Where the fingerprint of results file `out_path` lives.
std::string FingerprintPath(const std::string& out_path);

// Called with the results file open and locked. When the file already holds results, compares
// `fingerprint` with the one recorded beside it and throws zinf::Error listing every difference
// (or saying none is recorded), unless `force`, which only warns. Then records `fingerprint`
// (atomically) unless the recorded one is kept. `out_path` "-" (stdout) records nothing.
void CheckAndRecordFingerprint(const std::string& out_path, bool has_results,
                               const nlohmann::ordered_json& fingerprint, bool force);

}  // namespace zinf::cli
