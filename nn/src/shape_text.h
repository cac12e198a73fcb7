// How nn/'s error messages spell a tensor that may be undefined. Internal
// to nn/.
#pragma once

#include <string>

#include "attograd/tensor.h"

namespace ag::nn {

// "[2, 3]", or "none" for an undefined tensor.
inline std::string shape_or_none(const Tensor& t) {
  return t.defined() ? shape_str(t.shape()) : std::string("none");
}

}  // namespace ag::nn
