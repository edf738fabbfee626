// Feeding `zinf generate`'s generator from the prompt file, one request at a time: chat prompts
// rendered through the chat template, text tokenized, entries that cannot run written as error
// lines, ids already in the output skipped.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cmd/failure_tally.h"
#include "cmd/prompt_file.h"
#include "cmd/results_file.h"
#include "engine/request.h"
#include "engine/tokenizer.h"
#include "model_formats/checkpoint_chat_template.h"

namespace zinf::cli {

// What a result line needs of its request beyond the completion, kept while it is in flight.
struct InFlightRequest {
  uint64_t digest = 0;                  // of the prompt line (PromptEntry::digest)
  std::optional<OpenAiRequest> openai;  // set for a Batch request: answered in its shape
};

// Memory is one entry plus the requests in flight, not the file. Thread-safety: none (the
// generator calls it from one thread).
// Failure: a line that turns malformed after the up-front check (the file changed meanwhile)
// ends the feed; error() then holds the message, and the caller fails once the requests in
// flight are finished and written. A chat prompt whose template fails (raise_exception, a type
// error) is written as that request's error line, and the feed goes on.
class RequestFeed {
 public:
  // `chat_now`: what strftime_now() in a chat template renders (prompt_ids.h).
  RequestFeed(const std::string& path, const PromptFileOptions& options, const Tokenizer* tokenizer,
              const formats::ChatTemplates& chat_templates, std::time_t chat_now,
              const Request& defaults, std::string model_name, ResultsFile& output,
              FailureTally& failures);

  std::optional<Request> Next();

  // What a request handed out needs for its result line; forgotten once taken.
  InFlightRequest Take(const std::string& id) { return in_flight_.extract(id).mapped(); }

  const std::optional<std::string>& error() const { return error_; }
  size_t errors_written() const { return errors_written_; }
  // The name Batch results give the model that ran.
  const std::string& model_name() const { return model_name_; }

 private:
  // PromptIds of a text or chat prompt; nullopt (after writing its error line, or ending the feed
  // without a template) when the chat template fails.
  std::optional<std::vector<TokenId>> EncodedPromptIds(const PromptEntry& entry);
  void WriteError(const PromptEntry& entry, const std::string& message);
  void WarnOnOtherModel(const OpenAiRequest& request);

  PromptFileReader reader_;
  const Tokenizer* tokenizer_;
  const formats::ChatTemplates& chat_templates_;
  std::time_t chat_now_;
  const Request& defaults_;
  std::string model_name_;
  ResultsFile& output_;
  FailureTally& failures_;
  std::optional<std::string> error_;
  size_t errors_written_ = 0;
  std::unordered_map<std::string, InFlightRequest> in_flight_;
  std::unordered_set<std::string> models_warned_;
};

}  // namespace zinf::cli
