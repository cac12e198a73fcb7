// Exercise 2's solution: the library's softmax (core/src/ops_softmax.cpp:
// softmax, which subtracts each row's maximum before exp).
#include "exercises.h"

namespace ex {

Tensor stable_softmax(const Tensor& x) {
  return ag::softmax(x, -1);
}

}  // namespace ex
