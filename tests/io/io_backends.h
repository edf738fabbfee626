// Test helper: the ways a reader can be made to read (io_uring, the pread pool by option, the pread
// pool forced by ZINF_IO_BACKEND), so every reader and streaming test runs through each of them.
#pragma once

#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>

#include "io/extent_reader.h"

namespace zinf::io::testing {

enum class IoBackend {
  kIoUring,          // the default; the pread pool only if this kernel refuses io_uring
  kPreadOption,      // ReaderOptions::use_io_uring = false
  kPreadForcedByEnv  // ZINF_IO_BACKEND=pread over options that ask for io_uring
};

inline std::ostream& operator<<(std::ostream& out, IoBackend backend) {
  switch (backend) {
    case IoBackend::kIoUring: return out << "io_uring";
    case IoBackend::kPreadOption: return out << "pread (option)";
    case IoBackend::kPreadForcedByEnv: return out << "pread (ZINF_IO_BACKEND=pread)";
  }
  return out;
}

// Sets (or clears) an environment variable for its lifetime and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (previous_) {
      setenv(name_, previous_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

// Applies `backend` to `options` and, for the object's lifetime, to the environment. The other two
// leave an inherited ZINF_IO_BACKEND alone, so `ZINF_IO_BACKEND=pread test_io` reads everything
// with the pool.
class UseIoBackend {
 public:
  UseIoBackend(IoBackend backend, ReaderOptions& options) {
    options.use_io_uring = backend != IoBackend::kPreadOption;
    if (backend == IoBackend::kPreadForcedByEnv) env_.emplace(kIoBackendEnv, "pread");
  }

 private:
  std::optional<ScopedEnv> env_;
};

inline bool UsesPreadPool(IoBackend backend) { return backend != IoBackend::kIoUring; }

}  // namespace zinf::io::testing
