// What `zinf --version` prints: the version, how this binary was built (build type, git commit
// at configure time, CUDA backend or not) and the CPU kernel level it runs at on this machine.
#pragma once

#include <string>

namespace zinf::cli {

// Several lines, the first "zinf X.Y.Z"; no trailing newline.
std::string VersionText();
// The same on one line, for the debug log.
std::string VersionLine();

}  // namespace zinf::cli
