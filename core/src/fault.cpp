// The fault switch (fault.h): ATTOGRAD_FAULT read once, at the first op.
#include "fault.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "attograd/dtype.h"
#include "attograd/error.h"

namespace ag::detail {

const std::string& faulted_op_names() {
  static const std::string names =
      "softmax, log_softmax, masked_softmax, bmm, matmul, mm, linear, additive_scores, tanh, "
      "exp, sigmoid, layer_norm, gru_cell, gru_layer, flash_attention, cross_entropy";
  return names;
}

namespace {

// The op ATTOGRAD_FAULT names, or "" when it is unset.
const std::string& fault_name() {
  static const std::string name = [] {
    const char* value = std::getenv("ATTOGRAD_FAULT");
    const std::string chosen = value == nullptr ? "" : value;
    if (chosen.empty()) return chosen;
#ifndef ATTOGRAD_FAULTS
    throw Error(
        "ATTOGRAD_FAULT: this build has no faults compiled in (configure with "
        "-DATTOGRAD_FAULTS=ON, as test builds are); unset it to run");
#endif
    const std::string& names = faulted_op_names();
    for (size_t start = 0; start < names.size();) {
      const size_t end = std::min(names.find(", ", start), names.size());
      if (std::string_view(names).substr(start, end - start) == chosen) return chosen;
      start = end + 2;
    }
    throw Error("ATTOGRAD_FAULT: no op '" + chosen + "' has a fault; the ops that do: " + names);
  }();
  return name;
}

}  // namespace

Tensor faulty(const char* op, Tensor result) {
  const std::string& name = fault_name();
  if (name.empty() || name != op) return result;
  AG_CHECK(result.is_contiguous(), op, "ATTOGRAD_FAULT: the result is not contiguous");
  // In place: the op's fresh, contiguous result, before anyone else holds it.
  dispatch_floating(result.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    T* y = result.data_ptr<T>();
    for (int64_t i = 0; i < result.numel(); ++i) y[i] = y[i] * T(1.01) + T(0.001);
  });
  return result;
}

}  // namespace ag::detail
