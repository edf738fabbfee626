// Sizes each thread's part of a parallel loop by how fast that thread finished its parts before,
// so that a thread the machine slows down does not keep the others waiting at every call's end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zinf::cpu {

class PartBalance {
 public:
  explicit PartBalance(int num_threads);

  // Cuts [0, count) into begins.size() − 1 contiguous parts, part p for thread p, sized by the
  // threads' relative speeds; every part but the first starts at a multiple of grain. Writes
  // begins[p] for each part and count last.
  void Split(int64_t count, int64_t grain, std::span<int64_t> begins) const;

  // Learns from one call cut by Split: part p ended seconds[p] after the call began (a worker that
  // woke late is as slow, for the moment everyone waits on, as one that computed slowly).
  void Record(std::span<const int64_t> begins, std::span<const double> seconds);

  // Thread p's indices per second relative to the others' (their mean is 1).
  double relative_speed(int thread) const { return relative_speeds_[thread]; }

 private:
  std::vector<double> relative_speeds_;
  std::vector<double> rates_;  // Record's scratch: a step makes ~50 calls and allocates nothing
};

}  // namespace zinf::cpu
