// SVG to PNG in-process: librsvg renders the SVG onto a cairo image surface and cairo writes it
// as PNG, so `zinf bench --plot x.png` needs no program beside zinf.
#pragma once

#include <string>

namespace zinf::cli {

// Renders `svg` at its own size times `scale` (above 1 for sharp lines on high-density screens) and
// writes the PNG to `path`. Throws zinf::Error naming `path` when the SVG cannot be parsed or the
// file cannot be written.
void WriteSvgAsPng(const std::string& svg, const std::string& path, double scale = 1);

}  // namespace zinf::cli
