// Checking and joining a job array's shard files; see shard_merge.h.
#include "cmd/shard_merge.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd/json_message.h"
#include "cmd/openai_batch.h"
#include "cmd/run_fingerprint.h"
#include "cmd/shard.h"
#include "engine/error.h"
#include "model_formats/atomic_output_file.h"

namespace zinf::cli {

using Json = nlohmann::ordered_json;

struct ShardMerge::ShardFile {
  std::string path;
  int fd = -1;
  std::optional<Shard> shard;  // from OUT.run.json
  Json identity;               // its model digest and settings but the shard, to compare runs
};

// One result line of a shard file: 40 bytes, so the index of 10^7 results fits in 400 MB.
struct ShardMerge::LineRef {
  uint64_t id_high = 0, id_low = 0;  // XXH3-128 of the id's text (7 and "7" alike)
  uint64_t offset = 0;               // of the line in its file
  uint32_t length = 0;               // bytes, without the '\n'
  uint32_t file = 0;                 // index into files_
  uint64_t digest = 0;               // the prompt line's digest the result carries
  bool operator<(const LineRef& other) const {
    return std::tie(id_high, id_low) < std::tie(other.id_high, other.id_low);
  }
};

namespace {

constexpr size_t kMaxExamples = 10;  // problems shown one by one; the counts are complete

XXH128_hash_t IdHash(std::string_view id) { return XXH3_128bits(id.data(), id.size()); }

// The id a result line answers (custom_id for a Batch line) and the prompt digest it carries.
// Failure: zinf::Error without the location.
std::pair<std::string, uint64_t> IdAndDigest(std::string_view text) {
  Json object;
  try {
    object = Json::parse(text);
  } catch (const Json::exception& error) {
    Fail("not valid JSON ({})", JsonMessage(error));
  }
  if (!object.is_object()) Fail("not a zinf result (a JSON object)");
  if (const auto custom_id = object.find("custom_id"); custom_id != object.end()) {
    const auto id = object.find("id");
    if (!custom_id->is_string() || id == object.end() || !id->is_string()) {
      Fail("not an OpenAI Batch result (string \"id\" and \"custom_id\")");
    }
    const uint64_t digest = DigestFromOpenAiId(id->get_ref<const std::string&>());
    if (digest == 0) Fail("its \"id\" carries no prompt digest (batch_req_<16 hex digits>)");
    return {custom_id->get<std::string>(), digest};
  }
  const auto id = object.find("id");
  if (id == object.end() || !(id->is_string() || id->is_number_integer())) {
    Fail("not a zinf result (a JSON object with a string or integer \"id\")");
  }
  const auto digest = object.find("prompt_digest");
  if (digest == object.end() || !digest->is_string()) {
    Fail("no \"prompt_digest\" (an earlier zinf wrote it), so merge cannot tell which prompt file "
         "it answers");
  }
  return {id->is_string() ? id->get<std::string>() : id->dump(),
          std::strtoull(digest->get<std::string>().c_str(), nullptr, 16)};
}

}  // namespace

std::string MergeFindings::MissingShardList() const {
  std::vector<int64_t> shards;
  for (const auto& [shard, count] : missing_by_shard) shards.push_back(shard);
  return fmt::format("{}", fmt::join(shards, ","));
}

ShardMerge::ShardMerge(MergeInputs inputs) : inputs_(std::move(inputs)) {
  if (inputs_.shard_files.empty()) Fail("no shard files to merge");
  files_.resize(inputs_.shard_files.size());
  for (uint32_t i = 0; i < files_.size(); ++i) {
    files_[i].path = inputs_.shard_files[i];
    ReadShardOfFile(files_[i]);
  }
  // Every file must come from one run: the same model and output-changing settings.
  for (const ShardFile& file : files_) {
    if (file.identity.is_null() || files_[0].identity.is_null()) continue;
    if (file.identity != files_[0].identity) {
      Fail("{} and {} were made by different runs (model or settings differ: {} vs {}); merge "
           "only the shards of one job",
           files_[0].path, file.path, files_[0].identity.dump(), file.identity.dump());
    }
  }
  findings_.shard_count = inputs_.shard_count.value_or(0);
  for (const ShardFile& file : files_) {
    if (!file.shard) continue;
    if (findings_.shard_count == 0) findings_.shard_count = file.shard->count;
    if (file.shard->count != findings_.shard_count) {
      Fail("{} holds shard {}, not one of {} shards{}", file.path, ShardText(*file.shard),
           findings_.shard_count,
           inputs_.shard_count ? " (--shard-count)" : fmt::format(" as {} does", files_[0].path));
    }
  }
  if (findings_.shard_count == 0) {
    Fail("cannot tell how many shards the job had: no shard file has an OUT.run.json naming its "
         "shard; give --shard-count N");
  }
  for (uint32_t i = 0; i < files_.size(); ++i) IndexFile(i);
  std::sort(lines_.begin(), lines_.end());
}

ShardMerge::~ShardMerge() {
  for (ShardFile& file : files_) {
    if (file.fd >= 0) ::close(file.fd);
  }
}

void ShardMerge::ReadShardOfFile(ShardFile& file) {
  const std::string record_path = FingerprintPath(file.path);
  std::ifstream stream(record_path);
  if (!stream) {
    spdlog::warn("{}: no {}, so its shard and run are unchecked", file.path, record_path);
    return;
  }
  try {
    Json record = Json::parse(stream);
    Json settings = record.at("settings");
    if (const auto shard = settings.find("shard"); shard != settings.end()) {
      file.shard = ParseShard(shard->get<std::string>());
      settings.erase("shard");
    }
    file.identity = Json{{"model", record.at("model").at("digest")}, {"settings", settings}};
  } catch (const std::exception& error) {
    Fail("{}: not a zinf run record ({})", record_path, error.what());
  }
}

void ShardMerge::IndexFile(uint32_t file_idx) {
  ShardFile& file = files_[file_idx];
  file.fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) Fail("cannot open shard file {}: {}", file.path, std::strerror(errno));
  // generate holds an exclusive lock on its output while it runs: a task still writing is not done.
  if (::flock(file.fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    Fail("{} is being written by a running zinf (a task not finished); merge once it is done",
         file.path);
  }
  std::FILE* stream = ::fdopen(::dup(file.fd), "rb");
  if (stream == nullptr) Fail("cannot read shard file {}: {}", file.path, std::strerror(errno));
  char* buffer = nullptr;
  size_t capacity = 0;
  uint64_t offset = 0;
  try {
    for (int64_t line = 1;; ++line) {
      const ssize_t got = ::getline(&buffer, &capacity, stream);
      if (got < 0) {
        if (std::ferror(stream)) Fail("cannot read {}: {}", file.path, std::strerror(errno));
        break;
      }
      std::string_view text(buffer, static_cast<size_t>(got));
      const uint64_t line_offset = offset;
      offset += static_cast<uint64_t>(got);
      if (!text.ends_with('\n')) {
        spdlog::warn("{}:{}: a torn final line ({} bytes, a task killed mid-write) is left out; "
                     "its request counts as missing",
                     file.path, line, text.size());
        break;
      }
      text.remove_suffix(1);
      if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      std::pair<std::string, uint64_t> id_digest;
      try {
        id_digest = IdAndDigest(text);
      } catch (const Error& error) {
        Fail("{}:{}: {}; is it a shard file of zinf generate?", file.path, line, error.what());
      }
      const XXH128_hash_t hash = IdHash(id_digest.first);
      lines_.push_back(LineRef{hash.high64, hash.low64, line_offset,
                               static_cast<uint32_t>(text.size()), file_idx, id_digest.second});
    }
  } catch (...) {
    std::free(buffer);
    std::fclose(stream);
    throw;
  }
  std::free(buffer);
  std::fclose(stream);
}

std::string ShardMerge::IdOfLine(const LineRef& line) const {
  std::string text(line.length, '\0');
  const ssize_t got =
      ::pread(files_[line.file].fd, text.data(), text.size(), static_cast<off_t>(line.offset));
  if (got != static_cast<ssize_t>(text.size())) return "?";
  try {
    return IdAndDigest(text).first;
  } catch (const Error&) {
    return "?";
  }
}

std::string ShardMerge::Where(const LineRef& line) const {
  const ShardFile& file = files_[line.file];
  return file.shard ? fmt::format("{} (shard {})", file.path, file.shard->index) : file.path;
}

const MergeFindings& ShardMerge::Check() {
  ZINF_CHECK(!checked_, "ShardMerge::Check called twice");
  checked_ = true;
  MergeFindings& found = findings_;
  auto example = [&](std::string text) {
    if (found.examples.size() < kMaxExamples) found.examples.push_back(std::move(text));
  };
  std::vector<bool> used(lines_.size(), false);
  order_.reserve(lines_.size());
  PromptFileReader reader(inputs_.prompts, inputs_.prompt_options);
  while (std::optional<PromptEntry> entry = reader.Next()) {
    ++found.requests;
    const int64_t shard = entry->request_idx % found.shard_count;
    const XXH128_hash_t hash = IdHash(entry->id);
    const LineRef key{hash.high64, hash.low64};
    const auto [first, last] = std::equal_range(lines_.begin(), lines_.end(), key);
    const auto matches = last - first;
    for (auto it = first; it != last; ++it) used[static_cast<size_t>(it - lines_.begin())] = true;
    if (matches == 0) {
      ++found.missing;
      ++found.missing_by_shard[shard];
      example(fmt::format("missing: id {} (line {} of {}, shard {}) is in no shard file", entry->id,
                          entry->line, inputs_.prompts, shard));
      continue;
    }
    if (matches > 1) {
      ++found.duplicated;
      std::vector<std::string> where;
      for (auto it = first; it != last; ++it) where.push_back(Where(*it));
      example(fmt::format("duplicated: id {} (shard {}) is in {} lines: {}", entry->id, shard,
                          matches, fmt::join(where, ", ")));
      continue;
    }
    const ShardFile& file = files_[first->file];
    if (first->digest != entry->digest) {
      ++found.foreign;
      example(fmt::format("foreign: id {} in {} answers another prompt than line {} of {} "
                          "(prompt digest {:016x}, not {:016x}): a shard of another prompt file?",
                          entry->id, file.path, entry->line, inputs_.prompts, first->digest,
                          entry->digest));
    } else if (file.shard && file.shard->index != shard) {
      ++found.foreign;
      example(fmt::format("foreign: id {} belongs to shard {} of {}, but {} holds shard {}",
                          entry->id, shard, found.shard_count, file.path, file.shard->index));
    }
    order_.push_back(static_cast<uint32_t>(first - lines_.begin()));
  }
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (used[i]) continue;
    ++found.foreign;
    example(fmt::format("foreign: id {} in {} is not a request of {}", IdOfLine(lines_[i]),
                        Where(lines_[i]), inputs_.prompts));
  }
  return found;
}

void ShardMerge::Write(const std::string& out) {
  ZINF_CHECK(checked_ && findings_.complete(), "ShardMerge::Write before a complete Check");
  formats::AtomicOutputFile file(out);
  std::string buffer;  // lines gathered into 1 MiB writes
  constexpr size_t kFlushBytes = 1 << 20;
  for (const uint32_t idx : order_) {
    const LineRef& line = lines_[idx];
    const size_t at = buffer.size();
    buffer.resize(at + line.length + 1);
    const ssize_t got = ::pread(files_[line.file].fd, buffer.data() + at, line.length + 1,
                                static_cast<off_t>(line.offset));
    if (got != static_cast<ssize_t>(line.length) + 1 || buffer.back() != '\n') {
      Fail("{} changed while merging (a task still writing it?): cannot read back its line at "
           "byte {}; nothing written to {}",
           files_[line.file].path, line.offset, out);
    }
    if (buffer.size() >= kFlushBytes) {
      file.Write(std::as_bytes(std::span<const char>(buffer.data(), buffer.size())));
      buffer.clear();
    }
  }
  file.Write(std::as_bytes(std::span<const char>(buffer.data(), buffer.size())));
  file.Commit();
}

}  // namespace zinf::cli
