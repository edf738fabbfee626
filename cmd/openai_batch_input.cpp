// Reading OpenAI Batch request lines into prompt entries; see openai_batch.h.
// Self-contained (engine headers, nlohmann json, fmt) so the prompt-file fuzz target compiles it in.
#include <limits>
#include <set>
#include <string>

#include "cmd/chat_request.h"
#include "cmd/openai_batch.h"
#include "cmd/prompt_file.h"
#include "engine/error.h"

namespace zinf::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kChatUrl = "/v1/chat/completions";
constexpr std::string_view kCompletionsUrl = "/v1/completions";

// Body fields that change nothing zinf computes (bookkeeping for OpenAI's service).
const std::set<std::string, std::less<>> kIgnoredBodyFields = {
    "model", "user", "metadata", "store", "service_tier", "parallel_tool_calls", "stream_options"};

// Body fields zinf honours: those of both endpoints, then each endpoint's own.
const std::set<std::string, std::less<>> kSharedFields = {"max_tokens",
                                                          "temperature",
                                                          "top_p",
                                                          "seed",
                                                          "stop",
                                                          "logprobs",
                                                          "n",
                                                          "stream",
                                                          "frequency_penalty",
                                                          "presence_penalty",
                                                          "top_k",
                                                          "min_p",
                                                          "repetition_penalty",
                                                          "ignore_eos"};
const std::set<std::string, std::less<>> kChatFields = {
    "messages",    "tools", "tool_choice", "chat_template_kwargs", "max_completion_tokens",
    "top_logprobs"};
const std::set<std::string, std::less<>> kCompletionFields = {"prompt", "echo", "suffix",
                                                              "best_of"};

// A field OpenAI defines that would change the output in a way zinf does not implement:
// refused unless it has its neutral value, rather than silently giving other output.
void RequireNeutral(const Json& body, std::string_view key, const Json& neutral,
                    std::string_view why) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null() || *it == neutral) return;
  Fail("body.{} = {} is not supported ({}); remove it or set it to {}", key, it->dump(), why,
       neutral.dump());
}

void CheckBodyFields(const Json& body, const std::set<std::string, std::less<>>& honoured,
                     std::string_view url) {
  for (const auto& [key, value] : body.items()) {
    if (honoured.contains(key) || kSharedFields.contains(key) || kIgnoredBodyFields.contains(key)) {
      continue;
    }
    Fail("body.{} is not a field zinf supports for {} (docs/cli.md lists them)", key, url);
  }
  RequireNeutral(body, "n", 1, "one choice per request; repeat the request with other seeds");
  RequireNeutral(body, "stream", false, "a batch file's results are written whole");
  RequireNeutral(body, "frequency_penalty", 0, "use repetition_penalty");
  RequireNeutral(body, "presence_penalty", 0, "use repetition_penalty");
}

// zinf's own names for the sampling fields, so ParseOverrides checks them with the CLI's limits.
Json SamplingFields(const Json& body, OpenAiEndpoint endpoint) {
  Json zinf = Json::object();
  for (std::string_view key : {"temperature", "top_p", "seed", "stop", "top_k", "min_p",
                               "repetition_penalty", "ignore_eos"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) zinf[std::string(key)] = *it;
  }
  // max_completion_tokens replaced max_tokens in the chat API; both are accepted, the newer wins.
  for (std::string_view key : {"max_tokens", "max_completion_tokens"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) zinf["max_new_tokens"] = *it;
  }
  const auto logprobs = body.find("logprobs");
  const bool has_logprobs = logprobs != body.end() && !logprobs->is_null();
  if (endpoint == OpenAiEndpoint::kChatCompletions) {
    // Chat: logprobs is a switch and top_logprobs the number of alternatives.
    const auto top = body.find("top_logprobs");
    if (has_logprobs && !logprobs->is_boolean()) {
      Fail("body.logprobs must be true or false for {}, got {}", kChatUrl, logprobs->dump());
    }
    const bool on = has_logprobs && logprobs->get<bool>();
    if (top != body.end() && !top->is_null()) {
      if (!on) Fail("body.top_logprobs needs body.logprobs = true");
      zinf["logprobs"] = *top;
    } else if (on) {
      zinf["logprobs"] = 0;
    }
  } else if (has_logprobs) {
    zinf["logprobs"] = *logprobs;  // completions: the number of alternatives
  }
  return zinf;
}

void ReadChatBody(const Json& body, PromptEntry& entry) {
  CheckBodyFields(body, kChatFields, kChatUrl);
  const auto messages = body.find("messages");
  if (messages == body.end()) Fail("body.messages is missing (a chat request needs them)");
  const auto tools = body.find("tools");
  const auto kwargs = body.find("chat_template_kwargs");
  const auto tool_choice = body.find("tool_choice");
  if (tool_choice != body.end() && !tool_choice->is_null() &&
      !(tool_choice->is_string() && (*tool_choice == "auto" || *tool_choice == "none"))) {
    Fail("body.tool_choice = {} is not supported: the model chooses (\"auto\"), or give no "
         "tools",
         tool_choice->dump());
  }
  const bool tools_off = tool_choice != body.end() && *tool_choice == "none";
  try {
    entry.chat = ParseChatPrompt(*messages, tools == body.end() || tools_off ? nullptr : &*tools,
                                 kwargs == body.end() ? nullptr : &*kwargs);
  } catch (const Error& error) {
    Fail("in body: {}", error.what());
  }
}

void ReadCompletionBody(const Json& body, PromptEntry& entry) {
  CheckBodyFields(body, kCompletionFields, kCompletionsUrl);
  RequireNeutral(body, "echo", false, "the prompt is not repeated in the text");
  RequireNeutral(body, "suffix", nullptr, "no insertion mode");
  RequireNeutral(body, "best_of", 1, "one candidate per request");
  const auto prompt = body.find("prompt");
  if (prompt == body.end()) Fail("body.prompt is missing (a completion request needs one)");
  // One prompt per request: a string, a list of token ids, or a list holding one of those.
  const Json& one = prompt->is_array() && prompt->size() == 1 && !(*prompt)[0].is_number()
                        ? (*prompt)[0]
                        : *prompt;
  if (one.is_string()) {
    entry.text = one.get<std::string>();
    return;
  }
  if (one.is_array() && !one.empty() && one[0].is_number()) {
    std::vector<TokenId> ids;
    for (const Json& id : one) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > std::numeric_limits<TokenId>::max()) {
        Fail("body.prompt must be a string or token ids (integers >= 0), got {}", id.dump());
      }
      ids.push_back(static_cast<TokenId>(id.get<uint64_t>()));
    }
    entry.ids = std::move(ids);
    return;
  }
  Fail("body.prompt must be a string or a non-empty array of token ids (one prompt per request; "
       "give each its own line), got {}",
       prompt->dump().substr(0, 80));
}

}  // namespace

bool LooksLikeOpenAiBatchLine(const Json& object) {
  return object.is_object() && (object.contains("custom_id") || object.contains("body") ||
                                object.contains("url") || object.contains("method"));
}

void ParseOpenAiBatchLine(const Json& object, PromptEntry& entry) {
  for (const auto& [key, value] : object.items()) {
    if (key != "custom_id" && key != "method" && key != "url" && key != "body") {
      Fail("unknown key \"{}\" in an OpenAI Batch request (known: custom_id, method, url, body)",
           key);
    }
  }
  const auto custom_id = object.find("custom_id");
  if (custom_id == object.end()) Fail("\"custom_id\" is missing (every Batch request needs one)");
  if (!custom_id->is_string() || custom_id->get_ref<const std::string&>().empty()) {
    Fail("\"custom_id\" must be a non-empty string, got {}", custom_id->dump());
  }
  entry.id = custom_id->get<std::string>();
  entry.id_is_number = false;
  const auto method = object.find("method");
  if (method == object.end() || *method != "POST") {
    Fail("\"method\" must be \"POST\", got {}", method == object.end() ? "none" : method->dump());
  }
  const auto url = object.find("url");
  if (url == object.end() || !url->is_string())
    Fail("\"url\" must be {} or {}", kChatUrl, kCompletionsUrl);
  OpenAiRequest request;
  const std::string& url_text = url->get_ref<const std::string&>();
  if (url_text == kChatUrl) {
    request.endpoint = OpenAiEndpoint::kChatCompletions;
  } else if (url_text == kCompletionsUrl) {
    request.endpoint = OpenAiEndpoint::kCompletions;
  } else {
    Fail("\"url\" {} is not supported; zinf runs {} and {}", url->dump(), kChatUrl,
         kCompletionsUrl);
  }
  const auto body = object.find("body");
  if (body == object.end() || !body->is_object()) Fail("\"body\" must be an object");
  if (auto model = body->find("model"); model != body->end() && !model->is_null()) {
    if (!model->is_string()) Fail("body.model must be a string, got {}", model->dump());
    request.model = model->get<std::string>();
  }
  if (request.endpoint == OpenAiEndpoint::kChatCompletions) {
    ReadChatBody(*body, entry);
  } else {
    ReadCompletionBody(*body, entry);
  }
  const Json settings = SamplingFields(*body, request.endpoint);
  try {
    entry.overrides = ParseOverrides(settings);
  } catch (const Error& error) {
    Fail("body: {} (OpenAI's max_tokens and max_completion_tokens are zinf's max_new_tokens, "
         "top_logprobs its logprobs)",
         error.what());
  }
  entry.openai = std::move(request);
}

}  // namespace zinf::cli
