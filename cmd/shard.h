// Sharding a prompt file across the tasks of a job array: which requests a task runs, which shard
// a scheduler's environment names, and the output file each shard writes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace zinf::cli {

// Shard `index` of `count` holds the requests whose ordinal among the prompt file's request lines
// (its non-blank lines, 0-based, bad lines included) is `index` modulo `count`. Round robin rather
// than contiguous ranges: a task learns its share without first counting the file, the shards stay
// within one request of each other in size, and appending prompts to the file leaves every request
// in the shard it was in. Stable: merge and resume rely on it (docs/cli.md).
struct Shard {
  int64_t index = 0;  // 0 <= index < count
  int64_t count = 1;  // >= 1

  bool Holds(int64_t request_idx) const { return request_idx % count == index; }
  bool operator==(const Shard&) const = default;
};

// "K/N" with 0 <= K < N. Failure: zinf::Error saying what is wrong ("4/4: K must be below N").
Shard ParseShard(std::string_view text);

// "3/8", as the flag takes it and OUT.run.json records it.
std::string ShardText(const Shard& shard);

// Where the shard of a run comes from, in order:
//  1. `--shard K/N` (`flag`); "none" runs the whole file, whatever the environment says;
//  2. Slurm: SLURM_ARRAY_TASK_ID. With a count given (`--shard-count N` or ZINF_SHARD_COUNT) the
//     array's indices are the shard numbers (submit --array=0-(N-1), resubmit --array=3,17);
//     without one, the array must be contiguous (SLURM_ARRAY_TASK_MAX - MIN + 1 = COUNT) and
//     shard K = TASK_ID - TASK_MIN of COUNT, so --array=1-8 works too;
//  3. Kubernetes: JOB_COMPLETION_INDEX (an Indexed Job), with the count given as above;
//  4. otherwise none: the whole file.
// `getenv` reads the environment (tests pass their own). `origin` is set to where the shard came
// from ("--shard", "Slurm array task 5", ...). Failure: zinf::Error naming the variable or flag and
// what is wrong (a non-number, an index outside the count, a sparse array without a count).
struct ShardSources {
  std::string flag;                   // --shard, empty when not given
  std::optional<int64_t> count_flag;  // --shard-count
  std::function<const char*(const char*)> getenv;
};
std::optional<Shard> ResolveShard(const ShardSources& sources, std::string* origin = nullptr);

// The output file of `shard` for `--out` `out`: "{shard}" in `out` is replaced by the shard's tag,
// else the tag goes before the extension: results.jsonl, 3/8 -> results.shard-003-of-008.jsonl.
// Numbers are zero-padded to at least 3 digits (and to N's width) so `ls` lists shards in order.
// "-" (stdout) stays as it is.
std::string ShardOutputPath(const std::string& out, const Shard& shard);

// "shard-003-of-008".
std::string ShardTag(const Shard& shard);

}  // namespace zinf::cli
