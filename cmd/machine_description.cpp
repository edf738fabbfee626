// The CPU's model name from /proc/cpuinfo; see machine_description.h.
#include "cmd/machine_description.h"

#include <fstream>
#include <sstream>

namespace zinf::cli {

namespace {

void EraseAll(std::string& text, const std::string& part) {
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at)) {
    text.erase(at, part.size());
  }
}

}  // namespace

std::string CpuModelName(const std::string& cpuinfo) {
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 1);
    for (const char* mark : {"(R)", "(r)", "(TM)", "(tm)", " CPU"}) EraseAll(name, mark);
    std::string collapsed;  // single spaces, none at the ends
    for (char c : name) {
      if (c == ' ' || c == '\t') {
        if (!collapsed.empty() && collapsed.back() != ' ') collapsed += ' ';
      } else {
        collapsed += c;
      }
    }
    if (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    if (!collapsed.empty()) return collapsed;
  }
  return "";
}

std::string CpuModelName() {
  std::ifstream file("/proc/cpuinfo");
  std::stringstream text;
  text << file.rdbuf();
  const std::string name = CpuModelName(text.str());
  return name.empty() ? "unknown CPU" : name;
}

}  // namespace zinf::cli
