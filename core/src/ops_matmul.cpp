// The matmul family: mm, bmm, matmul (torch.matmul rules) and linear.
//
// Dimension letters: B batch (any number of leading dims, flattened),
// M rows of A and C, K the contracted dim, N columns of B and C.
//
// Every product here, forward and backward, is one call of kernels::gemm
// (attograd/kernels/gemm.h). The kernel multiplies `batch` matrices, each
// stored row-major or column-major ("trans") with a row stride ld, items a
// fixed batch stride apart. So instead of copying operands into one canonical
// layout, each tensor is *described* to the kernel as it lies in memory:
//
//   last two dims with strides (ld, 1)   row-major     trans = false
//   last two dims with strides (1, ld)   column-major  trans = true
//                                        (transpose(k, 1, 2) is read in place)
//   batch dims                           one stride s: item b starts at b * s;
//                                        s = 0 shares one matrix (a broadcast
//                                        weight) with the whole batch
//
// Only a tensor that fits none of these (say, a permute that scrambles the
// last two dims, or batch dims broadcast along one axis but not another) is
// copied with contiguous(). The backward passes reuse the same descriptions
// with flipped trans flags: for C = A B,  dA = G B^T  and  dB = A^T G.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "attograd/autograd.h"
#include "attograd/kernels/gemm.h"
#include "attograd/ops.h"
#include "dim_layout.h"
#include "elementwise.h"
#include "fault.h"

namespace ag {

namespace {

// ---- describing tensors to the kernel ----------------------------------------------

// The one stride that steps through dims [begin, end) of `t` as if they were a
// single flattened dim, or nullopt when no single stride does. Size-1 dims
// never matter; 0 when all are broadcast (stride 0) or of size 1.
std::optional<int64_t> merged_stride(const Tensor& t, size_t begin, size_t end) {
  std::optional<int64_t> stride;
  int64_t span = 1;  // elements covered by the inner dims merged so far
  for (size_t d = end; d-- > begin;) {
    const int64_t size = t.shape()[d];
    if (size == 1) continue;
    if (!stride) {
      stride = t.strides()[d];
    } else if (t.strides()[d] != *stride * span) {
      return std::nullopt;
    }
    span *= size;
  }
  return stride.value_or(0);
}

// A tensor seen by the kernel: `batch` logical matrices op[rows, cols], item b
// at data + b * stride. Element (i, j) sits at i * ld + j (trans = false) or
// at j * ld + i (trans = true).
struct Operand {
  Tensor data;  // the described tensor, or a contiguous copy of it
  int64_t rows = 0, cols = 0;
  bool trans = false;
  int64_t ld = 0, stride = 0;
};

// Describes t = [batch dims (the first batch_dims)..., row dims..., cols]: the
// dims between the batch dims and the last one merge into `rows` (one dim for
// matmul, every leading dim for linear).
Operand describe(const Tensor& t, size_t batch_dims) {
  const size_t nd = t.shape().size();
  // (the product of a checked shape's dims fits: no shape_numel, no temporary Shape)
  const int64_t rows = std::accumulate(t.shape().begin() + static_cast<long>(batch_dims),
                                       t.shape().end() - 1, int64_t{1}, std::multiplies<>());
  const int64_t cols = t.shape().back();
  const std::optional<int64_t> batch_stride = merged_stride(t, 0, batch_dims);
  const std::optional<int64_t> row_stride = merged_stride(t, batch_dims, nd - 1);
  const int64_t col_stride = t.strides().back();
  if (batch_stride && row_stride) {
    // ld follows BLAS' rule ld >= max(1, width) (rows that never repeat), so a
    // fast kernel may pack rows freely; a single row or column has any ld.
    if ((cols == 1 || col_stride == 1) && (rows == 1 || *row_stride >= cols))
      return {t,
              rows,
              cols,
              false,
              rows == 1 ? std::max<int64_t>(cols, 1) : *row_stride,
              *batch_stride};
    if ((rows == 1 || *row_stride == 1) && (cols == 1 || col_stride >= rows))
      return {
          t, rows, cols, true, cols == 1 ? std::max<int64_t>(rows, 1) : col_stride, *batch_stride};
  }
  return {t.contiguous(), rows, cols, false, std::max<int64_t>(cols, 1), rows * cols};
}

// op^T: the same memory read the other way round (no copy).
Operand transposed(Operand op) {
  std::swap(op.rows, op.cols);
  op.trans = !op.trans;
  return op;
}

// Items that follow each other in memory as one taller (or wider) matrix:
// [X_0; X_1; ...] is row-major with the same ld when item b + 1 starts right
// below item b; [X_0, X_1, ...] likewise for a column-major operand.
bool stacks_vertically(const Operand& op) {
  return !op.trans && op.stride == op.rows * op.ld;
}
bool stacks_horizontally(const Operand& op) {
  return op.trans && op.stride == op.cols * op.ld;
}

// ---- the one call site of the kernel ---------------------------------------------

// [batch..., rows, cols]
Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// c[b] = a[b] @ b[b] (+ c[b] when accumulate) for `batch` items. c is
// contiguous with batch * M * N elements: fresh from empty() (the
// kernel overwrites it), or holding what to accumulate onto (linear's bias).
void run_gemm(int64_t batch, const Operand& a, const Operand& b, Tensor& c,
              bool accumulate = false) {
  kernels::GemmShape s;
  s.batch = batch;
  s.M = a.rows;
  s.K = a.cols;
  s.N = b.cols;
  s.trans_a = a.trans;
  s.trans_b = b.trans;
  s.lda = a.ld;
  s.ldb = b.ld;
  s.ldc = std::max<int64_t>(s.N, 1);
  s.stride_a = a.stride;
  s.stride_b = b.stride;
  s.stride_c = s.M * s.N;
  s.beta = accumulate ? 1.0f : 0.0f;
  // x [B, M, K] @ W [K, N] with W shared (stride 0): when the items of A lie
  // one below the other, the whole batch is ONE taller product
  // [B*M, K] @ [K, N], which a blocked kernel runs faster than B small ones.
  if (s.batch > 1 && s.stride_b == 0 && stacks_vertically(a)) {
    s.M *= s.batch;
    s.batch = 1;
  }
  // Nothing to compute. With K = 0 the product is zero: C = 0 (an
  // uninitialised C is replaced), or C itself when accumulating.
  if (s.batch == 0 || s.M == 0 || s.N == 0 || s.K == 0) {
    if (!accumulate) c = zeros(c.shape(), c.dtype());
    return;
  }
  dispatch_floating(c.dtype(), "gemm", [&](auto tag) {
    using T = decltype(tag);
    kernels::gemm(s, a.data.data_ptr<T>(), b.data.data_ptr<T>(), c.data_ptr<T>());
  });
}

// a[b] @ b[b] for every item of the batch, into a fresh tensor of `shape`
// (whose elements are the batch's [M, N] results, one after the other).
Tensor batched_product(int64_t batch, const Operand& a, const Operand& b, const Shape& shape,
                       DType dtype) {
  Tensor c = empty(shape, dtype);
  run_gemm(batch, a, b, c);
  return c;
}

// sum_b a[b] @ b[b] -> [M, N], into a fresh tensor of `shape` (M * N
// elements): the gradient of a matrix that the forward shared over the batch.
Tensor summed_product(const Shape& batch_shape, const Operand& a, const Operand& b,
                      const Shape& shape, DType dtype) {
  const int64_t batch = shape_numel(batch_shape);
  // sum_b A_b B_b = [A_0, A_1, ...] @ [B_0; B_1; ...]: when the items stack
  // that way in memory, the batch sum is ONE product with K = batch * K.
  // This is the case of every weight gradient dW = sum_b X_b^T G_b.
  if (batch == 1 || (stacks_horizontally(a) && stacks_vertically(b))) {
    Operand wide = a, tall = b;
    wide.cols *= batch;
    tall.rows *= batch;
    Tensor c = empty(shape, dtype);
    run_gemm(1, wide, tall, c);
    return c;
  }
  // Otherwise: every item's product, then the sum over the batch dims.
  const Shape full = with_matrix(batch_shape, a.rows, b.cols);
  return reshape(
      sum(batched_product(batch, a, b, full, dtype), detail::first_dims(batch_shape.size())),
      shape);
}

// ---- argument checks --------------------------------------------------------------

void check_operands(const Tensor& a, const Tensor& b, const char* op) {
  AG_CHECK(a.defined() && b.defined(), op, "undefined tensor operand");
  check_same_dtype(a, b, op);
  check_floating(a, op, "operands");
}

Shape leading(const Tensor& t, size_t drop) {
  return Shape(t.shape().begin(), t.shape().end() - static_cast<long>(drop));
}

// t ([..., rows, cols], at least 2-D) broadcast to batch_shape (a stride-0 view) and described.
Operand describe_batched(const Tensor& t, const Shape& batch_shape) {
  const size_t batch_dims = batch_shape.size();
  // Already [batch..., rows, cols] (every bmm): described as it lies, no view needed.
  if (t.shape().size() == batch_dims + 2 &&
      std::equal(batch_shape.begin(), batch_shape.end(), t.shape().begin()))
    return describe(t, batch_dims);
  return describe(expand(t, with_matrix(batch_shape, t.size(-2), t.size(-1))), batch_dims);
}

// The gradient of one matmul operand x (promoted to at least 2-D, as x2) from
// the batched product of `a` and `b` ([batch..., rows, cols] each):
//   x not broadcast       the batch of products, in x's own shape, and in
//                         x's own layout: when x is a transposed view
//                         (column-major to the kernel, as K^T in Q K^T), the
//                         kernel writes (a b)^T = b^T a^T row-major and the
//                         gradient is its transposed view, so that the
//                         transpose's backward hands on a contiguous tensor
//                         instead of one that the next reshape must copy
//                         element by element;
//   x shared by the batch its sum over the batch (summed_product);
//   x partly broadcast    the full batch; the engine sums it down to x's shape.
Tensor operand_grad(const Shape& x_shape, const Tensor& x2, const Operand& x,
                    const Shape& batch_shape, const Operand& a, const Operand& b, DType dtype) {
  const int64_t batch = shape_numel(batch_shape);
  const int64_t x_batch = shape_numel(leading(x2, 2));
  if (x_batch == batch && x.trans && x_shape.size() >= 2) {
    Shape t_shape = x_shape;
    std::swap(t_shape[t_shape.size() - 1], t_shape[t_shape.size() - 2]);
    return transpose(batched_product(batch, transposed(b), transposed(a), t_shape, dtype), -2, -1);
  }
  if (x_batch == batch) return batched_product(batch, a, b, x_shape, dtype);
  if (x_batch == 1) return summed_product(batch_shape, a, b, x_shape, dtype);
  return batched_product(batch, a, b, with_matrix(batch_shape, a.rows, b.cols), dtype);
}

// The product behind mm, bmm and matmul (the callers have checked shapes),
// recorded as `node`.
Tensor product(const Tensor& a, const Tensor& b, const char* node) {
  // torch.matmul promotes a 1-D a to a row [1, K] and a 1-D b to a column
  // [K, 1], and drops that dim from the result again.
  // Detached when the backward will capture them (a lambda must not hold the
  // graph, autograd.h); without a backward there is nothing to detach from.
  const bool record_grad = needs_grad(a, b);
  const Tensor a0 = record_grad ? a.detach() : a, b0 = record_grad ? b.detach() : b;
  const Tensor a2 = a.dim() == 1 ? unsqueeze(a0, 0) : a0;  // [..., M, K]
  const Tensor b2 = b.dim() == 1 ? unsqueeze(b0, 1) : b0;  // [..., K, N]
  const int64_t M = a2.size(-2), N = b2.size(-1);
  const Shape batch_shape = broadcast_shapes(leading(a2, 2), leading(b2, 2), "matmul");
  Shape out_shape = batch_shape;
  if (a.dim() > 1) out_shape.push_back(M);
  if (b.dim() > 1) out_shape.push_back(N);

  // out[b] = A[b] @ B[b]  [B, M, N]
  Tensor out = batched_product(shape_numel(batch_shape), describe_batched(a2, batch_shape),
                               describe_batched(b2, batch_shape), out_shape, a.dtype());
  if (record_grad)
    record(out, node, {a, b},
           [a2, b2, batch_shape, a_shape = a.shape(), b_shape = b.shape(),
            need_a = a.requires_grad(), need_b = b.requires_grad(), M, N](const Tensor& g) {
             const Shape g_shape = with_matrix(batch_shape, M, N);
             const Tensor g2 = g.shape() == g_shape ? g : reshape(g, g_shape);  // [B, M, N]
             const Operand G = describe(g2, batch_shape.size());
             const Operand A = describe_batched(a2, batch_shape);  // [B, M, K]
             const Operand B = describe_batched(b2, batch_shape);  // [B, K, N]
             // out = A B  =>  dA = G B^T  [B, M, N] @ [B, N, K] -> [B, M, K]
             //                dB = A^T G  [B, K, M] @ [B, M, N] -> [B, K, N]
             // (summed over the batch items where the operand was broadcast)
             Tensor da, db;
             if (need_a)
               da = operand_grad(a_shape, a2, A, batch_shape, G, transposed(B), g.dtype());
             if (need_b)
               db = operand_grad(b_shape, b2, B, batch_shape, transposed(A), G, g.dtype());
             return grads{da, db};
           });
  return out;
}

}  // namespace

// ---- mm, bmm, matmul ------------------------------------------------------------------

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "mm");
  AG_CHECK(a.dim() == 2 && b.dim() == 2, "mm",
           "expected 2-D matrices, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
  AG_CHECK(a.size(1) == b.size(0), "mm",
           "inner dimensions differ: " + shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  return detail::faulty("mm", product(a, b, "MmBackward"));
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "bmm");
  AG_CHECK(a.dim() == 3 && b.dim() == 3, "bmm",
           "expected 3-D tensors, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
  AG_CHECK(a.size(0) == b.size(0), "bmm",
           "batch sizes differ: " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  AG_CHECK(a.size(2) == b.size(1), "bmm",
           "inner dimensions differ: " + shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  return detail::faulty("bmm", product(a, b, "BmmBackward"));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "matmul");
  AG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul",
           "both arguments need at least 1 dim, got " + shape_str(a.shape()) + " @ " +
               shape_str(b.shape()));
  const int64_t K_a = a.size(-1), K_b = b.dim() == 1 ? b.size(0) : b.size(-2);
  AG_CHECK(K_a == K_b, "matmul",
           "inner dimensions differ: " + shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  const Shape batch_a = a.dim() > 2 ? leading(a, 2) : Shape{};
  const Shape batch_b = b.dim() > 2 ? leading(b, 2) : Shape{};
  const size_t n = std::max(batch_a.size(), batch_b.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - batch_a.size() ? 1 : batch_a[i - (n - batch_a.size())];
    const int64_t db = i < n - batch_b.size() ? 1 : batch_b[i - (n - batch_b.size())];
    AG_CHECK(da == db || da == 1 || db == 1, "matmul",
             "batch dims do not broadcast: " + shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  }
  return detail::faulty("matmul", product(a, b, "MatmulBackward"));
}

// ---- linear -----------------------------------------------------------------------------

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_operands(x, weight, "linear");
  AG_CHECK(weight.dim() == 2, "linear",
           "weight must be 2-D [out, in], got " + shape_str(weight.shape()));
  AG_CHECK(x.dim() >= 1, "linear", "input must have at least 1 dim, got a 0-d tensor");
  const int64_t in = weight.size(1), out_features = weight.size(0);
  AG_CHECK(x.size(-1) == in, "linear",
           "input " + shape_str(x.shape()) + " has " + std::to_string(x.size(-1)) +
               " features, weight " + shape_str(weight.shape()) + " expects " + std::to_string(in));
  if (bias.defined()) {
    AG_CHECK(
        bias.dtype() == x.dtype(), "linear",
        std::string("bias is ") + dtype_name(bias.dtype()) + ", input is " + dtype_name(x.dtype()));
    AG_CHECK(bias.shape() == Shape{out_features}, "linear",
             "bias " + shape_str(bias.shape()) + " does not match weight " +
                 shape_str(weight.shape()) + ": expected [" + std::to_string(out_features) + "]");
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;

  // Every leading dim of x merges into the rows R of one matrix [R, in], and
  // W^T is W read column-major (trans_b): y [R, out] = x [R, in] @ W^T [in, out]
  // is ONE product, with no copy of x (when its rows merge) and none of W.
  const Operand X = describe(x.detach(), 0);
  const Operand Wt = transposed(describe(weight.detach(), 0));
  Tensor y = empty(out_shape, x.dtype());  // bias rows or the product fill it
  if (bias.defined()) {
    // y = b in every row, then y += x W^T (the kernel's beta = 1).
    const Tensor b = bias.detach().contiguous();
    dispatch_floating(x.dtype(), "linear", [&](auto tag) {
      using T = decltype(tag);
      const T* pb = b.data_ptr<T>();
      T* py = y.data_ptr<T>();
      for (int64_t r = 0; r < X.rows; ++r) std::copy(pb, pb + out_features, py + r * out_features);
    });
  }
  run_gemm(1, X, Wt, y, /*accumulate=*/bias.defined());
  y = detail::faulty("linear", std::move(y));

  if (needs_grad(x, weight, bias))

    record(y, "LinearBackward", {x, weight, bias},
           [x_ = x.detach(), w_ = weight.detach(), need_x = x.requires_grad(),
            need_w = weight.requires_grad(),
            need_b = bias.defined() && bias.requires_grad()](const Tensor& g) {
             const Operand G = describe(g, 0);  // [R, out]
             // y = x W^T + b  =>  dx = G W    [R, out] @ [out, in] -> [R, in]
             //                    dW = G^T x  [out, R] @ [R, in]   -> [out, in]
             //                    db = sum_R G                      -> [out]
             // dW sums over every row of every batch item: ONE product with K = R.
             Tensor dx, dw, db;
             if (need_x) dx = batched_product(1, G, describe(w_, 0), x_.shape(), g.dtype());
             if (need_w)
               dw = batched_product(1, transposed(G), describe(x_, 0), w_.shape(), g.dtype());
             if (need_b) {
               // b was added to every row: db = g summed over all dims but the last
               db = g.dim() == 1 ? g : sum(g, detail::first_dims(static_cast<size_t>(g.dim() - 1)));
             }
             return grads{dx, dw, db};
           });
  return y;
}

}  // namespace ag
