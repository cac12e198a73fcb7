// Frame times and memory, measured by the viewer itself (--stats).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

namespace ag::viewer {

// Resident set size of this process in KiB (VmRSS of /proc/self/status; 0
// where that file does not exist).
int64_t resident_kib();

class FrameStats {
 public:
  // Records one frame's duration; after the 100th frame it also notes the
  // resident set size, the baseline that memory growth is measured from.
  void add_frame(double milliseconds);
  // Notes the resident set size at the end of the frame loop, before the
  // exit work (screenshot, files), which is not a frame's cost.
  void finish() { rss_kib_last_ = resident_kib(); }
  // "frames N", "frame_ms_median X", "frame_ms_p95 X", "frame_ms_p99 X", "rss_kib_first X",
  // "rss_kib_last X": one "key value" pair a line.
  void print(std::ostream& out) const;

  static constexpr int64_t kWarmupFrames = 100;

 private:
  std::vector<double> frame_ms_;
  int64_t rss_kib_first_ = 0;
  int64_t rss_kib_last_ = 0;
};

}  // namespace ag::viewer
