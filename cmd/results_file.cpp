// Durable, resumable JSONL results file; see results_file.h.
// Self-contained on purpose (engine headers, nlohmann json, fmt, spdlog) so tests can include it.
#include "cmd/results_file.h"
#include "cmd/json_message.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace zinf::cli {
namespace {

// ordered_json keeps keys in insertion order, so lines read id, text, ... as documented.
using Json = nlohmann::ordered_json;

std::string Dump(const Json& object) {
  // error_handler replace: invalid UTF-8 becomes U+FFFD instead of throwing mid-run.
  return object.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

Json IdJson(const ResultId& id) {
  if (id.is_number) {
    // The canonical text of a JSON integer (prompt_file.cpp made it): parsed back, it is that
    // integer again, however large.
    Json number = Json::parse(id.text.begin(), id.text.end(), nullptr, /*allow_exceptions=*/false);
    if (number.is_number_integer()) return number;
  }
  return std::string(id.text);
}

Json LogprobJson(const TokenLogprob& logprob) {
  Json object;
  object["id"] = logprob.id;
  if (logprob.token) object["token"] = *logprob.token;  // invalid UTF-8 is replaced by Dump
  object["logprob"] = logprob.logprob;                  // -inf is written as null
  return object;
}

void AddExtras(const AppendExtras& extras, Json& object) {
  if (extras.line > 0) object["line"] = extras.line;
  if (extras.prompt_digest != 0) {
    object["prompt_digest"] = fmt::format("{:016x}", extras.prompt_digest);
  }
}

}  // namespace

ResultsFile::ResultsFile(const std::string& path, bool resume) : path_(path) {
  if (path_ == "-") {
    if (resume) Fail("--resume needs an output file (--out PATH); it cannot resume on stdout");
    fd_ = STDOUT_FILENO;
    is_stdout_ = true;
    return;
  }
  // O_APPEND: every write lands at the end even if something else appended meanwhile;
  // O_CLOEXEC: no child process inherits the descriptor.
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) Fail("cannot open output file {}: {}", path_, std::strerror(errno));
  try {
    // One writer per results file for the whole run: a second zinf on the same --out (resuming
    // or not) would write ids twice. The kernel drops the lock when this process dies.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) {
        Fail("output file {} is being written by another zinf process; wait for it to finish (or "
             "stop it), then rerun with --resume, or choose another --out path",
             path_);
      }
      Fail("cannot lock output file {}: {}", path_, std::strerror(errno));
    }
    struct stat info;
    if (::fstat(fd_, &info) != 0)
      Fail("cannot stat output file {}: {}", path_, std::strerror(errno));
    const bool regular = S_ISREG(info.st_mode);
    is_regular_ = regular;
    if (!resume && regular && info.st_size > 0) {
      Fail("output file {} already holds results ({} bytes); pass --resume to continue it, or "
           "choose another --out path",
           path_, static_cast<int64_t>(info.st_size));
    }
    if (resume) {
      if (!regular) Fail("--resume needs a regular output file, and {} is not one", path_);
      LoadForResume();
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

ResultsFile::~ResultsFile() {
  if (fd_ >= 0 && !is_stdout_) ::close(fd_);
}

void ResultsFile::LoadForResume() {
  std::string content;
  char buffer[1 << 16];  // 64 KiB reads: few syscalls, small stack
  for (off_t offset = 0;;) {
    const ssize_t got = ::pread(fd_, buffer, sizeof(buffer), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail("cannot read output file {}: {}", path_, std::strerror(errno));
    if (got == 0) break;
    content.append(buffer, static_cast<size_t>(got));
    offset += got;
  }

  // Every complete line ends with '\n'; bytes after the last one are a write cut short.
  if (!content.empty() && content.back() != '\n') {
    const size_t last_newline = content.rfind('\n');
    const size_t keep = last_newline == std::string::npos ? 0 : last_newline + 1;
    spdlog::warn("{}: dropping a torn final line of {} bytes left by an interrupted run", path_,
                 content.size() - keep);
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd_) != 0) {
      Fail("cannot truncate the torn last line of {}: {}", path_, std::strerror(errno));
    }
    content.resize(keep);
  }

  std::string_view rest = content;
  for (int64_t line = 1; !rest.empty(); ++line) {
    const size_t newline = rest.find('\n');  // present: content ends with '\n'
    const std::string_view text = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Json object;
    try {
      object = Json::parse(text);
    } catch (const Json::parse_error& error) {
      Fail("{}:{}: not valid JSON ({}); only the last line of an interrupted run can be torn, so "
           "the file is damaged: fix or delete that line, or choose another --out path",
           path_, line, JsonMessage(error));
    }
    if (object.is_object() && object.contains("custom_id")) {
      LoadBatchLine(object, line);
      continue;
    }
    const auto id = object.is_object() ? object.find("id") : object.end();
    if (!object.is_object() || id == object.end() ||
        !(id->is_string() || id->is_number_integer())) {
      Fail("{}:{}: not a zinf result (a JSON object with a string or integer \"id\"); is this "
           "the right --out file?",
           path_, line);
    }
    const std::string done_id = id->is_string() ? id->get<std::string>() : id->dump();  // 7 is "7"
    done_ids_.insert(done_id);
    const auto digest = object.find("prompt_digest");
    if (digest != object.end() && digest->is_string()) {
      done_digests_[done_id] = std::strtoull(digest->get<std::string>().c_str(), nullptr, 16);
    }
    if (object.contains("error")) ++done_errors_;
  }
  if (!done_ids_.empty()) {
    spdlog::info("{}: resuming; {} requests already done", path_, done_ids_.size());
  }
}

void ResultsFile::LoadBatchLine(const nlohmann::ordered_json& object, int64_t line) {
  const auto custom_id = object.find("custom_id");
  const auto id = object.find("id");
  if (!custom_id->is_string() || id == object.end() || !id->is_string()) {
    Fail("{}:{}: not an OpenAI Batch result (string \"id\" and \"custom_id\"); is this the "
         "right --out file?",
         path_, line);
  }
  const std::string done_id = custom_id->get<std::string>();
  done_ids_.insert(done_id);
  if (const uint64_t digest = DigestFromOpenAiId(id->get_ref<const std::string&>())) {
    done_digests_[done_id] = digest;
  }
  if (const auto error = object.find("error"); error != object.end() && !error->is_null()) {
    ++done_errors_;
  }
}

void ResultsFile::Append(const Completion& completion, const AppendExtras& extras) {
  if (extras.openai != nullptr) {
    WriteLine(Dump(OpenAiResultLine(completion, *extras.openai, extras.model, extras.prompt_digest,
                                    std::time(nullptr))));
    return;
  }
  Json object;
  object["id"] = IdJson({completion.id, completion.id_is_number});
  object["text"] = completion.text;
  object["token_ids"] = completion.token_ids;
  object["finish_reason"] = FinishReasonName(completion.finish_reason);
  object["prompt_tokens"] = completion.prompt_tokens;
  object["completion_tokens"] = completion.token_ids.size();
  AddExtras(extras, object);
  if (!completion.logprobs.empty()) {
    Json steps = Json::array();
    for (const StepLogprobs& step : completion.logprobs) {
      Json entry = LogprobJson(step.chosen);
      Json top = Json::array();
      for (const TokenLogprob& candidate : step.top) top.push_back(LogprobJson(candidate));
      entry["top"] = std::move(top);
      steps.push_back(std::move(entry));
    }
    object["logprobs"] = std::move(steps);
  }
  WriteLine(Dump(object));
}

void ResultsFile::AppendError(const ResultId& id, int64_t line, std::string_view message,
                              uint64_t prompt_digest, const OpenAiRequest* openai) {
  if (openai != nullptr) {
    WriteLine(Dump(OpenAiErrorLine(id.text, message, prompt_digest)));
    return;
  }
  Json object;
  object["id"] = IdJson(id);
  AddExtras(AppendExtras{line, prompt_digest}, object);
  object["error"] = std::string(message);
  object["finish_reason"] = "error";
  WriteLine(Dump(object));
}

void ResultsFile::WriteLine(std::string line) {
  line += '\n';
  // Where the file ends before this line: a failed write is cut back to it, so the file keeps
  // only whole lines (regular files only: stdout, pipes and devices cannot be cut back).
  const off_t size_before = is_regular_ ? ::lseek(fd_, 0, SEEK_END) : -1;
  // One write(2) normally carries the whole line; the loop only matters for huge lines, pipes and
  // signals, and a crash inside it leaves a torn last line, which resume drops.
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t result = ::write(fd_, line.data() + written, line.size() - written);
    if (result < 0 && errno == EINTR) continue;
    if (result < 0) FailWrite("write to", errno, size_before);
    written += static_cast<size_t>(result);
  }
  // fdatasync: the line is on disk before the request counts as done. Not for stdout (a pipe or a
  // terminal, where it fails with EINVAL and durability is the reader's business).
  if (!is_stdout_ && ::fdatasync(fd_) != 0 && errno != EINVAL) {
    FailWrite("sync", errno, size_before);
  }
  ++lines_written_;
}

void ResultsFile::FailWrite(std::string_view action, int error_number, off_t size_before) {
  // A full disk (ENOSPC), a quota (EDQUOT) or a file-size limit (EFBIG) may take part of the
  // line first; remove it so every line in the file is a finished request.
  if (size_before >= 0 && ::ftruncate(fd_, size_before) != 0) {
    spdlog::warn("{}: cannot remove the partly written last line ({}); --resume will drop it",
                 path_, std::strerror(errno));
  }
  const bool out_of_space =
      error_number == ENOSPC || error_number == EDQUOT || error_number == EFBIG;
  Fail("cannot {} output file {}: {}{}", action, path_, std::strerror(error_number),
       out_of_space && !is_stdout_
           ? fmt::format("; the {} results written by this run before it are intact: free some "
                         "space, then run again with --resume",
                         lines_written_)
           : "");
}

}  // namespace zinf::cli
