// What `zinf generate`'s requests need of the KV cache, read off the prompt file before the plan:
// each sequence's cache holds the longest request rather than the model's whole context, and the
// planner's attention time counts the positions decode steps really attend over.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "cmd/prompt_file.h"
#include "cmd/session_options.h"
#include "engine/request.h"
#include "engine/tokenizer.h"
#include "model_formats/checkpoint_chat_template.h"

namespace zinf::cli {

struct JobContext {
  int64_t entries = 0;    // the requests still to run, runnable or not
  int requests = 0;       // those with a prompt that could be encoded
  int longest = 0;        // positions: the largest prompt + max_new_tokens of a request
  int mean_attended = 0;  // Σ (n − 1)(p + n / 2) / Σ (n − 1): p prompt tokens, n new ones, the
      // first sampled by the prefill step and the n − 1 others by decode steps
};

// Adds up a job's requests as its prompt file is read: each entry encoded as generate's feed
// will encode it (text tokenized, chat prompts rendered at the run's `chat_now`); those that
// cannot run (a bad line, a failing template, no tokenizer for text) count only as entries.
class JobContextTally {
 public:
  JobContextTally(const Tokenizer* tokenizer, const formats::ChatTemplates& chat_templates,
                  const Request& defaults, std::time_t chat_now);
  // An entry still to run (not already in the output).
  void Add(const PromptEntry& entry);
  JobContext result() const;

 private:
  int64_t PromptTokens(const PromptEntry& entry) const;  // -1: the feed refuses it

  const Tokenizer* tokenizer_;
  const formats::ChatTemplates& chat_templates_;
  const Request& defaults_;
  std::time_t chat_now_;
  JobContext job_;
  int64_t longest_ = 0;
  double decode_steps_ = 0, attended_ = 0;
};

// The job's needs as the planner's: the KV cache's context (where --max-context leaves it to
// the default and the job needs fewer) and the mean attended (where none was given).
void ApplyJobContext(const JobContext& job, SessionOptions& session);

// One line on what the job needs, for logs and `zinf plan` (the context line says what the
// cache then holds).
std::string DescribeJobContext(const JobContext& job);

}  // namespace zinf::cli
