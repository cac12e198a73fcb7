// Dropout and the two losses: mse_loss and cross_entropy.
#include <cmath>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "elementwise.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

// ---- dropout ------------------------------------------------------------------------
// Inverted dropout: out = x * mask, mask = 0 with probability p and 1/(1-p)
// otherwise, so E[out] = x and evaluation needs no rescaling.

Tensor dropout(const Tensor& x, double p, bool training) {
  check_floating(x, "dropout", "input");
  AG_CHECK(p >= 0 && p < 1, "dropout", "p must be in [0, 1), got " + number_str(p));
  if (!training || p == 0) return x;
  const uint64_t seed = random_u64();  // manual_seed(s) reproduces the mask
  const Tensor xc = x.detach().contiguous();
  Tensor mask = empty(x.shape(), x.dtype());  // every element is written below
  Tensor out = empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    // Element i is dropped when u_i = k_i * 2^-53 < p, k_i = dropout_bits(seed, i).
    // For an integer k that is k < ceil(p * 2^53), compared in integers: the
    // same mask as the float test, without an int-to-double conversion per
    // element (p * 2^53 and its ceil are exact in double).
    const uint64_t drop_below = static_cast<uint64_t>(std::ceil(p * 0x1.0p53));
    // One pass writes the mask and out = x * mask (SIMD for float32).
    if constexpr (std::is_same_v<T, float>)
      detail::dropout_f32(xc.data_ptr<T>(), out.data_ptr<T>(), mask.data_ptr<T>(), out.numel(),
                          seed, drop_below, scale);
    else
      detail::dropout_loop(xc.data_ptr<T>(), out.data_ptr<T>(), mask.data_ptr<T>(), out.numel(),
                           seed, drop_below, scale);
  });
  // out = x * mask  =>  dL/dx = g * mask (the same mask: zero or 1/(1-p))
  if (needs_grad(x))
    record(out, "DropoutBackward", {x}, [mask](const Tensor& g) { return grads{mul(g, mask)}; });
  return out;
}

// ---- mse_loss -------------------------------------------------------------------------

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  check_floating(input, "mse_loss", "input");
  check_floating(target, "mse_loss", "target");
  AG_CHECK(input.shape() == target.shape(), "mse_loss",
           "input " + shape_str(input.shape()) + " and target " + shape_str(target.shape()) +
               " must have the same shape");
  if (input.dtype() != target.dtype())
    detail::throw_dtypes_differ(input, target, "mse_loss", "input", "target");
  AG_CHECK(input.numel() > 0, "mse_loss", "empty input of shape " + shape_str(input.shape()));
  const Tensor diff = input.detach() - target.detach();  // d = input - target
  Tensor loss = mean(diff * diff);                       // L = mean(d^2), 0-d
  // L = (1/n) sum d^2  =>  dL/dinput = g 2 d / n,  dL/dtarget = -g 2 d / n
  if (needs_grad(input, target))
    record(loss, "MseLossBackward", {input, target},
           [diff, n = static_cast<double>(input.numel())](const Tensor& g) {
             const Tensor d_input = diff * (g * (2.0 / n));
             return grads{d_input, neg(d_input)};
           });
  return loss;
}

// ---- cross_entropy ----------------------------------------------------------------------
// logits [N, C], targets [N] (or logits [C] with a 0-d target, N = 1):
//   L = -(1/N) sum_n log_softmax(logits)[n, t_n]
// Fused rather than composed from log_softmax and a gather: the gradient is
// the well-known softmax minus one-hot, computed in one pass.

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_floating(logits, "cross_entropy", "logits");
  AG_CHECK(targets.defined(), "cross_entropy", "undefined targets");
  AG_CHECK(targets.dtype() == kInt64, "cross_entropy",
           std::string("targets must be int64 class indices, got ") + dtype_name(targets.dtype()) +
               " " + shape_str(targets.shape()));
  AG_CHECK(logits.dim() == 1 || logits.dim() == 2, "cross_entropy",
           "logits must be [N, C] or [C], got " + shape_str(logits.shape()));
  const bool batched = logits.dim() == 2;
  AG_CHECK(batched ? targets.shape() == Shape{logits.size(0)} : targets.dim() == 0, "cross_entropy",
           "logits " + shape_str(logits.shape()) + " need targets of shape " +
               (batched ? shape_str({logits.size(0)}) : std::string("[] (0-d)")) + ", got " +
               shape_str(targets.shape()));
  const int64_t N = batched ? logits.size(0) : 1, C = logits.size(-1);
  const Tensor tc = targets.contiguous();
  const std::vector<int64_t> t(tc.data_ptr<int64_t>(), tc.data_ptr<int64_t>() + N);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t target = t[static_cast<size_t>(n)];
    AG_CHECK(target >= 0 && target < C, "cross_entropy",
             "target " + std::to_string(target) +
                 (batched ? " at index " + std::to_string(n) : std::string()) +
                 " is out of range for " + std::to_string(C) + " classes (valid: 0.." +
                 std::to_string(C - 1) + ")");
  }

  const Tensor log_probs = log_softmax(logits.detach(), -1);  // [N, C]
  const std::vector<double> lp = log_probs.to_vector();
  double total = 0;
  for (int64_t n = 0; n < N; ++n)
    total -= lp[static_cast<size_t>(n * C + t[static_cast<size_t>(n)])];
  Tensor loss =
      scalar_tensor(total / static_cast<double>(N), logits.dtype());  // N = 0 gives NaN, as PyTorch

  // L = -(1/N) sum_n log p[n, t_n],  p = softmax(logits)
  //   =>  dL/dlogits[n, c] = g (p[n, c] - [c == t_n]) / N
  loss = detail::faulty("cross_entropy", std::move(loss));
  if (needs_grad(logits))
    record(loss, "CrossEntropyBackward", {logits}, [log_probs, t, N, C](const Tensor& g) {
      Tensor d = empty(log_probs.shape(), log_probs.dtype());  // all N x C written
      dispatch_floating(d.dtype(), "cross_entropy", [&](auto tag) {
        using T = decltype(tag);
        const T scale = static_cast<T>(g.item() / static_cast<double>(N));
        const T* lpp = log_probs.data_ptr<T>();
        T* pd = d.data_ptr<T>();
        for (int64_t n = 0; n < N; ++n) {
          const int64_t target = t[static_cast<size_t>(n)];
          for (int64_t c = 0; c < C; ++c)
            pd[n * C + c] = scale * (std::exp(lpp[n * C + c]) - (c == target ? T(1) : T(0)));
        }
      });
      return grads{d};
    });
  return loss;
}

}  // namespace ag
