// MeasureJobContext; see job_context.h.
#include "cmd/job_context.h"

#include <algorithm>
#include <limits>

#include "cmd/chat_prompt_ids.h"
#include "engine/error.h"

#include <fmt/format.h>

namespace zinf::cli {

namespace {

// The prompt's length in tokens, or -1 when the feed will refuse it.
int64_t PromptTokens(const PromptEntry& entry, const Tokenizer* tokenizer,
                     const formats::ChatTemplates& chat_templates) {
  if (entry.ids) return static_cast<int64_t>(entry.ids->size());
  if (tokenizer == nullptr) return -1;
  if (entry.text) return static_cast<int64_t>(tokenizer->Encode(*entry.text, true).size());
  if (!entry.chat) return -1;
  const formats::ChatTemplate* chat_template = chat_templates.For(!entry.chat->tools.is_null());
  if (chat_template == nullptr) return -1;
  try {
    return static_cast<int64_t>(ChatPromptIds(*entry.chat, *chat_template, *tokenizer).size());
  } catch (const Error&) {
    return -1;  // the feed writes this request's error line
  }
}

}  // namespace

JobContext MeasureJobContext(const std::string& path, const PromptFileOptions& options,
                             const ResultsFile* output, const Tokenizer* tokenizer,
                             const formats::ChatTemplates& chat_templates,
                             const Request& defaults) {
  PromptFileReader reader(path, options);
  JobContext job;
  double new_tokens = 0, attended = 0;
  int64_t longest = 0;
  while (std::optional<PromptEntry> entry = reader.Next()) {
    if (output != nullptr && output->done_ids().contains(entry->id)) continue;
    ++job.entries;
    if (!entry->error.empty()) continue;
    const int64_t prompt = PromptTokens(*entry, tokenizer, chat_templates);
    if (prompt < 0) continue;
    const int64_t fresh = RequestFor(*entry, defaults).max_new_tokens;
    ++job.requests;
    longest = std::max(longest, prompt + fresh);
    new_tokens += static_cast<double>(fresh);
    attended += static_cast<double>(fresh) * (static_cast<double>(prompt) + fresh / 2.0);
  }
  job.longest = static_cast<int>(std::min<int64_t>(longest, std::numeric_limits<int>::max()));
  job.mean_attended = new_tokens > 0 ? static_cast<int>(attended / new_tokens + 0.5) : 0;
  return job;
}

void ApplyJobContext(const JobContext& job, SessionOptions& session) {
  if (job.requests == 0) return;
  session.job_context = job.longest;
  if (session.mean_context == 0) session.mean_context = job.mean_attended;
}

std::string DescribeJobContext(const JobContext& job, const SessionOptions& given) {
  return fmt::format("{} requests need up to {} positions (prompt + max_new_tokens), and decode "
                     "steps attend over {} on average{}",
                     job.requests, job.longest, job.mean_attended,
                     given.max_context > 0 ? "" : ": the KV cache is sized to the longest");
}

}  // namespace zinf::cli
