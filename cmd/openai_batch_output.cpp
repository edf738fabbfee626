// Writing OpenAI Batch result lines; see openai_batch.h.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "cmd/openai_batch.h"

namespace zinf::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kIdPrefix = "batch_req_";

// Both the eos tokens and stop strings end a turn the way OpenAI's "stop" does.
const char* OpenAiFinishReason(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

// -inf (a token the sampler could never pick) has no JSON number; OpenAI writes -9999.0.
double FiniteLogprob(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }

Json TokenBytes(const std::string& token) {
  Json bytes = Json::array();
  for (unsigned char byte : token) bytes.push_back(byte);
  return bytes;
}

Json ChatLogprob(const TokenLogprob& logprob) {
  const std::string token = logprob.token.value_or("");
  return Json{
      {"token", token}, {"logprob", FiniteLogprob(logprob.logprob)}, {"bytes", TokenBytes(token)}};
}

Json ChatLogprobs(const Completion& completion) {
  Json content = Json::array();
  for (const StepLogprobs& step : completion.logprobs) {
    Json entry = ChatLogprob(step.chosen);
    Json top = Json::array();
    for (const TokenLogprob& candidate : step.top) top.push_back(ChatLogprob(candidate));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return Json{{"content", std::move(content)}, {"refusal", nullptr}};
}

// The legacy completions shape: parallel arrays, top alternatives as {token: logprob} maps.
Json CompletionLogprobs(const Completion& completion) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(),
       offsets = Json::array();
  size_t offset = 0;
  for (const StepLogprobs& step : completion.logprobs) {
    const std::string token = step.chosen.token.value_or("");
    tokens.push_back(token);
    token_logprobs.push_back(FiniteLogprob(step.chosen.logprob));
    Json alternatives = Json::object();
    for (const TokenLogprob& candidate : step.top) {
      alternatives[candidate.token.value_or("")] = FiniteLogprob(candidate.logprob);
    }
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += token.size();
  }
  return Json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top)},
              {"text_offset", std::move(offsets)}};
}

Json Choice(const Completion& completion, OpenAiEndpoint endpoint) {
  const bool want_logprobs = !completion.logprobs.empty();
  Json choice;
  choice["index"] = 0;
  if (endpoint == OpenAiEndpoint::kChatCompletions) {
    choice["message"] =
        Json{{"role", "assistant"}, {"content", completion.text}, {"refusal", nullptr}};
    choice["logprobs"] = want_logprobs ? ChatLogprobs(completion) : Json(nullptr);
  } else {
    choice["text"] = completion.text;
    choice["logprobs"] = want_logprobs ? CompletionLogprobs(completion) : Json(nullptr);
  }
  choice["finish_reason"] = OpenAiFinishReason(completion.finish_reason);
  return choice;
}

std::string DigestHex(uint64_t digest) { return fmt::format("{:016x}", digest); }

}  // namespace

Json OpenAiResultLine(const Completion& completion, const OpenAiRequest& request,
                      std::string_view model, uint64_t prompt_digest, std::time_t created) {
  const bool chat = request.endpoint == OpenAiEndpoint::kChatCompletions;
  const std::string digest = DigestHex(prompt_digest);
  const int completion_tokens = static_cast<int>(completion.token_ids.size());
  Json body;
  body["id"] = (chat ? "chatcmpl-" : "cmpl-") + digest;
  body["object"] = chat ? "chat.completion" : "text_completion";
  body["created"] = static_cast<int64_t>(created);
  body["model"] = std::string(model);
  body["choices"] = Json::array({Choice(completion, request.endpoint)});
  body["usage"] = Json{{"prompt_tokens", completion.prompt_tokens},
                       {"completion_tokens", completion_tokens},
                       {"total_tokens", completion.prompt_tokens + completion_tokens}};
  Json line;
  line["id"] = std::string(kIdPrefix) + digest;
  line["custom_id"] = completion.id;
  line["response"] =
      Json{{"status_code", 200}, {"request_id", "req_" + digest}, {"body", std::move(body)}};
  line["error"] = nullptr;
  return line;
}

Json OpenAiErrorLine(std::string_view custom_id, std::string_view message, uint64_t prompt_digest) {
  Json line;
  line["id"] = std::string(kIdPrefix) + DigestHex(prompt_digest);
  line["custom_id"] = std::string(custom_id);
  line["response"] = nullptr;
  line["error"] = Json{{"code", "invalid_request"}, {"message", std::string(message)}};
  return line;
}

uint64_t DigestFromOpenAiId(std::string_view id) {
  if (!id.starts_with(kIdPrefix) || id.size() != kIdPrefix.size() + 16) return 0;
  const std::string hex(id.substr(kIdPrefix.size()));
  char* end = nullptr;
  const uint64_t digest = std::strtoull(hex.c_str(), &end, 16);
  return end == hex.c_str() + hex.size() ? digest : 0;
}

}  // namespace zinf::cli
