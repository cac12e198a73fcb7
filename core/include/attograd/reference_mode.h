// The reference switch's state (reference.h says what the switch does). A
// header of the base layer: the GEMM dispatch and the thread pool, below the
// tensor, read it too.
#pragma once

namespace ag {

// Whether every op takes its plain reference. On from the start when the
// environment has ATTOGRAD_REFERENCE=1 (any other value, or none: off).
bool reference_mode();
void set_reference_mode(bool on);

// Reference mode (or not) for a scope; the mode before it comes back at its end.
class ReferenceModeGuard {
 public:
  explicit ReferenceModeGuard(bool on = true) : before_(reference_mode()) {
    set_reference_mode(on);
  }
  ~ReferenceModeGuard() { set_reference_mode(before_); }
  ReferenceModeGuard(const ReferenceModeGuard&) = delete;
  ReferenceModeGuard& operator=(const ReferenceModeGuard&) = delete;

 private:
  bool before_;
};

}  // namespace ag
