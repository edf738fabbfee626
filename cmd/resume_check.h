// Before a resumed run does any work: each request already in the results file must still be the
// same request in the prompt file (same id, same line digest), so --resume never mixes the
// results of two prompt files; new requests may be added and failed lines fixed in between.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/prompt_file.h"
#include "cmd/results_file.h"

namespace zinf::cli {

// Not thread-safe; one pass over the prompt file.
class ResumeCheck {
 public:
  explicit ResumeCheck(const ResultsFile& output) : output_(output) {}

  // For every entry of the prompt file, in order: whether its result is already in the output
  // (then it is skipped), noting a done request whose line has changed.
  bool IsDone(const PromptEntry& entry);

  // After the pass: throws zinf::Error naming what does not match (changed requests, results
  // whose ids the prompt file does not hold, results written without digests), or with `force`
  // only warns.
  void Finish(const std::string& prompts_path, bool force) const;

 private:
  const ResultsFile& output_;
  int64_t done_seen_ = 0;
  int64_t changed_ = 0;
  int64_t undigested_ = 0;
  std::vector<std::string> changed_examples_;
};

}  // namespace zinf::cli
