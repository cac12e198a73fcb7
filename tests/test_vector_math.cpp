// The SIMD float32 exp/tanh/softmax-row kernels against libm and a double
// reference (they are the fast paths of ag::exp, ag::tanh and ag::softmax),
// in every instruction set this CPU can run (row_kernels.h), and the
// optimizers' kernels (attograd/kernels/optim.h) against their plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../core/src/fast/row_kernels.h"
#include "attograd/kernels/optim.h"
#include "attograd/threads.h"

namespace {

using ag::detail::RowKernels;

// Runs check(kernels) on the row kernels of every instruction set this CPU
// can run, each failure naming its set.
template <class Check>
void for_each_instruction_set(Check check) {
  for (ag::kernels::InstructionSet set : ag::kernels::available_instruction_sets()) {
    SCOPED_TRACE(std::string("instruction set ") + ag::kernels::instruction_set_name(set));
    check(ag::detail::row_kernels(set));
  }
}

std::vector<float> sweep(float low, float high, float step) {
  std::vector<float> x;
  for (float v = low; v < high; v += step) x.push_back(v);
  return x;
}

TEST(VectorMathTest, ExpMatchesLibmToARelativeErrorOf3e7) {
  for_each_instruction_set([](const RowKernels& kernels) {
    const std::vector<float> x = sweep(-87.0f, 88.0f, 0.01f);
    std::vector<float> y(x.size());
    kernels.exp_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::exp(static_cast<double>(x[i]));
      ASSERT_LE(std::abs(y[i] - expected), 3e-7 * expected) << "x = " << x[i];
    }
  });
}

TEST(VectorMathTest, ExpSpecialValues) {
  for_each_instruction_set([](const RowKernels& kernels) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {
        -inf, -std::numeric_limits<float>::max(),     -100.0f, 0.0f, 100.0f,
        inf,  std::numeric_limits<float>::quiet_NaN()};
    std::vector<float> y(x.size());
    kernels.exp_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 0.0f);  // masked scores get exactly zero weight
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], 1.0f);
    EXPECT_EQ(y[4], inf);
    EXPECT_EQ(y[5], inf);
    EXPECT_TRUE(std::isnan(y[6]));
  });
}

// The streamed attention's exp (ops_flash_attention.cpp): e^(scale x - shift)
// in place, for scale x - shift <= 0, returning the sum.
TEST(VectorMathTest, ExpAffineSumMatchesLibm) {
  for_each_instruction_set([](const RowKernels& kernels) {
    for (const auto& [scale, shift] : {std::pair{1.0f, 0.0f}, {0.125f, 2.5f}, {3.0f, -1.0f}}) {
      std::vector<float> x;  // scale x - shift from -87 to 0, plus a tail of 7
      for (float d = -87.0f; d <= 0.0f; d += 0.01f) x.push_back((d + shift) / scale);
      for (int extra = 0; extra < 7; ++extra) x.push_back(shift / scale);
      std::vector<float> y = x;
      const double sum =
          kernels.exp_affine_sum_f32(y.data(), static_cast<int64_t>(y.size()), scale, shift);
      double expected_sum = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double d = static_cast<double>(x[i]) * scale - shift;
        const double expected = std::exp(d);
        // 3e-7 from the polynomial, plus scale x - shift rounded to float
        ASSERT_LE(std::abs(y[i] - expected), (3e-7 + 1.2e-7 * std::abs(d)) * expected)
            << "x = " << x[i] << ", scale = " << scale << ", shift = " << shift;
        expected_sum += y[i];
      }
      EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
    }
  });
}

TEST(VectorMathTest, ExpAffineSumSpecialValues) {
  for_each_instruction_set([](const RowKernels& kernels) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {-inf, -std::numeric_limits<float>::max(),     -100.0f, -87.9f,
                            0.0f, std::numeric_limits<float>::quiet_NaN()};
    kernels.exp_affine_sum_f32(x.data(), 5, 1.0f, 0.0f);  // the NaN separately
    EXPECT_EQ(x[0], 0.0f);                                // masked scores get exactly zero weight
    EXPECT_EQ(x[1], 0.0f);
    EXPECT_EQ(x[2], 0.0f);
    EXPECT_EQ(x[3], 0.0f);  // e^-87.9 is below the smallest normal float
    EXPECT_EQ(x[4], 1.0f);
    EXPECT_TRUE(std::isnan(kernels.exp_affine_sum_f32(x.data() + 5, 1, 1.0f, 0.0f)));
    EXPECT_TRUE(std::isnan(x[5]));
    // a fully masked row against its +inf log-sum-exp (the backward's case)
    std::vector<float> masked(20, -inf);
    EXPECT_EQ(kernels.exp_affine_sum_f32(masked.data(), 20, 0.125f, inf), 0.0);
    for (float v : masked) EXPECT_EQ(v, 0.0f);
  });
}

TEST(VectorMathTest, TanhMatchesLibmToAnAbsoluteErrorOf3e7) {
  for_each_instruction_set([](const RowKernels& kernels) {
    std::vector<float> x = sweep(-12.0f, 12.0f, 0.001f);
    x.push_back(std::numeric_limits<float>::infinity());
    x.push_back(-std::numeric_limits<float>::infinity());
    x.push_back(1e-30f);
    std::vector<float> y(x.size());
    kernels.tanh_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(y[i], std::tanh(static_cast<double>(x[i])), 3e-7) << "x = " << x[i];
    const float nan = std::numeric_limits<float>::quiet_NaN();
    float out;
    kernels.tanh_f32(&nan, &out, 1);
    EXPECT_TRUE(std::isnan(out));
  });
}

TEST(VectorMathTest, SoftmaxRowMatchesADoubleReference) {
  for_each_instruction_set([](const RowKernels& kernels) {
    for (int64_t n : {1, 2, 15, 16, 17, 100, 513}) {
      std::vector<float> x(static_cast<size_t>(n)), y(x.size()), g(x.size()), dx(x.size());
      for (int64_t k = 0; k < n; ++k) {
        x[static_cast<size_t>(k)] =
            static_cast<float>(std::sin(0.7 * static_cast<double>(k)) * 30.0);
        g[static_cast<size_t>(k)] = static_cast<float>(std::cos(1.3 * static_cast<double>(k)));
      }
      kernels.softmax_row_f32(x.data(), y.data(), n);
      kernels.softmax_backward_row_f32(y.data(), g.data(), dx.data(), n);
      double max = x[0], sum = 0, gy = 0;
      for (float v : x) max = std::max<double>(max, v);
      std::vector<double> ref(x.size());
      for (size_t k = 0; k < x.size(); ++k) sum += ref[k] = std::exp(x[k] - max);
      for (size_t k = 0; k < x.size(); ++k) gy += g[k] * (ref[k] /= sum);
      for (size_t k = 0; k < x.size(); ++k) {
        ASSERT_NEAR(y[k], ref[k], 1e-6) << "n = " << n << ", k = " << k;
        ASSERT_NEAR(dx[k], ref[k] * (g[k] - gy), 1e-6) << "n = " << n << ", k = " << k;
      }
    }
  });
}

// masked_softmax_rows_f32 and its backward against a double reference: rows
// shorter than a SIMD vector, of whole vectors and longer (11 and 30 keys:
// d2l's attention), with every third key masked (one flag per key) or whole
// rows (one flag per row, stride 0), a fully masked row, both conventions
// for masked rows (uniform, zero), and a fill of the lowest float (what
// masked_softmax_last clamps -inf to: then the fill is a fully masked row's
// max, and the padding must still weigh 0). Weights within 1e-6 relative, plus 1e-9
// for the tiny ones: x - max is rounded to float before its exp, which for a
// weight of e^-38 is a few 1e-6 relative. Both kernels of every set, the
// portable loops and the best (the avx2 and avx512 sets' whole vectors with
// masked loads and stores); row lengths either side of a vector's 8 and 16
// lanes, so a last, partial vector is tested at every width it can have.
TEST(VectorMathTest, MaskedSoftmaxRowsMatchADoubleReference) {
  for_each_instruction_set([](const RowKernels& kernels) {
    using ag::detail::RowKernel;
    const int64_t rows = 7, masked_row = 4;
    for (const RowKernel kernel : {RowKernel::Portable, RowKernel::Best}) {
      SCOPED_TRACE(kernel == RowKernel::Best ? "best kernel" : "portable kernel");
      for (const float fill : {-1e6f, std::numeric_limits<float>::lowest()})
        for (int64_t n :
             {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{11}, int64_t{15},
              int64_t{16}, int64_t{17}, int64_t{24}, int64_t{25}, int64_t{30}, int64_t{31},
              int64_t{32}, int64_t{33}, int64_t{40}, ag::detail::kMaxPaddedRow})
          for (int64_t stride : {1, 0})
            for (bool zero_masked : {false, true}) {
              const auto size = static_cast<size_t>(rows * n);
              std::vector<float> x(size), g(size), y(size), dx(size);
              for (size_t i = 0; i < size; ++i) {
                x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 20.0);
                g[i] = static_cast<float>(std::cos(1.3 * static_cast<double>(i)));
              }
              std::vector<char> flags(static_cast<size_t>(stride == 1 ? rows * n : rows));
              std::vector<int64_t> offset(static_cast<size_t>(rows));
              for (int64_t r = 0; r < rows; ++r) {
                offset[static_cast<size_t>(r)] = stride == 1 ? r * n : r;
                for (int64_t j = 0; j < (stride == 1 ? n : 1); ++j)
                  flags[static_cast<size_t>(offset[static_cast<size_t>(r)] + j)] =
                      r != masked_row && (stride == 0 || j % 3 != 2);
              }
              const bool* keep = reinterpret_cast<const bool*>(flags.data());
              kernels.masked_softmax_rows_f32(x.data(), keep, offset.data(), stride, y.data(), rows,
                                              n, fill, zero_masked, kernel);
              kernels.masked_softmax_backward_rows_f32(y.data(), g.data(), keep, offset.data(),
                                                       stride, dx.data(), rows, n, zero_masked,
                                                       kernel);
              for (int64_t r = 0; r < rows; ++r) {
                const auto at = [&](int64_t j) { return static_cast<size_t>(r * n + j); };
                const auto kept = [&](int64_t j) {
                  return keep[offset[static_cast<size_t>(r)] + j * stride];
                };
                std::vector<double> w(static_cast<size_t>(n));
                double max = -1e300, sum = 0, gw = 0;
                for (int64_t j = 0; j < n; ++j)
                  max = std::max<double>(max, kept(j) ? x[at(j)] : fill);
                for (int64_t j = 0; j < n; ++j)
                  sum += w[static_cast<size_t>(j)] = std::exp((kept(j) ? x[at(j)] : fill) - max);
                for (int64_t j = 0; j < n; ++j) {
                  double& wj = w[static_cast<size_t>(j)];
                  wj = zero_masked && !kept(j) ? 0.0 : wj / sum;
                  gw += (zero_masked && !kept(j) ? 0.0 : g[at(j)]) * wj;
                }
                for (int64_t j = 0; j < n; ++j) {
                  const double wj = w[static_cast<size_t>(j)];
                  const double gj = zero_masked && !kept(j) ? 0.0 : g[at(j)];
                  const double dxj = kept(j) ? wj * (gj - gw) : 0.0;
                  ASSERT_NEAR(y[at(j)], wj, 1e-6 * wj + 1e-9)
                      << "n = " << n << ", stride " << stride << ", fill " << fill << ", row " << r
                      << ", key " << j;
                  ASSERT_NEAR(dx[at(j)], dxj, 1e-6)
                      << "n = " << n << ", stride " << stride << ", row " << r << ", key " << j;
                }
              }
            }
    }
  });
}

// The avx2 set's whole-vector masked softmax does the portable loops'
// arithmetic lane for lane (only the row's ends are read and written under a
// mask), so the two give the same bits, forward and backward.
TEST(VectorMathTest, Avx2WholeVectorMaskedSoftmaxGivesThePortableBits) {
  using ag::detail::RowKernel;
  using ag::kernels::InstructionSet;
  const std::vector<InstructionSet> sets = ag::kernels::available_instruction_sets();
  if (std::find(sets.begin(), sets.end(), InstructionSet::Avx2) == sets.end())
    GTEST_SKIP() << "no AVX2 on this CPU";
  const RowKernels& kernels = ag::detail::row_kernels(InstructionSet::Avx2);
  const int64_t rows = 9;
  for (int64_t n : {1, 5, 8, 11, 16, 23, 30, 47, 200})
    for (int64_t stride : {1, 0})
      for (bool zero_masked : {false, true}) {
        const auto size = static_cast<size_t>(rows * n);
        std::vector<float> x(size), g(size);
        for (size_t i = 0; i < size; ++i) {
          x[i] = static_cast<float>(std::sin(0.61 * static_cast<double>(i)) * 9.0);
          g[i] = static_cast<float>(std::cos(0.9 * static_cast<double>(i)));
        }
        std::vector<char> flags(static_cast<size_t>(stride == 1 ? rows * n : rows));
        for (size_t i = 0; i < flags.size(); ++i) flags[i] = (i * 7 + 3) % 5 != 0;
        std::vector<int64_t> offset(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) offset[static_cast<size_t>(r)] = stride == 1 ? r * n : r;
        const bool* keep = reinterpret_cast<const bool*>(flags.data());
        std::vector<float> y[2], dx[2];
        for (int which = 0; which < 2; ++which) {
          const RowKernel kernel = which == 0 ? RowKernel::Portable : RowKernel::Best;
          y[which].assign(size, 0.0f);
          dx[which].assign(size, 0.0f);
          kernels.masked_softmax_rows_f32(x.data(), keep, offset.data(), stride, y[which].data(),
                                          rows, n, -1e6f, zero_masked, kernel);
          kernels.masked_softmax_backward_rows_f32(y[which].data(), g.data(), keep, offset.data(),
                                                   stride, dx[which].data(), rows, n, zero_masked,
                                                   kernel);
        }
        for (size_t i = 0; i < size; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(y[0][i]), std::bit_cast<uint32_t>(y[1][i]))
              << "y, n = " << n << ", stride " << stride << ", entry " << i;
          ASSERT_EQ(std::bit_cast<uint32_t>(dx[0][i]), std::bit_cast<uint32_t>(dx[1][i]))
              << "dx, n = " << n << ", stride " << stride << ", entry " << i;
        }
      }
}

// torch.optim.Adam's step for one element, written out here as the
// reference: each operation rounded on its own, as the kernel promises (no
// fused multiply-add in this function either).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
template <typename T>
void reference_adam_step(T& w, T g, T& m, T& v, const ag::kernels::AdamStep& s) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  m = m * T(s.beta1) + T(1 - s.beta1) * g;
  v = v * T(s.beta2) + T(1 - s.beta2) * g * g;
  const T denom = std::sqrt(v) / T(s.bias_correction2_sqrt) + T(s.eps);
  w = w - T(s.step_size) * (m / denom);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// Adam's kernel, float32 in the instruction set the kernels run and float64,
// bit for bit against the reference over five steps of changing gradients.
// 1027 elements: full vectors and a tail; every seventh gradient tiny.
TEST(OptimKernelTest, AdamUpdateMatchesTheScalarStepBitForBit) {
  const int64_t n = 1027;
  std::vector<float> w(n), m(n), v(n), g(n);
  for (int64_t j = 0; j < n; ++j)
    w[static_cast<size_t>(j)] = std::cos(0.1f * static_cast<float>(j));
  std::vector<float> w_ref = w, m_ref = m, v_ref = v;
  std::vector<double> w64(w.begin(), w.end()), m64(n), v64(n), g64(n);
  std::vector<double> w64_ref = w64, m64_ref = m64, v64_ref = v64;
  for (int t = 1; t <= 5; ++t) {
    for (int64_t j = 0; j < n; ++j)
      g64[static_cast<size_t>(j)] = g[static_cast<size_t>(j)] =
          std::sin(0.37f * static_cast<float>(j * t) + 0.5f) * (j % 7 == 0 ? 1e-6f : 1.0f);
    ag::kernels::AdamStep step;
    step.step_size = 1e-2 / (1 - std::pow(step.beta1, t));
    step.bias_correction2_sqrt = std::sqrt(1 - std::pow(step.beta2, t));
    ag::kernels::adam_update(w.data(), g.data(), m.data(), v.data(), n, step);
    ag::kernels::adam_update(w64.data(), g64.data(), m64.data(), v64.data(), n, step);
    for (size_t j = 0; j < w.size(); ++j) {
      reference_adam_step(w_ref[j], g[j], m_ref[j], v_ref[j], step);
      reference_adam_step(w64_ref[j], g64[j], m64_ref[j], v64_ref[j], step);
    }
  }
  for (size_t j = 0; j < w.size(); ++j) {
    ASSERT_EQ(w[j], w_ref[j]) << j;
    ASSERT_EQ(m[j], m_ref[j]) << j;
    ASSERT_EQ(v[j], v_ref[j]) << j;
    ASSERT_EQ(w64[j], w64_ref[j]) << j;
    ASSERT_EQ(m64[j], m64_ref[j]) << j;
    ASSERT_EQ(v64[j], v64_ref[j]) << j;
    ASSERT_NE(w[j], std::cos(0.1f * static_cast<float>(j))) << j;  // every weight moved
  }
}

// The squared norm against one double accumulator in order: lanes change
// only the order of the additions.
TEST(OptimKernelTest, SumOfSquaresMatchesASequentialDoubleSum) {
  for (int64_t n : {0, 1, 15, 16, 17, 1027}) {
    std::vector<float> x(static_cast<size_t>(n));
    double expected = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float value = std::sin(0.7f * static_cast<float>(j)) * 3;
      x[static_cast<size_t>(j)] = value;
      expected += static_cast<double>(value) * value;
    }
    const std::vector<double> x64(x.begin(), x.end());
    EXPECT_NEAR(ag::kernels::sum_of_squares(x.data(), n), expected, 1e-12 * expected) << n;
    EXPECT_NEAR(ag::kernels::sum_of_squares(x64.data(), n), expected, 1e-12 * expected) << n;
  }
}

// A weight of millions of elements is updated and summed in blocks on the
// kernel threads: two threads give one thread's bits, and the blocked sum
// stays a sum of squares.
TEST(OptimKernelTest, TwoThreadsGiveOneThreadsBits) {
  const int64_t n = 5 * 65536 + 123;  // five whole blocks and a ragged one
  std::vector<float> g(static_cast<size_t>(n)), w0(static_cast<size_t>(n));
  double expected = 0;
  for (int64_t j = 0; j < n; ++j) {
    const auto i = static_cast<size_t>(j);
    g[i] = std::sin(0.37f * static_cast<float>(j % 1000) + 0.5f);
    w0[i] = std::cos(0.1f * static_cast<float>(j % 777));
    expected += static_cast<double>(g[i]) * g[i];
  }
  const int threads_before = ag::get_num_threads();
  std::vector<float> w[2], m[2], v[2];
  double squares[2];
  for (int threads : {1, 2}) {
    ag::set_num_threads(threads);
    const auto t = static_cast<size_t>(threads - 1);
    w[t] = w0;
    m[t].assign(static_cast<size_t>(n), 0.0f);
    v[t].assign(static_cast<size_t>(n), 0.0f);
    for (int step = 1; step <= 3; ++step) {
      ag::kernels::AdamStep s;
      s.step_size = 1e-2 / (1 - std::pow(s.beta1, step));
      s.bias_correction2_sqrt = std::sqrt(1 - std::pow(s.beta2, step));
      ag::kernels::adam_update(w[t].data(), g.data(), m[t].data(), v[t].data(), n, s);
    }
    squares[t] = ag::kernels::sum_of_squares(g.data(), n);
  }
  ag::set_num_threads(threads_before);
  EXPECT_EQ(squares[0], squares[1]);
  EXPECT_NEAR(squares[0], expected, 1e-12 * expected);
  for (size_t j = 0; j < w0.size(); ++j) {
    ASSERT_EQ(w[0][j], w[1][j]) << j;
    ASSERT_EQ(m[0][j], m[1][j]) << j;
    ASSERT_EQ(v[0][j], v[1][j]) << j;
    ASSERT_NE(w[0][j], w0[j]) << j;  // every weight moved
  }
}

}  // namespace
