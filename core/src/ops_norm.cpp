// layer_norm: PyTorch's F.layer_norm as one fused op, forward and backward.
//
// Legend: M rows (every leading dim of x merged), N = numel(normalized_shape)
// features per row (the trailing dims of x, merged); k indexes N.
//
//   mean     = (1/N) sum_k x[k]
//   var      = (1/N) sum_k (x[k] - mean)^2        (biased, as PyTorch)
//   rstd     = 1 / sqrt(var + eps)
//   x̂[k]     = (x[k] - mean) rstd
//   y[k]     = x̂[k] w[k] + b[k]                   (w, b optional, shaped normalized_shape)
//
// Why fused: composed from primitives (mean, sub, pow, mean, add, sqrt, div,
// mul, add) the op makes nine temporaries of x's size and its backward walks
// all of them back; here the forward makes one pass per row for the moments
// and one for y, keeps only mean and rstd per row (M numbers each), and the
// backward is one pass per row for dx plus one sweep for dw and db. The
// composed version is the test reference (tests/test_transformer.cpp).
//
// Backward, from g = dL/dy. In the forward this was y = x̂ w + b, so
//   dL/dw[k] = sum_rows g[k] x̂[k],  dL/db[k] = sum_rows g[k],
// and with ĝ = g w (dL/dx̂), since x̂ depends on x through mean and rstd,
//   dL/dx = rstd / N (N ĝ - sum_k ĝ - x̂ sum_k(ĝ x̂)).
// (dx̂[k]/dx[j] = rstd (δ_kj - 1/N - x̂[k] x̂[j] / N).)
//
// float64 rows accumulate their sums in double (8 lanes, below); float32
// rows take detail::layer_norm_rows_f32 and its backward, the same math in
// SIMD with the sums in 16 float lanes (fast/vector_math.cpp). Rows are
// independent and split across threads; dw and db add the rows up in row
// order on one thread, in double, so the bits of every result are the same
// for any number of threads.
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "fast/parallel.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

namespace {

constexpr const char* kLayerNorm = "layer_norm";

// ---- one row of N features ---------------------------------------------------------

// The M sums sum_k term(k)[i] for k < n (term returns M doubles), each in 8
// independent double lanes added pairwise at the end: the row's sums run at
// the loads' speed instead of one addition's latency per feature.
constexpr int64_t kLanes = 8;

template <size_t M, typename Term>
std::array<double, M> lane_sums(int64_t n, Term term) {
  std::array<std::array<double, kLanes>, M> lane{};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      const std::array<double, M> t = term(k + j);
      for (size_t i = 0; i < M; ++i) lane[i][static_cast<size_t>(j)] += t[i];
    }
  for (size_t j = 0; k < n; ++k, ++j) {
    const std::array<double, M> t = term(k);
    for (size_t i = 0; i < M; ++i) lane[i][j] += t[i];
  }
  std::array<double, M> total;
  for (size_t i = 0; i < M; ++i) {
    for (size_t half = kLanes / 2; half > 0; half /= 2)
      for (size_t j = 0; j < half; ++j) lane[i][j] += lane[i][j + half];
    total[i] = lane[i][0];
  }
  return total;
}

// forward: x̂ and y of one row; returns {mean, rstd}. w, b may be null.
template <typename T>
void forward_row(const T* x, const T* w, const T* b, T* y, int64_t n, double eps, double& mean,
                 double& rstd) {
  mean = lane_sums<1>(n, [&](int64_t k) { return std::array{static_cast<double>(x[k])}; })[0] /
         static_cast<double>(n);
  // two passes: sum((x - mean)^2) does not cancel as sum(x^2) - N mean^2 would
  const double ss = lane_sums<1>(n, [&](int64_t k) {
    const double d = x[k] - mean;
    return std::array{d * d};
  })[0];
  rstd = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t k = 0; k < n; ++k) {
    const double xhat = (x[k] - mean) * rstd;
    y[k] = static_cast<T>(xhat * (w ? static_cast<double>(w[k]) : 1.0) + (b ? b[k] : T(0)));
  }
}

// backward of one row, dx only (dw and db sum over rows; the caller does them):
//   ĝ = g w,  dx = rstd / N (N ĝ - sum ĝ - x̂ sum(ĝ x̂))
template <typename T>
void backward_row(const T* x, const T* w, const T* g, T* dx, int64_t n, double mean, double rstd) {
  const auto ghat = [&](int64_t k) { return w ? static_cast<double>(g[k]) * w[k] : g[k]; };
  const auto [sum_g, sum_gx] = lane_sums<2>(n, [&](int64_t k) {
    const double gk = ghat(k);
    return std::array{gk, gk * (x[k] - mean) * rstd};
  });
  const double N = static_cast<double>(n), scale = rstd / N;
  for (int64_t k = 0; k < n; ++k) {
    const double xhat = (x[k] - mean) * rstd;
    dx[k] = static_cast<T>(scale * (N * ghat(k) - sum_g - xhat * sum_gx));
  }
}

// What the backward keeps of the forward: per row mean and rstd.
struct Moments {
  std::vector<double> mean, rstd;
};

// Every row of contiguous x [M, N] on the threads.
template <typename T>
void forward(const T* x, const T* w, const T* b, T* y, int64_t m, int64_t n, double eps,
             Moments& moments) {
  detail::parallel_for(
      m,
      [&](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float>)
          detail::layer_norm_rows_f32(x + begin * n, w, b, y + begin * n, end - begin, n, eps,
                                      moments.mean.data() + begin, moments.rstd.data() + begin);
        else
          for (int64_t r = begin; r < end; ++r)
            forward_row(x + r * n, w, b, y + r * n, n, eps, moments.mean[static_cast<size_t>(r)],
                        moments.rstd[static_cast<size_t>(r)]);
      },
      detail::grain_for(3 * n));
}

// dx [M, N] on the threads (rows independent), then dw and db [N] in row order.
template <typename T>
void backward(const T* x, const T* w, const T* g, T* dx, T* dw, T* db, int64_t m, int64_t n,
              const Moments& moments) {
  if (dx)
    detail::parallel_for(
        m,
        [&](int64_t begin, int64_t end) {
          if constexpr (std::is_same_v<T, float>)
            detail::layer_norm_backward_rows_f32(x + begin * n, w, g + begin * n, dx + begin * n,
                                                 end - begin, n, moments.mean.data() + begin,
                                                 moments.rstd.data() + begin);
          else
            for (int64_t r = begin; r < end; ++r)
              backward_row(x + r * n, w, g + r * n, dx + r * n, n,
                           moments.mean[static_cast<size_t>(r)],
                           moments.rstd[static_cast<size_t>(r)]);
        },
        detail::grain_for(4 * n));
  if (!dw && !db) return;
  // dw = sum_rows g x̂, db = sum_rows g, accumulated in double.
  std::vector<double> sw(static_cast<size_t>(n)), sb(static_cast<size_t>(n));
  if constexpr (std::is_same_v<T, float>)
    detail::layer_norm_affine_grads_f32(x, g, m, n, moments.mean.data(), moments.rstd.data(),
                                        sw.data(), sb.data());
  else
    detail::layer_norm_affine_grads(x, g, m, n, moments.mean.data(), moments.rstd.data(), sw.data(),
                                    sb.data());
  for (int64_t k = 0; k < n; ++k) {
    if (dw) dw[k] = static_cast<T>(sw[static_cast<size_t>(k)]);
    if (db) db[k] = static_cast<T>(sb[static_cast<size_t>(k)]);
  }
}

void check_affine(const Tensor& p, const char* what, const Tensor& x, const Shape& normalized) {
  if (!p.defined()) return;
  AG_CHECK(
      p.dtype() == x.dtype(), kLayerNorm,
      std::string(what) + " is " + dtype_name(p.dtype()) + ", input is " + dtype_name(x.dtype()));
  AG_CHECK(p.shape() == normalized, kLayerNorm,
           std::string(what) + " " + shape_str(p.shape()) + " must have normalized_shape " +
               shape_str(normalized));
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_floating(x, kLayerNorm, "input");
  AG_CHECK(!normalized_shape.empty(), kLayerNorm, "normalized_shape must not be empty");
  for (const int64_t s : normalized_shape)
    AG_CHECK(s > 0, kLayerNorm,
             "normalized_shape " + shape_str(normalized_shape) + " has a size < 1");
  AG_CHECK(std::isfinite(eps) && eps >= 0, kLayerNorm,
           "eps must be finite and >= 0, got " + number_str(eps));
  const size_t nd = normalized_shape.size();
  const Shape& xs = x.shape();
  AG_CHECK(xs.size() >= nd &&
               Shape(xs.end() - static_cast<std::ptrdiff_t>(nd), xs.end()) == normalized_shape,
           kLayerNorm,
           "input " + shape_str(xs) + " does not end with normalized_shape " +
               shape_str(normalized_shape));
  check_affine(weight, "weight", x, normalized_shape);
  check_affine(bias, "bias", x, normalized_shape);
  if (reference_mode()) {
    return detail::faulty(kLayerNorm,
                          reference::layer_norm(x, normalized_shape, weight, bias, eps));
  }

  int64_t n = 1;
  for (const int64_t s : normalized_shape) n *= s;
  const int64_t m = x.numel() / n;
  const Tensor xc = x.detach().contiguous();
  const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
  const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  auto moments = std::make_shared<Moments>();
  moments->mean.resize(static_cast<size_t>(m));
  moments->rstd.resize(static_cast<size_t>(m));
  // y = (x - mean) rstd w + b: [..., normalized_shape]
  Tensor y = empty(xs, x.dtype());
  dispatch_floating(x.dtype(), kLayerNorm, [&](auto tag) {
    using T = decltype(tag);
    forward(xc.data_ptr<T>(), wc.defined() ? wc.data_ptr<T>() : nullptr,
            bc.defined() ? bc.data_ptr<T>() : nullptr, y.data_ptr<T>(), m, n, eps, *moments);
  });
  // dx = rstd/N (N ĝ - sum ĝ - x̂ sum ĝ x̂) with ĝ = g w; dw = sum_rows g x̂; db = sum_rows g
  y = detail::faulty(kLayerNorm, std::move(y));
  if (needs_grad(x, weight, bias))
    record(y, "LayerNormBackward", {x, weight, bias},
           [xc, wc, moments, m, n, normalized_shape, want_x = detail::requires_grad(x),
            want_w = detail::requires_grad(weight),
            want_b = detail::requires_grad(bias)](const Tensor& g) {
             const Tensor gc = g.contiguous();
             Tensor dx = want_x ? empty(xc.shape(), xc.dtype()) : Tensor();
             Tensor dw = want_w ? empty(normalized_shape, xc.dtype()) : Tensor();
             Tensor db = want_b ? empty(normalized_shape, xc.dtype()) : Tensor();
             dispatch_floating(xc.dtype(), kLayerNorm, [&](auto tag) {
               using T = decltype(tag);
               backward(xc.data_ptr<T>(), wc.defined() ? wc.data_ptr<T>() : nullptr,
                        gc.data_ptr<T>(), dx.defined() ? dx.data_ptr<T>() : nullptr,
                        dw.defined() ? dw.data_ptr<T>() : nullptr,
                        db.defined() ? db.data_ptr<T>() : nullptr, m, n, *moments);
             });
             return grads{dx, dw, db};
           });
  return y;
}

// The reference (reference.h): mean and biased variance over the trailing
// dims, then the formula, one op at a time.
Tensor reference::layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                             const Tensor& bias, double eps) {
  std::vector<int64_t> dims;  // the trailing normalized_shape.size() dims
  for (int64_t d = x.dim() - static_cast<int64_t>(normalized_shape.size()); d < x.dim(); ++d)
    dims.push_back(d);
  const Tensor centred = x - mean(x, dims, /*keepdim=*/true);
  const Tensor variance = mean(centred * centred, dims, /*keepdim=*/true);
  Tensor y = centred / sqrt(variance + eps);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

}  // namespace ag
