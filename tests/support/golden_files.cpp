// GoldenPath / ReadJsonLines.
#include "tests/support/golden_files.h"

#include <fstream>

#include "engine/error.h"

namespace zinf::testing {

std::string GoldenPath(const std::string& name) {
  return std::string(ZINF_SOURCE_DIR) + "/models/stories260K/golden/" + name;
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::ifstream file(path);
  if (!file) Fail("{}: cannot open", path);
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

}  // namespace zinf::testing
