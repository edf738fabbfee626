// Shards of a prompt file and where they come from; see shard.h.
#include "cmd/shard.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "engine/error.h"

namespace zinf::cli {
namespace {

// A whole non-negative decimal number, or nullopt.
std::optional<int64_t> ParseCount(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// The environment variable `name` as a number; nullopt when it is unset.
std::optional<int64_t> EnvNumber(const ShardSources& sources, const char* name) {
  const char* text = sources.getenv ? sources.getenv(name) : nullptr;
  if (text == nullptr) return std::nullopt;
  const std::optional<int64_t> value = ParseCount(text);
  if (!value) Fail("{}='{}' is not a whole number >= 0", name, text);
  return value;
}

// The count given by --shard-count or ZINF_SHARD_COUNT, if any.
std::optional<int64_t> GivenCount(const ShardSources& sources) {
  std::optional<int64_t> count = sources.count_flag;
  const char* from = "--shard-count";
  if (!count) {
    count = EnvNumber(sources, "ZINF_SHARD_COUNT");
    from = "ZINF_SHARD_COUNT";
  }
  if (count && *count < 1) Fail("{}: the shard count must be >= 1, got {}", from, *count);
  return count;
}

Shard Checked(Shard shard, std::string_view what) {
  if (shard.index >= shard.count) {
    Fail("{}: shard {} is not one of the {} shards (0 to {}){}", what, shard.index, shard.count,
         shard.count - 1,
         what.starts_with("SLURM")
             ? "; with --shard-count (or ZINF_SHARD_COUNT) the array's indices are the shard "
               "numbers: submit --array=0-" +
                   std::to_string(shard.count - 1)
             : "");
  }
  return shard;
}

}  // namespace

Shard ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> index = ParseCount(text.substr(0, slash));
  const std::optional<int64_t> count =
      slash == std::string_view::npos ? std::nullopt : ParseCount(text.substr(slash + 1));
  if (!index || !count) {
    Fail("'{}' is not K/N (shard K of N, 0 <= K < N, e.g. 3/8), nor none", text);
  }
  if (*count == 0) Fail("'{}': N must be >= 1 (the number of shards)", text);
  if (*index >= *count) {
    Fail("'{}': K must be below N (shards are numbered 0 to {})", text, *count - 1);
  }
  return Shard{*index, *count};
}

std::string ShardText(const Shard& shard) { return fmt::format("{}/{}", shard.index, shard.count); }

std::optional<Shard> ResolveShard(const ShardSources& sources, std::string* origin) {
  auto set_origin = [&](std::string text) {
    if (origin != nullptr) *origin = std::move(text);
  };
  if (sources.flag == "none") return std::nullopt;
  if (!sources.flag.empty()) {
    const Shard shard = ParseShard(sources.flag);
    if (sources.count_flag && *sources.count_flag != shard.count) {
      Fail("--shard {} and --shard-count {} disagree", sources.flag, *sources.count_flag);
    }
    set_origin("--shard");
    return shard;
  }
  if (const std::optional<int64_t> task = EnvNumber(sources, "SLURM_ARRAY_TASK_ID")) {
    if (const std::optional<int64_t> count = GivenCount(sources)) {
      set_origin(fmt::format("Slurm array task {}", *task));
      return Checked(Shard{*task, *count}, "SLURM_ARRAY_TASK_ID");
    }
    const std::optional<int64_t> min = EnvNumber(sources, "SLURM_ARRAY_TASK_MIN");
    const std::optional<int64_t> max = EnvNumber(sources, "SLURM_ARRAY_TASK_MAX");
    const std::optional<int64_t> tasks = EnvNumber(sources, "SLURM_ARRAY_TASK_COUNT");
    if (!min || !max || !tasks) {
      Fail("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN, _MAX or _COUNT is not; give the "
           "number of shards with --shard-count N");
    }
    if (*max < *min || *max - *min + 1 != *tasks || *task < *min || *task > *max) {
      Fail("Slurm array task {} of a sparse array (indices {} to {}, {} tasks: a resubmission?): "
           "zinf cannot tell the number of shards; give it with --shard-count N (the array's "
           "indices are then the shard numbers)",
           *task, *min, *max, *tasks);
    }
    set_origin(fmt::format("Slurm array task {} (indices {} to {})", *task, *min, *max));
    return Shard{*task - *min, *tasks};
  }
  if (const std::optional<int64_t> index = EnvNumber(sources, "JOB_COMPLETION_INDEX")) {
    const std::optional<int64_t> count = GivenCount(sources);
    if (!count) {
      Fail("JOB_COMPLETION_INDEX={} (a Kubernetes Indexed Job) needs the number of shards, the "
           "Job's completions: give --shard-count N or ZINF_SHARD_COUNT (or --shard none to run "
           "the whole file)",
           *index);
    }
    set_origin(fmt::format("Kubernetes completion index {}", *index));
    return Checked(Shard{*index, *count}, "JOB_COMPLETION_INDEX");
  }
  if (sources.count_flag) {
    Fail("--shard-count {} needs a shard index: --shard K/N, SLURM_ARRAY_TASK_ID or "
         "JOB_COMPLETION_INDEX",
         *sources.count_flag);
  }
  return std::nullopt;
}

std::string ShardTag(const Shard& shard) {
  const int width = std::max<int>(3, static_cast<int>(std::to_string(shard.count).size()));
  return fmt::format("shard-{:0{}}-of-{:0{}}", shard.index, width, shard.count, width);
}

std::string ShardOutputPath(const std::string& out, const Shard& shard) {
  if (out == "-") return out;
  const std::string tag = ShardTag(shard);
  if (const size_t at = out.find("{shard}"); at != std::string::npos) {
    return out.substr(0, at) + tag + out.substr(at + 7);
  }
  const std::filesystem::path path(out);
  const std::string extension = path.extension().string();  // "" for a name without one
  const std::string stem = out.substr(0, out.size() - extension.size());
  return stem + "." + tag + extension;
}

}  // namespace zinf::cli
