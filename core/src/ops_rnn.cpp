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
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

#include "attograd/autograd.h"
#include "attograd/kernels/gemm.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "fast/parallel.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

namespace {

constexpr const char* kGruCell = "gru_cell";

template <typename T>
T sigmoid_of(T a) {
  return T(1) / (T(1) + std::exp(-a));
}

// Rows [begin, end) of the forward: h_next [B, H], and gates [B, 3H] = (r, z, n)
// for the backward. All pointers to contiguous row-major buffers.
// float32 twin: detail::gru_cell_rows_f32 in fast/vector_math.cpp, with the
// vectorised exp and tanh of vector_math.h (libm's expf and tanhf are scalar
// calls and took most of a GRU step's time).
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

// One step over all B rows, on the threads: h_next [B, H] and gates [B, 3H]
// from gi, gh [B, 3H] and h [B, H] (forward_rows / detail::gru_cell_rows_f32).
template <typename T>
void cell_forward(const T* gi, const T* gh, const T* h, T* h_next, T* gates, int64_t B, int64_t H) {
  detail::parallel_for(
      B,
      [&](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float>)
          detail::gru_cell_rows_f32(gi + begin * 3 * H, gh + begin * 3 * H, h + begin * H,
                                    h_next + begin * H, gates + begin * 3 * H, end - begin, H);
        else
          forward_rows(gi, gh, h, h_next, gates, H, begin, end);
      },
      detail::grain_for(8 * H));
}

// The backward of one step over all B rows, on the threads: the rows loop
// with its math is detail::gru_cell_backward_loop (vector_math.h); float32
// runs it in gru_cell_backward_rows_f32, built per instruction set.
// gh_n: row b's gh_n at gh_n + b * ld_n (gru_cell passes gh + 2H with ld_n = 3H,
// gru_layer its own [B, H] copy with ld_n = H).
template <typename T>
void cell_backward(const T* g, const T* gh_n, int64_t ld_n, const T* h, const T* gates, T* dgi,
                   T* dgh, T* dh, int64_t B, int64_t H) {
  detail::parallel_for(
      B,
      [&](int64_t begin, int64_t end) {
        const auto rows = [&](auto kernel) {
          kernel(g + begin * H, gh_n + begin * ld_n, ld_n, h + begin * H, gates + begin * 3 * H,
                 dgi + begin * 3 * H, dgh + begin * 3 * H, dh + begin * H, end - begin, H);
        };
        if constexpr (std::is_same_v<T, float>)
          rows(detail::gru_cell_backward_rows_f32);
        else
          rows(detail::gru_cell_backward_loop<T>);
      },
      detail::grain_for(8 * H));
}

}  // namespace

Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  AG_CHECK(gi.defined() && gh.defined() && h.defined(), kGruCell, "gi, gh and h must be defined");
  const auto shapes = [&] {
    return "gi " + shape_str(gi.shape()) + ", gh " + shape_str(gh.shape()) + ", h " +
           shape_str(h.shape());
  };
  AG_CHECK(
      h.dim() == 2 && gi.shape() == Shape({h.size(0), 3 * h.size(1)}) && gh.shape() == gi.shape(),
      kGruCell, "expected gi [B, 3H], gh [B, 3H] and h [B, H], got " + shapes());
  AG_CHECK(is_floating(h.dtype()) && gi.dtype() == h.dtype() && gh.dtype() == h.dtype(), kGruCell,
           std::string("gi, gh and h must share one floating dtype (float32 or float64), got ") +
               dtype_name(gi.dtype()) + ", " + dtype_name(gh.dtype()) + ", " +
               dtype_name(h.dtype()));
  if (reference_mode()) return detail::faulty(kGruCell, reference::gru_cell(gi, gh, h));
  const int64_t B = h.size(0), H = h.size(1);
  const Tensor gic = gi.detach().contiguous(), ghc = gh.detach().contiguous(),
               hc = h.detach().contiguous();
  Tensor h_next = empty({B, H}, h.dtype());     // every entry written below
  Tensor gates = empty({B, 3 * H}, h.dtype());  // r, z, n: what the backward reads
  dispatch_floating(h.dtype(), kGruCell, [&](auto tag) {
    using T = decltype(tag);
    cell_forward(gic.data_ptr<T>(), ghc.data_ptr<T>(), hc.data_ptr<T>(), h_next.data_ptr<T>(),
                 gates.data_ptr<T>(), B, H);
  });
  // dgi, dgh [B, 3H] and dh [B, H] from g [B, H] (see cell_backward).
  h_next = detail::faulty(kGruCell, std::move(h_next));
  if (needs_grad(gi, gh, h))
    record(h_next, "GruCellBackward", {gi, gh, h}, [ghc, hc, gates, H](const Tensor& g) {
      const Tensor gc = g.contiguous();
      const int64_t B = hc.size(0);
      Tensor dgi = empty(ghc.shape(), ghc.dtype()), dgh = empty(ghc.shape(), ghc.dtype()),
             dh = empty(hc.shape(), hc.dtype());
      dispatch_floating(hc.dtype(), kGruCell, [&](auto tag) {
        using T = decltype(tag);
        cell_backward(gc.data_ptr<T>(), ghc.data_ptr<T>() + 2 * H, 3 * H, hc.data_ptr<T>(),
                      gates.data_ptr<T>(), dgi.data_ptr<T>(), dgh.data_ptr<T>(), dh.data_ptr<T>(),
                      B, H);
      });
      return grads{dgi, dgh, dh};
    });
  return h_next;
}

// ---- gru_layer: all T steps of one layer as one op -----------------------------------
//
// Legend: T steps, B batch, H hidden units.
//
//   gi  [T, B, 3H]  the input side of every step (x_t W_ih^T + b_ih, one product
//                   by the caller), h0 [B, H], W_hh [3H, H], b_hh [3H]
//   for t = 0 .. T-1:
//     gh_t = h_{t-1} W_hh^T + b_hh        [B, 3H]   (h_{-1} = h0)
//     h_t  = gru_cell(gi_t, gh_t, h_{t-1}) [B, H]
//   out = [h_0, ..., h_{T-1}]              [T, B, H]
//
// reverse = true runs the same recurrence from the last position to the first
// (the backward direction of a bidirectional GRU): h_{T} = h0 and
//     h_t  = gru_cell(gi_t, h_{t+1} W_hh^T + b_hh, h_{t+1})   for t = T-1 .. 0
// with out[t] = h_t still at position t. Only the order in which positions are
// visited changes, so the direction costs no reversed copy of gi or out
// (torch flips the sequence twice instead).
//
// Why one op: step by step (linear, then gru_cell) one layer records 2T nodes
// and runs 3T small products (the forward's h W_hh^T, the backward's dh and
// dW_hh); here the backward's T weight-gradient products are one
//   dW_hh = sum_t dgh_t^T h_prev(t) = dgh^T [3H, T*B] @ [h0; h_prev ...] [T*B, H]
// run as two: the first visited position against h0, then the others
// against their predecessors, which lie one below the other in out (forward:
// dgh_1 .. dgh_{T-1} against out[0 .. T-2]; reverse: dgh_0 .. dgh_{T-2}
// against out[1 .. T-1]). The graph holds one node. The step-by-step
// composition stays as the test reference (tests/test_gru.cpp).
//
// Backward, from g = dL/dout [T, B, H], visiting the positions in the
// opposite order to the forward:
//   dh = 0
//   for each position t, last visited first:
//     g_t' = g_t + dh                                (h_t feeds out[t] and the next step)
//     dgi_t, dgh_t, dh_direct = the cell's backward  (cell_backward; dh_direct = g_t' z)
//     dh = dh_direct + dgh_t W_hh                    ([B, 3H] @ [3H, H])
//   dh0 = dh (its product skipped when h0 needs no gradient),  dW_hh as above,
//   db_hh = sum_{t, b} dgh_t[b]
//
// lengths [B] (optional): row b's positions t >= lengths[b] are padding, and
// the state passes through them unchanged: out[t, b] = h_prev[b]. Forward,
// the state after the padding is the one at the last valid position; reverse,
// the recurrence starts at the last valid position from h0, as torch's
// packed sequences (pack_padded_sequence) run, so no valid output depends on
// how much padding follows. The backward of a padded entry is the identity:
// dgi = dgh = 0 there and dh_prev = g_t'. (The cell is still computed for
// padded rows, its result overwritten: a row-wise skip would cost more than
// the few rows it saves.)
// W_hh (contiguous) in the products of one gru_layer call, c (+)= a op(W_hh)
// as s says. Over several steps it is packed once (kernels::PackedB), where
// each step's product would copy it again. A single step (a decoder's) reads
// it once: its product packs it panel by panel, each panel used while it is
// still in cache, which measured faster than packing all of it first.
template <typename T>
class RecurrentWeight {
 public:
  RecurrentWeight(const kernels::GemmShape& s, const Tensor& w, int64_t steps)
      : s_(s), w_(w.data_ptr<T>()) {
    if (steps == 1) return;
    bytes_ = empty({kernels::PackedB<T>::elements(s)}, w.dtype());
    packed_.emplace(s, w_, bytes_.data_ptr<T>());
  }
  void multiply(const T* a, T* c) const {
    if (packed_)
      kernels::gemm(s_, a, *packed_, c);
    else
      kernels::gemm(s_, a, w_, c);
  }

 private:
  kernels::GemmShape s_;
  const T* w_;
  Tensor bytes_;  // the packed copy's storage
  std::optional<kernels::PackedB<T>> packed_;
};

Tensor gru_layer(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                 bool reverse, const Tensor& lengths) {
  const char* op = "gru_layer";
  AG_CHECK(gi.defined() && h0.defined() && w_hh.defined() && b_hh.defined(), op,
           "gi, h0, w_hh and b_hh must be defined");
  const auto shapes = [&] {
    return "gi " + shape_str(gi.shape()) + ", h0 " + shape_str(h0.shape()) + ", w_hh " +
           shape_str(w_hh.shape()) + ", b_hh " + shape_str(b_hh.shape());
  };
  AG_CHECK(h0.dim() == 2 && gi.dim() == 3 && gi.size(0) > 0 && h0.size(0) > 0 && h0.size(1) > 0 &&
               gi.size(1) == h0.size(0) && gi.size(2) == 3 * h0.size(1) &&
               w_hh.shape() == Shape({3 * h0.size(1), h0.size(1)}) &&
               b_hh.shape() == Shape({3 * h0.size(1)}),
           op,
           "expected gi [T, B, 3H] with T, B, H >= 1, h0 [B, H], w_hh [3H, H] and b_hh [3H], got " +
               shapes());
  AG_CHECK(is_floating(h0.dtype()) && gi.dtype() == h0.dtype() && w_hh.dtype() == h0.dtype() &&
               b_hh.dtype() == h0.dtype(),
           op,
           std::string("gi, h0, w_hh and b_hh must share one floating dtype (float32 or "
                       "float64), got ") +
               dtype_name(gi.dtype()) + ", " + dtype_name(h0.dtype()) + ", " +
               dtype_name(w_hh.dtype()) + ", " + dtype_name(b_hh.dtype()));
  const int64_t T = gi.size(0), B = h0.size(0), H = h0.size(1);
  // Each row's valid length (T: no padding).
  std::vector<int64_t> valid(static_cast<size_t>(B), T);
  if (lengths.defined()) {
    AG_CHECK(lengths.dtype() == kInt64 && lengths.shape() == Shape({B}), op,
             "expected lengths int64 [B] = [" + std::to_string(B) + "], got " +
                 shape_str(lengths.shape()) + " " + dtype_name(lengths.dtype()) + " for " +
                 shapes());
    const std::vector<double> values = lengths.to_vector();
    for (int64_t b = 0; b < B; ++b) {
      const double v = values[static_cast<size_t>(b)];
      AG_CHECK(v >= 1 && v <= static_cast<double>(T), op,
               "lengths[" + std::to_string(b) + "] = " + number_str(v) +
                   " is outside [1, T = " + std::to_string(T) + "] for " + shapes());
      valid[static_cast<size_t>(b)] = static_cast<int64_t>(v);
    }
  }
  if (reference_mode()) {
    return detail::faulty("gru_layer", reference::gru_layer(gi, h0, w_hh, b_hh, reverse, lengths));
  }
  const Tensor gic = gi.detach().contiguous(), h0c = h0.detach().contiguous(),
               wc = w_hh.detach().contiguous(), bc = b_hh.detach().contiguous();
  Tensor out = empty({T, B, H}, h0.dtype());        // h_t, every entry written below
  Tensor gates = empty({T, B, 3 * H}, h0.dtype());  // r, z, n of every step
  Tensor gh_n = empty({T, B, H}, h0.dtype());       // gh's n part: what the backward reads of gh
  dispatch_floating(h0.dtype(), op, [&](auto tag) {
    using T_ = decltype(tag);
    std::vector<T_> gh(static_cast<size_t>(B * 3 * H));  // one step's gh [B, 3H]
    const T_* bias = bc.data_ptr<T_>();
    // gh = h W_hh^T + gh (gh holding b_hh): [B, H] @ [H, 3H]
    kernels::GemmShape s;
    s.M = B, s.N = 3 * H, s.K = H, s.trans_b = true, s.lda = H, s.ldb = H, s.ldc = 3 * H;
    s.beta = 1;
    const RecurrentWeight<T_> w(s, wc, T);
    for (int64_t i = 0; i < T; ++i) {
      const int64_t t = reverse ? T - 1 - i : i;  // the position visited i-th
      const int64_t prev = reverse ? t + 1 : t - 1;
      const T_* h_prev = i == 0 ? h0c.data_ptr<T_>() : out.data_ptr<T_>() + prev * B * H;
      for (int64_t b = 0; b < B; ++b) std::copy_n(bias, 3 * H, gh.data() + b * 3 * H);
      w.multiply(h_prev, gh.data());
      cell_forward(gic.data_ptr<T_>() + t * B * 3 * H, gh.data(), h_prev,
                   out.data_ptr<T_>() + t * B * H, gates.data_ptr<T_>() + t * B * 3 * H, B, H);
      T_* n_part = gh_n.data_ptr<T_>() + t * B * H;
      for (int64_t b = 0; b < B; ++b) std::copy_n(gh.data() + b * 3 * H + 2 * H, H, n_part + b * H);
      // Padding: the state passes through (out[t, b] = h_prev[b]).
      for (int64_t b = 0; b < B; ++b)
        if (t >= valid[static_cast<size_t>(b)])
          std::copy_n(h_prev + b * H, H, out.data_ptr<T_>() + (t * B + b) * H);
    }
  });
  // dgi [T, B, 3H], dh0 [B, H], dW_hh [3H, H], db_hh [3H] from g [T, B, H] (see above).
  out = detail::faulty("gru_layer", std::move(out));
  if (needs_grad(gi, h0, w_hh, b_hh))
    record(out, "GruLayerBackward", {gi, h0, w_hh, b_hh},
           [h0c, wc, hs = out.detach(), gates, gh_n, op, reverse, valid,
            h0_grad = h0.requires_grad()](const Tensor& g) {
             const Tensor gc = g.contiguous();
             const int64_t T = hs.size(0), B = hs.size(1), H = hs.size(2);
             Tensor dgi = empty({T, B, 3 * H}, hs.dtype()), dgh = empty({T, B, 3 * H}, hs.dtype()),
                    dh = zeros({B, H}, hs.dtype()), dw = empty(wc.shape(), hs.dtype()),
                    db = zeros({3 * H}, hs.dtype());
             dispatch_floating(hs.dtype(), op, [&](auto tag) {
               using T_ = decltype(tag);
               const T_ *h = hs.data_ptr<T_>(), *h0p = h0c.data_ptr<T_>();
               T_ *dghp = dgh.data_ptr<T_>(), *dhp = dh.data_ptr<T_>();
               std::vector<T_> g_t(static_cast<size_t>(B * H));
               // dh += dgh_t W_hh: [B, 3H] @ [3H, H]
               kernels::GemmShape s;
               s.M = B, s.N = H, s.K = 3 * H, s.lda = 3 * H, s.ldb = H, s.ldc = H, s.beta = 1;
               const RecurrentWeight<T_> w(s, wc, T);
               for (int64_t i = T - 1; i >= 0; --i) {
                 const int64_t t = reverse ? T - 1 - i : i;  // the position visited i-th
                 const int64_t prev = reverse ? t + 1 : t - 1;
                 const T_* gt = gc.data_ptr<T_>() + t * B * H;
                 for (int64_t j = 0; j < B * H; ++j) g_t[static_cast<size_t>(j)] = gt[j] + dhp[j];
                 cell_backward(g_t.data(), gh_n.data_ptr<T_>() + t * B * H, H,
                               i == 0 ? h0p : h + prev * B * H,
                               gates.data_ptr<T_>() + t * B * 3 * H,
                               dgi.data_ptr<T_>() + t * B * 3 * H, dghp + t * B * 3 * H, dhp, B, H);
                 // Padding's identity: nothing to the gates, g_t' on to h_prev.
                 for (int64_t b = 0; b < B; ++b)
                   if (t >= valid[static_cast<size_t>(b)]) {
                     std::fill_n(dgi.data_ptr<T_>() + (t * B + b) * 3 * H, 3 * H, T_(0));
                     std::fill_n(dghp + (t * B + b) * 3 * H, 3 * H, T_(0));
                     std::copy_n(g_t.data() + b * H, H, dhp + b * H);
                   }
                 if (i > 0 || h0_grad) w.multiply(dghp + t * B * 3 * H, dhp);
               }
               // dW_hh = dgh_first^T h0 + the other positions' dgh^T against
               // their predecessors: [3H, B] @ [B, H], then [3H, (T-1) B] @
               // [(T-1) B, H] added. Forward: dgh_0 with h0, dgh_1.. with
               // out[0 ..]; reverse: dgh_{T-1} with h0, dgh_0.. with out[1 ..].
               const int64_t first = reverse ? T - 1 : 0;
               kernels::GemmShape sw;
               sw.M = 3 * H, sw.N = H, sw.K = B, sw.trans_a = true, sw.lda = 3 * H, sw.ldb = H;
               sw.ldc = H;
               kernels::gemm(sw, dghp + first * B * 3 * H, h0p, dw.data_ptr<T_>());
               if (T > 1) {
                 sw.K = (T - 1) * B, sw.beta = 1;
                 const T_* dgh_rest = reverse ? dghp : dghp + B * 3 * H;
                 const T_* h_rest = reverse ? h + B * H : h;
                 kernels::gemm(sw, dgh_rest, h_rest, dw.data_ptr<T_>());
               }
               // db_hh = the column sums of dgh [T * B, 3H]
               T_* dbp = db.data_ptr<T_>();
               for (int64_t row = 0; row < T * B; ++row)
                 for (int64_t j = 0; j < 3 * H; ++j) dbp[j] += dghp[row * 3 * H + j];
             });
             return grads{dgi, h0_grad ? dh : Tensor(), dw, db};
           });
  return out;
}

// The references (reference.h): the gates one op each, and a loop of them.
Tensor reference::gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  const int64_t H = h.size(1);
  const auto gate = [H](const Tensor& sides, int64_t g) { return narrow(sides, 1, g * H, H); };
  const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));   // reset     [B, H]
  const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));   // update    [B, H]
  const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));  // candidate [B, H]
  return (1.0 - z) * n + z * h;
}

Tensor reference::gru_layer(const Tensor& gi, const Tensor& h0, const Tensor& w_hh,
                            const Tensor& b_hh, bool reverse, const Tensor& lengths) {
  const int64_t T = gi.size(0);
  std::vector<Tensor> out(static_cast<size_t>(T));
  Tensor h = h0;  // [B, H]
  for (int64_t i = 0; i < T; ++i) {
    const int64_t t = reverse ? T - 1 - i : i;  // the position visited i-th
    Tensor h_next = reference::gru_cell(squeeze(narrow(gi, 0, t, 1), 0), linear(h, w_hh, b_hh), h);
    // Padding (t at or past a row's length): the state passes through.
    if (lengths.defined())
      h_next = where(unsqueeze(gt(lengths, static_cast<double>(t)), 1), h_next, h);
    out[static_cast<size_t>(t)] = h_next;
    h = h_next;
  }
  return stack(out, 0);  // [T, B, H]
}

}  // namespace ag
