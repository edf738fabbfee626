// ResumeCheck (cmd/resume_check.h).
#include "cmd/resume_check.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/error.h"

namespace zinf::cli {

bool ResumeCheck::IsDone(const PromptEntry& entry) {
  if (!output_.done_ids().contains(entry.id)) return false;
  ++done_seen_;
  const auto digest = output_.done_digests().find(entry.id);
  if (digest == output_.done_digests().end()) {
    ++undigested_;
  } else if (digest->second != entry.digest) {
    if (changed_++ < 3) {
      changed_examples_.push_back(fmt::format("id {} (line {})", entry.id, entry.line));
    }
  }
  return true;
}

void ResumeCheck::Finish(const std::string& prompts_path, bool force) const {
  const std::string& out = output_.path();
  std::vector<std::string> problems;
  if (changed_ > 0) {
    problems.push_back(fmt::format("{} requests whose results are in {} have changed in {}: {}{}",
                                   changed_, out, prompts_path, fmt::join(changed_examples_, ", "),
                                   changed_ > 3 ? ", …" : ""));
  }
  const int64_t missing = static_cast<int64_t>(output_.done_ids().size()) - done_seen_;
  if (missing > 0) {
    problems.push_back(
        fmt::format("{} results in {} have ids that {} does not hold", missing, out, prompts_path));
  }
  if (undigested_ > 0) {
    problems.push_back(fmt::format("{} results in {} carry no prompt digest (an earlier zinf "
                                   "wrote them), so zinf cannot tell they match",
                                   undigested_, out));
  }
  if (problems.empty()) return;
  const std::string listed = fmt::format("{}", fmt::join(problems, "; "));
  if (force) {
    spdlog::warn("resuming anyway (--resume-force): {}", listed);
    return;
  }
  Fail("{} was written for another prompt file: {}. Resume with the prompt file that made it, "
       "choose another --out path, or pass --resume-force to mix them",
       out, listed);
}

}  // namespace zinf::cli
