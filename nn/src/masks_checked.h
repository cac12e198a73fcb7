// attention_softmax (masks.h) after its checks: for attention_pool
// (pooling.cpp), which checks the lengths and the mask once, against the
// scores before multi-head attention's heads are folded into the batch,
// and then hands them here per head. Internal to nn/.
#pragma once

#include "attograd/nn/masks.h"

namespace ag::nn::detail {

// attention_softmax(scores, options), its lengths and mask already checked
// against the scores.
Tensor attention_softmax_checked(const Tensor& scores, const AttentionSoftmaxOptions& options);

}  // namespace ag::nn::detail
