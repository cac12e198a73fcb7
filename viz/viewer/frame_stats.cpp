// Frame statistics: percentiles of frame time and resident memory.
#include "frame_stats.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace ag::viewer {

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      int64_t kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

void FrameStats::add_frame(double milliseconds) {
  frame_ms_.push_back(milliseconds);
  if (static_cast<int64_t>(frame_ms_.size()) == kWarmupFrames) rss_kib_first_ = resident_kib();
}

void FrameStats::print(std::ostream& out) const {
  std::vector<double> sorted = frame_ms_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentile of the sorted frame times.
  auto percentile = [&](double p) {
    if (sorted.empty()) return 0.0;
    const size_t rank =
        static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[rank];
  };
  out << "frames " << frame_ms_.size() << "\n"
      << "frame_ms_median " << percentile(50) << "\n"
      << "frame_ms_p95 " << percentile(95) << "\n"
      << "frame_ms_p99 " << percentile(99) << "\n"
      << "rss_kib_first " << (rss_kib_first_ > 0 ? rss_kib_first_ : resident_kib()) << "\n"
      << "rss_kib_last " << (rss_kib_last_ > 0 ? rss_kib_last_ : resident_kib()) << "\n";
}

}  // namespace ag::viewer
