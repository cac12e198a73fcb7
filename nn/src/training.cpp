#include "attograd/nn/training.h"

#include <cmath>
#include <string>

#include "attograd/kernels/optim.h"
#include "attograd/nn/masks.h"

namespace ag::nn {

Tensor masked_softmax_ce_loss(const Tensor& logits, const Tensor& labels, const Tensor& valid_len,
                              double label_smoothing) {
  constexpr const char* kOp = "masked_softmax_ce_loss";
  AG_CHECK(logits.defined() && labels.defined() && valid_len.defined(), kOp,
           "logits, labels and valid_len must be defined");
  AG_CHECK(label_smoothing >= 0 && label_smoothing <= 1, kOp,
           "label_smoothing must be in [0, 1], got " + number_str(label_smoothing));
  const auto shapes = [&] {
    return "logits " + shape_str(logits.shape()) + ", labels " + shape_str(labels.shape()) +
           ", valid_len " + shape_str(valid_len.shape());
  };
  check_floating(logits, kOp, "logits");
  AG_CHECK(labels.dtype() == kInt64 && valid_len.dtype() == kInt64, kOp,
           std::string("labels and valid_len must be int64, got ") + dtype_name(labels.dtype()) +
               " and " + dtype_name(valid_len.dtype()));
  AG_CHECK(logits.dim() == 3 && labels.shape() == Shape({logits.size(0), logits.size(1)}) &&
               valid_len.shape() == Shape({logits.size(0)}),
           kOp, "expected logits [B, T, V], labels [B, T] and valid_len [B], got " + shapes());
  const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);

  // Where each position's label sits in the flattened log-probabilities:
  // index (b T + t) V + labels[b, t].
  const Tensor label_values = labels.contiguous();
  const int64_t* label = label_values.data_ptr<int64_t>();
  Tensor flat_index = empty({B * T}, kInt64);
  int64_t* index = flat_index.data_ptr<int64_t>();
  for (int64_t i = 0; i < B * T; ++i) {
    AG_CHECK(label[i] >= 0 && label[i] < V, kOp,
             "label " + std::to_string(label[i]) + " at [" + std::to_string(i / T) + ", " +
                 std::to_string(i % T) + "] is out of range for " + std::to_string(V) +
                 " classes (logits " + shape_str(logits.shape()) + ")");
    index[i] = i * V + label[i];
  }
  const Tensor lens = valid_len.contiguous();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = lens.data_ptr<int64_t>()[b];
    AG_CHECK(n >= 0 && n <= T, kOp,
             "valid_len " + std::to_string(n) + " of sequence " + std::to_string(b) +
                 " is outside [0, T = " + std::to_string(T) + "] (" + shapes() + ")");
  }

  // -log p of each label: picked from the log-softmax by index_select, whose
  // backward scatters the gradient back to those entries only.
  const Tensor log_probs = log_softmax(logits, -1);                             // [B, T, V]
  const Tensor picked = index_select(reshape(log_probs, {-1}), 0, flat_index);  // [B T]
  Tensor unweighted = neg(reshape(picked, {B, T}));                             // [B, T]
  if (label_smoothing > 0) {
    // torch's label_smoothing = e: the target is (1 - e) on the label and e
    // spread evenly over all V classes, so each position's loss is
    //   (1 - e) (-log p[label]) + e (1/V) sum_v -log p[v].
    const Tensor uniform = neg(mean(log_probs, -1));  // [B, T]
    unweighted = unweighted * (1 - label_smoothing) + uniform * label_smoothing;
  }
  // d2l's weights: 1 before the valid length, 0 after.
  const Tensor weighted = where(sequence_mask(valid_len, T), unweighted, 0.0);  // [B, T]
  return mean(weighted, 1);                                                     // [B]
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm) {
  constexpr const char* kOp = "clip_grad_norm_";
  AG_CHECK(max_norm >= 0, kOp, "max_norm must be >= 0, got " + number_str(max_norm));
  // total = sqrt(sum over every gradient entry of g^2), accumulated in double.
  double squares = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    AG_CHECK(parameters[i].defined(), kOp, "parameter " + std::to_string(i) + " is undefined");
    const Tensor g = parameters[i].grad();
    if (!g.defined()) continue;
    check_floating(g, kOp, "gradient");
    const Tensor contiguous = g.contiguous();
    dispatch_floating(g.dtype(), kOp, [&](auto tag) {
      using T = decltype(tag);
      squares += kernels::sum_of_squares(contiguous.data_ptr<T>(), contiguous.numel());
    });
  }
  const double total = std::sqrt(squares);
  const double scale = max_norm / (total + 1e-6);
  // torch multiplies by min(scale, 1); a factor of 1 changes nothing, so only
  // a smaller one (or NaN, which torch spreads too) is applied.
  if (!(scale >= 1)) {
    NoGradGuard no_grad;
    for (Tensor p : parameters) {  // a handle: set_grad reaches the caller's parameter
      const Tensor g = p.grad();
      if (g.defined()) p.set_grad(g * scale);
    }
  }
  return total;
}

}  // namespace ag::nn
