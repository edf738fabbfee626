// The generator's request source for `zinf generate`; see request_feed.h.
#include "cmd/request_feed.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cmd/prompt_ids.h"
#include "engine/error.h"

namespace zinf::cli {

RequestFeed::RequestFeed(const std::string& path, const PromptFileOptions& options,
                         const Tokenizer* tokenizer, const formats::ChatTemplates& chat_templates,
                         std::time_t chat_now, const Request& defaults, std::string model_name,
                         ResultsFile& output, FailureTally& failures)
    : reader_(path, options),
      tokenizer_(tokenizer),
      chat_templates_(chat_templates),
      chat_now_(chat_now),
      defaults_(defaults),
      model_name_(std::move(model_name)),
      output_(output),
      failures_(failures) {}

std::optional<Request> RequestFeed::Next() {
  while (!error_) {
    std::optional<PromptEntry> entry;
    try {
      entry = reader_.Next();
    } catch (const Error& error) {  // only the prompt file's errors: the output's propagate
      error_ = error.what();
      break;
    }
    if (!entry) break;
    if (output_.done_ids().contains(entry->id)) continue;
    if ((entry->text || entry->chat) && tokenizer_ == nullptr) {
      error_ = fmt::format("{}:{}: a text or chat prompt needs a tokenizer", reader_.path(),
                           entry->line);
      break;
    }
    if (entry->openai) WarnOnOtherModel(*entry->openai);
    if (!entry->error.empty()) {
      WriteError(*entry, entry->error);
      continue;
    }
    Request request = RequestFor(*entry, defaults_);
    if (entry->text || entry->chat) {
      std::optional<std::vector<TokenId>> ids = EncodedPromptIds(*entry);
      if (!ids) continue;
      request.prompt_ids = std::move(*ids);
    }
    in_flight_[entry->id] = InFlightRequest{entry->digest, entry->openai};
    return request;
  }
  return std::nullopt;
}

std::optional<std::vector<TokenId>> RequestFeed::EncodedPromptIds(const PromptEntry& entry) {
  // CheckPromptFile refuses this before any work.
  if (entry.chat && chat_templates_.For(!entry.chat->tools.is_null()) == nullptr) {
    error_ = fmt::format("{}:{}: a \"messages\" request needs a chat template", reader_.path(),
                         entry.line);
    return std::nullopt;
  }
  try {
    return PromptIds(entry, *tokenizer_, chat_templates_, chat_now_);
  } catch (const ChatTemplateFailure& error) {
    WriteError(entry, fmt::format("chat template: {}", error.what()));
    return std::nullopt;
  }
}

void RequestFeed::WriteError(const PromptEntry& entry, const std::string& message) {
  failures_.Add(entry.id, entry.line, message);
  output_.AppendError({entry.id, entry.id_is_number}, entry.line, message, entry.digest,
                      entry.openai ? &*entry.openai : nullptr);
  ++errors_written_;
}

void RequestFeed::WarnOnOtherModel(const OpenAiRequest& request) {
  if (request.model.empty() || request.model == model_name_) return;
  if (models_warned_.insert(request.model).second) {
    spdlog::warn("Batch requests name model \"{}\"; zinf runs {} for them and names it so in the "
                 "results",
                 request.model, model_name_);
  }
}

}  // namespace zinf::cli
