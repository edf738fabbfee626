// Reading and validating prompt files (.txt and .jsonl); see prompt_file.h.
// Self-contained on purpose (engine headers, nlohmann json, fmt, spdlog) so tests can include it.
#include "cmd/prompt_file.h"
#include "cmd/json_message.h"
#include "cmd/stdin_prompts.h"
#include "model_formats/json_depth.h"

#include <spdlog/spdlog.h>

#include <xxhash.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.h"
#include "engine/request_limits.h"

namespace zinf::cli {
namespace {

// Ordered: a chat prompt's messages and tools keep their key order (cmd/chat_request.h).
using Json = nlohmann::ordered_json;

// Length of the valid UTF-8 sequence starting at text[pos], or 0 when it is not one. Strict:
// no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
size_t Utf8SequenceLength(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong below U+0800
    if (lead == 0xED) max_second = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong below U+10000
    if (lead == 0xF4) max_second = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (pos + length > text.size()) return 0;
  if (byte(pos + 1) < min_second || byte(pos + 1) > max_second) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

const std::set<std::string, std::less<>> kKnownKeys = {"id",
                                                       "prompt",
                                                       "prompt_ids",
                                                       "messages",
                                                       "tools",
                                                       "chat_template_kwargs",
                                                       "max_new_tokens",
                                                       "temperature",
                                                       "top_k",
                                                       "top_p",
                                                       "min_p",
                                                       "repetition_penalty",
                                                       "seed",
                                                       "stop",
                                                       "ignore_eos",
                                                       "logprobs"};

// A per-request setting: its JSON type checked here, its range by the table the CLI's flags and
// the generator share (engine/request_limits.h), in the same words.
double SettingValue(const Json& value, RequestSetting setting, bool integer) {
  const char* key = RequestSettingName(setting);
  if (integer && !value.is_number_integer()) {
    Fail("\"{}\" must be an integer, got {}", key, value.dump());
  }
  if (!value.is_number()) Fail("\"{}\" must be a number, got {}", key, value.dump());
  const double number = value.get<double>();
  if (std::string problem = RequestSettingProblem(setting, number); !problem.empty()) {
    Fail("{} {}", key, problem);
  }
  return number;
}

int IntSetting(const Json& value, RequestSetting setting) {
  return static_cast<int>(SettingValue(value, setting, /*integer=*/true));
}

double NumberSetting(const Json& value, RequestSetting setting) {
  return SettingValue(value, setting, /*integer=*/false);
}

}  // namespace

bool IsPromptLineKey(std::string_view key) { return kKnownKeys.contains(key); }

RequestOverrides ParseOverrides(const Json& object) {
  RequestOverrides o;
  if (auto it = object.find("max_new_tokens"); it != object.end()) {
    o.max_new_tokens = IntSetting(*it, RequestSetting::kMaxNewTokens);
  }
  if (auto it = object.find("temperature"); it != object.end()) {
    o.temperature = NumberSetting(*it, RequestSetting::kTemperature);
  }
  if (auto it = object.find("top_k"); it != object.end()) {
    o.top_k = IntSetting(*it, RequestSetting::kTopK);
  }
  if (auto it = object.find("top_p"); it != object.end()) {
    o.top_p = NumberSetting(*it, RequestSetting::kTopP);
  }
  if (auto it = object.find("min_p"); it != object.end()) {
    o.min_p = NumberSetting(*it, RequestSetting::kMinP);
  }
  if (auto it = object.find("repetition_penalty"); it != object.end()) {
    o.repetition_penalty = NumberSetting(*it, RequestSetting::kRepetitionPenalty);
  }
  if (auto it = object.find("seed"); it != object.end()) {
    if (!it->is_number_unsigned()) {  // nlohmann stores every non-negative integer as unsigned
      Fail("\"seed\" must be an integer in [0, 2^64), got {}", it->dump());
    }
    o.seed = it->get<uint64_t>();
  }
  if (auto it = object.find("stop"); it != object.end()) {
    std::vector<std::string> stop;
    const bool is_list = it->is_array();
    for (const Json& item : is_list ? *it : Json::array({*it})) {
      if (!item.is_string()) Fail("\"stop\" must be a string or an array of strings");
      if (item.get_ref<const std::string&>().empty()) Fail("\"stop\" strings must not be empty");
      stop.push_back(item.get<std::string>());
    }
    o.stop = std::move(stop);
  }
  if (auto it = object.find("ignore_eos"); it != object.end()) {
    if (!it->is_boolean()) Fail("\"ignore_eos\" must be true or false, got {}", it->dump());
    o.ignore_eos = it->get<bool>();
  }
  if (auto it = object.find("logprobs"); it != object.end()) {
    // true means the chosen token only (top 0), false means none.
    o.logprobs =
        it->is_boolean() ? (it->get<bool>() ? 0 : -1) : IntSetting(*it, RequestSetting::kLogprobs);
  }
  return o;
}

namespace {

Json ParseJsonObject(std::string_view line_text) {
  // Deep nesting would overflow the stack in the recursive walks and dumps below.
  if (const auto offset = formats::FindJsonNestingOver(line_text)) {
    Fail("JSON nested deeper than {} levels at byte {}", formats::kMaxJsonDepth, *offset);
  }
  Json object;
  try {
    object = Json::parse(line_text);
  } catch (const Json::exception& error) {  // parse errors, and numbers out of range (1e400)
    Fail("not valid JSON: {}", JsonMessage(error));
  }
  if (!object.is_object()) Fail("each line must be a JSON object, got {}", object.type_name());
  return object;
}

// Parses one zinf JSONL object. Throws zinf::Error without the location.
PromptEntry ParseZinfLine(const Json& object, int64_t line) {
  for (const auto& [key, value] : object.items()) {
    if (!kKnownKeys.contains(key)) {
      Fail("unknown key \"{}\" (known: id, prompt, prompt_ids, messages, tools, "
           "chat_template_kwargs, max_new_tokens, temperature, top_k, top_p, min_p, "
           "repetition_penalty, seed, stop, ignore_eos, logprobs){}",
           key,
           LooksLikeOpenAiBatchLine(Json{{key, nullptr}})
               ? "; an OpenAI Batch file has \"custom_id\" on every line, the first included"
               : "");
    }
  }
  PromptEntry entry;
  entry.line = line;
  entry.id = std::to_string(line);
  if (auto it = object.find("id"); it != object.end()) {
    if (it->is_string()) {
      entry.id = it->get<std::string>();
      entry.id_is_number = false;
    } else if (it->is_number_integer()) {
      entry.id = it->dump();
    } else {
      Fail("\"id\" must be a string or an integer, got {}", it->dump());
    }
    if (entry.id.empty()) Fail("\"id\" must not be empty");
  }
  const auto prompt = object.find("prompt");
  const auto prompt_ids = object.find("prompt_ids");
  const auto messages = object.find("messages");
  const int prompts =
      (prompt != object.end()) + (prompt_ids != object.end()) + (messages != object.end());
  if (prompts != 1) {
    Fail("each line needs exactly one of \"prompt\" (text), \"prompt_ids\" (token ids) and "
         "\"messages\" (a conversation)");
  }
  const auto tools = object.find("tools");
  const auto kwargs = object.find("chat_template_kwargs");
  if (messages == object.end() && (tools != object.end() || kwargs != object.end())) {
    Fail("\"{}\" goes with \"messages\" (a chat prompt), not with a plain prompt",
         tools != object.end() ? "tools" : "chat_template_kwargs");
  }
  if (messages != object.end()) {
    entry.chat = ParseChatPrompt(*messages, tools == object.end() ? nullptr : &*tools,
                                 kwargs == object.end() ? nullptr : &*kwargs);
  } else if (prompt != object.end()) {
    if (!prompt->is_string()) Fail("\"prompt\" must be a string, got {}", prompt->dump());
    entry.text = prompt->get<std::string>();
  } else {
    if (!prompt_ids->is_array() || prompt_ids->empty()) {
      Fail("\"prompt_ids\" must be a non-empty array of token ids");
    }
    std::vector<TokenId> ids;
    for (const Json& id : *prompt_ids) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > std::numeric_limits<TokenId>::max()) {
        Fail("\"prompt_ids\" must hold token ids (integers >= 0), got {}", id.dump());
      }
      ids.push_back(static_cast<TokenId>(id.get<uint64_t>()));
    }
    entry.ids = std::move(ids);
  }
  entry.overrides = ParseOverrides(object);
  return entry;
}

// Parses one non-empty JSON line as the file's format (decided by its first line). Throws
// zinf::Error without the location.
// `decided` is false until a line has parsed as a JSON object; that line sets `format`.
PromptEntry ParseJsonLine(std::string_view line_text, int64_t line, PromptFileFormat& format,
                          bool& decided) {
  const Json object = ParseJsonObject(line_text);
  if (!decided) {
    if (LooksLikeOpenAiBatchLine(object)) format = PromptFileFormat::kOpenAiBatch;
    decided = true;
  }
  if (format != PromptFileFormat::kOpenAiBatch) return ParseZinfLine(object, line);
  PromptEntry entry;
  entry.line = line;
  ParseOpenAiBatchLine(object, entry);
  return entry;
}

// Parses one non-empty line of any format. Throws zinf::Error without the location.
PromptEntry ParseLine(std::string_view text, int64_t line, PromptFileFormat& format,
                      bool& decided) {
  const int64_t bad_byte = FirstInvalidUtf8(text);
  if (format == PromptFileFormat::kText) {
    PromptEntry entry;
    entry.line = line;
    entry.id = std::to_string(line);
    entry.text = std::string(text);
    if (bad_byte >= 0) {
      entry.error = fmt::format("line {}: prompt is not valid UTF-8 at byte {}", line, bad_byte);
    }
    return entry;
  }
  if (bad_byte < 0) return ParseJsonLine(text, line, format, decided);
  // JSON text must be UTF-8; parse a repaired copy so the request keeps its id and is reported
  // as failed, rather than failing the whole file.
  PromptEntry entry = ParseJsonLine(ReplaceInvalidUtf8(text), line, format, decided);
  entry.error =
      fmt::format("line {}: prompt is not valid UTF-8 at byte {} of the line", line, bad_byte);
  return entry;
}

// A line that holds no request (after its '\r', if any, is dropped): empty, or for JSON lines
// only blanks. Blank lines are not requests: they neither count toward a shard nor get an id.
bool IsBlankLine(std::string_view text, PromptFileFormat format) {
  if (text.ends_with('\r')) text.remove_suffix(1);
  return format == PromptFileFormat::kText
             ? text.empty()
             : text.find_first_not_of(" \t") == std::string_view::npos;
}

// Whether the request at `request_idx` is one of the shard's; every request without a shard.
bool InShard(const PromptFileOptions& options, int64_t request_idx) {
  return !options.shard || options.shard->Holds(request_idx);
}

// Parses one line of a prompt file with the file-level checks (blank lines, duplicate ids, the
// skip_bad_lines policy). nullopt: the line is blank or was skipped.
std::optional<PromptEntry> ParseCheckedLine(std::string_view text, int64_t line,
                                            std::string_view name, PromptFileFormat& format,
                                            bool& decided, const PromptFileOptions& options,
                                            IdSet& seen_ids) {
  if (text.ends_with('\r')) text.remove_suffix(1);
  // skipped, but still counted so line numbers match an editor's
  if (IsBlankLine(text, format)) return std::nullopt;
  try {
    PromptEntry entry = ParseLine(text, line, format, decided);
    // A text file's ids are its line numbers, unique by construction: only JSONL ids are kept,
    // so a text file of millions of lines needs no memory per line.
    if (format != PromptFileFormat::kText && !seen_ids.Insert(entry.id)) {
      Fail("duplicate {} \"{}\"", entry.openai ? "custom_id" : "id", entry.id);
    }
    return entry;
  } catch (const Error& error) {
    if (!options.skip_bad_lines) {
      Fail("{}:{}: {} (pass --skip-bad-lines to skip such lines)", name, line, error.what());
    }
    spdlog::warn("{}:{}: {}; skipping the line", name, line, error.what());
    return std::nullopt;
  }
}

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

// Byte offset of the first invalid UTF-8 sequence, or -1 when `text` is valid.
int64_t FirstInvalidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = Utf8SequenceLength(text, pos);
    if (length == 0) return static_cast<int64_t>(pos);
    pos += length;
  }
  return -1;
}

// `text` with each byte that does not start a valid sequence replaced by U+FFFD.
std::string ReplaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = Utf8SequenceLength(text, pos);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++pos;
    } else {
      out.append(text.substr(pos, length));
      pos += length;
    }
  }
  return out;
}

PromptFileFormat PromptFileFormatFor(std::string_view path) {
  for (std::string_view extension : {".jsonl", ".json", ".ndjson"}) {
    if (path.size() >= extension.size() && path.ends_with(extension))
      return PromptFileFormat::kJsonl;
  }
  return PromptFileFormat::kText;
}

std::vector<PromptEntry> ParsePrompts(std::string_view content, std::string_view name,
                                      PromptFileFormat format, const PromptFileOptions& options) {
  if (content.starts_with(kByteOrderMark)) content.remove_prefix(kByteOrderMark.size());
  std::vector<PromptEntry> entries;
  IdSet seen_ids;
  bool decided = false;
  int64_t request_idx = 0;
  for (int64_t line = 1; !content.empty(); ++line) {
    const size_t newline = content.find('\n');
    const std::string_view text = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    if (IsBlankLine(text, format)) continue;
    std::optional<PromptEntry> entry =
        ParseCheckedLine(text, line, name, format, decided, options, seen_ids);
    if (entry && InShard(options, request_idx)) {
      entry->request_idx = request_idx;
      entries.push_back(std::move(*entry));
    }
    ++request_idx;
  }
  return entries;
}

PromptFileReader::PromptFileReader(const std::string& path, const PromptFileOptions& options)
    : path_(path), format_(PromptFileFormatFor(path)), options_(options) {
  if (path == kStdinPrompts) {  // stdin has no extension: its first character tells the format
    path_ = "stdin";
    file_ = OpenSpooledStdin();
    format_ = SpoolStdin().looks_jsonl ? PromptFileFormat::kJsonl : PromptFileFormat::kText;
    return;
  }
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) Fail("cannot open prompt file {}: {}", path, std::strerror(errno));
}

PromptFileReader::~PromptFileReader() {
  std::fclose(file_);
  std::free(line_buffer_);
}

std::optional<PromptEntry> PromptFileReader::Next() {
  while (true) {
    // getline grows one buffer to the longest line so far: memory is one line, not the file.
    const ssize_t length = ::getline(&line_buffer_, &line_capacity_, file_);
    if (length < 0) {
      if (std::ferror(file_)) Fail("cannot read prompt file {}: {}", path_, std::strerror(errno));
      return std::nullopt;
    }
    std::string_view text(line_buffer_, static_cast<size_t>(length));
    if (text.ends_with('\n')) text.remove_suffix(1);
    if (++line_ == 1 && text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
    if (IsBlankLine(text, format_)) continue;
    const int64_t request_idx = request_lines_++;
    std::optional<PromptEntry> entry =
        ParseCheckedLine(text, line_, path_, format_, format_decided_, options_, seen_ids_);
    if (entry && InShard(options_, request_idx)) {
      entry->request_idx = request_idx;
      entry->digest = XXH3_64bits(text.data(), text.size());
      return entry;
    }
  }
}

std::vector<PromptEntry> ReadPromptFile(const std::string& path, const PromptFileOptions& options) {
  PromptFileReader reader(path, options);
  std::vector<PromptEntry> entries;
  while (std::optional<PromptEntry> entry = reader.Next()) entries.push_back(std::move(*entry));
  return entries;
}

void ApplyOverrides(const RequestOverrides& overrides, Request& request) {
  if (overrides.max_new_tokens) request.max_new_tokens = *overrides.max_new_tokens;
  if (overrides.temperature) request.sampling.temperature = *overrides.temperature;
  if (overrides.top_k) request.sampling.top_k = *overrides.top_k;
  if (overrides.top_p) request.sampling.top_p = *overrides.top_p;
  if (overrides.min_p) request.sampling.min_p = *overrides.min_p;
  if (overrides.repetition_penalty) {
    request.sampling.repetition_penalty = *overrides.repetition_penalty;
  }
  if (overrides.seed) request.sampling.seed = *overrides.seed;
  if (overrides.stop) request.stop = *overrides.stop;
  if (overrides.ignore_eos) request.ignore_eos = *overrides.ignore_eos;
  if (overrides.logprobs) request.logprobs = *overrides.logprobs;
}

Request RequestFor(const PromptEntry& entry, const Request& defaults) {
  Request request = defaults;
  request.id = entry.id;
  request.id_is_number = entry.id_is_number;
  request.line_number = entry.line;
  if (entry.ids) request.prompt_ids = *entry.ids;
  ApplyOverrides(entry.overrides, request);
  return request;
}

}  // namespace zinf::cli
