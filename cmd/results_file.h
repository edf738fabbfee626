// The JSONL results file of `zinf generate`: one durable line per request, resumable after a crash.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cmd/openai_batch.h"
#include "engine/request.h"

namespace zinf::cli {

// A request's id as a results line holds it: a JSON number when the prompt file gave a number
// (or the id is a line number), else a string. Converts from a plain string id.
struct ResultId {
  ResultId(std::string_view text, bool is_number = false) : text(text), is_number(is_number) {}
  ResultId(const std::string& text) : text(text) {}
  ResultId(const char* text) : text(text) {}
  std::string_view text;
  bool is_number = false;
};

// Written with each completion, beside what Completion itself carries.
struct AppendExtras {
  int64_t line = 0;  // the request's line in the prompt file; written as "line" when > 0
  // The prompt line's digest (PromptEntry::digest); written as "prompt_digest" (16 hex digits)
  // when non-zero, and read back on resume.
  uint64_t prompt_digest = 0;
  // A request of an OpenAI Batch file: the line is written in the Batch API's shape instead
  // (cmd/openai_batch.h), naming `model` as the model that ran.
  const OpenAiRequest* openai = nullptr;
  std::string_view model;
};

// One JSON object per line, e.g.
//   {"id":3,"text":"...","token_ids":[...],"finish_reason":"length","prompt_tokens":5,
//    "completion_tokens":16,"line":3,"prompt_digest":"…",
//    "logprobs":[{"id":..,"token":"..","logprob":..,"top":[{"id":..,"token":"..","logprob":..}]}]}
//   {"id":"q7","line":7,"prompt_digest":"…","error":"...","finish_reason":"error"}
// A Batch request's line is the Batch API's object instead ({"id": "batch_req_<digest>",
// "custom_id", "response", "error"}); resume takes its custom_id as the id and the digest from
// its "id". "id" keeps the prompt file's JSON type (ResultId); "token" is there when the model has a
// tokenizer. Text that is not valid UTF-8 (a byte-fallback token cut mid
// character) is written with U+FFFD in place of each invalid byte.
//
// Durability: each line is one write(2) on an O_APPEND descriptor followed by fdatasync, so a
// kill at any moment leaves at most the final line torn; resume drops that line. A write that
// fails (disk full, quota, file-size limit, I/O error) is cut back off the file before the error
// is thrown, so the file keeps only whole lines and a rerun with --resume carries on.
//
// Exclusive: the constructor takes a flock on the file, held until destruction, so a second
// process opening the same path fails at once instead of writing ids twice.
// Ownership: owns the file descriptor (closed by the destructor; stdout is never closed).
// Thread-safety: none; call from one thread.
// Failure: every method throws zinf::Error naming the path (and line, or strerror).
class ResultsFile {
 public:
  // path "-" means stdout (resume is then an error). Without `resume`, an existing non-empty file
  // is an error, so finished work is never overwritten. With `resume`, the existing file is read:
  // a torn final line (no trailing '\n') is truncated away, and the ids of its lines (completions
  // and errors alike) become done_ids(); a line that is not a JSON object with a string or
  // integer "id" is an error naming that line. 7 and "7" are one id, as in the prompt file.
  ResultsFile(const std::string& path, bool resume);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  // Ids already in the file when it was opened with resume; generate skips them.
  const std::unordered_set<std::string>& done_ids() const { return done_ids_; }
  // The prompt digest each done id was written with (ids written without one are absent), and
  // how many done lines are error lines.
  const std::unordered_map<std::string, uint64_t>& done_digests() const { return done_digests_; }
  int64_t done_errors() const { return done_errors_; }
  const std::string& path() const { return path_; }

  void Append(const Completion& completion, const AppendExtras& extras = {});
  // A request that could not run (prompt not valid UTF-8, too long for the context, ...).
  // `openai`: write it as a Batch API error object.
  void AppendError(const ResultId& id, int64_t line, std::string_view message,
                   uint64_t prompt_digest = 0, const OpenAiRequest* openai = nullptr);

 private:
  void LoadForResume();
  void LoadBatchLine(const nlohmann::ordered_json& object, int64_t line);
  void WriteLine(std::string line);  // appends '\n', writes, syncs
  // Cuts the file back to `size_before` (when >= 0) and throws naming the path and the errno.
  [[noreturn]] void FailWrite(std::string_view action, int error_number, off_t size_before);

  std::string path_;
  int fd_ = -1;
  bool is_stdout_ = false;
  bool is_regular_ = false;  // a regular file: a failed write can be cut back off it
  std::unordered_set<std::string> done_ids_;
  std::unordered_map<std::string, uint64_t> done_digests_;
  int64_t done_errors_ = 0;
  int64_t lines_written_ = 0;  // by this process
};

}  // namespace zinf::cli
