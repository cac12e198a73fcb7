// additive_scores: the scores of additive (Bahdanau) attention as one fused op.
//
// Legend: B batch, Tq queries, Tk keys, h hidden units; x indexes h.
//
//   scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x])
//   q [B, Tq, h], k [B, Tk, h], w [h]  ->  scores [B, Tq, Tk]
//
// Why fused: composed from primitives, as d2l writes it,
//   features = tanh(unsqueeze(q, 2) + unsqueeze(k, 1))  // [B, Tq, 1, h] + [B, 1, Tk, h]
//                                                       //   -> [B, Tq, Tk, h]
//   scores   = sum(w * features, -1)                    // [B, Tq, Tk, h] -> [B, Tq, Tk]
// the op materialises the 4-D features tensor: for B = 8, Tq = Tk = 512,
// h = 64 that is 134M floats (537 MB), and its backward makes several more
// tensors of that size. Here the forward folds each t = tanh(q + k) into the
// sum over x at once. The backward needs t again: while the [B, Tq, Tk, h]
// tensor of them is small (at most kKeepTanh entries, as one seq2seq decoder
// step's 64 x 1 x 30 x 32) the forward also writes it out and the backward
// reads it back (the tanh was a third of the backward's time); beyond that t
// only ever lives in a register and the backward computes it again. The
// composed version stays as the test reference (tests/test_attention_scores.cpp).
// How much faster the fused op is, and the command that measures it:
// docs/speed.md.
//
// Reading order: one query row's forward and backward, then the op (checks,
// forward, record of the backward), then the loops that run the rows over
// whole tensors. float32 rows run the SIMD twins of vector_math.h (vectorised
// over h, the contiguous innermost dim); the plain row loops are their
// reference and the float64 (gradcheck) path.
//
// Threads: the forward splits the B * Tq query rows, which are independent.
// In the backward dq is per row too, but dk sums over the rows i of its batch
// item and dw over everything; so the rows of each batch item are cut into
// blocks (their number depends on the shape only, never on the thread count),
// every block accumulates into its own dk and dw buffers, and the buffers are
// added in block order. The bits of the result are the same for any number of
// threads.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "fast/parallel.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

namespace {

constexpr const char* kAdditiveScores = "additive_scores";

// The most t = tanh(q + k) entries ([B, Tq, Tk, h]) the forward keeps for the
// backward: 2^20, 4 MiB in float32.
constexpr int64_t kKeepTanh = int64_t{1} << 20;

// ---- one query row i of one batch item -------------------------------------------------
// q [h] (row i), k [Tk, h] (all keys of the item), w [h].

// forward: s[j] = sum_x w[x] tanh(q[x] + k[j, x])  for j < Tk, and when t is
// not null each tanh also into t [Tk, h] for the backward.
// float32 twin: detail::additive_scores_row_f32 in fast/vector_math.cpp.
template <typename T>
void forward_row(const T* q, const T* k, const T* w, T* s, T* t, int64_t tk, int64_t h) {
  for (int64_t j = 0; j < tk; ++j) {
    T sum = 0;
    for (int64_t x = 0; x < h; ++x) {
      const T tanh_jx = std::tanh(q[x] + k[j * h + x]);
      if (t) t[j * h + x] = tanh_jx;
      sum += w[x] * tanh_jx;
    }
    s[j] = sum;
  }
}

// backward, from g = dL/ds [Tk], with t read from t_kept [Tk, h] (the
// forward's) or, when t_kept is null, recomputed. In the forward this was
//   s[j] = sum_x w[x] t[j, x],  t[j, x] = tanh(q[x] + k[j, x]),
// and d tanh(a)/da = 1 - tanh(a)^2, so with u = g[j] (1 - t^2):
//   dq[x]     = w[x] sum_j u      (q was shared by every key j: its gradients add up)
//   dk[j, x] += w[x] u            (summed over the rows i by the caller)
//   dw[x]    += sum_j g[j] t      (summed over every row by the caller)
// float32 twin: detail::additive_scores_backward_row_f32 in fast/vector_math.cpp.
template <typename T>
void backward_row(const T* q, const T* k, const T* w, const T* t_kept, const T* g, T* dq, T* dk,
                  T* dw, int64_t tk, int64_t h) {
  std::fill(dq, dq + h, T(0));
  for (int64_t j = 0; j < tk; ++j) {
    for (int64_t x = 0; x < h; ++x) {
      const T t = t_kept ? t_kept[j * h + x] : std::tanh(q[x] + k[j * h + x]);
      const T u = g[j] * (1 - t * t);
      dq[x] += u;
      dk[j * h + x] += w[x] * u;
      dw[x] += g[j] * t;
    }
  }
  for (int64_t x = 0; x < h; ++x) dq[x] *= w[x];
}

struct Sizes {
  int64_t B, tq, tk, h;
};

// The rows above run over whole tensors (float32 through their twins, on the
// threads); defined at the end of the file.
// forward: scores [B, Tq, Tk] from contiguous q [B, Tq, h], k [B, Tk, h], w [h];
// t [B, Tq, Tk, h] the tanh of every term when not null.
template <typename T>
void forward(const T* q, const T* k, const T* w, T* scores, T* t, const Sizes& n);
// backward: dq [B, Tq, h], dk [B, Tk, h] and dw [h] (zero-filled) from g [B, Tq, Tk]
// (and the forward's t, or null to recompute it).
template <typename T>
void backward(const T* q, const T* k, const T* w, const T* t, const T* g, T* dq, T* dk, T* dw,
              const Sizes& n);

}  // namespace

Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& w) {
  AG_CHECK(q.defined() && k.defined() && w.defined(), kAdditiveScores,
           "q, k and w must be defined");
  const auto shapes = [&] {
    return "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", w " +
           shape_str(w.shape());
  };
  AG_CHECK(q.dim() == 3 && k.dim() == 3 && w.dim() == 1, kAdditiveScores,
           "expected q [B, Tq, h], k [B, Tk, h] and w [h], got " + shapes());
  AG_CHECK(q.size(0) == k.size(0), kAdditiveScores, "batch sizes differ: " + shapes());
  AG_CHECK(k.size(2) == q.size(2) && w.size(0) == q.size(2), kAdditiveScores,
           "hidden sizes h differ: " + shapes());
  AG_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && w.dtype() == q.dtype(),
           kAdditiveScores,
           std::string("q, k and w must share one floating dtype (float32 or float64), got ") +
               dtype_name(q.dtype()) + ", " + dtype_name(k.dtype()) + ", " + dtype_name(w.dtype()));
  if (reference_mode()) return detail::faulty(kAdditiveScores, reference::additive_scores(q, k, w));
  const Sizes n{q.size(0), q.size(1), k.size(1), q.size(2)};
  const Tensor qc = q.detach().contiguous(), kc = k.detach().contiguous(),
               wc = w.detach().contiguous();
  // scores = sum_x w[x] tanh(q[b, i, x] + k[b, j, x]): [B, Tq, Tk]; and
  // t [B, Tq, Tk, h] = those tanh when the backward will run and they are few.
  Tensor scores = empty({n.B, n.tq, n.tk}, q.dtype());
  const bool backward_needed = needs_grad(q, k, w);
  Tensor t;
  if (backward_needed && n.B * n.tq * n.tk * n.h <= kKeepTanh)
    t = empty({n.B, n.tq, n.tk, n.h}, q.dtype());
  dispatch_floating(q.dtype(), kAdditiveScores, [&](auto tag) {
    using T = decltype(tag);
    forward(qc.data_ptr<T>(), kc.data_ptr<T>(), wc.data_ptr<T>(), scores.data_ptr<T>(),
            t.defined() ? t.data_ptr<T>() : nullptr, n);
  });
  // dq [B, Tq, h] = w * sum_j g (1 - t^2), dk [B, Tk, h] = w * sum_i g (1 - t^2),
  // dw [h] = sum_{b, i, j} g t, with t = tanh(q + k) kept or recomputed (see backward_row).
  scores = detail::faulty(kAdditiveScores, std::move(scores));
  if (backward_needed)
    record(scores, "AdditiveScoresBackward", {q, k, w}, [qc, kc, wc, t, n](const Tensor& g) {
      const Tensor gc = g.contiguous();
      Tensor dq = empty(qc.shape(), qc.dtype()), dk = zeros(kc.shape(), kc.dtype()),
             dw = zeros(wc.shape(), wc.dtype());
      dispatch_floating(qc.dtype(), kAdditiveScores, [&](auto tag) {
        using T = decltype(tag);
        backward(qc.data_ptr<T>(), kc.data_ptr<T>(), wc.data_ptr<T>(),
                 t.defined() ? t.data_ptr<T>() : nullptr, gc.data_ptr<T>(), dq.data_ptr<T>(),
                 dk.data_ptr<T>(), dw.data_ptr<T>(), n);
      });
      return grads{dq, dk, dw};
    });
  return scores;
}

// The reference (reference.h), d2l's broadcast: every (query, key) pair's h
// terms materialised as [B, Tq, Tk, h], then weighted and summed; autograd
// takes the backward through unsqueeze, add, tanh, mul and sum.
Tensor reference::additive_scores(const Tensor& q, const Tensor& k, const Tensor& w) {
  return sum(w * tanh(unsqueeze(q, 2) + unsqueeze(k, 1)), -1);  // [B, Tq, 1, h] + [B, 1, Tk, h]
}

// ---- whole tensors: the rows on the threads ---------------------------------------------

namespace {

template <typename T>
void forward(const T* q, const T* k, const T* w, T* scores, T* t, const Sizes& n) {
  detail::parallel_for(
      n.B * n.tq,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // row = b * Tq + i
          const int64_t b = row / n.tq;
          const T* qi = q + row * n.h;
          const T* kb = k + b * n.tk * n.h;
          T* ti = t ? t + row * n.tk * n.h : nullptr;
          if constexpr (std::is_same_v<T, float>)
            detail::additive_scores_row_f32(qi, kb, w, scores + row * n.tk, ti, n.tk, n.h);
          else
            forward_row(qi, kb, w, scores + row * n.tk, ti, n.tk, n.h);
        }
      },
      detail::grain_for(n.tk * n.h));
}

// The backward's blocks of query rows: each batch item's Tq rows are cut into
// `per_item` blocks of `rows` rows (the last may be shorter): at most 8, and of
// at least 32 rows unless Tq is smaller. Enough blocks to keep a few threads
// busy even at B = 1, few enough that their dk buffers stay small (at most
// 7 times dk).
struct Blocks {
  int64_t per_item, rows;
};

Blocks blocks_of(int64_t tq) {
  const int64_t per_item = std::clamp<int64_t>(tq / 32, 1, 8);
  return {per_item, (tq + per_item - 1) / per_item};
}

template <typename T>
void backward(const T* q, const T* k, const T* w, const T* t, const T* g, T* dq, T* dk, T* dw,
              const Sizes& n) {
  const Blocks blocks = blocks_of(n.tq);
  const int64_t per_item = blocks.per_item, key_block = n.tk * n.h;
  // Block 0 of item b accumulates straight into dk[b]; blocks 1.. into
  // dk_more [B, per_item - 1, Tk, h]. Every block has its own dw [h].
  std::vector<T> dk_more(static_cast<size_t>(n.B * (per_item - 1) * key_block));
  std::vector<T> dw_blocks(static_cast<size_t>(n.B * per_item * n.h));
  const auto dk_of_block = [&](int64_t b, int64_t p) {
    return p == 0 ? dk + b * key_block : dk_more.data() + (b * (per_item - 1) + p - 1) * key_block;
  };
  detail::parallel_for(
      n.B * per_item,
      [&](int64_t begin, int64_t end) {
        for (int64_t block = begin; block < end; ++block) {  // block = b * per_item + p
          const int64_t b = block / per_item, p = block % per_item;
          const int64_t first = std::min(p * blocks.rows, n.tq);
          const int64_t last = std::min(first + blocks.rows, n.tq);
          for (int64_t row = b * n.tq + first; row < b * n.tq + last; ++row) {
            const T* kb = k + b * key_block;
            T* dw_block = dw_blocks.data() + block * n.h;
            const T* ti = t ? t + row * key_block : nullptr;
            if constexpr (std::is_same_v<T, float>)
              detail::additive_scores_backward_row_f32(q + row * n.h, kb, w, ti, g + row * n.tk,
                                                       dq + row * n.h, dk_of_block(b, p), dw_block,
                                                       n.tk, n.h);
            else
              backward_row(q + row * n.h, kb, w, ti, g + row * n.tk, dq + row * n.h,
                           dk_of_block(b, p), dw_block, n.tk, n.h);
          }
        }
      },
      detail::grain_for(blocks.rows * key_block));
  // dk[b] += blocks 1, 2, ... of item b, in that order (the B * Tk rows of dk
  // are independent).
  if (per_item > 1) {
    detail::parallel_for(
        n.B * n.tk,
        [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {  // row = b * Tk + j
            const int64_t b = row / n.tk, j = row % n.tk;
            for (int64_t p = 1; p < per_item; ++p) {
              const T* part = dk_of_block(b, p) + j * n.h;
              for (int64_t x = 0; x < n.h; ++x) dk[row * n.h + x] += part[x];
            }
          }
        },
        detail::grain_for(per_item * n.h));
  }
  // dw = the blocks' dw added in block order.
  for (int64_t block = 0; block < n.B * per_item; ++block)
    for (int64_t x = 0; x < n.h; ++x) dw[x] += dw_blocks[static_cast<size_t>(block * n.h + x)];
}

}  // namespace

}  // namespace ag
