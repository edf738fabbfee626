// DescribeChange: fstat of the descriptor for in-place changes, stat of the path for replacement.
#include "io/file_identity.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace zinf::io {

FileIdentity IdentityOf(const struct stat& info) {
  return {info.st_dev, info.st_ino, static_cast<uint64_t>(info.st_size), info.st_mtim};
}

std::optional<std::string> DescribeChange(const std::string& path, int fd,
                                          const FileIdentity& at_open) {
  std::string change;
  auto add = [&](const std::string& item) { change += (change.empty() ? "" : "; ") + item; };
  struct stat now {};
  if (fstat(fd, &now) == 0) {
    if (static_cast<uint64_t>(now.st_size) != at_open.size_bytes) {
      add(fmt::format("size {} → {} bytes", at_open.size_bytes, now.st_size));
    } else if (now.st_mtim.tv_sec != at_open.modified.tv_sec ||
               now.st_mtim.tv_nsec != at_open.modified.tv_nsec) {
      add("rewritten in place: same size, new modified time");
    }
  }
  // A rename over the path leaves the open descriptor reading the old file, which is harmless;
  // it matters when the descriptor's file changed too, or when a reopen (the buffered fallback)
  // reads the new one.
  if (stat(path.c_str(), &now) != 0) {
    if (errno == ENOENT) add("the path no longer exists");
  } else if (now.st_dev != at_open.device || now.st_ino != at_open.inode) {
    add("replaced: the path now names another file");
  }
  if (change.empty()) return std::nullopt;
  return change;
}

}  // namespace zinf::io
