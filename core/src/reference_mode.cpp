// The reference switch's state (reference_mode.h): one flag, read by every
// op that has a fast path, set from ATTOGRAD_REFERENCE at start.
#include "attograd/reference_mode.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ag {
namespace {

bool from_environment() {
  const char* value = std::getenv("ATTOGRAD_REFERENCE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// Relaxed loads: an op reads the flag once at its start, and a switch made
// while another thread's op runs takes effect at that thread's next op.
std::atomic<bool>& flag() {
  static std::atomic<bool> on{from_environment()};
  return on;
}

}  // namespace

bool reference_mode() {
  return flag().load(std::memory_order_relaxed);
}

void set_reference_mode(bool on) {
  flag().store(on, std::memory_order_relaxed);
}

}  // namespace ag
