// Progress of an hours-long generate run: requests done / total, generation and prefill tokens/s,
// elapsed and ETA; redrawn in place a few times a second on a terminal, else logged every N
// seconds so a cluster job's log shows it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace zinf::cli {

struct ProgressSnapshot {
  int64_t done = 0;  // requests finished by this run (failed ones included)
  int64_t failed = 0;
  int64_t total = 0;  // requests this run has to do
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double elapsed_seconds = 0;
  double generation_tokens_per_s = 0;  // over the last half minute or so
  double prefill_tokens_per_s = 0;
  // Prompt and new tokens still to run (requests not yet started counted at the mean size of
  // those started); the ETA divides it by the rates. Negative: unknown, the ETA follows requests.
  double remaining_tokens = -1;
};

// "1234/5000 requests (3 failed) | gen 512 tok/s, prefill 2.05k tok/s | 12m05s elapsed, ETA 36m40s"
std::string FormatProgress(const ProgressSnapshot& snapshot);
// "3.2s", "45s", "12m05s", "3h12m", "2d04h".
std::string FormatDuration(double seconds);

// Not thread-safe; Update from the generation loop.
class GenerateProgress {
 public:
  // log_every_seconds: the period of log lines when stderr is not a terminal (0: none).
  GenerateProgress(int64_t total_requests, double log_every_seconds);
  ~GenerateProgress();
  void Update(int64_t done, int64_t failed, int64_t prompt_tokens, int64_t generated_tokens,
              double remaining_tokens);
  // Ends the terminal line (the summary follows on its own line).
  void Finish();

 private:
  struct Sample {
    double seconds;
    int64_t prompt_tokens, generated_tokens;
  };
  ProgressSnapshot Snapshot(double now_seconds);

  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  const bool tty_;
  const double log_every_seconds_;
  double last_output_seconds_ = 0;
  bool drawn_ = false;
  ProgressSnapshot latest_;
  std::deque<Sample> window_;  // recent samples, for rates that follow the run as it goes
};

}  // namespace zinf::cli
