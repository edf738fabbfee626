// zinf's process exit codes, one meaning each, so a script driving long jobs can tell a run to
// retry (--resume) from one whose inputs need fixing. The README's "Exit codes" lists them.
#pragma once

namespace zinf::cli {

inline constexpr int kExitOk = 0;              // every request done (or the command succeeded)
inline constexpr int kExitError = 1;           // the run stopped on an error; --resume continues
inline constexpr int kExitUsage = 2;           // a bad flag or value, refused before any work
inline constexpr int kExitRequestsFailed = 3;  // finished, but some requests have error lines
inline constexpr int kExitInterrupted = 130;   // Ctrl-C / SIGTERM; --resume continues

}  // namespace zinf::cli
