// AtomicOutputFile: the file appears only on commit, and a destination without room is refused
// before anything is written.
#include "model_formats/atomic_output_file.h"

#include <sys/statvfs.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {

namespace fs = std::filesystem;

namespace {

uint64_t FreeBytes(const std::string& dir) {
  struct statvfs file_system {};
  REQUIRE(::statvfs(dir.c_str(), &file_system) == 0);
  return static_cast<uint64_t>(file_system.f_bavail) * file_system.f_frsize;
}

}  // namespace

TEST_CASE("an atomic output file appears only when committed, at the size written") {
  const std::string dir = testing::MakeTempDir("atomic_output");
  const std::string path = dir + "/weights.bin";
  const std::vector<std::byte> bytes(5000, std::byte{7});
  {
    AtomicOutputFile file(path);
    file.Reserve(1 << 20);  // more than is written: the reservation is not part of the size
    file.Write(bytes);
    CHECK_FALSE(fs::exists(path));
    file.Commit();
  }
  CHECK(fs::file_size(path) == bytes.size());

  {
    AtomicOutputFile abandoned(dir + "/other.bin");
    abandoned.Write(bytes);
  }
  CHECK_FALSE(fs::exists(dir + "/other.bin"));
  CHECK_FALSE(fs::exists(dir + "/other.bin.tmp"));
}

TEST_CASE("reserving more than the file system has free fails at once, naming file and sizes") {
  const std::string dir = testing::MakeTempDir("atomic_output_full");
  const std::string path = dir + "/weights.bin";
  AtomicOutputFile file(path);
  const uint64_t too_much = FreeBytes(dir) + (uint64_t{1} << 30);
  try {
    file.Reserve(too_much);
    FAIL("a reservation beyond the free space was accepted");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains(path));
    CHECK_THAT(message, Catch::Contains("GB free"));
    CHECK_THAT(message, Catch::Contains("needs"));
  }
  CHECK(fs::file_size(path + ".tmp") == 0);  // nothing written, nothing held
}

TEST_CASE("an output directory it created is removed unless kept or written into") {
  const std::string base = testing::MakeTempDir("output_directory");
  { OutputDirectory abandoned(base + "/a/b"); }
  CHECK_FALSE(fs::exists(base + "/a/b"));
  {
    OutputDirectory kept(base + "/kept");
    kept.Keep();
  }
  CHECK(fs::is_directory(base + "/kept"));
  {
    OutputDirectory written(base + "/written");
    AtomicOutputFile file(base + "/written/x");
    file.Commit();
  }
  CHECK(fs::exists(base + "/written/x"));
  { OutputDirectory existing(base + "/kept"); }  // not created here: left alone
  CHECK(fs::is_directory(base + "/kept"));
}

}  // namespace zinf::formats
