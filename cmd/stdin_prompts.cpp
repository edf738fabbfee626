// Spooling stdin for `--prompts -`; see stdin_prompts.h.
#include "cmd/stdin_prompts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/error.h"

namespace zinf::cli {

namespace {

// Writes all of `data` to `fd`; false (errno set) on failure.
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return false;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

SpooledStdin Spool() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  std::string path = dir + "/zinf-stdin-prompts-XXXXXX";
  SpooledStdin spooled;
  spooled.fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (spooled.fd < 0) {
    Fail("--prompts -: cannot create a temporary file in {} to hold stdin: {} (set TMPDIR to a "
         "writable directory)",
         dir, std::strerror(errno));
  }
  // Unlinked at once: the copy lives as long as the descriptor, so no run leaves it behind.
  ::unlink(path.c_str());
  bool seen_text = false;
  size_t bom_left = 3;  // bytes of a leading UTF-8 byte order mark still to skip
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(STDIN_FILENO, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail("--prompts -: cannot read stdin: {}", std::strerror(errno));
    if (got == 0) break;
    for (ssize_t i = 0; i < got && !seen_text; ++i) {
      const char c = buffer[i];
      if (bom_left > 0 && c == "\xEF\xBB\xBF"[3 - bom_left]) {
        --bom_left;
        continue;
      }
      bom_left = 0;
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      seen_text = true;
      spooled.looks_jsonl = c == '{';
    }
    if (!WriteAll(spooled.fd, buffer, static_cast<size_t>(got))) {
      Fail("--prompts -: cannot copy stdin into {}: {}", dir, std::strerror(errno));
    }
  }
  return spooled;
}

}  // namespace

const SpooledStdin& SpoolStdin() {
  static const SpooledStdin spooled = Spool();
  return spooled;
}

std::FILE* OpenSpooledStdin() {
  // Through /proc, not dup(): a dup'ed descriptor would share one file position among readers.
  const std::string path = "/proc/self/fd/" + std::to_string(SpoolStdin().fd);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr)
    Fail("--prompts -: cannot reopen the copy of stdin: {}", std::strerror(errno));
  return file;
}

}  // namespace zinf::cli
