// ag::Error — the one exception type attograd throws.
//
// Every public entry point validates its arguments and throws ag::Error with a
// message that starts with the op's name and names the offending shapes, e.g.
//   "bmm: batch sizes differ: [2, 1, 20] vs [3, 10, 20]".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ag {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// "[2, 3, 4]" — the way shapes appear in every error message.
std::string shape_str(const std::vector<int64_t>& shape);

// Throws ag::Error(op + ": " + message) when `condition` is false.
// Usage: check(a.dim() == 3, "bmm", "expected 3-D tensors, got " + shape_str(a.shape()));
inline void check(bool condition, const char* op, const std::string& message) {
  if (!condition) throw Error(std::string(op) + ": " + message);
}

}  // namespace ag
