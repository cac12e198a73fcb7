// Training helpers of d2l's seq2seq chapter: the masked cross-entropy loss
// and gradient clipping.
#pragma once

#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"

namespace ag::nn {

// d2l's MaskedSoftmaxCELoss ("Sequence to Sequence Learning"): the cross
// entropy of every position, zeroed at and beyond each sequence's valid
// length, then averaged over all T positions (padding included, as d2l's
// `(unweighted_loss * weights).mean(dim=1)`).
//   logits [B, T, V] (floating), labels [B, T] (int64, each in [0, V)),
//   valid_len [B] (int64, each in [0, T])  ->  loss [B]
//   loss[b] = (1/T) sum_{t < valid_len[b]} -log_softmax(logits[b, t])[labels[b, t]]
// label_smoothing e (torch.nn.CrossEntropyLoss's; in [0, 1], else
// ag::Error) trains towards (1 - e) on the label and e spread evenly over
// the V classes: each position's term becomes
//   (1 - e) (-log p[label]) + (e / V) sum_v -log p[v].
Tensor masked_softmax_ce_loss(const Tensor& logits, const Tensor& labels, const Tensor& valid_len,
                              double label_smoothing = 0);

// torch.nn.utils.clip_grad_norm_: the L2 norm of all the gradients together
// (parameters without a gradient are skipped); when it exceeds max_norm,
// every gradient is scaled by max_norm / (total + 1e-6). Returns the total
// norm before clipping. As torch (error_if_nonfinite = false), a NaN or
// infinite total is returned as it is and the scaling spreads it to every
// gradient. max_norm must be >= 0 (NaN throws).
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm);

}  // namespace ag::nn
