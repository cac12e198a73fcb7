// The fault switch (fault.h): ATTOGRAD_FAULT read once, at the first op.
#include "fault.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "attograd/dtype.h"
#include "attograd/error.h"

namespace ag::detail {

namespace {

// The ops that call faulty(), by the names their errors use.
constexpr std::string_view kFaultedOps[] = {
    "softmax",  "log_softmax", "masked_softmax",  "bmm",
    "matmul",   "mm",          "linear",          "additive_scores",
    "tanh",     "exp",         "sigmoid",         "layer_norm",
    "gru_cell", "gru_layer",   "flash_attention", "cross_entropy"};

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
    if (std::find(std::begin(kFaultedOps), std::end(kFaultedOps), chosen) != std::end(kFaultedOps))
      return chosen;
    std::string names;
    for (const std::string_view op : kFaultedOps) {
      if (!names.empty()) names += ", ";
      names += op;
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
