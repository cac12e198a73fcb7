// kernels::gemm: every path this CPU has (scalar and each SIMD kernel, and
// gemm() itself) against the naive reference, on awkward sizes, transposed
// operands, strided and broadcast batches, zero-size dimensions, float32 and
// float64, beta 0 and 1, and 1 and 2 threads (3 as well for the work
// split); plus the thread pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../core/src/fast/parallel.h"
#include "attograd/error.h"
#include "attograd/kernels/gemm.h"
#include "attograd/tensor.h"

namespace {

using ag::kernels::GemmPath;
using ag::kernels::GemmShape;

const std::vector<int64_t> kSizes = {1, 2, 7, 15, 16, 17, 31, 33, 63, 65, 127, 129, 257};

// One product to check. Operands live in buffers of exactly the size the
// shape describes (the last row holds only its `cols` values, the last batch
// item nothing past itself), so ASan flags any read outside the matrices.
struct Case {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int64_t pad = 0;           // extra elements per stored row (ld = cols + pad)
  int64_t gap = 0;           // extra elements between batch items
  bool broadcast_b = false;  // stride_b = 0: every item uses the same B
};

std::string describe(const Case& c) {
  return "batch " + std::to_string(c.batch) + ", M " + std::to_string(c.M) + ", N " +
         std::to_string(c.N) + ", K " + std::to_string(c.K) + (c.trans_a ? ", A^T" : "") +
         (c.trans_b ? ", B^T" : "") + (c.pad ? ", padded rows" : "") +
         (c.broadcast_b ? ", shared B" : "");
}

// Elements spanned by `batch` items of rows x cols, a row stride ld and a batch stride.
int64_t extent(int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  if (batch == 0 || rows == 0 || cols == 0) return 0;
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

uint64_t g_state = 88172645463325252ull;
double next_uniform() {  // xorshift64, in [-1, 1)
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return static_cast<double>(g_state >> 11) * 0x1.0p-52 - 1.0;
}

template <typename T>
struct Problem {
  GemmShape s;
  std::vector<T> a, b, c0;  // c0: C before the call
};

template <typename T>
Problem<T> make_problem(const Case& c) {
  Problem<T> p;
  GemmShape& s = p.s;
  s.batch = c.batch;
  s.M = c.M;
  s.N = c.N;
  s.K = c.K;
  s.trans_a = c.trans_a;
  s.trans_b = c.trans_b;
  const int64_t a_rows = c.trans_a ? c.K : c.M, a_cols = c.trans_a ? c.M : c.K;
  const int64_t b_rows = c.trans_b ? c.N : c.K, b_cols = c.trans_b ? c.K : c.N;
  s.lda = a_cols + c.pad;
  s.ldb = b_cols + c.pad;
  s.ldc = c.N + c.pad;
  s.stride_a = a_rows * s.lda + c.gap;
  s.stride_b = c.broadcast_b ? 0 : b_rows * s.ldb + c.gap;
  s.stride_c = c.M * s.ldc + c.gap;
  p.a.resize(extent(c.batch, a_rows, a_cols, s.lda, s.stride_a));
  p.b.resize(extent(c.broadcast_b ? 1 : c.batch, b_rows, b_cols, s.ldb, s.stride_b));
  p.c0.resize(extent(c.batch, c.M, c.N, s.ldc, s.stride_c));
  for (T& x : p.a) x = static_cast<T>(next_uniform());
  for (T& x : p.b) x = static_cast<T>(next_uniform());
  for (T& x : p.c0) x = static_cast<T>(next_uniform());
  return p;
}

// A bound on |C(i, j) - exact| for any summation order of the K products,
// and of adding the old C: (K + 2) eps (max_k |b_kj| sum_k |a_ik| + |c0|).
template <typename T>
std::vector<double> tolerance(const Problem<T>& p, const std::vector<T>& c0) {
  const GemmShape& s = p.s;
  std::vector<double> tol(c0.size(), 0.0);
  const double eps = std::numeric_limits<T>::epsilon();
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* a = p.a.data() + b * s.stride_a;
    const T* bm = p.b.data() + b * s.stride_b;
    std::vector<double> row_sum(s.M, 0.0), col_max(s.N, 0.0);
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t k = 0; k < s.K; ++k) {
        row_sum[i] += std::fabs(s.trans_a ? a[k * s.lda + i] : a[i * s.lda + k]);
      }
    }
    for (int64_t j = 0; j < s.N; ++j) {
      for (int64_t k = 0; k < s.K; ++k) {
        col_max[j] = std::max<double>(col_max[j],
                                      std::fabs(s.trans_b ? bm[j * s.ldb + k] : bm[k * s.ldb + j]));
      }
    }
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t j = 0; j < s.N; ++j) {
        const int64_t at = b * s.stride_c + i * s.ldc + j;
        tol[at] = (s.K + 2) * eps * (row_sum[i] * col_max[j] + std::fabs(c0[at]));
      }
    }
  }
  return tol;
}

// C as given to a beta = 0 call: NaN everywhere, which must all be overwritten.
template <typename T>
std::vector<T> poisoned(size_t n) {
  return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

// Which products check_case runs: gemm_with_path on every path and gemm(),
// or gemm() with B packed beforehand for every path (kernels::PackedB).
enum class BOperand { AsGiven, Packed };

// Runs the case through every path, thread count and beta, against gemm_naive.
template <typename T>
void check_case(const Case& c, const std::vector<int>& thread_counts,
                BOperand operand = BOperand::AsGiven) {
  SCOPED_TRACE(describe(c) + (sizeof(T) == 4 ? ", float32" : ", float64"));
  Problem<T> p = make_problem<T>(c);
  // naive with beta = 0 gives the product; with beta = 1 it adds it to C.
  std::vector<T> product = poisoned<T>(p.c0.size());
  ag::kernels::gemm_naive(p.s, p.a.data(), p.b.data(), product.data());
  for (float beta : {0.0f, 1.0f}) {
    p.s.beta = beta;
    const std::vector<T> c0 = beta != 0 ? p.c0 : poisoned<T>(p.c0.size());
    std::vector<T> expected = product;
    if (beta != 0) {
      for (size_t at = 0; at < expected.size(); ++at) {
        expected[at] = std::isnan(product[at]) ? c0[at] : c0[at] + product[at];
      }
    }
    const std::vector<double> tol = tolerance(p, beta != 0 ? p.c0 : std::vector<T>(p.c0.size()));

    auto check_path = [&](const std::string& name, auto&& run) {
      std::vector<T> first;
      for (int threads : thread_counts) {
        SCOPED_TRACE(name + ", beta " + std::to_string(beta) + ", " + std::to_string(threads) +
                     " threads");
        ag::set_num_threads(threads);
        std::vector<T> got = c0;
        run(got.data());
        // Outside the matrices (row padding, batch gaps) C is left alone.
        for (size_t at = 0; at < got.size(); ++at) {
          if (std::isnan(expected[at])) {
            ASSERT_TRUE(std::isnan(got[at])) << "element " << at << " written";
          } else {
            ASSERT_LE(std::fabs(double(got[at]) - double(expected[at])), tol[at])
                << "element " << at << ": got " << got[at] << ", naive " << expected[at];
          }
        }
        // Each element is summed in the same order whatever the thread count.
        if (first.empty()) {
          first = got;
        } else {
          ASSERT_TRUE(
              std::equal(got.begin(), got.end(), first.begin(),
                         [](T x, T y) { return x == y || (std::isnan(x) && std::isnan(y)); }))
              << "result differs from the one with " << thread_counts[0] << " thread(s)";
        }
      }
    };
    if (operand == BOperand::Packed) {
      for (GemmPath path : ag::kernels::available_gemm_paths()) {
        std::vector<T> storage(ag::kernels::PackedB<T>::elements(p.s, path));
        const ag::kernels::PackedB<T> packed(p.s, p.b.data(), storage.data(), path);
        check_path(std::string("B packed for ") + ag::kernels::gemm_path_name(path),
                   [&](T* out) { ag::kernels::gemm(p.s, p.a.data(), packed, out); });
      }
      continue;
    }
    for (GemmPath path : ag::kernels::available_gemm_paths()) {
      if (path == GemmPath::Naive) continue;
      check_path(ag::kernels::gemm_path_name(path), [&](T* out) {
        ag::kernels::gemm_with_path(path, p.s, p.a.data(), p.b.data(), out);
      });
    }
    check_path("gemm()", [&](T* out) { ag::kernels::gemm(p.s, p.a.data(), p.b.data(), out); });
  }
}

void check_both_types(const Case& c, const std::vector<int>& thread_counts = {1, 2},
                      BOperand operand = BOperand::AsGiven) {
  check_case<float>(c, thread_counts, operand);
  check_case<double>(c, thread_counts, operand);
}

// An M x K by K x N product in transpose form t: bit 0 transposes A, bit 1 B.
Case product(int64_t M, int64_t N, int64_t K, int t) {
  Case c;
  c.M = M;
  c.N = N;
  c.K = K;
  c.trans_a = t & 1;
  c.trans_b = t & 2;
  return c;
}

// Every transpose form of a padded [batch] product, on each thread count.
void check_every_transpose(int64_t batch, int64_t M, int64_t N, int64_t K,
                           const std::vector<int>& thread_counts) {
  for (int t = 0; t < 4; ++t) {
    Case c = product(M, N, K, t);
    c.batch = batch;
    c.pad = 1;
    check_both_types(c, thread_counts);
  }
}

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override { threads_ = ag::get_num_threads(); }
  void TearDown() override { ag::set_num_threads(threads_); }

 private:
  int threads_ = 1;
};

// The default is the instruction set's path (test_instruction_set.cpp checks
// which): the best this CPU has unless ATTOGRAD_ISA names a slower one.
TEST_F(GemmTest, PathsIncludeScalarAndTheDefault) {
  const std::vector<GemmPath> paths = ag::kernels::available_gemm_paths();
  ASSERT_GE(paths.size(), 2u);
  EXPECT_EQ(paths[0], GemmPath::Naive);
  EXPECT_EQ(paths[1], GemmPath::Scalar);
  EXPECT_NE(std::find(paths.begin(), paths.end(), ag::kernels::default_gemm_path()), paths.end());
  EXPECT_STREQ(ag::kernels::gemm_path_name(),
               ag::kernels::gemm_path_name(ag::kernels::default_gemm_path()));
}

TEST_F(GemmTest, UnavailablePathThrows) {
  const std::vector<GemmPath> paths = ag::kernels::available_gemm_paths();
  for (GemmPath path : {GemmPath::Avx2, GemmPath::Avx512, GemmPath::Neon}) {
    if (std::find(paths.begin(), paths.end(), path) != paths.end()) continue;
    float x = 0;
    GemmShape s;
    EXPECT_THROW(ag::kernels::gemm_with_path(path, s, &x, &x, &x), ag::Error)
        << ag::kernels::gemm_path_name(path);
    EXPECT_THROW(ag::kernels::PackedB<float>::elements(s, path), ag::Error)
        << ag::kernels::gemm_path_name(path);
  }
}

TEST_F(GemmTest, SquareSizes) {
  for (int64_t n : kSizes) {
    for (int t = 0; t < 4; ++t) {
      if (n == 257 && t % 3 != 0) continue;  // the largest: plain and both transposed only
      check_both_types(product(n, n, n, t));
    }
  }
}

TEST_F(GemmTest, NonSquareSizes) {
  const int64_t n = static_cast<int64_t>(kSizes.size());
  for (int64_t i = 0; i < n; ++i) {
    Case c = product(kSizes[i], kSizes[(i + 5) % n], kSizes[(i + 9) % n], static_cast<int>(i));
    check_both_types(c);
  }
}

TEST_F(GemmTest, SkinnyShapes) {
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 257, 129}, {257, 1, 65}, {129, 65, 1},
                                                      {2, 129, 257}, {257, 7, 3},  {1, 1, 257}};
  for (const auto& [m, n, k] : shapes)
    for (int t = 0; t < 4; ++t) check_both_types(product(m, n, k, t));
}

// Wider than one column block (512) and deeper than one k block (384 floats,
// 192 doubles), with B too big to be read in place.
TEST_F(GemmTest, SeveralCacheBlocks) {
  for (int t = 0; t < 4; ++t) {
    Case c = product(13, 530, 400, t);
    check_both_types(c);
  }
}

// A transposed A taller than one packed block (1152 rows), so it is cut into
// two blocks of 606 and 595 rows and B is packed again for the second, and
// wider than one micro-kernel so A is packed.
TEST_F(GemmTest, TallTransposedA) {
  for (int t = 0; t < 2; ++t) {
    Case c;
    c.M = 1201;
    c.N = 70;
    c.K = 21;
    c.trans_a = true;
    c.trans_b = t;
    check_both_types(c);
  }
}

TEST_F(GemmTest, StridedBatches) {
  for (int t = 0; t < 4; ++t) {
    for (int64_t batch : {2, 3, 4}) {
      Case c = product(17, 33, 15, t);
      c.batch = batch;
      c.pad = 3;
      c.gap = 5;
      check_both_types(c);
      c.broadcast_b = true;  // x @ W for a batch of x
      check_both_types(c);
    }
  }
}

// Large enough to be shared among threads, and wide and tall enough that
// each item is cut in column and row blocks as well (for every kernel width).
TEST_F(GemmTest, WorkSplitAcrossThreads) {
  for (int64_t batch : {1, 3}) {
    for (int t = 0; t < 4; ++t) {
      Case c = product(97, 520, 33, t);
      c.batch = batch;
      check_both_types(c, {1, 2, 3});
    }
  }
}

// The threads sharing each item's B panels (few batch items, at least 2
// MFLOP): several k blocks (a block of C waits for its previous k block),
// more panels than the two buffers (packing waits for the panel two back), a
// panel with its first columns read in place, a C too short for more than one
// block of rows (cut in columns), and a transposed A packed over a panel wider
// than kNC; on 2 and 3 threads, so that the shares are uneven and taken from
// one another.
TEST_F(GemmTest, SharedPanels) {
  struct Shape {
    int64_t batch, M, N, K;
  };
  for (const Shape& sh : {Shape{1, 31, 1100, 400}, Shape{2, 37, 530, 400}, Shape{1, 250, 70, 60},
                          Shape{1, 7, 1300, 150}, Shape{3, 50, 300, 70}})
    check_every_transpose(sh.batch, sh.M, sh.N, sh.K, {1, 2, 3});
  Case wide;  // a transposed A over a panel of 2100 columns (over 4 x kNC: two panels)
  wide.M = 13;
  wide.N = 2100;
  wide.K = 50;
  wide.trans_a = true;
  check_both_types(wide, {1, 2});
}

// Each thread its own rows of C (few batch items, at least 128 rows per
// thread): ragged rows, a B read in place (K N small), two k blocks, and a
// transposed A that one thread packs in two blocks of rows and two or three
// threads in one each; on 2 and 3 threads, so that the parts are uneven.
TEST_F(GemmTest, RowsApart) {
  struct Shape {
    int64_t batch, M, N, K;
  };
  for (const Shape& sh : {Shape{1, 401, 90, 37}, Shape{2, 400, 100, 400}, Shape{1, 1300, 70, 21}})
    check_every_transpose(sh.batch, sh.M, sh.N, sh.K, {1, 2, 3});
}

// Tiny products, which a kernel may run without the blocked driver (the
// AVX-512 one reads A and B in place when M N K <= 32K and K <= 64, and
// takes one or two rows times a transposed B as dot products): every
// transpose, ragged N on either side of a vector, K on both sides of 64 and
// of a vector, padded rows, batches with and without a shared B.
TEST_F(GemmTest, TinyProducts) {
  const std::vector<std::array<int64_t, 3>> shapes = {
      {20, 64, 8},  {1, 1, 1},    {6, 17, 3},   {13, 5, 64}, {13, 5, 65}, {7, 63, 9}, {5, 129, 33},
      {32, 32, 32}, {33, 32, 32}, {1, 15, 512}, {2, 6, 100}, {1, 5, 16},  {2, 3, 17}, {3, 4, 40}};
  for (const auto& [m, n, k] : shapes) {
    for (int t = 0; t < 4; ++t) {
      Case c = product(m, n, k, t);
      check_both_types(c, {1, 2});
      c.batch = 3;
      c.pad = 2;
      c.gap = 3;
      check_both_types(c, {1});
      c.broadcast_b = true;
      check_both_types(c, {1});
    }
  }
}

// Every edge tile: 1 to 7 rows (a whole 6-row sliver plus each ragged one)
// by widths on both sides of each vector boundary of every kernel (4, 8, 16
// lanes; 16, 32, 64 columns), with k not a multiple of 16 so that the
// transposing copy of B has a ragged end too.
TEST_F(GemmTest, EdgeTiles) {
  for (int64_t m = 1; m <= 7; ++m) {
    for (int64_t n : {1, 3, 4, 5, 8, 9, 15, 16, 17, 31, 33, 47, 48, 49, 63, 64, 65}) {
      for (int t = 0; t < 4; ++t) {
        Case c = product(m, n, 19, t);
        c.pad = 5;  // a store past column n lands in the padding, which must stay untouched
        check_both_types(c, {1});
      }
    }
  }
}

// B read in place (at most 32 KB) and just over it, with a ragged last
// sliver (packed either way). As floats, 62 x 130, 62 x 131 and 63 x 130
// (32240, 32488, 32760 bytes) are read in place and 63 x 131 (33012) is
// packed; as doubles all are packed.
TEST_F(GemmTest, BInPlaceAndPacked) {
  for (int64_t k : {62, 63}) {
    for (int64_t n : {130, 131}) {
      Case c;
      c.M = 13;
      c.N = n;
      c.K = k;
      check_both_types(c);
    }
  }
}

// The products attention runs (smaller batches): Q K^T and dO V^T, P V and
// dS K, and the backward's P^T dO and dS^T Q; d2l's multi-head 4 queries
// and 6 keys; batch items split among threads, and 37 items of a head's
// scores, enough work for the threads to take runs of whole items (37 does
// not divide into the runs of 2 or 3 threads); and a head's 8 columns
// (P V, dS K, P^T dO of d2l's Transformer: the AVX-512 path's half-vector
// tiles), 30 and 11 rows (whole tiles of 6 and a last tile of 5).
TEST_F(GemmTest, AttentionShapes) {
  struct Shape {
    int64_t batch, M, N, K;
    bool trans_a, trans_b;
  };
  for (const Shape& sh : {Shape{3, 128, 128, 64, false, true}, Shape{3, 128, 64, 128, false, false},
                          Shape{3, 128, 64, 128, true, false}, Shape{10, 4, 6, 20, false, true},
                          Shape{10, 4, 20, 6, false, false}, Shape{2, 20, 64, 8, false, false},
                          Shape{37, 30, 30, 64, false, true}, Shape{5, 30, 8, 30, false, false},
                          Shape{5, 11, 8, 30, false, false}, Shape{5, 30, 8, 11, true, false}}) {
    Case c = product(sh.M, sh.N, sh.K, sh.trans_a | sh.trans_b << 1);
    c.batch = sh.batch;
    check_both_types(c, {1, 2, 3});
  }
}

TEST_F(GemmTest, ZeroSizeDimensions) {
  const std::vector<std::array<int64_t, 4>> shapes = {{1, 0, 5, 7}, {1, 5, 0, 7}, {1, 5, 7, 0},
                                                      {0, 5, 7, 3}, {3, 4, 6, 0}, {2, 0, 0, 0}};
  for (const auto& [batch, m, n, k] : shapes) {
    for (int t = 0; t < 4; ++t) {
      Case c = product(m, n, k, t);
      c.batch = batch;
      check_both_types(c);
    }
  }
}

// A B packed once (kernels::PackedB) for every path, against the naive
// product: several k blocks and column panels (K over 384 floats, N over
// 512), ragged slivers, both ways of storing B (and of A, for the first
// shape), C tall enough for rows apart, batches that share B; on 1 to 3
// threads.
TEST_F(GemmTest, PackedBMatchesNaive) {
  struct Shape {
    int64_t batch, M, N, K;
  };
  for (const Shape& sh :
       {Shape{1, 13, 600, 400}, Shape{3, 7, 70, 33}, Shape{1, 260, 131, 40}, Shape{1, 1, 1, 1}}) {
    for (int t : {0, 2, 1, 3}) {
      if (t % 2 == 1 && sh.N != 600) continue;
      Case c = product(sh.M, sh.N, sh.K, t);
      c.batch = sh.batch;
      c.pad = 1;
      c.broadcast_b = true;
      check_both_types(c, {1, 2, 3}, BOperand::Packed);
    }
  }
}

TEST_F(GemmTest, PackedBRefusesAnotherShape) {
  GemmShape s;
  s.M = 4, s.N = 5, s.K = 6, s.lda = 6, s.ldb = 5, s.ldc = 5;
  const std::vector<float> a(24, 1.0f), b(30, 1.0f);
  std::vector<float> c(20, 0.0f);
  std::vector<float> storage(ag::kernels::PackedB<float>::elements(s));
  const ag::kernels::PackedB<float> packed(s, b.data(), storage.data());
  EXPECT_EQ(packed.K(), 6);
  EXPECT_EQ(packed.N(), 5);
  ag::kernels::gemm(s, a.data(), packed, c.data());
  EXPECT_EQ(c[0], 6.0f);
  GemmShape other = s;
  other.N = 4;
  try {
    ag::kernels::gemm(other, a.data(), packed, c.data());
    FAIL() << "expected ag::Error";
  } catch (const ag::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gemm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the packed B [6, 5]"), std::string::npos) << e.what();
  }
  GemmShape negative = s;
  negative.K = -1;
  EXPECT_THROW(ag::kernels::PackedB<float>::elements(negative), ag::Error);
}

// ---- the thread pool -----------------------------------------------------------------------

class ParallelForTest : public GemmTest {};

TEST_F(ParallelForTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ag::set_num_threads(threads);
    for (int64_t n : {0, 1, 2, 5, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      ag::detail::parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << i;
    }
  }
}

TEST_F(ParallelForTest, GrainLimitsTheChunks) {
  ag::set_num_threads(2);
  std::atomic<int> chunks{0};
  ag::detail::parallel_for(
      10, [&](int64_t, int64_t) { chunks++; }, /*grain=*/10);
  EXPECT_EQ(chunks.load(), 1);
}

TEST_F(ParallelForTest, NestedCallsRunOnTheCallingThread) {
  ag::set_num_threads(2);
  std::atomic<int> foreign{0};
  ag::detail::parallel_for(2, [&](int64_t, int64_t) {
    const std::thread::id outer = std::this_thread::get_id();
    ag::detail::parallel_for(8, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != outer) foreign++;
    });
  });
  EXPECT_EQ(foreign.load(), 0);
}

TEST_F(ParallelForTest, ConcurrentCallersAllFinish) {
  ag::set_num_threads(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        ag::detail::parallel_for(100, [&](int64_t begin, int64_t end) { total += end - begin; });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 100);
}

TEST_F(ParallelForTest, ExceptionsReachTheCaller) {
  ag::set_num_threads(2);
  EXPECT_THROW(ag::detail::parallel_for(4,
                                        [](int64_t begin, int64_t) {
                                          if (begin > 0) throw std::runtime_error("worker");
                                        }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int64_t> total{0};
  ag::detail::parallel_for(4, [&](int64_t begin, int64_t end) { total += end - begin; });
  EXPECT_EQ(total.load(), 4);
}

TEST_F(ParallelForTest, NumThreads) {
  EXPECT_GE(ag::get_num_threads(), 1);
  ag::set_num_threads(3);
  EXPECT_EQ(ag::get_num_threads(), 3);
  EXPECT_THROW(ag::set_num_threads(0), ag::Error);
  EXPECT_EQ(ag::get_num_threads(), 3);
}

}  // namespace

// The recording bench_gemm takes of a training step's products: every call
// of gemm() counted by shape, from every thread, and nothing once it stops.
TEST(GemmRecording, CountsEachShapesCallsUntilItStops) {
  const ag::Tensor a = ag::randn({6, 5}), b = ag::randn({5, 7});
  const ag::Tensor qs = ag::randn({3, 4, 8}, ag::kFloat64), ks = ag::randn({3, 9, 8}, ag::kFloat64);
  ag::kernels::start_gemm_recording();
  ag::matmul(a, b);
  ag::matmul(a, b);
  ag::bmm(qs, ks.transpose(1, 2));  // [3, 4, 8] @ [3, 8, 9]
  std::thread other([&] { ag::matmul(a, b); });
  other.join();
  const std::vector<ag::kernels::GemmCall> calls = ag::kernels::stop_gemm_recording();
  ag::matmul(a, b);  // after the stop: not counted
  ASSERT_EQ(calls.size(), 2u);
  const auto find = [&](bool float64) {
    return *std::find_if(calls.begin(), calls.end(),
                         [&](const ag::kernels::GemmCall& c) { return c.float64 == float64; });
  };
  const ag::kernels::GemmCall mm = find(false), batched = find(true);
  EXPECT_EQ(mm.calls, 3);
  EXPECT_EQ((std::vector<int64_t>{mm.batch, mm.M, mm.N, mm.K}), (std::vector<int64_t>{1, 6, 7, 5}));
  EXPECT_GE(mm.seconds, 0.0);
  EXPECT_EQ(batched.calls, 1);
  EXPECT_EQ((std::vector<int64_t>{batched.batch, batched.M, batched.N, batched.K}),
            (std::vector<int64_t>{3, 4, 9, 8}));
  EXPECT_GE(calls[0].seconds, calls[1].seconds);  // the most time first
  ag::kernels::start_gemm_recording();            // a new recording starts empty
  EXPECT_TRUE(ag::kernels::stop_gemm_recording().empty());
}
