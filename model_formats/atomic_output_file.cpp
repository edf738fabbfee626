// Temporary-file-then-rename output with fsync, and whole-file reads.
#include "model_formats/atomic_output_file.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/error.h"

namespace zinf::formats {

namespace {

// fsync of the directory makes the rename itself durable (POSIX leaves it to the directory entry).
void SyncDirectoryOf(const std::string& path) {
  std::string directory = std::filesystem::path(path).parent_path().string();
  if (directory.empty()) directory = ".";
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) Fail("cannot open directory {} to sync it: {}", directory, std::strerror(errno));
  int rc = ::fsync(fd);
  int saved_errno = errno;
  ::close(fd);
  // Some file systems do not support fsync on directories (EINVAL); the rename is still done.
  if (rc != 0 && saved_errno != EINVAL) {
    Fail("cannot sync directory {}: {}", directory, std::strerror(saved_errno));
  }
}

}  // namespace

AtomicOutputFile::AtomicOutputFile(std::string final_path)
    : final_path_(std::move(final_path)), temp_path_(final_path_ + ".tmp") {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) Fail("cannot create {}: {}", temp_path_, std::strerror(errno));
}

AtomicOutputFile::~AtomicOutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

void AtomicOutputFile::Reserve(uint64_t bytes) {
  ZINF_CHECK(fd_ >= 0, "reserve for {} after commit", final_path_);
  if (bytes == 0) return;
  auto fail_no_room = [&](uint64_t free_bytes) {
    Fail("cannot write {}: it needs {:.2f} GB and its file system has {:.2f} GB free; free some "
         "space or choose a directory on another disk",
         final_path_, static_cast<double>(bytes) / 1e9, static_cast<double>(free_bytes) / 1e9);
  };
  // The free-space test first: fallocate past the free space can fill the disk before failing.
  struct statvfs file_system {};
  if (::fstatvfs(fd_, &file_system) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(file_system.f_bavail) * file_system.f_frsize;
    if (bytes > free_bytes) fail_no_room(free_bytes);
  }
  // Reserving the blocks also keeps another writer from taking them meanwhile. KEEP_SIZE: the
  // file's size still grows only as bytes are written.
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes)) == 0) return;
  const int error = errno;
  if (error == ENOSPC || error == EFBIG) fail_no_room(0);
  // File systems without fallocate: the free-space test above is all there is.
  if (error != EOPNOTSUPP && error != ENOSYS)
    Fail("cannot reserve {} bytes for {}: {}", bytes, temp_path_, std::strerror(error));
}

void AtomicOutputFile::Write(std::span<const std::byte> bytes) {
  ZINF_CHECK(fd_ >= 0, "write to {} after commit", final_path_);
  while (!bytes.empty()) {
    ssize_t written = ::write(fd_, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      Fail("cannot write {}: {}", temp_path_, std::strerror(errno));
    }
    bytes = bytes.subspan(static_cast<size_t>(written));
    bytes_written_ += static_cast<uint64_t>(written);
  }
}

void AtomicOutputFile::WriteZeros(uint64_t count) {
  static const std::vector<std::byte> kZeros(4096);
  while (count > 0) {
    size_t chunk = count < kZeros.size() ? static_cast<size_t>(count) : kZeros.size();
    Write(std::span<const std::byte>(kZeros.data(), chunk));
    count -= chunk;
  }
}

void AtomicOutputFile::Commit() {
  ZINF_CHECK(fd_ >= 0, "second commit of {}", final_path_);
  if (::fsync(fd_) != 0) Fail("cannot sync {}: {}", temp_path_, std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    ::unlink(temp_path_.c_str());
    Fail("cannot close {}: {}", temp_path_, std::strerror(errno));
  }
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    int saved_errno = errno;
    ::unlink(temp_path_.c_str());
    Fail("cannot rename {} to {}: {}", temp_path_, final_path_, std::strerror(saved_errno));
  }
  SyncDirectoryOf(final_path_);
}

OutputDirectory::OutputDirectory(const std::string& path) {
  std::error_code error;
  if (std::filesystem::create_directories(path, error)) created_ = path;
  if (error) Fail("cannot create the directory {}: {}", path, error.message());
}

OutputDirectory::~OutputDirectory() {
  if (created_.empty()) return;
  std::error_code error;
  if (std::filesystem::is_empty(created_, error) && !error)
    std::filesystem::remove(created_, error);  // best effort: never throws from a destructor
}

void WriteFileAtomically(const std::string& path, const std::string& text) {
  AtomicOutputFile file(path);
  file.Write(std::as_bytes(std::span<const char>(text.data(), text.size())));
  file.Commit();
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open {}: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) Fail("cannot read {}", path);
  return text.str();
}

}  // namespace zinf::formats
