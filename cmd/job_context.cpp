// JobContextTally and its use by the planner; see job_context.h.
#include "cmd/job_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "cmd/prompt_ids.h"

namespace zinf::cli {

JobContextTally::JobContextTally(const Tokenizer* tokenizer,
                                 const formats::ChatTemplates& chat_templates,
                                 const Request& defaults, std::time_t chat_now)
    : tokenizer_(tokenizer),
      chat_templates_(chat_templates),
      defaults_(defaults),
      chat_now_(chat_now) {}

int64_t JobContextTally::PromptTokens(const PromptEntry& entry) const {
  if (!entry.error.empty()) return -1;
  if (entry.ids) return static_cast<int64_t>(entry.ids->size());
  if (tokenizer_ == nullptr || !(entry.text || entry.chat)) return -1;
  if (entry.chat && chat_templates_.For(!entry.chat->tools.is_null()) == nullptr) return -1;
  try {
    return static_cast<int64_t>(PromptIds(entry, *tokenizer_, chat_templates_, chat_now_).size());
  } catch (const ChatTemplateFailure&) {
    return -1;  // the feed writes this request's error line
  }
}

void JobContextTally::Add(const PromptEntry& entry) {
  ++job_.entries;
  const int64_t prompt = PromptTokens(entry);
  if (prompt < 0) return;
  const int64_t fresh = RequestFor(entry, defaults_).max_new_tokens;
  ++job_.requests;
  longest_ = std::max(longest_, prompt + fresh);
  const double steps = static_cast<double>(fresh - 1);
  decode_steps_ += steps;
  attended_ += steps * (static_cast<double>(prompt) + static_cast<double>(fresh) / 2);
}

JobContext JobContextTally::result() const {
  JobContext job = job_;
  job.longest = static_cast<int>(std::min<int64_t>(longest_, std::numeric_limits<int>::max()));
  job.mean_attended = decode_steps_ > 0 ? static_cast<int>(attended_ / decode_steps_ + 0.5) : 0;
  return job;
}

void ApplyJobContext(const JobContext& job, SessionOptions& session) {
  if (job.requests == 0) return;
  session.job_context = job.longest;
  if (session.mean_context == 0) session.mean_context = job.mean_attended;
}

std::string DescribeJobContext(const JobContext& job) {
  return fmt::format("{} requests need up to {} positions (prompt + max_new_tokens), and decode "
                     "steps attend over {} on average",
                     job.requests, job.longest, job.mean_attended);
}

}  // namespace zinf::cli
