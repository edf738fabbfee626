// `zinf merge`: the shard files of a job array checked against their prompt file (every request
// exactly once, each from this prompt file) and joined into one results file in prompt-file order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cmd/prompt_file.h"

namespace zinf::cli {

struct MergeInputs {
  std::vector<std::string> shard_files;  // the results files, each once
  std::string prompts;                   // the prompt file the shards ran
  PromptFileOptions prompt_options;      // skip_bad_lines as generate had it; no shard
  // The number of shards; unset: read from each file's OUT.run.json ("shard": "K/N").
  std::optional<int64_t> shard_count;
};

// What the check found. Each problem list holds a few examples; the counts are complete.
struct MergeFindings {
  int64_t requests = 0;     // request lines in the prompt file
  int64_t shard_count = 0;  // N
  // Requests in no shard file, by the shard they belong to: shard -> how many.
  std::map<int64_t, int64_t> missing_by_shard;
  int64_t missing = 0;
  int64_t duplicated = 0;  // requests in more than one line of the shard files
  // Lines that do not belong to this prompt file: another prompt line's digest, an id the prompt
  // file lacks, or a request in the file of another shard than its own.
  int64_t foreign = 0;
  std::vector<std::string> examples;  // one line per problem shown, naming ids, shards and files

  bool complete() const { return missing == 0 && duplicated == 0 && foreign == 0; }
  // "3,17": the shards to resubmit (sbatch --array=3,17).
  std::string MissingShardList() const;
};

// Reads every shard file once to index its lines (an id's 128-bit XXH3, the file, the byte offset
// and length of its line, the prompt digest it carries: 40 bytes a line, so 10^7 results index in
// 400 MB), then the prompt file once to check it; Write then copies each line, byte for byte, in
// prompt-file order. The result lines themselves are never all in memory. Two ids are told apart
// by their 128-bit hashes alone: a collision among 10^7 ids has a chance of about 10^-25.
// Ownership: owns the open shard files. Thread-safety: none.
// Failure: zinf::Error naming the file and line of an unreadable shard file or of a line that is
// not a zinf result or lacks its prompt digest, shard files of different runs (model or settings,
// from OUT.run.json), an unknown or inconsistent shard count, and the prompt file's own errors.
// A torn final line (a task killed mid-write) is left out with a warning: its request is missing.
class ShardMerge {
 public:
  explicit ShardMerge(MergeInputs inputs);
  ~ShardMerge();
  ShardMerge(const ShardMerge&) = delete;
  ShardMerge& operator=(const ShardMerge&) = delete;

  // One pass over the prompt file; call once.
  const MergeFindings& Check();

  // Writes the merged file atomically (a temporary renamed over `out`), so a failure leaves `out`
  // as it was. Needs Check() to have found the shards complete. Failure: zinf::Error naming the
  // file (a shard file changed since it was indexed, a write error).
  void Write(const std::string& out);

 private:
  struct ShardFile;
  struct LineRef;
  void IndexFile(uint32_t file_idx);
  void ReadShardOfFile(ShardFile& file);
  std::string IdOfLine(const LineRef& line) const;  // read back, for messages
  std::string Where(const LineRef& line) const;     // "FILE (shard K)"

  MergeInputs inputs_;
  std::vector<ShardFile> files_;
  std::vector<LineRef> lines_;   // sorted by id hash after indexing
  std::vector<uint32_t> order_;  // lines_ indices in prompt-file order, filled by Check
  MergeFindings findings_;
  bool checked_ = false;
};

}  // namespace zinf::cli
