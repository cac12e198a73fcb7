// ag::Error — the one exception type attograd throws.
//
// Every public entry point validates its arguments and throws ag::Error with a
// message that starts with the op's name and names the offending shapes, e.g.
//   "bmm: batch sizes differ: [2, 1, 20] vs [3, 10, 20]".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ag {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// "[2, 3, 4]" — the way shapes appear in every error message.
std::string shape_str(const std::vector<int64_t>& shape);
// "0.5", "1e-06": a number as %g prints it, for error messages.
std::string number_str(double value);

namespace detail {
[[noreturn]] void throw_error(std::string_view op, const std::string& message);
}  // namespace detail

}  // namespace ag

// AG_CHECK(condition, op, message): throws ag::Error(op + ": " + message) when
// condition is false, e.g.
//   AG_CHECK(a.dim() == 3, "bmm", "expected 3-D tensors, got " + shape_str(a.shape()));
// A macro rather than a function so that the message (usually built from
// shape_str calls) is only assembled when the check fails: checks run on every
// call of every op, and building their strings up front cost more than the
// attention maths on small inputs. PyTorch's TORCH_CHECK exists for the same reason.
#define AG_CHECK(condition, op, message)                          \
  do {                                                            \
    if (!(condition)) ::ag::detail::throw_error((op), (message)); \
  } while (false)
