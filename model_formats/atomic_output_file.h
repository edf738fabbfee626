// Durable file output for the converter and the manifest writer: a written-then-renamed file, so a
// crash leaves either the old file or the new one, never half of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace zinf::formats {

// Writes `final_path` by way of `final_path + ".tmp"`: bytes are appended with Write, and Commit
// fsyncs the file, renames it over `final_path` and fsyncs the directory. Destroying an
// uncommitted file removes the temporary. Owns its descriptor; not thread-safe. I/O failures throw
// zinf::Error naming the file and the system error.
class AtomicOutputFile {
 public:
  explicit AtomicOutputFile(std::string final_path);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  // Sets aside `bytes` of disk for the file before it is written, so a destination without room
  // fails at once — naming the size and what is free — rather than after hours of writing.
  void Reserve(uint64_t bytes);
  void Write(std::span<const std::byte> bytes);
  void WriteZeros(uint64_t count);
  uint64_t bytes_written() const { return bytes_written_; }
  void Commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
};

// An output directory, created with its parents if missing. A directory this created is removed
// again on destruction, unless Keep() was called, when it is still empty: a refused or failed
// conversion leaves nothing behind.
class OutputDirectory {
 public:
  explicit OutputDirectory(const std::string& path);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;
  void Keep() { created_.clear(); }

 private:
  std::string created_;  // empty when the directory existed before or is to be kept
};

// Writes `text` to `path` atomically (AtomicOutputFile).
void WriteFileAtomically(const std::string& path, const std::string& text);

// The whole file as a string. Throws zinf::Error naming the file when it cannot be read.
std::string ReadTextFile(const std::string& path);

}  // namespace zinf::formats
