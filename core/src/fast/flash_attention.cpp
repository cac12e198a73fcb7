// flash_attention: softmax(q k^T * scale + masks) v without ever holding the
// [L, S] scores (FlashAttention-2, Dao 2023, on the CPU). Its reference is the
// materialised attention, reference::flash_attention at the end of this file,
// which reference mode (attograd/reference.h) runs instead.
//
// Legend: N batch items (the batch dims "..." flattened), L queries, S keys,
// E query/key features, Ev value features; Br query rows and Bc keys per block.
//
// The materialised attention (nn/src/functional.cpp's _with_weights path)
// writes scores [N, L, S], then weights [N, L, S], and its backward two more
// tensors of that size: at N = 8, L = S = 4096 that is 512 MiB each. Here a
// thread holds one Br x Bc block of scores at a time (256 x 512 floats, 512 KiB,
// in L2; the backward two such blocks), and the only thing kept per row is its log-sum-exp:
//
// The logits are Z = scale Q K^T (+ mask). The scale is not applied to
// either matrix: the block's exp takes it, e^(scale s - m) as one fma per
// score (vector_math's exp_affine_sum_f32), so no pass over q or the scores
// does it. Forward, for each query block Q_i [Br, E] (rows independent: any thread):
//   m = -inf, l = 0, O_i = 0                       running max, sum, output
//   for each key block K_j [Bc, E], V_j [Bc, Ev]:
//     S   = Q_i K_j^T                              [Br, Bc]   (gemm)
//     m'  = max(m, scale rowmax S)                 (scale > 0; Z's row max)
//     P   = exp(scale S - m')                      [Br, Bc]
//     l   = l e^(m - m') + rowsum P                (old terms rescaled to m')
//     O_i = O_i e^(m - m') + P V_j                 [Br, Ev]   (gemm)
//   O_i /= l                                       m, l [Br]  (saved)
// An additive mask (or a scale <= 0) is applied to S as it is made, scale S
// + mask, and the exp's scale is then 1.
//
// backward, from dO: the weights are P = exp(scale S - m) / l, recomputed per block.
// (m and l are kept apart, not folded into lse = m + log l: when a float mask
// shifts a whole row by -1e9, m is so large that m + log l rounds back to m
// (float32's spacing at 1e9 is 64), and exp(scale S - lse) would be l times
// the forward's weight.)
//   D   = rowsum(dO o O)                           [L]   (= sum_j P dP per row)
//   for each key block j, for each query block i:
//     S   = Q_i K_j^T;  P = exp(scale S - m_i) / l_i
//     dV_j += P^T dO_i                             [Bc, Ev]
//     dP   = dO_i V_j^T                            [Br, Bc]
//     dZ   = P o (dP - D_i)                        (softmax backward)
//     dK_j += dZ^T Q_i                             [Bc, E]
//     dQ_i += dZ K_j                               [Br, E]
//   dQ *= scale, dK *= scale                       (dZ/dQ = scale K, dZ/dK = scale Q)
// Five gemms per block pair against the materialised path's four (the
// forward's Q K^T is done again), for memory that grows with L, not L x S.
//
// Masks are read where they are: a key is masked when j >= the row's length,
// when causal and j > i, when keep[.., i, j] is false or additive[.., i, j]
// is -inf; the bool and additive masks are indexed through broadcast strides,
// so a [L, S] mask shared by every item is never copied. Causal and length
// masks also skip whole key blocks past the last key any row of the query
// block may see. A row with no key left gives a zero output and zero
// gradients (m = +inf makes every P exactly 0), or, with
// masked_rows_uniform, the mean of the values (d2l's -1e6 rows).
//
// Threads (ag::detail::parallel_for): the forward runs the N x L/Br query
// blocks in any order; the backward gives each thread whole batch items, so
// dQ_i is summed over j in the same order whatever the thread count and no
// two threads write the same gradient: the bits never depend on threads.
//
// float32 and float64: the gemms are kernels::gemm (SIMD, or the scalar path
// on targets without x86/NEON, e.g. WebAssembly), exp is detail::exp_f32 for
// float32 and std::exp for float64. The materialised path is the reference
// the tests compare with (tests/test_flash_attention.cpp); docs/attention.md
// walks from one to the other with the measured speed and memory.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../fault.h"
#include "attograd/autograd.h"
#include "attograd/kernels/gemm.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "parallel.h"
#include "vector_math.h"

namespace ag {

namespace {

constexpr const char* kFlashAttention = "flash_attention";
// Br: rows of one query block. Each block packs K_j and V_j for the gemms
// once, so taller blocks pack less often; 256 was the fastest size tried
// (compare with bench_attention's sdpa/b8_t512/forward, docs/attention.md).
constexpr int64_t kQueryBlock = 256;
constexpr int64_t kKeyBlock = 512;  // Bc: keys of one key block (S <= 512: one block)

// A mask broadcast to [batch..., L, S], read in place: element (n, i, j) of
// the flattened batch is at offset[n] + i * row + j * col of its data. Dims
// the mask does not have, or has as 1, get stride 0.
struct BroadcastView {
  std::vector<int64_t> offset;
  int64_t row = 0, col = 0;
};

BroadcastView broadcast_view(const Shape& shape, const Shape& target) {
  const size_t rank = target.size(), lead = rank - shape.size();
  const Shape own = contiguous_strides(shape);
  Shape stride(rank, 0);  // the mask's stride along each dim of target
  for (size_t d = lead; d < rank; ++d)
    if (shape[d - lead] != 1) stride[d] = own[d - lead];
  BroadcastView view;
  view.row = stride[rank - 2];
  view.col = stride[rank - 1];
  int64_t items = 1;
  for (size_t d = 0; d + 2 < rank; ++d) items *= target[d];
  view.offset.resize(static_cast<size_t>(items));
  for (int64_t n = 0; n < items; ++n) {  // n's multi-index over the batch dims, last fastest
    int64_t rest = n, offset = 0;
    for (size_t d = rank - 2; d-- > 0;) {
      offset += (rest % target[d]) * stride[d];
      rest /= target[d];
    }
    view.offset[static_cast<size_t>(n)] = offset;
  }
  return view;
}

// Everything one call needs, on contiguous q [N, L, E], k [N, S, E], v [N, S, Ev].
template <typename T>
struct Problem {
  int64_t N, L, S, E, Ev;
  T scale;  // Z = scale q k^T (+ mask)
  const T *q, *k, *v;
  const bool* keep = nullptr;  // bool mask, or null
  BroadcastView keep_at{};
  const T* additive = nullptr;  // float mask, or null
  BroadcastView additive_at{};
  std::vector<int64_t> length{};  // [N * L] keys row (n, i) may see at most, causal included
  bool uniform = false;           // fully masked rows: mean of the values instead of 0

  // The exp's scale of a block's stored scores: scale itself when the block
  // holds raw q k^T; 1 when mask_scores wrote scale S + additive there (a
  // row max of S is Z's row max over scale only when scale > 0).
  bool prescaled() const { return additive != nullptr || !(scale > T(0)); }
  T exp_scale() const { return prescaled() ? T(1) : scale; }

  // Keys [0, limit) may be attended by row i of item n (keep/additive still apply).
  int64_t limit(int64_t n, int64_t i) const { return length[static_cast<size_t>(n * L + i)]; }
  // The most keys any row of [i0, i0 + rows) may see: key blocks from there on are skipped.
  int64_t block_limit(int64_t n, int64_t i0, int64_t rows) const {
    int64_t most = 0;
    for (int64_t r = 0; r < rows; ++r) most = std::max(most, limit(n, i0 + r));
    return most;
  }
};

// s [rows, cols] = q[n, i0:i0+rows] k[n, j0:j0+cols]^T: one gemm.
template <typename T>
void raw_scores(const Problem<T>& p, int64_t n, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                T* s) {
  kernels::GemmShape g;
  g.M = rows, g.N = cols, g.K = p.E, g.trans_b = true;
  g.lda = p.E, g.ldb = p.E, g.ldc = cols;
  if (p.E == 0) return std::fill(s, s + rows * cols, T(0));  // an empty sum
  kernels::gemm(g, p.q + (n * p.L + i0) * p.E, p.k + (n * p.S + j0) * p.E, s);
}

// -inf where masked, and with p.prescaled() s = scale s + additive: the
// block's logits up to the exp's scale. Without masks nothing is touched.
template <typename T>
void mask_scores(const Problem<T>& p, int64_t n, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                 T* s) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* row = s + r * cols;
    const int64_t i = i0 + r, seen = std::clamp<int64_t>(p.limit(n, i) - j0, 0, cols);
    if (p.additive) {
      const T* a =
          p.additive + p.additive_at.offset[static_cast<size_t>(n)] + i * p.additive_at.row;
      for (int64_t c = 0; c < seen; ++c)
        row[c] = row[c] * p.scale + a[(j0 + c) * p.additive_at.col];
    } else if (p.prescaled()) {
      for (int64_t c = 0; c < seen; ++c) row[c] *= p.scale;
    }
    if (p.keep) {
      const bool* m = p.keep + p.keep_at.offset[static_cast<size_t>(n)] + i * p.keep_at.row;
      for (int64_t c = 0; c < seen; ++c)
        if (!m[(j0 + c) * p.keep_at.col]) row[c] = kMinusInf;
    }
    std::fill(row + seen, row + cols, kMinusInf);
  }
}

// The row kernels: max_k x[k], and x = e^(scale x - shift) returning sum_k x_k.
// float32 runs vector_math's SIMD versions (16 partial results: a plain
// `sum += x[k]` chain cannot be vectorised, since float additions may not
// be reordered, and cost more than the block's two gemms); float64, the
// gradcheck path, plain loops.
float row_max(const float* x, int64_t n) {
  return detail::max_f32(x, n);
}
double row_max(const double* x, int64_t n) {
  return *std::max_element(x, x + n);
}

float exp_affine_sum(float* x, int64_t n, float scale, float shift) {
  return static_cast<float>(detail::exp_affine_sum_f32(x, n, scale, shift));
}
double exp_affine_sum(double* x, int64_t n, double scale, double shift) {
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += x[k] = std::exp(scale * x[k] - shift);
  return sum;
}

// D_i = sum_e dO[i, e] O[i, e], and dZ = P o (dP - D_i) over a row of a block.
float row_dot(const float* a, const float* b, int64_t n) {
  return static_cast<float>(detail::dot_f32(a, b, n));
}
double row_dot(const double* a, const double* b, int64_t n) {
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += a[k] * b[k];
  return sum;
}
void softmax_backward_given(const float* p, float* dp, float d, int64_t n) {
  detail::softmax_backward_given_f32(p, dp, d, dp, n);
}
void softmax_backward_given(const double* p, double* dp, double d, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dp[k] = p[k] * (dp[k] - d);
}

// c [M, N] (+)= op(a) op(b) with row strides lda, ldb, ldc.
template <typename T>
void gemm_block(int64_t M, int64_t N, int64_t K, bool trans_a, const T* a, int64_t lda,
                bool trans_b, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0 || K == 0) return;  // callers only accumulate: nothing to add
  kernels::GemmShape g;
  g.M = M, g.N = N, g.K = K, g.trans_a = trans_a, g.trans_b = trans_b;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc, g.beta = accumulate ? 1.0f : 0.0f;
  kernels::gemm(g, a, b, c);
}

// A block-sized work buffer from the caching allocator (allocator.h), not
// written before use: a std::vector this large (512 KiB) would be fresh pages
// that the kernel maps and zeroes on every call.
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t count)
      : count_(count),
        storage_(static_cast<size_t>(count) * sizeof(T), "flash_attention", Init::None) {}
  T* data() { return reinterpret_cast<T*>(storage_.data()); }
  T* end() { return data() + count_; }

 private:
  int64_t count_;
  Storage storage_;
};

// ---- forward: one query block ---------------------------------------------------------------
// out[n, i0:i0+rows] [rows, Ev], saved_max and saved_sum[n, i0:i0+rows] (m and l).
// out is zeroed here, by the thread that fills it, rather than by the caller
// before the threads start.
template <typename T>
void forward_block(const Problem<T>& p, int64_t n, int64_t i0, int64_t rows, T* out, T* saved_max,
                   T* saved_sum, T* s) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  std::vector<T> m(static_cast<size_t>(rows), -kInf), l(static_cast<size_t>(rows), T(0));
  T* o = out + (n * p.L + i0) * p.Ev;
  std::fill(o, o + rows * p.Ev, T(0));
  const int64_t keys = p.block_limit(n, i0, rows);
  const T scale = p.exp_scale();
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, keys - j0);
    // S = Q_i K_j^T (+ mask): [rows, E] @ [E, cols]
    raw_scores(p, n, i0, rows, j0, cols, s);
    mask_scores(p, n, i0, rows, j0, cols, s);
    for (int64_t r = 0; r < rows; ++r) {
      T* row = s + r * cols;
      // m' = max(m, scale rowmax S); a row with nothing seen yet stays at -inf, P = 0
      const T m_new = std::max(m[r], scale * row_max(row, cols));
      if (m_new == -kInf) {
        std::fill(row, row + cols, T(0));
        continue;
      }
      // P = exp(scale S - m'); l = l e^(m - m') + rowsum P; O_i row *= e^(m - m')
      const T alpha = std::exp(m[r] - m_new);
      l[r] = l[r] * alpha + exp_affine_sum(row, cols, scale, m_new);
      if (alpha != T(1))
        for (int64_t e = 0; e < p.Ev; ++e) o[r * p.Ev + e] *= alpha;
      m[r] = m_new;
    }
    // O_i += P V_j: [rows, cols] @ [cols, Ev]
    gemm_block(rows, p.Ev, cols, false, s, cols, false, p.v + (n * p.S + j0) * p.Ev, p.Ev, o, p.Ev,
               true);
  }
  // O_i /= l, saving m and l; fully masked rows (l = 0): m = +inf, l = 1, O row = 0
  // (or, uniform, the mean of the values; see fill_uniform_rows)
  for (int64_t r = 0; r < rows; ++r) {
    const T inv = l[r] > 0 ? T(1) / l[r] : T(0);
    for (int64_t e = 0; e < p.Ev; ++e) o[r * p.Ev + e] *= inv;
    saved_max[n * p.L + i0 + r] = l[r] > 0 ? m[r] : kInf;
    saved_sum[n * p.L + i0 + r] = l[r] > 0 ? l[r] : T(1);
  }
}

// With p.uniform, a fully masked row (m = +inf) is the mean of the values,
// as if every score were the same: out[n, i] = (1/S) sum_j v[n, j].
template <typename T>
void fill_uniform_rows(const Problem<T>& p, int64_t n, const T* saved_max, T* out) {
  std::vector<T> mean;
  for (int64_t i = 0; i < p.L; ++i) {
    if (!std::isinf(saved_max[n * p.L + i]) || p.S == 0) continue;
    if (mean.empty()) {
      mean.assign(static_cast<size_t>(p.Ev), T(0));
      for (int64_t j = 0; j < p.S; ++j)
        for (int64_t e = 0; e < p.Ev; ++e) mean[e] += p.v[(n * p.S + j) * p.Ev + e];
      for (T& x : mean) x /= static_cast<T>(p.S);
    }
    std::copy(mean.begin(), mean.end(), out + (n * p.L + i) * p.Ev);
  }
}

template <typename T>
void forward(const Problem<T>& p, T* out, T* saved_max, T* saved_sum) {
  const int64_t blocks = (p.L + kQueryBlock - 1) / kQueryBlock;
  detail::parallel_for(p.N * blocks, [&](int64_t begin, int64_t end) {
    Scratch<T> s(kQueryBlock * std::min(kKeyBlock, p.S));
    for (int64_t task = begin; task < end; ++task) {  // task = n * blocks + block
      const int64_t n = task / blocks, i0 = (task % blocks) * kQueryBlock;
      forward_block(p, n, i0, std::min(kQueryBlock, p.L - i0), out, saved_max, saved_sum, s.data());
    }
  });
  if (p.uniform)
    for (int64_t n = 0; n < p.N; ++n) fill_uniform_rows(p, n, saved_max, out);
}

// ---- backward: one batch item ------------------------------------------------------------
// dq [L, E], dk [S, E], dv [S, Ev] of item n (zeroed here, by its thread), from dout, out
// and the forward's saved_max, saved_sum.
template <typename T>
void backward_item(const Problem<T>& p, int64_t n, const T* dout, const T* out, const T* saved_max,
                   const T* saved_sum, T* dq, T* dk, T* dv) {
  const T *q = p.q + n * p.L * p.E, *k = p.k + n * p.S * p.E, *v = p.v + n * p.S * p.Ev;
  const T *go = dout + n * p.L * p.Ev, *o = out + n * p.L * p.Ev;
  const T *m = saved_max + n * p.L, *l = saved_sum + n * p.L;
  dq += n * p.L * p.E, dk += n * p.S * p.E, dv += n * p.S * p.Ev;
  std::fill(dq, dq + p.L * p.E, T(0));
  std::fill(dk, dk + p.S * p.E, T(0));
  std::fill(dv, dv + p.S * p.Ev, T(0));
  // In the forward: O = P V with P = softmax(S). So dP = dO V^T and the
  // softmax backward dS = P o (dP - rowsum(P o dP)), where
  // rowsum(P o dP) = rowsum(P o (dO V^T)) = rowsum(dO o (P V)) = rowsum(dO o O) = D.
  std::vector<T> D(static_cast<size_t>(p.L));
  for (int64_t i = 0; i < p.L; ++i) D[i] = row_dot(go + i * p.Ev, o + i * p.Ev, p.Ev);
  const int64_t width = std::min(kKeyBlock, p.S);
  Scratch<T> P(kQueryBlock * width), dS(kQueryBlock * width);
  for (int64_t j0 = 0; j0 < p.S; j0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, p.S - j0);
    for (int64_t i0 = 0; i0 < p.L; i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, p.L - i0);
      if (p.block_limit(n, i0, rows) <= j0) continue;  // every key of the block masked: P = 0
      // S = Q_i K_j^T (+ mask); P = exp(scale S - m_i) / l_i   (the forward's weights)
      raw_scores(p, n, i0, rows, j0, cols, P.data());
      mask_scores(p, n, i0, rows, j0, cols, P.data());
      for (int64_t r = 0; r < rows; ++r) {
        T* row = P.data() + r * cols;
        exp_affine_sum(row, cols, p.exp_scale(), m[i0 + r]);
        const T inv = T(1) / l[i0 + r];
        for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
      }
      // dV_j += P^T dO_i: [cols, rows] @ [rows, Ev]
      gemm_block(cols, p.Ev, rows, true, P.data(), cols, false, go + i0 * p.Ev, p.Ev,
                 dv + j0 * p.Ev, p.Ev, true);
      // dP = dO_i V_j^T: [rows, Ev] @ [Ev, cols]
      if (p.Ev == 0) std::fill(dS.data(), dS.end(), T(0));
      gemm_block(rows, cols, p.Ev, false, go + i0 * p.Ev, p.Ev, true, v + j0 * p.Ev, p.Ev,
                 dS.data(), cols, false);
      // dZ = P o (dP - D_i)   (in place over dP)
      for (int64_t r = 0; r < rows; ++r)
        softmax_backward_given(P.data() + r * cols, dS.data() + r * cols, D[i0 + r], cols);
      // dK_j += dZ^T Q_i: [cols, rows] @ [rows, E];  dQ_i += dZ K_j: [rows, cols] @ [cols, E]
      gemm_block(cols, p.E, rows, true, dS.data(), cols, false, q + i0 * p.E, p.E, dk + j0 * p.E,
                 p.E, true);
      gemm_block(rows, p.E, cols, false, dS.data(), cols, false, k + j0 * p.E, p.E, dq + i0 * p.E,
                 p.E, true);
    }
  }
  // Z = scale Q K^T: dZ/dQ = scale K, dZ/dK = scale Q.
  for (int64_t x = 0; x < p.L * p.E; ++x) dq[x] *= p.scale;
  for (int64_t x = 0; x < p.S * p.E; ++x) dk[x] *= p.scale;
  // Uniform fully masked rows were out = mean_j v[j]: dv[j] += dO_i / S, no dq, dk.
  if (p.uniform && p.S > 0)
    for (int64_t i = 0; i < p.L; ++i)
      if (std::isinf(m[i]))
        for (int64_t j = 0; j < p.S; ++j)
          for (int64_t e = 0; e < p.Ev; ++e)
            dv[j * p.Ev + e] += go[i * p.Ev + e] / static_cast<T>(p.S);
}

// ---- the op ----------------------------------------------------------------------------------

Shape batch_of(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

Shape with_last_two(Shape batch, int64_t a, int64_t b) {
  batch.push_back(a);
  batch.push_back(b);
  return batch;
}

// Keys each row may see, [N * L]: min(S, length, causal ? i + 1 : S).
std::vector<int64_t> row_lengths(const AttentionMasks& masks, const Shape& batch, int64_t N,
                                 int64_t L, int64_t S) {
  std::vector<int64_t> out(static_cast<size_t>(N * L), S);
  if (masks.lengths.defined()) {
    // lengths broadcast to [batch..., L], read as a mask [..., L, 1]
    Shape as_mask = masks.lengths.shape();
    as_mask.push_back(1);
    const Tensor lens = masks.lengths.contiguous();
    const BroadcastView at = broadcast_view(as_mask, with_last_two(batch, L, 1));
    const int64_t* data = lens.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < L; ++i)
        out[static_cast<size_t>(n * L + i)] =
            std::clamp<int64_t>(data[at.offset[static_cast<size_t>(n)] + i * at.row], 0, S);
  }
  if (masks.causal)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < L; ++i) {
        int64_t& len = out[static_cast<size_t>(n * L + i)];
        len = std::min(len, i + 1);
      }
  return out;
}

void check_flash_inputs(const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionMasks& masks) {
  AG_CHECK(q.defined() && k.defined() && v.defined(), kFlashAttention,
           "q, k and v must be defined");
  const auto shapes = [&] {
    return "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " +
           shape_str(v.shape());
  };
  AG_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, kFlashAttention,
           "expected q [..., L, E], k [..., S, E], v [..., S, Ev] of rank >= 2, got " + shapes());
  AG_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(),
           kFlashAttention,
           std::string("q, k and v must share one floating dtype, got ") + dtype_name(q.dtype()) +
               ", " + dtype_name(k.dtype()) + ", " + dtype_name(v.dtype()));
  AG_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), kFlashAttention,
           "feature sizes of q and k, or lengths of k and v, differ: " + shapes());
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_of(q), batch_of(k), kFlashAttention),
                                       batch_of(v), kFlashAttention);
  const Shape scores = with_last_two(batch, q.size(-2), k.size(-2));
  if (masks.keep.defined())
    AG_CHECK(masks.keep.dtype() == kBool && broadcasts_to(masks.keep.shape(), scores),
             kFlashAttention,
             "keep mask " + shape_str(masks.keep.shape()) + " must be bool and broadcast to " +
                 shape_str(scores));
  if (masks.additive.defined())
    AG_CHECK(masks.additive.dtype() == q.dtype() && broadcasts_to(masks.additive.shape(), scores),
             kFlashAttention,
             "additive mask " + shape_str(masks.additive.shape()) + " must be " +
                 dtype_name(q.dtype()) + " and broadcast to " + shape_str(scores));
  if (masks.lengths.defined()) {
    Shape rows = batch;
    rows.push_back(q.size(-2));
    AG_CHECK(masks.lengths.dtype() == kInt64 && broadcasts_to(masks.lengths.shape(), rows),
             kFlashAttention,
             "lengths " + shape_str(masks.lengths.shape()) + " must be int64 and broadcast to " +
                 shape_str(rows));
  }
}

}  // namespace

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                       const AttentionMasks& masks) {
  check_flash_inputs(q, k, v, masks);
  // A NaN or infinite scale makes every score NaN or +-inf: no softmax. But
  // with no features every score is an empty sum, 0, whatever the scale (the
  // default 1/sqrt(E) is inf there): uniform weights, as the composed path
  // and torch's scaled_dot_product_attention give.
  AG_CHECK(std::isfinite(scale) || q.size(-1) == 0, kFlashAttention,
           "scale must be finite, got " + number_str(scale));
  if (q.size(-1) == 0) scale = 0;
  if (reference_mode()) {
    return detail::faulty("flash_attention", reference::flash_attention(q, k, v, scale, masks));
  }
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_of(q), batch_of(k), kFlashAttention),
                                       batch_of(v), kFlashAttention);
  const int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  int64_t N = 1;
  for (int64_t d : batch) N *= d;
  // q, k, v broadcast to the common batch dims and made contiguous (a copy
  // only when they are not already); their gradients come back in that
  // shape and the engine sums the broadcast dims away.
  const auto full = [&](const Tensor& t, int64_t rows, int64_t cols) {
    return t.detach().expand(with_last_two(batch, rows, cols)).contiguous();
  };
  const Tensor qc = full(q, L, E), kc = full(k, S, E), vc = full(v, S, Ev);
  const Tensor keep = masks.keep.defined() ? masks.keep.contiguous() : Tensor();
  const Tensor additive =
      masks.additive.defined() ? masks.additive.detach().contiguous() : Tensor();
  const Shape scores = with_last_two(batch, L, S);
  const std::vector<int64_t> row_len = row_lengths(masks, batch, N, L, S);

  // out [..., L, Ev] and the per-row max m and sum l of the softmax [N * L]
  Tensor out = empty(with_last_two(batch, L, Ev), q.dtype());
  Tensor saved_max = empty({N * L}, q.dtype()), saved_sum = empty({N * L}, q.dtype());
  const auto problem = [=](auto tag) {
    using T = decltype(tag);
    Problem<T> p{N,
                 L,
                 S,
                 E,
                 Ev,
                 static_cast<T>(scale),
                 qc.data_ptr<T>(),
                 kc.data_ptr<T>(),
                 vc.data_ptr<T>()};
    if (keep.defined())
      p.keep = keep.data_ptr<bool>(), p.keep_at = broadcast_view(keep.shape(), scores);
    if (additive.defined())
      p.additive = additive.data_ptr<T>(), p.additive_at = broadcast_view(additive.shape(), scores);
    p.length = row_len;
    p.uniform = masks.masked_rows_uniform;
    return p;
  };
  dispatch_floating(q.dtype(), kFlashAttention, [&](auto tag) {
    using T = decltype(tag);
    forward(problem(tag), out.data_ptr<T>(), saved_max.data_ptr<T>(), saved_sum.data_ptr<T>());
  });

  // dq, dk, dv by the FlashAttention-2 backward above, block by block from
  // the saved m and l (nothing of size L x S was kept).
  out = detail::faulty("flash_attention", std::move(out));
  if (needs_grad(q, k, v))
    record(out, "FlashAttentionBackward", {q, k, v},
           [problem, saved_out = out.detach(), saved_max, saved_sum, qc, kc, vc](const Tensor& g) {
             const Tensor gc = g.contiguous();
             Tensor dq = empty(qc.shape(), qc.dtype()), dk = empty(kc.shape(), kc.dtype()),
                    dv = empty(vc.shape(), vc.dtype());
             dispatch_floating(qc.dtype(), kFlashAttention, [&](auto tag) {
               using T = decltype(tag);
               const Problem<T> p = problem(tag);
               detail::parallel_for(p.N, [&](int64_t begin, int64_t end) {
                 for (int64_t n = begin; n < end; ++n)
                   backward_item(p, n, gc.data_ptr<T>(), saved_out.data_ptr<T>(),
                                 saved_max.data_ptr<T>(), saved_sum.data_ptr<T>(), dq.data_ptr<T>(),
                                 dk.data_ptr<T>(), dv.data_ptr<T>());
               });
             });
             return grads{dq, dk, dv};
           });
  return out;
}

// The reference (reference.h): the attention every line of this file streams,
// materialised. The scores [..., L, S]; one keep mask from every mask given;
// the softmax of the kept scores (a masked score replaced by the lowest
// finite value, so that a row with no key left is uniform, not NaN); its
// masked weights set to 0 (a row with no key left: all 0, or uniform when
// masked_rows_uniform); then the values. Autograd takes the backward.
Tensor reference::flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                  const AttentionMasks& masks) {
  const int64_t L = q.size(-2), S = k.size(-2);
  Tensor scores = matmul(q, transpose(k, -2, -1)) * scale;  // [..., L, S]
  if (masks.additive.defined()) scores = scores + masks.additive.detach();
  Tensor keep;  // undefined: every key
  const auto also = [&keep](const Tensor& allowed) {
    keep = keep.defined() ? logical_and(keep, allowed) : allowed;
  };
  if (masks.keep.defined()) also(masks.keep);
  if (masks.additive.defined()) also(ne(masks.additive, -std::numeric_limits<double>::infinity()));
  const Tensor key = reshape(arange(S, kInt64), {1, S});                     // key position j
  if (masks.lengths.defined()) also(lt(key, unsqueeze(masks.lengths, -1)));  // j < length
  if (masks.causal) also(le(key, reshape(arange(L, kInt64), {L, 1})));       // j <= i
  if (!keep.defined()) return matmul(softmax(scores, -1), v);
  const double lowest = q.dtype() == kFloat32 ? std::numeric_limits<float>::lowest()
                                              : std::numeric_limits<double>::lowest();
  const Tensor all = softmax(where(keep, scores, lowest), -1);  // a keyless row: uniform
  Tensor weights = where(keep, all, 0.0);
  if (masks.masked_rows_uniform) {
    const Tensor kept = where(expand(keep, scores.shape()), ones_like(scores), 0.0);
    weights = where(gt(sum(kept, -1, /*keepdim=*/true), 0.0), weights, all);
  }
  return matmul(weights, v);
}

}  // namespace ag
