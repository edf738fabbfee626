// XXH3-64, the checksum of every extent (docs/format.md), as zinf computes it: through libxxhash's
// own run-time dispatch to the CPU's widest vector unit where the library was built with it
// (CMake's ZINF_XXH3_DISPATCH check; Debian's is), else its plain entry points, built for SSE2.
// Include it from .cpp files only: the dispatch header redefines the XXH3 names as macros.
#pragma once

#ifdef ZINF_XXH3_DISPATCH
#include <xxh_x86dispatch.h>
#else
#include <xxhash.h>
#endif
