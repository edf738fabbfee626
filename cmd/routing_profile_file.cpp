// The routing profile's JSON: {"format", "version", "model_type", "num_layers", "num_experts",
// "experts_per_token", "layers": [{"layer", "tokens", "counts": [per expert]}]}.
#include "cmd/routing_profile_file.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace zinf::cli {

namespace {

constexpr const char* kFormat = "zinf-routing-profile";
constexpr int kVersion = 1;

}  // namespace

void SaveRoutingProfile(const std::string& path, const RoutingProfile& profile,
                        const ModelConfig& config) {
  nlohmann::json layers = nlohmann::json::array();
  for (int layer = 0; layer < profile.num_layers(); ++layer) {
    if (profile.counts(layer).empty()) continue;
    layers.push_back(
        {{"layer", layer}, {"tokens", profile.tokens(layer)}, {"counts", profile.counts(layer)}});
  }
  const nlohmann::json json = {{"format", kFormat},
                               {"version", kVersion},
                               {"model_type", config.model_type},
                               {"num_layers", config.num_layers},
                               {"num_experts", config.moe.num_experts},
                               {"experts_per_token", config.moe.experts_per_token},
                               {"layers", layers}};
  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::trunc);
    if (!(file << json.dump(1) << "\n")) Fail("cannot write the routing profile {}", partial);
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) Fail("cannot write the routing profile {}: {}", path, error.message());
}

RoutingProfile LoadRoutingProfile(const std::string& path, const ModelConfig& config) {
  if (!config.is_moe()) {
    Fail("--routing-profile {}: the model has no experts to place by use", path);
  }
  std::ifstream file(path);
  if (!file) Fail("cannot read the routing profile {}", path);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& error) {
    Fail("routing profile {}: not JSON: {}", path, error.what());
  }
  RoutingProfile profile(config);
  try {
    if (json.value("format", "") != kFormat || json.value("version", 0) != kVersion) {
      Fail("routing profile {}: not a {} version {} file (write one with zinf generate "
           "--save-routing)",
           path, kFormat, kVersion);
    }
    const int layers = json.at("num_layers"), experts = json.at("num_experts"),
              k = json.at("experts_per_token");
    if (layers != config.num_layers || experts != config.moe.num_experts ||
        k != config.moe.experts_per_token) {
      Fail("routing profile {}: made for {} layers x {} experts (top-{}), but the model has {} x "
           "{} (top-{})",
           path, layers, experts, k, config.num_layers, config.moe.num_experts,
           config.moe.experts_per_token);
    }
    for (const nlohmann::json& entry : json.at("layers")) {
      const int layer = entry.at("layer");
      const uint64_t tokens = entry.at("tokens");
      std::vector<uint64_t> counts = entry.at("counts");
      if (layer < 0 || layer >= config.num_layers || !config.IsMoeLayer(layer) ||
          counts.size() != static_cast<size_t>(experts)) {
        Fail("routing profile {}: layer {} is not a sparse layer of {} experts in this model", path,
             layer, experts);
      }
      uint64_t routed = 0;
      for (uint64_t count : counts) routed += count;
      if (routed != tokens * static_cast<uint64_t>(k)) {
        Fail("routing profile {}: layer {} routes {} tokens to {} experts, not {} x top-{}", path,
             layer, tokens, routed, tokens, k);
      }
      profile.SetLayer(layer, std::move(counts), tokens);
    }
  } catch (const nlohmann::json::exception& error) {
    Fail("routing profile {}: {}", path, error.what());
  }
  return profile;
}

}  // namespace zinf::cli
