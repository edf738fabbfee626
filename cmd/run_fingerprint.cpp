// RunFingerprint and its check on --resume (cmd/run_fingerprint.h).
#include "cmd/run_fingerprint.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/error.h"
#include "engine/xxh3_state.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

using Json = nlohmann::ordered_json;

// Feeds a whole file to `state`; returns its size.
uint64_t HashFile(const std::string& path, XXH3_state_t* state) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) Fail("cannot read {} to fingerprint the run: {}", path, std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  uint64_t total = 0;
  while (const size_t got = std::fread(buffer.data(), 1, buffer.size(), file.get())) {
    XXH3_64bits_update(state, buffer.data(), got);
    total += got;
  }
  if (std::ferror(file.get())) Fail("cannot read {} to fingerprint the run", path);
  return total;
}

// The manifest as it identifies the model: its text, less the tensors' own checksums where it has
// them. Those are derived from bytes the extents' checksums already cover, and `zinf verify
// --add-tensor-checksums` adds them to an older manifest (the result is, without them, that
// manifest's text again: both are the converter's dump(2)), so a run resumes across it.
std::string ManifestIdentity(const std::string& path) {
  const std::string text = formats::ReadTextFile(path);
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.contains("extents")) return text;
  bool stripped = false;
  for (auto& extent : manifest["extents"]) {
    if (!extent.contains("tensors")) continue;
    for (auto& tensor : extent["tensors"]) stripped = tensor.erase("xxh3") > 0 || stripped;
  }
  return stripped ? manifest.dump(2) + "\n" : text;
}

struct Digest {
  std::string hex;
  uint64_t bytes = 0;
};

// The manifest's identity, then each further file whole.
Digest DigestOf(const std::string& manifest_path, const std::vector<std::string>& paths) {
  const Xxh3State state = NewXxh3State();
  XXH3_64bits_reset(state.get());
  Digest digest;
  const std::string manifest = ManifestIdentity(manifest_path);
  XXH3_64bits_update(state.get(), manifest.data(), manifest.size());
  digest.bytes = manifest.size();
  for (const std::string& path : paths) digest.bytes += HashFile(path, state.get());
  digest.hex = fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
  return digest;
}

std::string Absolute(const std::string& path) {
  std::error_code ignored;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ignored);
  return absolute.empty() ? path : absolute.string();
}

// "key: old → new" for each identity field and setting that differs.
std::vector<std::string> Differences(const Json& recorded, const Json& now) {
  std::vector<std::string> found;
  const Json& was_model = recorded.value("model", Json::object());
  const Json& model = now.at("model");
  if (was_model.value("digest", "") != model.at("digest").get<std::string>()) {
    found.push_back(fmt::format("model: {} (digest {}) → {} (digest {}){}",
                                was_model.value("path", "?"), was_model.value("digest", "?"),
                                model.at("path").get<std::string>(),
                                model.at("digest").get<std::string>(),
                                was_model.value("path", "") == model.at("path").get<std::string>()
                                    ? ": the same path with other contents"
                                    : ""));
  }
  const Json& was = recorded.value("settings", Json::object());
  for (const auto& [key, value] : now.at("settings").items()) {
    const auto old = was.find(key);
    if (old == was.end()) {
      found.push_back(fmt::format("--{}: not recorded → {}", key, value.dump()));
    } else if (*old != value) {
      found.push_back(fmt::format("--{}: {} → {}", key, old->dump(), value.dump()));
    }
  }
  // A setting recorded but not set now (a shard's file resumed as a whole run, a chat template
  // dropped) changes outputs as much as one changed.
  for (const auto& [key, value] : was.items()) {
    if (!now.at("settings").contains(key)) {
      found.push_back(fmt::format("--{}: {} → not set", key, value.dump()));
    }
  }
  return found;
}

}  // namespace

Json RunFingerprint(const Checkpoint& checkpoint, const std::string& prompts_path,
                    const Request& defaults, const SessionOptions& session) {
  std::vector<std::string> model_files;
  if (checkpoint.tokenizer) {
    model_files.push_back(
        (std::filesystem::path(checkpoint.directory) / checkpoint.tokenizer->file).string());
  }
  const Digest model = DigestOf(
      (std::filesystem::path(checkpoint.directory) / formats::kManifestFile).string(), model_files);

  // Keys are the flags' names (without "--"), so a difference reads as the flag to change back.
  Json settings;
  settings["max-new-tokens"] = defaults.max_new_tokens;
  settings["temperature"] = defaults.sampling.temperature;
  settings["top-k"] = defaults.sampling.top_k;
  settings["top-p"] = defaults.sampling.top_p;
  settings["min-p"] = defaults.sampling.min_p;
  settings["repetition-penalty"] = defaults.sampling.repetition_penalty;
  settings["seed"] = defaults.sampling.seed;
  settings["stop"] = defaults.stop;
  settings["ignore-eos"] = defaults.ignore_eos;
  settings["logprobs"] = defaults.logprobs;
  settings["kv-dtype"] = DTypeName(session.kv_dtype);
  // The GPU multiplies in bf16 (or f32) where the CPU uses f32: outputs may differ between them.
  settings["device"] = BackendName(session.device.device);
  if (session.device.device == BackendKind::kCuda) {
    settings["gpu-compute"] = session.device.gpu_compute == GpuCompute::kF32 ? "f32" : "bf16";
  }

  Json fingerprint;
  fingerprint["model"] = {{"digest", model.hex}, {"path", Absolute(checkpoint.directory)}};
  // Prompts are checked request by request (each result carries its prompt line's digest), so
  // a prompt file may grow or have a bad line fixed between runs; the path is for people.
  fingerprint["prompts"] = {{"path", Absolute(prompts_path)}};
  fingerprint["settings"] = std::move(settings);
  return fingerprint;
}

std::string FingerprintPath(const std::string& out_path) { return out_path + ".run.json"; }

void CheckAndRecordFingerprint(const std::string& out_path, bool has_results,
                               const Json& fingerprint, bool force) {
  if (out_path == "-") return;
  const std::string path = FingerprintPath(out_path);
  Json record = fingerprint;
  if (has_results) {
    std::ifstream file(path);
    if (!file) {
      if (!force) {
        Fail("{} holds results but {} is missing, so zinf cannot tell which model, prompts and "
             "settings made them (an earlier zinf wrote it, or the record was removed); pass "
             "--resume-force to continue anyway, or choose another --out path",
             out_path, path);
      }
      spdlog::warn("{}: no record of the run that wrote it; continuing (--resume-force)", out_path);
    } else {
      Json recorded;
      try {
        recorded = Json::parse(file);
      } catch (const Json::exception& error) {
        Fail("{}: not valid JSON ({}); it records the run that wrote {}: restore it, or pass "
             "--resume-force",
             path, error.what(), out_path);
      }
      const std::vector<std::string> differences = Differences(recorded, fingerprint);
      if (differences.empty()) return;  // the same run: keep its record as it is
      std::string listed;
      for (const std::string& difference : differences) listed += "\n  " + difference;
      if (!force) {
        Fail("{} holds results of another run; resuming would mix them. What differs (recorded → "
             "now):{}\nRun with the recorded model, prompts and settings, choose another --out "
             "path, or pass --resume-force to mix them anyway",
             out_path, listed);
      }
      spdlog::warn("{}: mixing runs (--resume-force); what differs (recorded → now):{}", out_path,
                   listed);
      record["forced_over"] = std::move(recorded);
    }
  }
  formats::WriteFileAtomically(path, record.dump(2) + "\n");
}

}  // namespace zinf::cli
