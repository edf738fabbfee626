// zinf merge SHARD_PATTERN... --prompts FILE --out MERGED: joins the results files of a job
// array's shards into one, in prompt-file order, once every request is there exactly once.
#include <glob.h>
#include <sys/resource.h>

#include <filesystem>
#include <set>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/flag_checks.h"
#include "cmd/shard_merge.h"
#include "engine/error.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace zinf::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> patterns;
  std::string prompts;
  std::string out;
  bool list_missing = false;
  bool skip_bad_lines = false;
  std::optional<int64_t> shard_count;
};

// The files the patterns name, expanded here with glob(3) so a quoted pattern works as well as
// one the shell expanded; each file once, in the order the patterns and glob give them. A
// results file's run record (OUT.run.json) matches a pattern like results.shard-* too: skipped.
std::vector<std::string> ShardFiles(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  std::set<std::filesystem::path> seen;
  for (const std::string& pattern : patterns) {
    glob_t matched{};
    const int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matched);
    std::vector<std::string> paths(matched.gl_pathv, matched.gl_pathv + matched.gl_pathc);
    ::globfree(&matched);
    if (status == GLOB_NOMATCH) Fail("'{}' matches no file", pattern);
    if (status != 0) Fail("cannot expand '{}': a directory could not be read", pattern);
    size_t kept = 0;
    for (const std::string& path : paths) {
      if (path.ends_with(".run.json") || path.ends_with(".tmp")) continue;
      if (!std::filesystem::is_regular_file(path)) continue;
      ++kept;
      if (seen.insert(std::filesystem::canonical(path)).second) files.push_back(path);
    }
    if (kept == 0) Fail("'{}' matches no results file (only run records or directories)", pattern);
  }
  return files;
}

// One descriptor stays open per shard file while merging: lift the soft limit on open files to
// the hard one, so a job of thousands of shards merges without a ulimit first.
void RaiseOpenFileLimit(size_t files) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= files + 64) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);  // best effort: opening then names the file that failed
}

void RunMerge(const MergeOptions& options) {
  if (options.out.empty() && !options.list_missing) Fail("--out MERGED is required");
  MergeInputs inputs;
  inputs.shard_files = ShardFiles(options.patterns);
  inputs.prompts = options.prompts;
  inputs.prompt_options.skip_bad_lines = options.skip_bad_lines;
  inputs.shard_count = options.shard_count;
  if (!options.out.empty() && std::filesystem::exists(options.out)) {
    for (const std::string& file : inputs.shard_files) {
      if (std::filesystem::equivalent(file, options.out)) {
        Fail("--out {} is one of the shard files the patterns match; merge into another path",
             options.out);
      }
    }
  }
  RaiseOpenFileLimit(inputs.shard_files.size());
  ShardMerge merge(std::move(inputs));
  const MergeFindings& found = merge.Check();
  if (options.list_missing) {
    fmt::print("{}\n", found.MissingShardList());  // stdout: for sbatch --array=$(...)
    std::fflush(stdout);
  }
  for (const std::string& example : found.examples) spdlog::error("{}", example);
  if (found.missing > 0) {
    std::vector<std::string> shards;
    for (const auto& [shard, count] : found.missing_by_shard) {
      if (shards.size() == 20) {
        shards.push_back("…");
        break;
      }
      shards.push_back(fmt::format("shard {}: {}", shard, count));
    }
    spdlog::error("{} of {} requests are missing ({}); rerun those shards with --resume "
                  "(`zinf merge ... --list-missing` prints {})",
                  found.missing, found.requests, fmt::join(shards, ", "), found.MissingShardList());
  }
  // Listing only: missing requests are what was asked for; the other problems still fail.
  if (options.list_missing && options.out.empty() && found.duplicated == 0 && found.foreign == 0) {
    return;
  }
  if (!found.complete()) {
    Fail("{} missing, {} duplicated and {} foreign of {} requests in {} shards{}", found.missing,
         found.duplicated, found.foreign, found.requests, found.shard_count,
         options.out.empty() ? "" : fmt::format("; nothing written to {}", options.out));
  }
  merge.Write(options.out);
  spdlog::info("merged {} requests of {} shards into {}", found.requests, found.shard_count,
               options.out);
}

}  // namespace

void AddMergeCommand(CLI::App& app) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command = app.add_subcommand(
      "merge", "Join the shard files of a job array into one results file, in prompt-file order");
  command
      ->add_option("patterns", options->patterns,
                   "the shards' results files: paths or glob patterns (quoted or not), e.g. "
                   "'results.shard-*.jsonl'")
      ->required();
  command->add_option("--prompts", options->prompts, "the prompt file the shards ran")->required();
  command->add_option("--out", options->out,
                      "the merged file, written once every request of --prompts is in the shard "
                      "files exactly once (atomically: on any problem nothing is written)");
  command->add_flag("--list-missing", options->list_missing,
                    "print the shards with missing requests as a comma list to stdout (e.g. "
                    "3,17, for sbatch --array=3,17); with --out, merge too when none is missing");
  command
      ->add_option("--shard-count", options->shard_count,
                   "N, the number of shards (default: as each file's OUT.run.json records it)")
      ->check(IntAtLeast(1));
  command->add_flag("--skip-bad-lines", options->skip_bad_lines,
                    "as given to generate: malformed prompt lines are not requests");
  command->callback([options] { RunMerge(*options); });
}

}  // namespace zinf::cli
