// ATTOGRAD_FAULT=NAME: a wrong result from the op NAME, so that a test can
// prove that its checks fail when that op is wrong (the tutorials' ctest
// runs each under a fault of every op it teaches; issue 67). NAME is the op's
// name as its errors give it and attograd/ops.h declares it (softmax,
// masked_softmax, bmm, ...; a name no op has is refused with the list).
//
// Compiled in only where CMake's ATTOGRAD_FAULTS is on (test builds): there
// the op's forward result is changed after it is computed, every element y
// becoming y * 1.01 + 0.001, small enough to look plausible and past any
// check's tolerance. Its backward is left as it is. Elsewhere faulty() is
// the identity, and a set ATTOGRAD_FAULT is an error at the first op.
#pragma once

#include "attograd/tensor.h"

namespace ag::detail {

// `result` of the op `op`, perturbed in place when ATTOGRAD_FAULT names it.
Tensor faulty(const char* op, Tensor result);

}  // namespace ag::detail
