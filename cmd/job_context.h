// What `zinf generate`'s requests need of the KV cache, read off the prompt file before the plan:
// each sequence's cache holds the longest request rather than the model's whole context, and the
// planner's attention time counts the positions decode steps really attend over.
#pragma once

#include <cstdint>
#include <string>

#include "cmd/prompt_file.h"
#include "cmd/results_file.h"
#include "cmd/session_options.h"
#include "engine/request.h"
#include "engine/tokenizer.h"
#include "model_formats/checkpoint_chat_template.h"

namespace zinf::cli {

struct JobContext {
  int64_t entries = 0;    // the file's requests not already done, runnable or not
  int requests = 0;       // those with a prompt that could be encoded
  int longest = 0;        // positions: the largest prompt + max_new_tokens of a request
  int mean_attended = 0;  // Σ n · (p + n / 2) / Σ n over the requests: p prompt tokens, n new
};

// Reads `path` as generate's feed will (tokenizing text and rendering chat prompts), leaving out
// requests already in `output` (when given) and those that cannot run (their feed writes their
// errors; without a tokenizer, text and chat prompts). Failure: zinf::Error from the prompt file.
JobContext MeasureJobContext(const std::string& path, const PromptFileOptions& options,
                             const ResultsFile* output, const Tokenizer* tokenizer,
                             const formats::ChatTemplates& chat_templates, const Request& defaults);

// The job's needs as the planner's: the KV cache's context (where --max-context leaves it to
// the default and the job needs fewer) and the mean attended (where none was given).
void ApplyJobContext(const JobContext& job, SessionOptions& session);

// One line on what the job needs and what the cache holds, for logs and `zinf plan`.
std::string DescribeJobContext(const JobContext& job, const SessionOptions& given);

}  // namespace zinf::cli
