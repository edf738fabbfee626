// OpenAI Batch API files (also vLLM's run-batch format): request lines in, response lines out.
// A prompt file whose first line has "custom_id" is read as one; docs/cli.md has the mapping.
#pragma once

#include <cstdint>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/request.h"

namespace zinf::cli {

struct PromptEntry;

enum class OpenAiEndpoint : uint8_t { kChatCompletions, kCompletions };

// What a result line of a Batch request needs beside the completion.
struct OpenAiRequest {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kChatCompletions;
  std::string model;  // "model" of the body, empty when absent
};

// A Batch request line: an object with any of custom_id, method, url, body. The first non-blank
// line of a JSONL prompt file decides whether the file is a Batch file.
bool LooksLikeOpenAiBatchLine(const nlohmann::ordered_json& object);

// Fills `entry` (id = custom_id, a chat or text prompt, its settings, entry.openai) from one
// Batch request line. Failure: zinf::Error without the location, naming the field (a missing
// custom_id, a method other than POST, an unknown url, a body field zinf cannot honour).
void ParseOpenAiBatchLine(const nlohmann::ordered_json& object, PromptEntry& entry);

// The Batch API's result object for a finished request:
//   {"id": "batch_req_<digest>", "custom_id", "response": {"status_code": 200, "request_id",
//    "body": <chat.completion | text_completion>}, "error": null}
// `model` names the model that ran (the body's "model" when given); `created` is a Unix time.
// The id carries the prompt line's digest, which --resume reads back (ResultsFile).
nlohmann::ordered_json OpenAiResultLine(const Completion& completion, const OpenAiRequest& request,
                                        std::string_view model, uint64_t prompt_digest,
                                        std::time_t created);

// The Batch API's object for a request that could not run: "response": null and
// "error": {"code", "message"}.
nlohmann::ordered_json OpenAiErrorLine(std::string_view custom_id, std::string_view message,
                                       uint64_t prompt_digest);

// The prompt digest a result line's id carries ("batch_req_" + 16 hex digits), or 0.
uint64_t DigestFromOpenAiId(std::string_view id);

}  // namespace zinf::cli
