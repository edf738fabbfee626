// `--plot FILE`: checked before a sweep runs anything (a sweep can take hours, and a typo in the
// path must not cost them), and written once it is done, as SVG or PNG by the file's extension.
#pragma once

#include <string>

namespace zinf::cli {

// Throws zinf::Error naming `flag` unless `path` ends in .svg or .png (any case) and names a file
// in an existing directory this process may write in.
void CheckPlotPath(const std::string& path, const std::string& flag = "--plot");

// Writes the plot: the SVG text itself, or that SVG rendered as PNG. Should the PNG fail, the SVG
// is kept beside it (FILE.svg), so the sweep's plot is not lost.
void WritePlot(const std::string& path, const std::string& svg);

}  // namespace zinf::cli
