// The --plot file; see plot_file.h.
#include "cmd/plot_file.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cmd/png_writer.h"
#include "engine/error.h"

namespace zinf::cli {

namespace {

namespace fs = std::filesystem;

// PNG is rendered at 1.5 times the SVG's size: sharp on high-density screens and when a page
// shrinks it to fit, yet about 110 KB (twice the size came to 150 KB, for little to see).
constexpr double kPngScale = 1.5;

std::string LowerExtension(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  if (!(file << text)) Fail("cannot write {}: {}", path, std::strerror(errno));
}

}  // namespace

void CheckPlotPath(const std::string& path, const std::string& flag) {
  const std::string extension = LowerExtension(path);
  if (extension != ".svg" && extension != ".png") {
    Fail("{} {}: the file name must end in .svg or .png", flag, path);
  }
  const fs::path directory = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    Fail("{} {}: the directory {} does not exist; create it first or choose another", flag, path,
         directory.string());
  }
  if (fs::is_directory(path, error)) Fail("{} {}: is a directory; name a file in it", flag, path);
  if (access(directory.c_str(), W_OK) != 0) {
    Fail("{} {}: cannot write in {} ({})", flag, path, directory.string(), std::strerror(errno));
  }
  if (fs::exists(path, error) && access(path.c_str(), W_OK) != 0) {
    Fail("{} {}: the file exists and cannot be overwritten ({})", flag, path, std::strerror(errno));
  }
}

void WritePlot(const std::string& path, const std::string& svg) {
  if (LowerExtension(path) == ".svg") {
    WriteText(path, svg);
  } else {
    try {
      WriteSvgAsPng(svg, path, kPngScale);
    } catch (const Error& error) {
      const std::string svg_path = path + ".svg";
      WriteText(svg_path, svg);
      Fail("{}; the plot is in {}", error.what(), svg_path);
    }
  }
  spdlog::info("wrote {}", path);
}

}  // namespace zinf::cli
