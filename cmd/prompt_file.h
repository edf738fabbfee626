// Reading `zinf generate --prompts FILE`: plain text (one prompt a line) or JSON lines with
// per-request settings.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/chat_request.h"
#include "cmd/id_set.h"
#include "cmd/openai_batch.h"
#include "cmd/shard.h"
#include "engine/request.h"
#include "engine/tokenizer.h"

namespace zinf::cli {

// Per-request settings from a JSONL line; an unset field keeps the CLI default.
struct RequestOverrides {
  std::optional<int> max_new_tokens;
  std::optional<double> temperature;
  std::optional<int> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<uint64_t> seed;
  std::optional<std::vector<std::string>> stop;
  std::optional<bool> ignore_eos;
  std::optional<int> logprobs;  // -1: none; N >= 0: chosen token plus top N
};

// One request read from the prompt file. Exactly one of `text`, `ids` and `chat` is set.
struct PromptEntry {
  int64_t line = 0;  // 1-based line in the prompt file
  // 0-based ordinal among the file's request lines (non-blank lines, bad ones included): what
  // sharding goes by (cmd/shard.h).
  int64_t request_idx = 0;
  std::string id;  // as given ("id"; a number as its JSON text), else the line number
  // "id" was a JSON integer, or there was none and the id is the line number (written back as
  // a number). Either way 7 and "7" are the same id: a duplicate in one file, done on resume.
  bool id_is_number = true;
  // XXH3-64 of the line as written: results carry it, so --resume can tell that a done request
  // is still the same one (cmd/resume_check.h).
  uint64_t digest = 0;
  std::optional<std::string> text;
  std::optional<std::vector<TokenId>> ids;
  std::optional<ChatPrompt> chat;  // "messages": rendered with the chat template, then tokenized
  RequestOverrides overrides;
  std::optional<OpenAiRequest> openai;  // a line of an OpenAI Batch file: answered in its shape
  // Non-empty: this request cannot run (e.g. its prompt is not valid UTF-8). The file as a whole is
  // fine; generate reports the request as failed and goes on with the others.
  std::string error;
};

enum class PromptFileFormat : uint8_t {
  kText,         // one prompt per non-empty line; id = line number
  kJsonl,        // one JSON object per non-empty line
  kOpenAiBatch,  // JSONL whose first line has "custom_id" (cmd/openai_batch.h); id = custom_id
};

struct PromptFileOptions {
  // Log each malformed line (spdlog::warn) and skip it, instead of failing on the first.
  bool skip_bad_lines = false;
  // Only this shard's requests are returned. Every line is still parsed and checked (a bad line or
  // a duplicate id fails every shard alike, before any work), at the cost of parsing the whole
  // file in each task: small beside generating.
  std::optional<Shard> shard;
};

// ".jsonl", ".json" and ".ndjson" are JSON lines; anything else (".txt" included) is text. A
// JSON-lines file turns out to be an OpenAI Batch file when read (kOpenAiBatch).
PromptFileFormat PromptFileFormatFor(std::string_view path);

// Reads a prompt file one entry at a time, so a file of millions of lines is streamed: memory is
// the longest line plus, for JSONL, the set of ids seen (to refuse duplicates); a text file's ids
// are its line numbers and need no set.
// Ownership: owns the open file. Thread-safety: none.
// PATH "-" reads stdin (cmd/stdin_prompts.h): JSONL when its first non-blank character is '{',
// else text; messages then name it "stdin".
// Failure: throws zinf::Error "cannot open prompt file PATH: <strerror>" from the constructor,
// and from Next() "PATH:LINE: <what is wrong>" for a malformed line (bad JSON, wrong types,
// unknown keys, not exactly one of prompt/prompt_ids/messages, a duplicate id or custom_id) unless
// options.skip_bad_lines, or "cannot read prompt file PATH" for a read error. Invalid UTF-8 in a
// prompt is not a file error: see PromptEntry::error. After a throw the reader may go on.
class PromptFileReader {
 public:
  explicit PromptFileReader(const std::string& path, const PromptFileOptions& options = {});
  ~PromptFileReader();
  PromptFileReader(const PromptFileReader&) = delete;
  PromptFileReader& operator=(const PromptFileReader&) = delete;

  // The next entry, skipping blank lines (and bad ones with skip_bad_lines); nullopt at the end.
  std::optional<PromptEntry> Next();
  int64_t line() const { return line_; }  // the last line read, 1-based
  // kOpenAiBatch once a line has shown a Batch file.
  PromptFileFormat format() const { return format_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  PromptFileFormat format_;
  bool format_decided_ = false;  // a JSON line has shown whether this is a Batch file
  PromptFileOptions options_;
  std::FILE* file_ = nullptr;
  char* line_buffer_ = nullptr;  // getline's, grown to the longest line
  size_t line_capacity_ = 0;
  int64_t line_ = 0;
  int64_t request_lines_ = 0;  // non-blank lines read so far
  IdSet seen_ids_;             // JSONL only
};

// Every entry of a prompt file at once (PromptFileReader until the end); for small files and tests.
std::vector<PromptEntry> ReadPromptFile(const std::string& path,
                                        const PromptFileOptions& options = {});

// ReadPromptFile on text already in memory; `name` stands for the file in messages.
std::vector<PromptEntry> ParsePrompts(std::string_view content, std::string_view name,
                                      PromptFileFormat format,
                                      const PromptFileOptions& options = {});

// Whether `key` may appear in a zinf JSONL prompt line (id, prompt, messages, the settings...).
bool IsPromptLineKey(std::string_view key);

// The per-request settings of a JSONL object (max_new_tokens, temperature, ...); other keys are
// left alone. Failure: zinf::Error naming the key and what is wrong, without the location.
RequestOverrides ParseOverrides(const nlohmann::ordered_json& object);

// Sets each field of `request` that `overrides` sets; the others keep their (CLI) defaults.
void ApplyOverrides(const RequestOverrides& overrides, Request& request);

// `defaults` with the entry's id, line, prompt_ids (when given as ids) and overrides applied.
// Text prompts are left for the caller to tokenize into prompt_ids.
Request RequestFor(const PromptEntry& entry, const Request& defaults);

// Byte offset of the first invalid UTF-8 sequence (overlong, surrogate, above U+10FFFF, truncated,
// stray continuation), or -1 when `text` is valid.
int64_t FirstInvalidUtf8(std::string_view text);
// `text` with each byte that does not start a valid sequence replaced by U+FFFD.
std::string ReplaceInvalidUtf8(std::string_view text);

}  // namespace zinf::cli
