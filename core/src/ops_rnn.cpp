// gru_cell: the elementwise gate math of one GRU step (torch.nn.GRU's), fused.
//
// Legend: B batch, H hidden units; the 3H axis holds the gates in PyTorch's
// order r (reset), z (update), n (new), H entries each.
//
//   gi = W_i x + b_i  [B, 3H]   (the input side, computed by the caller:
//   gh = W_h h + b_h  [B, 3H]    nn::GRU does one product per layer for gi)
//   r  = sigmoid(gi_r + gh_r)
//   z  = sigmoid(gi_z + gh_z)
//   n  = tanh(gi_n + r * gh_n)
//   h' = (1 - z) * n + z * h   [B, H]
//
// Why fused: composed from primitives (narrow, add, sigmoid, tanh, mul, sub)
// one step records about fifteen nodes, each with its own [B, H] buffers and
// a backward that allocates a few more; here it is one pass over B * H
// entries that also keeps r, z and n for the backward. The composed version
// stays as the test reference (tests/test_gru.cpp).
#include <cmath>
#include <string>
#include <type_traits>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "parallel.h"
#include "vector_math.h"

namespace ag {

namespace {

constexpr const char* kOp = "gru_cell";

template <typename T>
T sigmoid_of(T a) {
  return T(1) / (T(1) + std::exp(-a));
}

// Rows [begin, end) of the forward: h_next [B, H], and gates [B, 3H] = (r, z, n)
// for the backward. All pointers to contiguous row-major buffers.
// float32 twin: forward_rows_f32 below.
template <typename T>
void forward_rows(const T* gi, const T* gh, const T* h, T* h_next, T* gates, int64_t H,
                  int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const T *gib = gi + b * 3 * H, *ghb = gh + b * 3 * H, *hb = h + b * H;
    T *out = h_next + b * H, *gate = gates + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = sigmoid_of(gib[j] + ghb[j]);
      const T z = sigmoid_of(gib[H + j] + ghb[H + j]);
      const T n = std::tanh(gib[2 * H + j] + r * ghb[2 * H + j]);
      out[j] = (1 - z) * n + z * hb[j];
      gate[j] = r;
      gate[H + j] = z;
      gate[2 * H + j] = n;
    }
  }
}

// The same for float32, with the vectorised exp and tanh of vector_math.h
// (libm's expf and tanhf are scalar calls and took most of a GRU step's
// time), the gates computed in place in their buffer:
//   gate[0, 2H) = e^-(gi + gh)  ->  1 / (1 + gate)   (r and z; e^+big = inf gives 0)
//   gate[2H, 3H) = gi_n + r gh_n  ->  tanh            (n)
void forward_rows_f32(const float* gi, const float* gh, const float* h, float* h_next, float* gates,
                      int64_t H, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const float *gib = gi + b * 3 * H, *ghb = gh + b * 3 * H, *hb = h + b * H;
    float *out = h_next + b * H, *gate = gates + b * 3 * H;
    for (int64_t j = 0; j < 2 * H; ++j) gate[j] = -(gib[j] + ghb[j]);
    detail::exp_f32(gate, gate, 2 * H);
    for (int64_t j = 0; j < 2 * H; ++j) gate[j] = 1 / (1 + gate[j]);
    for (int64_t j = 0; j < H; ++j) gate[2 * H + j] = gib[2 * H + j] + gate[j] * ghb[2 * H + j];
    detail::tanh_f32(gate + 2 * H, gate + 2 * H, H);
    for (int64_t j = 0; j < H; ++j) {
      const float z = gate[H + j], n = gate[2 * H + j];
      out[j] = (1 - z) * n + z * hb[j];
    }
  }
}

// Rows [begin, end) of the backward, from g = dL/dh' [B, H]. In the forward this was
//   h' = (1 - z) n + z h
//     =>  dh  = g z
//         dz  = g (h - n),    da_z = dz z (1 - z)       (a_z = gi_z + gh_z, sigmoid' = z (1 - z))
//         dn  = g (1 - z),    da_n = dn (1 - n^2)       (a_n = gi_n + r gh_n, tanh' = 1 - n^2)
//   a_n = gi_n + r gh_n
//     =>  dgi_n = da_n,  dgh_n = da_n r,  dr = da_n gh_n
//   r = sigmoid(a_r),  a_r = gi_r + gh_r
//     =>  da_r = dr r (1 - r)
//   gi and gh enter a_r and a_z as a plain sum, so dgi_r = dgh_r = da_r and
//   dgi_z = dgh_z = da_z.
// The buffers never overlap; saying so (__restrict) lets the compiler run the
// j loop on vectors, every element computed as written (it was a scalar loop,
// 6% of a seq2seq training step).
template <typename T>
void backward_rows(const T* __restrict g, const T* __restrict gh, const T* __restrict h,
                   const T* __restrict gates, T* __restrict dgi, T* __restrict dgh,
                   T* __restrict dh, int64_t H, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const T *gb = g + b * H, *ghb = gh + b * 3 * H, *hb = h + b * H, *gate = gates + b * 3 * H;
    T *dgib = dgi + b * 3 * H, *dghb = dgh + b * 3 * H, *dhb = dh + b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = gate[j], z = gate[H + j], n = gate[2 * H + j];
      const T da_z = gb[j] * (hb[j] - n) * z * (1 - z);
      const T da_n = gb[j] * (1 - z) * (1 - n * n);
      const T da_r = da_n * ghb[2 * H + j] * r * (1 - r);
      dhb[j] = gb[j] * z;
      dgib[j] = dghb[j] = da_r;
      dgib[H + j] = dghb[H + j] = da_z;
      dgib[2 * H + j] = da_n;
      dghb[2 * H + j] = da_n * r;
    }
  }
}

}  // namespace

Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  AG_CHECK(gi.defined() && gh.defined() && h.defined(), kOp, "gi, gh and h must be defined");
  const auto shapes = [&] {
    return "gi " + shape_str(gi.shape()) + ", gh " + shape_str(gh.shape()) + ", h " +
           shape_str(h.shape());
  };
  AG_CHECK(
      h.dim() == 2 && gi.shape() == Shape({h.size(0), 3 * h.size(1)}) && gh.shape() == gi.shape(),
      kOp, "expected gi [B, 3H], gh [B, 3H] and h [B, H], got " + shapes());
  AG_CHECK(is_floating(h.dtype()) && gi.dtype() == h.dtype() && gh.dtype() == h.dtype(), kOp,
           std::string("gi, gh and h must share one floating dtype (float32 or float64), got ") +
               dtype_name(gi.dtype()) + ", " + dtype_name(gh.dtype()) + ", " +
               dtype_name(h.dtype()));
  const int64_t B = h.size(0), H = h.size(1);
  const Tensor gic = gi.detach().contiguous(), ghc = gh.detach().contiguous(),
               hc = h.detach().contiguous();
  Tensor h_next = empty({B, H}, h.dtype());     // every entry written below
  Tensor gates = empty({B, 3 * H}, h.dtype());  // r, z, n: what the backward reads
  dispatch_floating(h.dtype(), kOp, [&](auto tag) {
    using T = decltype(tag);
    detail::parallel_for(
        B,
        [&](int64_t begin, int64_t end) {
          if constexpr (std::is_same_v<T, float>)
            forward_rows_f32(gic.data_ptr<T>(), ghc.data_ptr<T>(), hc.data_ptr<T>(),
                             h_next.data_ptr<T>(), gates.data_ptr<T>(), H, begin, end);
          else
            forward_rows(gic.data_ptr<T>(), ghc.data_ptr<T>(), hc.data_ptr<T>(),
                         h_next.data_ptr<T>(), gates.data_ptr<T>(), H, begin, end);
        },
        detail::grain_for(8 * H));
  });
  // dgi, dgh [B, 3H] and dh [B, H] from g [B, H] (see backward_rows).
  if (needs_grad(gi, gh, h))
    record(h_next, "GruCellBackward", {gi, gh, h}, [ghc, hc, gates, H](const Tensor& g) {
      const Tensor gc = g.contiguous();
      const int64_t B = hc.size(0);
      Tensor dgi = empty(ghc.shape(), ghc.dtype()), dgh = empty(ghc.shape(), ghc.dtype()),
             dh = empty(hc.shape(), hc.dtype());
      dispatch_floating(hc.dtype(), kOp, [&](auto tag) {
        using T = decltype(tag);
        detail::parallel_for(
            B,
            [&](int64_t begin, int64_t end) {
              backward_rows(gc.data_ptr<T>(), ghc.data_ptr<T>(), hc.data_ptr<T>(),
                            gates.data_ptr<T>(), dgi.data_ptr<T>(), dgh.data_ptr<T>(),
                            dh.data_ptr<T>(), H, begin, end);
            },
            detail::grain_for(8 * H));
      });
      return grads{dgi, dgh, dh};
    });
  return h_next;
}

}  // namespace ag
