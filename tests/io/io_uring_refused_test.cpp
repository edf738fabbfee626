// io_uring refused by a sandbox (a seccomp filter, as Docker's default profile does): the weight
// source falls back to the pread pool, says why, and serves the same bytes through the fault hook.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "io/tiered_weight_source.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

// io_uring_setup fails with EPERM from now on in this process. The number is io_uring_setup's on
// every architecture (425: syscalls added since Linux 5.1 share one table), so no arch check.
bool DenyIoUringSetup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Exit codes of the child, so the parent's failure message says what went wrong.
enum ChildResult {
  kOk = 0,
  kNoSeccomp = 10,
  kStillIoUring,
  kNoReasonGiven,
  kWrongBytes,
  kNoFaultsSeen,
  kThrew,
};

const char* Explain(int code) {
  switch (code) {
    case kOk: return "ok";
    case kNoSeccomp: return "could not install the seccomp filter";
    case kStillIoUring: return "the source still used io_uring";
    case kNoReasonGiven: return "Describe() did not name the pread pool and why";
    case kWrongBytes: return "an extent's bytes differed from the file's";
    case kNoFaultsSeen: return "the fault hook saw no read";
    case kThrew: return "an exception escaped";
    default: return "unexpected exit";
  }
}

// In a child process, since a seccomp filter cannot be removed: stream every extent twice, each
// chunk read first failing with -EAGAIN or coming back short, and compare the bytes.
int StreamWithIoUringDenied(const testing::SyntheticWeights& weights) {
  unsetenv(kIoBackendEnv);  // an inherited ZINF_IO_BACKEND=pread would pick the pool for its reason
  if (!DenyIoUringSetup()) return kNoSeccomp;
  try {
    std::map<uint64_t, int> attempts;
    int faults = 0;
    TieredOptions options;
    options.prefetch_depth = 2;
    options.reader.fault_hook = [&](uint64_t offset, uint64_t length, int64_t result) -> int64_t {
      if (attempts[offset]++ % 2 == 1 || result < 2) return result;
      ++faults;
      if (offset / 4096 % 2 == 0) return -EAGAIN;
      // Short by a block-aligned amount where possible, so O_DIRECT can carry on from there.
      return length > 4096 ? static_cast<int64_t>(length / 2 / 4096 * 4096) : result / 2;
    };
    const std::vector<WeightPlacement> placements(weights.checkpoint.extents.size(),
                                                  WeightPlacement::kStreamed);
    TieredWeightSource source(weights.checkpoint, placements, options);
    if (source.uses_io_uring()) return kStillIoUring;
    if (source.Describe().find("pread threads (io_uring unavailable: " +
                               std::string(std::strerror(EPERM)) + ")") == std::string::npos) {
      return kNoReasonGiven;
    }
    const int num_extents = static_cast<int>(weights.contents.size());
    for (int pass = 0; pass < 2; ++pass) {
      for (int idx = 0; idx < num_extents; ++idx) {
        if (idx + 1 < num_extents) source.Prefetch(idx + 1);
        const ExtentView view = source.Acquire(idx);
        if (std::memcmp(view.bytes.data(), weights.contents[idx].data(),
                        weights.contents[idx].size()) != 0) {
          return kWrongBytes;
        }
        source.Release(idx);
      }
    }
    return faults > 0 ? kOk : kNoFaultsSeen;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "child: %s\n", error.what());
    return kThrew;
  }
}

TEST_CASE("io_uring refused by seccomp: the pread pool serves the same bytes and says why",
          "[io]") {
  testing::SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(StreamWithIoUringDenied(weights));  // no Catch or static teardown here
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  INFO("child: " << Explain(WEXITSTATUS(status)));
  CHECK(WEXITSTATUS(status) == kOk);
}

}  // namespace
}  // namespace zinf::io
