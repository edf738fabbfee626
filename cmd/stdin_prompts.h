// `--prompts -`: stdin copied once to an unlinked temporary file, because generate reads its
// prompt file twice (checked whole before any work, then streamed) and a pipe reads only once.
#pragma once

#include <cstdio>

namespace zinf::cli {

// The prompt-file path that means stdin.
inline constexpr const char* kStdinPrompts = "-";

struct SpooledStdin {
  int fd = -1;               // the unlinked copy; open until the process exits
  bool looks_jsonl = false;  // its first non-blank character (after a BOM) is '{'
};

// Copies all of stdin into an unlinked file in $TMPDIR (default /tmp) on the first call and
// returns the same copy on later ones. Nothing is left on disk, however the process ends.
// Failure: throws zinf::Error naming the directory (full, unwritable) or stdin (a read error).
const SpooledStdin& SpoolStdin();

// A new FILE* on the copy, at its start, with its own file position (readers do not share one).
// The caller closes it. Throws zinf::Error when it cannot be opened.
std::FILE* OpenSpooledStdin();

}  // namespace zinf::cli
