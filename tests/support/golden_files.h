// The bundled stories260K's golden files (models/stories260K/golden/), as the tests read them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace zinf::testing {

// models/stories260K/golden/NAME under the source tree.
std::string GoldenPath(const std::string& name);

// One JSON value per non-empty line; throws zinf::Error naming the file when it cannot be read.
std::vector<nlohmann::json> ReadJsonLines(const std::string& path);

}  // namespace zinf::testing
