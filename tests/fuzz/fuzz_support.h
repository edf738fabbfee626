// Shared by the libFuzzer targets: an in-memory file for parsers that take a path, and the rule
// that malformed input may only end in a zinf::Error (anything else escaping is a finding).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/error.h"

namespace zinf::fuzz {

// The fuzz input as an anonymous memory file (memfd), reachable at path() = /proc/self/fd/N, so
// path-taking parsers (mmap, ifstream, SentencePiece's loader) read exactly these bytes.
// Aborts when the kernel refuses: that is the harness failing, not the parser.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = ::memfd_create("zinf-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) Die("memfd_create");
    size_t written = 0;
    while (written < size) {
      const ssize_t n = ::write(fd_, data + written, size - written);
      if (n <= 0) Die("write");
      written += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  [[noreturn]] static void Die(const char* what) {
    std::perror(what);
    std::abort();
  }
  int fd_ = -1;
  std::string path_;
};

// Runs `parse`; a zinf::Error is the expected outcome for bad input. Any other exception escapes
// and libFuzzer reports it as a crash (an error without the file and place, or a missed check).
template <typename Parse>
void ExpectZinfErrorsOnly(Parse&& parse) {
  try {
    parse();
  } catch (const zinf::Error&) {
  }
}

// A check on the parser's result; failing it is a bug, reported as a crash with `what`.
inline void FuzzCheck(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz check failed: %s\n", what);
    std::abort();
  }
}

}  // namespace zinf::fuzz
