// Notices a weights file truncated, rewritten or replaced while it is being read, so a short read
// or a checksum mismatch is blamed on the change ("rerun") rather than on the checkpoint.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

namespace zinf::io {

// What identifies the file an open descriptor reads, and the state it was opened in.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  uint64_t size_bytes = 0;
  timespec modified{};  // st_mtim: any write() or truncate moves it
};

FileIdentity IdentityOf(const struct stat& info);

// What changed since `at_open`, looking both at the open descriptor (truncated, grown or written in
// place) and at the path (deleted, or now naming another file), e.g. "size 4096 → 2048 bytes" or
// "rewritten in place: same size, new modified time; replaced: the path now names another file".
// nullopt when neither shows a change. A write within the filesystem's timestamp granularity of
// the open (a few ms) is invisible here; the checksums still refuse its bytes.
std::optional<std::string> DescribeChange(const std::string& path, int fd,
                                          const FileIdentity& at_open);

}  // namespace zinf::io
